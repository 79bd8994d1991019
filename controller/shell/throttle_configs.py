"""Throttle configs in Kafka's formats, and the fenced ZooKeeper writes that change them.

Topic configs (``/config/topics/T``) name the throttled replicas, broker configs
(``/config/brokers/N``) the rates (KIP-73, driven by KIP-179):

* ``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``:
  ``"P:B,P:B"`` (partition:broker pairs) or ``"*"`` (every replica of the topic);
* ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``: bytes/s.

Every config write goes with a ``/config/changes/config_change_<seq>`` notification
(``{"version":2,"entity_path":"topics/T"}``) so brokers re-read the entity, as Kafka's
``AdminZkClient.changeConfigs`` does.

    ops = await config_ops(store, "topics", "orders", lambda c: add_replicas(c, {(0, 4)}, {(0, 1)}))
    await write_with_retry(store, epoch_zkversion, build)     # re-reads and retries on conflicts
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from controller.core.events import ZnodeRead
from controller.core.throttle_writes import (  # noqa: F401 (re-exported: the shell's writers use tc.*)
    add_replicas,
    change_notification,
    config_path,
    drop_keys,
    set_keys,
)
from controller.core.throttle_writes import config_ops as config_write
from znodes import models
from znodes.api import BadVersionError, NodeExistsError, NoNodeError, Op, Store
from znodes.batch import BatchedWriter, FlushError
from znodes.reads import get_many, get_or_none
from znodes.throttle_keys import (  # noqa: F401 (re-exported: callers write tc.LEADER_RATE)
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    RATE_KEYS,
    REPLICA_KEYS,
    WILDCARD,
)

# A config or znode changed between the read and the conditional write (an operator's tool
# wrote it): re-read and redo the merge this many times before giving up.
CONFLICT_RETRIES = 5
_CONFLICTS = (BadVersionError, NodeExistsError, NoNodeError)


async def config_ops(store: Store, kind: str, name: str | int, update: Callable[[dict[str, str]], dict[str, str]]) -> list[Op]:
    """Ops that apply ``update`` to one entity's config (``kind`` "topics" or "brokers"),
    conditional on the version read, plus its change notification; [] if nothing changes.

    Raises ZnodeFormatError when the config znode exists but is not a config: it is never
    overwritten on a guess.
    """
    return _ops(kind, name, await get_or_none(store, config_path(kind, name)), update)


def _ops(kind: str, name: str | int, read, update) -> list[Op]:
    path = config_path(kind, name)
    current = dict(models.EntityConfig.from_bytes(path, read[0]).config) if read is not None else {}
    return config_write(kind, name, ZnodeRead(current, read[1].version if read is not None else None), update(dict(current)))


async def configs_ops(store: Store, updates: list[tuple[tuple[str, str | int], Callable[[dict[str, str]], dict[str, str]]]]) -> list[Op]:
    """:func:`config_ops` for many entities, their configs read concurrently."""
    reads = await get_many(store, [config_path(kind, name) for (kind, name), _ in updates])
    ops: list[Op] = []
    for ((kind, name), update), read in zip(updates, reads):
        ops += _ops(kind, name, read, update)
    return ops


def is_conflict(error: FlushError) -> bool:
    """A conditional write lost a race (the znode changed or appeared/vanished meanwhile)."""
    return isinstance(getattr(error.cause, "cause", None), _CONFLICTS)


async def write_with_retry(store: Store, epoch_zkversion: int, build: Callable[[], Awaitable[list[Op]]]) -> int:
    """Build ops from fresh reads and write them fenced; on a conflict re-read and rebuild.

    ``build`` must be idempotent (a merge): after a flush cut short, running it again writes
    only what is still missing. Returns the number of ops written. Fencing and session errors
    propagate (FencedFlushError, FlushError); a conflict that persists raises the last one.
    """
    for attempt in range(CONFLICT_RETRIES + 1):
        ops = await build()
        if not ops:
            return 0
        writer = BatchedWriter(store)
        writer.extend(ops)
        try:
            await writer.flush(epoch_zkversion)
            return len(ops)
        except FlushError as e:
            if not is_conflict(e) or attempt == CONFLICT_RETRIES:
                raise
    raise AssertionError("unreachable")

