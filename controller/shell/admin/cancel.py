"""KIP-236 cancellation through the admin API: CancelReassignments (10005), and
:func:`cancel_partitions`, which AlterPartitionReassignments (45) calls for null replicas.

A cancel is an event on the active controller's one queue (``active.inbox.queue``), handled by
the engine like any other (the algorithm is controller.core.cancel). The request is answered only
after the step's ZooKeeper writes landed - the shell resolves the future it carries then - so
an acknowledged cancel is never lost.

CancelReassignments, step by step:

 1. ``partitions`` null: every pending and running reassignment; else the listed ones (a
    topic name that is not valid, or a negative partition, is answered INVALID_REQUEST for
    that partition without reaching the controller).
 2. Hand the cancel to the controller and wait up to ``timeout_ms`` (REQUEST_TIMED_OUT as a
    whole if it was not recorded by then; NOT_CONTROLLER if the writes could not land and
    this instance is no longer the controller).
 3. Per partition, the engine's result: 0 cancelled (or already being cancelled),
    NO_REASSIGNMENT_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION, or a KIP-236 skip with its reason
    (controller.core.cancel lists the codes).

``validate_only`` reports what would be cancelled and changes nothing.

    results = await cancel_partitions(ctx, [("t", 0), ("t", 1)])
    results[("t", 0)]            # (ErrorCode.NONE, None)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from controller.core.events import CancelRequested
from controller.shell.active import CancelNotRecorded
from controller.shell.admin.base import AdminContext, Api, ApiError
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import paths

DEFAULT_TIMEOUT_MS = 60_000  # the request spec's default
# A cancel waits at least this long: long enough for one step and its flush on a loaded
# machine, so a client's tiny timeout does not turn a cancel that is about to land into a
# timeout (a timed-out cancel may still be taken: the client must --verify).
MIN_WAIT_S = 1.0

Result = tuple[ErrorCode, str | None]


def _check(tp) -> str | None:
    topic, partition = tp
    try:
        paths.validate_topic_name(topic)
    except (ValueError, TypeError) as e:
        return f"invalid topic name {topic!r}: {e}"
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        return f"invalid partition {partition!r} of topic {topic!r}"
    return None


async def cancel_partitions(
    ctx: AdminContext,
    partitions: Iterable[tuple[str, int]] | None,
    *,
    validate_only: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000,
    withdraw_any: bool = False,
) -> dict[tuple[str, int], Result]:
    """Cancel the reassignments of ``partitions`` (None: every one); per-partition results.
    ``withdraw_any``: an unstarted entry without ``original_replicas`` is withdrawn, not
    skipped (KIP-455's door; controller.core.cancel step 1).

    Raises NotController on a standby, ApiError(REQUEST_TIMED_OUT) when the controller did not
    record the cancel within ``timeout_s``, ApiError(NOT_CONTROLLER) when its writes failed.
    """
    active = ctx.require_active()
    results: dict[tuple[str, int], Result] = {}
    wanted: tuple | None = None
    if partitions is not None:
        good = []
        for tp in partitions:
            tp = tuple(tp)
            reason = _check(tp) if len(tp) == 2 else f"not a (topic, partition) pair: {tp!r}"
            if reason is None:
                good.append(tp)
            else:
                results[tp] = (ErrorCode.INVALID_REQUEST, reason)
        if not good:
            return results
        wanted = tuple(dict.fromkeys(good))
    future = asyncio.get_running_loop().create_future()
    active.inbox.queue.put_nowait(CancelRequested(wanted, future, "api", validate_only, withdraw_any=withdraw_any))
    try:
        async with asyncio.timeout(max(timeout_s, MIN_WAIT_S)):
            answered = await future
    except TimeoutError:
        raise ApiError(
            ErrorCode.REQUEST_TIMED_OUT,
            "the controller did not record the cancellation in time; it may still be taken: check with --verify",
        ) from None
    except CancelNotRecorded as e:
        raise ApiError(ErrorCode.NOT_CONTROLLER, str(e)) from None
    results.update(answered)
    return results


# ---- CancelReassignments (10005) -------------------------------------------------------------


def _grouped(results: dict[tuple[str, int], Result]) -> list[dict]:
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), (code, message) in sorted(results.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        by_topic.setdefault(topic, []).append(
            {"partition_id": partition, "error_code": int(code), "error_message": message}
        )
    return [{"topic": topic, "partitions": parts} for topic, parts in by_topic.items()]


async def handle_cancel(ctx: AdminContext, version: int, body: dict) -> dict:
    topics = body.get("partitions")
    partitions = None
    if topics is not None:
        partitions = [(t.get("topic"), p) for t in topics for p in t.get("partition_ids") or []]
        if not partitions:
            raise ApiError(ErrorCode.INVALID_REQUEST, "no partitions listed (send null partitions to cancel every one)")
    timeout_ms = body.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if timeout_ms is None or timeout_ms <= 0:
        timeout_ms = DEFAULT_TIMEOUT_MS
    results = await cancel_partitions(
        ctx, partitions, validate_only=bool(body.get("validate_only")), timeout_s=timeout_ms / 1000
    )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": _grouped(results)}


def cancel_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "results": []}


APIS = [
    Api(ApiKey.CANCEL_REASSIGNMENTS, "CancelReassignments", 0, 1, controller_only=True, handle=handle_cancel,
        error_response=cancel_error),
]
