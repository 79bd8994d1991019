"""CreatePartitions (37, KIP-195), versions 0-3: add partitions to existing topics, placed like
CreateTopics' (controller.core.placement) or as given. The checks are
controller.core.topic_creation.plan_partitions (Kafka's errors).

Active controller only. Per topic, in request order:

 1. A topic named twice -> INVALID_REQUEST; with ACLs enforced ALTER on the topic (a cluster
    grant does not count, as in Kafka), else TOPIC_AUTHORIZATION_FAILED; then ``plan_partitions``: UNKNOWN_TOPIC_OR_PARTITION,
    INVALID_TOPIC_EXCEPTION (queued for deletion), INVALID_PARTITIONS (not an increase),
    POLICY_VIOLATION (the new total over ``topic_policy_max_partitions``),
    REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR.
 2. ``validate_only``: answer now.
 3. The topic znode rewritten with the new partitions, conditional on the zkVersion read and
    fenced by the controller epoch (a conflict: read again and re-check, a few times). Then the
    controller is told (a TopicsRead in its queue: the znode's data has no watch here, as its
    children do), and engine step 10 gives the new partitions their states, LeaderAndIsr and
    UpdateMetadata - the same path as a new topic's, so a controller failing after the write
    leaves partitions the next one finishes at its election.
 4. ``timeout_ms`` > 0: wait until every new partition has a leader, else REQUEST_TIMED_OUT.

    # kafka-python
    admin.create_partitions({"orders": NewPartitions(total_count=24)})
"""

from __future__ import annotations

import asyncio
import time

from controller.core import acl
from controller.core.events import TopicsRead
from controller.core.topic_creation import (
    CreationView,
    PartitionsRequest,
    Refused,
    plan_partitions,
)
from controller.core.topic_policy import TopicPolicy
from controller.shell.admin.base import AdminContext, Api, allows_on_topic
from controller.shell.admin.create_topics import _creations
from controller.shell.zkread import read_topics
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import BadVersionError, MultiOpError, SetData
from znodes.payloads import encode_topic
from znodes.reads import children_or_empty
from znodes.values import Assignment

CONFLICT_RETRIES = 5


def _result(name: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"name": name, "error_code": int(code), "error_message": message}


async def _add(ctx: AdminContext, active, creations, r: PartitionsRequest, validate_only: bool):
    """One topic: (result, the new partitions' futures)."""
    store = ctx.store
    for _ in range(CONFLICT_RETRIES):
        state = active.state
        deleting = frozenset(await children_or_empty(store, paths.DELETE_TOPICS))
        reads, _ = await read_topics(store, [r.name]) if _valid(r.name) else ({}, [])
        read = reads.get(r.name)
        current = {p: a.replicas for p, a in read[1].items()} if read is not None else None
        moving = read is not None and (
            any(a.moving for a in read[1].values()) or any(tp[0] == r.name for tp in state.tasks)
        )
        replicas, leaders = creations.counts(state)
        view = CreationView(frozenset(), deleting, {b.id: b.rack for b in state.brokers.values()}, replicas, leaders,
                            TopicPolicy.from_config(getattr(ctx, "config", None)))
        plan = plan_partitions(r, current, view, moving=moving)
        if isinstance(plan, Refused):
            return _result(r.name, plan.code, plan.message), []
        if validate_only:
            return _result(r.name), []
        version, parts = read
        parts = dict(parts) | {p: Assignment(rs) for p, rs in plan.items()}
        loop = asyncio.get_running_loop()
        waits = {(r.name, p): loop.create_future() for p in plan}
        creations.waiting.update(waits)
        try:
            await store.fenced_multi([SetData(paths.topic(r.name), encode_topic(parts), version)], active.epoch_zkversion)
        except MultiOpError as e:
            for tp in waits:
                creations.waiting.pop(tp, None)
            if isinstance(e.cause, BadVersionError):
                continue  # changed meanwhile (a move's write, another request): check again
            raise
        # The controller's loop learns the new partitions from this read, as from a watch.
        active.inbox.queue.put_nowait(TopicsRead({r.name: (version + 1, parts)}))
        return _result(r.name), list(waits.values())
    return _result(r.name, ErrorCode.UNKNOWN_SERVER_ERROR, f"topic {r.name!r} kept changing while partitions were added; retry"), []


def _valid(name: str) -> bool:
    try:
        paths.validate_topic_name(name)
    except ValueError:
        return False
    return True


async def handle_create_partitions(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    creations = _creations(active)
    topics = body.get("topics") or []
    counts: dict[str, int] = {}
    for t in topics:
        counts[t["name"]] = counts.get(t["name"], 0) + 1
    results: list[dict] = []
    waits: dict[str, list[asyncio.Future]] = {}
    async with creations.lock:  # placements see each other
        for t in topics:
            name = t["name"]
            if counts[name] > 1:
                results.append(_result(name, ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once"))
                continue
            if not await allows_on_topic(ctx, acl.ALTER, name):
                results.append(_result(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "ALTER is not allowed"))
                continue
            given = t.get("assignments")
            r = PartitionsRequest(name, t["count"], None if given is None else tuple(tuple(a["broker_ids"] or ()) for a in given))
            result, futures = await _add(ctx, active, creations, r, bool(body.get("validate_only")))
            results.append(result)
            if futures:
                waits[name] = futures
    timeout_s = body.get("timeout_ms", 0) / 1000
    if waits and timeout_s > 0:
        deadline = time.monotonic() + timeout_s
        for name, futures in waits.items():
            try:
                await asyncio.wait_for(asyncio.gather(*(asyncio.shield(f) for f in futures)),
                                       max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                for out in results:
                    if out["name"] == name and out["error_code"] == 0:
                        out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                        out["error_message"] = f"the new partitions of {name!r} did not all have a leader in time"
    for futures in waits.values():
        for f in futures:
            if not f.done():
                f.cancel()
    for tp in [tp for tp, f in creations.waiting.items() if f.cancelled()]:
        del creations.waiting[tp]
    return {"throttle_time_ms": 0, "results": results}


def create_partitions_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "results": [_result(t["name"], code, message) for t in body.get("topics") or []]}


APIS = [
    Api(ApiKey.CREATE_PARTITIONS, "CreatePartitions", 0, 3, controller_only=True, handle=handle_create_partitions,
        error_response=create_partitions_error),
]
