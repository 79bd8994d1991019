"""End to end: 3 controller processes, 6 simulated brokers, 200 partitions, SIGKILL mid-flight.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd controller`` x3,
``python -m reassignd sim`` (brokers speaking the Kafka wire protocol over TCP), and a
third-party-style write of ``/admin/reassign_partitions`` with kazoo in Kafka's plain format
(no ``original_replicas``). The active controller is killed with SIGKILL at a random moment;
a standby must take over and every partition must complete.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
BROKERS = 6
TOPICS = {"orders": 80, "clicks": 60, "logs": 60}  # 200 partitions, RF 3
CONTROLLER_IDS = (101, 102, 103)
COMPLETION_TIMEOUT_S = 60


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen:
    log = open(log_path, "wb")
    return subprocess.Popen(
        [sys.executable, "-m", "reassignd", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=log,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _sim_status(port: int) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"status\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"OK "), data[:200]
    return json.loads(data[3:])


def _targets(assignments: dict[str, dict[str, list[int]]], rng: random.Random) -> dict[tuple[str, int], list[int]]:
    """A new replica set for every partition: at least one broker changes, leaders move too."""
    out = {}
    for topic, parts in assignments.items():
        for p, replicas in parts.items():
            while True:
                target = rng.sample(range(1, BROKERS + 1), len(replicas))
                if set(target) != set(replicas):
                    break
            out[(topic, int(p))] = target
    return out


def test_failover_mid_reassignment(zk_hosts, tmp_path):
    rng = random.Random(int(os.environ.get("E2E_SEED", "0")) or None)
    config = tmp_path / "controller.json"
    config.write_text(
        json.dumps(
            {
                "zk_session_timeout_s": 2.0,
                "max_incoming_per_broker": 40,
                "max_outgoing_per_broker": 40,
                "request_timeout_s": 5.0,
            }
        )
    )
    topics = [f"{name}:{n}:3:256KiB" for name, n in TOPICS.items()]
    sim = _spawn(
        ["sim", "--zookeeper", zk_hosts, "--brokers", str(BROKERS), "--topics", *topics,
         "--bandwidth", "20MiB", "--produce-rate", "0", "--tick-ms", "50", "--replica-lag-time-max-ms", "3000"],
        tmp_path / "sim.log",
    )
    controllers: dict[int, subprocess.Popen] = {}
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        line = sim.stdout.readline()
        assert line, (tmp_path / "sim.log").read_text()[-3000:]
        ready = json.loads(line)
        assert ready["event"] == "ready"
        control_port = int(ready["control"].rsplit(":", 1)[1])
        for cid in CONTROLLER_IDS:
            controllers[cid] = _spawn(
                ["controller", "--zookeeper", zk_hosts, "--id", str(cid), "--listen", "127.0.0.1:0",
                 "--config", str(config)],
                tmp_path / f"controller-{cid}.log",
            )
        _wait_for(lambda: zk.exists("/controller"), 30, "an active controller")
        _wait_for(lambda: len(zk.get_children("/reassignd/controllers")) == 3, 30, "3 registered controllers")

        targets = _targets(ready["topics"], rng)
        plain = {
            "version": 1,
            "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())],
        }
        zk.create("/admin/reassign_partitions", json.dumps(plain).encode())
        time.sleep(rng.uniform(0.05, 1.5))
        active = json.loads(zk.get("/controller")[0])["brokerid"]
        controllers[active].send_signal(signal.SIGKILL)
        controllers[active].wait()
        started = time.monotonic()

        _wait_for(
            lambda: zk.exists("/admin/reassign_partitions") is None and not zk.get_children("/admin/reassignments"),
            COMPLETION_TIMEOUT_S,
            "every reassignment to complete",
            interval=0.2,
        )
        new_active = json.loads(zk.get("/controller")[0])["brokerid"]
        assert new_active != active
        print(f"killed controller {active}; {new_active} finished {time.monotonic() - started:.1f}s later")

        # Invariants 1 and 2: every partition is at its target, nothing half-moved is left.
        for topic in TOPICS:
            znode = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
            assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}, topic
            for p, replicas in znode["partitions"].items():
                assert replicas == targets[(topic, int(p))], (topic, p)
                state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
                assert state["leader"] in replicas and set(state["isr"]) <= set(replicas), (topic, p, state)
        # Invariant 4 seen from the brokers: removed replicas are gone from disk, targets hold one.
        status = _sim_status(control_port)
        hosted = {}
        for broker, info in status["brokers"].items():
            for r in info["replicas"]:
                hosted.setdefault((r["topic"], r["partition"]), set()).add(int(broker))
        for tp, target in targets.items():
            assert hosted.get(tp) == set(target), (tp, hosted.get(tp), target)
    finally:
        zk.stop()
        zk.close()
        for proc in controllers.values():
            _stop(proc)
        _stop(sim)
