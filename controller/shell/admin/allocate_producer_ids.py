"""AllocateProducerIds (67, v0; KIP-730): a broker asks the active controller for a block of
producer ids (controller.core.producer_ids has the rule and its worked table; the znode's format
is znodes.producer_ids). Kafka brokers of inter.broker.protocol.version 3.0+ send it instead of
writing ``/latest_producer_id_block`` themselves, and an idempotent producer - the default since
Kafka 3.0 - cannot start on a broker that has no block.

 1. Active controller only (a standby: NOT_CONTROLLER); CLUSTER_ACTION on the cluster
    (controller.shell.authorizer: only brokers hold it).
 2. ``/latest_producer_id_block`` is read (data and zkVersion), and a ProducerIdsRequested goes
    into the controller's queue: the engine decides the block and writes it in its flush (one
    writer; conditional on the version, fenced by the controller epoch).
 3. The answer, once the flush landed. A step whose writes fail (someone else wrote the znode)
    -> UNKNOWN_SERVER_ERROR, the controller resigned with the request queued -> NOT_CONTROLLER, no
    decision within MAX_WAIT_S -> REQUEST_TIMED_OUT: the broker asks again.

    {"broker_id": 2, "broker_epoch": 4294967340}
    -> {"throttle_time_ms": 0, "error_code": 0, "producer_id_start": 3000, "producer_id_len": 1000}
"""

from __future__ import annotations

from controller.core.events import ProducerIdsRequested
from controller.shell.admin.base import AdminContext, Api, decided
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import paths
from znodes.reads import get_or_none

# A broker waits request.timeout.ms (30 s) and asks again; the handler gives up before that.
MAX_WAIT_S = 25.0


def _response(code: ErrorCode, start: int = 0, length: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "producer_id_start": start, "producer_id_len": length}


async def handle_allocate(ctx: AdminContext, version: int, body: dict) -> dict:
    read = await get_or_none(ctx.store, paths.LATEST_PRODUCER_ID_BLOCK)
    data, stat = read if read is not None else (None, None)
    code, block = await decided(ctx, lambda future: ProducerIdsRequested(
        body["broker_id"], body["broker_epoch"], data, None if stat is None else stat.version, future), MAX_WAIT_S)
    return _response(code) if block is None else _response(code, block.start, block.length)


def allocate_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _response(code)


APIS = [
    Api(ApiKey.ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", 0, 0, controller_only=True, handle=handle_allocate,
        error_response=allocate_error),
]
