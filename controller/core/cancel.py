"""KIP-236 cancellation: roll a reassignment back to its original replicas. Pure: functions of
the engine's working set (controller.core.working_set), called from its step (controller.core.engine).

A cancel arrives as a :class:`controller.core.events.CancelRequested` on the controller's one queue,
whichever door it came through: creation of ``/admin/cancel_reassignment_in_progress`` (every
reassignment), the CancelReassignments API (key 10005: every one, or the listed partitions) or
AlterPartitionReassignments (45) with null replicas (controller.shell.admin.cancel.cancel_partitions).
The shell answers an API request only after the step's writes landed, so an acknowledged
cancel is never lost: from then on it is recorded in ZooKeeper and any controller finishes it.

Algorithm, per partition (KIP-236 "Reassignment Cancellation" steps 1-7; ORS original replicas,
TRS target replicas, AR = TRS - ORS the replicas the move added):

 1. Not being reassigned: NO_REASSIGNMENT_IN_PROGRESS (an unknown partition:
    UNKNOWN_TOPIC_OR_PARTITION). Pending or loading (not started): nothing was written yet, so
    the entry is simply withdrawn from ``/admin/reassign_partitions`` - unless it carries no
    ``original_replicas`` (KIP-236 skip 1: written by a tool that never said where the
    partition came from; the controller adds them only when it starts the move), through
    KIP-236's doors; AlterPartitionReassignments withdraws it anyway (``withdraw_any``: Kafka
    rolls back to the replicas before the move, which an unstarted move is on). Already
    cancelling: nothing more to do (success, idempotent). A target waiting behind a started
    move (an override waiting for a slot, a target queued behind its completion or rollback)
    is cancelled with it: the cancel is of the partition's whole reassignment.
 2. Completing (STOPPING, past "TRS in ISR"): skipped with REASSIGNMENT_IN_PROGRESS. The
    original replicas already got StopReplica(delete) when the leader moved into TRS, so there
    is nothing left to roll back to; Kafka 2.4 can cancel "until completion" for the same
    reason - its completion is one event. The operator reassigns it back once it completes.
 3. KIP-236 skip 2: if no original replica is alive and in the ISR while some added replica is
    online, rolling back would take the partition offline: skipped with
    ELIGIBLE_LEADERS_NOT_AVAILABLE and reported (if every replica is offline the partition is
    offline anyway and the rollback goes ahead, as the KIP says).
 4. Record the cancel durably, in the same fenced flush as steps 5-6 and before the brokers
    hear of it: the topic znode becomes the rollback - RS = ORS followed by AR, adding none,
    removing AR (KIP-236 steps 1 and 5 in Kafka 2.4's format) - and then the KIP-240 record
    ``/admin/reassignments/T/P`` gets ``"cancelling": true`` (znodes.payloads: only the
    controller writes records, and a record lives exactly as long as its move). Failover
    (controller.shell.recovery) recognises either and resumes the move as CANCELLING; a flush cut
    before the topic write leaves the move running, as if the cancel had not come (it was not
    acknowledged, and the cancel znode is still there).
 5. Leader and ISR (steps 2-3): keep the leader if it is an original replica, alive and in
    sync, else elect the first live original replica in the ISR; shrink the ISR to ORS; write
    the state znode with leader epoch + 1, conditional on its zkVersion. LeaderAndIsr with
    RS = ORS to the live original replicas.
 6. StopReplica(delete) to the live added replicas (steps 3-4). -> CANCELLING
 7. Once the StopReplica requests were sent (or at once if there were none), one fenced flush
    (KIP-236 steps 5-6): RS = ORS with nothing adding or removing; then, in one multi, the
    entry dropped from ``/admin/reassign_partitions`` (the znode deleted when it empties) and
    the record deleted (a record gone before its entry would leave an entry that looks like a
    new request). UpdateMetadata to every live broker (KIP-236 step 7). -> CANCELLED. ``Step.cancelled`` names the
    partition so the shell removes its throttles; a queued target waiting behind the cancel
    (controller.core.queue) becomes a new pending move from ORS.

The znode door deletes ``/admin/cancel_reassignment_in_progress`` in the flush that records the
cancellations (after ``/admin/reassign_partitions``): "done" is when every cancellation is
recorded - from then on any controller finishes the rollbacks - so a reassignment submitted
after that is not cancelled by a znode left behind, and a crash before it leaves the znode for
the next controller. Skips are logged per partition.

Just after a failover the resumed moves' partition states are still being read; a cancel (any
door) or a queued batch arriving then waits in the engine (``ClusterState.deferred``) until
they are in, because steps 3 and 5 need them.

Worked state table, cancel of ORS (1,2,3) -> TRS (4,5,6) during REPLICATING, leader 1, AR 4 in
sync (the unit tests walk exactly this):

    step                                     RS            AR     RR     ISR           leader
    0 replicating (engine step 4)            4,5,6,1,2,3   4,5,6  1,2,3  1,2,3,4       1
    5 ISR shrunk to ORS, epoch+1             4,5,6,1,2,3   4,5,6  1,2,3  1,2,3         1
    4 topic znode = rollback, then record    1,2,3,4,5,6   -      4,5,6  1,2,3         1
      marked cancelling (one flush with 5);
      LeaderAndIsr RS=ORS to 1,2,3
    6 StopReplica(delete) to 4,5,6           (sent once that flush landed)
    7 final multi: RS=ORS, record deleted,   1,2,3         -      -      1,2,3         1
      entry dropped; UpdateMetadata

Were the leader 4 (an added replica), step 5 would elect 1, the first live original replica in
the ISR. A move whose target was overridden (controller.core.engine step 4b) also deletes the
replicas an earlier target added (its ``dropped``): they are in AR's place above.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from controller.core.events import CancelRequested
from controller.core.flush import ROLLBACK, ROLLBACK_FINISH, writing
from controller.core.task import Move, Phase
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import SetData
from znodes.payloads import encode_record
from znodes.values import Assignment, LeaderIsr, TopicPartition

NO_LEADER = -1  # Kafka's leader id when a partition has none
# Per-partition results (KIP-236 names no codes; these are Kafka's nearest in meaning).
CANCELLED = ErrorCode.NONE
NOT_REASSIGNING = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
UNKNOWN_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
SKIP_NO_ORIGINAL = ErrorCode.INVALID_REPLICA_ASSIGNMENT  # KIP-236 skip 1
SKIP_ORIGINAL_OUT_OF_SYNC = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE  # KIP-236 skip 2
SKIP_COMPLETING = ErrorCode.REASSIGNMENT_IN_PROGRESS  # past the point of no return
STATE_NOT_READ = ErrorCode.LEADER_NOT_AVAILABLE  # just failed over: retriable

Result = tuple[ErrorCode, str | None]


@dataclass
class CancelOutcome:
    """One CancelRequested's per-partition results, for the shell to answer with."""

    token: object
    source: str
    results: dict[TopicPartition, Result]


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@writing(ROLLBACK)
def on_cancel(ws: WorkingSet, event: CancelRequested) -> None:
    """One CancelRequested, any door: steps 1-7 per partition; its results go in ``cancels``."""
    wanted = list(ws.tasks.keys()) if event.partitions is None else list(dict.fromkeys(event.partitions))
    results: dict[TopicPartition, Result] = {}
    for tp in wanted:
        code, message = cancel_one(ws, tp, dry_run=event.validate_only, withdraw_any=event.withdraw_any)
        results[tp] = (code, message)
        if code is not CANCELLED and event.source == "znode":
            ws.log.append(f"cancel ({paths.CANCEL_REASSIGNMENT}): skipped {_name(tp)}: {message}")
    if event.source == "znode" and not event.validate_only:
        ws.cancel_znode_version = event.znode_version if event.znode_version is not None else -1
        done = sum(1 for code, _ in results.values() if code is CANCELLED)
        ws.log.append(f"cancel ({paths.CANCEL_REASSIGNMENT}): {done} of {len(results)} reassignment(s) cancelled")
    ws.cancels.append(CancelOutcome(event.token, event.source, results))


