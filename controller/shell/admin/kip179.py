"""KIP-179's three write APIs: ReassignPartitions (10000), AlterInterbrokerThrottledRates
(10001), AlterInterbrokerThrottledReplicas (10002). Controller-only.

Each request is an event of the active controller (one writer, controller.shell.admin_events):
this module decodes it, refuses what needs no state (a throttle <= 0, an unknown movement
strategy, a topic or partition named twice), hands the rest to the engine and encodes its
answer. The algorithms - validation against the controller's state, the throttle configs and
removal znodes, the entries of ``/admin/reassign_partitions``, and the order of their writes
that makes any prefix safe - are controller.core.admin_requests. A request is answered once its
writes landed; a controller deposed before that answers NOT_CONTROLLER.

ReassignPartitions: ``throttle <= 0`` fails every partition with INVALID_THROTTLE (1001);
``throttle = Long.MAX_VALUE`` means unthrottled. A topic or partition named twice ->
INVALID_REQUEST for it. v0 refuses every partition with REASSIGNMENT_IN_PROGRESS (60) while
``/admin/reassign_partitions`` exists; v1 adds to it. ``timeout`` bounds the wait for the
controller (REQUEST_TIMED_OUT, the request may still be taken: check with --verify).

AlterInterbrokerThrottledRates / AlterInterbrokerThrottledReplicas: a broker, topic or
partition named twice -> INVALID_REQUEST; the rest is the engine's (controller.core.admin_requests).
"""

from __future__ import annotations

import logging

from controller.core import move_order
from controller.core.events import ReassignRequested, ThrottleRequested
from controller.shell.admin.base import AdminContext, Api, take_event
from controller.shell.admin.submit import OK, Result, by_topic, group_partitions
from controller.shell.journal import REASSIGN_PARTITIONS as REASSIGN_PARTITIONS_DOOR
from controller.shell.journal import count_refused
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes.values import TopicPartition

log = logging.getLogger("reassignd.controller")

# KIP-179: a throttle of Long.MAX_VALUE means "not throttled".
UNTHROTTLED = 2**63 - 1


# ---- shared -----------------------------------------------------------------------------------

# A request waits at least this long for the controller, whatever its timeout says: one step and
# its flush on a loaded machine (a timed-out request may still be taken: check with --verify).
MIN_WAIT_S = 1.0
DEFAULT_TIMEOUT_MS = 30_000  # the request specs' default


def _partition_results(order, results, topic_key, parts_key, error_key_fields) -> list[dict]:
    pid, code, msg = error_key_fields
    return [
        {topic_key: topic, parts_key: [{pid: p, code: int(r[0]), msg: r[1]} for p, r in parts]}
        for topic, parts in by_topic(order, results)
    ]


async def take(ctx: AdminContext, event, timeout_ms) -> dict:
    """Hand ``event`` to the active controller (``timeout`` in ms, the request's field); its
    per-entity results once its writes landed."""
    timeout_s = max((timeout_ms if timeout_ms and timeout_ms > 0 else DEFAULT_TIMEOUT_MS) / 1000, MIN_WAIT_S)
    return (await take_event(ctx, event, timeout_s)).results


# ---- ReassignPartitions ----------------------------------------------------------------------


def _reassign_order(body: dict) -> tuple[list[TopicPartition], dict, dict[TopicPartition, Result]]:
    return group_partitions(body["topic_reassignments"] or [], "topic", "partition_reassignments", "partition_id", "broker")


def _reassign_response(order, results) -> dict:
    return {
        "throttle_time_ms": 0,
        "reassign_partition_result": _partition_results(
            order, results, "topic", "partition_error", ("partition_id", "error_code", "error_message")
        ),
    }


def reassign_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order, _, _ = _reassign_order(body)
    return _reassign_response(order, {tp: (code, message) for tp in order})


