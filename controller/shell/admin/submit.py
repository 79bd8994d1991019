"""The admin write APIs' shared parts: the cluster as a request sees it, checks of a target
replica list, the removal znodes, and adding entries to ``/admin/reassign_partitions``.

Requests are checked against ZooKeeper as it is now (registered brokers, the topic znodes of
the topics asked for), not against the controller's in-memory state, which may lag a topic
created a moment ago.

    view = await read_view(store, ["orders"])
    problem = target_error(view, "orders", 0, [4, 5, 6])          # None or (code, message)
    results = await add_entries(store, epoch_zkversion, {("orders", 0): (4, 5, 6)}, view, create_only=False)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from controller.core.state import ClusterState
from controller.core.validation import replicas_problem
from controller.shell import throttle_configs as tc
from controller.shell.throttles import listed_bytes, read_listed
from controller.shell.zkread import read_topics
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import Create, Delete, NodeExistsError, Op, SetData, Store
from znodes.batch import FlushError
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_requests, encode_requests
from znodes.reads import children_or_empty, get_or_none
from znodes.values import Assignment, Request, TopicPartition

Result = tuple[ErrorCode, str | None]
OK: Result = (ErrorCode.NONE, None)
INT32_MAX = 2**31 - 1


@dataclass
class ClusterView:
    brokers: frozenset[int]  # registered in /brokers/ids
    topics: dict[str, dict[int, Assignment]]  # the topics asked for that exist

    def assignment(self, tp: TopicPartition) -> Assignment | None:
        return self.topics.get(tp[0], {}).get(tp[1])


async def read_view(store: Store, topic_names: Iterable[str], state: ClusterState | None = None) -> ClusterView:
    """Registered brokers and the named topics' assignments, as ZooKeeper has them now.

    With the active controller's ``state``, a topic whose znode version is the one the state
    holds is taken from memory (same version, same content) instead of being read and parsed
    again: only a stat per topic goes to ZooKeeper.
    """
    brokers = set()
    for name in await children_or_empty(store, paths.BROKER_IDS):
        try:
            brokers.add(paths.parse_id(name, "broker id"))
        except ValueError:
            continue  # not a broker registration: never a valid target
    valid = []
    for name in set(topic_names):
        try:
            valid.append(paths.validate_topic_name(name))
        except (ValueError, TypeError):
            continue  # reported as unknown by the checks
    topics: dict[str, dict[int, Assignment]] = {}
    if state is not None and valid:
        stats = await asyncio.gather(*(store.exists(paths.topic(n)) for n in valid))
        stale = []
        for name, stat in zip(valid, stats):
            if stat is None:
                continue
            if state.topic_versions.get(name) == stat.version and name in state.topic_partitions:
                topics[name] = {p: state.assignments[(name, p)] for p in state.topic_partitions[name]}
            else:
                stale.append(name)
        valid = stale
    reads, _ = await read_topics(store, sorted(valid))
    topics.update({name: read[1] for name, read in reads.items() if read is not None})
    return ClusterView(frozenset(brokers), topics)


def original_replicas(assignment: Assignment) -> tuple[int, ...]:
    """ORS: the replicas before any move in progress (the topic znode's RS minus AR)."""
    if not assignment.adding:
        return assignment.replicas
    return tuple(b for b in assignment.replicas if b not in assignment.adding)


def partition_error(view: ClusterView, topic: str, partition: int) -> Result | None:
    if topic not in view.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic!r}"
    if view.assignment((topic, partition)) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} has no partition {partition}"
    return None


def target_error(view: ClusterView, topic: str, partition: int, replicas) -> Result | None:
    """Why ``replicas`` cannot be the partition's target, or None (Kafka's checks)."""
    problem = partition_error(view, topic, partition)
    if problem is not None:
        return problem
    reason = replicas_problem(replicas, view.brokers)
    return None if reason is None else (ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)


