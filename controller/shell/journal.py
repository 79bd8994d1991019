"""Each partition's move as the shell sees it: the door it came through, its KIP-240
``reassignment_id``, one structured log line per thing that happened to it, and the counts by
door in /metrics. The engine stays pure: this reads what a step did from the step itself (its
delta, ``completed``, ``cancelled``) and the events it was given, after the step's writes
landed and before memory changes (the ActiveController's ``journal``).

Doors (the ``door`` label and log field):

* ``ReassignPartitions``, ``AlterPartitionReassignments``: the admin handler noted the target
  (:meth:`MoveJournal.note`) before writing it into ``/admin/reassign_partitions``;
* ``queue``: the entry came from ``/admin/reassign_partitions_queue`` (KIP-236);
* ``znode``: an entry of ``/admin/reassign_partitions`` this controller found without having
  written it for its listener (a third-party tool, ``kafka-reassign --zookeeper``);
* ``unknown``: found by this controller's election or recovery: written before it was active,
  through a door it cannot tell.

Log lines (logger ``reassignd.controller``; with ``--log-format json`` the fields are JSON keys):
``move`` is ``accepted`` (waiting for a slot), ``started``, ``retargeted`` (KIP-455 override),
``completed``, ``cancelled`` (rolled back, or withdrawn by a cancel before it started),
``dropped`` (withdrawn from the znode, or its topic or partition deleted), ``skipped`` (the
target is already the assignment) or ``refused`` (an invalid target the controller dropped from
a znode; an admin API refusing a target answers with the error instead and counts it here), with
``topic``, ``partition``, ``door``, ``target`` and, once the move's record exists,
``reassignment_id`` (the record's czxid, taken from the multi-op that created it; a move
resumed after a failover has none here: use ListReassignments).

    journal = MoveJournal(metrics)
    store = RecordIds(store, journal)              # records' czxids from the writes that create them
    active.journal = journal; journal.begin_term()
"""

from __future__ import annotations

import logging
from collections import Counter

from controller.core.events import QueueRead, RequestsRead, Resume
from controller.core.state import DELETED
from controller.core.validation import replicas_problem
from znodes import paths
from znodes.api import Create, ZnodeStat

log = logging.getLogger("reassignd.controller")

ZNODE, QUEUE, UNKNOWN = "znode", "queue", "unknown"
REASSIGN_PARTITIONS, ALTER_PARTITION_REASSIGNMENTS = "ReassignPartitions", "AlterPartitionReassignments"
DOORS = (ZNODE, QUEUE, REASSIGN_PARTITIONS, ALTER_PARTITION_REASSIGNMENTS, UNKNOWN)
OUTCOMES = ("completed", "cancelled", "dropped", "skipped", "refused")
_RECORDS = paths.REASSIGNMENTS + "/"


