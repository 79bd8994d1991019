"""A simulated broker's ISR changes the Kafka 2.7+ way: AlterPartition (API 56, KIP-497; named
AlterIsr in 2.7) to the active controller, which writes the state znode and propagates the new
ISR itself. The broker writes nothing to ZooKeeper for an ISR change: no state znode, no
``/isr_change_notification``. Chosen by ``sim.cluster.ClusterSettings.isr_via``
(``reassignd sim --isr-via alter-partition``); the ZooKeeper way stays the default.

The leader's decisions are the same either way (:meth:`sim.core.BrokerCore.advance` returns
IsrWrite effects). The IsrWrites of one broker's advance go in ONE request, as Kafka's
AlterPartitionManager batches what its partitions propose, version 1 (topics by name: the
simulation keeps no topic ids), ``partition_epoch`` the zkVersion the broker holds. The
controller is found as for a controlled shutdown (:mod:`sim.controller_link`); the connection is
kept while that controller stays active, as Kafka's broker-to-controller channel is.

Answers, per partition (Kafka's Partition.handleAlterPartitionUpdate / handleAlterPartitionError):

=====================================  =================================================================
NONE                                   the answer's ISR and partition epoch (as the zkVersion) are
                                       adopted if the broker still leads the answer's leader epoch
                                       (sim.core.BrokerCore.isr_altered)
OPERATION_NOT_ATTEMPTED,               not applied, and the held state is right: proposed again at a
INELIGIBLE_REPLICA                     later advance
any other (UNKNOWN_TOPIC_OR_PARTITION, the held state is out of date: nothing more is proposed for the
FENCED_LEADER_EPOCH,                   partition until the controller's LeaderAndIsr
INVALID_UPDATE_VERSION,                (sim.core.BrokerCore.isr_change_refused)
NEW_LEADER_ELECTED, ...)
=====================================  =================================================================

A partition left out of the answer is proposed again at a later advance, and so is every change
of the request after a top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH, ...), no controller
registered, a refused or lost connection or a timeout (Kafka re-sends what was not answered):
those are logged once at info until an exchange succeeds again, and never raised into the advance.

    manager = AlterPartitionManager(broker, clock)   # a running sim.cluster.SimBroker
    await manager.send(writes)                       # one advance's IsrWrites; never raises for the controller
    await manager.close()                            # the broker stops: its connection goes
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol_aio import ClientConnection
from sim.controller_link import Broker, NoAnswer, connect, error_name, find_controller
from sim.effects import IsrWrite

log = logging.getLogger(__name__)

# (broker id, api key, version, body) -> the answer's body (sim.cluster.SimulatedCluster's
# ``controller_request``).
ControllerRequest = Callable[[int, int, int, dict], Awaitable[dict]]

VERSION = 1  # topics by name (v2+ name them by id, which the simulation does not keep)
# Kafka's controller.socket.timeout.ms is 30 s, but an advance waits for the answer here (as it
# waits for ZooKeeper writes the other way), so a controller that stops answering would hold
# every simulated broker's tick that long.
REQUEST_TIMEOUT_S = 5.0
RECOVERED = 0  # LeaderRecoveryState (KIP-704): 1 only after an unclean election, which no sim leader had
# Not applied, and the controller vouches for the partition epoch the broker holds: propose again.
NOT_APPLIED = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})


def request_body(broker_id: int, broker_epoch: int, writes: list[IsrWrite]) -> dict:
    """AlterPartition v1's body for ``writes``, grouped by topic in their order."""
    topics: dict[str, list[dict]] = {}
    for write in writes:
        topics.setdefault(write.topic, []).append({
            "partition_index": write.partition,
            "leader_epoch": write.leader_epoch,
            "new_isr": list(write.isr),
            "leader_recovery_state": RECOVERED,
            "partition_epoch": write.zk_version,
        })
    return {"broker_id": broker_id, "broker_epoch": broker_epoch,
            "topics": [{"topic_name": name, "partitions": partitions} for name, partitions in topics.items()]}


