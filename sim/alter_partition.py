"""A simulated broker's ISR changes the Kafka 2.7+ way: AlterPartition (API 56, KIP-497; named
AlterIsr in 2.7) to the active controller, which writes the state znode and propagates the new
ISR itself. The broker writes nothing to ZooKeeper for an ISR change: no state znode, no
``/isr_change_notification``. Chosen by ``sim.cluster.ClusterSettings.isr_via``
(``reassignd sim --isr-via alter-partition``); the ZooKeeper way stays the default.

The leader's decisions are the same either way (:meth:`sim.core.BrokerCore.advance` returns
IsrWrite effects). Sending is Kafka's AlterPartitionManager's, asynchronous:

 1. An advance's IsrWrites are queued (:meth:`AlterPartitionManager.propose`), and if the broker
    has no request in flight one starts, as a task on the broker's event loop, carrying every
    change queued (Kafka batches its unsent items alike). The advance never waits for it: a
    slow controller holds this broker's ISR changes, not its copying, its other duties or the
    other brokers' ticks.
 2. At most one request per broker is in flight. A partition whose change is queued or out is
    not proposed again until it is answered (the core's pending change,
    :meth:`sim.core.BrokerCore.advance` skips it); the leader serves on meanwhile.
 3. The answer is applied when it arrives, per partition as in the table below, on the
    broker's own loop and in one go (nothing else runs while it is applied: no lock). What may
    have changed since the request went - a LeaderAndIsr with a new leader epoch, a StopReplica, a
    failed log directory, a restart - ended the pending change in the core: the answer for
    such a partition is dropped, whatever it says, as Kafka's Partition drops an answer for a
    state it no longer holds (:meth:`sim.core.BrokerCore.isr_pending`). A change queued
    meanwhile goes at once after an answer without top-level error (Kafka's
    maybePropagateIsrChanges), else with the next advance's request.

Version 1 (topics by name: the simulation keeps no topic ids), ``partition_epoch`` the zkVersion
the broker holds. The controller is found as for a controlled shutdown
(:mod:`sim.controller_link`, PLAINTEXT or TLS); the connection is kept while that controller
stays active, as Kafka's broker-to-controller channel is.

The in-process hook of deterministic tests (``request``, ``SimulatedCluster(controller_request=)``)
stays synchronous: :meth:`AlterPartitionManager.propose` sends and applies within the advance,
so that the stateful suite's schedules depend on no task scheduling or real time.

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
    await manager.propose(writes)    # one advance's IsrWrites: queued, a request started; returns at once
    manager.in_flight                # True while a request is out
    await manager.answered()         # (tests) until no request is out
    await manager.close()            # the broker stops: its request, queue and connection go
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol_aio import ClientConnection
from sim.controller_link import Broker, ControllerEndpoint, NoAnswer, connect, error_name, find_controller
from sim.effects import IsrWrite

log = logging.getLogger(__name__)

# (broker id, api key, version, body) -> the answer's body (sim.cluster.SimulatedCluster's
# ``controller_request``).
ControllerRequest = Callable[[int, int, int, dict], Awaitable[dict]]

VERSION = 1  # topics by name (v2+ name them by id, which the simulation does not keep)
# Kafka's controller.socket.timeout.ms is 30 s. No tick waits for the answer any more, but the
# broker's ISR changes do (one request in flight): a frozen controller (a zombie, SIGSTOPped by
# the chaos suite) loses its session and its place within seconds, and the changes should reach
# the new one about as soon.
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
    """One broker's AlterPartition sender: its queue of changes, its one request in flight, its
    connection to the active controller, and the outcome of each answer, reported to its core."""

    def __init__(self, broker: Broker, clock: Callable[[], float], request: ControllerRequest | None = None):
        self.broker = broker
        self.clock = clock
        # Deterministic tests reach the controller without sockets: ``request(broker_id,
        # api_key, version, body)`` answers as the active controller would (raising NoAnswer
        # when none does); None: over TCP to the controller ZooKeeper names.
        self._request = request
        self._conn: ClientConnection | None = None
        self._peer: ControllerEndpoint | None = None  # where _conn goes
        self._unanswered = False  # the last exchange got no answer (logged once until one does)
        self._queued: dict[tuple[str, int], IsrWrite] = {}  # proposed, not sent yet (step 1)
        self._sending: asyncio.Task | None = None  # the request in flight (step 2)

    @property
    def in_flight(self) -> bool:
        return self._sending is not None

    @property
    def queued(self) -> bool:
        """Changes wait to be sent: the next advance must start a request even if it proposes
        nothing new (after an unanswered request, they wait for it)."""
        return bool(self._queued)

    async def propose(self, writes: list[IsrWrite]) -> None:
        """Step 1 for one advance's ``writes``. Over TCP it returns at once; through the
        in-process hook it returns once they are answered and applied."""
        for write in writes:
            self._queued[write.key] = write
        if self._request is not None:
            batch = self._take_queued()
            if batch:
                await self._send(batch)
            return
        self._start()

    def _start(self) -> None:
        """A request for what is queued, unless one is in flight or nothing is."""
        if self._sending is not None:
            return
        batch = self._take_queued()
        if batch:
            self._sending = asyncio.get_running_loop().create_task(
                self._send(batch), name=f"broker {self.broker.id} AlterPartition")
            self._sending.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task) -> None:
        """The request in flight ended (answered, unanswered, or cancelled by close)."""
        if task is not self._sending:
            return  # close() let it go and no longer waits for it
        self._sending = None
        if task.cancelled():
            return
        if task.exception() is not None:  # a bug, not the controller: _send raises nothing for that
            log.error("broker %d: AlterPartition failed", self.broker.id, exc_info=task.exception())
        elif task.result():
            self._start()  # what was queued meanwhile goes now (step 3)

    def _take_queued(self) -> list[IsrWrite]:
        """The queued changes still pending in the core, in partition order; the queue empties."""
        core = self.broker.core
        batch = [w for _, w in sorted(self._queued.items()) if core.isr_pending(w)]
        self._queued.clear()
        return batch

    async def answered(self) -> None:
        """Until no request is in flight, including one started by an answer (tests)."""
        while self._sending is not None:
            await asyncio.wait([self._sending])

    async def _send(self, writes: list[IsrWrite]) -> bool:
        """One request for ``writes``; each partition's outcome goes to the broker's core.
        True if the controller answered without a top-level error."""
        core = self.broker.core
        try:
            body = await self._exchange(request_body(self.broker.id, core.broker_epoch, writes))
            if body["error_code"] != ErrorCode.NONE:
                raise NoAnswer(f"answered {error_name(body['error_code'])}")
        except asyncio.CancelledError:  # the broker stopped mid-request: an advance after may propose again
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
            return False
        if self._unanswered:
            log.info("broker %d: AlterPartition answered again", self.broker.id)
            self._unanswered = False
        self._apply(writes, body)
        return True

    def _apply(self, writes: list[IsrWrite], body: dict) -> None:
        core, now = self.broker.core, self.clock()
        answered = {(t["topic_name"], p["partition_index"]): p for t in body["topics"] for p in t["partitions"]}
        for write in writes:
            partition = answered.get(write.key)
            code = None if partition is None else partition["error_code"]
            if not core.isr_pending(write):  # step 3: ended while the request was out
                log.info("broker %d: AlterPartition answer for %s-%d dropped (%s): its leader epoch %d or pending "
                         "change was replaced meanwhile (leader epoch now %s)", self.broker.id, write.topic,
                         write.partition, "left out" if code is None else error_name(code), write.leader_epoch,
                         self._leader_epoch(write))
            elif code is None or code in NOT_APPLIED:  # left out of the answer: Kafka re-sends it too
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

    def _leader_epoch(self, write: IsrWrite) -> int | str:
        replica = self.broker.core.model.get(write.topic, write.partition, self.broker.id)
        return "none" if replica is None else replica.leader_epoch

    async def _exchange(self, request: dict) -> dict:
        """The answer of the active controller, on the kept connection while it stays active."""
        if self._request is not None:
            return await self._request(self.broker.id, ApiKey.ALTER_PARTITION, VERSION, request)
        peer = await find_controller(self.broker)
        if self._conn is None or self._conn.closed or self._peer != peer:
            await self._disconnect()
            self._conn = await connect(self.broker, peer, timeout_s=REQUEST_TIMEOUT_S)
            self._peer = peer
        try:
            return await self._conn.request(ApiKey.ALTER_PARTITION, VERSION, request)
        except (OSError, DecodeError) as exc:  # TimeoutError is an OSError
            # A timed-out request's connection is dropped too, as Kafka's NetworkClient does.
            await self._disconnect()
            raise NoAnswer(f"{peer}: {exc!r}") from None

    async def _disconnect(self) -> None:
        if self._conn is not None:
            conn, self._conn, self._peer = self._conn, None, None
            await conn.close()

    async def close(self) -> None:
        """The broker stops: the request in flight is cancelled (its changes released to the
        core, which a restart forgets anyway), the queue dropped, the connection closed."""
        sending, self._sending = self._sending, None
        if sending is not None:
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
        for write in self._queued.values():
            self.broker.core.isr_write_failed(write)
        self._queued.clear()
        await self._disconnect()
