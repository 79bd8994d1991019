"""Standard Kafka clients bootstrapped from a SIMULATED BROKER find the reassignd controller:
kafka-python's ``KafkaAdminClient`` (unchanged, no private API) reassigns, lists and describes
a broker's and a topic's configs; ``kcat -L`` names the controller and its listener.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers and one
``python -m reassignd controller`` process. A bandwidth of 1 KiB/s keeps a started move running
while the clients look at it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
CONTROLLER_ID = 101
RATE = "follower.replication.throttled.rate"
REPLICAS = "leader.replication.throttled.replicas"


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reassignd", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=open(log_path, "wb"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _set_config(zk: KazooClient, entity: str, config: dict[str, str]) -> None:
    """A dynamic config with its change notification, as Kafka's tools write it."""
    data = json.dumps({"version": 1, "config": config}).encode()
    if zk.exists(f"/config/{entity}"):
        zk.set(f"/config/{entity}", data)
    else:
        zk.create(f"/config/{entity}", data, makepath=True)
    zk.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": entity}).encode(),
              sequence=True, makepath=True)


@pytest.fixture
def cluster(zk_hosts, tmp_path):
    """(kazoo client, {broker id: "host:port"}, controller listener "host:port")."""
    config = tmp_path / "controller.json"
    config.write_text(json.dumps({"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0}))
    procs = [_spawn(["sim", "--zookeeper", zk_hosts, "--brokers", "3", "--topics", "orders:3:2:64MiB",
                     "--bandwidth", "1KiB", "--produce-rate", "0", "--tick-ms", "50"], tmp_path / "sim.log")]
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        line = procs[0].stdout.readline()
        assert line, (tmp_path / "sim.log").read_text()[-3000:]
        brokers = {int(b): addr for b, addr in json.loads(line)["brokers"].items()}
        procs.append(_spawn(["controller", "--zookeeper", zk_hosts, "--id", str(CONTROLLER_ID),
                             "--listen", "127.0.0.1:0", "--config", str(config)], tmp_path / "controller.log"))
        _wait_for(lambda: zk.exists("/controller"), 30, "the active controller")
        _wait_for(lambda: zk.exists(f"/reassignd/controllers/{CONTROLLER_ID}"), 30, "the controller's listener")
        doc = json.loads(zk.get(f"/reassignd/controllers/{CONTROLLER_ID}")[0])
        yield zk, brokers, f"{doc['host']}:{doc['port']}"
    finally:
        zk.stop()
        zk.close()
        for p in reversed(procs):
            _stop(p)


def test_kafka_python_bootstrapped_from_a_simulated_broker(cluster):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType

    zk, brokers, _ = cluster
    _set_config(zk, "brokers/2", {RATE: "9000"})
    _set_config(zk, "topics/orders", {REPLICAS: "*"})
    current = json.loads(zk.get("/brokers/topics/orders")[0])["partitions"]["0"]
    target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
    removing = [b for b in current if b not in target]

    admin = KafkaAdminClient(bootstrap_servers=brokers[1], client_id="kafka-python-sim", request_timeout_ms=20000)
    try:
        tp0 = TopicPartition("orders", 0)
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp0: target}) == {tp0: None}
        ongoing = _wait_for(admin.list_partition_reassignments, 20, "the move to be listed")
        assert ongoing == {tp0: {"replicas": target + removing, "adding_replicas": [target[0]],
                                 "removing_replicas": removing}}

        # A BROKER resource goes to that broker's own node: a simulated broker answers it.
        def broker_config():
            got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "2")])["broker"]["2"]
            return got if RATE in got else None

        entry = _wait_for(broker_config, 20, "broker 2 to learn its config")[RATE]
        assert entry["value"] == "9000" and entry["config_source"] == "DYNAMIC_BROKER_CONFIG"
        topic = _wait_for(lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
                          ["topic"]["orders"].get(REPLICAS), 20, "the topic config")
        assert topic["value"] == "*" and topic["config_source"] == "DYNAMIC_TOPIC_CONFIG"

        assert admin.alter_partition_reassignments({tp0: None}) == {tp0: None}
        _wait_for(lambda: admin.list_partition_reassignments() == {}, 30, "the cancel to finish")
    finally:
        admin.close()


def test_kcat_asking_a_simulated_broker_shows_the_controller(cluster):
    zk, brokers, listener = cluster
    for broker_id, address in brokers.items():
        out = subprocess.run(["kcat", "-L", "-J", "-b", address, "-m", "10"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        meta = json.loads(out.stdout)
        assert meta["controllerid"] == CONTROLLER_ID
        names = {b["id"]: b["name"] for b in meta["brokers"]}
        assert names[CONTROLLER_ID] == listener
        assert {b: names[b] for b in brokers} == brokers, broker_id
    text = subprocess.run(["kcat", "-L", "-b", brokers[3], "-m", "10"], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert f"broker {CONTROLLER_ID} at {listener} (controller)" in text.stdout, text.stdout
