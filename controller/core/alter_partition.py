"""A leader's ISR change through the controller (AlterPartition, API 56; KIP-497, AlterIsr in
Kafka 2.7; Kafka's ``KafkaController.processAlterPartition`` in ZooKeeper mode). Pure.

Brokers of inter.broker.protocol.version 2.7 and later no longer write a partition's state
znode when their ISR grows or shrinks, nor post an ISR change notification: the leader asks
the active controller, which writes the znode (fenced by its epoch, conditional on the
zkVersion the leader holds), tells every broker through UpdateMetadata, and answers the state
written; the leader takes the new ISR only from that answer. For a move the written ISR is
what step 5 (controller.core.reassignment) waits for, as a notified ISR change is.

B is the broker asking, e its broker epoch; per partition the leader asks for ISR I at leader
epoch le and partition epoch pe (the zkVersion it holds); S is the partition's state (the newer,
by zkVersion, of the one the shell read for the request and the one held), RS its replicas, E
the brokers that may be in an ISR (``WorkingSet.eligible_for``: registered, the replica online,
not shutting down: KIP-841).

 1. B not registered, or e not its registration's epoch -> STALE_BROKER_EPOCH for the whole
    request (Kafka: an unknown broker too). Nothing else happens.
 2. Per partition, in the request's order: a partition named twice -> INVALID_REQUEST for each
    naming (nothing decided from either); unknown topic or partition, a topic being deleted, or
    no state -> UNKNOWN_TOPIC_OR_PARTITION (the shell answers an unknown topic id
    UNKNOWN_TOPIC_ID). A topic being deleted is answered as gone: its state znodes are about to
    be (controller.core.topic_deletion), and a write racing their delete would fail the step's
    flush and cost a reload; the leader proposes nothing more until a LeaderAndIsr.
 3. Against S, in Kafka's order:
    a. pe > S's zkVersion or le > S's leader epoch -> NOT_CONTROLLER (the leader saw a newer
       state than this controller: it may be a deposed one; the leader asks again);
    b. le < S's leader epoch -> FENCED_LEADER_EPOCH;
    c. B leads S and I is S's ISR -> NONE with S, nothing written (a retried request);
    d. pe < S's zkVersion -> INVALID_UPDATE_VERSION;
    e. a recovering leader (KIP-704: this controller never elects one, so S is recovered) ->
       INVALID_REQUEST;
    f. B does not lead S -> NOT_LEADER_OR_FOLLOWER (KRaft's rule; Kafka's ZooKeeper controller
       would write B as leader);
    g. I empty, without B, or with a broker outside RS -> INVALID_REQUEST (KRaft's rule);
    h. a member of I not in E, or (version 3) given a broker epoch that is not its
       registration's -> INELIGIBLE_REPLICA (versions 2+; OPERATION_NOT_ATTEMPTED before).
 4. Write: the state znode with I, the leader and leader epoch kept, this controller's epoch,
    conditional on S's zkVersion (so on pe), fenced (the step's flush; a conflict retakes the
    step with the state read anew, which then answers 3d). UpdateMetadata with the new state
    to every live broker. No LeaderAndIsr: the answer is the leader's.
 5. What an ISR change starts (controller.core.reassignment): a replicating move whose TRS is
    now in the ISR completes in the same step (step 5, its write after this one, conditional on
    the zkVersion just written); a move waiting for the ISR may start (step 2a), the caps
    change when the partition crossed its min ISR (2b).
 6. Answer, once the step's writes landed (``Step.elections``): per partition its code and, for
    NONE, the state written (or S, 3c): leader, leader epoch, ISR, zkVersion as partition epoch.

Invariants protected (docs/DESIGN.md section 7): every ISR write is fenced by the controller
epoch and lands only on the state the leader decided from; no broker that cannot serve enters
an ISR.

Worked state table, RS 1,2,3, broker 1 leads at leader epoch 4, state S = 1 [1,2] zkVersion 7;
broker 3 is shutting down; a move to TRS 1,2 of a partition with RS 2,1,3 replicates:

    asked by 1 (le, pe, I)    step  answer                         written
    4, 7, [1,2,3]             3h    INELIGIBLE_REPLICA (v2+)       nothing
    4, 7, [1]                 4     NONE 1 [1] le 4 pe 8           S = 1 [1] 4, zkVersion 8
    4, 7, [1,2]               3c    NONE 1 [1,2] le 4 pe 7         nothing
    4, 6, [1]                 3d    INVALID_UPDATE_VERSION         nothing
    3, 7, [1]                 3b    FENCED_LEADER_EPOCH            nothing
    5, 7, [1]                 3a    NOT_CONTROLLER                 nothing
    (move) 2 [2] -> [2,1]     4, 5  NONE 2 [2,1] pe v+1            ISR [2,1]; then step 5:
                                                                   leader 2, ISR [2,1], epoch+1

    on_alter(ws, IsrAlterRequested(1, broker_epoch, proposals, states, version=2, token=future))
"""

