"""`reassignd snapshot` against a real ZooKeeper holding Kafka-format znodes, with replica
sizes from brokers that answer DescribeLogDirs over real sockets."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import protocol.messages as wire
from spark_jobs import snapshot
from spark_jobs.errors import SnapshotError

pytestmark = pytest.mark.zk

ROOT = Path(__file__).resolve().parents[2]


def _populate(hosts: str, brokers: dict, topics: dict, leaders: dict, removing: dict | None = None):
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=30)
    try:
        for bid, (host, port, rack) in brokers.items():
            reg = {
                "version": 4, "host": host, "port": port, "jmx_port": -1, "timestamp": "1700000000000",
                "endpoints": [f"PLAINTEXT://{host}:{port}"],
                "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            }
            if rack is not None:
                reg["rack"] = rack
            zk.create(f"/brokers/ids/{bid}", json.dumps(reg).encode(), makepath=True)
        for name, parts in topics.items():
            rem = (removing or {}).get(name, {})
            body = {
                "version": 2,
                "partitions": {str(p): r for p, r in parts.items()},
                "adding_replicas": {},
                "removing_replicas": {str(p): r for p, r in rem.items()},
            }
            zk.create(f"/brokers/topics/{name}", json.dumps(body).encode(), makepath=True)
            for p, reps in parts.items():
                state = {"controller_epoch": 1, "leader": leaders[(name, p)], "version": 1, "leader_epoch": 0, "isr": reps}
                zk.create(f"/brokers/topics/{name}/partitions/{p}/state", json.dumps(state).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


class LogDirsBroker:
    """A broker's admin port that answers ApiVersions and DescribeLogDirs with given sizes."""

    def __init__(self, sizes: dict, max_version: int = 4):
        self.sizes = sizes  # (topic, partition) -> bytes
        self.max_version = max_version
        self.requests: list = []

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer):
        try:
            while True:
                head = await reader.readexactly(4)
                frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
                header, body = wire.decode_request(frame)
                key, version, cid = header["request_api_key"], header["request_api_version"], header["correlation_id"]
                self.requests.append((key, version, body))
                if key == 18:
                    reply = {"error_code": 0, "api_keys": [
                        {"api_key": 18, "min_version": 0, "max_version": 3},
                        {"api_key": 35, "min_version": 0, "max_version": self.max_version},
                    ]}
                else:
                    by_topic: dict = {}
                    for (t, p), size in sorted(self.sizes.items()):
                        by_topic.setdefault(t, []).append(
                            {"partition_index": p, "partition_size": size, "offset_lag": 0, "is_future_key": False}
                        )
                    reply = {"throttle_time_ms": 0, "error_code": 0, "results": [
                        {"error_code": 0, "log_dir": "/var/kafka", "topics": [
                            {"name": t, "partitions": ps} for t, ps in by_topic.items()
                        ], "total_bytes": -1, "usable_bytes": -1},
                    ]}
                writer.write(wire.encode_response(key, version, cid, reply))
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    async def stop(self):
        self.server.close()
        await self.server.wait_closed()


async def test_snapshot_from_zookeeper_with_sizes(zk_hosts):
    b1 = await LogDirsBroker({("orders", 0): 1000, ("orders", 1): 2000, ("audit", 0): 30}).start()
    b2 = await LogDirsBroker({("orders", 0): 990, ("orders", 1): 2000}, max_version=1).start()
    try:
        _populate(
            zk_hosts,
            brokers={1: ("127.0.0.1", b1.port, "r1"), 2: ("127.0.0.1", b2.port, "r2")},
            topics={"orders": {0: [1, 2], 1: [2, 1]}, "audit": {0: [1, 3]}},
            leaders={("orders", 0): 1, ("orders", 1): 2, ("audit", 0): 1},
        )
        snap = await snapshot.read_cluster(zk_hosts, sizes=True, timeout=10)
    finally:
        await b1.stop()
        await b2.stop()
    assert [b["id"] for b in snap["brokers"]] == [1, 2, 3]
    assert snap["brokers"][0] == {"id": 1, "host": "127.0.0.1", "port": b1.port, "rack": "r1", "alive": True}
    # Broker 3 holds a replica but is not registered: listed as down.
    assert snap["brokers"][2] == {"id": 3, "host": None, "port": None, "rack": None, "alive": False}
    orders = {p["partition"]: p for p in snap["topics"][1]["partitions"]}
    assert orders[0]["replicas"] == [1, 2] and orders[0]["leader"] == 1 and orders[0]["isr"] == [1, 2]
    assert orders[0]["sizes"] == [1000, 990]
    assert orders[1]["sizes"] == [2000, 2000]
    assert snap["topics"][0]["partitions"][0]["sizes"] == [30, None]
    assert snap["cluster"]["source"] == zk_hosts and snap["cluster"]["warnings"] == []
    assert [v for k, v, _ in b2.requests if k == 35] == [1]  # the highest version b2 speaks
    assert [v for k, v, _ in b1.requests if k == 35] == [4]


