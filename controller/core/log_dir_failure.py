"""Replicas on a failed log directory (KIP-113; Kafka's ZooKeeper-mode
``KafkaController.processLogDirEventNotification``, ``onBrokerLogDirFailure`` and the
``replicasOnOfflineDirs`` its LeaderAndIsr answers keep): the engine's part: functions of its
working set (controller.core.working_set; engine step 12b). Pure.

A broker whose log directory fails takes that directory's replicas offline - they neither lead
nor follow until the broker restarts - and creates ``/log_dir_event_notification/
log_dir_event_<seq>`` (``{"version":1,"broker":N,"event":1}``). The notification names the
broker only: as Kafka's controller does, this one asks the broker which replicas are gone by
sending it LeaderAndIsr for all of them, and takes those answered KAFKA_STORAGE_ERROR offline
as it takes a dead broker's (controller.core.broker_failure), with a live set per partition.
Without this, a partition led by a replica on a failed disk has no leader until its broker
restarts or dies: nothing is produced to it, nothing copies from it.

Terms: RS a partition's replicas (a moving one's RS = TRS followed by ORS - TRS); a replica is
*online* when its broker is registered and has not reported it on an offline directory
(``WorkingSet.live_for``, Kafka's ``isReplicaOnline``); O(b) broker b's offline replicas.

 1. Read (``LogDirEventsRead``): the shell's children watch of ``/log_dir_event_notification``,
    and every election and recovery, read each notification for its broker id; a malformed
    one is logged by the shell and read as naming no broker. Every notification read is
    deleted in the step's flush, fenced by the controller epoch like every controller write
    (Kafka 2.2+ deletes them with the controller epoch's zkVersion too): a deposed controller
    must not consume a notification the new one has not acted on. A malformed one is deleted
    too (it can never become readable).
 2. Probe: each named broker that is registered gets LeaderAndIsr with the state held, leader
    epoch unchanged, for every replica it has (Kafka's OnlineReplica for each replica on those
    brokers) - a started move's with the move's RS, AR and RR, none of a topic being deleted or
    of a partition without a state held. Nothing is written. The broker answers per partition:
    NONE or STALE_CONTROLLER_EPOCH (it holds that epoch) for an online replica,
    KAFKA_STORAGE_ERROR for one on an offline directory. An unregistered broker is not asked:
    its registration forgets everything (6).
 3. Answers (``ReplicasOffline``): any LeaderAndIsr answer with KAFKA_STORAGE_ERROR - the
    probe's, a new controller's at its election (engine step 8b), a move's - comes back
    through the dispatcher. Dropped when its broker is no longer registered, or registered
    again since the request (another broker epoch: its directories came back). Else the
    partitions of which the broker holds a replica join O(b); those already in it do nothing.
    A partition of O(b) the broker answers NONE for (its replica was deleted and created again
    in an online directory) leaves O(b), as Kafka's ``onlineReplicas`` do; the dispatcher
    reports those only for the replicas held offline.
 4. Each partition with a newly offline replica goes through controller.core.broker_failure's
    check (its steps 1-6) with L its online replicas: a leader offline - the first online
    replica of RS in the ISR leads, the ISR its online members (clean); none - the first
    online replica alone if the topic's ``unclean.leader.election.enable`` is true (the shell
    reads it for the candidates, :func:`unclean_candidates`), else leader -1 with the ISR kept;
    a leader online - the ISR loses its offline members, bar a REPLICATING move's (its ISR is
    the move's: the leader shrinks it, engine step 5 reads it). Leader epoch + 1, written
    conditional on the zkVersion in the step's flush, then LeaderAndIsr to the online
    replicas and UpdateMetadata to every live broker (its offline_replicas naming O(b)'s, as
    Kafka's isReplicaOnline does). Deferred, as every election is, while a
    failover's resumed moves have no state.
 5. Moves: one with a TRS replica offline does not complete (controller.core.reassignment,
    engine step 5): that copy serves nobody, and completing would delete RR's in-sync copies.
    It completes once the replica is back (its broker restarted) and in the ISR. A move that
    ends with a replica offline in its partition's state (step 4 left a running move alone)
    is checked in the step that ends it (controller.core.ended_moves: clean only, its state
    written after the move's record is deleted).
 6. Forgotten: O(b) when b registers again (a restart opens its directories again; its
    registration's LeaderAndIsr gives it its roles back, broker_failure step 7) or goes, and
    everything at failover: the new controller's LeaderAndIsr to every replica (engine step
    8b) finds the offline ones again through 3.

Invariant protected (docs/DESIGN.md 4.7.1, 7 5c): once the step that took an answer has
landed, every partition with an online replica in its ISR has an online leader from that ISR
(bar a running move's, owned by its move), and no ISR beside an online leader names an offline
replica (bar a REPLICATING move's).

Worked state table, brokers 1-4; broker 1's directory /d2 fails, holding its replicas of a, b,
d, e and f (leader [ISR] epoch):

    partition  RS (AR; RR)    before          1's replica offline           after
    a          1,2,3          1 [1,2,3] 4     4: 2 first online in ISR      2 [2,3] 5
    b          2,1,3          2 [2,1,3] 7     4: ISR loses 1                2 [2,3] 8
    c          1,2            1 [1,2] 3       its replica is in /d1         1 [1,2] 3
    d          1,4            1 [1] 2         4: no online ISR member       -1 [1] 3
    d (unclean enabled)       1 [1] 2         4: first online replica       4 [4] 3
    e          4,2,1 (4; 1)   1 [1,2] 2       4: the move's RS to 2 and 4   2 [2] 3
    f          4,1,2 (4; 2)   2 [2,1,4] 5     4: the move's ISR; 5: waits   2 [2,1,4] 5
    1 restarts (registers again; O(1) forgotten):
    d          1,4            -1 [1] 3        broker_failure 3: 1 in ISR    1 [1] 4
    f          4,1,2 (4; 2)   2 [2,1,4] 5     1 told, TRS in sync: step 5   4 [1,4] 6

    on_log_dir_events(ws, LogDirEventsRead(frozenset({1}), ("/log_dir_event_notification/log_dir_event_0000000000",)))
    on_replicas_offline(ws, ReplicasOffline(1, broker_epoch, frozenset({("a", 0), ...})))
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.core import broker_failure, elections, reassignment
from controller.core.events import LogDirEventsRead, ReplicasOffline, offline_check
from controller.core.flush import LOG_DIR, writing
from controller.core.task import Phase
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes.api import Delete
from znodes.values import LeaderIsr, TopicPartition

STORAGE_ERROR = int(ErrorCode.KAFKA_STORAGE_ERROR)


@writing(LOG_DIR)
def on_log_dir_events(ws: WorkingSet, event: LogDirEventsRead) -> None:
    """Steps 1-2: delete the notifications read, probe the registered brokers they name."""
    for path in event.notifications:
        ws.notifications.append(Delete(path))
    if not event.brokers:
        return
    asked = sorted(b for b in event.brokers if b in ws.brokers)
    ws.log.append(
        f"log directory failure reported by broker(s) {sorted(event.brokers)}: asking "
        f"{asked or 'none (not registered)'} which of their replicas are offline"
    )
    if asked:
        probe(ws, frozenset(asked))


def probe(ws: WorkingSet, brokers: frozenset[int]) -> None:
    """Step 2: LeaderAndIsr with the state held to each of ``brokers`` for each of its replicas."""
    for tp, assignment in ws.assignments.items():
        if tp[0] in ws.deleting:
            continue
        state = ws.states.get(tp)
        if state is None:
            continue
        move = ws.tasks.get(tp)
        replicas, adding, removing = move.told() if move is not None and move.started else (assignment.replicas, (), ())
        for b in replicas:
            if b in brokers:
                ws.box.leader_and_isr(b, tp, state, replicas=replicas, adding=adding, removing=removing,
                                      is_new=b in adding)


@writing(LOG_DIR)
def on_replicas_offline(ws: WorkingSet, event: ReplicasOffline) -> None:
    """Steps 3-4: the broker's newly offline replicas join O(b); their partitions are checked."""
    b = event.broker_id
    broker = ws.brokers.get(b)
    if broker is None or broker.epoch != event.broker_epoch:
        return  # step 3: gone, or registered again since (its directories came back)
    known = ws.offline_replicas.get(b, frozenset())
    new = []
    for tp in sorted(event.partitions):
        assignment = ws.assignments.get(tp)
        if tp not in known and assignment is not None and b in assignment.replicas:
            new.append(tp)
    back = sorted(known & event.online)
    if not new and not back:
        return
    held = (known - frozenset(back)) | frozenset(new)
    if held:
        ws.offline_replicas[b] = held
    else:
        ws.offline_replicas.pop(b)
    if new:
        names = ", ".join(f"{t}-{p}" for t, p in new[:20]) + (" ..." if len(new) > 20 else "")
        ws.log.append(f"broker {b}: {len(new)} replica(s) on an offline log directory: {names}")
    if back:
        ws.log.append(f"broker {b}: {len(back)} replica(s) online again (created in an online log directory)")
    # Step 4 (deferred while a failover's states are read); a replica back may lead a partition
    # that has none, or let a move whose ISR holds TRS complete.
    elections.elect(ws, offline_check(tuple(new + back), event.unclean_topics))
    for tp in back:
        move = ws.tasks.get(tp)
        if move is not None and move.started and move.phase is Phase.REPLICATING and not move.resend:
            reassignment.check_complete(ws, move)


