"""``controlled-stop N`` (sim.controlled_shutdown): over the control socket, against fake
controller listeners on real sockets that answer ControlledShutdown from a script, found the way
a broker finds them (``/controller``, then ``/reassignd/controllers/<id>``) on the ZooKeeper twin."""

import asyncio
import json
import time

import pytest

import protocol
import sim.controlled_shutdown as cs
from protocol import ApiKey
from protocol.connection import FrameConnection
from protocol.errors import ErrorCode
from protocol_aio import serve_frames
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.control import ControlServer
from sim.topics import parse_topic_spec
from znodes.twin import TwinServer

BACKOFF_S = 0.1
CLOSE = "close"  # a scripted answer: drop the connection instead


class FakeController:
    """An admin listener answering each ControlledShutdown with the next scripted answer:
    (error code, remaining partitions), CLOSE, or a coroutine function returning either."""

    def __init__(self, cid: int, *answers):
        self.cid, self.answers, self.requests = cid, list(answers), []
        self.server = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader, writer) -> None:
        try:
            await serve_frames(reader, writer, self._respond, FrameConnection.server())
        except ConnectionResetError:
            pass
        finally:
            writer.close()

    def _respond(self, frame: bytes):
        header, body = protocol.decode_request(frame)
        self.requests.append((header, body, time.monotonic()))
        answer = self.answers.pop(0) if self.answers else (ErrorCode.NONE, [])
        return self._encoded(header, answer)

    async def _encoded(self, header, answer) -> bytes:
        if callable(answer):
            answer = await answer()
        if answer == CLOSE:
            raise ConnectionResetError("scripted")
        code, remaining = answer
        body = {"error_code": int(code),
                "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}
        return protocol.encode_response(header["request_api_key"], header["request_api_version"],
                                        header["correlation_id"], body)


@pytest.fixture
async def sim(monkeypatch):
    monkeypatch.setattr(cs, "RETRY_BACKOFF_S", BACKOFF_S)
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, ClusterSettings(brokers=3), clock=ManualClock(), serve=False)
    await cluster.start([parse_topic_spec("t:2:2:1KiB")])
    other = server.connect()
    channel = ControlServer(cluster, lambda: None)
    reader, writer = await asyncio.open_connection("127.0.0.1", await channel.start("127.0.0.1", 0))
    fakes = []

    class Sim:
        pass

    s = Sim()
    s.server, s.cluster, s.other = server, cluster, other

    async def ask(line: str):
        writer.write(line.encode() + b"\n")
        await writer.drain()
        answer = (await reader.readline()).decode().rstrip("\n")
        return json.loads(answer[3:]) if answer.startswith("OK ") else answer

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

    s.ask, s.controller, s.elect = ask, controller, elect
    yield s
    writer.close()
    await channel.close()
    for fake in fakes:
        await fake.close()
    await other.close()
    await cluster.close()


def _gaps(fake: FakeController) -> list[float]:
    times = [t for _, _, t in fake.requests]
    return [b - a for a, b in zip(times, times[1:])]


async def test_asks_again_while_partitions_remain_then_stops(sim):
    fake = await sim.controller(FakeController(101, (ErrorCode.NONE, [("t", 0)]), (ErrorCode.NONE, [])))
    czxid = sim.server.exists("/brokers/ids/2").czxid
    assert await sim.ask("controlled-stop 2") == {"stopped": 2, "controlled": True, "remaining": [], "tries": 2}
    for header, body, _ in fake.requests:  # what a Kafka 2.4+ broker sends
        assert (header["request_api_key"], header["request_api_version"], header["client_id"]) == \
            (ApiKey.CONTROLLED_SHUTDOWN, 3, "2")
        assert body == {"broker_id": 2, "broker_epoch": czxid}
    assert len(fake.requests) == 2 and _gaps(fake)[0] >= BACKOFF_S
    # then stopped as ``stop 2`` stops it: session and registration gone, logs kept
    assert sim.server.children("/brokers/ids") == ["1", "3"]
    assert not sim.cluster.broker(2).running and sim.cluster.broker(2).core.replicas()


async def test_gives_up_after_three_tries_and_stops_anyway(sim):
    fake = await sim.controller(FakeController(101, *[(ErrorCode.NONE, [("t", 1)])] * 5))
    assert await sim.ask("controlled-stop 3") == {"stopped": 3, "controlled": False, "remaining": [["t", 1]],
                                                  "tries": 3}
    assert len(fake.requests) == 3 and all(g >= BACKOFF_S for g in _gaps(fake))
    assert sim.server.children("/brokers/ids") == ["1", "2"]


async def test_not_controller_finds_the_new_one(sim):
    new = await sim.controller(FakeController(102), active=False)

    async def resigned():
        await sim.elect(102)
        return ErrorCode.NOT_CONTROLLER, []

    old = await sim.controller(FakeController(101, resigned))
    assert await sim.ask("controlled-stop 1") == {"stopped": 1, "controlled": True, "remaining": [], "tries": 2}
    assert len(old.requests) == len(new.requests) == 1


@pytest.mark.parametrize("first", [CLOSE, (ErrorCode.REQUEST_TIMED_OUT, []), (ErrorCode.UNKNOWN_SERVER_ERROR, [])])
async def test_a_lost_connection_or_a_retriable_error_is_tried_again(sim, first):
    fake = await sim.controller(FakeController(101, first))
    assert await sim.ask("controlled-stop 1") == {"stopped": 1, "controlled": True, "remaining": [], "tries": 2}
    assert len(fake.requests) == 2


async def test_an_error_a_retry_cannot_mend_ends_the_tries(sim):
    fake = await sim.controller(FakeController(101, (ErrorCode.STALE_BROKER_EPOCH, [])))
    assert await sim.ask("controlled-stop 1") == {"stopped": 1, "controlled": False, "remaining": [], "tries": 1}
    assert len(fake.requests) == 1 and sim.server.children("/brokers/ids") == ["2", "3"]


async def test_no_controller_three_tries_then_stopped(sim):
    # /controller names an instance with no listener registered, then none at all
    await sim.elect(105)
    started = time.monotonic()
    assert await sim.ask("controlled-stop 2") == {"stopped": 2, "controlled": False, "remaining": [], "tries": 3}
    assert time.monotonic() - started >= 2 * BACKOFF_S
    await sim.other.delete("/controller")
    assert await sim.ask("controlled-stop 3") == {"stopped": 3, "controlled": False, "remaining": [], "tries": 3}
    assert sim.server.children("/brokers/ids") == ["1"]


async def test_bad_ids_are_answered_as_for_stop_and_ask_nothing(sim):
    fake = await sim.controller(FakeController(101))
    assert (await sim.ask("controlled-stop 9")).startswith("ERR no broker 9")
    assert (await sim.ask("controlled-stop two")).startswith("ERR broker id must be a non-negative integer")
    assert (await sim.ask("controlled-stop")).startswith("ERR unknown command")
    assert await sim.ask("stop 2") == {"stopped": 2}
    assert (await sim.ask("controlled-stop 2")).startswith("ERR broker 2 is not running")
    assert fake.requests == [] and "controlled-stop N" in (await sim.ask("help"))["help"]


async def test_no_leader_takes_it_into_an_isr_until_it_registers_again(sim):
    await sim.controller(FakeController(101, (ErrorCode.NONE, [])))
    await sim.ask("controlled-stop 2")
    assert sim.cluster.model.shutting_down == {2}
    assert await sim.ask("start 2") == {"started": 2}
    assert sim.cluster.model.shutting_down == set()
