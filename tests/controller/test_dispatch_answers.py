"""The dispatcher turns broker answers into engine events (controller.shell.dispatch): a
DescribeLogDirs answer is what the broker hosts (engine step 9); StopReplica requests nobody
waits for end no move; a LeaderAndIsr partition refused for its leader epoch (a resend to a
broker that holds it) is neither a failure nor retried."""

from __future__ import annotations

import asyncio
import logging

from controller.core.commands import Outbox
from controller.core.config import ControllerConfig
from controller.core.events import ReplicasHosted, StopReplicaSent
from controller.shell.dispatch import Dispatcher
from protocol.errors import ErrorCode
from tests.controller.helpers import state
from znodes.values import Broker

BROKERS = {b: Broker(b, "127.0.0.1", 9090 + b, None, 100 + b) for b in (1, 2)}
CONFIG = ControllerConfig(retry_backoff_s=0.0, request_retries=2)


class Answering:
    """A transport whose brokers answer from ``answers`` (api key -> body)."""

    def __init__(self, answers: dict):
        self.answers = answers
        self.calls: list[tuple[int, int]] = []

    async def request(self, broker_id, api_key, api_version, body):
        self.calls.append((broker_id, api_key))
        return self.answers[api_key]

    async def close(self):
        pass


async def dispatched(commands, answers) -> tuple[list, Answering]:
    queue: asyncio.Queue = asyncio.Queue()
    transport = Answering(answers)
    dispatcher = Dispatcher(transport, queue, CONFIG, is_live=lambda b: True)
    dispatcher.send(commands)
    for _ in range(20):
        await asyncio.sleep(0)
    await dispatcher.close()
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events, transport