def offline_in_answer(body: dict) -> frozenset[TopicPartition]:
    """Step 3: the partitions a LeaderAndIsr answer says KAFKA_STORAGE_ERROR for (none when the
    request as a whole was refused)."""
    return _answered(body, STORAGE_ERROR)


def online_in_answer(body: dict) -> frozenset[TopicPartition]:
    """Step 3: the partitions a LeaderAndIsr answer says NONE for (none when the request as a
    whole was refused)."""
    return _answered(body, 0)


def _answered(body: dict, code: int) -> frozenset[TopicPartition]:
    if body.get("error_code", 0):
        return frozenset()
    return frozenset(
        (e.get("topic_name"), e.get("partition_index"))
        for e in body.get("partition_errors") or ()
        if e.get("error_code", 0) == code and isinstance(e.get("topic_name"), str)
        and isinstance(e.get("partition_index"), int)
    )


def unclean_candidates(
    states: Mapping[TopicPartition, LeaderIsr],
    assignments,
    brokers,
    offline: Mapping[int, frozenset[TopicPartition]],
    event: ReplicasOffline,
) -> set[str]:
    """Step 4's candidates for an unclean election: topics of the answer's partitions that only
    an unclean election can lead once the answer's replicas are offline too (the shell reads
    their configs)."""
    merged = dict(offline)
    merged[event.broker_id] = merged.get(event.broker_id, frozenset()) | event.partitions
    return broker_failure.unclean_candidates(states, assignments, brokers, sorted(event.partitions), offline=merged)
