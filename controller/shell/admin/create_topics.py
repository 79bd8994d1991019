"""CreateTopics (19, KIP-4), every version Kafka 3.x defines (0-7): the request half of
controller.core.topic_creation, whose docstring has the algorithm, the errors and the table.

Active controller only (a standby answers NOT_CONTROLLER on every topic). Per request:

 1. With ACLs enforced: CREATE on the cluster, or on the topic (Kafka's rule), else that topic
    gets TOPIC_AUTHORIZATION_FAILED. v5+: without DESCRIBE_CONFIGS on the topic its answer
    carries no configs, partition count or replication factor, and ``topic_config_error_code``
    TOPIC_AUTHORIZATION_FAILED (Kafka's rule).
 2. The view: existing topic names and those in ``/admin/delete_topics`` (read from
    ZooKeeper: the controller's memory may lag a tool's creation), live brokers with racks, and
    every broker's replicas and preferred leaders (the controller's assignments plus topics this
    controller created that its loop has not read back yet). Requests are planned and written
    one at a time, so each one's placement counts the ones before it.
 3. ``plan_topics`` (steps 1-2). ``validate_only``: answer now, nothing written.
 4. Per accepted topic, its config and topic znodes in one multi fenced by the controller epoch
    (step 3); a topic created meanwhile by someone else -> TOPIC_ALREADY_EXISTS.
 5. ``timeout_ms`` > 0: wait (up to it) until the loop gave every partition of the topic a
    leader and sent its metadata (engine step 10, ``Step.created``); still waiting ->
    REQUEST_TIMED_OUT for that topic (its creation goes on, as in Kafka).

Responses: v1+ carry messages; v5+ the partition count, replication factor and the topic's
configs (every Kafka topic config, with its source); v7 a topic id, the zero UUID: topic
znodes here are version 2 (Kafka 2.4's) and carry none.

    # kafka-python
    admin.create_topics([NewTopic("orders", num_partitions=12, replication_factor=3)], timeout_ms=10_000)
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import Counter

from controller.core import acl
from controller.core.placement import cluster_counts
from controller.core.topic_creation import (
    CreationView,
    Planned,
    Refused,
    TopicRequest,
    creation_ops,
    plan_topics,
)
from controller.core.topic_policy import TopicPolicy
from controller.shell.admin.base import AdminContext, Api, allows_on_topic
from controller.shell.admin.configs import read_configs
from protocol import ApiKey
from protocol.describe_configs import DYNAMIC_TOPIC_CONFIG, config_entries
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from znodes import paths
from znodes.api import MultiOpError, NodeExistsError
from znodes.reads import children_or_empty



class _Creations:
    """Per active controller: the lock that serialises creations, the topics written but not yet
    read back by its loop (their replicas count for the next placement), and who waits for
    which partitions to be created.

    The cluster's replica and leader counts are kept per topic, keyed by the topic's zkVersion
    and partition tuple in the state (every change of a topic's assignment in memory comes with
    a new version: the engine's write or a read), so a request recounts only the topics that
    changed since the last one instead of every partition of the cluster (which, once per step,
    was the cost of a creation: bench/rpc.py's ``create_topics_per_second``)."""

    def __init__(self, active):
        self.lock = asyncio.Lock()
        self.written: dict[str, tuple[tuple[int, ...], ...]] = {}
        self.waiting: dict[tuple[str, int], asyncio.Future] = {}
        self.memo_state = None
        self.memo_generation = -1
        # topic -> (version, partitions tuple, replicas per broker, leaders per broker, partitions counted)
        self.per_topic: dict[str, tuple[int, tuple, dict, dict, int]] = {}
        self.replicas: dict[int, int] = {}
        self.leaders: dict[int, int] = {}
        self.partitions = 0
        active.created_listeners.append(self.created)

    def created(self, tps) -> None:
        for tp in tps:
            future = self.waiting.pop(tp, None)
            if future is not None and not future.done():
                future.set_result(None)

    def _add(self, replicas: dict, leaders: dict, sign: int) -> None:
        for b, n in replicas.items():
            self.replicas[b] = self.replicas.get(b, 0) + sign * n
        for b, n in leaders.items():
            self.leaders[b] = self.leaders.get(b, 0) + sign * n

    def _refresh(self, state) -> None:
        if self.memo_state is not state:
            self.memo_state, self.per_topic, self.replicas, self.leaders, self.partitions = state, {}, {}, {}, 0
        versions, parts, assignments = state.topic_versions, state.topic_partitions, state.assignments
        for name in [n for n in self.per_topic if n not in versions]:
            _, _, r, l, n = self.per_topic.pop(name)
            self._add(r, l, -1)
            self.partitions -= n
        for name, version in versions.items():
            ps = parts.get(name, ())
            known = self.per_topic.get(name)
            if known is not None and known[0] == version and known[1] is ps:
                continue
            if known is not None:
                self._add(known[2], known[3], -1)
                self.partitions -= known[4]
            held = [assignments[(name, p)].replicas for p in ps if (name, p) in assignments]
            r, l = cluster_counts(held)
            self.per_topic[name] = (version, ps, r, l, len(held))
            self._add(r, l, 1)
            self.partitions += len(held)
        if self.partitions != len(assignments):
            # Assignments without a topic version (a state built by hand): count them all.
            self.per_topic, self.partitions = {}, len(assignments)
            self.replicas, self.leaders = (dict(c) for c in cluster_counts(a.replicas for a in assignments.values()))
            self.memo_state = None
        self.memo_generation = state.generation

    def counts(self, state) -> tuple[dict[int, int], dict[int, int]]:
        if self.memo_state is not state or self.memo_generation != state.generation:
            self._refresh(state)
        for name in [n for n in self.written if n in state.topic_versions]:
            del self.written[name]  # read back: counted in the assignments now
        replicas = {b: n for b, n in self.replicas.items() if n}
        leaders = {b: n for b, n in self.leaders.items() if n}
        for rs in (rs for topic in self.written.values() for rs in topic):
            for b in rs:
                replicas[b] = replicas.get(b, 0) + 1
            leaders[rs[0]] = leaders.get(rs[0], 0) + 1
        return replicas, leaders


_CREATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _creations(active) -> _Creations:
    c = _CREATIONS.get(active)
    if c is None:
        c = _CREATIONS[active] = _Creations(active)
    return c


def _requests(body: dict) -> list[TopicRequest]:
    return [
        TopicRequest(
            t["name"],
            t.get("num_partitions", -1),
            t.get("replication_factor", -1),
            tuple((a["partition_index"], tuple(a["broker_ids"] or ())) for a in t.get("assignments") or ()),
            tuple((c["name"], c.get("value")) for c in t.get("configs") or ()),
        )
        for t in body.get("topics") or []
    ]


def _configs(configs: dict[str, str], defaults: dict[str, str]) -> list[dict]:
    """v5+: every topic config with its value and source, as DescribeConfigs describes the new
    topic (protocol.describe_configs): its own, else the broker default entity's, else Kafka's."""
    fields = ("name", "value", "read_only", "config_source", "is_sensitive")
    entries = config_entries(4, configs, defaults, DYNAMIC_TOPIC_CONFIG, None, False)
    return [{k: e[k] for k in fields} for e in entries]


async def _broker_defaults(store) -> dict[str, str]:
    """``/config/brokers/<default>``'s map ({} when absent or unreadable)."""
    [found] = await read_configs(store, [paths.broker_config(paths.BROKER_DEFAULT_CONFIG)])
    return found if isinstance(found, dict) else {}


def _result(name: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None, plan: Planned | None = None,
            defaults: dict[str, str] | None = None) -> dict:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": int(code),
        "error_message": message,
        "topic_config_error_code": 0,
        "num_partitions": len(plan.assignment) if plan is not None else -1,
        "replication_factor": plan.replication_factor if plan is not None else -1,
        "configs": _configs(plan.configs, defaults or {}) if plan is not None else None,
    }


async def handle_create(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = ctx.store
    requests = _requests(body)
    timeout_s = body.get("timeout_ms", 60_000) / 1000
    validate_only = version >= 1 and bool(body.get("validate_only"))
    # A name given twice is INVALID_REQUEST whoever asks (plan_topics), before authorization (Kafka).
    named = Counter(r.name for r in requests)
    denied = {r.name for r in requests
              if named[r.name] == 1 and not await allows_on_topic(ctx, acl.CREATE, r.name, or_cluster=True)}
    creations = _creations(active)
    futures: dict[str, list[asyncio.Future]] = {}
    results: dict[int, dict] = {}
    # The broker defaults the new topics' configs fall back to (shown in v5+ answers).
    defaults = await _broker_defaults(store) if version >= 5 else {}
    async with creations.lock:
        names = await children_or_empty(store, paths.TOPICS)
        deleting = await children_or_empty(store, paths.DELETE_TOPICS)
        state = active.state
        replicas, leaders = creations.counts(state)
        view = CreationView(
            topics=frozenset(names) | frozenset(creations.written),
            deleting=frozenset(deleting),
            brokers={b.id: b.rack for b in state.brokers.values()},
            replica_counts=replicas,
            leader_counts=leaders,
            policy=TopicPolicy.from_config(getattr(ctx, "config", None)),
        )
        allowed = [r for r in requests if r.name not in denied]
        plans = iter(plan_topics(allowed, view))
        for i, r in enumerate(requests):
            if r.name in denied:
                results[i] = _result(r.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "CREATE is not allowed")
                continue
            plan = next(plans)
            if isinstance(plan, Refused):
                results[i] = _result(r.name, plan.code, plan.message)
                continue
            if validate_only:
                results[i] = _result(r.name, plan=plan, defaults=defaults)
                continue
            config_exists = await store.exists(paths.topic_config(r.name)) is not None
            waits = [asyncio.get_running_loop().create_future() for _ in plan.assignment]
            for p, future in zip(plan.assignment, waits):
                creations.waiting[(r.name, p)] = future
            try:
                await store.fenced_multi(creation_ops(plan, config_exists), active.epoch_zkversion)
            except MultiOpError as e:
                for p in plan.assignment:
                    creations.waiting.pop((r.name, p), None)
                if isinstance(e.cause, NodeExistsError):
                    results[i] = _result(r.name, ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {r.name!r} was created meanwhile")
                    continue
                raise
            creations.written[r.name] = tuple(plan.assignment[p] for p in sorted(plan.assignment))
            futures[r.name] = waits
            results[i] = _result(r.name, plan=plan, defaults=defaults)
    if futures and timeout_s > 0:
        deadline = time.monotonic() + timeout_s
        for name, waits in futures.items():
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise asyncio.TimeoutError
                await asyncio.wait_for(asyncio.gather(*(asyncio.shield(f) for f in waits)), left)
            except asyncio.TimeoutError:
                for i, out in results.items():
                    if out["name"] == name and out["error_code"] == 0:
                        out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                        out["error_message"] = (f"topic {name!r} is being created: not every partition had a leader "
                                                f"within {body.get('timeout_ms')} ms")
    for name, waits in futures.items():
        for p, f in enumerate(waits):
            if not f.done():
                f.cancel()  # nobody waits any more
                if creations.waiting.get((name, p)) is f:
                    del creations.waiting[(name, p)]
    if version >= 5:
        await _hide_configs(ctx, results.values())
    return {"throttle_time_ms": 0, "topics": [results[i] for i in range(len(requests))]}


async def _hide_configs(ctx: AdminContext, results) -> None:
    """Kafka's rule for v5+ answers: a topic's configs, partition count and replication factor
    are shown only to a principal with DESCRIBE_CONFIGS on the topic (the cluster's does not
    count); otherwise ``topic_config_error_code`` is TOPIC_AUTHORIZATION_FAILED."""
    for out in results:
        if not await allows_on_topic(ctx, acl.DESCRIBE_CONFIGS, out["name"]):
            out.update(topic_config_error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), configs=None,
                       num_partitions=-1, replication_factor=-1)


def create_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "topics": [_result(t["name"], code, message) for t in body.get("topics") or []]}


APIS = [
    Api(ApiKey.CREATE_TOPICS, "CreateTopics", 0, 7, controller_only=True, handle=handle_create, error_response=create_error),
]
