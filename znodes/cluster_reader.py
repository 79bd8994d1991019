"""The one reader of a Kafka cluster's znodes: brokers (with their racks), topic names, topic
assignments and partition states, each decoded as the controller decodes it (znodes.payloads,
znodes.models). The controller (controller.shell.zkread), the planner service's feed
(planner_service.zk_feed) and the snapshot (spark_jobs.snapshot) all read through it, so they
take the same verdict on the same znode.

    names, bad = await topic_names(store)
    assignments, bad = await topics(store, names)           # name -> TopicRead | None (absent)
    states, bad = await partition_states(store, [("t", 0)]) # tp -> LeaderIsr | None (absent)
    brokers, bad = await brokers(store)                     # id -> Broker (needs a PLAINTEXT listener)
    regs, bad = await registrations(store)                  # id -> BrokerRegistration (any listener)
    found, bad = await configs(store, [paths.topic_config("t")])  # path -> ConfigRead | None (absent)

Every function takes a :class:`znodes.api.Store` (kazoo's or the twin's). A znode that does not
exist is an answer (left out, or None), and one that is not what its path must hold is an
:class:`Unreadable` in the second list, naming the znode - never an exception: the caller decides
whether to skip it with a log line (the controller, the feed) or stop (the snapshot). Other store
errors propagate. With ``watch=True`` every znode read is watched, an absent one too (it fires
when created); without, reads go in bulk (``znodes.reads.get_many``: multiRead where the store
has it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import NamedTuple

from znodes import paths
from znodes.api import Store, ZnodeStat
from znodes.models import BrokerRegistration, EntityConfig
from znodes.payloads import decode_state, decode_topic_with_id
from znodes.reads import (
    READ_CONCURRENCY,
    UNREADABLE,
    Unreadable,
    children_or_empty,
    controller_broker,
    decoded,
    get_many,
    get_or_none,
    registered_brokers,
)
from znodes.values import Assignment, Broker, LeaderIsr, TopicPartition

__all__ = ["ConfigRead", "TopicRead", "Unreadable", "brokers", "configs", "get_or_watch", "partition_states",
           "registrations", "topic_names", "topics"]


class TopicRead(NamedTuple):
    """A topic znode: its version (what a conditional rewrite checks), its partitions and its
    ``topic_id`` (Kafka 2.8+; None without one), which every rewrite keeps."""

    version: int
    partitions: dict[int, Assignment]
    topic_id: str | None = None


async def get_or_watch(store: Store, path: str) -> tuple[bytes, ZnodeStat] | None:
    """(data, stat) of ``path`` with a watch on it; None if it does not exist, with a watch that
    fires when it is created.

    ZooKeeper sets no watch on a getData that finds no node, so an absent znode is watched with
    exists - and it may be created between the two (a controller writes a new partition's state
    as a new topic is read): exists then finds it, with a watch only on its next change, so it is
    read again rather than taken as absent."""
    while True:
        read = await get_or_none(store, path, watch=True)
        if read is not None or await store.exists(path, watch=True) is None:
            return read


async def _read(store: Store, path_list: list[str], watch: bool) -> list[tuple[bytes, ZnodeStat] | None]:
    if not watch:
        return await get_many(store, path_list)
    out: list = []
    for i in range(0, len(path_list), READ_CONCURRENCY):
        out += await asyncio.gather(*(get_or_watch(store, p) for p in path_list[i : i + READ_CONCURRENCY]))
    return out


async def topic_names(store: Store, watch: bool = False) -> tuple[list[str], list[Unreadable]]:
    """The children of ``/brokers/topics`` that are Kafka topic names, sorted. With ``watch``,
    the listing is watched, also while ``/brokers/topics`` does not exist yet."""
    if watch and await store.exists(paths.TOPICS, watch=True) is None:
        return [], []
    bad: list[Unreadable] = []
    return _kafka_names(sorted(await children_or_empty(store, paths.TOPICS, watch=watch)), bad), bad


def _kafka_names(names: Iterable[str], bad: list[Unreadable]) -> list[str]:
    """The names that are Kafka topic names; the others noted in ``bad``."""
    out = []
    for name in names:
        try:
            out.append(paths.validate_topic_name(name))
        except ValueError as e:
            bad.append(Unreadable(paths.join(paths.TOPICS, name), str(e)))
    return out


async def topics(store: Store, names: Iterable[str], watch: bool = False) -> tuple[dict[str, TopicRead | None], list[Unreadable]]:
    """Each named topic's znode: its TopicRead, None when it does not exist; a name that is not
    Kafka's or a znode that does not decode is Unreadable (and left out)."""
    bad: list[Unreadable] = []
    valid = _kafka_names(names, bad)
    out: dict[str, TopicRead | None] = {}
    for name, read in zip(valid, await _read(store, [paths.topic(n) for n in valid], watch)):
        found = decoded(paths.topic(name), read, _topic_read, bad)
        if found is not UNREADABLE:
            out[name] = found
    return out, bad


def _topic_read(path: str, data: bytes, stat: ZnodeStat) -> TopicRead:
    return TopicRead(stat.version, *decode_topic_with_id(path, data))


async def partition_states(store: Store, tps: Iterable[TopicPartition], watch: bool = False
                           ) -> tuple[dict[TopicPartition, LeaderIsr | None], list[Unreadable]]:
    """Each partition's state znode: its LeaderIsr, None when it does not exist; one that does not
    decode is Unreadable (and left out)."""
    keys = list(tps)
    bad: list[Unreadable] = []
    out: dict[TopicPartition, LeaderIsr | None] = {}
    for tp, read in zip(keys, await _read(store, [paths.partition_state(*tp) for tp in keys], watch)):
        state = decoded(paths.partition_state(*tp), read, _state_read, bad)
        if state is not UNREADABLE:
            out[tp] = state
    return out, bad


def _state_read(path: str, data: bytes, stat: ZnodeStat) -> LeaderIsr:
    return decode_state(path, data, stat.version)


async def brokers(store: Store, watch: bool = False) -> tuple[dict[int, Broker], list[Unreadable]]:
    """The registered brokers as the controller needs them (the PLAINTEXT endpoint, -1 without
    one: alive all the same; every endpoint, the rack, the registration's czxid as its epoch),
    by id; ``watch`` watches the listing."""
    return await registered_brokers(store, controller_broker, watch)


async def registrations(store: Store, watch: bool = False) -> tuple[dict[int, BrokerRegistration], list[Unreadable]]:
    """The registered brokers' whole registrations (any listeners, the rack), by id."""
    return await registered_brokers(store, lambda p, d, s, b: BrokerRegistration.from_bytes(p, d), watch)


class ConfigRead(NamedTuple):
    """An entity's config znode (``/config/topics/T``, ``/config/brokers/N`` or ``<default>``):
    its map and zkVersion."""

    config: dict[str, str]
    version: int


def _config_read(path: str, data: bytes, stat: ZnodeStat) -> ConfigRead:
    return ConfigRead(dict(EntityConfig.from_bytes(path, data).config), stat.version)


async def configs(store: Store, config_paths: Iterable[str]) -> tuple[dict[str, ConfigRead | None], list[Unreadable]]:
    """Entity configs by path, in one bulk read: None for one that does not exist; one that is not
    a config is left out and named in the second list (never overwritten on a guess)."""
    wanted = list(dict.fromkeys(config_paths))
    bad: list[Unreadable] = []
    out: dict[str, ConfigRead | None] = {}
    for path, read in zip(wanted, await get_many(store, wanted)):
        found = decoded(path, read, _config_read, bad)
        if found is not UNREADABLE:
            out[path] = found
    return out, bad
