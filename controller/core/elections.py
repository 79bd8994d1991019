"""Leader elections asked for by ElectLeaders (KIP-460), or through Kafka's ZooKeeper door
``/admin/preferred_replica_election``: the engine's part: functions of its working set
(controller.core.working_set; controller.core.engine step 12). Pure.

Per partition asked for (every known one when the request names none), in order:

 1. Unknown -> UNKNOWN_TOPIC_OR_PARTITION; its topic queued for deletion ->
    INVALID_TOPIC_EXCEPTION "The topic is being deleted" (Kafka's processReplicaLeaderElection;
    a request naming no partition leaves such topics out, as Kafka's brokers expand it from
    their metadata cache, which the deletion's UpdateMetadata emptied of them); a move running ->
    REASSIGNMENT_IN_PROGRESS (the move owns its leader until it ends; Kafka elects it anyway);
    no state (none read or written yet) -> ELIGIBLE_LEADERS_NOT_AVAILABLE.
 2. PREFERRED (0): the preferred leader is the first replica of the assignment. Already the
    leader -> ELECTION_NOT_NEEDED; not live or not in the ISR -> PREFERRED_LEADER_NOT_AVAILABLE.
 3. UNCLEAN (1): a live leader -> ELECTION_NOT_NEEDED; else Kafka's offline election with
    unclean allowed (controller.core.broker_failure.decide, the controller's own after a broker
    failure): the first replica of the assignment, in its order, that is live and in the ISR,
    the ISR becoming its live members (a clean election); else the first live replica, the ISR
    becoming that replica alone (unclean); none live -> ELIGIBLE_LEADERS_NOT_AVAILABLE.
 4. Elect: the state znode with the new leader and leader epoch + 1, conditional on the
    zkVersion the decision was made from (a stale state fails the flush: the shell rebuilds and
    the request fails as a whole); LeaderAndIsr to the live replicas, UpdateMetadata to every
    live broker. The results go back with the token once the writes landed (``Step.elections``).
 5. The ZooKeeper door (Kafka's ``processReplicaLeaderElection`` with ``ZkTriggered``): a tool
    (``kafka-preferred-replica-election.sh --zookeeper``) creates
    ``/admin/preferred_replica_election`` listing partitions; each is taken through steps 1-4
    as PREFERRED, nobody waiting, every outcome but NONE and ELECTION_NOT_NEEDED logged (Kafka
    logs them too), and the znode is deleted in the same fenced flush, conditional on the
    version read (Kafka's ``removePartitionsFromPreferredReplicaElection``). The next tool's
    request is then a new znode (Kafka's tool refuses to write while one exists). A znode that
    does not decode is logged and left for the operator: nothing is elected. One found at an
    election (written while no controller ran, or the last one died before deleting it) is
    taken then: partitions already led by their preferred replica are ELECTION_NOT_NEEDED.

States: the newer (zkVersion) of the one the shell read for the request and the one held.

    on_election(ws, ElectionRequested((("t", 0),), PREFERRED, {("t", 0): state}, token=future))
"""

from __future__ import annotations

from controller.core import broker_failure, controlled_shutdown
from controller.core.events import ElectionRequested, OfflineCheck, PreferredElectionRead, ShutdownRequested
from controller.core.flush import ELECT, writing
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import paths
from znodes.values import LeaderIsr, TopicPartition

PREFERRED, UNCLEAN = 0, 1

Result = tuple[ErrorCode, str | None]


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@writing(ELECT)
def elect(ws: WorkingSet, event: ElectionRequested | OfflineCheck | PreferredElectionRead | ShutdownRequested) -> None:
    """Step 12: steps 1-4 per partition (5 for the ZooKeeper door); the controller's own
    election after a broker failure (``OfflineCheck``, controller.core.broker_failure) comes
    the same way. Each waits until a failover's resumed moves have their states."""
    if ws.states_missing():
        ws.deferred.append(event)  # just failed over: after the resumed moves' states
    else:
        on_election(ws, event)


def on_election(ws: WorkingSet, event: ElectionRequested | OfflineCheck | PreferredElectionRead | ShutdownRequested) -> None:
    """Steps 1-4 per partition asked for; an OfflineCheck goes to controller.core.broker_failure,
    the ZooKeeper door to step 5, a broker's controlled shutdown to
    controller.core.controlled_shutdown."""
    if isinstance(event, ShutdownRequested):
        controlled_shutdown.on_shutdown(ws, event)
        return
    if isinstance(event, OfflineCheck):
        broker_failure.on_offline(ws, event)
        return
    if isinstance(event, PreferredElectionRead):
        on_znode(ws, event)
        return
    if event.partitions is None:
        wanted = every_partition(ws)
    else:
        wanted = list(dict.fromkeys(event.partitions))
    results: dict[TopicPartition, Result] = {}
    for tp in wanted:
        results[tp] = elect_one(ws, tp, event.election_type, event.states.get(tp))
    ws.elections.append((event.token, results))