def cancel_one(ws: WorkingSet, tp: TopicPartition, *, dry_run: bool = False, withdraw_any: bool = False) -> Result:
    """Steps 1-3 decide; steps 4-7 act (unless ``dry_run``)."""
    move = ws.tasks.get(tp)
    if move is None:
        if tp not in ws.assignments:
            return UNKNOWN_PARTITION, f"unknown partition {_name(tp)}"
        return NOT_REASSIGNING, f"{_name(tp)} is not being reassigned"
    if move.phase is Phase.CANCELLING:
        if move.next_target is not None and not dry_run:
            forget_next_target(ws, move)
        return CANCELLED, "already being cancelled"
    if not move.started:
        request = ws.requests.get(tp)
        if not withdraw_any and (request is None or request.original_replicas is None):
            return SKIP_NO_ORIGINAL, (
                f"{_name(tp)}: its entry in {paths.REASSIGN_PARTITIONS} has no original_replicas, so there is "
                "nothing to roll back to (KIP-236); it was written without them and has not started: "
                "remove it from the znode to withdraw it"
            )
        if not dry_run:
            ws.log.append(f"cancelled reassignment of {_name(tp)} to {list(move.target)} before it started")
            ws.set_task(move.to(Phase.DROPPED))
            ws.end_task(tp)
            ws.drop_request(tp)
        return CANCELLED, None
    if move.phase is Phase.STOPPING:
        return SKIP_COMPLETING, (
            f"{_name(tp)} is completing: every target replica is in sync and its original replicas "
            f"{list(move.removing)} are being deleted, so there is nothing left to roll back to; "
            "reassign it back once it completes"
        )
    state = ws.states.get(tp)
    if state is None:
        return STATE_NOT_READ, f"{_name(tp)}: its partition state is being read after a failover; retry"
    unsafe = rollback_unsafe(ws, move, state)
    if unsafe is not None:
        return SKIP_ORIGINAL_OUT_OF_SYNC, unsafe
    if not dry_run:
        if move.next_target is not None:
            move = forget_next_target(ws, move)
        begin_cancel(ws, move, state)
    return CANCELLED, None


