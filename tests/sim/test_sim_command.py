"""`reassignd sim` as a process on the real ZooKeeper: ready line, registrations, topics, a
standard Kafka client (kcat) reading Metadata, the control channel, clean SIGTERM."""

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest

from tests.sim.bodies import update_metadata
from tests.sim.wire import Conn
from znodes import store as zstore

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

READY_TIMEOUT = 60


async def _start(args):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reassignd", "sim", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return proc


async def _ready(proc):
    line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT)
    if not line:
        err = await proc.stderr.read()
        raise AssertionError(f"sim exited before ready: {err.decode()[-2000:]}")
    return json.loads(line)


async def _control(address, line):
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(line.encode() + b"\n")
    await writer.drain()
    answer = (await reader.readline()).decode().strip()
    writer.close()
    return answer


async def _json(store, path):
    data, _ = await store.get(path)
    return json.loads(data)


async def test_sim_process_end_to_end(zk_hosts):
    proc = await _start(["--zookeeper", zk_hosts, "--brokers", "3", "--first-id", "4", "--racks", "3",
                         "--topics", "orders:6:3:1MiB", "logs:2:1", "--log-level", "WARNING"])
    zk = await zstore.connect(zk_hosts)
    try:
        ready = await _ready(proc)
        assert sorted(ready["brokers"]) == ["4", "5", "6"]
        assert sorted(await zk.children("/brokers/ids")) == ["4", "5", "6"]
        topic = await _json(zk, "/brokers/topics/orders")
        assert {p: r for p, r in topic["partitions"].items()} == ready["topics"]["orders"]
        assert (await _json(zk, "/brokers/ids/5"))["rack"] == "rack-1"

        # Brokers learn the cluster from the controller's UpdateMetadata; then kcat
        # (librdkafka, a standard client) reads it back with ApiVersions and Metadata.
        host, port = ready["brokers"]["4"].rsplit(":", 1)
        brokers = {b: (int(a.rsplit(":", 1)[1]), f"rack-{b - 4}") for b, a in
                   ((int(k), v) for k, v in ready["brokers"].items())}
        conn = await Conn.open(int(port))
        partitions = {int(p): r for p, r in ready["topics"]["orders"].items()}
        answer = await conn.call(6, 6, update_metadata(brokers, {"orders": partitions}, controller_id=4))
        assert answer == {"error_code": 0}
        conn.close()
        out = await asyncio.to_thread(
            subprocess.run, ["kcat", "-L", "-J", "-b", ready["brokers"]["4"], "-m", "10"],
            capture_output=True, text=True, timeout=30,
        )
        assert out.returncode == 0, out.stderr
        listing = json.loads(out.stdout)
        assert sorted(b["id"] for b in listing["brokers"]) == [4, 5, 6]
        (orders,) = [t for t in listing["topics"] if t["topic"] == "orders"]
        assert len(orders["partitions"]) == 6
        assert listing["controllerid"] == 4

        assert await _control(ready["control"], "stop 5") == 'OK {"stopped": 5}'
        assert sorted(await zk.children("/brokers/ids")) == ["4", "6"]
        assert await _control(ready["control"], "start 5") == 'OK {"started": 5}'
        assert sorted(await zk.children("/brokers/ids")) == ["4", "5", "6"]

        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert await zk.children("/brokers/ids") == []
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await zk.close()


async def test_existing_topic_is_an_error_that_changes_nothing(zk_hosts):
    zk = await zstore.connect(zk_hosts)
    try:
        await zk.ensure_path("/brokers/topics")
        await zk.create("/brokers/topics/orders", b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}')
        proc = await _start(["--zookeeper", zk_hosts, "--brokers", "2", "--topics", "fresh:1:1", "orders:1:1"])
        out, err = await asyncio.wait_for(proc.communicate(), READY_TIMEOUT)
        assert proc.returncode == 1
        assert b"topic 'orders' already exists" in err
        assert await zk.exists("/brokers/topics/fresh") is None
        assert await zk.children("/brokers/ids") == []
    finally:
        await zk.close()
