"""AlterPartitionReassignments (45, KIP-455): Kafka's own door for starting and cancelling
reassignments, so standard admin clients (kafka-python, Kafka's Admin) work unchanged.

 1. Group the request per partition: a partition named twice -> INVALID_REQUEST for it (Kafka's
    ZooKeeper-mode KafkaApis keeps the last copy; two targets for one partition in one request
    are taken for a client bug here). A topic listed twice with different partitions is taken
    whole, as Kafka does (its handler flattens the topics into one map).
 2. Non-null replicas: an event of the active controller (controller.shell.admin_events), which
    checks them like Kafka against its state (unknown topic, one being deleted, or unknown
    partition -> UNKNOWN_TOPIC_OR_PARTITION; empty, duplicate, negative or unregistered brokers
    -> INVALID_REPLICA_ASSIGNMENT, controller.core.validation) and adds the valid ones to
    ``/admin/reassign_partitions`` with their ``original_replicas``, merged with what is running
    (controller.core.admin_requests), answering once that landed. A partition already moving
    takes the new target as Kafka's controller does: in place while it replicates
    (controller.core.engine step 4b; a target equal to its original replicas cancels it), after
    it once it is completing or being rolled back. A target equal to the partition's replicas
    is NONE and changes nothing. No throttle is set (KIP-455 has none; use KIP-179's APIs).
 2a. Version 1+ (KIP-860) with ``allow_replication_factor_change`` false: a target whose
    replica count differs from the partition's replication factor (its original replicas' count
    while it moves) -> INVALID_REPLICATION_FACTOR; the response echoes the flag.
 3. Null replicas: cancel that partition's reassignment (KIP-236 through
    controller.shell.admin.cancel); a partition that is not moving gets NO_REASSIGNMENT_IN_PROGRESS.
 4. ``timeout_ms`` bounds the whole request's wait for the controller (targets, then cancels, one
    deadline; at least a second per half, controller.shell.admin.kip179.MIN_WAIT_S). Zero or less
    is the spec's default, 60 s: Kafka's ZooKeeper-mode controller ignores the field and always
    answers once the request was processed, so a client sending 0 expects real answers.
 5. Answer per partition. A half that fails as a whole without being refused (REQUEST_TIMED_OUT:
    it may still be taken; an unexpected error) answers that code on its own partitions only, so
    the other half's answers are kept. NOT_CONTROLLER (a standby, or deposed mid-request) is the
    whole request's, set both request-wide and on every partition, as Kafka's error response
    (``AlterPartitionReassignmentsRequest.getErrorResponse``) does.
"""

from __future__ import annotations

import asyncio

from controller.core.events import ReassignRequested
from controller.shell.admin.base import AdminContext, Api, ApiError
from controller.shell.admin.cancel import cancel_partitions
from controller.shell.admin.kip179 import take
from controller.shell.admin.submit import OK, Result, by_topic, group_partitions
from controller.shell.journal import ALTER_PARTITION_REASSIGNMENTS as ALTER_PARTITION_REASSIGNMENTS_DOOR
from controller.shell.journal import count_refused
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes.values import TopicPartition

DEFAULT_TIMEOUT_MS = 60_000  # the request spec's default for timeout_ms


def _order(body: dict):
    """Step 1: (partitions in request order, replicas per valid partition, refusals)."""
    return group_partitions(body["topics"] or [], "name", "partitions", "partition_index", "replicas", topic_once=False)


def _wait_ms(body: dict) -> int:
    """Step 4: how long the request may wait for the controller, in ms."""
    timeout_ms = body.get("timeout_ms")
    return timeout_ms if isinstance(timeout_ms, int) and timeout_ms > 0 else DEFAULT_TIMEOUT_MS


def _half_failed(e: ApiError, partitions) -> dict[TopicPartition, Result]:
    """Step 5: a half's request-wide failure as its partitions' results (NOT_CONTROLLER stays
    the whole request's: the client must find the new controller and send it all again)."""
    if e.code == ErrorCode.NOT_CONTROLLER:
        raise e
    return {tp: (e.code, e.message) for tp in partitions}


def _response(order, results, code: ErrorCode = ErrorCode.NONE, message: str | None = None, *,
              allow_rf_change: bool = True) -> dict:
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": allow_rf_change,  # v1+; v0 has no such field
        "error_code": int(code),
        "error_message": message,
        "responses": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "error_code": int(r[0]), "error_message": r[1]} for p, r in parts
                ],
            }
            for topic, parts in by_topic(order, results)
        ],
    }


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order, _, _ = _order(body)
    return _response(order, {tp: (code, message) for tp in order}, code, message,
                     allow_rf_change=_allow_rf_change(version, body))


def _allow_rf_change(version: int, body: dict) -> bool:
    """KIP-860's flag: version 0 has none and may always change the replication factor."""
    return version < 1 or bool(body.get("allow_replication_factor_change", True))


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    order, values, results = _order(body)
    allow_rf_change = _allow_rf_change(version, body)
    targets = {tp: tuple(r) for tp, r in values.items() if r is not None}
    cancels = [tp for tp, r in values.items() if r is None]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _wait_ms(body) / 1000
    if targets:
        event = ReassignRequested(tuple(targets.items()), ALTER_PARTITION_REASSIGNMENTS_DOOR,
                                  keep_replication_factor=not allow_rf_change)
        try:
            answered = await take(ctx, event, _wait_ms(body))
        except ApiError as e:
            answered = _half_failed(e, targets)
        else:
            count_refused(active, ALTER_PARTITION_REASSIGNMENTS_DOOR, answered, targets)
        results.update(answered)
    if cancels:
        try:
            # The targets' wait came out of the same deadline (cancel_partitions waits at least
            # its own minimum, so a cancel is never refused unseen).
            # Kafka's cancel rolls back to the replicas before the move: an unstarted move is
            # withdrawn whether or not its entry says what they were (no KIP-236 skip 1).
            answered = await cancel_partitions(ctx, cancels, timeout_s=max(deadline - loop.time(), 0.0),
                                               withdraw_any=True)
        except ApiError as e:
            answered = _half_failed(e, cancels)
        results.update(answered)
    for tp in order:
        results.setdefault(tp, OK)
    return _response(order, results, allow_rf_change=allow_rf_change)


APIS = [
    Api(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        "AlterPartitionReassignments",
        0,
        1,
        controller_only=True,
        handle=handle_alter,
        error_response=alter_error,
    )
]