async def test_a_describe_log_dirs_answer_becomes_what_the_broker_hosts():
    box = Outbox(101, 3, BROKERS)
    box.describe_log_dirs(2)
    answer = {"throttle_time_ms": 0, "results": [{"error_code": 0, "log_dir": "/d", "topics": [
        {"name": "t", "partitions": [
            {"partition_index": 0, "partition_size": 1, "offset_lag": 0, "is_future_key": False},
            {"partition_index": 1, "partition_size": 1, "offset_lag": 0, "is_future_key": True},
        ]},
    ]}]}
    events, _ = await dispatched(box.commands(), {35: answer})
    # A future (intra-broker) log is not a replica yet; the sizes go with it (step 2c).
    assert events == [ReplicasHosted(2, frozenset({("t", 0)}), {("t", 0): 1})]
    failed = {"throttle_time_ms": 0, "results": [{"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": "/d", "topics": []}]}
    events, _ = await dispatched(box.commands(), {35: failed})
    assert events == []  # an answer that could not list everything says nothing is absent
    # A whole answer refused (its top-level error) says nothing at all, whatever it lists.
    refused = {**answer, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
    events, _ = await dispatched(box.commands(), {35: refused})
    assert events == []


async def test_an_answer_with_a_failed_directory_still_gives_its_online_directories_replicas_and_sizes(caplog):
    box = Outbox(101, 3, BROKERS)
    box.describe_log_dirs(2)
    partial = {"throttle_time_ms": 0, "error_code": 0, "results": [
        {"error_code": 0, "log_dir": "/d1", "topics": [{"name": "t", "partitions": [
            {"partition_index": p, "partition_size": 100 + p, "offset_lag": 0, "is_future_key": False}
            for p in range(500)]}]},
        {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": "/d2", "topics": []},
    ]}
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        events, _ = await dispatched(box.commands(), {35: partial})
    # What the online directory holds, marked partial (the failed directory's replicas are not
    # absent), with its sizes.
    listed = {("t", p): 100 + p for p in range(500)}
    assert events == [ReplicasHosted(2, frozenset(listed), listed, complete=False)]
    said = [r.getMessage() for r in caplog.records if "could not say" in r.getMessage()]
    assert said == ["broker 2 could not say all it hosts: /d2: KAFKA_STORAGE_ERROR"]  # not the whole answer


async def test_only_the_stop_replica_a_move_waits_for_is_reported_sent():
    box = Outbox(101, 3, BROKERS)
    box.stop_replica(1, ("t", 0), 4)
    box.stop_replica(2, ("t", 1), 4, wait=False)
    stopped = {"error_code": 0, "partition_errors": []}
    events, transport = await dispatched(box.commands(), {5: stopped})
    assert sorted(transport.calls) == [(1, 5), (2, 5)]
    assert events == [StopReplicaSent((("t", 0),))]
    box = Outbox(101, 3, BROKERS)
    box.stop_replica(2, ("t", 1), 4, wait=False)
    events, _ = await dispatched(box.commands(), {5: stopped})
    assert events == []


async def test_a_partition_refused_for_its_leader_epoch_is_not_retried_nor_a_warning(caplog):
    box = Outbox(101, 3, BROKERS)
    box.leader_and_isr(1, ("t", 0), state(1, (1, 2), leader_epoch=5), replicas=(1, 2), adding=(), removing=(), is_new=False)
    refused = {"error_code": 0, "partition_errors": [
        {"topic_name": "t", "partition_index": 0, "error_code": int(ErrorCode.STALE_CONTROLLER_EPOCH)},
    ]}
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        events, transport = await dispatched(box.commands(), {4: refused})
    assert transport.calls == [(1, 4)] and events == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # A request refused whole for its controller epoch is a newer controller: a warning.
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await dispatched(box.commands(), {4: {**refused, "error_code": int(ErrorCode.STALE_CONTROLLER_EPOCH)}})
    assert [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_hosted_replicas_reads_partitions_and_sizes_in_one_pass():
    from controller.core.commands import hosted_replicas, hosted_sizes

    def part(i, size, future=False):
        return {"partition_index": i, "partition_size": size, "offset_lag": 0, "is_future_key": future}

    ok = {"error_code": 0, "results": [
        {"error_code": 0, "log_dir": "/a", "topics": [{"name": "t", "partitions": [part(0, 5), part(1, -1), part(2, 7, True)]}]},
        {"error_code": 0, "log_dir": "/b", "topics": [{"name": "t", "partitions": [part(0, 9), part(3, 2)]}]},
    ]}
    assert hosted_replicas(ok) == ({("t", 0), ("t", 1), ("t", 3)}, {("t", 0): 9, ("t", 3): 2})
    assert hosted_sizes(ok) == {("t", 0): 9, ("t", 3): 2}
    failed_dir = {"error_code": 0, "results": [dict(ok["results"][0], error_code=57), ok["results"][1]]}
    assert hosted_replicas(failed_dir) is None
    assert hosted_sizes(failed_dir) == {("t", 0): 9, ("t", 3): 2}  # the failed dir's sizes are unknown, not 0
    assert hosted_replicas({"error_code": 1}) is None


class Hanging(Answering):
    """Broker 1 answers nothing while ``hung`` (a dead socket); ``disconnect`` is recorded."""

    def __init__(self, answers: dict):
        super().__init__(answers)
        self.hung = True
        self.disconnected: list[int] = []

    async def request(self, broker_id, api_key, api_version, body):
        if broker_id == 1 and self.hung:
            await asyncio.Event().wait()
        return await super().request(broker_id, api_key, api_version, body)

    async def disconnect(self, broker_id):
        self.disconnected.append(broker_id)


async def test_a_broker_whose_session_ended_loses_its_queue_and_connection():
    """Kafka's ControllerChannelManager.removeBroker: what was queued for a dead session is
    dropped and the request in flight cancelled at once, the StopReplica a move waits for
    counted as sent; the next session's requests go out without waiting behind them."""
    queue: asyncio.Queue = asyncio.Queue()
    transport = Hanging({5: {"error_code": 0, "partition_errors": []}, 6: {"error_code": 0}})
    dispatcher = Dispatcher(transport, queue, ControllerConfig(request_timeout_s=30.0), is_live=lambda b: True)
    box = Outbox(101, 3, BROKERS)
    box.stop_replica(1, ("t", 0), 4)
    box.stop_replica(2, ("t", 1), 4)
    dispatcher.send(box.commands())
    box = Outbox(101, 3, BROKERS)
    box.stop_replica(1, ("t", 2), 4)
    dispatcher.send(box.commands())  # queued behind the hung one
    for _ in range(20):
        await asyncio.sleep(0)
    assert queue.empty()  # t-0's StopReplica hangs: the first countdown waits
    await dispatcher.forget(1)
    assert transport.disconnected == [1]
    sent = [queue.get_nowait() for _ in range(queue.qsize())]
    assert sorted(tp for e in sent for tp in e.partitions) == [("t", 0), ("t", 1), ("t", 2)]
    transport.hung = False  # its next session answers
    box = Outbox(101, 3, BROKERS)
    box.stop_replica(1, ("t", 3), 4)
    dispatcher.send(box.commands())
    async with asyncio.timeout(2):
        assert await queue.get() == StopReplicaSent((("t", 3),))
    await dispatcher.forget(7)  # a broker it never sent to: nothing to do
    await dispatcher.close()
