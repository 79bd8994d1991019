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

The engine decides (controller.core.throttle_removal, an engine rule): a step that ends moves asks
for an IDLE check, one that leaves nothing running (and the first step after a failover) for
an ALL check (``Step.throttle_check``). :func:`read_removal` then reads

 1. the removal znodes and ``/admin/reassign_partitions`` (its version and what its entries
    involve: a tool's entries the engine has not read yet count as busy) into a Snapshot, and
    the configs of every listed entity,

and the active controller queues them as a ThrottleRemovalRead; the engine decides in that step
from the snapshot and the moves it holds, and the write goes last in the step's flush, alone, as
ONE fenced multi:

 2. the guard (``/admin/reassign_partitions`` still as read), the stripped configs with a change
    notification each, the removal znodes (conditional on the versions read);
 3. on a conflict (a tool wrote one of them meanwhile) the controller reads and the engine
    decides again; a write the per-write limit held back asks for the next round.

A deposed controller removes nothing (the epoch check), a crash before the multi landed leaves
the removal znodes for the next controller, and stripping an already stripped config is a no-op.
Nothing of this controller interleaves with a removal: the admin requests that write throttles
are steps of the same loop (controller.core.admin_requests), and the guard keeps out writers
outside it.

A removal znode or config that does not parse is reported and left alone.

    event = await read_removal(store, state, Mode.IDLE)   # None: nothing is listed
"""

from __future__ import annotations

import logging

from controller.core.events import ThrottleRemovalRead, ZnodeRead
from controller.core.state import ClusterState
from controller.core.throttle_removal import Listed, Mode, Snapshot, entries_involve
from controller.core.throttle_writes import Listing, listed_bytes  # noqa: F401 (re-exported)
from controller.shell import throttle_configs as tc
from znodes import cluster_reader, models, paths
from znodes.api import Store
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_requests
from znodes.reads import get_or_none

log = logging.getLogger("reassignd.controller")


def decode_listed(path: str, read) -> ZnodeRead:
    """A removal znode as read (``(data, stat)`` or None): its Listing (members, restore entries)
    and version, or the error of one that does not parse (left alone, never overwritten on a
    guess)."""
    if read is None:
        return ZnodeRead(Listing())
    try:
        if path == paths.THROTTLED_REPLICAS_REMOVAL:
            found = models.ThrottledReplicasRemoval.from_bytes(path, read[0])
            members = frozenset(found.topics)
        else:
            found = models.ThrottledRatesRemoval.from_bytes(path, read[0])
            members = frozenset(found.brokers)
    except ZnodeFormatError as e:
        return ZnodeRead(None, read[1].version, f"the removal znode is malformed; fix or delete it first ({e})")
    return ZnodeRead(Listing(members, {m: dict(v) for m, v in found.restore.items()}), read[1].version)


async def config_reads(store: Store, keys) -> dict[tuple[str, str | int], ZnodeRead]:
    """The configs of ``keys`` (("topics", T) / ("brokers", B)) as the engine takes them: the map
    and version (absent: empty, no version), or the error of one that is not a config."""
    wanted = {key: tc.config_path(*key) for key in keys}
    found, bad = await cluster_reader.configs(store, list(wanted.values()))
    errors = {u.path: u.reason for u in bad}
    out = {}
    for key, path in wanted.items():
        read = found.get(path)
        if path in errors:
            out[key] = ZnodeRead(None, None, errors[path])
        else:
            out[key] = ZnodeRead() if read is None else ZnodeRead(read.config, read.version)
    return out


async def read_listed(store: Store, path: str) -> Listed:
    found = decode_listed(path, await get_or_none(store, path))
    if found.error is not None:
        log.warning("throttle removal: leaving %s alone: %s", path, found.error)
        return Listed(frozenset(), None)
    return Listed(found.value.members, found.version, found.value.restore)


async def snapshot(store: Store, state: ClusterState | None = None, cache: dict | None = None) -> Snapshot:
    """Step 1's reads. ``/admin/reassign_partitions`` first: a tool writes its removal list
    before its reassignment, so a list read after an absent reassignment znode is at least as
    new as that read (and the guard checks both anyway)."""
    version, topics, brokers = await busy_in_znode(store, state, cache)
    return Snapshot(
        replicas=await read_listed(store, paths.THROTTLED_REPLICAS_REMOVAL),
        rates=await read_listed(store, paths.THROTTLED_RATES_REMOVAL),
        requests_version=version,
        requests_topics=frozenset(topics),
        requests_brokers=frozenset(brokers),
    )


async def busy_in_znode(store: Store, state: ClusterState | None, cache: dict | None = None) -> tuple[int | None, set[str], set[int]]:
    """``/admin/reassign_partitions`` as it is now: its version (None: absent) and the topics
    and brokers of its entries (the controller may not have read them yet), with each
    partition's current replicas. ``cache`` (the active controller's, one per term) keeps what
    the last znode parsed to, so a step that ends moves re-parses it only when it changed; the
    current replicas are taken from ``state`` every time (they change while the znode does not:
    an override deletes a dropped replica, and a cached answer kept it busy)."""
    read = await get_or_none(store, paths.REASSIGN_PARTITIONS)
    if read is None:
        return None, set(), set()
    data, stat = read
    cached = cache.get("entries") if cache is not None else None
    if cached is not None and cached[0] == stat.mzxid:
        entries = cached[1]
    else:
        try:
            entries, _ = decode_requests(paths.REASSIGN_PARTITIONS, data)
        except ZnodeFormatError:
            entries = []
        entries = tuple(entries)
        if cache is not None:
            cache["entries"] = (stat.mzxid, entries)
    topics: set[str] = set()
    brokers: set[int] = set()
    entries_involve(entries, state.assignments if state is not None else {}, topics, brokers)
    return stat.version, topics, brokers


async def read_removal(store: Store, state: ClusterState | None, mode: Mode, cache: dict | None = None) -> ThrottleRemovalRead | None:
    """Step 1's reads for the check a step asked for (``Step.throttle_check``): the snapshot and
    the configs of every listed entity; None when nothing is listed (the cheap exit)."""
    if (
        await store.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        and await store.exists(paths.THROTTLED_RATES_REMOVAL) is None
    ):
        return None
    snap = await snapshot(store, state, cache)
    keys = [("topics", t) for t in sorted(snap.replicas.members)] + [("brokers", b) for b in sorted(snap.rates.members)]
    configs = await config_reads(store, keys)
    return ThrottleRemovalRead(mode.value, snap, configs, getattr(store, "chroot", "") or "")