async def test_unreachable_broker_is_a_warning_not_a_failure(zk_hosts, tmp_path):
    _populate(
        zk_hosts,
        brokers={1: ("127.0.0.1", 1, None)},  # nothing listens on port 1
        topics={"t": {0: [1]}},
        leaders={("t", 0): 1},
    )
    snap = await snapshot.read_cluster(zk_hosts, sizes=True, timeout=5)
    assert snap["topics"][0]["partitions"][0]["sizes"] is None
    assert len(snap["cluster"]["warnings"]) == 1 and "broker 1" in snap["cluster"]["warnings"][0]


def test_reassignd_snapshot_command(zk_hosts, tmp_path):
    _populate(
        zk_hosts,
        brokers={1: ("127.0.0.1", 9092, None), 2: ("127.0.0.1", 9093, None)},
        topics={"t": {0: [2, 1], 1: [1, 2]}},
        leaders={("t", 0): 2, ("t", 1): -1},
        removing={"t": {1: [2]}},
    )
    out = tmp_path / "cluster.msgpack"
    proc = subprocess.run(
        [sys.executable, "-m", "reassignd", "snapshot", "--zookeeper", zk_hosts, "--out", str(out), "--no-sizes"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 brokers, 1 topics, 2 partitions" in proc.stdout
    snap = snapshot.load(out)
    parts = snap["topics"][0]["partitions"]
    assert parts[0]["replicas"] == [2, 1] and parts[0]["leader"] == 2
    # A partition being reassigned is recorded at its target replicas.
    assert parts[1]["replicas"] == [1] and parts[1]["reassigning"] and parts[1]["leader"] == -1


def test_snapshot_command_errors(tmp_path, zk_server):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "reassignd", "snapshot", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    proc = run("--zookeeper", zk_server.connect_string, "--out", str(tmp_path / "x.yaml"))
    assert proc.returncode == 2 and "unknown snapshot extension" in proc.stderr
    proc = run("--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2 and "--zookeeper" in proc.stderr
    proc = run("--zookeeper", f"{zk_server.connect_string}/no_such_chroot", "--out", str(tmp_path / "x.json"), "--timeout", "5")
    assert proc.returncode == 1 and "does not exist" in proc.stderr
    assert not (tmp_path / "x.json").exists()


async def test_malformed_znode_is_named(zk_hosts):
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1,1]}}', makepath=True)
        zk.create("/brokers/ids/1", b'{"version":4,"host":"h","port":1,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"]}', makepath=True)
    finally:
        zk.stop()
        zk.close()
    with pytest.raises(SnapshotError, match="/brokers/topics/t"):
        await snapshot.read_cluster(zk_hosts, sizes=False)


async def test_bulk_reads_in_many_requests_keep_order(zk_hosts, monkeypatch):
    from znodes import store

    monkeypatch.setattr(store, "MULTI_READ_MAX_PATHS", 4)  # force many multiRead requests
    topics = {f"t{i:02d}": {p: [1 + (p + i) % 3, 1 + (p + i + 1) % 3] for p in range(7)} for i in range(5)}
    leaders = {(t, p): reps[0] for t, parts in topics.items() for p, reps in parts.items()}
    _populate(zk_hosts, brokers={b: ("127.0.0.1", 9000 + b, None) for b in (1, 2, 3)}, topics=topics, leaders=leaders)
    snap = await snapshot.read_cluster(zk_hosts, sizes=False)
    got = {(t["name"], p["partition"]): (p["replicas"], p["leader"]) for t in snap["topics"] for p in t["partitions"]}
    assert got == {(t, p): (reps, reps[0]) for t, parts in topics.items() for p, reps in parts.items()}
