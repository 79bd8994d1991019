"""AlterPartitionReassignments (45, KIP-455): Kafka's own door for starting and cancelling
reassignments, so standard admin clients (kafka-python, Kafka's Admin) work unchanged.

 1. Group the request: a topic or partition named twice -> INVALID_REQUEST for it.
 2. Non-null replicas: an event of the active controller (controller.shell.admin_events), which
    checks them like Kafka against its state (unknown topic or partition ->
    UNKNOWN_TOPIC_OR_PARTITION; empty, duplicate or unregistered brokers ->
    INVALID_REPLICA_ASSIGNMENT) and adds the valid ones to ``/admin/reassign_partitions`` with
    their ``original_replicas``, merged with what is running (controller.core.admin_requests),
    answering once that landed. A partition already moving takes the new
    target as Kafka's controller does: in place while it replicates (controller.core.engine step
    4b; a target equal to its original replicas cancels it), after it once it is completing
    or being rolled back. No throttle is set (KIP-455 has none; use KIP-179's
    APIs).
 2a. Version 1+ (KIP-860) with ``allow_replication_factor_change`` false: a target whose
    replica count differs from the partition's replication factor (its original replicas' count
    while it moves) -> INVALID_REPLICATION_FACTOR; the response echoes the flag.
 3. Null replicas: cancel that partition's reassignment (KIP-236 through
    controller.shell.admin.cancel); a partition that is not moving gets NO_REASSIGNMENT_IN_PROGRESS.
 4. Answer per partition; a failure of the whole request (a standby: NOT_CONTROLLER) is set
    both request-wide and on every partition.
"""

from __future__ import annotations

from controller.core.events import ReassignRequested
from controller.shell.admin.base import AdminContext, Api
from controller.shell.admin.cancel import cancel_partitions
from controller.shell.admin.kip179 import take
from controller.shell.admin.submit import OK, by_topic, group_partitions
from controller.shell.journal import ALTER_PARTITION_REASSIGNMENTS as ALTER_PARTITION_REASSIGNMENTS_DOOR
from controller.shell.journal import count_refused
from protocol import ApiKey
from protocol.errors import ErrorCode


def _order(body: dict):
    return group_partitions(body["topics"] or [], "name", "partitions", "partition_index", "replicas")


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
    if targets:
        event = ReassignRequested(tuple(targets.items()), ALTER_PARTITION_REASSIGNMENTS_DOOR,
                                  keep_replication_factor=not allow_rf_change)
        results.update(await take(ctx, event, body["timeout_ms"]))
    count_refused(active, ALTER_PARTITION_REASSIGNMENTS_DOOR, results, targets)
    if cancels:
        timeout_s = max(body["timeout_ms"], 0) / 1000
        results.update(await cancel_partitions(ctx, cancels, timeout_s=timeout_s))
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
