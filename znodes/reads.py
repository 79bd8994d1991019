"""Reading znodes in bulk, for every ZooKeeper user of the project (controller and brokers).

Every function takes a :class:`znodes.api.Store`. "No such node" is an answer (None, [] or a
skipped entry), not an error; a malformed payload is skipped with a log line, never fatal.
Other store errors propagate.

    data_and_stats = await get_many(store, ["/brokers/ids/1", "/brokers/ids/2"])
    brokers, log = await read_brokers(store, watch=True)
"""

from __future__ import annotations

import asyncio

from znodes import paths
from znodes.api import NoNodeError, Store, ZnodeStat
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_broker
from znodes.values import Broker

# Reads in flight at once: enough to fill the pipe to ZooKeeper, few enough that 100,000
# partition states do not become 100,000 pending futures.
READ_CONCURRENCY = 2000


async def get_or_none(store: Store, path: str, watch: bool = False) -> tuple[bytes, ZnodeStat] | None:
    try:
        return await store.get(path, watch=watch)
    except NoNodeError:
        return None


async def children_or_empty(store: Store, path: str, watch: bool = False) -> list[str]:
    try:
        return await store.children(path, watch=watch)
    except NoNodeError:
        return []


async def get_many(store: Store, path_list: list[str]) -> list[tuple[bytes, ZnodeStat] | None]:
    """Read many znodes (None for each that does not exist).

    A store with its own ``get_many`` (e.g. one reading with ZooKeeper 3.6+'s multiRead, many
    znodes per request) is used as is; otherwise single gets, ``READ_CONCURRENCY`` in flight.
    """
    bulk = getattr(store, "get_many", None)
    if bulk is not None:
        return list(await bulk(path_list))
    out: list = []
    for i in range(0, len(path_list), READ_CONCURRENCY):
        chunk = path_list[i : i + READ_CONCURRENCY]
        out.extend(await asyncio.gather(*(get_or_none(store, p) for p in chunk)))
    return out


async def read_brokers(store: Store, watch: bool = False) -> tuple[dict[int, Broker], list[str]]:
    log: list[str] = []
    names = await children_or_empty(store, paths.BROKER_IDS, watch=watch)
    ids = []
    for name in names:
        try:
            ids.append(paths.parse_id(name, "broker id"))
        except ValueError as e:
            log.append(f"ignoring /brokers/ids/{name}: {e}")
    reads = await get_many(store, [paths.broker(b) for b in ids])
    brokers: dict[int, Broker] = {}
    for broker_id, read in zip(ids, reads):
        if read is None:
            continue  # deregistered between the listing and the read
        data, stat = read
        try:
            brokers[broker_id] = decode_broker(paths.broker(broker_id), data, broker_id, stat.czxid)
        except ZnodeFormatError as e:
            log.append(f"ignoring broker {broker_id}: {e}")
    return dict(sorted(brokers.items())), log
