"""A simulated broker's controlled shutdown: Kafka's ``KafkaServer.controlledShutdown`` with
``controlled.shutdown.enable=true``. Before it stops, the broker asks the active controller to
move its leaderships away (ControlledShutdown, API 7; the controller's side is
controller.shell.admin.controlled_shutdown), and asks again while partitions remain.

Each try, up to MAX_TRIES (Kafka's ``controlled.shutdown.max.retries``, which counts tries):

 1. Find the active controller on the broker's own ZooKeeper session, as Kafka's broker does:
    ``/controller``'s brokerid, then that instance's listener at ``/reassignd/controllers/<id>``
    (reassignd's controllers are not brokers, so ``/brokers/ids`` does not name them;
    :mod:`sim.controller_link`, which AlterPartition uses too, and which picks the listener:
    PLAINTEXT, or SSL with the brokers' TLS settings).
 2. Send ControlledShutdown v3 ``{broker_id, broker_epoch}`` (the epoch: the czxid of the
    broker's current ``/brokers/ids/N``) on a new connection, client id the broker id.
 3. NONE with nothing remaining: done. Partitions remaining, a RETRIABLE error, or no answer
    (no controller registered, connection refused or lost, timeout): wait RETRY_BACKOFF_S and
    try again, finding the controller anew. Any other error (STALE_BROKER_EPOCH,
    BROKER_NOT_AVAILABLE, CLUSTER_AUTHORIZATION_FAILED): give up at once. Kafka's broker
    retries those too; here a retry would be refused the same way.

The caller (sim.cluster.SimulatedCluster.controlled_stop_broker) stops the broker whatever the
outcome, as Kafka's broker shuts down after its last try.

    outcome = await controlled_shutdown(broker)     # a running sim.cluster.SimBroker
    outcome.controlled, outcome.remaining, outcome.tries   # True, (), 1
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from sim.controller_link import Broker, NoAnswer, connect, error_name, find_controller

log = logging.getLogger(__name__)

MAX_TRIES = 3  # Kafka's controlled.shutdown.max.retries default
# Kafka's controlled.shutdown.retry.backoff.ms is 5 s: long enough for a controller failover or
# a move to finish. Simulated controllers answer within milliseconds and tests stop brokers
# often, so half a second here.
RETRY_BACKOFF_S = 0.5
VERSION = 3  # what a Kafka 2.4+ broker sends (inter.broker.protocol.version 2.4+)
REQUEST_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms, per try
# Errors that another try may not get (a new controller, a step that failed under a race).
RETRIABLE = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR})


@dataclass(frozen=True, slots=True)
class Outcome:
    controlled: bool  # the last answer was NONE with nothing remaining
    remaining: tuple[tuple[str, int], ...]  # what the last NONE answer said the broker still leads
    tries: int


async def controlled_shutdown(broker: Broker) -> Outcome:
    """Steps 1-3 for a running broker; never raises for what the controller does."""
    remaining: tuple[tuple[str, int], ...] = ()
    for attempt in range(1, MAX_TRIES + 1):
        try:
            code, answered = await ask(broker)
        except NoAnswer as exc:
            log.warning("broker %d: controlled shutdown try %d: %s", broker.id, attempt, exc)
        else:
            if code == ErrorCode.NONE:
                remaining = answered
                if not remaining:
                    log.info("broker %d: controlled shutdown succeeded (try %d)", broker.id, attempt)
                    return Outcome(True, (), attempt)
                log.info("broker %d: controlled shutdown try %d: still leads %s", broker.id, attempt, list(remaining))
            else:
                log.warning("broker %d: controlled shutdown try %d: %s", broker.id, attempt, error_name(code))
                if code not in RETRIABLE:
                    return Outcome(False, remaining, attempt)
        if attempt < MAX_TRIES:
            await asyncio.sleep(RETRY_BACKOFF_S)
    return Outcome(False, remaining, MAX_TRIES)


async def ask(broker: Broker) -> tuple[int, tuple[tuple[str, int], ...]]:
    """One try: (error code, partitions remaining); NoAnswer when no controller answered."""
    endpoint = await find_controller(broker)
    conn = await connect(broker, endpoint, timeout_s=REQUEST_TIMEOUT_S)
    try:
        body = await conn.request(ApiKey.CONTROLLED_SHUTDOWN, VERSION,
                                  {"broker_id": broker.id, "broker_epoch": broker.core.broker_epoch})
    except (OSError, DecodeError) as exc:  # TimeoutError is an OSError
        raise NoAnswer(f"{endpoint}: {exc!r}") from None
    finally:
        await conn.close()
    return body["error_code"], tuple((p["topic_name"], p["partition_index"]) for p in body["remaining_partitions"])
