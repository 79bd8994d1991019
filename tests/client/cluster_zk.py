"""Kafka-format znodes for the client tests, written with plain kazoo (as a Kafka cluster and
its controller would have left them), plus helpers to run the CLI the way a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kazoo.client import KazooClient

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "client.cli"]


def dumps(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def broker_payload(broker_id: int, rack: str | None = None) -> bytes:
    doc = {
        "version": 4,
        "host": "127.0.0.1",
        "port": 9090 + broker_id,
        "jmx_port": -1,
        "timestamp": "1700000000000",
        "endpoints": [f"PLAINTEXT://127.0.0.1:{9090 + broker_id}"],
    }
    if rack is not None:
        doc["rack"] = rack
    return dumps(doc)


class KafkaZk:
    """A Kafka cluster's znodes under a chroot: brokers, topics, partition states, configs."""

    def __init__(self, hosts: str):
        self.hosts = hosts
        self.zk = KazooClient(hosts=hosts, timeout=10)
        self.zk.start(timeout=15)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    def populate(self, brokers=(1, 2, 3, 4), topics=None, racks=None) -> None:
        racks = racks or {}
        topics = topics if topics is not None else {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}, "audit": {0: [1, 2, 3]}}
        for path in ("/admin", "/config/changes", "/config/brokers", "/config/topics", "/brokers/ids", "/brokers/topics"):
            self.zk.ensure_path(path)
        self.zk.create("/controller_epoch", b"1")
        for b in brokers:
            self.zk.create(f"/brokers/ids/{b}", broker_payload(b, racks.get(b)))
        for topic, parts in topics.items():
            self.add_topic(topic, parts)

    def add_topic(self, topic: str, parts: dict[int, list[int]]) -> None:
        self.zk.create(
            f"/brokers/topics/{topic}",
            dumps({"version": 2, "partitions": {str(p): r for p, r in parts.items()},
                   "adding_replicas": {}, "removing_replicas": {}}),
        )
        for p, r in parts.items():
            self.zk.create(
                f"/brokers/topics/{topic}/partitions/{p}/state",
                dumps({"version": 1, "leader": r[0], "leader_epoch": 0, "controller_epoch": 1, "isr": r}),
                makepath=True,
            )
        self.zk.create(f"/config/topics/{topic}", dumps({"version": 1, "config": {}}))

    def set_assignment(self, topic: str, parts: dict[int, list[int]]) -> None:
        self.zk.set(
            f"/brokers/topics/{topic}",
            dumps({"version": 2, "partitions": {str(p): r for p, r in parts.items()},
                   "adding_replicas": {}, "removing_replicas": {}}),
        )

    def get_json(self, path: str):
        data, _ = self.zk.get(path)
        return json.loads(data) if data else None

    def exists(self, path: str) -> bool:
        return self.zk.exists(path) is not None

    def tree(self, path: str = "/") -> dict[str, bytes]:
        """Every znode under ``path`` with its data: compare before/after to prove nothing changed."""
        out: dict[str, bytes] = {}
        stack = [path]
        while stack:
            p = stack.pop()
            data, stat = self.zk.get(p)
            out[p] = (data, stat.version)
            for child in self.zk.get_children(p):
                stack.append(f"{p.rstrip('/')}/{child}")
        return out


def write_json(tmp_path: Path, name: str, doc) -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def plan(*entries) -> dict:
    """plan(("orders", 0, [3, 4]), ...) -> Kafka's reassignment JSON."""
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries]}


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run kafka-reassign as a separate process, as a user would."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
