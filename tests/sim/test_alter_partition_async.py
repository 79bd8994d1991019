"""AlterPartition sent the way Kafka's AlterPartitionManager sends it (sim.alter_partition): a
tick starts a request when none is in flight and never waits for its answer; at most one request
per broker is out; a partition whose change is out (sent, or queued behind the request out) is
not proposed again until it is answered; the answer is applied when it arrives, unless the
partition's leader epoch changed meanwhile (then it is dropped, as Kafka drops it).

The fake controller is tests/sim/test_alter_partition.py's, on a real socket, registered and
elected on the ZooKeeper twin; its answers here are held (an event the test sets, or seconds of
real time) to stand for a slow controller. The in-process hook that the deterministic stateful
suite uses (``SimulatedCluster(controller_request=)``) stays synchronous: last test."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state
from tests.sim.test_alter_partition import FakeController, grant, top_level
from znodes.twin import TwinServer

MB = 1_000_000
STEP_S = 0.25  # simulated seconds per manual advance
# Real seconds an advance may take while the controller holds its answer: far below the old
# wait for that answer (sim.alter_partition's 5 s request timeout), far above an advance's cost.
ADVANCE_WITHIN_S = 1.0
# How long the slow controller of the ticker test holds its first answer (real seconds): long
# enough for many 50 ms ticks, and for a 200 KB copy at 1 MB/s, to happen meanwhile.
HOLD_S = 2.0
# Real seconds the ticker test waits for what must happen during or after the hold.
EVENTUALLY_S = 10.0
POLL_S = 0.01  # how often a wait for something to happen looks


class HeldController(FakeController):
    """FakeController whose answers each wait for ``release`` (set by the test), counting how
    many requests it holds at once."""

    def __init__(self, cid: int, *answers):
        super().__init__(cid, *answers)
        self.release = asyncio.Event()
        self.holding = self.most_held = 0

    def held(self, answer=grant):
        async def respond(body):
            self.holding += 1
            self.most_held = max(self.most_held, self.holding)
            try:
                await self.release.wait()
            finally:
                self.holding -= 1
            return answer(body)
        return respond


def _settings(**kwargs) -> ClusterSettings:
    return ClusterSettings(
        brokers=3,
        topic_brokers=(1,),  # broker 1 leads every partition
        copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0),
        broker=BrokerConfig(replica_lag_time_max=30.0, isr_notification_quiet=0.5, isr_notification_max_delay=5.0),
        isr_via="alter_partition",
        **kwargs,
    )


class Sim:
    def __init__(self, server: TwinServer, cluster: SimulatedCluster, clock, other):
        self.server, self.cluster, self.clock, self.other = server, cluster, clock, other
        self.fakes: list[FakeController] = []

    async def controller(self, fake: FakeController) -> FakeController:
        port = await fake.start()
        self.fakes.append(fake)
        await self.other.create(f"/reassignd/controllers/{fake.cid}", json.dumps(
            {"version": 1, "host": "127.0.0.1", "port": port}).encode(), ephemeral=True, makepath=True)
        await self.other.create("/controller", json.dumps({"version": 1, "brokerid": fake.cid, "timestamp": "1"})
                                .encode(), ephemeral=True)
        return fake

    async def tick(self, seconds: float) -> None:
        """Manual advances of STEP_S, each of which must return promptly."""
        end = self.clock() + seconds
        while self.clock() < end - 1e-9:
            self.clock.advance(STEP_S)
            await asyncio.wait_for(self.cluster.advance(), ADVANCE_WITHIN_S)

    def add_follower(self, partitions, *, leader_epoch: int = 1, zk_version: int = 0) -> None:
        """The controller's LeaderAndIsr adding broker 2 to partitions of t broker 1 leads alone."""
        body = leader_and_isr("t", [partition_state(p, 1, [1, 2], isr=[1], leader_epoch=leader_epoch,
                                                    zk_version=zk_version, adding=[2]) for p in partitions])
        for b in (1, 2):
            assert self.cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0

    def leader(self, p: int):
        return self.cluster.model.get("t", p, 1)

    def follower(self, p: int):
        return self.cluster.model.get("t", p, 2)

    async def close(self) -> None:
        await self.other.close()
        await self.cluster.close()
        for fake in self.fakes:
            if isinstance(fake, HeldController):
                fake.release.set()  # a held answer would keep its connection open past close
            await fake.close()


