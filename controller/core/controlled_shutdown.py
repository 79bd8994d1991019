"""Controlled shutdown (ControlledShutdown, API 7; Kafka's ``KafkaController.doControlledShutdown``
in ZooKeeper mode): a broker about to stop asks the controller to move its leaderships away
first, so that its partitions change leader in one step instead of going leaderless until its
registration's session expires. The engine's part: functions of its working set
(controller.core.working_set), reached through step 12 (controller.core.elections). Pure.

The broker asks, the controller answers with the partitions it still leads, and the broker asks
again (Kafka's ``controlled.shutdown.max.retries``, 3 by default) until none is left or it gives
up and stops anyway. S is the partition's state (the newer, by zkVersion, of the one the shell
read for the request and the one held), RS its replicas, B the broker asking, D the brokers
shutting down (B among them once step 2 ran), E the brokers that may lead
(``WorkingSet.eligible_for``: online, not in D).

 1. B not registered -> BROKER_NOT_AVAILABLE "Broker id B does not exist."; a broker epoch
    given (versions 2+; -1 is "not said") below B's registration's -> STALE_BROKER_EPOCH (a
    request from before B registered again: KIP-380). Nothing else happens.
 2. B joins D (remembered with its epoch until B's registration goes or B registers again:
    controller.core.broker_failure ``on_brokers``). From now on no election in the controller
    picks a broker of D: offline elections (broker_failure steps 3-4), preferred and unclean
    elections (controller.core.elections), a move's new leader (controller.core.reassignment),
    a rollback's (controller.core.cancel), while another replica can lead instead; nor a new
    partition's first leader and ISR (controller.core.topic_creation). D's brokers
    are still live: they get LeaderAndIsr and UpdateMetadata, and stay in ISRs unless 4 takes
    them out.
 3. The partitions acted on: those with B in RS, more than one replica, a state, a topic not
    being deleted; and no move started (a running move owns its partition's leader and ISR until
    it ends: B is answered as still leading such a partition, and its retry finds the move's
    new leader once it completed; Kafka acts on a moving partition too).
 4. B leads (Kafka's ``ControlledShutdownPartitionLeaderElectionStrategy``): the first replica of
    RS in E and in the ISR leads, the ISR loses D's brokers. None -> nothing: B still leads
    (answered in 5). Else B follows: StopReplica without deletion to B (it stops fetching and
    keeps its log), and the ISR without B unless B is its only member (Kafka's OfflineReplica
    transition). A changed leader or ISR: the state znode with leader epoch + 1, conditional
    on the zkVersion decided from, fenced by the controller epoch (the step's flush); then
    LeaderAndIsr to the live replicas (B too when it led: it becomes a follower) and
    UpdateMetadata to every live broker.
 5. Answer, once the step's writes landed (``Step.elections``): NONE and the partitions B still
    leads among those with more than one replica and a topic not being deleted (Kafka's
    ``partitionLeadersOnBroker``), sorted.

Invariant protected (docs/DESIGN.md 4.7): a broker's controlled shutdown never leaves a
partition leaderless that had a leader; leaders move only to ISR members.

Worked state table, brokers 1, 2, 3; broker 1 shuts down (leader [isr] epoch):

    partition  RS       before          step  after           told
    a          1,2,3    1 [1,2,3] 4     4     2 [2,3] 5       LeaderAndIsr to 1, 2, 3
    b          2,1,3    2 [2,1,3] 7     4     2 [2,3] 8       StopReplica(no delete) to 1;
                                                              LeaderAndIsr to 2, 3
    c          1,2      1 [1] 3         4     1 [1] 3         nothing: answered as remaining
    d          1        1 [1] 0         3     1 [1] 0         nothing (one replica: not listed)
    e          2,1      2 [2] 5         4     2 [2] 5         StopReplica(no delete) to 1
    answer: NONE, remaining [c]

    on_shutdown(ws, ShutdownRequested(1, broker_epoch, states, token=future))
"""

from __future__ import annotations

from controller.core.events import ShutdownRequested
from controller.core.flush import ELECT, writing
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes.values import LeaderIsr, TopicPartition

UNKNOWN_BROKER_EPOCH = -1  # versions 0-1 carry none; Kafka's AbstractControlRequest.UNKNOWN_BROKER_EPOCH

