"""The controller's ZooKeeper reads, turned into the engine's state types. Topics, partition
states and brokers are read through znodes.cluster_reader, the reader the planner service's feed
and the snapshot share; this module adds the controller's own znodes (requests, records,
notifications) and its log lines.

Every function takes a :class:`znodes.api.Store`, reads concurrently in bounded chunks, and
returns what it read plus log lines for payloads it had to skip (a malformed znode is reported,
never fatal, and never rewritten on the strength of a guess). Store errors other than "no such
node" propagate: the caller (controller.shell.active) reloads on them.

    found = await read_brokers(store, watch=True)        # .brokers, .lines, .undecodable
    states, log = await read_states(store, [("t", 0), ("t", 1)])
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from controller.core.events import QueueRead, RequestsRead
from znodes import cluster_reader, paths
from znodes.api import Store
from znodes.errors import ZnodeFormatError
from znodes.payloads import (
    decode_log_dir_event,
    decode_notification,
    decode_preferred_election,
    decode_record_full,
    decode_requests,
)
from znodes.reads import READ_CONCURRENCY, children_or_empty, get_many, get_or_none
from znodes.values import Assignment, LeaderIsr, TopicPartition, new_topic_id


async def read_topic_names(store: Store, watch: bool = False) -> list[str]:
    return sorted(await children_or_empty(store, paths.TOPICS, watch=watch))


async def read_topics(
    store: Store, names: Iterable[str], watch: bool = False
) -> tuple[dict[str, tuple[int, dict[int, Assignment]] | None], list[str]]:
    """Each topic's (znode version, partitions), None when absent (znodes.cluster_reader); a
    name that is not Kafka's or a znode that does not decode is skipped with a log line.
    ``watch``: each topic znode's data watched (a tool adding partitions; the active
    controller's ``topic`` watches)."""
    found, bad = await cluster_reader.topics(store, names, watch=watch)
    return found, [f"ignoring topic {u}" for u in bad]


async def _read_entries(store: Store, path: str, event):
    """A znode in /admin/reassign_partitions' format read entry by entry into ``event``:
    absent, malformed as a whole (``error``), or its entries with the ones refused."""
    read = await get_or_none(store, path)
    if read is None:
        return event(None, None)
    data, stat = read
    try:
        entries, rejected = decode_requests(path, data)
    except ZnodeFormatError as e:
        return event(stat.version, None, error=str(e))
    return event(stat.version, tuple(entries), rejected=tuple(rejected))


async def read_requests(store: Store) -> RequestsRead:
    return await _read_entries(store, paths.REASSIGN_PARTITIONS, RequestsRead)


async def read_queue(store: Store) -> QueueRead:
    """``/admin/reassign_partitions_queue`` (KIP-236), entry by entry like the requests znode."""
    return await _read_entries(store, paths.REASSIGN_QUEUE, QueueRead)


async def read_preferred_election(store: Store) -> tuple[int, tuple[TopicPartition, ...], str | None] | None:
    """``/admin/preferred_replica_election`` (watched for its creation, change and deletion):
    None when absent; else (version, partitions, None), or (version, (), why) for a payload
    that does not decode."""
    if await store.exists(paths.PREFERRED_REPLICA_ELECTION, watch=True) is None:
        return None
    read = await get_or_none(store, paths.PREFERRED_REPLICA_ELECTION)
    if read is None:
        return None  # deleted between the two calls: its deletion fired the watch
    data, stat = read
    try:
        return stat.version, decode_preferred_election(paths.PREFERRED_REPLICA_ELECTION, data), None
    except ZnodeFormatError as e:
        return stat.version, (), str(e)


async def read_records(
    store: Store,
) -> tuple[
    dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]] | None],
    dict[str, int],
    set[TopicPartition],
    dict[TopicPartition, tuple[int, ...]],
    list[str],
]:
    """Every KIP-240 record: (TRS, ORS), or None for one that does not parse; the number of
    records under each ``/admin/reassignments/T`` parent (0 for an empty parent); the
    records marked ``cancelling`` (a KIP-236 rollback under way); and the targets queued
    behind moves (``next_replicas``).
    """
    log: list[str] = []
    topics = await children_or_empty(store, paths.REASSIGNMENTS)
    keys: list[TopicPartition] = []
    counts: dict[str, int] = {}
    valid = []
    for topic in sorted(topics):
        try:
            paths.validate_topic_name(topic)
            valid.append(topic)
        except ValueError as e:
            log.append(f"ignoring /admin/reassignments/{topic}: {e}")
    # Every parent listed at once (a failover with moves in 100 topics waits for one round
    # trip, not 100), READ_CONCURRENCY at a time.
    listings: list[list[str]] = []
    for i in range(0, len(valid), READ_CONCURRENCY):
        chunk = valid[i : i + READ_CONCURRENCY]
        listings += await asyncio.gather(*(children_or_empty(store, paths.reassignment_topic(t)) for t in chunk))
    for topic, names in zip(valid, listings):
        counts[topic] = len(names)
        for name in names:
            try:
                keys.append((topic, paths.parse_id(name, "partition")))
            except ValueError as e:
                log.append(f"ignoring /admin/reassignments/{topic}/{name}: {e}")
    out: dict = {}
    reads = await get_many(store, [paths.reassignment(*tp) for tp in keys])
    cancelling: set[TopicPartition] = set()
    queued_targets: dict[TopicPartition, tuple[int, ...]] = {}
    for tp, read in zip(keys, reads):
        if read is None:
            continue
        try:
            target, original, flag, queued = decode_record_full(paths.reassignment(*tp), read[0])
        except ZnodeFormatError as e:
            log.append(f"malformed reassignment record: {e}")
            out[tp] = None
            continue
        out[tp] = (target, original)
        if flag:
            cancelling.add(tp)
        if queued is not None:
            queued_targets[tp] = queued
    return out, counts, cancelling, queued_targets, log