from __future__ import annotations

from collections import Counter

from controller.core import reassignment
from controller.core.events import IsrAlterRequested, IsrProposal
from controller.core.flush import ISR_CHANGE, writing
from controller.core.task import Phase
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes.values import LeaderIsr, TopicPartition

RECOVERED = 0  # KIP-704's LeaderRecoveryState: the only state this controller writes
# The first version that answers INELIGIBLE_REPLICA (KIP-841); older leaders know only
# OPERATION_NOT_ATTEMPTED for "try again later".
INELIGIBLE_FROM_VERSION = 2

# (top-level error, {partition: (error code, state answered or None)})
Result = tuple[ErrorCode, dict[TopicPartition, tuple[ErrorCode, "LeaderIsr | None"]]]


def on_alter(ws: WorkingSet, event: IsrAlterRequested) -> None:
    """Steps 1-6, once a failover's resumed moves have their states (a move's completion may
    follow from the ISR written)."""
    if ws.states_missing():
        ws.deferred.append(event)
    else:
        ws.elections.append((event.token, alter(ws, event)))


@writing(ISR_CHANGE)
def alter(ws: WorkingSet, event: IsrAlterRequested) -> Result:
    broker = ws.brokers.get(event.broker_id)
    if broker is None or event.broker_epoch != broker.epoch:
        return ErrorCode.STALE_BROKER_EPOCH, {}  # step 1
    named = Counter(p.tp for p in event.proposals)
    results: dict[TopicPartition, tuple[ErrorCode, LeaderIsr | None]] = {}
    written = 0
    for proposal in event.proposals:
        tp = proposal.tp
        if named[tp] > 1:
            results[tp] = ErrorCode.INVALID_REQUEST, None  # step 2
            continue
        code, state = _decide(ws, event, proposal)
        if code is ErrorCode.NONE and state is None:
            state = _write(ws, tp, proposal.isr)  # steps 4-5
            written += 1
        results[tp] = code, state
    if written:
        ws.log.append(f"AlterPartition from broker {event.broker_id}: {written} ISR(s) written")
    return ErrorCode.NONE, results  # step 6


def _decide(ws: WorkingSet, event: IsrAlterRequested, p: IsrProposal) -> tuple[ErrorCode, LeaderIsr | None]:
    """Steps 2-3 for one partition: (NONE, None) to write; else the answer."""
    tp, b = p.tp, event.broker_id
    assignment = ws.assignments.get(tp)
    held, read = ws.states.get(tp), event.states.get(tp)
    state = held if read is None or (held is not None and held.zk_version >= read.zk_version) else read
    if assignment is None or state is None or tp[0] in ws.deleting:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None  # step 2
    if state is not held:
        ws.states[tp] = state  # the conditional write is made from this one
    if p.partition_epoch > state.zk_version or p.leader_epoch > state.leader_epoch:
        return ErrorCode.NOT_CONTROLLER, None  # 3a
    if p.leader_epoch < state.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH, None  # 3b
    if state.leader == b and tuple(p.isr) == tuple(state.isr) and p.recovery_state == RECOVERED:
        return ErrorCode.NONE, state  # 3c
    if p.partition_epoch < state.zk_version:
        return ErrorCode.INVALID_UPDATE_VERSION, None  # 3d
    if p.recovery_state != RECOVERED:
        return ErrorCode.INVALID_REQUEST, None  # 3e
    if state.leader != b:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, None  # 3f
    replicas = assignment.replicas
    if not p.isr or b not in p.isr or len(set(p.isr)) != len(p.isr) or any(r not in replicas for r in p.isr):
        return ErrorCode.INVALID_REQUEST, None  # 3g
    eligible = ws.eligible_for(tp)
    stale = any(
        epoch != -1 and (r not in ws.brokers or ws.brokers[r].epoch != epoch)
        for r, epoch in zip(p.isr, p.member_epochs)
    )
    if stale or any(r not in eligible for r in p.isr):
        return (ErrorCode.INELIGIBLE_REPLICA if event.version >= INELIGIBLE_FROM_VERSION
                else ErrorCode.OPERATION_NOT_ATTEMPTED), None  # 3h
    return ErrorCode.NONE, None


def _write(ws: WorkingSet, tp: TopicPartition, isr) -> LeaderIsr:
    """Steps 4-5: the ISR written, every live broker told, what the change starts."""
    before = ws.states[tp]
    new = ws.new_isr(tp, before, isr)
    ws.box.update_metadata(tp, new, ws.assignments[tp].replicas)
    reassignment.note_isr_change(ws, tp, before, new)
    move = ws.tasks.get(tp)
    if move is not None and move.phase is Phase.REPLICATING and not move.resend:
        reassignment.check_complete(ws, move)
    return new
