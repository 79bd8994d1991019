"""End to end: kafka-reassign moves replicas between brokers and between their log directories
(KIP-113), as an operator runs it with a reassignment JSON whose ``log_dirs`` name directories.

Real ZooKeeper (the session fixture), ``reassignd sim`` with two log directories per broker,
one ``reassignd controller``, and the kafka-reassign command as a process. A directory a broker
lacks is refused before anything changes. One partition moves
within its broker (a future log copies at the log-dir throttle, then takes over), one gains a
replica on a new broker created straight in the named directory while its old replica moves
to the other directory of its broker. ``--progress`` shows the intra-broker moves;
``--verify`` reports them and, once all are done, removes the log-dir throttle; the
controller removes the inter-broker throttle (KIP-179). DescribeLogDirs then shows every
replica on the named broker, in the named directory.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from client.admin import AdminClient
from tests.e2e.processes import running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(180)]

BIN = Path(sys.executable).parent / "kafka-reassign"
CLI = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "client.cli"]
D1, D2 = "/data/d1", "/data/d2"
SIZE = 6 * 1024 * 1024  # bytes in each partition
LOG_DIR_THROTTLE = 1024 * 1024  # bytes/s: a move between directories takes about 6 s
ALTER_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
SIM_ARGS = ["--brokers", "3", "--topics", "orders:2:1:6MiB", "--topic-brokers", "1,2", "--log-dirs", f"{D1},{D2}",
            "--bandwidth", "100MiB", "--produce-rate", "0", "--tick-ms", "50"]
EXIT_IN_PROGRESS = 6
EXIT_CLUSTER_MISMATCH = 8


def kr(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "--bootstrap-server", bootstrap, *args], capture_output=True, text=True,
                          timeout=90, stdin=subprocess.DEVNULL)


def placement(control_port: int) -> dict[tuple[str, int, int], tuple[str, dict | None]]:
    """(topic, partition, broker) -> (its directory, its future log) as the sim reports them."""
    return {(r["topic"], r["partition"], int(b)): (r["log_dir"], r["future"])
            for b, info in sim_status(control_port)["brokers"].items() for r in info["replicas"]}


async def described_dirs(bootstrap: str) -> dict[tuple[str, int, int], str]:
    async with AdminClient(bootstrap) as admin:
        logs = await admin.describe_log_dirs()
    assert not logs.errors and not any(logs.future.values())
    return {(t, p, b): r.log_dir for b, rs in logs.replicas.items() for (t, p), r in rs.items()}


def test_execute_moves_replicas_into_the_named_log_dirs_and_verify_removes_the_throttles(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(101,)) as c:
        bootstrap = c.listeners[101]
        (a,) = c.replicas("orders", 0)
        (b,) = c.replicas("orders", 1)
        new = next(x for x in (1, 2, 3) if x not in (a, b))
        before = placement(c.control_port)
        other = {D1: D2, D2: D1}
        a_target = other[before[("orders", 0, a)][0]]
        b_target = other[before[("orders", 1, b)][0]]
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            # a new replica on `new`, created straight in D2; the old one moves within broker a
            {"topic": "orders", "partition": 0, "replicas": [a, new], "log_dirs": [a_target, D2]},
            # only an intra-broker move
            {"topic": "orders", "partition": 1, "replicas": [b], "log_dirs": [b_target]},
        ]}))

        # A directory the broker lacks is refused before anything changes.
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [a, new], "log_dirs": [a_target, "/data/d9"]}]}))
        r = kr(bootstrap, "--execute", "--reassignment-json-file", str(bad), "--replica-alter-log-dirs-throttle", "1")
        assert r.returncode == EXIT_CLUSTER_MISMATCH, r.stderr + r.stdout
        assert f"broker {new} has no log dir /data/d9 (it has {D1}, {D2})" in r.stderr
        assert c.replicas("orders", 0) == [a] and c.reassignments_done()
        assert placement(c.control_port) == before
        assert not any(ALTER_KEY in ((c.json(f"/config/brokers/{x}") or {}).get("config", {})) for x in (1, 2, 3))

        began = time.monotonic()
        r = kr(bootstrap, "--execute", "--reassignment-json-file", str(plan), "--throttle", "50000000",
               "--replica-alter-log-dirs-throttle", str(LOG_DIR_THROTTLE), "--output", "json")
        assert r.returncode == 0, r.stderr + r.stdout
        out = json.loads(r.stdout)
        assert not out["log_dirs"]["failed"] and not out["log_dirs"]["timed_out"]
        assert len(out["log_dirs"]["started"]) == 3
        assert sorted(out["log_dirs"]["throttled_brokers"]) == sorted({a, b, new})
        # The log-dir throttle is a dynamic broker config now, and the copies are under way.
        for broker in (a, b):
            assert c.json(f"/config/brokers/{broker}")["config"][ALTER_KEY] == str(LOG_DIR_THROTTLE)
        now = placement(c.control_port)
        assert now[("orders", 1, b)][1] is not None and now[("orders", 1, b)][1]["log_dir"] == b_target

        progress = kr(bootstrap, "--progress", "--reassignment-json-file", str(plan))
        assert progress.returncode == 0, progress.stderr
        assert "Log directory moves:" in progress.stdout and f"orders  1          {b}" in progress.stdout

        def verified() -> bool:
            # Kafka's --preserve-throttles: the throttle stays even once every move is done.
            v = kr(bootstrap, "--verify", "--preserve-throttles", "--reassignment-json-file", str(plan))
            assert v.returncode in (0, EXIT_IN_PROGRESS), v.stderr + v.stdout
            assert "The replica-alter-log-dirs throttle was removed" not in v.stdout
            if v.returncode == EXIT_IN_PROGRESS:
                return False
            assert f"Replica orders-1 on broker {b}: Done: in {b_target}" in v.stdout
            return True

        wait_for(verified, 60, "--verify to find every move done", interval=0.5)
        for broker in (a, b):
            assert c.json(f"/config/brokers/{broker}")["config"][ALTER_KEY] == str(LOG_DIR_THROTTLE)
        v = kr(bootstrap, "--verify", "--reassignment-json-file", str(plan))
        assert v.returncode == 0, v.stderr + v.stdout
        assert "The replica-alter-log-dirs throttle was removed from brokers" in v.stdout
        # a 6 MiB copy at 1 MiB/s cannot be done sooner
        assert time.monotonic() - began >= SIZE / LOG_DIR_THROTTLE

        dirs = asyncio.run(described_dirs(bootstrap))
        assert dirs[("orders", 0, a)] == a_target
        assert dirs[("orders", 0, new)] == D2
        assert dirs[("orders", 1, b)] == b_target
        assert c.replicas("orders", 0) == [a, new] and c.replicas("orders", 1) == [b]
        # every throttle is gone: the log-dir one by --verify, the inter-broker ones by the controller
        for broker in (1, 2, 3):
            assert ALTER_KEY not in (c.json(f"/config/brokers/{broker}") or {}).get("config", {})
        wait_for(lambda: c.throttle_configs() == {}, 20, "the inter-broker throttles to be removed")