async def read_states(store: Store, tps: Iterable[TopicPartition]) -> tuple[dict[TopicPartition, LeaderIsr | None], list[str]]:
    """Each partition's state, None when absent (znodes.cluster_reader); one that does not
    decode is left out with a log line."""
    found, bad = await cluster_reader.partition_states(store, tps)
    return found, [f"unreadable partition state {u}" for u in bad]


async def read_move_states(
    store: Store, tps: Iterable[TopicPartition]
) -> tuple[dict[TopicPartition, LeaderIsr | None], tuple[tuple[TopicPartition, str], ...]]:
    """:func:`read_states` for moves that wait on them: the ones that do not decode come back
    as (partition, reason), for StatesRead.unreadable."""
    keys = list(tps)
    found, bad = await cluster_reader.partition_states(store, keys)
    by_path = {paths.partition_state(*tp): tp for tp in keys}
    return found, tuple((by_path[u.path], u.reason) for u in bad if u.path in by_path)


async def read_notifications(
    store: Store, watch: bool = False
) -> tuple[list[str], dict[TopicPartition, LeaderIsr | None], list[str]]:
    """(notification paths, in sequence order; partitions they name; log).

    Each partition maps to the newest state (highest zkVersion) its notifications carried,
    or None when none carried one: that state must be read from its znode.
    A malformed notification is listed for deletion too: it can never become readable, and
    left in place it would be re-read after every change.
    """
    log: list[str] = []
    names = sorted(await children_or_empty(store, paths.ISR_CHANGE_NOTIFICATION, watch=watch))
    note_paths = [paths.join(paths.ISR_CHANGE_NOTIFICATION, n) for n in names]
    reads = await get_many(store, note_paths)
    partitions: dict[TopicPartition, LeaderIsr | None] = {}
    found = []
    for path, read in zip(note_paths, reads):
        if read is None:
            continue
        found.append(path)
        try:
            entries = decode_notification(path, read[0])
        except ZnodeFormatError as e:
            log.append(f"deleting malformed ISR change notification: {e}")
            continue
        for tp, state in entries:
            if tp not in partitions:
                partitions[tp] = state
                continue
            known = partitions[tp]
            if known is None or state is None:
                # An entry without a state (a Kafka broker's) announces a change whose
                # version nobody told: only the znode says what is newest.
                partitions[tp] = None
            elif state.zk_version > known.zk_version:
                partitions[tp] = state
    return found, partitions, log


async def read_log_dir_events(store: Store, watch: bool = False) -> tuple[list[str], frozenset[int], list[str]]:
    """(notification paths under ``/log_dir_event_notification``, in sequence order; the brokers
    they name; log). The parent is watched for its creation while absent (a broker creates it
    with its first notification), its children once present. A malformed notification is listed
    for deletion too and names no broker: it can never become readable."""
    if await store.exists(paths.LOG_DIR_EVENT_NOTIFICATION, watch=watch) is None:
        return [], frozenset(), []
    names = sorted(await children_or_empty(store, paths.LOG_DIR_EVENT_NOTIFICATION, watch=watch))
    note_paths = [paths.join(paths.LOG_DIR_EVENT_NOTIFICATION, n) for n in names]
    log: list[str] = []
    found, brokers = [], set()
    for path, read in zip(note_paths, await get_many(store, note_paths)):
        if read is None:
            continue
        found.append(path)
        try:
            brokers.add(decode_log_dir_event(path, read[0]))
        except ZnodeFormatError as e:
            log.append(f"deleting malformed log directory event notification: {e}")
    return found, frozenset(brokers), log


async def missing_parents(store: Store, tps: Iterable[TopicPartition]) -> frozenset[str]:
    """Of partitions without a state znode: which ``/brokers/topics/T/partitions`` and
    ``.../partitions/P`` parents do not exist either (a topic znode written alone, as Kafka's
    admin tools and this controller's CreateTopics write it: controller.core.topic_creation)."""
    keys = list(tps)
    wanted = list(dict.fromkeys([paths.partitions(t) for t, _ in keys] + [paths.partition(*tp) for tp in keys]))
    reads = await get_many(store, wanted)
    return frozenset(path for path, read in zip(wanted, reads) if read is None)


def topic_ids_to_give(reads, known=()) -> dict[str, str]:
    """A new id (Kafka's Uuid.randomUuid) for each topic of ``reads`` (name -> TopicRead or None)
    read without one and not in ``known``: Kafka 2.8+'s controller gives every such topic an
    id (``processTopicIds``: at its election, and for the new topics of a topic change). Drawn
    here, in the shell: the engine draws nothing."""
    return {name: new_topic_id() for name, read in sorted(reads.items())
            if read is not None and name not in known and not (len(read) > 2 and read[2] is not None)}
