"""A whole cluster on a ZooKeeper that requires authentication, with ``zookeeper.set.acl`` on:
``reassignd zk start --require-auth`` (ZooKeeper's enforce.auth), ``reassignd sim`` brokers and
two ``reassignd controller`` instances sharing one digest identity (``--zk-config`` and
``--security-config``, the same keys: Kafka's brokers and controller share one ZooKeeper
identity), and ``kafka-reassign --zookeeper --command-config`` with that identity.

A throttled reassignment runs end to end: the tool writes the request and the throttles, the
controller starts the move, the brokers read the throttle rates under ``/config/brokers`` (a
root no other identity may read), copy, and write the ISR expansion into partition states the
controller created and the ISR change notifications, the move completes and ``--verify``
removes the throttles. Then ZooKeeper itself refuses another identity every write to what
the brokers and the controller wrote (NoAuthError), and a session with no credentials at all
is closed before it can do anything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError

from tests.e2e.processes import REPO, kazoo_client, running_cluster, sim_status, spawn_reassignd, stop_process, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(240)]

SERVICE = "reassignd:service-secret"  # the controller's and the brokers' identity
OBSERVER = "observer:observer-secret"  # the test's view: authenticated, owns nothing
MALLORY = "mallory:guess"
THROTTLE = 200_000  # bytes/s: a 512 KiB replica copies in a few seconds, slow enough to be seen
SIM_ARGS = ["--brokers", "3", "--topics", "orders:2:2:512KiB", "--bandwidth", "10MiB", "--produce-rate", "0"]


@pytest.fixture
def secured_zk(tmp_path):
    """``reassignd zk start --require-auth --foreground`` on a free port; its connect string."""
    data_dir = tmp_path / "zk"
    proc = spawn_reassignd(["zk", "start", "--require-auth", "--foreground", "--port", "0", "--data-dir",
                            str(data_dir)], tmp_path / "zk-start.log")
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("ZooKeeper serving on "), (tmp_path / "zk-start.log").read_text()[-3000:]
        yield line.split()[3] + "/secured"
    finally:
        stop_process(proc)
        subprocess.run([sys.executable, "-m", "reassignd", "zk", "stop", "--data-dir", str(data_dir)], cwd=REPO,
                       capture_output=True, timeout=60)


def kafka_reassign(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "client.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def test_cluster_runs_with_authentication_required_and_secure_acls(secured_zk, tmp_path):
    zk_props = tmp_path / "zk.properties"
    zk_props.write_text(f"zookeeper.auth.digest={SERVICE}\nzookeeper.set.acl=true\n")
    with running_cluster(secured_zk, tmp_path, sim_args=[*SIM_ARGS, "--zk-config", str(zk_props)],
                         controller_ids=(101, 102), controller_config={"security_config": str(zk_props)},
                         zk_auth=OBSERVER) as c:
        current = c.replicas("orders", 0)
        target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "orders", "partition": 0, "replicas": target}]}))
        zk_args = ["--zookeeper", secured_zk, "--command-config", str(zk_props), "--reassignment-json-file", str(plan)]

        out = kafka_reassign(*zk_args, "--execute", "--throttle", str(THROTTLE))
        assert out.returncode == 0, out.stdout + out.stderr
        # The brokers read the throttle rate under /config/brokers: only the service's identity may.
        wait_for(lambda: sim_status(c.control_port)["throttles"]["brokers"], 30,
                 "the brokers to apply the throttle")
        wait_for(lambda: c.replicas("orders", 0) == target and c.reassignments_done(), 90, "the move to complete")
        state = c.json("/brokers/topics/orders/partitions/0/state")
        assert sorted(state["isr"]) == sorted(target), state
        assert c.hosted()[("orders", 0)] == set(target)
        verified = kafka_reassign(*zk_args, "--verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        with kazoo_client(secured_zk, SERVICE) as service:  # /config/brokers: only the service may read it
            rates = [json.loads(service.get(f"/config/brokers/{b}")[0])["config"]
                     for b in service.get_children("/config/brokers")]
        assert not any("throttled" in key for config in rates for key in config), rates

        mallory = KazooClient(hosts=secured_zk, timeout=10, auth_data=[("digest", MALLORY)])
        mallory.start(timeout=30)
        try:
            # What the brokers wrote (the sim's sessions: registrations, topics, ISR
            # notifications) and what the controller wrote: readable, not writable.
            for path in ("/brokers/ids/1", "/brokers/topics/orders", "/brokers/topics/orders/partitions/0/state",
                         "/controller", "/controller_epoch", "/cluster/id"):
                assert mallory.get(path)[0]
                with pytest.raises(NoAuthError):
                    mallory.set(path, b"{}")
            with pytest.raises(NoAuthError):
                mallory.delete("/brokers/ids/1")
            for parent in ("/brokers/ids", "/isr_change_notification", "/admin", "/config/changes"):
                with pytest.raises(NoAuthError):
                    mallory.create(f"{parent}/mallory", b"{}")
            with pytest.raises(NoAuthError):
                mallory.create("/admin/reassign_partitions", b'{"version":1,"partitions":[]}')
            with pytest.raises(NoAuthError):  # a sensitive root: not even readable
                mallory.get_children("/config/brokers")
            acls, _ = mallory.get_acls("/brokers/ids/1")  # the sim's registration: Kafka's secure ACL
            assert [(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acls] == [
                ("digest", "reassignd", 31), ("world", "anyone", 1)]
        finally:
            mallory.stop()
            mallory.close()
        server, chroot = secured_zk.split("/", 1)
        with kazoo_client(server) as anonymous:  # no credentials at all: ZooKeeper closes the session
            with pytest.raises(SessionClosedRequireSaslError):
                anonymous.set(f"/{chroot}/brokers/ids/1", b"{}")
        assert json.loads(c.zk.get("/brokers/ids/1")[0])["port"]  # unchanged, still registered
        assert c.replicas("orders", 0) == target
