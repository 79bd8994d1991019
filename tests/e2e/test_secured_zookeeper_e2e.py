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

``reassignd snapshot`` and ``reassignd planner serve`` read that cluster with ``--zk-config`` (the
service's identity); without credentials they are refused with the reason, not a traceback.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError

from spark_jobs import snapshot
from planner_service.service import Options, PlannerService
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


def _get_state(base: str) -> dict:
    with urllib.request.urlopen(base + "/state", timeout=30) as r:
        return json.loads(r.read())


def _ready_model(base: str) -> dict | None:
    model = _get_state(base)["model"]
    return model if model["ready"] else None


def test_snapshot_and_planner_read_the_secured_cluster_with_zk_config(secured_zk, tmp_path):
    """``reassignd snapshot`` and ``reassignd planner serve`` take ``--zk-config`` as ``reassignd
    sim`` and the controller do: with the service's identity both read the cluster whose znodes
    have Kafka's secure ACLs; without any, ZooKeeper closes their session and each says so
    (the snapshot exits 1 with the reason, the planner's /state shows it, no traceback)."""
    zk_props = tmp_path / "zk.properties"
    zk_props.write_text(f"zookeeper.auth.digest={SERVICE}\nzookeeper.set.acl=true\n")
    with running_cluster(secured_zk, tmp_path, sim_args=[*SIM_ARGS, "--zk-config", str(zk_props)],
                         controller_ids=(101,), controller_config={"security_config": str(zk_props)},
                         zk_auth=OBSERVER) as c:
        wait_for(lambda: all(c.zk.exists(f"/brokers/topics/orders/partitions/{p}/state") for p in (0, 1)), 30,
                 "the controller's partition states")
        assert [a.id.scheme for a in c.zk.get_acls("/brokers/topics/orders")[0]] == ["digest", "world"]

        out = tmp_path / "cluster.json"
        snap_cmd = [sys.executable, "-m", "reassignd", "snapshot", "--zookeeper", secured_zk, "--out", str(out)]
        done = subprocess.run([*snap_cmd, "--zk-config", str(zk_props)], cwd=REPO, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 brokers, 1 topics, 2 partitions" in done.stdout
        snap = snapshot.load(out)
        assert [(b["id"], b["alive"]) for b in snap["brokers"]] == [(1, True), (2, True), (3, True)]
        for p in snap["topics"][0]["partitions"]:
            assert p["replicas"] == c.replicas("orders", p["partition"])
            assert p["leader"] in p["replicas"] and sorted(p["isr"]) == sorted(p["replicas"]), p
            assert all(s is not None and s > 0 for s in p["sizes"]), p  # DescribeLogDirs of the sim brokers
        assert snap["cluster"]["warnings"] == []

        out.unlink()
        refused = subprocess.run(snap_cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith(f"reassignd snapshot: {secured_zk}: cannot read the cluster: "), refused.stderr
        assert "ZooKeeper requires authentication: give --zk-config FILE" in last, refused.stderr
        assert not out.exists()

        # The planner service with the same identity: its model is the cluster (read without
        # Spark, so it runs none).
        planner = c.processes.spawn("planner", [
            "planner", "serve", "--zookeeper", secured_zk, "--zk-config", str(zk_props), "--listen", "127.0.0.1:0",
            "--insecure-no-auth", "--no-spark", "--no-sizes"])
        line = planner.stdout.readline()
        assert line, c.processes.log("planner").read_text()[-3000:]
        base = "http://" + json.loads(line)["listen"]
        state = wait_for(lambda: _ready_model(base), 30, "the planner's model")
        assert state["connected"] and state["last_error"] is None, state
        assert state["brokers"] == [1, 2, 3] and state["topics"] == 1 and state["partitions"] == 2, state
        stop_process(planner)

    # Without credentials the planner's session is closed at once, and /state says why.
    async def unauthenticated() -> dict:
        service = PlannerService(Options(zookeeper=secured_zk, port=0, sizes=False, session_timeout_s=2))
        await service.start()
        try:
            base = "http://" + service.address
            for _ in range(200):
                state = (await asyncio.to_thread(_get_state, base))["model"]
                if state["last_error"]:
                    return state
                await asyncio.sleep(0.05)
            raise AssertionError(f"no error in /state: {state}")
        finally:
            await service.stop()

    state = asyncio.run(unauthenticated())
    assert state["ready"] is False and state["brokers"] == [], state
    assert "ZooKeeper requires authentication: give --zk-config FILE" in state["last_error"], state
