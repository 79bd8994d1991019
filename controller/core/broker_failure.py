"""Leaders and ISRs after a broker fails or comes back (Kafka's ``KafkaController.onBrokerFailure``
and ``onBrokerStartup`` in ZooKeeper mode): the engine's part: functions of its working set
(controller.core.working_set), reached through step 12's event (controller.core.elections), and
the live broker set's changes (:func:`on_brokers`, the brokers' side of engine step 8). Pure.

Kafka's controller, when a broker's registration goes, takes every partition that broker led to
OfflinePartition and elects a new leader from the live ISR (``OfflinePartitionLeaderElection-
Strategy``), then takes the broker's replicas to OfflineReplica: out of every ISR, the leader
epoch + 1, the state znode written first (conditional on its zkVersion, fenced by the
controller epoch), then LeaderAndIsr and UpdateMetadata. When a broker registers, partitions
left without a leader whose ISR names it get one (``triggerOnlinePartitionStateChange``); it
is otherwise just a follower. Without this, a partition led by a dead broker has no leader:
nothing is produced to it and nothing copies from it, so a move that adds replicas to it (a
drain of that broker) never completes.

The shell asks for it (``OfflineCheck``, controller.shell.active) in the step that folds a
change of ``/brokers/ids`` (every partition whose state the controller holds), and in the
step of each chunk of a full-metadata read (those partitions): a new controller's reads, so
brokers that died while no controller was active are handled at election and after every
recovery. L is the partition's online replicas' brokers: the live broker set once the step's
BrokersRead is in, less the brokers that reported their replica of it on an offline log
directory (``WorkingSet.live_for``; controller.core.log_dir_failure, which runs this check
for the partitions whose replicas went offline). RS is the partition's replicas (a moving
partition's RS = TRS followed by ORS - TRS), S its state held.

Per partition checked, in order:

 1. Skip: unknown partition, topic being deleted (the deletion owns it: leader -2 to come), no
    state held, a move started that is not REPLICATING (STOPPING and CANCELLING chose a live
    leader when they entered those phases, engine step 5 and controller.core.cancel, and end
    once their StopReplica was sent), a move whose state is being read after a failover
    (checked again with the chunk of the full-metadata read that brings it).
 2. Leader live. A partition no move runs for whose ISR names brokers not in L: the ISR without
    them (OfflineReplica; never empty, the leader stays). A REPLICATING move's ISR is left
    to the move (its completion reads it, engine step 5): nothing.
 3. Leader not live (dead, or -1 NO_LEADER). Clean: the first replica of RS, in RS order, that
    is live and in the ISR leads; the ISR becomes its live members (Kafka's offline election).
 4. Else, if the topic's ``unclean.leader.election.enable`` is true (the shell reads the
    topic configs of the partitions that need it: ``unclean_candidates``): the first live
    replica of RS leads, alone in the ISR; logged (records since may be lost).
 5. Else NO_LEADER: leader -1, the ISR as it was (the replicas a clean election waits for:
    step 3 runs when one of them registers again); nothing when the leader already is -1.
 6. Write and tell, in the step's fenced flush (engine ``new_epoch``): the state znode with the
    new leader and ISR, leader epoch + 1, controller epoch this one's, conditional on the
    zkVersion decided from (a leader's ISR change meanwhile fails the flush; the shell
    rebuilds and the full-metadata read checks again). Then LeaderAndIsr to the live replicas
    of RS - for a REPLICATING move through the engine's own ``announce`` (its RS, AR and RR;
    ``is_new`` for AR; it completes the move if TRS is in the ISR now) - and UpdateMetadata
    to every live broker.
 7. A broker that registered or re-registered (``OfflineCheck.registered``; Kafka's
    ``onBrokerStartup``, its replicas to OnlineReplica): LeaderAndIsr with the state held, leader
    epoch unchanged, for each of its replicas that 6 did not just tell, bar a topic being
    deleted and a started move's (a move waiting for a slot has sent nothing: told too). A restarted broker remembers no role until it gets one: without
    this it neither follows (so never rejoins an ISR) nor leads. One that only re-registered
    holds that epoch already and answers STALE_CONTROLLER_EPOCH for it, which changes nothing.
    One that registered while no controller was active is told at the election instead
    (controller.core.engine step 8b).

Invariant protected (docs/DESIGN.md 4.7): every partition with a live replica in its ISR has a
live leader once the step that saw its leader go has landed, and no ISR names a dead broker
beside a live leader (bar a moving partition's, owned by its move); leaders come only from the
ISR unless the topic allows an unclean election.

Worked state table, brokers 1, 2, 3, 4; broker 1 dies, later comes back (leader [isr] epoch):

    partition  RS (AR, RR)        before          1 dies                    after
    a          1,2,3              1 [1,2,3] 4     3: first live RS in ISR   2 [2,3] 5
    b          2,1,3              2 [2,1,3] 7     2: ISR shrunk             2 [2,3] 8
    c          1,2                1 [1] 3         5: no live ISR member     -1 [1] 4
    c (unclean enabled)           1 [1] 3         4: first live replica     2 [2] 4
    d          3,4                3 [3,4] 0       1: not a replica          3 [3,4] 0
    e          4,2,1 (4; 1)       1 [1,2] 2       3: move's RS to 2 and 4   2 [2] 3
    f          4,2,1 (4; 1)       2 [2,1] 2       2: the move's ISR         2 [2,1] 2
    g          1,2 STOPPING       ...             1: the move's             unchanged
    1 comes back:
    c          1,2                -1 [1] 4        3: clean, 1 is in ISR     1 [1] 5

    on_offline(ws, offline_check(None, unclean_topics={"logs"}))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.core import reassignment
from controller.core.events import BrokersRead, OfflineCheck
from controller.core.flush import BROKER_FAILURE, BROKERS, writing
from controller.core.task import Phase
from controller.core.working_set import WorkingSet, live_replicas
from znodes.values import Assignment, LeaderIsr, TopicPartition

NO_LEADER = -1
UNCLEAN_CONFIG = "unclean.leader.election.enable"


def decide(
    replicas: tuple[int, ...], state: LeaderIsr, live, *, unclean: bool, moving: bool, eligible=None
) -> tuple[int, tuple[int, ...], str] | None:
    """Steps 2-5 for one partition: (leader, ISR, why) to write, or None (nothing to do).
    ``eligible``: the live brokers that may lead (not shutting down:
    controller.core.controlled_shutdown); ``live`` when None."""
    isr = state.isr
    if eligible is None:
        eligible = live
    if state.leader in live:
        if moving:
            return None  # step 2: a running move's ISR is the move's
        kept = tuple(b for b in isr if b in live)
        if len(kept) == len(isr) or not kept:
            return None
        return state.leader, kept, "shrink"  # step 2
    clean = next((b for b in replicas if b in eligible and b in isr), None)
    if clean is not None:
        return clean, tuple(b for b in isr if b in live), "clean"  # step 3
    if unclean:
        first = next((b for b in replicas if b in eligible), None)
        if first is not None:
            return first, (first,), "unclean"  # step 4
    if state.leader == NO_LEADER:
        return None
    return NO_LEADER, isr, "none"  # step 5


def unclean_candidates(
    states: Mapping[TopicPartition, LeaderIsr | None],
    assignments: Mapping[TopicPartition, Assignment],
    brokers,
    partitions: Iterable[TopicPartition] | None = None,
    *,
    offline: Mapping[int, frozenset[TopicPartition]] | None = None,
) -> set[str]:
    """Topics with a partition that only an unclean election can give a leader now (no live
    ISR member, a live replica): the shell reads their configs for step 4. ``offline``: each
    broker's replicas on offline log directories (not live for their partition)."""
    out: set[str] = set()
    for tp in states.keys() if partitions is None else partitions:
        state, assignment = states.get(tp), assignments.get(tp)
        if state is None or assignment is None or tp[0] in out:
            continue
        live = live_replicas(brokers, offline, tp) if offline else brokers
        if state.leader in live:
            continue
        if not any(b in live for b in state.isr) and any(b in live for b in assignment.replicas):
            out.add(tp[0])
    return out