def forget_next_target(ws: WorkingSet, move: Move) -> Move:
    """A cancel asked for is the partition's whole reassignment: a target waiting behind the
    move (an override waiting for a slot, a target queued behind its completion or rollback)
    is cancelled with it, or the partition would end on it after an acknowledged cancel. Its
    entry goes back to the move's own target, which the rollback drops when it ends."""
    tp = move.tp
    ws.log.append(f"cancel of {_name(tp)}: its waiting target {list(move.next_target)} is cancelled too")
    move = move.with_changes(next_target=None)
    ws.set_task(move)
    request = ws.requests.get(tp)
    if request is not None and request.replicas != move.target:
        ws.requests[tp] = replace(request, replicas=move.target)
        ws.requests_dirty = True
    if move.phase is Phase.CANCELLING:
        ws.late.append(SetData(paths.reassignment(*tp), encode_record(move.target, move.original, cancelling=True)))
    return move


def rollback_unsafe(ws: WorkingSet, move: Move, state: LeaderIsr) -> str | None:
    """Step 3: why rolling back would take the partition offline, or None."""
    live = ws.brokers
    if any(b in state.isr and b in live for b in move.original):
        return None
    online = [b for b in move.added if b in live]
    if not online:
        return None  # offline whatever happens: KIP-236 rolls back
    return (
        f"none of the original replicas {list(move.original)} of {_name(move.tp)} is alive and in the ISR "
        f"{list(state.isr)} while new replicas {online} are online: rolling back would take it offline "
        "(KIP-236 skip)"
    )


