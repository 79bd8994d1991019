"""ISR changes the Kafka 2.7+ way (sim.alter_partition, ``isr_via="alter_partition"``): a fake
controller on a real socket, registered and elected on the ZooKeeper twin as
tests/sim/test_controlled_stop.py's are, records each AlterPartition and answers from a script.
Topics are placed on broker 1 only, so it leads every partition; a LeaderAndIsr then adds a
replica on broker 2, which catches up (1 MB at 1 MB/s) and makes broker 1 propose it."""

import asyncio
import json
import logging

import pytest

import protocol
from protocol import ApiKey
from protocol.connection import FrameConnection
from protocol.errors import ErrorCode
from protocol_aio import serve_frames
from reassignd.sim import parse_args, settings_from
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state
from znodes.twin import TwinServer

MB = 1_000_000
CLOSE = "close"  # a scripted answer: drop the connection instead
STATE = "/brokers/topics/{}/partitions/{}/state"
NOTIFICATIONS = "/isr_change_notification"


def grant(body: dict, partition_epoch: int | None = None) -> dict:
    """The controller wrote every ISR asked for: NONE, each at the next (or the given) epoch."""
    return {"throttle_time_ms": 0, "error_code": 0, "topics": [
        {"topic_name": t["topic_name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": 0, "leader_id": body["broker_id"],
             "leader_epoch": p["leader_epoch"], "isr": p["new_isr"], "leader_recovery_state": 0,
             "partition_epoch": p["partition_epoch"] + 1 if partition_epoch is None else partition_epoch}
            for p in t["partitions"]]}
        for t in body["topics"]]}


def refuse(code: int):
    """Every partition answered with ``code``."""
    def answer(body: dict) -> dict:
        return {"throttle_time_ms": 0, "error_code": 0, "topics": [
            {"topic_name": t["topic_name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": int(code), "leader_id": -1,
                 "leader_epoch": -1, "isr": [], "leader_recovery_state": 0, "partition_epoch": -1}
                for p in t["partitions"]]}
            for t in body["topics"]]}
    return answer


def top_level(code: int):
    return lambda body: {"throttle_time_ms": 0, "error_code": int(code), "topics": []}


class FakeController:
    """A controller's admin listener answering each AlterPartition with the next scripted answer
    (a function of the request body, a coroutine function returning an answer, or CLOSE);
    :func:`grant` once the script is used up."""

    def __init__(self, cid: int, *answers):
        self.cid, self.answers, self.requests, self.connections = cid, list(answers), [], 0
        self.server = None
        self._serving: dict[asyncio.Task, asyncio.StreamWriter] = {}

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.server.close()
        await self.server.wait_closed()
        # Connections still open end from this side, so that no handler is left to be cancelled.
        for writer in self._serving.values():
            writer.close()
        if self._serving:
            await asyncio.wait(list(self._serving), timeout=5)

    async def _serve(self, reader, writer) -> None:
        self.connections += 1
        task = asyncio.current_task()
        self._serving[task] = writer
        try:
            await serve_frames(reader, writer, self._respond, FrameConnection.server())
        except OSError:  # the scripted CLOSE, or the peer gone
            pass
        finally:
            writer.close()
            del self._serving[task]

    def _respond(self, frame: bytes):
        header, body = protocol.decode_request(frame)
        self.requests.append((header, body))
        return self._encoded(header, body, self.answers.pop(0) if self.answers else grant)

    async def _encoded(self, header, body, answer) -> bytes:
        if answer == CLOSE:
            raise ConnectionResetError("scripted")
        answered = answer(body)
        if asyncio.iscoroutine(answered):
            answered = await answered
        return protocol.encode_response(header["request_api_key"], header["request_api_version"],
                                        header["correlation_id"], answered)

    def proposals(self, index: int = -1) -> list[tuple]:
        """(topic, partition, leader epoch, new ISR, partition epoch) of one request."""
        _, body = self.requests[index]
        return [(t["topic_name"], p["partition_index"], p["leader_epoch"], p["new_isr"], p["partition_epoch"])
                for t in body["topics"] for p in t["partitions"]]


def _settings(isr_via: str = "alter_partition") -> ClusterSettings:
    return ClusterSettings(
        brokers=3,
        topic_brokers=(1,),
        copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0),
        broker=BrokerConfig(replica_lag_time_max=3.0, isr_notification_quiet=0.5, isr_notification_max_delay=5.0),
        isr_via=isr_via,
    )