def unclean_enabled(config: Mapping[str, str] | None, default: bool = False) -> bool:
    """A topic's ``unclean.leader.election.enable`` (its dynamic config, else ``default``:
    Kafka's is false)."""
    value = (config or {}).get(UNCLEAN_CONFIG)
    return default if value is None else value.strip().lower() == "true"


@writing(BROKERS)
def on_brokers(ws: WorkingSet, event: BrokersRead) -> None:
    """``/brokers/ids`` read: the live set every broker hears of (engine step 8), a
    DescribeLogDirs to each broker that (re)registered (step 9), and the started moves' own
    LeaderAndIsr to their replicas among those; a replicating move may complete now (step 5).
    Leaders and ISRs of the other partitions: :func:`on_offline`, in the same step."""
    old = ws.brokers
    ws.brokers = dict(event.brokers)
    ws.brokers_changed = True
    if ws.outbox is not None:
        ws.outbox.brokers = ws.brokers
    back = {b for b, info in ws.brokers.items() if b not in old or old[b].epoch != info.epoch}
    gone = set(old) - set(ws.brokers)
    # A registration rewritten in place (same session: endpoints, rack; KIP-226's dynamic
    # listeners) is told to every broker too, as Kafka's onBrokerUpdate does.
    rewritten = any(old[b] != info for b, info in ws.brokers.items() if b not in back)  # not back: held, same epoch
    if back or gone or rewritten:
        ws.box.live_brokers_changed()
    for b in back | gone:
        # A restart opens its log directories again; a broker gone has no replica online
        # (controller.core.log_dir_failure step 6). Either way it is no longer shutting down
        # (controller.core.controlled_shutdown step 2; Kafka's onBrokerFailure).
        ws.offline_replicas.pop(b)
        ws.shutting_down.pop(b)
    for b in sorted(back):
        ws.box.describe_log_dirs(b)  # step 9: what it hosts, for its strays
    for move in list(ws.tasks.values()):
        if not move.started:
            continue
        state = ws.states.get(move.tp)
        if state is None:
            continue
        # A (re)started replica learns the move; a new leader may now be electable.
        replicas, adding, removing = move.told()
        for b in back.intersection(replicas):
            ws.box.leader_and_isr(b, move.tp, state, replicas=replicas, adding=adding, removing=removing,
                                  is_new=b in adding)
        if move.phase is Phase.REPLICATING:
            reassignment.check_complete(ws, move)
    if back:
        ws.schedule_needed = True


