"""The control channel over a real socket, in front of a cluster on the ZooKeeper twin."""

import asyncio
import json

import pytest

from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.control import ControlServer
from sim.topics import parse_topic_spec
from znodes.twin import TwinServer


@pytest.fixture
async def control():
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, ClusterSettings(brokers=3), clock=ManualClock(), serve=False)
    await cluster.start([parse_topic_spec("t:2:2:1KiB")])
    shutdown = asyncio.Event()
    channel = ControlServer(cluster, shutdown.set)
    port = await channel.start("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def ask(line: str) -> str:
        writer.write(line.encode() + b"\n")
        await writer.drain()
        return (await reader.readline()).decode().rstrip("\n")

    yield server, cluster, ask, shutdown, (reader, writer)
    writer.close()
    await channel.close()
    await cluster.close()


async def test_stop_start_restart_status(control):
    server, cluster, ask, _, _ = control
    assert await ask("stop 2") == 'OK {"stopped": 2}'
    assert server.children("/brokers/ids") == ["1", "3"]
    assert (await ask("stop 2")).startswith("ERR broker 2 is not running")
    assert await ask("start 2") == 'OK {"started": 2}'
    assert server.children("/brokers/ids") == ["1", "2", "3"]
    czxid = server.exists("/brokers/ids/3").czxid
    assert await ask("restart 3") == 'OK {"restarted": 3}'
    assert server.exists("/brokers/ids/3").czxid > czxid
    reply = await ask("status")
    assert reply.startswith("OK ")
    status = json.loads(reply[3:])
    assert set(status["brokers"]) == {"1", "2", "3"} and all(b["running"] for b in status["brokers"].values())
    hosted = [r for b in status["brokers"].values() for r in b["replicas"]]
    assert len(hosted) == 4 and all(r["size"] == 1024 for r in hosted)


@pytest.mark.parametrize(
    "line,answer",
    [
        ("", "ERR empty command"),
        ("stop", "ERR unknown command"),
        ("stop two", "ERR broker id must be a non-negative integer"),
        ("stop 9", "ERR no broker 9"),
        ("explode 1", "ERR unknown command"),
        ("help", "OK "),
    ],
)
async def test_bad_commands_are_answered_and_change_nothing(control, line, answer):
    server, _, ask, _, _ = control
    assert (await ask(line)).startswith(answer)
    assert server.children("/brokers/ids") == ["1", "2", "3"]


async def test_overlong_line_closes_only_that_connection(control):
    server, _, ask, _, (reader, writer) = control
    writer.write(b"x" * 5000 + b"\n")
    await writer.drain()
    assert (await reader.readline()).startswith(b"ERR line too long")
    assert await reader.read() == b""
    assert server.children("/brokers/ids") == ["1", "2", "3"]


async def test_shutdown_command_sets_the_stop_event(control):
    _, _, ask, shutdown, _ = control
    assert await ask("shutdown") == 'OK {"shutdown": true}'
    assert shutdown.is_set()