@pytest.fixture
async def sim(request):
    server, clock = TwinServer(), ManualClock()
    cluster = SimulatedCluster(server.connect, _settings(getattr(request, "param", "alter_partition")), clock=clock,
                               serve=False)
    await cluster.start()
    other = server.connect()
    fakes = []

    class Sim:
        pass

    s = Sim()
    s.server, s.cluster, s.clock, s.other = server, cluster, clock, other

    async def controller(fake: FakeController, active: bool = True) -> FakeController:
        port = await fake.start()
        fakes.append(fake)
        await other.create(f"/reassignd/controllers/{fake.cid}", json.dumps(
            {"version": 1, "host": "127.0.0.1", "port": port}).encode(), ephemeral=True, makepath=True)
        if active:
            await elect(fake.cid)
        return fake

    async def elect(cid: int) -> None:
        data = json.dumps({"version": 1, "brokerid": cid, "timestamp": "1"}).encode()
        if await other.exists("/controller"):
            await other.set("/controller", data)
        else:
            await other.create("/controller", data, ephemeral=True)

    async def tick(seconds: float, step: float = 0.25) -> None:
        end = clock() + seconds
        while clock() < end - 1e-9:
            clock.advance(step)
            await cluster.advance()
            # An advance no longer waits for its AlterPartition answer (sim.alter_partition): these
            # tests look at each advance's outcome, so they wait for it here.
            await cluster.wait_alter_partition_answers()

    async def add_follower(topic: str, partitions, *, follower: int = 2, leader_epoch: int = 1,
                           zk_version: int = 0) -> None:
        """The controller's LeaderAndIsr adding ``follower`` to partitions broker 1 leads alone."""
        body = leader_and_isr(topic, [partition_state(p, 1, [1, follower], isr=[1], leader_epoch=leader_epoch,
                                                      zk_version=zk_version, adding=[follower]) for p in partitions])
        for b in (1, follower):
            assert cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0

    s.controller, s.elect, s.tick, s.add_follower = controller, elect, tick, add_follower
    s.leader = lambda topic, p: cluster.model.get(topic, p, 1)
    yield s
    await other.close()
    await cluster.close()
    for fake in fakes:
        await fake.close()


async def test_a_caught_up_follower_is_proposed_to_the_controller_and_zookeeper_is_left_alone(sim):
    fake = await sim.controller(FakeController(101, lambda body: grant(body, partition_epoch=5)))
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    state = sim.server.read(STATE.format("t", 0))
    await sim.tick(0.75)
    assert fake.requests == []  # not caught up yet
    await sim.tick(0.25)  # 1 MB at 1 MB/s: caught up at t=1
    assert len(fake.requests) == 1
    header, body = fake.requests[0]
    assert (header["request_api_key"], header["request_api_version"], header["client_id"]) == \
        (ApiKey.ALTER_PARTITION, 1, "1")
    assert (body["broker_id"], body["broker_epoch"]) == (1, sim.server.exists("/brokers/ids/1").czxid)
    assert [p["leader_recovery_state"] for t in body["topics"] for p in t["partitions"]] == [0]
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0)]
    # the answer is adopted: its ISR, its partition epoch as the zkVersion
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1, 2), 5)
    # nothing written to ZooKeeper by the broker: the controller does that
    await sim.tick(6.0)  # past the notification delays of the ZooKeeper way
    assert sim.server.read(STATE.format("t", 0)) == state
    assert sim.server.children(NOTIFICATIONS) == []
    # a later change goes from the adopted state: broker 2 stops, the leader shrinks the ISR
    await sim.cluster.stop_broker(2)
    await sim.tick(3.5)
    assert len(fake.requests) == 2 and fake.proposals() == [("t", 0, 1, [1], 5)]
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1,), 6)
    assert fake.connections == 1  # one connection kept to the controller, as Kafka's channel is
    assert sim.server.read(STATE.format("t", 0)) == state and sim.server.children(NOTIFICATIONS) == []


async def test_one_request_carries_every_change_of_an_advance(sim):
    fake = await sim.controller(FakeController(101))
    await sim.cluster.create_topics([parse_topic_spec("t:3:1:1MB"), parse_topic_spec("u:1:1:1MB")])
    await sim.add_follower("t", [0, 1, 2])
    await sim.add_follower("u", [0])
    await sim.tick(3.75)
    assert len(fake.requests) == 0  # 4 MB shared at 1 MB/s by broker 2: caught up at t=4, all at once
    await sim.tick(0.25)
    assert len(fake.requests) == 1
    _, body = fake.requests[0]
    assert [t["topic_name"] for t in body["topics"]] == ["t", "u"]
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0), ("t", 1, 1, [1, 2], 0), ("t", 2, 1, [1, 2], 0),
                                ("u", 0, 1, [1, 2], 0)]
    assert all(sim.leader(t, p).isr == (1, 2) for t, p in (("t", 0), ("t", 1), ("t", 2), ("u", 0)))


@pytest.mark.parametrize("code", [ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.FENCED_LEADER_EPOCH,
                                  ErrorCode.NEW_LEADER_ELECTED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  ErrorCode.INVALID_REQUEST])
async def test_a_refused_change_waits_for_the_controllers_leader_and_isr(sim, code):
    fake = await sim.controller(FakeController(101, refuse(code)))
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    await sim.tick(1.0)
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0)]
    await sim.tick(5.0)
    assert len(fake.requests) == 1  # not proposed again: the broker's state is out of date
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1,), 0)
    # the controller's LeaderAndIsr brings the state to propose from
    await sim.add_follower("t", [0], leader_epoch=2, zk_version=3)
    await sim.tick(0.25)
    assert len(fake.requests) == 2 and fake.proposals() == [("t", 0, 2, [1, 2], 3)]
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1, 2), 4)