# (error code, message, the partitions the broker still leads)
Result = tuple[ErrorCode, "str | None", tuple[TopicPartition, ...]]


@writing(ELECT)
def on_shutdown(ws: WorkingSet, event: ShutdownRequested) -> None:
    """Steps 1-5; the result goes back with the event's token."""
    ws.elections.append((event.token, shut_down(ws, event)))


def shut_down(ws: WorkingSet, event: ShutdownRequested) -> Result:
    b = event.broker_id
    broker = ws.brokers.get(b)
    if broker is None:
        return ErrorCode.BROKER_NOT_AVAILABLE, f"Broker id {b} does not exist.", ()  # step 1
    if event.broker_epoch != UNKNOWN_BROKER_EPOCH and event.broker_epoch < broker.epoch:
        return ErrorCode.STALE_BROKER_EPOCH, (
            f"Received controlled shutdown request from an old broker epoch {event.broker_epoch} for broker {b}. "
            f"Current broker epoch is {broker.epoch}."), ()
    ws.shutting_down[b] = broker.epoch  # step 2
    moved = stopped = 0
    for tp, assignment in sorted(ws.assignments.items()):
        replicas = assignment.replicas
        if b not in replicas or len(replicas) < 2 or tp[0] in ws.deleting:
            continue  # step 3
        move = ws.tasks.get(tp)
        if move is not None and move.started:
            continue  # step 3: the move's
        state = _newer(ws.states.get(tp), event.states.get(tp))
        if state is None:
            continue
        if state is not ws.states.get(tp):
            ws.states[tp] = state  # the conditional write is made from this one
        if state.leader == b:
            moved += _lead_elsewhere(ws, tp, replicas, state)
        else:
            stopped += 1
            _stop_following(ws, tp, replicas, state, b)
    remaining = still_leads(ws, b)
    ws.log.append(f"controlled shutdown of broker {b}: {moved} leadership(s) moved, {stopped} replica(s) stopped "
                  f"following, {len(remaining)} partition(s) still led by it")
    return ErrorCode.NONE, None, remaining  # step 5


def still_leads(ws: WorkingSet, b: int) -> tuple[TopicPartition, ...]:
    """Step 5: what ``b`` leads among the partitions with more than one replica, no topic being
    deleted (Kafka's ``partitionLeadersOnBroker``)."""
    return tuple(sorted(
        tp for tp, state in ws.states.items()
        if state.leader == b and tp[0] not in ws.deleting and tp in ws.assignments and len(ws.assignments[tp].replicas) > 1
    ))


def _newer(held: LeaderIsr | None, read: LeaderIsr | None) -> LeaderIsr | None:
    if read is None or (held is not None and held.zk_version >= read.zk_version):
        return held
    return read


def _lead_elsewhere(ws: WorkingSet, tp: TopicPartition, replicas, state: LeaderIsr) -> int:
    """Step 4, B leads: 1 if another ISR member took over."""
    eligible = ws.eligible_for(tp)
    leader = next((r for r in replicas if r in eligible and r in state.isr), None)
    if leader is None:
        return 0
    shutting = ws.shutting_down
    new = ws.new_epoch(tp, state, leader=leader, isr=tuple(r for r in state.isr if r not in shutting))
    _tell(ws, tp, replicas, new, skip=None)
    return 1


def _stop_following(ws: WorkingSet, tp: TopicPartition, replicas, state: LeaderIsr, b: int) -> None:
    """Step 4, B follows: it stops fetching; out of the ISR unless it is all of it."""
    ws.box.stop_replica(b, tp, state.leader_epoch, delete=False, wait=False)
    if b in state.isr and len(state.isr) > 1:
        new = ws.new_epoch(tp, state, isr=tuple(r for r in state.isr if r != b))
        _tell(ws, tp, replicas, new, skip=b)


def _tell(ws: WorkingSet, tp: TopicPartition, replicas, new: LeaderIsr, skip: int | None) -> None:
    live = ws.live_for(tp)
    for r in replicas:
        if r in live and r != skip:
            ws.box.leader_and_isr(r, tp, new, replicas=replicas, adding=(), removing=(), is_new=False)
    ws.box.update_metadata(tp, new, replicas)