async def _sim(clock=None, **settings) -> Sim:
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, _settings(**settings), clock=clock, serve=False)
    await cluster.start()
    return Sim(server, cluster, clock, server.connect())


@pytest.fixture
async def sim():
    s = await _sim(ManualClock())
    yield s
    await s.close()


async def _until(predicate, what: str, within: float = EVENTUALLY_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        assert loop.time() < deadline, f"not within {within}s: {what}"
        await asyncio.sleep(POLL_S)


async def test_a_controller_holding_its_answer_for_seconds_does_not_stall_the_ticker():
    """Real time, the real ticker: while the controller holds the first answer HOLD_S seconds,
    the ticks go on (simulated time moves, another follower copies and catches up), and that
    follower's change waits for the request out instead of going beside it."""
    s = await _sim(tick=0.05)

    async def slow(body):
        await asyncio.sleep(HOLD_S)
        return grant(body)

    fake = await s.controller(FakeController(101, slow))
    try:
        await s.cluster.create_topics([parse_topic_spec("t:2:1:200KB")])
        s.add_follower([0])
        s.cluster.start_ticker()
        await _until(lambda: len(fake.requests) == 1, "t-0's follower proposed")
        loop = asyncio.get_running_loop()
        asked_at, model_at = loop.time(), s.cluster.model.now
        s.add_follower([1])  # 200 KB to copy at 1 MB/s, while the first answer is held
        await _until(lambda: s.follower(1).size_bytes == s.leader(1).size_bytes, "t-1's follower caught up")
        assert loop.time() - asked_at < HOLD_S  # copying went on while the answer was held
        assert s.cluster.model.now - model_at >= 0.2  # and simulated time with it
        await asyncio.sleep(0.3)  # ticks in which t-1 is proposed: kept back, one request is out
        assert len(fake.requests) == 1 and loop.time() - asked_at < HOLD_S
        assert s.leader(0).isr == (1,)  # nothing adopted before the answer
        await _until(lambda: s.leader(0).isr == (1, 2) and s.leader(1).isr == (1, 2), "both changes adopted")
        assert loop.time() - asked_at >= HOLD_S - 10 * POLL_S  # asked_at is read up to a poll after the hold began
        assert [fake.proposals(i) for i in range(len(fake.requests))] == [
            [("t", 0, 1, [1, 2], 0)], [("t", 1, 1, [1, 2], 0)]]
    finally:
        await s.close()


async def test_one_request_in_flight_per_broker_and_what_waited_follows_the_answer(sim):
    fake = HeldController(101)
    fake.answers = [fake.held()]
    await sim.controller(fake)
    await sim.cluster.create_topics([parse_topic_spec("t:3:1:1MB")])
    sim.add_follower([0])
    await sim.tick(1.0)  # caught up at t=1: proposed, the answer held
    await _until(lambda: fake.holding == 1, "the request at the controller")
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0)]
    sim.add_follower([1, 2])
    sizes = []
    for _ in range(12):  # 3 s of ticks with the answer held: each returns at once (tick's wait_for)
        await sim.tick(STEP_S)
        sizes.append(sim.follower(1).size_bytes)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1] == sim.leader(1).size_bytes  # copying went on
    assert len(fake.requests) == 1  # t-0 not proposed again, t-1 and t-2 kept back: one request out
    assert sim.leader(0).isr == sim.leader(1).isr == sim.leader(2).isr == (1,)
    fake.release.set()
    await sim.cluster.wait_alter_partition_answers()
    # the answer applied on arrival, and what waited sent at once after it (no tick between)
    assert len(fake.requests) == 2 and fake.proposals() == [("t", 1, 1, [1, 2], 0), ("t", 2, 1, [1, 2], 0)]
    assert [(sim.leader(p).isr, sim.leader(p).zk_version) for p in (0, 1, 2)] == [((1, 2), 1)] * 3
    assert fake.most_held == 1 and fake.connections == 1