async def handle_reassign(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    order, values, results = _reassign_order(body)
    throttle = body["throttle"]
    if throttle <= 0:
        message = f"throttle must be > 0 bytes/s (Long.MAX_VALUE for none), got {throttle}"
        return _reassign_response(order, {tp: (ErrorCode.INVALID_THROTTLE, message) for tp in order})
    try:
        # Checked here, not only by the tool: the order is the operator's choice, so a name the
        # controller does not know is refused, not silently dropped.
        strategies = move_order.parse(body["movement_strategies"]) if body.get("movement_strategies") else ()
    except move_order.StrategyError as e:
        return _reassign_response(order, {tp: (ErrorCode.INVALID_REQUEST, str(e)) for tp in order})
    targets = {tp: tuple(replicas) for tp, replicas in values.items()}
    if targets:
        event = ReassignRequested(
            tuple(targets.items()), REASSIGN_PARTITIONS_DOOR, create_only=version == 0,
            skip_isr_check=bool(body.get("skip_isr_check")), movement_strategies=strategies,
            throttle=None if throttle == UNTHROTTLED else throttle, remove_throttle=bool(body["remove_throttle"]),
            validate_only=bool(body["validate_only"]),
        )
        results.update(await take(ctx, event, body.get("timeout")))
    if not body["validate_only"]:
        count_refused(active, REASSIGN_PARTITIONS_DOOR, results, values)
    return _reassign_response(order, results)


# ---- AlterInterbrokerThrottledRates -----------------------------------------------------------


def _rates_response(order: list[int], results: dict[int, Result]) -> dict:
    seen: set[int] = set()
    out = []
    for b in order:
        if b in seen:
            continue
        seen.add(b)
        code, message = results.get(b, OK)
        out.append({"broker_id": b, "error_code": int(code), "error_message": message})
    return {"broker_error": out}


def rates_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order = [t["broker_id"] for t in body["broker_throttles"] or []]
    return _rates_response(order, {b: (code, message) for b in order})


async def handle_rates(ctx: AdminContext, version: int, body: dict) -> dict:
    ctx.require_active()
    entries = body["broker_throttles"] or []
    order = [e["broker_id"] for e in entries]
    results: dict[int, Result] = {}
    counts: dict[int, int] = {}
    for b in order:
        counts[b] = counts.get(b, 0) + 1
    rates: dict[int, tuple[int, int]] = {}
    for e in entries:
        b = e["broker_id"]
        if counts[b] > 1:
            results[b] = (ErrorCode.INVALID_REQUEST, f"broker {b} appears more than once in the request")
        else:
            rates[b] = (e["leader_rate"], e["follower_rate"])
    if rates:
        event = ThrottleRequested("brokers", rates, bool(body["remove_throttle"]), bool(body["validate_only"]))
        results.update(await take(ctx, event, body.get("timeout")))
    return _rates_response(order, results)


# ---- AlterInterbrokerThrottledReplicas --------------------------------------------------------


def _replicas_order(body: dict):
    return group_partitions(body["topic_throttles"] or [], "topic", "partition_throttles", "partition_id", "broker_id")


def _replicas_response(order, results) -> dict:
    return {
        "topic_errors": _partition_results(
            order, results, "topic", "partition_errors", ("partition_id", "error_code", "error_message")
        )
    }


def replicas_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order, _, _ = _replicas_order(body)
    return _replicas_response(order, {tp: (code, message) for tp in order})


async def handle_replicas(ctx: AdminContext, version: int, body: dict) -> dict:
    ctx.require_active()
    order, values, results = _replicas_order(body)
    wanted = {tp: tuple(brokers) for tp, brokers in values.items()}
    if wanted:
        event = ThrottleRequested("topics", wanted, bool(body["remove_throttle"]), bool(body["validate_only"]))
        results.update(await take(ctx, event, body.get("timeout")))
    return _replicas_response(order, results)


APIS = [
    Api(ApiKey.REASSIGN_PARTITIONS, "ReassignPartitions", 0, 1, controller_only=True, handle=handle_reassign, error_response=reassign_error),
    Api(ApiKey.ALTER_INTERBROKER_THROTTLED_RATES, "AlterInterbrokerThrottledRates", 0, 1, controller_only=True, handle=handle_rates, error_response=rates_error),
    Api(ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS, "AlterInterbrokerThrottledReplicas", 0, 1, controller_only=True, handle=handle_replicas, error_response=replicas_error),
]
