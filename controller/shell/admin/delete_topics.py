"""DeleteTopics (20, KIP-4), every version Kafka 3.x defines (0-6): marks topics for deletion
as Kafka's tools do (``/admin/delete_topics/T``); the controller deletes them
(controller.core.topic_deletion has the protocol and its table).

Active controller only. ``delete_topic_enable`` false refuses every topic at once, before
anything else (as Kafka does): TOPIC_DELETION_DISABLED, INVALID_REQUEST for v0-2 (which
predate that code). Then, v6, a topic given by both name and a non-zero id fails the whole
request with INVALID_REQUEST, nothing marked (Kafka: "Topic name and topic ID can not both be
specified."). Otherwise per topic, in request order:

 1. v6 by id only (name null): the id is looked up in the topic ids the controller holds (Kafka
    2.8+ ids, from the topic znodes: Kafka's ZooKeeper-mode brokers ask their controller's
    context), unknown -> UNKNOWN_TOPIC_ID; found, the topic is taken by its name from here on,
    and the answer names it only if DESCRIBE on it is allowed (else name null and
    TOPIC_AUTHORIZATION_FAILED: Kafka does not tell the name of a topic one may not see). A name
    given (or found) twice -> INVALID_REQUEST; with ACLs enforced, DELETE on the topic (a cluster
    grant does not count, as in Kafka), else TOPIC_AUTHORIZATION_FAILED; an illegal name or a
    topic that does not exist -> UNKNOWN_TOPIC_OR_PARTITION (Kafka's answer).
 2. The rest is an event of the active controller (controller.core.topic_requests, one writer):
    a topic it does not know (nor ZooKeeper, read in the step), or whose deletion it already
    started -> UNKNOWN_TOPIC_OR_PARTITION (Kafka's brokers drop such a topic from their metadata);
    the marker is written first in the step's flush, fenced by the controller epoch (the parent
    with it if missing; a marker a tool wrote that the controller has not taken yet is a
    deletion under way: success), and the deletion starts in the same step. Answered once that
    landed.
 3. A topic with reassignments running or pending: they are cancelled by the controller before
    its replicas are deleted; the answer says how many (``error_message``, v5+, with NONE) and
    the log too.
 4. ``timeout_ms`` > 0: wait until the controller deleted the topic's znodes (every replica
    gone), else REQUEST_TIMED_OUT (the deletion goes on, as in Kafka: a replica on a broker
    that is down is deleted when it comes back). ``timeout_ms`` <= 0: REQUEST_TIMED_OUT at
    once for every topic marked (Kafka's ZooKeeper-mode answer, ``base.no_wait_answers``).

    # kafka-python
    admin.delete_topics(["orders"], timeout_ms=10_000)
"""

from __future__ import annotations

from controller.core import acl
from controller.core.events import TopicsRequested
from controller.shell.admin.base import AdminContext, Api, allows_on_topic, no_wait_answers, take_event
from controller.shell.admin_events import Seen
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from znodes import paths

MIN_WAIT_S = 1.0  # a request waits at least this long for the controller to take it


def _names(version: int, body: dict) -> list[tuple[str | None, object]]:
    if version >= 6:
        return [(t.get("name"), t.get("topic_id") or ZERO_UUID) for t in body.get("topics") or []]
    return [(n, ZERO_UUID) for n in body.get("topic_names") or []]


def _result(name, topic_id, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"name": name, "topic_id": topic_id, "error_code": int(code), "error_message": message}


async def handle_delete(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    asked = _names(version, body)
    if not ctx.config.delete_topic_enable:
        # Step 0, as Kafka: the whole request, before anything else is looked at; versions
        # before TOPIC_DELETION_DISABLED existed (v0-2) get INVALID_REQUEST.
        code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
        return {"throttle_time_ms": 0, "responses": [
            _result(name, topic_id, code, "topic deletion is disabled (delete_topic_enable)") for name, topic_id in asked]}
    if any(name is not None and topic_id != ZERO_UUID for name, topic_id in asked):
        return delete_error(version, body, ErrorCode.INVALID_REQUEST, "topic name and topic id can not both be given")
    early: dict[int, dict] = {}
    resolved: list[tuple[str | None, object]] = []
    for i, (name, topic_id) in enumerate(asked):
        if name is None:
            name = active.state.topic_name_for_id(topic_id)
            if name is None:
                early[i] = _result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, f"no topic has the id {topic_id}")
            elif not await allows_on_topic(ctx, acl.DESCRIBE, name):
                early[i] = _result(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "DESCRIBE is not allowed")
        resolved.append((name, topic_id))
    asked = resolved
    counts: dict = {}
    for i, (name, _) in enumerate(asked):
        if i not in early:
            counts[name] = counts.get(name, 0) + 1
    wanted: list[str] = []
    for i, (name, topic_id) in enumerate(asked):
        if i in early:
            continue
        if counts[name] > 1:
            early[i] = _result(name, topic_id, ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once")
        elif not await allows_on_topic(ctx, acl.DELETE, name):
            early[i] = _result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "DELETE is not allowed")
        else:
            try:
                paths.validate_topic_name(name)
            except ValueError as e:
                early[i] = _result(name, topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(e))
                continue
            wanted.append(name)
    timeout_s = body.get("timeout_ms", 0) / 1000
    with Seen(active.deleted_listeners) as deleted:
        taken = {}
        if wanted:
            taken = (await take_event(ctx, TopicsRequested("delete", tuple(wanted)), max(timeout_s, MIN_WAIT_S))).results
        results = [early[i] if i in early else _result(name, topic_id, *taken[name]) for i, (name, topic_id) in enumerate(asked)]
        accepted = {out["name"] for out in results if out["error_code"] == 0 and out["name"] in taken}
        if accepted and timeout_s > 0:  # step 4: every replica gone, or REQUEST_TIMED_OUT
            missing = await deleted.wait_for(accepted, timeout_s)
            for out in results:
                if out["name"] in missing and out["error_code"] == 0:
                    out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                    out["error_message"] = (f"topic {out['name']!r} is being deleted: some replica was not deleted "
                                            f"within {body.get('timeout_ms')} ms (a broker down gets it on its return)")
    no_wait_answers(results, body)
    return {"throttle_time_ms": 0, "responses": results}


def delete_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "responses": [_result(n, i, code, message) for n, i in _names(version, body)]}


APIS = [
    Api(ApiKey.DELETE_TOPICS, "DeleteTopics", 0, 6, controller_only=True, handle=handle_delete, error_response=delete_error),
]