def group_partitions(
    topics: list[dict], name_key: str, parts_key: str, index_key: str, value_key: str
) -> tuple[list[TopicPartition], dict[TopicPartition, object], dict[TopicPartition, Result]]:
    """A request's topic -> partitions lists as (order, value per partition, errors).

    A topic named twice fails as a whole with INVALID_REQUEST (KIP-179), a partition named
    twice too; neither is acted on.
    """
    order: list[TopicPartition] = []
    values: dict[TopicPartition, object] = {}
    errors: dict[TopicPartition, Result] = {}
    counts: dict[str, int] = {}
    for t in topics:
        counts[t[name_key]] = counts.get(t[name_key], 0) + 1
    for t in topics:
        name = t[name_key]
        for p in t[parts_key] or ():
            tp = (name, p[index_key])
            if tp in values or tp in errors:
                errors[tp] = (ErrorCode.INVALID_REQUEST, f"partition {name}-{tp[1]} appears more than once in the request")
                values.pop(tp, None)
                continue
            order.append(tp)
            if counts[name] > 1:
                errors[tp] = (ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once in the request")
            else:
                values[tp] = p[value_key]
    return order, values, errors


def by_topic(order: list[TopicPartition], results: dict[TopicPartition, Result]) -> list[tuple[str, list[tuple[int, Result]]]]:
    """Results grouped by topic, in request order (each partition once)."""
    out: dict[str, list[tuple[int, Result]]] = {}
    get = results.get
    for tp in dict.fromkeys(order):
        parts = out.get(tp[0])
        if parts is None:
            parts = out[tp[0]] = []
        parts.append((tp[1], get(tp, OK)))
    return list(out.items())


# ---- removal znodes ---------------------------------------------------------------------------


async def listed_ops(store: Store, path: str, add=(), drop=(), replace=None) -> list[Op]:
    """Ops that rewrite a removal znode: members plus ``add`` minus ``drop`` (or exactly
    ``replace``), conditional on the version read; deleted when it empties; [] if unchanged."""
    listed = await read_listed(store, path)
    exists = listed.version is not None or await store.exists(path) is not None
    if exists and listed.version is None:
        raise ZnodeFormatError(path, "the removal znode is malformed; fix or delete it first")
    new = frozenset(replace) if replace is not None else (listed.members | frozenset(add)) - frozenset(drop)
    if exists and new == listed.members:
        return []
    if not exists:
        return [Create(path, listed_bytes(path, new))] if new else []
    if not new:
        return [Delete(path, listed.version)]
    return [SetData(path, listed_bytes(path, new), listed.version)]


async def update_listed(store: Store, epoch_zkversion: int, path: str, add=(), drop=(), replace=None) -> int:
    return await tc.write_with_retry(store, epoch_zkversion, lambda: listed_ops(store, path, add, drop, replace))


async def update_both_listed(store: Store, epoch_zkversion: int, *, topics_add=(), brokers_add=(), topics_drop=(), brokers_drop=()) -> int:
    """Both removal znodes in one fenced write."""

    async def build() -> list[Op]:
        return await listed_ops(store, paths.THROTTLED_REPLICAS_REMOVAL, topics_add, topics_drop) + await listed_ops(
            store, paths.THROTTLED_RATES_REMOVAL, brokers_add, brokers_drop
        )

    return await tc.write_with_retry(store, epoch_zkversion, build)


async def check_configs(store: Store, updates: dict[tuple[str, str | int], object]) -> None:
    """Raise (ZnodeFormatError, ThrottledReplicasError) before anything is written if an update
    cannot apply to a config as it is now (a malformed config or throttle value)."""
    await tc.configs_ops(store, sorted(updates.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))))


async def update_configs(store: Store, epoch_zkversion: int, updates: dict[tuple[str, str | int], object]) -> int:
    """Apply one update function per (kind, entity) config, all in one fenced write."""

    async def build() -> list[Op]:
        return await tc.configs_ops(store, sorted(updates.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))))

    return await tc.write_with_retry(store, epoch_zkversion, build)


# ---- /admin/reassign_partitions -----------------------------------------------------------------


async def add_entries(
    store: Store,
    epoch_zkversion: int,
    targets: dict[TopicPartition, tuple[int, ...]],
    view: ClusterView,
    *,
    create_only: bool,
    skip_isr_check: bool = False,
    movement_strategies: tuple[str, ...] = (),
) -> dict[TopicPartition, Result]:
    """Write the targets into ``/admin/reassign_partitions`` with their ``original_replicas``.

    ``create_only`` (KIP-179 v0): the znode must not exist; if it does, every partition gets
    REASSIGNMENT_IN_PROGRESS. Otherwise (v1, KIP-455) merge into the znode with a write
    conditional on the version read, re-reading and merging again when the controller or a
    tool changed it meanwhile. A partition already listed keeps its recorded
    ``original_replicas`` and takes the new target (controller.core.engine step 4b: in place while
    it replicates, else after its move). ``skip_isr_check`` and ``movement_strategies`` go in
    each entry (controller.core.isr_health, controller.core.move_order). Returns a result per
    partition.
    """
    topics = view.topics
    entries = [Request(t, p, r, original_replicas(topics[t][p]), skip_isr_check=skip_isr_check,
                       movement_strategies=movement_strategies)
               for (t, p), r in targets.items()]
    if not entries:
        return {}
    if create_only:

        async def create() -> list[Op]:
            return _create(entries)

        try:
            await tc.write_with_retry(store, epoch_zkversion, create)
        except FlushError as e:
            if isinstance(getattr(e.cause, "cause", None), NodeExistsError):
                return {tp: _in_progress() for tp in targets}
            raise
        return {tp: OK for tp in targets}

    async def build() -> list[Op]:
        read = await get_or_none(store, paths.REASSIGN_PARTITIONS)
        if read is None:
            return _create(entries)
        current, _ = decode_requests(paths.REASSIGN_PARTITIONS, read[0])
        merged = {r.tp: r for r in current}
        changed = False
        for e in entries:
            old = merged.get(e.tp)
            if old is None:
                merged[e.tp] = e
                changed = True
            elif (old.replicas, old.skip_isr_check, old.movement_strategies) != (
                e.replicas, e.skip_isr_check, e.movement_strategies
            ):
                merged[e.tp] = Request(e.topic, e.partition, e.replicas, old.original_replicas or e.original_replicas,
                                       skip_isr_check=e.skip_isr_check, movement_strategies=e.movement_strategies)
                changed = True
        if not changed:
            return []
        return [SetData(paths.REASSIGN_PARTITIONS, encode_requests(merged.values()), read[1].version)]

    await tc.write_with_retry(store, epoch_zkversion, build)
    return {tp: OK for tp in targets}


def _create(entries: list[Request]) -> list[Op]:
    return [Create(paths.REASSIGN_PARTITIONS, encode_requests(entries))]


def _in_progress() -> Result:
    return (
        ErrorCode.REASSIGNMENT_IN_PROGRESS,
        "a reassignment is running (/admin/reassign_partitions exists); use version 1 to add to it",
    )


async def running_now(store: Store) -> bool:
    """KIP-179: a reassignment runs while ``/admin/reassign_partitions`` exists."""
    return await store.exists(paths.REASSIGN_PARTITIONS) is not None
