"""Each partition's move as the shell sees it: the door it came through, its KIP-240
``reassignment_id``, one structured log line per thing that happened to it, and the counts by
door in /metrics. The engine stays pure: this reads what a step did from the step itself (its
delta, ``completed``, ``cancelled``) and the events it was given, after the step's writes
landed and before memory changes (the ActiveController's ``journal``).

Doors (the ``door`` label and log field):

* ``ReassignPartitions``, ``AlterPartitionReassignments``: the target came with the request's
  engine event (controller.core.events.ReassignRequested, its ``door``), answered NONE;
* ``queue``: the entry came from ``/admin/reassign_partitions_queue`` (KIP-236);
* ``znode``: an entry of ``/admin/reassign_partitions`` this controller found without having
  written it for its listener (a third-party tool, ``kafka-reassign --zookeeper``);
* ``recovered``: found by this controller's election or recovery (written before it was
  active) with no door recorded: a move that had not started yet (only its entry in
  ``/admin/reassign_partitions``, Kafka's format, names it), or a record written without one
  (by an older version, or by a recovery that adopted a move from its topic znode).

A move keeps its door across a failover: the door rides in the move's KIP-240 record
(``/admin/reassignments/T/P``), which the controller writes anyway when the move starts, is
retargeted or is rolled back, as one more key, ``"door":"AlterPartitionReassignments"``
(:class:`RecordIds` adds it to the engine's record writes, so no write is added and the engine
stays as it is; readers of the record ignore the key, and a record without it reads as before).
A new controller's recovery reads every record; :class:`RecordIds` hands the doors it finds to
the journal, which gives them to the moves the recovery resumes (:meth:`MoveJournal.prepare`
of the step with the ``Resume`` event).

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
    store = RecordIds(store, journal)              # records' czxids and doors (writes and reads)
    active.journal = journal; journal.begin_term()
    journal.prepare(events, step, state)           # before the step's writes: each move's door
    journal.observe(events, step, state)           # after them: log lines and counts
"""

from __future__ import annotations

import logging
from collections import Counter
from operator import attrgetter

from controller.core.events import QueueRead, ReassignRequested, RequestsRead, Resume
from controller.core.state import DELETED
from controller.core.validation import replicas_problem
from znodes import paths
from znodes.api import Create, SetData, ZnodeStat
from znodes.batch import JUTE_MAXBUFFER, CheckedChunk
from znodes.reads import get_many
from znodes.values import Request

log = logging.getLogger("reassignd.controller")

ZNODE, QUEUE, RECOVERED = "znode", "queue", "recovered"
REASSIGN_PARTITIONS, ALTER_PARTITION_REASSIGNMENTS = "ReassignPartitions", "AlterPartitionReassignments"
DOORS = (ZNODE, QUEUE, REASSIGN_PARTITIONS, ALTER_PARTITION_REASSIGNMENTS, RECOVERED)
OUTCOMES = ("completed", "cancelled", "dropped", "skipped", "refused")
_RECORDS = paths.REASSIGNMENTS + "/"
_DOOR_KEY = b'"door":"'
_DOOR_SUFFIX = {door: b',"door":"' + door.encode() + b'"}' for door in DOORS}  # hot: one per record written


def record_with_door(data: bytes, door: str) -> bytes:
    """A KIP-240 record's JSON object with ``"door":door`` as its last key (unchanged if it has
    one already or is not an object)."""
    if not data.endswith(b"}") or _DOOR_KEY in data:
        return data
    if len(data) > 2:
        suffix = _DOOR_SUFFIX.get(door) or b',"door":"' + door.encode() + b'"}'
        return data[:-1] + suffix
    return b'{"door":"' + door.encode() + b'"}'



