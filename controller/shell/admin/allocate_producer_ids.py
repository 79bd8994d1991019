"""AllocateProducerIds (67, v0; KIP-730): a broker asks the active controller for a block of
producer ids (Kafka's ``KafkaController.processAllocateProducerIds`` in ZooKeeper mode). Kafka
brokers of inter.broker.protocol.version 3.0+ send it instead of writing
``/latest_producer_id_block`` themselves, and an idempotent producer - the default since Kafka
3.0 - cannot start on a broker that has no block. The znode's format and the next block are
znodes.producer_ids.

 1. Active controller only (a standby: NOT_CONTROLLER); CLUSTER_ACTION on the cluster
    (controller.shell.authorizer: only brokers hold it).
 2. A broker not registered: BROKER_ID_NOT_REGISTERED; a broker epoch other than its
    registration's czxid: STALE_BROKER_EPOCH (Kafka's checks, in its order).
 3. Read ``/latest_producer_id_block`` (missing or empty: no block handed out yet), write the
    next block of 1,000 ids conditional on the version read and fenced by the controller epoch
    (Kafka's write is conditional only; the fence keeps this controller's rule that a deposed one
    writes nothing); another writer first (another broker's request on another instance in a
    failover's overlap, a tool): read and try again, up to MAX_TRIES.
 4. Answer the block. A znode that does not decode is UNKNOWN_SERVER_ERROR, logged, and nothing
    is written: handing ids out again from 0 could give two producers the same id. A fenced
    write or an expired session: NOT_CONTROLLER; a lost connection: REQUEST_TIMED_OUT (the
    block may have been written: the broker asks again and gets the next one, leaving a gap, as
    Kafka's would).

    {"broker_id": 2, "broker_epoch": 4294967340}
    -> {"throttle_time_ms": 0, "error_code": 0, "producer_id_start": 3000, "producer_id_len": 1000}
"""

from __future__ import annotations

import logging

from controller.shell.admin.base import AdminContext, Api, ApiError, session_failure
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import BadVersionError, Create, MultiOpError, NodeExistsError, NoNodeError, SetData
from znodes.producer_ids import ProducerIdBlockError, decode_block, encode_block, next_block

log = logging.getLogger("reassignd.controller")

# Another writer between the read and the conditional write is rare (one controller answers);
# a few tries absorb a race, and a writer that never lets go fails the request (the broker asks again).
MAX_TRIES = 5


def _response(code: ErrorCode, start: int = 0, length: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "producer_id_start": start, "producer_id_len": length}


async def handle_allocate(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    broker_id, epoch = body["broker_id"], body["broker_epoch"]
    broker = active.state.brokers.get(broker_id)
    if broker is None:
        return _response(ErrorCode.BROKER_ID_NOT_REGISTERED)
    if broker.epoch != epoch:
        return _response(ErrorCode.STALE_BROKER_EPOCH)
    store, path = ctx.store, paths.LATEST_PRODUCER_ID_BLOCK
    try:
        for _ in range(MAX_TRIES):
            try:
                data, stat = await store.get(path)
            except NoNodeError:
                data, stat = None, None
            try:
                block = next_block(decode_block(data), broker_id)
            except ProducerIdBlockError as e:
                log.error("AllocateProducerIds from broker %d refused: %s holds %s", broker_id, path, e)
                return _response(ErrorCode.UNKNOWN_SERVER_ERROR)
            op = Create(path, encode_block(block)) if stat is None else SetData(path, encode_block(block), stat.version)
            try:
                await store.fenced_multi([op], active.epoch_zkversion)
            except MultiOpError as e:
                if isinstance(e.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                    continue  # another writer first: read again
                raise
            log.info("producer ids %d..%d handed to broker %d", block.start, block.end, broker_id)
            return _response(ErrorCode.NONE, block.start, block.length)
    except Exception as e:  # noqa: BLE001 - a ZooKeeper failure is answered, as Kafka's controller answers it
        failure = session_failure(e)
        if failure is None:
            raise
        raise failure from None
    raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{path} kept changing under {MAX_TRIES} tries")


def allocate_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _response(code)


APIS = [
    Api(ApiKey.ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", 0, 0, controller_only=True, handle=handle_allocate,
        error_response=allocate_error),
]
