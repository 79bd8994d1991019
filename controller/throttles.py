"""KIP-179 throttle removal: run when no reassignment is left (completion, or failover with
``/admin/reassign_partitions`` absent).

 1. If ``/admin/throttled_replicas_removal`` exists: for each topic it lists, remove
    ``leader.replication.throttled.replicas`` and ``follower.replication.throttled.replicas``
    from ``/config/topics/T`` (with a config change notification, so brokers re-read it);
    then delete the removal znode.
 2. The same for ``/admin/throttled_rates_removal`` with the brokers' ``*.throttled.rate``
    properties in ``/config/brokers/N``.

All of it is one batched, fenced write: a deposed controller removes nothing, and a crash
before it landed leaves the removal znodes for the next controller. Throttles the operator set
without asking for auto-removal are not listed in those znodes and stay. A removal znode that
does not parse is reported and left alone.

    await remove_throttles(store, epoch_zkversion)
"""

from __future__ import annotations

import json
import logging

from controller.zkread import get_or_none
from znodes import models, paths
from znodes.api import Create, Delete, Op, SetData, Store
from znodes.batch import BatchedWriter
from znodes.errors import ZnodeFormatError

log = logging.getLogger("reassignd.controller")

REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _change_notification(entity_path: str) -> Create:
    payload = json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()
    return Create(paths.config_change_prefix(), payload, sequential=True)


async def _strip(store: Store, config_path: str, entity_path: str, keys: tuple[str, ...]) -> list[Op]:
    read = await get_or_none(store, config_path)
    if read is None:
        return []
    data, stat = read
    try:
        config = models.EntityConfig.from_bytes(config_path, data)
    except ZnodeFormatError as e:
        log.warning("throttle removal: leaving %s alone: %s", config_path, e)
        return []
    kept = {k: v for k, v in config.config.items() if k not in keys}
    if len(kept) == len(config.config):
        return []
    new = models.EntityConfig(version=1, config=kept).to_bytes()
    return [SetData(config_path, new, stat.version), _change_notification(entity_path)]


async def removal_ops(store: Store) -> list[Op]:
    ops: list[Op] = []
    read = await get_or_none(store, paths.THROTTLED_REPLICAS_REMOVAL)
    if read is not None:
        try:
            topics = models.ThrottledReplicasRemoval.from_bytes(paths.THROTTLED_REPLICAS_REMOVAL, read[0]).topics
        except ZnodeFormatError as e:
            log.warning("throttle removal: %s", e)
        else:
            for topic in topics:
                ops += await _strip(store, paths.topic_config(topic), f"topics/{topic}", REPLICA_KEYS)
            ops.append(Delete(paths.THROTTLED_REPLICAS_REMOVAL, read[1].version))
    read = await get_or_none(store, paths.THROTTLED_RATES_REMOVAL)
    if read is not None:
        try:
            brokers = models.ThrottledRatesRemoval.from_bytes(paths.THROTTLED_RATES_REMOVAL, read[0]).brokers
        except ZnodeFormatError as e:
            log.warning("throttle removal: %s", e)
        else:
            for broker in brokers:
                ops += await _strip(store, paths.broker_config(broker), f"brokers/{broker}", RATE_KEYS)
            ops.append(Delete(paths.THROTTLED_RATES_REMOVAL, read[1].version))
    return ops


async def remove_throttles(store: Store, epoch_zkversion: int) -> int:
    """Steps 1-2 in one fenced flush; returns the number of ops written."""
    ops = await removal_ops(store)
    if ops:
        writer = BatchedWriter(store)
        writer.extend(ops)
        await writer.flush(epoch_zkversion)
        log.info("removed auto-removable throttles (%d znode writes)", len(ops))
    return len(ops)