def on_znode(ws: WorkingSet, event: PreferredElectionRead) -> None:
    """Step 5: ``/admin/preferred_replica_election``'s partitions elected, the znode deleted."""
    path = paths.PREFERRED_REPLICA_ELECTION
    if event.error is not None:
        ws.warnings.append(f"{path} ignored, left in place for the operator to fix or delete: {event.error}")
        return
    elected, outcomes = 0, []
    for tp in event.partitions:
        code, message = elect_one(ws, tp, PREFERRED, event.states.get(tp))
        if code == ErrorCode.NONE:
            elected += 1
        elif code != ErrorCode.ELECTION_NOT_NEEDED:
            outcomes.append(f"{_name(tp)}: {code.name} ({message})")
    ws.log.append(f"{path}: {elected} of {len(event.partitions)} partition(s) given their preferred leader")
    if outcomes:
        ws.warnings.append(f"{path}: not elected: " + "; ".join(outcomes))
    ws.preferred_znode_version = event.znode_version


def every_partition(state) -> list[TopicPartition]:
    """What a request naming no partition asks for (step 1): every partition of a topic not
    being deleted, from a working set or the state it was built from."""
    return [tp for tp in state.assignments.keys() if tp[0] not in state.deleting]


def elect_one(ws: WorkingSet, tp: TopicPartition, election_type: int, read: LeaderIsr | None) -> Result:
    """Steps 1-4 for one partition: its result, the writes and requests made."""
    assignment = ws.assignments.get(tp)
    if assignment is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {_name(tp)}"
    if tp[0] in ws.deleting:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"  # Kafka's code and text
    move = ws.tasks.get(tp)
    if move is not None and move.started:
        return ErrorCode.REASSIGNMENT_IN_PROGRESS, f"{_name(tp)} is being reassigned"
    held = ws.states.get(tp)
    state = held if read is None or (held is not None and held.zk_version >= read.zk_version) else read
    if state is None:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"{_name(tp)} has no leader state yet"
    live, replicas = ws.live_for(tp), assignment.replicas  # online replicas (log dirs: log_dir_failure)
    eligible = ws.eligible_for(tp)  # live and not shutting down (controller.core.controlled_shutdown)
    if election_type == PREFERRED:
        preferred = replicas[0]
        if state.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED, f"{preferred} already leads {_name(tp)}"
        if preferred not in eligible or preferred not in state.isr:
            why = "down" if preferred not in live else "shutting down" if preferred not in eligible else "not in the ISR"
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, f"preferred leader {preferred} of {_name(tp)} is {why}"
        leader, isr = preferred, state.isr
    elif election_type == UNCLEAN:
        if state.leader in live:
            return ErrorCode.ELECTION_NOT_NEEDED, f"{_name(tp)} has a live leader ({state.leader})"
        # Kafka's offline election with unclean allowed, as the controller's own after a broker
        # failure (controller.core.broker_failure steps 3-4): the same leader and ISR either way.
        decided = broker_failure.decide(replicas, state, live, unclean=True, moving=False, eligible=eligible)
        if decided is None or decided[0] == broker_failure.NO_LEADER:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"no replica of {_name(tp)} is live"
        leader, isr, how = decided
        if how == "unclean":
            ws.log.append(f"unclean leader election of {_name(tp)}: {leader}, out of the ISR {list(state.isr)}")
    else:
        return ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}"
    if state is read and read != held:
        ws.states[tp] = read  # the conditional write below is made from this one
    new = ws.new_epoch(tp, state, leader=leader, isr=isr)
    for b in replicas:
        if b in live:
            ws.box.leader_and_isr(b, tp, new, replicas=replicas, adding=(), removing=(), is_new=False)
    ws.box.update_metadata(tp, new, replicas)
    return ErrorCode.NONE, None


def imbalanced(assignments, states, tasks, live, percentage: int) -> list[TopicPartition]:
    """The automatic preferred-leader rebalance's candidates (Kafka's
    ``checkAndTriggerAutoLeaderRebalance``): per broker, the share of the partitions it is the
    preferred leader of that another broker leads; over ``percentage`` (Kafka's
    leader.imbalance.per.broker.percentage), those of its partitions that can take it back -
    preferred replica live and in the ISR, no move running - in partition order."""
    preferred: dict[int, int] = {}
    behind: dict[int, list[TopicPartition]] = {}
    for tp, assignment in assignments.items():
        if not assignment.replicas:
            continue
        b = assignment.replicas[0]
        preferred[b] = preferred.get(b, 0) + 1
        state = states.get(tp)
        if state is None or state.leader == b:
            continue
        behind.setdefault(b, []).append(tp)
    out: list[TopicPartition] = []
    for b, tps in sorted(behind.items()):
        if b not in live or len(tps) * 100 <= percentage * preferred[b]:
            continue
        for tp in sorted(tps):
            move = tasks.get(tp)
            if (move is None or not move.started) and b in states[tp].isr:
                out.append(tp)
    return out
