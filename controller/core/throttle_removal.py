"""KIP-179 throttle removal: which listed throttles go, and the guard that makes the write
conditional on what the decision read. Pure: no I/O. An engine rule: a step that
ends moves (IDLE) or leaves nothing running (ALL, also at failover) asks for a check
(``Step.throttle_check``); the shell reads what :class:`Snapshot` holds and the configs of what
is listed (controller.shell.throttles.read_removal) and queues it as a ThrottleRemovalRead;
:func:`on_removal` decides in that step and its write goes last in the step's flush, alone, as
one multi (``Step.removal``); a conflict there is read and decided again.

The removal znodes (``/admin/throttled_replicas_removal`` listing topics,
``/admin/throttled_rates_removal`` brokers) name the auto-removable throttles; a listed topic
loses both ``*.replication.throttled.replicas``, a listed broker both rates - or gets back the
values its ``restore`` entry holds (what the operator had set before it was listed).

Steps (``busy``: the topics and brokers a move still needs - the running and accepted moves the
controller holds, plus the entries of ``/admin/reassign_partitions`` as read):

 1. Mode ALL (no reassignment left: Step.finished, failover): if the decision read
    ``/admin/reassign_partitions`` present, remove nothing (its completion removes them).
    Mode IDLE (after a step that ended moves): busy as above.
 2. Per removal znode read (a znode absent or unreadable is left alone): the idle members
    (listed, not busy, their config readable - one that does not parse stays listed, so the
    removal after the operator repairs it takes its throttle) are stripped, at most :data:`ENTITIES_PER_WRITE` per write (the rest
    stay listed for the next write); the znode is rewritten with what stays listed, deleted
    when nothing does, conditional on the version read. A znode whose members are all busy
    is not written.
 3. Guard, first in the same multi: ``/admin/reassign_partitions`` as the decision read it -
    ``Check`` of its version when present; when absent, create it and delete it again
    (ZooKeeper has no "absent" check: the create fails when the znode exists, and the pair
    leaves nothing behind). Together with the removal znodes' versions, a tool writing its
    list, its configs and its reassignment between the read and the write makes the multi
    fail; the shell re-reads and decides again.

Worked table (t, u listed; brokers 1, 2 listed; ``/admin/reassign_partitions`` at version 4
naming t with brokers 1 -> 2 when present):

    mode  reassign_partitions  busy (state)   strips        removal znodes         guard
    ALL   absent               -              t, u, 1, 2    both deleted           create+delete
    ALL   present (v4)         -              nothing       untouched              none
    IDLE  absent               u; broker 2    t, 1          topics [u], brokers [2] create+delete
    IDLE  present (v4)         -              u             topics [t]             check v4
                                                            (brokers all busy)
    IDLE  present (v4)         u              nothing       untouched              none
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.core.events import ThrottleRemovalRead, ZnodeRead
from controller.core.flush import THROTTLE_REMOVAL, writing
from controller.core.throttle_writes import config_ops, config_path, listed_bytes, removal_kind, restore_keys
from controller.core.working_set import WorkingSet
from znodes import paths
from znodes.api import Check, Create, Delete, Op, SetData
from znodes.batch import plan_chunks
from znodes.throttle_keys import RATE_KEYS, REPLICA_KEYS

# Entities stripped per write: each costs two ops (its config and a change notification), so
# with the guard and the removal znodes one write stays below ZooKeeper's 1,000 ops per multi
# (znodes.batch) and is sent as ONE multi - the guard covers all of it. Large configs can
# still pass 1 MiB: the shell halves the limit until the write fits one multi.
ENTITIES_PER_WRITE = 200
# What the guard creates (and deletes in the same multi): an empty list, in case a reader
# sees it through a watch fired by the create.
GUARD_DATA = b'{"version":1,"partitions":[]}'


class Mode(enum.Enum):
    ALL = "all"  # no reassignment is left (KIP-179 "on reassignment completion", failover)
    IDLE = "idle"  # going past the KIP: what no move needs any more


@dataclass(frozen=True)
class Listed:
    """A removal znode as read: its members and version (None: absent or unreadable), and what
    listed members get back instead of losing their keys (throttle_writes.Listing)."""

    members: frozenset = frozenset()
    version: int | None = None
    restore: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """What one decision reads. ``requests_version``: the zkVersion of
    ``/admin/reassign_partitions`` (None: absent); ``requests_topics``/``requests_brokers``:
    what its entries involve (their topics, targets, originals and current replicas)."""

    replicas: Listed  # /admin/throttled_replicas_removal (topics)
    rates: Listed  # /admin/throttled_rates_removal (brokers)
    requests_version: int | None
    requests_topics: frozenset[str] = frozenset()
    requests_brokers: frozenset[int] = frozenset()


@dataclass
class Decision:
    """Strip ``topics`` and ``brokers``; write ``guard`` first and ``tail`` (the removal
    znodes) last, all in one multi."""

    topics: list[str] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)
    restore: dict = field(default_factory=dict)  # (kind, name) -> its values before it was listed
    held_back: bool = False  # idle entities left listed for a next write (the limit)
    guard: list[Op] = field(default_factory=list)
    tail: list[Op] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.tail


def guard_ops(requests_version: int | None) -> list[Op]:
    """Step 3: ``/admin/reassign_partitions`` is still as read."""
    if requests_version is not None:
        return [Check(paths.REASSIGN_PARTITIONS, requests_version)]
    return [Create(paths.REASSIGN_PARTITIONS, GUARD_DATA), Delete(paths.REASSIGN_PARTITIONS, 0)]


def decide(
    snap: Snapshot, mode: Mode, busy_topics=frozenset(), busy_brokers=frozenset(), limit: int = ENTITIES_PER_WRITE,
    unreadable=frozenset(),
) -> Decision:
    """Steps 1-3; at most ``limit`` entities stripped (the shell lowers it when the configs
    are too large for one multi). ``unreadable``: the ("topics", T) / ("brokers", B) whose
    config does not parse - they stay listed, like busy ones."""
    out = Decision()
    if mode is Mode.ALL:
        if snap.requests_version is not None:
            return out  # step 1: a request accepted meanwhile removes them when it completes
        busy_topics, busy_brokers = frozenset(), frozenset()
    else:
        busy_topics = frozenset(busy_topics) | snap.requests_topics
        busy_brokers = frozenset(busy_brokers) | snap.requests_brokers
    busy_topics = busy_topics | {name for kind, name in unreadable if kind == "topics"}
    busy_brokers = busy_brokers | {name for kind, name in unreadable if kind == "brokers"}
    budget = limit
    for path, listed, busy, strips in (
        (paths.THROTTLED_REPLICAS_REMOVAL, snap.replicas, busy_topics, out.topics),
        (paths.THROTTLED_RATES_REMOVAL, snap.rates, busy_brokers, out.brokers),
    ):
        kind = removal_kind(path)
        if listed.version is None:
            continue
        idle = sorted(listed.members - busy)
        if not idle and listed.members:
            continue  # every member still needed: nothing to write
        stripped = idle[:budget]
        budget -= len(stripped)
        out.held_back = out.held_back or len(stripped) < len(idle)
        if not stripped and listed.members:
            continue  # out of budget: the next write takes them
        strips.extend(stripped)
        out.restore.update({(kind, m): listed.restore[m] for m in stripped if listed.restore.get(m)})
        left = listed.members - set(stripped)
        tail = SetData(path, listed_bytes(path, left, listed.restore), listed.version) if left else Delete(path, listed.version)
        out.tail.append(tail)
    if out.tail:
        out.guard = guard_ops(snap.requests_version)
    return out


# ---- the engine's rule (docs/DESIGN.md 4.10) ------------------------------------------------------


def check_due(finished: bool, busy_shrank: bool) -> Mode | None:
    """Which removal a step asks for (``Step.throttle_check``): ALL once nothing is left,
    IDLE when what moves and entries involve may have shrunk (moves ended, entries withdrawn or
    retargeted, a failover), none otherwise. The shell answers with a ThrottleRemovalRead."""
    if finished:
        return Mode.ALL
    if busy_shrank:
        return Mode.IDLE
    return None


def busy_in_state(tasks, requests, assignments) -> tuple[set[str], set[int]]:
    """Topics and brokers of the running moves and of the accepted entries not started yet."""
    topics: set[str] = set()
    brokers: set[int] = set()
    for tp, move in tasks.items():
        topics.add(tp[0])
        brokers.update(move.target)
        brokers.update(move.original or ())
        if move.next_target:
            brokers.update(move.next_target)
        assignment = assignments.get(tp)
        if assignment is not None:
            brokers.update(assignment.replicas)
    entries_involve(requests.values(), assignments, topics, brokers)
    return topics, brokers


def entries_involve(entries, assignments, topics: set[str], brokers: set[int]) -> None:
    """Add what entries of ``/admin/reassign_partitions`` involve to ``topics`` and ``brokers``:
    their topics, targets, originals and their partitions' current replicas (the engine's held
    entries here, a fresh read of the znode in controller.shell.throttles)."""
    for r in entries:
        topics.add(r.topic)
        brokers.update(r.replicas)
        brokers.update(r.original_replicas or ())
        assignment = assignments.get(r.tp)
        if assignment is not None:
            brokers.update(assignment.replicas)


def removal_ops(decision: Decision, configs) -> list[Op]:
    """The decision's write: guard, the stripped configs (each with its change notification,
    conditional on the version read; its keys deleted, or set back to its restore entry), the
    removal znodes. The decision never strips a config that does not parse (``decide``'s
    ``unreadable``)."""
    strips: list[Op] = []
    for kind, names, keys in (("topics", decision.topics, REPLICA_KEYS), ("brokers", decision.brokers, RATE_KEYS)):
        for name in names:
            read = configs.get((kind, name)) or ZnodeRead()
            own = decision.restore.get((kind, name))
            strips += config_ops(kind, name, read, restore_keys(keys, own)(dict(read.value or {})))
    return decision.guard + strips + decision.tail


def plan(snap: Snapshot, mode: Mode, busy_topics, busy_brokers, configs, log: list[str], chroot: str = "") -> tuple[list[Op], bool]:
    """Steps 1-3 as one write that fits ONE multi (the guard must cover all of it): the
    limit halves until it does. Returns the ops and whether listed entities were held back
    for a next write."""
    limit = ENTITIES_PER_WRITE
    unreadable = frozenset(key for key, read in configs.items() if read.error is not None)
    for kind, name in sorted(unreadable, key=str):
        log.append(f"throttle removal: leaving {config_path(kind, name)} alone (it stays listed): {configs[kind, name].error}")
    while True:
        decision = decide(snap, mode, busy_topics, busy_brokers, limit, unreadable)
        if decision.empty:
            return [], False
        ops = removal_ops(decision, configs)
        if limit == 1 or len(plan_chunks(ops, chroot=chroot, fenced=True)) == 1:
            return ops, decision.held_back
        limit //= 2


@writing(THROTTLE_REMOVAL)
def on_removal(ws: WorkingSet, event: ThrottleRemovalRead) -> None:
    """The shell read what a step's ``throttle_check`` asked for: decide from it and from the
    moves and entries the working set holds, and write the removal last in the flush, alone
    (``Step.removal``). A write held back by the limit asks for the next round."""
    mode = Mode(event.mode)
    topics, brokers = busy_in_state(ws.tasks, ws.requests, ws.assignments)
    ops, held_back = plan(event.snapshot, mode, topics, brokers, event.configs, ws.log, event.chroot)
    for op in ops:
        ws.removal.append(op)
    if held_back:
        ws.removal_again = mode
