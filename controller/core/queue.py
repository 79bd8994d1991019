"""KIP-236 queued reassignments: ``/admin/reassign_partitions_queue`` joins the running set.
Pure: functions of the engine's working set (controller.core.working_set), called from its step
(controller.core.engine).

The queue znode has the format of ``/admin/reassign_partitions``. Its writer creates it, so a
second batch is refused (NodeExists) while one waits - that is the writer's side
(``kafka-reassign --zookeeper ... --execute-queue``). The controller takes the whole queue in one
step:

 1. A queue znode that does not parse is logged and left alone (an operator fixes or deletes
    it); an entry that does not parse, names an unknown topic, partition or broker, repeats a
    partition or lists no broker is dropped with a logged reason (as in engine step 1).
 2. Each valid entry goes into ``/admin/reassign_partitions`` with ``original_replicas``
    (the controller takes it, so it records where the partition is coming from):
    - a partition not being reassigned becomes a new PENDING move (already at its target:
      nothing to do);
    - a pending partition (not started) gets the queued target instead: withdrawing a move
      that has not started is its whole cancellation;
    - a partition moving to another target is first cancelled (controller.core.cancel, with its
      skip rules), then reassigned to the queued target from its original replicas once the
      rollback finished. A replicating move that KIP-236 skip 2 keeps from being rolled back
      takes the queued target in place instead (the engine's step 4b, KIP-455's override,
      which deletes no in-sync replica before the new target is in sync); a completing move
      keeps going and the queued target follows it (the engine's "next target");
    - a partition being cancelled gets the queued target after its rollback.
 3. The queue znode is deleted (conditional on the version read) in the same flush, after
    ``/admin/reassign_partitions``: a crash before that leaves it for the next controller,
    which takes it again (taking an entry twice changes nothing).
"""

from __future__ import annotations

from dataclasses import replace

from controller.core import cancel
from controller.core.events import QueueRead
from controller.core.flush import QUEUE, writing
from controller.core.task import Move, Phase
from controller.core.working_set import WorkingSet
from znodes import paths
from znodes.api import SetData
from znodes.payloads import encode_record
from znodes.values import Assignment, Request


def _name(r: Request) -> str:
    return f"{r.topic}-{r.partition}"


@writing(QUEUE)
def on_queue(ws: WorkingSet, event: QueueRead) -> None:
    """The queue znode read: step 1 checks, step 2 per entry; the znode is deleted in the flush."""
    if event.version is None:
        return
    if event.error is not None:
        ws.warnings.append(f"leaving {paths.REASSIGN_QUEUE} alone: {event.error}")
        return
    for reason in event.rejected:
        ws.warnings.append(reason)
    seen: set = set()
    for r in event.requests or ():
        if r.tp in seen:
            ws.log.append(f"dropping duplicate entry for {_name(r)} in {paths.REASSIGN_QUEUE}")
            continue
        seen.add(r.tp)
        reason = ws.invalid_reason(r)
        if reason is not None:
            ws.log.append(f"dropping queued reassignment of {_name(r)} to {list(r.replicas)}: {reason}")
            continue
        take_queued(ws, r)
    ws.queue_version = event.version
    ws.touched = True


def take_queued(ws: WorkingSet, r: Request) -> None:
    """Step 2 for one entry."""
    tp, target = r.tp, r.replicas
    move = ws.tasks.get(tp)
    if move is None:
        current = ws.assignments[tp]
        if current == Assignment(target):
            ws.log.append(f"queued reassignment of {_name(r)} to {list(target)}: already assigned")
            return
        put_request(ws, replace(r, original_replicas=current.replicas))
        ws.set_task(Move(tp, target))
        ws.pending[tp] = None
        ws.schedule_needed = True
        return
    if not move.started:
        if move.target != target:
            ws.log.append(f"queued target {list(target)} of {_name(r)} replaces its pending one {list(move.target)}")
            ws.retarget_unstarted(move, target)
        put_request(ws, replace(r, original_replicas=ws.assignments[tp].replicas))
        return
    if target == move.target and move.phase is not Phase.CANCELLING:
        if move.next_target is not None:
            ws.set_task(move.with_changes(next_target=None))
        put_request(ws, replace(r, original_replicas=move.original))
        return
    put_request(ws, replace(r, original_replicas=move.original))
    # A rollback already ends at ORS; a completing move must go back there afterwards.
    next_target = None if target == move.original and move.phase is not Phase.STOPPING else target
    changed = next_target != move.next_target
    move = move.with_changes(next_target=next_target)
    ws.set_task(move)
    if move.phase is not Phase.REPLICATING:
        what = "its rollback" if move.phase is Phase.CANCELLING else "its completion"
        ws.log.append(f"queued target {list(target)} of {_name(r)} follows {what}")
        # Kept in the record too: equal to the target being rolled back, the entry in
        # /admin/reassign_partitions reads like the rollback's own, and a failover would lose it.
        # Late, as a rollback's flag is: a cancel taken earlier in this step wrote the record
        # there without it, and the last write of a path in a flush is the one that stays.
        if changed:
            ws.late.append(SetData(paths.reassignment(*tp), encode_record(
                move.target, move.original, cancelling=move.phase is Phase.CANCELLING, next_target=move.next_target)))
        return
    state = ws.states.get(tp)
    unsafe = "its partition state is being read after a failover" if state is None else cancel.rollback_unsafe(ws, move, state)
    if unsafe is not None:
        ws.log.append(
            f"queued {_name(r)}: cannot cancel its move to {list(move.target)} ({unsafe}); "
            f"the queued target {list(target)} replaces it in place instead"
        )
        ws.overrides[tp] = None  # controller.core.engine step 4b: no in-sync replica is deleted before completion
        return
    ws.log.append(f"queued {_name(r)}: cancelling its move to {list(move.target)}, then moving it to {list(target)}")
    cancel.begin_cancel(ws, move, state)


def put_request(ws: WorkingSet, r: Request) -> None:
    """The entry into ``/admin/reassign_partitions`` (rewritten only if it changed)."""
    if ws.requests.get(r.tp) != r:
        ws.requests[r.tp] = r
        ws.requests_dirty = True
