"""DeleteTopics (20, KIP-4), every version Kafka 3.x defines (0-6): marks topics for deletion
as Kafka's tools do (``/admin/delete_topics/T``); the controller deletes them
(controller.core.topic_deletion has the protocol and its table).

Active controller only. ``delete_topic_enable`` false refuses every topic at once, before
anything else (as Kafka does): TOPIC_DELETION_DISABLED, INVALID_REQUEST for v0-2 (which
predate that code). Otherwise per topic, in request order:

 1. A name given twice -> INVALID_REQUEST; v6 by id only (name null) -> UNKNOWN_TOPIC_ID (topic
    znodes here carry no ids); with ACLs enforced, DELETE on the topic (a cluster grant does not count, as in Kafka), else
    TOPIC_AUTHORIZATION_FAILED; an illegal name or a topic that does not exist -> UNKNOWN_TOPIC_OR_PARTITION (Kafka's answer).
 2. The marker is created in a multi fenced by the controller epoch (the parent with it if
    missing); a marker already there is success (a deletion under way).
 3. A topic with reassignments running or pending: they are cancelled by the controller before
    its replicas are deleted; the answer says how many (``error_message``, v5+, with NONE) and
    the log too.
 4. ``timeout_ms`` > 0: wait until the controller deleted the topic's znodes (every replica
    gone), else REQUEST_TIMED_OUT (the deletion goes on, as in Kafka: a replica on a broker
    that is down is deleted when it comes back).

    # kafka-python
    admin.delete_topics(["orders"], timeout_ms=10_000)
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref

from controller.core import acl
from controller.shell.admin.base import AdminContext, Api, allows_on_topic
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from znodes import paths
from znodes.api import Create, MultiOpError, NodeExistsError
from znodes.reads import children_or_empty

log = logging.getLogger("reassignd.admin")



class _Deletions:
    """Per active controller: who waits for which topic to be gone."""

    def __init__(self, active):
        self.waiting: dict[str, list[asyncio.Future]] = {}
        active.deleted_listeners.append(self.deleted)

    def deleted(self, names) -> None:
        for name in names:
            for f in self.waiting.pop(name, ()):
                if not f.done():
                    f.set_result(None)


_DELETIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _names(version: int, body: dict) -> list[tuple[str | None, object]]:
    if version >= 6:
        return [(t.get("name"), t.get("topic_id") or ZERO_UUID) for t in body.get("topics") or []]
    return [(n, ZERO_UUID) for n in body.get("topic_names") or []]


def _result(name, topic_id, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"name": name, "topic_id": topic_id, "error_code": int(code), "error_message": message}


async def handle_delete(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = ctx.store
    asked = _names(version, body)
    if not ctx.config.delete_topic_enable:
        # Step 0, as Kafka: the whole request, before anything else is looked at; versions
        # before TOPIC_DELETION_DISABLED existed (v0-2) get INVALID_REQUEST.
        code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
        return {"throttle_time_ms": 0, "responses": [
            _result(name, topic_id, code, "topic deletion is disabled (delete_topic_enable)") for name, topic_id in asked]}
    counts: dict = {}
    for name, _ in asked:
        counts[name] = counts.get(name, 0) + 1
    deletions = _DELETIONS.get(active)
    if deletions is None:
        deletions = _DELETIONS[active] = _Deletions(active)
    existing = set(await children_or_empty(store, paths.TOPICS))
    parent = await store.exists(paths.DELETE_TOPICS) is not None
    results: list[dict] = []
    waits: dict[str, asyncio.Future] = {}
    for name, topic_id in asked:
        if name is None:
            results.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "topics here have no ids: name the topic"))
            continue
        if counts[name] > 1:
            results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once"))
            continue
        if not await allows_on_topic(ctx, acl.DELETE, name):
            results.append(_result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "DELETE is not allowed"))
            continue
        try:
            paths.validate_topic_name(name)
        except ValueError as e:
            results.append(_result(name, topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(e)))
            continue
        if name not in existing:
            results.append(_result(name, topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"))
            continue
        moving = sum(1 for tp in active.state.tasks if tp[0] == name)
        future = asyncio.get_running_loop().create_future()
        deletions.waiting.setdefault(name, []).append(future)
        ops = ([] if parent else [Create(paths.DELETE_TOPICS)]) + [Create(paths.delete_topic(name))]
        try:
            await store.fenced_multi(ops, active.epoch_zkversion)
            parent = True
        except MultiOpError as e:
            if not isinstance(e.cause, NodeExistsError):
                raise
            parent = True  # the marker (or the parent, raced) is there: under way
            if await store.exists(paths.delete_topic(name)) is None:
                await store.fenced_multi([Create(paths.delete_topic(name))], active.epoch_zkversion)
        message = None
        if moving:
            message = f"deleting {name!r} cancels the reassignment of {moving} partition(s) and removes their throttles"
            log.warning("%s", message)
        waits[name] = future
        results.append(_result(name, topic_id, ErrorCode.NONE, message))
    timeout_s = body.get("timeout_ms", 0) / 1000
    if waits and timeout_s > 0:
        deadline = time.monotonic() + timeout_s
        for name, future in waits.items():
            try:
                await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                for out in results:
                    if out["name"] == name and out["error_code"] == 0:
                        out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                        out["error_message"] = (f"topic {name!r} is being deleted: some replica was not deleted "
                                                f"within {body.get('timeout_ms')} ms (a broker down gets it on its return)")
    for name, future in waits.items():
        if not future.done():
            future.cancel()
            left = [f for f in deletions.waiting.get(name, ()) if f is not future]
            if left:
                deletions.waiting[name] = left
            else:
                deletions.waiting.pop(name, None)
    return {"throttle_time_ms": 0, "responses": results}


def delete_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "responses": [_result(n, i, code, message) for n, i in _names(version, body)]}


APIS = [
    Api(ApiKey.DELETE_TOPICS, "DeleteTopics", 0, 6, controller_only=True, handle=handle_delete, error_response=delete_error),
]