class AlterPartitionManager:
    """One broker's AlterPartition sender: its connection to the active controller and the
    outcome of each answer, reported to its core."""

    def __init__(self, broker: Broker, clock: Callable[[], float], request: ControllerRequest | None = None):
        self.broker = broker
        self.clock = clock
        # Deterministic tests reach the controller without sockets: ``request(broker_id,
        # api_key, version, body)`` answers as the active controller would (raising NoAnswer
        # when none does); None: over TCP to the controller ZooKeeper names.
        self._request = request
        self._conn: ClientConnection | None = None
        self._peer: tuple[int, str, int] | None = None  # (controller id, host, port) of _conn
        self._unanswered = False  # the last exchange got no answer (logged once until one does)

    async def send(self, writes: list[IsrWrite]) -> None:
        """One request for ``writes``; each partition's outcome goes to the broker's core."""
        if not writes:
            return
        core = self.broker.core
        try:
            body = await self._exchange(request_body(self.broker.id, core.broker_epoch, writes))
            if body["error_code"] != ErrorCode.NONE:
                raise NoAnswer(f"answered {error_name(body['error_code'])}")
        except asyncio.CancelledError:  # the ticker stopped mid-request: an advance after may propose again
            for write in writes:
                core.isr_write_failed(write)
            raise
        except NoAnswer as exc:
            for write in writes:
                core.isr_write_failed(write)
            if not self._unanswered:
                log.info("broker %d: AlterPartition of %d partition(s) not answered, proposed again later: %s",
                         self.broker.id, len(writes), exc)
            self._unanswered = True
            return
        if self._unanswered:
            log.info("broker %d: AlterPartition answered again", self.broker.id)
            self._unanswered = False
        self._apply(writes, body)

    def _apply(self, writes: list[IsrWrite], body: dict) -> None:
        core, now = self.broker.core, self.clock()
        answered = {(t["topic_name"], p["partition_index"]): p for t in body["topics"] for p in t["partitions"]}
        for write in writes:
            partition = answered.get(write.key)
            code = None if partition is None else partition["error_code"]
            if code is None or code in NOT_APPLIED:  # left out of the answer: Kafka re-sends it too
                core.isr_write_failed(write)
                log.debug("broker %d: ISR change of %s-%d not applied (%s), proposed again later", self.broker.id,
                          write.topic, write.partition, "left out" if code is None else error_name(code))
            elif code == ErrorCode.NONE:
                if core.isr_altered(write, partition["leader_epoch"], tuple(partition["isr"]),
                                    partition["partition_epoch"], now):
                    log.info("broker %d: %s-%d ISR -> %s (AlterPartition)", self.broker.id, write.topic,
                             write.partition, partition["isr"])
                else:
                    log.info("broker %d: AlterPartition answer for %s-%d out of date (leader epoch %d, partition "
                             "epoch %d): not adopted", self.broker.id, write.topic, write.partition,
                             partition["leader_epoch"], partition["partition_epoch"])
            else:
                core.isr_change_refused(write)
                log.info("broker %d: ISR change of %s-%d refused (%s): waiting for the controller's LeaderAndIsr",
                         self.broker.id, write.topic, write.partition, error_name(code))

    async def _exchange(self, request: dict) -> dict:
        """The answer of the active controller, on the kept connection while it stays active."""
        if self._request is not None:
            return await self._request(self.broker.id, ApiKey.ALTER_PARTITION, VERSION, request)
        peer = await find_controller(self.broker)
        if self._conn is None or self._conn.closed or self._peer != peer:
            await self.close()
            self._conn = await connect(self.broker, *peer, timeout_s=REQUEST_TIMEOUT_S)
            self._peer = peer
        try:
            return await self._conn.request(ApiKey.ALTER_PARTITION, VERSION, request)
        except (OSError, DecodeError) as exc:  # TimeoutError is an OSError
            # A timed-out request's connection is dropped too, as Kafka's NetworkClient does.
            await self.close()
            cid, host, port = peer
            raise NoAnswer(f"controller {cid} at {host}:{port}: {exc!r}") from None

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn, self._peer = self._conn, None, None
            await conn.close()
