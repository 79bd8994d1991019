"""CreatePartitions (37, KIP-195), versions 0-3: add partitions to existing topics, placed like
CreateTopics' (controller.core.placement) or as given. The checks are
controller.core.topic_creation.plan_partitions (Kafka's errors).

Active controller only. Per topic, in request order:

 1. A topic named twice -> INVALID_REQUEST "Duplicate topic in request." for each entry (Kafka
    answers the name once: its response is a map by name; a client matching by name reads
    both alike); with ACLs enforced ALTER on the topic (a cluster grant does not count, as in
    Kafka), else TOPIC_AUTHORIZATION_FAILED; then ``plan_partitions``, in Kafka's order and
    with Kafka's messages: INVALID_TOPIC_EXCEPTION (queued for deletion),
    UNKNOWN_TOPIC_OR_PARTITION, REASSIGNMENT_IN_PROGRESS, INVALID_PARTITIONS (not an increase),
    POLICY_VIOLATION (the new total over ``topic_policy_max_partitions``),
    INVALID_REPLICA_ASSIGNMENT (unknown brokers, the number of lists, an empty list, a broker
    twice, a replication factor other than partition 0's), INVALID_REPLICATION_FACTOR.
 2. ``validate_only``: answer now.
 3. The rest is an event of the active controller (controller.core.topic_requests, one writer):
    the topic znode rewritten with the new partitions first in the step's flush, conditional
    on the zkVersion the controller holds and fenced by its epoch, and engine step 10 giving
    them their states, LeaderAndIsr and UpdateMetadata in the same flush - a controller failing
    after the topic znode's write leaves partitions the next one finishes at its election.
    Answered once that landed.
 4. ``timeout_ms`` > 0: wait until every new partition has a leader, else REQUEST_TIMED_OUT.
    ``timeout_ms`` <= 0: REQUEST_TIMED_OUT at once for every topic grown (Kafka's
    ZooKeeper-mode answer, ``base.no_wait_answers``).

    # kafka-python
    admin.create_partitions({"orders": NewPartitions(total_count=24)})
"""

from __future__ import annotations

from controller.core import acl
from controller.core.events import TopicsRequested
from controller.core.topic_creation import PartitionsRequest
from controller.core.topic_policy import TopicPolicy
from controller.shell.admin.base import AdminContext, Api, allows_on_topic, no_wait_answers, take_event
from controller.shell.admin_events import Seen
from protocol import ApiKey
from protocol.errors import ErrorCode

MIN_WAIT_S = 1.0  # a request waits at least this long for the controller to take it


def _result(name: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"name": name, "error_code": int(code), "error_message": message}


async def handle_create_partitions(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    topics = body.get("topics") or []
    counts: dict[str, int] = {}
    for t in topics:
        counts[t["name"]] = counts.get(t["name"], 0) + 1
    early: dict[int, dict] = {}
    asked: list[PartitionsRequest] = []
    for i, t in enumerate(topics):
        name = t["name"]
        if counts[name] > 1:
            early[i] = _result(name, ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")  # Kafka's text
        elif not await allows_on_topic(ctx, acl.ALTER, name):
            early[i] = _result(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "ALTER is not allowed")
        else:
            given = t.get("assignments")
            asked.append(PartitionsRequest(name, t["count"], None if given is None else tuple(tuple(a["broker_ids"] or ()) for a in given)))
    timeout_s = body.get("timeout_ms", 0) / 1000
    with Seen(active.created_listeners) as created:
        taken = {}
        if asked:
            event = TopicsRequested("partitions", tuple(asked), bool(body.get("validate_only")),
                                    TopicPolicy.from_config(getattr(ctx, "config", None)))
            taken = (await take_event(ctx, event, max(timeout_s, MIN_WAIT_S))).results
        results = [early[i] if i in early else _result(t["name"], *taken[t["name"]][:2]) for i, t in enumerate(topics)]
        waiting = {name: {(name, p) for p in answer[3]} for name, answer in taken.items() if answer[3]}
        if waiting and timeout_s > 0:  # step 4: every new partition with a leader, or REQUEST_TIMED_OUT
            missing = await created.wait_for(set().union(*waiting.values()), timeout_s)
            for out in results:
                if out["error_code"] == 0 and waiting.get(out["name"], set()) & missing:
                    out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                    out["error_message"] = f"the new partitions of {out['name']!r} did not all have a leader in time"
    no_wait_answers(results, body, bool(body.get("validate_only")))
    return {"throttle_time_ms": 0, "results": results}


def create_partitions_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "results": [_result(t["name"], code, message) for t in body.get("topics") or []]}


APIS = [
    Api(ApiKey.CREATE_PARTITIONS, "CreatePartitions", 0, 3, controller_only=True, handle=handle_create_partitions,
        error_response=create_partitions_error),
]
