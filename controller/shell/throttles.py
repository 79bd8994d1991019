"""KIP-179 automatic throttle removal, the shell's half: the reads the rule asks for and its
write. The rule - which listed throttles go, and the guard making the write conditional on what
it read - is controller.core.throttle_removal (pure, with its steps and worked table).

Which throttles are auto-removable is written in ZooKeeper, never kept in memory:
``/admin/throttled_replicas_removal`` (``{"version":1,"topics":[...]}``) lists the topics whose
``*.replication.throttled.replicas`` go, ``/admin/throttled_rates_removal``
(``{"version":1,"brokers":[...]}``) the brokers whose ``*.replication.throttled.rate`` go. The
admin APIs (controller.shell.admin.kip179) write those znodes BEFORE the configs they cover, so a
crash anywhere leaves every auto-removable throttle listed. Throttles the operator set without
auto-removal are not listed and stay (docs/DESIGN.md section 7, invariant 3).

:func:`remove_throttles` (mode ALL: on completion and on failover) and
:func:`remove_idle_throttles` (mode IDLE: after each engine step that ended moves, restricted to
the listed topics and brokers no move involves any more - a move of the running set, an accepted
entry not yet started, or an entry of ``/admin/reassign_partitions`` the controller has not read
yet) each:

 1. read the removal znodes and ``/admin/reassign_partitions`` (its version and what its entries
    involve) into a Snapshot, and the configs of what the rule strips;
 2. write, in one fenced multi: the guard (``/admin/reassign_partitions`` still as read), the
    stripped configs with a change notification each, the removal znodes (conditional on the
    versions read);
 3. on a conflict (a tool wrote one of them meanwhile) read and decide again; repeat while the
    rule leaves listed entities for a next write (ENTITIES_PER_WRITE).

A deposed controller removes nothing (the epoch check), a crash before the multi landed leaves
the removal znodes for the next controller, and stripping an already stripped config is a no-op.
Both run in the active controller's loop, after a step (controller.shell.active), as the admin
requests that write throttles are steps of that loop (controller.core.admin_requests): nothing of
this controller interleaves with them, and the guard keeps out writers outside it.

A removal znode or config that does not parse is reported and left alone.

    await remove_throttles(store, epoch_zkversion)        # ActiveController(on_finished=...)
    await remove_idle_throttles(active)                   # ActiveController(on_moves_ended=...)
"""

from __future__ import annotations

import logging
import weakref

from controller.core import throttle_removal as rule
from controller.core.state import ClusterState
from controller.core.throttle_removal import Decision, Listed, Mode, Snapshot, listed_bytes  # noqa: F401 (listed_bytes re-exported)
from controller.shell import throttle_configs as tc
from znodes import models, paths
from znodes.api import Op, Store
from znodes.batch import plan_chunks
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_requests
from znodes.reads import get_or_none

log = logging.getLogger("reassignd.controller")

REPLICA_KEYS = tc.REPLICA_KEYS
RATE_KEYS = tc.RATE_KEYS

# Per store: (mzxid, topics, brokers) of the last /admin/reassign_partitions parsed for the busy
# set, so a step that ends moves re-parses the znode only when it changed.
_znode_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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


async def snapshot(store: Store, state: ClusterState | None = None) -> Snapshot:
    """Step 1's reads. ``/admin/reassign_partitions`` first: a tool writes its removal list
    before its reassignment, so a list read after an absent reassignment znode is at least as
    new as that read (and the guard checks both anyway)."""
    version, topics, brokers = await busy_in_znode(store, state)
    return Snapshot(
        replicas=await read_listed(store, paths.THROTTLED_REPLICAS_REMOVAL),
        rates=await read_listed(store, paths.THROTTLED_RATES_REMOVAL),
        requests_version=version,
        requests_topics=frozenset(topics),
        requests_brokers=frozenset(brokers),
    )


async def _strip_ops(store: Store, decision: Decision) -> list[Op]:
    ops: list[Op] = []
    for kind, names, keys in (("topics", decision.topics, REPLICA_KEYS), ("brokers", decision.brokers, RATE_KEYS)):
        for name in names:
            try:
                ops += await tc.config_ops(store, kind, name, tc.drop_keys(keys))
            except ZnodeFormatError as e:
                log.warning("throttle removal: leaving %s alone: %s", tc.config_path(kind, name), e)
    return ops


async def _remove(store: Store, epoch_zkversion: int, decide_now) -> int:
    """Steps 1-3: ``decide_now(limit)`` reads and decides; written until nothing is held back."""
    total = 0
    decision: Decision | None = None
    chroot = getattr(store, "chroot", "") or ""

    async def build() -> list[Op]:
        nonlocal decision
        limit = rule.ENTITIES_PER_WRITE
        while True:
            decision = await decide_now(limit)
            if decision.empty:
                return []
            ops = decision.guard + await _strip_ops(store, decision) + decision.tail
            # One multi, or the guard would cover only the first chunk of the write.
            if limit == 1 or len(plan_chunks(ops, chroot=chroot, fenced=True)) == 1:
                return ops
            limit //= 2

    while True:
        written = await tc.write_with_retry(store, epoch_zkversion, build)
        total += written
        if not written or decision is None or not decision.held_back:
            break
    if total:
        log.info("removed auto-removable throttles (%d znode writes)", total)
    return total


async def remove_throttles(store: Store, epoch_zkversion: int) -> int:
    """Mode ALL (no reassignment left); returns the number of ops written."""

    async def decide_now(limit: int) -> Decision:
        return rule.decide(await snapshot(store), Mode.ALL, limit=limit)

    return await _remove(store, epoch_zkversion, decide_now)


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


async def busy_in_znode(store: Store, state: ClusterState | None) -> tuple[int | None, set[str], set[int]]:
    """``/admin/reassign_partitions`` as it is now: its version (None: absent) and the topics
    and brokers of its entries (the controller may not have read them yet), with each
    partition's current replicas."""
    read = await get_or_none(store, paths.REASSIGN_PARTITIONS)
    if read is None:
        return None, set(), set()
    data, stat = read
    cached = _znode_cache.get(store)
    if cached is not None and cached[0] == stat.mzxid:
        return stat.version, set(cached[1]), set(cached[2])
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
    return stat.version, topics, brokers


async def remove_idle(store: Store, epoch_zkversion: int, state: ClusterState | None) -> int:
    """Mode IDLE, with the moves and entries ``state`` holds as busy."""

    async def decide_now(limit: int) -> Decision:
        topics, brokers = busy_in_state(state) if state is not None else (set(), set())
        return rule.decide(await snapshot(store, state), Mode.IDLE, topics, brokers, limit)

    return await _remove(store, epoch_zkversion, decide_now)


async def remove_idle_throttles(active) -> int:
    """Early removal for an ActiveController after a step that ended moves."""
    store = active.store
    # Cheap exit first: nothing is listed for auto-removal.
    if (
        await store.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        and await store.exists(paths.THROTTLED_RATES_REMOVAL) is None
    ):
        return 0
    return await remove_idle(store, active.epoch_zkversion, active.state)
