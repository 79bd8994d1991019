"""Reading znodes in bulk, for every ZooKeeper user of the project (controller and brokers).

Every function takes a :class:`znodes.api.Store`. "No such node" is an answer (None, [] or a
skipped entry), not an error; a malformed payload is skipped with a log line, never fatal.
Other store errors propagate.

    data_and_stats = await get_many(store, ["/brokers/ids/1", "/brokers/ids/2"])
    found = await read_brokers(store, watch=True)     # .brokers, .lines, .undecodable
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from znodes import paths
from znodes.api import NoNodeError, Store, ZnodeStat
from znodes.errors import ZnodeFormatError
from znodes.payloads import LISTENER, decode_broker, decode_broker_endpoints, decode_controller_node
from znodes.values import NO_PORT, Broker

# Reads in flight at once: enough to fill the pipe to ZooKeeper, few enough that 100,000
# partition states do not become 100,000 pending futures.
READ_CONCURRENCY = 2000

T = TypeVar("T")


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


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A znode, or a child name, that is not what its path must hold."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


UNREADABLE = object()  # what decoded() returns for a znode it noted as Unreadable


def decoded(path: str, read: tuple[bytes, ZnodeStat] | None, decode: Callable[[str, bytes, ZnodeStat], T],
            bad: list[Unreadable]) -> T | None | object:
    """``decode(path, data, stat)`` of one read; None for an absent znode; UNREADABLE, noted in
    ``bad``, for one that does not decode."""
    if read is None:
        return None
    try:
        return decode(path, read[0], read[1])
    except ZnodeFormatError as e:
        bad.append(Unreadable(path, e.reason))
        return UNREADABLE


async def registered_brokers(store: Store, decode: Callable[[str, bytes, ZnodeStat, int], T], watch: bool = False,
                             data_watch: bool = False) -> tuple[dict[int, T], list[Unreadable]]:
    """``decode(path, data, stat, broker_id)`` of each ``/brokers/ids/N``, by id (the listing
    watched with ``watch``; each registration's data too with ``data_watch``, armed before it
    is read); ids that are not numbers and registrations that do not decode are Unreadable."""
    bad: list[Unreadable] = []
    ids = []
    for name in await children_or_empty(store, paths.BROKER_IDS, watch=watch):
        try:
            ids.append(paths.parse_id(name, "broker id"))
        except ValueError as e:
            bad.append(Unreadable(paths.join(paths.BROKER_IDS, name), str(e)))
    ids.sort()
    if data_watch:
        await asyncio.gather(*(store.exists(paths.broker(b), watch=True) for b in ids))
    out: dict[int, T] = {}
    for b, read in zip(ids, await get_many(store, [paths.broker(b) for b in ids])):
        # None: deregistered between the listing and the read
        found = decoded(paths.broker(b), read, lambda p, d, s, b=b: decode(p, d, s, b), bad)
        if found is not None and found is not UNREADABLE:
            out[b] = found
    return out, bad


def controller_broker(path: str, data: bytes, stat: ZnodeStat, broker_id: int, listener: str = LISTENER) -> Broker:
    """A registration as the controller needs it: its endpoint of ``listener`` (speaking
    PLAINTEXT), every endpoint, the rack, the czxid as the broker's epoch."""
    return decode_broker(path, data, broker_id, stat.czxid, listener)


async def read_broker_endpoints(store: Store) -> dict[int, dict[str, Broker]]:
    """Every registered broker's endpoints by listener name (unreadable registrations skipped)."""
    found, _ = await registered_brokers(
        store, lambda path, data, stat, broker_id: decode_broker_endpoints(path, data, broker_id, stat.czxid))
    return found


@dataclass(frozen=True)
class BrokersFound:
    """:func:`read_brokers`' answer: the live brokers, a log line per problem, and the ids whose
    registration did not decode (alive, unreachable: a holder of an earlier read may keep it)."""

    brokers: dict[int, Broker]
    lines: list[str]
    undecodable: frozenset[int] = frozenset()


async def read_brokers(store: Store, watch: bool = False, listener: str = LISTENER) -> BrokersFound:
    """The registered brokers as the controller needs them (znodes.cluster_reader.brokers),
    reached at their ``listener`` endpoint, with a log line for each one skipped and for each
    one alive without such an endpoint (the controller's requests to it fail).

    A registration that does not decode is a live broker all the same (its ephemeral znode says
    its session is alive): alive and unreachable, as one without the listener's endpoint, never
    taken for dead, which would move every leadership off it (Kafka's controller fails the
    event instead and keeps what it had). ``watch``: the listing's watch and one data watch per
    registration, armed before the reads, so that a registration rewritten in place (KIP-226's
    dynamic listeners; Kafka's BrokerModificationsHandler) or repaired is read again."""
    undecodable: set[int] = set()
    lines: list[str] = []

    def decode(path: str, data: bytes, stat: ZnodeStat, broker_id: int) -> Broker:
        try:
            return controller_broker(path, data, stat, broker_id, listener)
        except ZnodeFormatError as e:
            undecodable.add(broker_id)
            lines.append(f"broker {broker_id}'s registration does not decode ({path}: {e.reason}): alive, but this "
                         "controller cannot send it requests until it is rewritten")
            return Broker(broker_id, "", NO_PORT, None, stat.czxid, ())

    brokers, bad = await registered_brokers(store, decode, watch, data_watch=watch)
    lines[:0] = [f"ignoring {u}" for u in bad]
    lines += [f"broker {b.id} has no {listener} endpoint (it registered "
              f"{', '.join(f'{e[0]}://{e[1]}:{e[2]} ({e[3]})' for e in b.endpoints) or 'none'}): alive, "
              "but this controller cannot send it requests (setting broker_listener)"
              for b in brokers.values() if not b.reachable and b.id not in undecodable]
    return BrokersFound(brokers, lines, frozenset(undecodable))


async def read_controller_registrations(store: Store, watch: bool = False) -> tuple[dict[int, bytes], list[str]]:
    """The registered controller instances' payloads (``/reassignd/controllers/<id>``), by id,
    and a log line for each entry whose name is no id; ``watch``: the children watch re-armed.
    An entry gone between the listing and its read is left out."""
    names = await children_or_empty(store, paths.CONTROLLER_INSTANCES, watch=watch)
    ids, lines = [], []
    for name in names:
        try:
            ids.append(paths.parse_id(name, "controller id"))
        except ValueError as e:
            lines.append(f"ignoring {paths.CONTROLLER_INSTANCES}/{name}: {e}")
    reads = await get_many(store, [f"{paths.CONTROLLER_INSTANCES}/{i}" for i in ids])
    return {cid: read[0] for cid, read in zip(ids, reads) if read is not None}, lines


async def read_controller_nodes(store: Store, watch: bool = False) -> tuple[dict[int, Broker], list[str]]:
    """The registered controller instances as nodes, with every endpoint and its protocol
    (znodes.payloads.decode_controller_node), and a log line for each entry skipped."""
    payloads, lines = await read_controller_registrations(store, watch)
    nodes: dict[int, Broker] = {}
    for cid, data in payloads.items():
        path = f"{paths.CONTROLLER_INSTANCES}/{cid}"
        try:
            nodes[cid] = decode_controller_node(path, data, cid)
        except ZnodeFormatError as e:
            lines.append(f"ignoring {path}: {e}")
    return nodes, lines
