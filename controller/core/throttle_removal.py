"""KIP-179 throttle removal: which listed throttles go, and the guard that makes the write
conditional on what the decision read. Pure: no I/O (the shell, controller.shell.throttles,
reads what :class:`Snapshot` holds and writes what :func:`decide` returns).

The removal znodes (``/admin/throttled_replicas_removal`` listing topics,
``/admin/throttled_rates_removal`` brokers) name the auto-removable throttles; a listed topic
loses both ``*.replication.throttled.replicas``, a listed broker both rates.

Steps (``busy``: the topics and brokers a move still needs - the running and accepted moves the
controller holds, plus the entries of ``/admin/reassign_partitions`` as read):

 1. Mode ALL (no reassignment left: Step.finished, failover): if the decision read
    ``/admin/reassign_partitions`` present, remove nothing (its completion removes them).
    Mode IDLE (after a step that ended moves): busy as above.
 2. Per removal znode read (a znode absent or unreadable is left alone): the idle members
    (listed, not busy) are stripped, at most :data:`ENTITIES_PER_WRITE` per write (the rest
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
from dataclasses import dataclass, field

from znodes import models, paths
from znodes.api import Check, Create, Delete, Op, SetData

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
    """A removal znode as read: its members and version (None: absent or unreadable)."""

    members: frozenset = frozenset()
    version: int | None = None


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
    held_back: bool = False  # idle entities left listed for a next write (the limit)
    guard: list[Op] = field(default_factory=list)
    tail: list[Op] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.tail


def listed_bytes(path: str, members) -> bytes:
    if path == paths.THROTTLED_REPLICAS_REMOVAL:
        return models.ThrottledReplicasRemoval(version=1, topics=sorted(members)).to_bytes()
    return models.ThrottledRatesRemoval(version=1, brokers=sorted(members)).to_bytes()


def guard_ops(requests_version: int | None) -> list[Op]:
    """Step 3: ``/admin/reassign_partitions`` is still as read."""
    if requests_version is not None:
        return [Check(paths.REASSIGN_PARTITIONS, requests_version)]
    return [Create(paths.REASSIGN_PARTITIONS, GUARD_DATA), Delete(paths.REASSIGN_PARTITIONS, 0)]


def decide(
    snap: Snapshot, mode: Mode, busy_topics=frozenset(), busy_brokers=frozenset(), limit: int = ENTITIES_PER_WRITE
) -> Decision:
    """Steps 1-3; at most ``limit`` entities stripped (the shell lowers it when the configs
    are too large for one multi)."""
    out = Decision()
    if mode is Mode.ALL:
        if snap.requests_version is not None:
            return out  # step 1: a request accepted meanwhile removes them when it completes
        busy_topics, busy_brokers = frozenset(), frozenset()
    else:
        busy_topics = frozenset(busy_topics) | snap.requests_topics
        busy_brokers = frozenset(busy_brokers) | snap.requests_brokers
    budget = limit
    for path, listed, busy, strips in (
        (paths.THROTTLED_REPLICAS_REMOVAL, snap.replicas, busy_topics, out.topics),
        (paths.THROTTLED_RATES_REMOVAL, snap.rates, busy_brokers, out.brokers),
    ):
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
        left = listed.members - set(stripped)
        out.tail.append(SetData(path, listed_bytes(path, left), listed.version) if left else Delete(path, listed.version))
    if out.tail:
        out.guard = guard_ops(snap.requests_version)
    return out
