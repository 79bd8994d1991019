"""KIP-179 automatic throttle removal: when no reassignment is left, and (going past the KIP)
as soon as no running move involves a throttled broker or topic any more.

Which throttles are auto-removable is written in ZooKeeper, never kept in memory:
``/admin/throttled_replicas_removal`` (``{"version":1,"topics":[...]}``) lists the topics whose
``*.replication.throttled.replicas`` go, ``/admin/throttled_rates_removal``
(``{"version":1,"brokers":[...]}``) the brokers whose ``*.replication.throttled.rate`` go. The
admin APIs (controller.shell.admin.kip179) write those znodes BEFORE the configs they cover, so a
crash anywhere leaves every auto-removable throttle listed. Throttles the operator set without
auto-removal are not listed and stay (docs/DESIGN.md section 7, invariant 3).

Removal (KIP-179 "Throttle removal"), :func:`remove_throttles`, run by the active controller
on completion and on failover with ``/admin/reassign_partitions`` absent:

 1. Under the throttle lock (:func:`lock`: the admin write APIs hold it for their whole
    sequence, so a removal never interleaves with a request that is setting throttles), check
    ``/admin/reassign_partitions`` is still absent: a request accepted meanwhile has throttles
    its own completion removes.
 2. For each topic listed, remove both throttled-replicas properties from ``/config/topics/T``;
    for each broker listed, both rates from ``/config/brokers/N``; a change notification per
    config written.
 3. Delete the removal znodes (conditional on the version read).

Steps 2-3 are one batched, fenced write with the znodes last: a deposed controller removes
nothing, a crash before it landed leaves the removal znodes for the next controller, and a
flush cut short is finished by the next run (stripping an already stripped config is a no-op).

Early removal, :func:`remove_idle_throttles`, run after each engine step that ended moves:
the same, restricted to the listed topics and brokers that no move involves any more (a move
of the running set, an accepted entry not yet started, or an entry of
``/admin/reassign_partitions`` the controller has not read yet); the removal znodes are
rewritten with what is left (deleted when empty).

A removal znode or config that does not parse is reported and left alone.

    await remove_throttles(store, epoch_zkversion)        # ActiveController(on_finished=...)
    await remove_idle_throttles(active)                   # ActiveController(on_moves_ended=...)
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass

from controller.core.state import ClusterState
from controller.shell import throttle_configs as tc
from znodes import models, paths
from znodes.api import Delete, Op, SetData, Store
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_requests
from znodes.reads import get_or_none

log = logging.getLogger("reassignd.controller")

REPLICA_KEYS = tc.REPLICA_KEYS
RATE_KEYS = tc.RATE_KEYS

_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Per store: (mzxid, topics, brokers) of the last /admin/reassign_partitions parsed for the busy
# set, so a step that ends moves re-parses the znode only when it changed.
_znode_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lock(store: Store) -> asyncio.Lock:
    """The lock serialising throttle writes and removals of one controller session."""
    found = _locks.get(store)
    if found is None:
        found = _locks[store] = asyncio.Lock()
    return found


@dataclass
class Listed:
    """A removal znode as read: its members and version (None: absent or unreadable)."""

    members: frozenset
    version: int | None


async def read_listed(store: Store, path: str) -> Listed:
    read = await get_or_none(store, path)
    if read is None:
        return Listed(frozenset(), None)
    try:
        if path == paths.THROTTLED_REPLICAS_REMOVAL:
            members = frozenset(models.ThrottledReplicasRemoval.from_bytes(path, read[0]).topics)
        else:
            members = frozenset(models.ThrottledRatesRemoval.from_bytes(path, read[0]).brokers)
    except ZnodeFormatError as e:
        log.warning("throttle removal: leaving %s alone: %s", path, e)
        return Listed(frozenset(), None)
    return Listed(members, read[1].version)


def listed_bytes(path: str, members) -> bytes:
    if path == paths.THROTTLED_REPLICAS_REMOVAL:
        return models.ThrottledReplicasRemoval(version=1, topics=sorted(members)).to_bytes()
    return models.ThrottledRatesRemoval(version=1, brokers=sorted(members)).to_bytes()


async def _strip(store: Store, kind: str, name, keys: tuple[str, ...]) -> list[Op]:
    try:
        return await tc.config_ops(store, kind, name, tc.drop_keys(keys))
    except ZnodeFormatError as e:
        log.warning("throttle removal: leaving %s alone: %s", tc.config_path(kind, name), e)
        return []


async def removal_ops(store: Store, busy_topics=frozenset(), busy_brokers=frozenset()) -> list[Op]:
    """Ops removing the listed throttles of every topic and broker not busy, then rewriting
    (or deleting) the removal znodes with the busy ones that stay listed."""
    ops: list[Op] = []
    tail: list[Op] = []
    for path, kind, keys, busy in (
        (paths.THROTTLED_REPLICAS_REMOVAL, "topics", REPLICA_KEYS, busy_topics),
        (paths.THROTTLED_RATES_REMOVAL, "brokers", RATE_KEYS, busy_brokers),
    ):
        listed = await read_listed(store, path)
        if listed.version is None:
            continue
        idle = sorted(listed.members - set(busy))
        if not idle and listed.members:
            continue
        for name in idle:
            ops += await _strip(store, kind, name, keys)
        left = listed.members - set(idle)
        tail.append(SetData(path, listed_bytes(path, left), listed.version) if left else Delete(path, listed.version))
    return ops + tail


async def _write(store: Store, epoch_zkversion: int, build) -> int:
    written = await tc.write_with_retry(store, epoch_zkversion, build)
    if written:
        log.info("removed auto-removable throttles (%d znode writes)", written)
    return written


async def remove_throttles(store: Store, epoch_zkversion: int) -> int:
    """Steps 1-3 (no reassignment left); returns the number of ops written."""
    async with lock(store):
        if await store.exists(paths.REASSIGN_PARTITIONS) is not None:
            return 0  # accepted meanwhile: its completion removes them
        return await _write(store, epoch_zkversion, lambda: removal_ops(store))


def busy_in_state(state: ClusterState) -> tuple[set[str], set[int]]:
    """Topics and brokers of the running moves and of the accepted entries not started yet."""
    topics: set[str] = set()
    brokers: set[int] = set()
    for tp, move in state.tasks.items():
        topics.add(tp[0])
        brokers.update(move.target)
        brokers.update(move.original or ())
        if move.next_target:
            brokers.update(move.next_target)
        assignment = state.assignments.get(tp)
        if assignment is not None:
            brokers.update(assignment.replicas)
    for tp, request in state.requests.items():
        topics.add(tp[0])
        brokers.update(request.replicas)
        brokers.update(request.original_replicas or ())
        assignment = state.assignments.get(tp)
        if assignment is not None:
            brokers.update(assignment.replicas)
    return topics, brokers


async def busy_in_znode(store: Store, state: ClusterState | None) -> tuple[set[str], set[int]]:
    """Topics and brokers of ``/admin/reassign_partitions`` as it is now (entries the controller
    may not have read yet), with each partition's current replicas."""
    read = await get_or_none(store, paths.REASSIGN_PARTITIONS)
    if read is None:
        return set(), set()
    data, stat = read
    cached = _znode_cache.get(store)
    if cached is not None and cached[0] == stat.mzxid:
        return set(cached[1]), set(cached[2])
    try:
        entries, _ = decode_requests(paths.REASSIGN_PARTITIONS, data)
    except ZnodeFormatError:
        entries = []
    topics: set[str] = set()
    brokers: set[int] = set()
    for r in entries:
        topics.add(r.topic)
        brokers.update(r.replicas)
        brokers.update(r.original_replicas or ())
        assignment = state.assignments.get(r.tp) if state is not None else None
        if assignment is not None:
            brokers.update(assignment.replicas)
    _znode_cache[store] = (stat.mzxid, frozenset(topics), frozenset(brokers))
    return topics, brokers


async def remove_idle_unlocked(store: Store, epoch_zkversion: int, state: ClusterState | None) -> int:
    """Early removal; the caller holds :func:`lock`."""

    async def build() -> list[Op]:
        topics, brokers = busy_in_state(state) if state is not None else (set(), set())
        more_topics, more_brokers = await busy_in_znode(store, state)
        return await removal_ops(store, topics | more_topics, brokers | more_brokers)

    return await _write(store, epoch_zkversion, build)


async def remove_idle_throttles(active) -> int:
    """Early removal for an ActiveController after a step that ended moves."""
    store = active.store
    async with lock(store):
        # Cheap exit first: nothing is listed for auto-removal.
        if (
            await store.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
            and await store.exists(paths.THROTTLED_RATES_REMOVAL) is None
        ):
            return 0
        return await remove_idle_unlocked(store, active.epoch_zkversion, active.state)
