"""ControlledShutdown (7), v0-3: a broker about to stop asks the active controller to move its
leaderships away first (controller.core.controlled_shutdown has the algorithm and its worked
table); Kafka's broker asks it in ``KafkaServer.controlledShutdown`` when
``controlled.shutdown.enable`` is true, and retries while partitions remain.

 1. Active controller only (a standby: NOT_CONTROLLER, the broker finds the new one); CLUSTER_ACTION
    on the cluster (controller.shell.authorizer, Kafka's rule: only brokers hold it).
 2. Version 0's request header has no client id (protocol.registry); versions 0-1 carry no
    broker epoch (-1: not checked).
 3. The states of the partitions with a replica on the broker are read from ZooKeeper (a
    leader's ISR change whose notification has not come yet counts, as for ElectLeaders), and a
    ShutdownRequested goes into the controller's queue; the answer, NONE and the partitions the
    broker still leads, goes out once the step's writes landed and its LeaderAndIsr and
    UpdateMetadata were handed to the dispatcher. A step whose writes fail (a state changed under
    it) -> UNKNOWN_SERVER_ERROR (the broker retries); the controller resigned with the request
    queued -> NOT_CONTROLLER; no decision within MAX_WAIT_S -> REQUEST_TIMED_OUT (it may still be
    taken: the retry finds it done).

    # what a Kafka broker sends on SIGTERM (v3, broker 2 registered at czxid 4294967340):
    {"broker_id": 2, "broker_epoch": 4294967340}
    -> {"error_code": 0, "remaining_partitions": [{"topic_name": "logs", "partition_index": 3}]}
"""

from __future__ import annotations

from controller.core.events import ShutdownRequested
from controller.shell.admin.base import AdminContext, Api, decided
from controller.shell.zkread import read_states
from protocol import ApiKey
from protocol.errors import ErrorCode

# Kafka's controller has no deadline; a broker waits request.timeout.ms (30 s) per try. The
# handler gives up after this, so that a wedged queue does not hold connections for ever.
MAX_WAIT_S = 60.0


def _response(code: ErrorCode, remaining=()) -> dict:
    return {"error_code": int(code),
            "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}


async def handle_shutdown(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    broker_id = body["broker_id"]
    epoch = body.get("broker_epoch", -1) if version >= 2 else -1
    mine = [tp for tp, a in active.state.assignments.items() if broker_id in a.replicas]
    states, _ = await read_states(ctx.store, mine)
    code, message, remaining = await decided(
        ctx, lambda future: ShutdownRequested(broker_id, epoch, states, future), MAX_WAIT_S)
    return _response(code, remaining)


def shutdown_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _response(code)


APIS = [
    Api(ApiKey.CONTROLLED_SHUTDOWN, "ControlledShutdown", 0, 3, controller_only=True, handle=handle_shutdown,
        error_response=shutdown_error),
]
