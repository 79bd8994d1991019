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

import json
from collections.abc import Awaitable, Callable, Iterable

from protocol import throttled_replicas
from znodes import models, paths
from znodes.api import BadVersionError, Create, NodeExistsError, NoNodeError, Op, SetData, Store
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

def change_notification(entity_path: str) -> Create:
    payload = json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()
    return Create(paths.config_change_prefix(), payload, sequential=True)


def config_path(kind: str, name: str | int) -> str:
    return paths.topic_config(str(name)) if kind == "topics" else paths.broker_config(name)


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
    new = update(dict(current))
    if new == current:
        return []
    data = models.EntityConfig(version=1, config=new).to_bytes()
    op: Op = Create(path, data) if read is None else SetData(path, data, read[1].version)
    return [op, change_notification(f"{kind}/{name}")]


async def configs_ops(store: Store, updates: list[tuple[tuple[str, str | int], Callable[[dict[str, str]], dict[str, str]]]]) -> list[Op]:
    """:func:`config_ops` for many entities, their configs read concurrently."""
    reads = await get_many(store, [config_path(kind, name) for (kind, name), _ in updates])
    ops: list[Op] = []
    for ((kind, name), update), read in zip(updates, reads):
        ops += _ops(kind, name, read, update)
    return ops


def set_keys(values: dict[str, str]) -> Callable[[dict[str, str]], dict[str, str]]:
    def update(config: dict[str, str]) -> dict[str, str]:
        config.update(values)
        return config

    return update


def drop_keys(keys: Iterable[str]) -> Callable[[dict[str, str]], dict[str, str]]:
    keys = tuple(keys)

    def update(config: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in config.items() if k not in keys}

    return update


def add_replicas(leader: Iterable[tuple[int, int]], follower: Iterable[tuple[int, int]], replace_partitions: set[int] = frozenset()):
    """An update merging pairs into a topic's leader and follower throttled-replicas lists; the
    pairs of ``replace_partitions`` already there are dropped first, a ``"*"`` stays."""
    leader, follower = set(leader), set(follower)

    def update(config: dict[str, str]) -> dict[str, str]:
        for key, pairs in ((LEADER_REPLICAS, leader), (FOLLOWER_REPLICAS, follower)):
            # A value already there that is not Kafka's format raises ThrottledReplicasError:
            # it is never overwritten on a guess.
            merged = throttled_replicas.parse(config.get(key)).merged(pairs, replace_partitions)
            if merged.empty:
                config.pop(key, None)
            else:
                config[key] = str(merged)
        return config

    return update


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

