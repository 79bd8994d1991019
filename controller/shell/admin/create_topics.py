"""CreateTopics (19, KIP-4), every version Kafka 3.x defines (0-7): the request half of
controller.core.topic_creation, whose docstring has the algorithm, the errors and the table.

Active controller only (a standby answers NOT_CONTROLLER on every topic). Per request:

 0. Each entry of a name given twice: INVALID_REQUEST "Found multiple entries for this topic."
    (Kafka 2.4+'s message), before authorization; that name is not created.
 1. With ACLs enforced: CREATE on the cluster, or on the topic (Kafka's rule), else that topic
    gets TOPIC_AUTHORIZATION_FAILED. v5+: without DESCRIBE_CONFIGS on the topic its answer
    carries no configs, partition count or replication factor, and ``topic_config_error_code``
    TOPIC_AUTHORIZATION_FAILED (Kafka's rule).
 2. The rest is an event of the active controller (controller.core.topic_requests, one writer):
    checked against ZooKeeper's topic names and deletion markers (read in the step that takes
    it: the controller's memory may lag a tool's creation), the live brokers with racks and every
    broker's replicas and preferred leaders (topics accepted earlier in the step counted). Unless
    ``validate_only``, each topic gets its id here (KIP-516, ``znodes.values.new_topic_id``:
    Kafka's Uuid.randomUuid), once per request, so a request taken again after a conflict
    (controller.shell.admin_events) writes the same id.
 3. ``plan_topics`` (steps 1-2). ``validate_only``: answer now, nothing written.
 4. Per accepted topic, its config and topic znodes first in the step's flush, fenced by the
    controller epoch, and its partitions' states after them in the same flush; answered once
    that landed (NOT_CONTROLLER if it did not).
 5. ``timeout_ms`` > 0: wait (up to it) for partitions left without a leader (no live replica
    yet) to get one (engine step 10, ``Step.created``); still waiting -> REQUEST_TIMED_OUT for
    that topic (its creation goes on, as in Kafka). ``timeout_ms`` <= 0: every topic created
    is answered REQUEST_TIMED_OUT at once, as Kafka's ZooKeeper-mode brokers answer
    (``base.no_wait_answers``).

Responses: v1+ carry messages; v5+ the partition count, replication factor and the topic's
configs (every Kafka topic config, with its source) - a refused topic -1, -1 and no configs,
one answered REQUEST_TIMED_OUT (under way) too, as Kafka resets every answer but NONE
(``_reset_failed``); v7 the topic id written in its topic znode (version 3, as Kafka 2.8+
writes it) for a topic created, whether answered NONE or REQUEST_TIMED_OUT (under way), and the
zero UUID for one refused or only validated. As Kafka's ZooKeeper-mode brokers
(ZkAdminManager.populateIds fills only the answers that may show configs), the id goes with
the configs: without DESCRIBE_CONFIGS on the topic it is the zero UUID too.

    # kafka-python
    admin.create_topics([NewTopic("orders", num_partitions=12, replication_factor=3)], timeout_ms=10_000)
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from controller.core import acl
from controller.core.events import TopicsRequested
from controller.core.topic_creation import Planned, TopicRequest
from controller.core.topic_policy import TopicPolicy
from controller.shell.admin.base import AdminContext, Api, allows_on_topic, no_wait_answers, take_event
from controller.shell.admin.configs import read_configs
from controller.shell.admin_events import Seen
from protocol import ApiKey
from protocol.describe_configs import DYNAMIC_TOPIC_CONFIG, config_entries
from protocol.errors import ErrorCode
from protocol.primitives import ZERO_UUID
from znodes import paths
from znodes.values import new_topic_id, topic_uuid

# Kafka's message for each entry of a name given twice (KafkaApis, 2.4+).
DUPLICATE = "Found multiple entries for this topic."

# A request waits at least this long for the controller to take it (one step on a loaded machine).
MIN_WAIT_S = 1.0


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
        "topic_id": topic_uuid(plan.topic_id) if plan is not None else ZERO_UUID,  # zero: refused or validated only
        "error_code": int(code),
        "error_message": message,
        "topic_config_error_code": 0,
        "num_partitions": len(plan.assignment) if plan is not None else -1,
        "replication_factor": plan.replication_factor if plan is not None else -1,
        "configs": _configs(plan.configs, defaults or {}) if plan is not None else None,
    }


async def handle_create(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    requests = _requests(body)
    timeout_s = body.get("timeout_ms", 60_000) / 1000
    validate_only = version >= 1 and bool(body.get("validate_only"))
    # A name given twice is INVALID_REQUEST whoever asks, before authorization, with Kafka's
    # message (KafkaApis.handleCreateTopicsRequest, 2.4+); it never reaches the controller.
    named = Counter(r.name for r in requests)
    twice = {name for name, n in named.items() if n > 1}
    denied = {r.name for r in requests
              if r.name not in twice and not await allows_on_topic(ctx, acl.CREATE, r.name, or_cluster=True)}
    # The broker defaults the new topics' configs fall back to (shown in v5+ answers).
    defaults = await _broker_defaults(ctx.store) if version >= 5 else {}
    allowed = [r for r in requests if r.name not in denied and r.name not in twice]
    results: dict[int, dict] = {}
    waiting: dict[str, set] = {}
    with Seen(active.created_listeners) as created:
        taken = {}
        if allowed:
            # Drawn here, once (the engine draws nothing): every retake of the event has the same ids.
            topics = tuple(r if validate_only else dataclasses.replace(r, topic_id=new_topic_id()) for r in allowed)
            event = TopicsRequested("create", topics, validate_only, TopicPolicy.from_config(getattr(ctx, "config", None)))
            taken = (await take_event(ctx, event, max(timeout_s, MIN_WAIT_S))).results
        answers = iter(taken[i] for i in range(len(allowed)))
        for i, r in enumerate(requests):
            if r.name in twice:
                results[i] = _result(r.name, ErrorCode.INVALID_REQUEST, DUPLICATE)
                continue
            if r.name in denied:
                results[i] = _result(r.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "CREATE is not allowed")
                continue
            code, message, plan, left = next(answers)
            results[i] = _result(r.name, code, message, plan, defaults)
            if left:
                waiting[r.name] = {(r.name, p) for p in left}
        if waiting and timeout_s > 0:  # step 5: every partition with a leader, or REQUEST_TIMED_OUT
            missing = await created.wait_for(set().union(*waiting.values()), timeout_s)
            for i, out in results.items():
                if out["error_code"] == 0 and waiting.get(out["name"], set()) & missing:
                    out["error_code"] = int(ErrorCode.REQUEST_TIMED_OUT)
                    out["error_message"] = (f"topic {out['name']!r} is being created: not every partition had a "
                                            f"leader within {body.get('timeout_ms')} ms")
    no_wait_answers(results.values(), body, validate_only)
    if version >= 5:
        await _hide_configs(ctx, results.values())
        sent = [results[i] for i, r in enumerate(requests) if r.name not in twice and r.name not in denied]
        _reset_failed(sent)
    return {"throttle_time_ms": 0, "topics": [results[i] for i in range(len(requests))]}


async def _hide_configs(ctx: AdminContext, results) -> None:
    """Kafka's rule for v5+ answers: a topic's configs, partition count and replication factor
    are shown only to a principal with DESCRIBE_CONFIGS on the topic (the cluster's does not
    count); otherwise ``topic_config_error_code`` is TOPIC_AUTHORIZATION_FAILED. The v7 topic
    id too: ZkAdminManager.populateIds fills only those answers."""
    for out in results:
        if not await allows_on_topic(ctx, acl.DESCRIBE_CONFIGS, out["name"]):
            out.update(topic_config_error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), configs=None,
                       num_partitions=-1, replication_factor=-1, topic_id=ZERO_UUID)


def _reset_failed(sent) -> None:
    """Kafka's "Reset any configs in the response if Create failed" (KafkaApis'
    handleCreateTopicsResults): a topic the controller was asked to create whose answer is not
    NONE - REQUEST_TIMED_OUT included, although its creation goes on - carries no plan: -1, -1,
    no configs, and ``topic_config_error_code`` NONE (set after the DESCRIBE_CONFIGS rule, so
    it wins). Kafka sends an empty list where this sends null: both read as "none". The topic id
    stays, as Kafka's reset leaves it: a topic under way has its id (a refused one has none)."""
    for out in sent:
        if out["error_code"] != ErrorCode.NONE:
            out.update(num_partitions=-1, replication_factor=-1, configs=None, topic_config_error_code=0)


def create_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "topics": [_result(t["name"], code, message) for t in body.get("topics") or []]}


APIS = [
    Api(ApiKey.CREATE_TOPICS, "CreateTopics", 0, 7, controller_only=True, handle=handle_create, error_response=create_error),
]
