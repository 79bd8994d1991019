"""Log directories through `reassignd sim`'s options and the control channel (on the ZooKeeper
twin): several directories per broker, a per-broker override, fail-dir and its notification."""

import asyncio
import json

import pytest

from reassignd.sim import main, parse_args, settings_from
from sim.clock import ManualClock
from sim.cluster import SimulatedCluster
from sim.control import ControlServer
from sim.topics import parse_topic_spec
from znodes.twin import TwinServer

ZK = "127.0.0.1:2181/sim"


def test_log_dirs_options_reach_the_settings():
    args = parse_args(["--zookeeper", ZK, "--brokers", "3", "--log-dirs", "/data/d1,/data/d2",
                       "--broker-log-dirs", "3=/ssd/a,/ssd/b,/ssd/c", "--disk-copy-rate", "10MiB"])
    settings = settings_from(args)
    assert settings.broker.log_dirs == ("/data/d1", "/data/d2")
    assert settings.broker_log_dirs == {3: ("/ssd/a", "/ssd/b", "/ssd/c")}
    assert settings.copy.disk_copy_rate == 10 * 1024 * 1024
    counted = settings_from(parse_args(["--zookeeper", ZK, "--brokers", "1", "--log-dirs", "2"]))
    assert counted.broker.log_dirs == ("/var/sim/kafka-logs-{broker}-1", "/var/sim/kafka-logs-{broker}-2")
    assert settings_from(parse_args(["--zookeeper", ZK, "--brokers", "1"])).broker.log_dirs == ()


@pytest.mark.parametrize("argv, message", [
    (["--log-dirs", "0"], "1 to 64"),
    (["--log-dirs", "data/d1"], "not an absolute path"),
    (["--log-dirs", "/d,/d"], "listed twice"),
    (["--broker-log-dirs", "1"], "ID=DIR"),
    (["--broker-log-dirs", "9=/d"], "not among the simulated brokers"),
    (["--broker-log-dirs", "1=/d", "--broker-log-dirs", "1=/e"], "given twice"),
    (["--disk-copy-rate", "0"], "--disk-copy-rate must be positive"),
])
def test_bad_log_dirs_options_exit_2(argv, message, capsys):
    assert main(["--zookeeper", ZK, "--brokers", "2", *argv]) == 2
    err = capsys.readouterr().err
    assert "reassignd sim: error:" in err and message in err


@pytest.fixture
async def control():
    server = TwinServer()
    settings = settings_from(parse_args(["--zookeeper", ZK, "--brokers", "2", "--log-dirs", "/data/d1,/data/d2",
                                         "--broker-log-dirs", "2=/ssd/a"]))
    cluster = SimulatedCluster(server.connect, settings, clock=ManualClock(), serve=False)
    await cluster.start([parse_topic_spec("t:4:2:1KiB")])
    channel = ControlServer(cluster, asyncio.Event().set)
    port = await channel.start("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def ask(line: str):
        writer.write(line.encode() + b"\n")
        await writer.drain()
        reply = (await reader.readline()).decode().rstrip("\n")
        return reply[:3].strip(), (json.loads(reply[3:]) if reply.startswith("OK ") else reply)

    yield server, cluster, ask
    writer.close()
    await channel.close()
    await cluster.close()


async def test_fail_dir_takes_replicas_offline_and_notifies(control):
    server, cluster, ask = control
    _, status = await ask("status")
    one = status["brokers"]["1"]
    assert one["log_dirs"] == [{"path": "/data/d1", "online": True}, {"path": "/data/d2", "online": True}]
    assert status["brokers"]["2"]["log_dirs"] == [{"path": "/ssd/a", "online": True}]
    # four replicas on broker 1, spread over its two directories
    assert sorted(r["log_dir"] for r in one["replicas"]) == ["/data/d1", "/data/d1", "/data/d2", "/data/d2"]
    in_d2 = sorted((r["topic"], r["partition"]) for r in one["replicas"] if r["log_dir"] == "/data/d2")
    ok, answer = await ask("fail-dir 1 /data/d2")
    assert ok == "OK" and answer["offline"] == [{"topic": t, "partition": p} for t, p in in_d2]
    _, status = await ask("status")
    one = status["brokers"]["1"]
    assert one["log_dirs"][1] == {"path": "/data/d2", "online": False}
    assert all(r["storage_error"] == (r["log_dir"] == "/data/d2") for r in one["replicas"])
    (event,) = server.children("/log_dir_event_notification")
    data = server.read("/log_dir_event_notification/" + event)[0]
    assert json.loads(data) == {"version": 1, "broker": 1, "event": 1}
    assert (await ask("fail-dir 1 /data/d9"))[1].startswith("ERR no log directory '/data/d9'")
    assert (await ask("fail-dir x /data/d1"))[1].startswith("ERR broker id must be")
    await ask("stop 2")
    assert (await ask("fail-dir 2 /ssd/a"))[1] == "ERR broker 2 is not running"
    assert answer["halted"] is False


async def test_fail_dir_of_the_last_online_directory_halts_the_broker(control):
    """Kafka's LogManager halts a broker with no online directory left, before any
    notification; a start opens its directories again."""
    server, cluster, ask = control
    assert "2" in server.children("/brokers/ids")
    ok, answer = await ask("fail-dir 2 /ssd/a")  # broker 2's only directory
    assert ok == "OK" and answer["halted"] is True and len(answer["offline"]) == 4
    assert not cluster.brokers[2].running and "2" not in server.children("/brokers/ids")
    assert server.exists("/log_dir_event_notification") is None  # no notification was written
    _, status = await ask("status")
    assert status["brokers"]["2"]["running"] is False
    assert (await ask("start 2"))[0] == "OK"
    _, status = await ask("status")
    assert status["brokers"]["2"]["log_dirs"] == [{"path": "/ssd/a", "online": True}]