def record_door(data: bytes) -> str | None:
    """The door a KIP-240 record names (:func:`record_with_door`), None without one or with a
    door this version does not know (the label set stays fixed)."""
    at = data.find(_DOOR_KEY)
    if at < 0:
        return None
    start = at + len(_DOOR_KEY)
    end = data.find(b'"', start)
    door = data[start:end].decode("ascii", "replace") if end > 0 else None
    return door if door in DOORS and door != RECOVERED else None


def _record_tp(path: str):
    """(topic, partition) of ``/admin/reassignments/T/P``, else None."""
    if not path.startswith(_RECORDS):
        return None
    topic, _, partition = path[len(_RECORDS):].partition("/")
    return (topic, int(partition)) if partition.isdigit() and topic else None


class MoveJournal:
    def __init__(self, metrics=None):
        self.metrics = metrics
        self._noted: dict[tuple[str, int], tuple[tuple[int, ...], str]] = {}  # tp -> (target, door)
        self._doors: dict[tuple[str, int], str] = {}  # door of each move the controller holds
        self.ids: dict[tuple[str, int], int] = {}  # reassignment_id of each record created this term
        self._read_doors: dict[tuple[str, int], str] = {}  # doors in the records a recovery read
        self._prepared = None  # the step prepare() last saw, and its entries
        self._entries: tuple[bool, dict] = (False, {})

    def begin_term(self) -> None:
        """A new active term: what the last one knew may be stale (another controller ran)."""
        self._noted.clear()
        self._doors.clear()
        self.ids.clear()
        self._read_doors.clear()
        self._prepared = None

    # ---- what the shell tells it ------------------------------------------------------------

    def refused(self, door: str, count: int) -> None:
        """An admin handler answered ``count`` targets with an error (nothing written for them)."""
        if count and self.metrics is not None:
            self.metrics.outcomes.labels("refused", door).inc(count)

    def created(self, path: str, czxid: int) -> None:
        """A KIP-240 record ``/admin/reassignments/T/P`` landed at ``czxid`` (RecordIds)."""
        topic, _, partition = path[len(_RECORDS):].partition("/")
        if partition.isdigit():
            self.ids[(topic, int(partition))] = czxid

    def read_record(self, path: str, data: bytes) -> None:
        """A KIP-240 record read from ZooKeeper (RecordIds): the door it names, if any, for
        the recovery that reads it."""
        tp = _record_tp(path)
        door = record_door(data) if tp is not None else None
        if door is not None:
            self._read_doors[tp] = door

    def door(self, tp) -> str:
        return self._doors.get(tp, RECOVERED)

    @property
    def doors(self) -> dict[tuple[str, int], str]:
        """tp -> door of every move the controller holds (live; ``recovered`` is written into
        no record)."""
        return self._doors

    # ---- what a step did ----------------------------------------------------------------------

    def prepare(self, events, step, before) -> None:
        """Before a step's writes: the door of each move the step starts, accepts or retargets
        (the records it writes carry it, :class:`RecordIds`); at a recovery (a ``Resume``
        event), the doors its records named. Called again for the same step, it does nothing;
        :meth:`observe` calls it if nobody did."""
        if self._prepared is step:
            return
        self._prepared = step
        # A recovery's events: the request entries read, then Resume.
        recovering = any(isinstance(e, Resume) for e in events)
        # tp -> (Request, door it was found behind). The /admin/reassign_partitions entries
        # (thousands, read again whenever the znode changes) are kept as read and looked at
        # only where needed: outside a recovery their door is ``znode``, which _take gives
        # anyway for a target no other entry names.
        entries: dict = {}
        znode_reads = []
        for e in events:
            if isinstance(e, QueueRead):
                # The engine takes the whole queue in one step (controller.core.queue).
                for r in e.requests or ():
                    entries[r.tp] = (r, QUEUE)
            elif isinstance(e, RequestsRead) and e.requests:
                znode_reads.append(e.requests)
                if recovering:
                    for r in e.requests:
                        entries.setdefault(r.tp, (r, RECOVERED))
            elif isinstance(e, ReassignRequested) and not e.validate_only:
                # An admin request's targets the engine took (answered NONE): entries of its door.
                taken = next((a.results for a in step.answers if a.token is e.token and a.results), None) or {}
                for tp, replicas in e.targets:
                    if int(taken.get(tp, (1,))[0]) == 0:
                        entries[tp] = (Request(tp[0], tp[1], tuple(replicas)), e.door)
        self._entries = (recovering, entries, znode_reads)
        znode_entries = None  # tp -> (Request, ZNODE), built if a queued target needs it
        if recovering:
            # The recovery put the moves it resumes in ``before`` already: each gets the door
            # its record names; a reload within a term (after a failed write) keeps what the
            # term knew of the others and of the entries still waiting.
            read, self._read_doors = self._read_doors, {}
            kept = {}
            for tp in before.tasks:
                door = read.get(tp) or self._doors.get(tp)
                if door is not None:
                    kept[tp] = door
            for tp in entries:
                if tp not in kept and tp in self._doors:
                    kept[tp] = self._doors[tp]
            self._doors = kept
        # Hot: every move the step touched (thousands); most keep their target.
        doors, tasks_before = self._doors, before.tasks.get
        for tp, move in step.delta.tasks.items():
            if move is DELETED:
                continue
            old = tasks_before(tp)
            target = move.target
            if old is None or (target is not old.target and target != old.target):
                # A new move, or a new target (an override of a started move: the move is now
                # the newest request's).
                door = self._take(tp, target, entries, recovering)
                if door != RECOVERED or tp not in doors:
                    doors[tp] = door
            queued = move.next_target
            if queued is not None and (old is None or old.next_target != queued):
                # A target queued behind the move (controller.core.queue) starts in a later
                # step with no event naming it: its door is noted now, as the request step notes its own.
                found = entries.get(tp)
                if found is None and znode_reads and not recovering:
                    if znode_entries is None:
                        znode_entries = _first_entries(znode_reads, None)
                    found = znode_entries.get(tp)
                if tp not in self._noted and found is not None and tuple(found[0].replicas) == tuple(queued):
                    self._noted[tp] = (tuple(queued), found[1])

    def observe(self, events, step, before) -> None:
        """One engine step whose writes landed; ``before`` is the state it was computed from."""
        self.prepare(events, step, before)
        recovering, entries, znode_reads = self._entries
        info = log.isEnabledFor(logging.INFO)
        tally: Counter = Counter()  # (outcome, door): counted once per step (10,000 ends in one step)
        completed, cancelled = set(step.completed), set(step.cancelled)
        doors, ids, tasks_before = self._doors, self.ids, before.tasks.get
        for tp, move in step.delta.tasks.items():
            if move is not DELETED and not info:
                continue  # hot: the moves that go on, with nothing to log
            old = tasks_before(tp)
            if move is DELETED:
                door = doors.pop(tp, RECOVERED)
                outcome = "completed" if tp in completed else "cancelled" if tp in cancelled or (
                    old is not None and not old.started and _cancelled_before_start(step, tp)) else "dropped"
                tally[outcome, door] += 1
                if info:
                    self._line(outcome, tp, door, old.target if old is not None else None)
                ids.pop(tp, None)
                continue
            door = doors.get(tp, RECOVERED)
            if move.started and (old is None or not old.started):
                self._line("started", tp, door, move.target, move.original)
            elif old is None:
                self._line("accepted", tp, door, move.target)
            elif move.started and move.target != old.target:
                self._line("retargeted", tp, door, move.target, move.original)
        # Entries that became no move: the engine dropped them from their znode (an invalid
        # target, or nothing to do). Re-reads of entries already seen are not counted again.
        # Most entries of a read have a move: those without one are found by set arithmetic.
        if znode_reads and not recovering:
            without_move = set()
            for requests in znode_reads:
                without_move.update(map(_TP, requests))
            without_move.difference_update(before.tasks, step.delta.tasks, entries)
            if without_move:
                entries = {**entries, **_first_entries(znode_reads, without_move)}
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
                          else replicas_problem(r.replicas, before.brokers, assignment.original) or "dropped by the controller")
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
        return RECOVERED if recovering else ZNODE

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