@writing(ROLLBACK)
def begin_cancel(ws: WorkingSet, move: Move, state: LeaderIsr) -> None:
    """Step 4, then 5-7."""
    tp = move.tp
    move = move.to(Phase.CANCELLING)
    ws.set_task(move)
    ws.log.append(
        f"cancelling reassignment of {_name(tp)} to {list(move.target)}: rolling back to {list(move.original)}"
    )
    # After the topic znode's rollback in the flush (``late``): a flag never lands for a
    # rollback that did not, so a flagged record always means a move being rolled back.
    ws.late.append(SetData(paths.reassignment(*tp), encode_record(
        move.target, move.original, cancelling=True, next_target=move.next_target)))
    ws.set_assignment(tp, rollback_assignment(move))
    roll_back(ws, move, state)


@writing(ROLLBACK)
def roll_back(ws: WorkingSet, move: Move, state: LeaderIsr | None) -> None:
    """Steps 5-6 (also when a failover resumes a cancel: again with a new leader epoch, as
    every resumed move has one, since the dead controller may have written RS = ORS and died
    before its state znode or the brokers heard of it, and a replica set that only changed
    its order must not go out at an epoch the brokers already hold with the other order)."""
    tp = move.tp
    if state is not None:
        original, live = move.original, ws.brokers
        eligible = ws.eligible_for(tp)  # not onto a broker shutting down (controller.core.controlled_shutdown)
        if state.leader in original and state.leader in eligible and state.leader in state.isr:
            leader = state.leader
        else:
            leader = next((b for b in original if b in state.isr and b in eligible), None)
            if leader is None:
                keep = state.leader in original and state.leader in live and state.leader in state.isr
                leader = state.leader if keep else next((b for b in original if b in state.isr and b in live), NO_LEADER)
        isr = tuple(b for b in state.isr if b in original)
        # A new RS (ORS) and maybe leader: a new leader epoch (engine.new_epoch).
        # Conditional on the zkVersion: a leader's concurrent ISR change fails the flush,
        # and the reload resumes the cancel from what landed.
        state = ws.new_epoch(tp, state, leader, isr)
        for b in original:
            if b in live:
                ws.box.leader_and_isr(b, tp, state, replicas=original, adding=(), removing=(), is_new=False)
    stop_added(ws, move, state)


def stop_added(ws: WorkingSet, move: Move, state: LeaderIsr | None) -> None:
    """Step 6: StopReplica(delete) to the live added replicas; step 7 if there are none."""
    if not ws.stop_replicas(move.tp, move.added, state):
        finish_cancel(ws, move)


@writing(ROLLBACK_FINISH)
def finish_cancel(ws: WorkingSet, move: Move) -> None:
    """Step 7."""
    tp = move.tp
    ws.set_assignment(tp, Assignment(move.original))
    # Deleted with the entry's drop, not before: recovery tells a rolled-back entry from a
    # new request by this record.
    ws.delete_record(tp, with_requests=True)
    state = ws.states.get(tp)
    if state is not None:
        ws.box.update_metadata(tp, state, move.original)
    ws.log.append(f"rolled back {_name(tp)} to {list(move.original)}")
    ws.cancelled.append(tp)
    ws.set_task(move.to(Phase.CANCELLED))
    ws.end_task(tp)
    # A queued target (controller.core.queue) is reassigned from where the rollback ended.
    ws.follow_up(move, ended_on=move.original)


def rollback_assignment(move: Move) -> Assignment:
    """The topic znode entry during a rollback: RS = ORS followed by what the move added (AR,
    then any ``dropped``), removing those (plain ORS if the move added nothing)."""
    return Assignment(move.rollback_replicas, (), move.added)