@writing(BROKER_FAILURE)
def on_offline(ws: WorkingSet, event: OfflineCheck) -> None:
    """Steps 1-7 for the partitions the check names (every one held when it names none)."""
    wanted = list(ws.states.keys()) if event.partitions is None else list(dict.fromkeys(event.partitions))
    counts = {"clean": 0, "shrink": 0, "unclean": 0, "none": 0}
    leaderless: list[TopicPartition] = []
    told: set[TopicPartition] = set()
    for tp in wanted:
        assignment = ws.assignments.get(tp)
        state = ws.states.get(tp)
        if assignment is None or state is None or tp[0] in ws.deleting:
            continue  # step 1
        move = ws.tasks.get(tp)
        if move is not None and (move.resend or (move.started and move.phase is not Phase.REPLICATING)):
            continue  # step 1: the move's
        moving = move is not None and move.started
        live = ws.live_for(tp)
        decision = decide(assignment.replicas, state, live, unclean=tp[0] in event.unclean_topics, moving=moving,
                          eligible=ws.eligible_for(tp))
        if decision is None:
            continue
        leader, isr, why = decision
        counts[why] += 1
        if why == "unclean":
            ws.log.append(f"unclean leader election of {tp[0]}-{tp[1]}: {leader}, no live replica of the ISR "
                          f"{list(state.isr)} (unclean.leader.election.enable)")
        elif why == "none":
            leaderless.append(tp)
        new = ws.new_epoch(tp, state, leader=leader, isr=isr)  # step 6: written first
        told.add(tp)
        if moving:
            reassignment.announce(ws, move, new)  # the move's RS, AR and RR; completes it if it can
        else:
            for b in assignment.replicas:
                if b in live:
                    ws.box.leader_and_isr(b, tp, new, replicas=assignment.replicas, adding=(), removing=(),
                                          is_new=False)
        ws.box.update_metadata(tp, new, assignment.replicas)
    if event.registered:
        tell_registered(ws, event.registered, wanted, told)
    if any(counts.values()):
        ws.log.append(
            f"broker failure: {counts['clean']} partition(s) got a new leader from the ISR, "
            f"{counts['unclean']} an unclean one, {counts['shrink']} a shrunk ISR, "
            f"{counts['none']} no leader (no live ISR member)"
        )
    if leaderless:
        names = ", ".join(f"{t}-{p}" for t, p in leaderless[:20]) + (" ..." if len(leaderless) > 20 else "")
        ws.log.append(f"offline partitions (leader -1 until an ISR member registers): {names}")


def tell_registered(ws: WorkingSet, registered, wanted, told) -> None:
    """Step 7: LeaderAndIsr with the state held to each broker that registered, for its
    replicas that step 6 did not just tell; not of a topic being deleted, nor of a started
    move (the move's own requests). A move still waiting for a slot has sent nothing yet:
    its partition is told like any other."""
    live = [b for b in sorted(registered) if b in ws.brokers]
    for tp in wanted:
        assignment = ws.assignments.get(tp)
        state = ws.states.get(tp)
        if assignment is None or state is None or tp in told or tp[0] in ws.deleting:
            continue
        move = ws.tasks.get(tp)
        if move is not None and move.started:
            continue
        for b in live:
            if b in assignment.replicas:
                ws.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(),
                                      is_new=False)