async def test_what_waited_behind_an_unanswered_request_goes_with_the_next_advance(sim):
    """After a top-level error the queued changes wait for the next advance's request, even an
    advance that proposes nothing new (here the controller's LeaderAndIsr already has t-0's ISR)."""
    fake = HeldController(101)
    fake.answers = [fake.held(top_level(ErrorCode.NOT_CONTROLLER))]
    await sim.controller(fake)
    await sim.cluster.create_topics([parse_topic_spec("t:2:1:1MB")])
    sim.add_follower([0])
    await sim.tick(1.0)
    await _until(lambda: fake.holding == 1, "the request at the controller")
    sim.add_follower([1])
    await sim.tick(1.0)  # t-1 caught up: queued behind the request out
    assert len(fake.requests) == 1
    body = leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1, 2], leader_epoch=2, zk_version=3)])
    for b in (1, 2):
        assert sim.cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0
    fake.release.set()
    await sim.cluster.wait_alter_partition_answers()
    assert len(fake.requests) == 1  # not at once after a top-level error ...
    await sim.tick(STEP_S)  # ... but with the next advance, which has nothing new of its own
    await sim.cluster.wait_alter_partition_answers()
    assert len(fake.requests) == 2 and fake.proposals() == [("t", 1, 1, [1, 2], 0)]
    assert [sim.leader(p).isr for p in (0, 1)] == [(1, 2), (1, 2)]


async def test_an_answer_whose_leader_epoch_went_stale_is_dropped(sim, caplog):
    caplog.set_level(logging.INFO, logger="sim.alter_partition")
    fake = HeldController(101)
    fake.answers = [fake.held()]  # NONE for what was asked: leader epoch 1, ISR [1, 2]
    await sim.controller(fake)
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    sim.add_follower([0])
    await sim.tick(1.0)
    await _until(lambda: fake.holding == 1, "the request at the controller")
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0)]
    sim.add_follower([0], leader_epoch=2, zk_version=3)  # a new leader epoch while the request is out
    fake.release.set()
    await sim.cluster.wait_alter_partition_answers()
    leader = sim.leader(0)
    assert (leader.leader_epoch, leader.isr, leader.zk_version) == (2, (1,), 3)  # not the answer's ISR
    assert any("dropped" in r.getMessage() and "leader epoch" in r.getMessage() for r in caplog.records)
    await sim.tick(STEP_S)  # proposed again from the LeaderAndIsr's state, and adopted
    await sim.cluster.wait_alter_partition_answers()
    assert fake.proposals() == [("t", 0, 2, [1, 2], 3)] and (leader.isr, leader.zk_version) == ((1, 2), 4)


async def test_a_stopped_broker_drops_its_request_and_a_restarted_one_proposes_afresh(sim):
    fake = HeldController(101)
    fake.answers = [fake.held()]
    await sim.controller(fake)
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    sim.add_follower([0])
    await sim.tick(1.0)
    await _until(lambda: fake.holding == 1, "the request at the controller")
    await asyncio.wait_for(sim.cluster.stop_broker(1), ADVANCE_WITHIN_S)  # not held by the answer
    assert not sim.cluster.broker(1).alter_partition.in_flight
    fake.release.set()
    await asyncio.sleep(0.05)
    assert sim.leader(0).isr == (1,)  # nothing applied to the stopped broker
    await sim.cluster.start_broker(1)  # a restarted broker: roles forgotten until the LeaderAndIsr
    sim.add_follower([0], leader_epoch=2, zk_version=3)
    await sim.tick(STEP_S)
    await sim.cluster.wait_alter_partition_answers()
    assert fake.proposals() == [("t", 0, 2, [1, 2], 3)] and (sim.leader(0).isr, sim.leader(0).zk_version) == ((1, 2), 4)
    assert fake.connections == 2  # the stopped broker's connection went with it


async def test_the_in_process_hook_stays_synchronous():
    """SimulatedCluster(controller_request=): answered within the advance, as the deterministic
    stateful suite needs (no task, no real-time wait)."""
    asked = []

    async def controller(broker_id, api_key, version, body):
        asked.append(body)
        return grant(body)

    server, clock = TwinServer(), ManualClock()
    cluster = SimulatedCluster(server.connect, _settings(), clock=clock, serve=False, controller_request=controller)
    await cluster.start([parse_topic_spec("t:1:1:1MB")])
    try:
        body = leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1, zk_version=0,
                                                    adding=[2])])
        for b in (1, 2):
            cluster.broker(b).core.handle(4, 4, body)
        for _ in range(4):
            clock.advance(STEP_S)
            await cluster.advance()
        assert len(asked) == 1 and not cluster.broker(1).alter_partition.in_flight
        assert cluster.model.get("t", 0, 1).isr == (1, 2)  # applied before the advance returned
    finally:
        await cluster.close()