@pytest.mark.parametrize("first", [
    refuse(ErrorCode.OPERATION_NOT_ATTEMPTED),
    refuse(ErrorCode.INELIGIBLE_REPLICA),
    top_level(ErrorCode.NOT_CONTROLLER),
    top_level(ErrorCode.STALE_BROKER_EPOCH),
    CLOSE,
], ids=["operation-not-attempted", "ineligible-replica", "not-controller", "stale-broker-epoch", "dropped-connection"])
async def test_an_unapplied_or_unanswered_change_is_proposed_again(sim, first):
    fake = await sim.controller(FakeController(101, first))
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    await sim.tick(1.0)  # 1 MB at 1 MB/s: caught up at t=1
    assert len(fake.requests) == 1 and sim.leader("t", 0).isr == (1,)
    await sim.tick(0.25)  # the next advance
    assert len(fake.requests) == 2 and fake.proposals(0) == fake.proposals(1) == [("t", 0, 1, [1, 2], 0)]
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1, 2), 1)
    assert fake.connections == (2 if first == CLOSE else 1)


async def test_an_answer_overtaken_by_a_leader_and_isr_is_not_adopted(sim):
    async def elected_meanwhile(body):
        await sim.add_follower("t", [0], leader_epoch=2, zk_version=3)  # arrives while the request is out
        return grant(body)  # NONE for leader epoch 1

    fake = await sim.controller(FakeController(101, elected_meanwhile))
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    await sim.tick(1.0)
    assert fake.proposals() == [("t", 0, 1, [1, 2], 0)]
    leader = sim.leader("t", 0)
    assert (leader.leader_epoch, leader.isr, leader.zk_version) == (2, (1,), 3)  # the LeaderAndIsr's state
    await sim.tick(0.25)  # proposed again from it
    assert fake.proposals() == [("t", 0, 2, [1, 2], 3)] and (leader.isr, leader.zk_version) == ((1, 2), 4)


async def test_no_controller_then_a_new_one_is_found(sim, caplog):
    caplog.set_level(logging.INFO, logger="sim.alter_partition")
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    await sim.tick(1.5)  # no /controller: no answer, no crash, nothing adopted
    await sim.elect(105)  # /controller names an instance with no listener registered
    await sim.tick(1.5)
    assert sim.leader("t", 0).isr == (1,)
    unanswered = [r for r in caplog.records if "not answered" in r.getMessage()]
    assert len(unanswered) == 1 and unanswered[0].levelno == logging.INFO  # once, not at every advance
    new = await sim.controller(FakeController(102), active=False)

    async def resigned(body):
        await sim.elect(102)
        return top_level(ErrorCode.NOT_CONTROLLER)(body)

    old = await sim.controller(FakeController(101, resigned))
    await sim.tick(0.5)
    assert len(old.requests) == len(new.requests) == 1
    assert (sim.leader("t", 0).isr, sim.leader("t", 0).zk_version) == ((1, 2), 1)
    assert sim.server.children(NOTIFICATIONS) == []
    assert [r.getMessage() for r in caplog.records if "answered again" in r.getMessage()] == \
        ["broker 1: AlterPartition answered again"]


@pytest.mark.parametrize("sim", ["zookeeper"], indirect=True)
async def test_the_zookeeper_way_stays_the_default_and_asks_no_controller(sim):
    assert ClusterSettings().isr_via == "zookeeper" and sim.cluster.settings.isr_via == "zookeeper"
    fake = await sim.controller(FakeController(101))
    await sim.cluster.create_topics([parse_topic_spec("t:1:1:1MB")])
    await sim.add_follower("t", [0])
    await sim.tick(2.0)
    assert fake.requests == []
    assert json.loads(sim.server.read(STATE.format("t", 0))[0])["isr"] == [1, 2]
    assert len(sim.server.children(NOTIFICATIONS)) == 1


def test_the_command_line_flag():
    zk = ["--zookeeper", "127.0.0.1:2181/sim", "--brokers", "2"]
    assert settings_from(parse_args(zk)).isr_via == "zookeeper"
    assert settings_from(parse_args(zk + ["--isr-via", "alter-partition"])).isr_via == "alter_partition"
    assert settings_from(parse_args(zk + ["--isr-via", "zookeeper"])).isr_via == "zookeeper"
    with pytest.raises(ValueError, match="isr_via"):
        ClusterSettings(isr_via="alter-partition")


def test_a_bad_flag_value_exits_2(capsys):
    from reassignd.sim import main

    assert main(["--zookeeper", "127.0.0.1:2181/sim", "--brokers", "2", "--isr-via", "controller"]) == 2
    err = capsys.readouterr().err
    assert "--isr-via" in err and "invalid choice" in err