_TP = attrgetter("tp")


def _first_entries(reads, only) -> dict:
    """tp -> (Request, ``znode``) of the first entry naming each tp (in ``only``, when given)
    across the reads of /admin/reassign_partitions, in znode order (the engine keeps the
    first of duplicates)."""
    out: dict = {}
    for requests in reads:
        for r in requests:
            if (only is None or r.tp in only) and r.tp not in out:
                out[r.tp] = (r, ZNODE)
    return out


def _cancelled_before_start(step, tp) -> bool:
    """A cancel withdrew the move before it started (controller.core.cancel: result 0)."""
    for outcome in step.cancels:
        result = outcome.results.get(tp)
        if result is not None and result[0] == 0:
            return True
    return False


class RecordIds:
    """A Store between the controller and ZooKeeper that keeps each move's door in its KIP-240
    record and tells the journal each record's ``reassignment_id``:

    * a fenced multi-op's record writes (create, set) get the move's door as one more key
      (:func:`record_with_door`; none for a door the journal does not know);
    * records read in bulk (a recovery's) hand their doors to the journal;
    * the czxid of each record a fenced multi-op creates: every op of a multi shares one zxid,
      which a setData's stat in the same multi carries; a multi of creates only costs one read
      of one of its records."""

    def __init__(self, inner, journal: MoveJournal):
        self._inner = inner
        self._journal = journal

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def get_many(self, path_list, *a, **kw):
        results = await (self._inner.get_many(path_list, *a, **kw) if hasattr(self._inner, "get_many")
                         else get_many(self._inner, path_list))
        if path_list and path_list[0].startswith(_RECORDS):
            for path, read in zip(path_list, results):
                if read is not None:
                    self._journal.read_record(path, read[0])
        return results

    async def fenced_multi(self, ops, epoch_zkversion):
        # Hot: every op of every flush passes here (tens of thousands a second), so an op
        # costs a type check and a prefix check; a record write, its path's partition read
        # and one dict lookup (the doors are kept by partition only: keeping them by record
        # path too cost two paths formatted per move).
        created = []
        written = None
        grown = 0  # bytes the doors add
        doors = self._journal.doors
        for i, op in enumerate(ops):
            kind = type(op)
            if kind is not SetData and kind is not Create:
                continue
            path = op.path
            if not path.startswith(_RECORDS):
                continue
            # A record's path names its partition: its door is looked up by that (a record
            # write is one op of about four per partition; a topic's parent names none).
            tp = _record_tp(path)
            if tp is None:
                continue
            if kind is Create:
                created.append(path)
            door = doors.get(tp)
            if door is None or door == RECOVERED:
                continue
            data = record_with_door(op.data, door)
            if data is not op.data:
                if written is None:
                    written = list(ops)
                grown += len(data) - len(op.data)
                written[i] = (Create(op.path, data, op.ephemeral, op.sequential) if kind is Create
                              else SetData(op.path, data, op.version))
        if written is not None and type(ops) is CheckedChunk and ops.size is not None and ops.size + grown <= JUTE_MAXBUFFER:
            # A writer's chunk still fits with the doors: only bytes changed, so the store need
            # not check every op of it again; one that no longer fits goes as a plain list, which
            # the store checks and refuses whole.
            written = CheckedChunk(written, ops.size + grown)
        results = await self._inner.fenced_multi(ops if written is None else written, epoch_zkversion)
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


def count_refused(active, door: str, results: dict, requested) -> None:
    """Targets in ``requested`` an admin handler answered with an error code (nothing written)."""
    journal = getattr(active, "journal", None)
    if journal is not None:
        journal.refused(door, sum(1 for tp in requested if int(results.get(tp, (0,))[0]) != 0))
