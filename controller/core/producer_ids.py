"""Producer id blocks (AllocateProducerIds, API 67; KIP-730; Kafka's
``KafkaController.processAllocateProducerIds`` and ``ZkProducerIdManager``): a Kafka 3.0+ broker
asks the active controller for its next block of producer ids, which the controller writes to
``/latest_producer_id_block`` (the format and the next block: znodes.producer_ids). Pure.

B is the broker asking, e its broker epoch; Z the znode as the shell read it for the request
(data, zkVersion; none: no such znode); H the block this controller last wrote in its term
(``ClusterState.producer_id_block``).

 1. B not registered -> BROKER_ID_NOT_REGISTERED; e not its registration's czxid ->
    STALE_BROKER_EPOCH (Kafka's checks, in its order). Nothing written.
 2. The current block: the newer, by zkVersion, of Z and H (a read made before this
    controller's last write landed is older than what it wrote), or this step's own block when
    an earlier request of the step took one.
 3. It does not decode, or ids are exhausted -> UNKNOWN_SERVER_ERROR and a warning; nothing is
    written (handing ids out from 0 again could give two producers one id).
 4. The next block of 1,000 ids for B, written in the step's flush: created when there is no
    znode, else set conditional on the current zkVersion (an outside writer - a broker of
    inter.broker.protocol.version before 3.0 - fails the flush: the controller reloads and the
    broker asks again), fenced by the controller epoch as every write of the flush.
 5. Answer, once the flush landed (``Step.elections``): NONE and the block.

Worked table, znode at zkVersion 4 holding ids 2000-2999:

    request       current            written (zkVersion)        answer
    B=1, e ok     2000-2999 (4)      3000-3999 for 1 (5)        NONE 3000, 1000
    B=2, e ok     3000-3999 (5)      4000-4999 for 2 (6)        NONE 4000, 1000   (same step)
    B=3, e stale  -                  -                          STALE_BROKER_EPOCH
    B=9           -                  -                          BROKER_ID_NOT_REGISTERED

    on_request(ws, ProducerIdsRequested(1, broker_epoch, data, version, token=future))
"""

from __future__ import annotations

from controller.core.events import ProducerIdsRequested
from controller.core.flush import OTHER, writing
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import Create, SetData
from znodes.producer_ids import ProducerIdBlock, ProducerIdBlockError, decode_block, encode_block, next_block

# (error code, the block handed out or None)
Result = tuple[ErrorCode, "ProducerIdBlock | None"]


@writing(OTHER)
def on_request(ws: WorkingSet, event: ProducerIdsRequested) -> None:
    """Steps 1-5; the result goes back with the event's token."""
    ws.elections.append((event.token, allocate(ws, event)))


def allocate(ws: WorkingSet, event: ProducerIdsRequested) -> Result:
    broker = ws.brokers.get(event.broker_id)
    if broker is None:
        return ErrorCode.BROKER_ID_NOT_REGISTERED, None  # step 1
    if broker.epoch != event.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH, None
    data, version = event.data, event.version  # step 2
    held = ws.producer_id_block
    if held is not None and (version is None or held[1] >= version):
        data, version = held
    path = paths.LATEST_PRODUCER_ID_BLOCK
    try:
        block = next_block(decode_block(data), event.broker_id)
    except ProducerIdBlockError as e:
        ws.warnings.append(f"AllocateProducerIds from broker {event.broker_id} refused: {path} holds {e}")
        return ErrorCode.UNKNOWN_SERVER_ERROR, None  # step 3
    written = encode_block(block)  # step 4
    ws.early.append(Create(path, written) if version is None else SetData(path, written, version))
    ws.producer_id_block = (written, 0 if version is None else version + 1)
    ws.producer_id_block_changed = True
    ws.log.append(f"producer ids {block.start}..{block.end} handed to broker {event.broker_id}")
    return ErrorCode.NONE, block  # step 5
