"""Carries an engine step's broker commands out, in order per broker, without blocking the loop.

One worker per broker sends that broker's requests one after another (a broker must see a
partition's LeaderAndIsr before its StopReplica); different brokers proceed in parallel. A
send that fails for a connection reason is retried with backoff while the broker is still
registered. When every StopReplica of a step that a move waits for has been sent (answered or
given up on), a :class:`controller.core.events.StopReplicaSent` goes on the controller's event
queue, a broker's DescribeLogDirs answer becomes a
:class:`controller.core.events.ReplicasHosted` and a LeaderAndIsr answer with KAFKA_STORAGE_ERROR
partitions a :class:`controller.core.events.ReplicasOffline`: broker responses become events like
everything else. Error codes in answers are logged, never retried: a LeaderAndIsr partition answered
STALE_CONTROLLER_EPOCH is a broker that already holds that leader epoch (a resend after a
failover or to a broker back), which is how Kafka's brokers say "already have it".

    dispatcher = Dispatcher(transport, queue, config, is_live=lambda b: b in state.brokers)
    dispatcher.send(step.commands)
    await dispatcher.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from controller.core.commands import BrokerCommand, answer_by_name, hosted_replicas, log_dir_failed
from controller.core.config import ControllerConfig
from controller.core.events import ReplicasHosted, ReplicasOffline, StopReplicaSent
from controller.core.log_dir_failure import offline_in_answer, online_in_answer
from protocol import ApiKey
from protocol.errors import ErrorCode, error_name
from protocol.exceptions import DecodeError, EncodeError

log = logging.getLogger("reassignd.controller")


class _Countdown:
    def __init__(self, n: int, fire: Callable[[], None]):
        self.n = n
        self.fire = fire

    def done(self) -> None:
        self.n -= 1
        if self.n == 0:
            self.fire()


def response_errors(command: BrokerCommand, body: dict, *, skip: frozenset[int] = frozenset()) -> list[str]:
    """Non-zero error codes in a LeaderAndIsr / StopReplica / UpdateMetadata answer (per
    partition, those in ``skip`` left out)."""
    out = []
    top = body.get("error_code", 0)
    if top:
        out.append(error_name(top))
    for entry in body.get("partition_errors") or []:
        code = entry.get("error_code", 0)
        if code and code not in skip:
            out.append(f"{entry.get('topic_name')}-{entry.get('partition_index')}: {error_name(code)}")
    return out


# A LeaderAndIsr partition refused for its leader epoch: the broker holds that epoch already.
_ALREADY_HELD = frozenset({int(ErrorCode.STALE_CONTROLLER_EPOCH)})


class Dispatcher:
    def __init__(
        self,
        transport,
        queue: asyncio.Queue,
        config: ControllerConfig,
        is_live: Callable[[int], bool],
        offline_of: Callable[[int], frozenset] = lambda broker_id: frozenset(),
    ):
        self.transport = transport
        self.queue = queue
        self.config = config
        self.is_live = is_live
        # The broker's replicas the controller holds offline (a LeaderAndIsr answer NONE for
        # one brings it back: controller.core.log_dir_failure step 3).
        self.offline_of = offline_of
        self._queues: dict[int, asyncio.Queue] = {}
        self._workers: dict[int, asyncio.Task] = {}
        self.sent = 0
        self.failed = 0

    def send(self, commands: list[BrokerCommand]) -> None:
        # Only the StopReplica requests a move waits for (those naming partitions) count.
        stops = [c for c in commands if c.api_key == ApiKey.STOP_REPLICA and c.partitions]
        countdown = None
        if stops:
            partitions = tuple(tp for c in stops for tp in c.partitions)
            countdown = _Countdown(len(stops), lambda: self.queue.put_nowait(StopReplicaSent(partitions)))
        for command in commands:
            q = self._queues.get(command.broker_id)
            if q is None:
                q = self._queues[command.broker_id] = asyncio.Queue()
                self._workers[command.broker_id] = asyncio.create_task(
                    self._worker(command.broker_id, q), name=f"dispatch-{command.broker_id}"
                )
            q.put_nowait((command, countdown if command.api_key == ApiKey.STOP_REPLICA and command.partitions else None))

    async def _worker(self, broker_id: int, q: asyncio.Queue) -> None:
        while True:
            item = await q.get()
            if item is None:  # close()
                return
            command, countdown = item
            try:
                body = await self._send(command)
                if command.api_key == ApiKey.DESCRIBE_LOG_DIRS and body is not None:
                    # One pass over the answer's replicas (it names every replica of the
                    # broker): what its online directories hold; complete if none failed.
                    answered = hosted_replicas(body, online_only=True)
                    if answered is not None and not log_dir_failed(body):
                        self.queue.put_nowait(ReplicasHosted(broker_id, frozenset(answered[0]), answered[1]))
                    else:
                        # Not all it hosts (a directory failed): what its online directories
                        # hold still has its strays and sizes; nothing is taken for absent.
                        log.info("broker %d could not say all it hosts: %s", broker_id, describe_failed_dirs(body))
                        if answered is not None and (answered[0] or answered[1]):
                            self.queue.put_nowait(
                                ReplicasHosted(broker_id, frozenset(answered[0]), answered[1], complete=False)
                            )
                elif command.api_key == ApiKey.LEADER_AND_ISR and body is not None:
                    # Replicas on an offline log directory (controller.core.log_dir_failure step 3).
                    offline = offline_in_answer(body)
                    held = self.offline_of(broker_id)
                    back = online_in_answer(body) & held if held else frozenset()
                    if offline or back:
                        epoch = command.body.get("broker_epoch", -1)
                        self.queue.put_nowait(ReplicasOffline(broker_id, epoch, offline, online=back))
            except Exception:  # a bug in one send must not stop this broker's worker
                log.exception("sending %s to broker %d failed", command.name, broker_id)
            finally:
                if countdown is not None:
                    countdown.done()

    async def _send(self, command: BrokerCommand) -> dict | None:
        """The broker's answer, or None if it was not delivered."""
        cfg = self.config
        for attempt in range(cfg.request_retries + 1):
            try:
                # asyncio.timeout, not wait_for: in 3.11 wait_for can swallow a cancellation.
                async with asyncio.timeout(cfg.request_timeout_s):
                    if command.encoded is not None and getattr(self.transport, "takes_encoded", False):
                        body = await self.transport.request(
                            command.broker_id, command.api_key, command.api_version, command.body,
                            encoded=command.encoded,
                        )
                    else:
                        body = await self.transport.request(
                            command.broker_id, command.api_key, command.api_version, command.body
                        )
            except (OSError, ConnectionError, TimeoutError, DecodeError) as e:
                if attempt == cfg.request_retries or not self.is_live(command.broker_id):
                    self.failed += 1
                    log.info("%s to broker %d not delivered: %r", command.name, command.broker_id, e)
                    return None
                await asyncio.sleep(cfg.retry_backoff_s * (2**attempt))
                continue
            except EncodeError:
                self.failed += 1
                log.exception("%s to broker %d cannot be encoded", command.name, command.broker_id)
                return None
            self.sent += 1
            if command.api_key == ApiKey.DESCRIBE_LOG_DIRS:
                return body
            if command.api_key == ApiKey.LEADER_AND_ISR:
                body = answer_by_name(command.body, body)  # v5+ answers per topic id
            errors = response_errors(command, body, skip=_ALREADY_HELD)
            if errors:
                # A whole request refused for its controller epoch means a newer controller.
                level = logging.WARNING if body.get("error_code") == ErrorCode.STALE_CONTROLLER_EPOCH else logging.INFO
                log.log(level, "%s to broker %d answered: %s", command.name, command.broker_id, ", ".join(errors[:10]))
            return body
        return None

    async def forget(self, broker_id: int) -> None:
        """A broker that died, or came back under a new session, loses its queue and its
        connection (Kafka's ControllerChannelManager.removeBroker, on a broker's failure and on
        a bounced one's): what was queued for its old session is dropped, the request in flight
        cancelled - a StopReplica among them counts as sent, as an undelivered one does - so
        the requests of its next session (the startup LeaderAndIsr) never wait behind requests
        to a dead socket, each of which would hold the queue for up to ``request_timeout_s``."""
        q = self._queues.pop(broker_id, None)
        worker = self._workers.pop(broker_id, None)
        if q is None or worker is None:
            return
        dropped = 0
        while not q.empty():
            item = q.get_nowait()
            if item is not None:
                dropped += 1
                if item[1] is not None:
                    item[1].done()
        worker.cancel()  # its request in flight: its countdown is done in the worker's finally
        await asyncio.gather(worker, return_exceptions=True)
        if dropped:
            self.failed += dropped
            log.info("broker %d went or came back under a new session: %d queued request(s) to it dropped",
                     broker_id, dropped)
        disconnect = getattr(self.transport, "disconnect", None)
        if disconnect is not None:
            await disconnect(broker_id)

    async def close(self) -> None:
        workers, self._workers = list(self._workers.values()), {}
        queues, self._queues = list(self._queues.values()), {}
        for q in queues:
            q.put_nowait(None)
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


def describe_failed_dirs(body: dict) -> str:
    """A DescribeLogDirs answer's errors in a few words (the answer itself names every replica
    of the broker: hundreds of thousands of characters on a large cluster)."""
    parts = []
    if body.get("error_code", 0):
        parts.append(f"error {error_name(body['error_code'])}")
    for result in body.get("results") or []:
        if result.get("error_code", 0):
            parts.append(f"{result.get('log_dir')}: {error_name(result['error_code'])}")
    return ", ".join(parts) or "no directory described"