class MoveJournal:
    def __init__(self, metrics=None):
        self.metrics = metrics
        self._noted: dict[tuple[str, int], tuple[tuple[int, ...], str]] = {}  # tp -> (target, door)
        self._doors: dict[tuple[str, int], str] = {}  # door of each move the controller holds
        self.ids: dict[tuple[str, int], int] = {}  # reassignment_id of each record created this term

    def begin_term(self) -> None:
        """A new active term: what the last one knew may be stale (another controller ran)."""
        self._noted.clear()
        self._doors.clear()
        self.ids.clear()

    # ---- what the shell tells it ------------------------------------------------------------

    def note(self, targets, door: str) -> None:
        """An admin handler is about to write these targets (tp -> replicas)."""
        for tp, replicas in targets.items():
            self._noted[tp] = (tuple(replicas), door)

    def forget(self, targets) -> None:
        """The handler's write failed: those targets did not come through it."""
        for tp, replicas in targets.items():
            if self._noted.get(tp, (None,))[0] == tuple(replicas):
                del self._noted[tp]

    def refused(self, door: str, count: int) -> None:
        """An admin handler answered ``count`` targets with an error (nothing written for them)."""
        if count and self.metrics is not None:
            self.metrics.outcomes.labels("refused", door).inc(count)

    def created(self, path: str, czxid: int) -> None:
        """A KIP-240 record ``/admin/reassignments/T/P`` landed at ``czxid`` (RecordIds)."""
        topic, _, partition = path[len(_RECORDS):].partition("/")
        if partition.isdigit():
            self.ids[(topic, int(partition))] = czxid

    def door(self, tp) -> str:
        return self._doors.get(tp, UNKNOWN)

    # ---- what a step did ----------------------------------------------------------------------

    def observe(self, events, step, before) -> None:
        """One engine step whose writes landed; ``before`` is the state it was computed from."""
        recovering = False
        entries: dict = {}  # tp -> (Request, door if found in a znode)
        for e in events:
            if isinstance(e, Resume):
                recovering = True
            elif isinstance(e, QueueRead):
                # The engine takes the whole queue in one step (controller.core.queue).
                for r in e.requests or ():
                    entries[r.tp] = (r, QUEUE)
            elif isinstance(e, RequestsRead):
                for r in e.requests or ():
                    entries.setdefault(r.tp, (r, UNKNOWN if recovering else ZNODE))
        info = log.isEnabledFor(logging.INFO)
        tally: Counter = Counter()  # (outcome, door): counted once per step (10,000 ends in one step)
        completed, cancelled = set(step.completed), set(step.cancelled)
        for tp, move in step.delta.tasks.items():
            old = before.tasks.get(tp)
            if move is DELETED:
                door = self._doors.pop(tp, UNKNOWN)
                outcome = "completed" if tp in completed else "cancelled" if tp in cancelled or (
                    old is not None and not old.started and _cancelled_before_start(step, tp)) else "dropped"
                tally[outcome, door] += 1
                if info:
                    self._line(outcome, tp, door, old.target if old is not None else None)
                self.ids.pop(tp, None)
                continue
            if old is None or move.target != old.target:
                door = self._take(tp, move.target, entries, recovering)
                if old is None or not old.started:
                    self._doors[tp] = door
                elif door != UNKNOWN or tp not in self._doors:
                    self._doors[tp] = door  # an override: the move is now the newest request's
            door = self._doors.get(tp, UNKNOWN)
            if not info:
                continue
            if move.started and (old is None or not old.started):
                self._line("started", tp, door, move.target, move.original)
            elif old is None:
                self._line("accepted", tp, door, move.target)
            elif move.started and move.target != old.target:
                self._line("retargeted", tp, door, move.target, move.original)
        # Entries that became no move: the engine dropped them from their znode (an invalid
        # target, or nothing to do). Re-reads of entries already seen are not counted again.
        for tp, (r, _) in entries.items():
            if tp in before.tasks or tp in step.delta.tasks or before.requests.get(tp) == r:
                continue
            door = self._take(tp, tuple(r.replicas), entries, recovering)
            assignment = before.assignments.get(tp)
            if assignment is not None and tuple(assignment.replicas) == tuple(r.replicas):
                outcome, reason = "skipped", "already the assignment"
            else:
                outcome = "refused"
                reason = ("unknown topic or partition" if assignment is None
                          else replicas_problem(r.replicas, before.brokers) or "dropped by the controller")
            tally[outcome, door] += 1
            if info:
                self._line(outcome, tp, door, tuple(r.replicas), reason=reason)
        if tally and self.metrics is not None:
            for (outcome, door), n in tally.items():
                self.metrics.outcomes.labels(outcome, door).inc(n)

    def _take(self, tp, target, entries, recovering: bool) -> str:
        noted = self._noted.get(tp)
        if noted is not None and noted[0] == tuple(target):
            del self._noted[tp]
            return noted[1]
        found = entries.get(tp)
        if found is not None and tuple(found[0].replicas) == tuple(target):
            return found[1]
        return UNKNOWN if recovering else ZNODE

    def _line(self, what: str, tp, door: str, target=None, original=None, reason: str | None = None) -> None:
        fields = {"move": what, "topic": tp[0], "partition": tp[1], "door": door}
        rid = self.ids.get(tp)
        if rid is not None:
            fields["reassignment_id"] = rid
        if target is not None:
            fields["target"] = list(target)
        if original is not None:
            fields["original"] = list(original)
        text = f"reassignment of {tp[0]}-{tp[1]}"
        if target is not None:
            text += f" to {list(target)}"
        text += f" ({door}): {what}"
        if reason:
            fields["reason"] = reason
            text += f" ({reason})"
        log.info("%s", text, extra=fields)


def _cancelled_before_start(step, tp) -> bool:
    """A cancel withdrew the move before it started (controller.core.cancel: result 0)."""
    for outcome in step.cancels:
        result = outcome.results.get(tp)
        if result is not None and result[0] == 0:
            return True
    return False


class RecordIds:
    """A Store that tells the journal the czxid of each KIP-240 record a fenced multi-op
    creates: every op of a multi shares one zxid, which a setData's stat in the same multi
    carries; a multi of creates only costs one read of one of its records."""

    def __init__(self, inner, journal: MoveJournal):
        self._inner = inner
        self._journal = journal

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def fenced_multi(self, ops, epoch_zkversion):
        results = await self._inner.fenced_multi(ops, epoch_zkversion)
        created = [op.path for op in ops if type(op) is Create and op.path.startswith(_RECORDS)
                   and op.path.count("/") == 4]
        if created:
            zxid = next((r.mzxid for r in results if isinstance(r, ZnodeStat)), None)
            if zxid is None:
                stat = await self._inner.exists(created[0])
                zxid = None if stat is None else stat.czxid
            if zxid is not None:
                for path in created:
                    self._journal.created(path, zxid)
        return results


# ---- the admin handlers' side -------------------------------------------------------------------


async def write_noted(active, door: str, targets: dict, write):
    """Run an admin handler's ``write()`` (per-partition results) with ``targets`` noted as
    coming through ``door``; what it did not write is forgotten again."""
    journal = getattr(active, "journal", None)
    if journal is None or not targets:
        return await write()
    journal.note(targets, door)
    try:
        outcome = await write()
    except BaseException:
        journal.forget(targets)
        raise
    journal.forget({tp: r for tp, r in targets.items() if int(outcome.get(tp, (0,))[0]) != 0})
    return outcome


def count_refused(active, door: str, results: dict, requested) -> None:
    """Targets in ``requested`` an admin handler answered with an error code (nothing written)."""
    journal = getattr(active, "journal", None)
    if journal is not None:
        journal.refused(door, sum(1 for tp in requested if int(results.get(tp, (0,))[0]) != 0))
