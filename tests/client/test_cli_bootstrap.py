"""kafka-reassign --bootstrap-server, run as a separate process the way a user runs it,
against codec-built wire servers standing in for the controller's admin listener and the
brokers (tests/client/wire_cluster.py)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys

import pytest

from client import commands
from client.admin_backend import AdminBackend
from client.inputs import parse_reassignment
from client.exit_codes import CLUSTER_MISMATCH, CLUSTER_UNREACHABLE, CONFLICT, OK, REJECTED, VERIFY_FAILED

from protocol import ApiKey
from tests.client.cluster_zk import REPO, plan, write_json
from tests.client.wire_cluster import WireCluster


async def run_cli(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO, env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def cluster():
    c = await WireCluster.start()
    c.topics = {"orders": {0: [1, 2], 1: [2, 3]}, "audit": {0: [3, 4]}}
    try:
        yield c
    finally:
        await c.stop()


async def test_execute_with_an_auto_removed_throttle(cluster, tmp_path):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--execute",
                                   "--reassignment-json-file", f, "--throttle", "2000000")
    assert code == OK, err
    assert "deprecated" not in err
    [(version, body)] = cluster.received(ApiKey.REASSIGN_PARTITIONS)
    assert version == 0
    assert body["throttle"] == 2000000 and body["remove_throttle"] is True and body["validate_only"] is False
    assert '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]}]}' in out
    assert "Successfully started partition reassignments for orders-0" in out
    assert "removed automatically when the reassignment completes" in out


async def test_execute_refused_while_running_unless_additional(cluster, tmp_path):
    cluster.running = {("audit", 0): 7}
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, _, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", f)
    assert code == CONFLICT and "existing partition reassignment" in err
    assert cluster.received(ApiKey.REASSIGN_PARTITIONS) == []
    code, _, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--execute", "--additional",
                                 "--reassignment-json-file", f)
    assert code == OK, err
    assert [v for v, _ in cluster.received(ApiKey.REASSIGN_PARTITIONS)] == [1]


async def test_rejections_and_dry_run(cluster, tmp_path):
    cluster.reassign_answer = lambda v, b: {"reassign_partition_result": [{"topic": "orders", "partition_error": [
        {"partition_id": 0, "error_code": 0, "error_message": None},
        {"partition_id": 1, "error_code": 39, "error_message": "broker 4 is out of disk"}]}]}
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4]), ("orders", 1, [3, 4])))
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--execute", "--dry-run",
                                 "--reassignment-json-file", f, "--output", "json")
    assert code == REJECTED
    doc = json.loads(out)
    assert doc["started"] == [] and doc["dry_run"] is True
    assert doc["failed"] == [{"topic": "orders", "partition": 1, "error_code": 39,
                              "error": "INVALID_REPLICA_ASSIGNMENT", "message": "broker 4 is out of disk"}]
    assert cluster.received(ApiKey.REASSIGN_PARTITIONS)[0][1]["validate_only"] is True


async def test_unknown_broker_is_refused_before_sending(cluster, tmp_path):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 100])))  # 100 is the controller
    code, _, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", f)
    assert code == CLUSTER_MISMATCH
    assert "partitions[0] (orders-0): broker(s) [100] not in the cluster (brokers: 1-4)" in err
    assert cluster.received(ApiKey.REASSIGN_PARTITIONS) == []


async def test_verify_statuses(cluster, tmp_path):
    cluster.running = {("orders", 0): 9}
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4]), ("orders", 1, [2, 3]), ("audit", 0, [1, 2])))
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file", f)
    assert code == VERIFY_FAILED
    assert "Reassignment of partition orders-0 is still in progress." in out
    assert "Reassignment of partition orders-1 is complete." in out
    assert "Reassignment of partition audit-0 failed: its replicas are [3, 4], not the requested [1, 2]." in out
    assert "removed by the controller" in out


async def test_cancel_listed_partitions(cluster, tmp_path):
    cluster.running = {("orders", 0): 9}
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4]), ("orders", 1, [2, 3])))
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--cancel", "--reassignment-json-file", f)
    assert code == REJECTED
    assert "Cancelled the reassignment of orders-0" in out
    assert "Could not cancel orders-1: NO_REASSIGNMENT_IN_PROGRESS (85)" in out
    assert cluster.received(ApiKey.CANCEL_REASSIGNMENTS)[0][1]["partitions"] == [{"topic": "orders", "partition_ids": [0, 1]}]
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--cancel", "--output", "json")
    assert code == OK and json.loads(out)["cancelled"] == ["orders-0"]
    assert cluster.received(ApiKey.CANCEL_REASSIGNMENTS)[1][1]["partitions"] is None


async def test_list_and_describe(cluster):
    cluster.running = {("orders", 0): 4242}
    cluster.descriptions = {4242: {"start_time": 1_700_000_000_000, "leader_id": 1, "leader_throttle": 2**63 - 1,
                                   "new_assigned": [{"broker_id": 3, "follower_throttle": 400},
                                                    {"broker_id": 4, "follower_throttle": 2**63 - 1}]}}
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--list")
    assert code == OK and out.splitlines()[1].split()[:4] == ["orders", "0", "4242", "running"]
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--describe")
    assert code == OK
    assert "Reassignment of orders-0 (id 4242)" in out
    assert "started:          2023-11-14T22:13:20+00:00" in out
    assert "leader:           1 (throttle none)" in out
    assert "new brokers:      3 (throttle 400 B/s), 4 (throttle none)" in out


async def test_generate_over_the_admin_listener(cluster, tmp_path):
    topics = write_json(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "orders"}]})
    code, out, _ = await run_cli("--bootstrap-server", cluster.bootstrap, "--generate",
                                 "--topics-to-move-json-file", topics, "--broker-list", "2,3,4", "--output", "json")
    assert code == OK
    doc = json.loads(out)
    assert doc["current"]["partitions"] == [{"topic": "orders", "partition": 0, "replicas": [1, 2]},
                                            {"topic": "orders", "partition": 1, "replicas": [2, 3]}]
    assert all(set(p["replicas"]) <= {2, 3, 4} and len(p["replicas"]) == 2 for p in doc["proposed"]["partitions"])


async def test_unreachable_bootstrap(tmp_path):
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    code, _, err = await run_cli("--bootstrap-server", f"127.0.0.1:{port}", "--list", "--timeout", "2000")
    assert code == CLUSTER_UNREACHABLE
    assert f"no bootstrap server answered: 127.0.0.1:{port}" in err


# ---- --progress ------------------------------------------------------------------------------


def _progress_cluster(cluster):
    """orders-0 moves [1,2] -> [1,3]: broker 3 copies 300 bytes per DescribeLogDirs answer."""
    cluster.logs = {1: {("orders", 0): (1200, 0), ("audit", 0): (50, 0)},
                    2: {("orders", 0): (1200, 0), ("orders", 1): (10, 0)},
                    3: {("orders", 0): (0, 4000), ("orders", 1): (10, 0)}}
    cluster.throttle_rates = {3: 100}
    inner = cluster.brokers[3].handlers[ApiKey.DESCRIBE_LOG_DIRS]

    def copying(version, body):
        size, lag = cluster.logs[3][("orders", 0)]
        size = min(1200, size + 300)
        lag = 0 if size == 1200 else lag - 1000
        cluster.logs[3][("orders", 0)] = (size, lag)
        if size == 1200:  # caught up: the controller completes the move
            cluster.topics["orders"][0] = [1, 3]
        return inner(version, body)

    cluster.brokers[3].handlers[ApiKey.DESCRIBE_LOG_DIRS] = copying


async def test_progress_prints_the_kip_179_table(cluster, tmp_path):
    _progress_cluster(cluster)
    f = write_json(tmp_path, "plan.json", plan(
        ("orders", 0, [1, 3]), ("orders", 1, [2, 4]), ("ghost", 0, [1]), ("orders", 42, [1]), ("audit", 0, [42])))
    code, out, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--progress",
                                   "--reassignment-json-file", f, "--interval", "0.2")
    rows = [line.split(None, 3) for line in out.splitlines()[1:6]]
    assert out.splitlines()[0].split() == ["Topic", "Partition", "Broker", "Status", "Remaining", "ETA"]
    assert rows[0] == ["audit", "0", "42", "Unknown broker"]
    assert rows[1] == ["ghost", "0", "1", "Unknown topic"]
    lines = out.splitlines()
    assert any(l.split()[:4] == ["orders", "0", "1", "In"] and "In sync" in l for l in lines)
    behind = next(l for l in lines if l.split()[:3] == ["orders", "0", "3"])
    assert "Behind: 2000 messages behind" in behind and "600 B" in behind
    # rate measured between the two samples: 300 B in ~0.2 s -> seconds, not "unknown"
    assert "unknown" not in behind
    hosted = next(l for l in lines if l.split()[:3] == ["orders", "1", "4"])
    assert "Broker does not host this partition" in hosted and "10 B" in hosted
    assert any(l.split()[:4] == ["orders", "42", "1", "Unknown"] for l in lines)
    assert "Overall: 0/5 partitions done" in out
    # unknown topic/partition/broker can never complete
    assert code == CLUSTER_MISMATCH, err


async def test_progress_watch_in_a_pipe_prints_a_line_per_refresh_until_done(cluster, tmp_path):
    _progress_cluster(cluster)
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [1, 3])))
    code, out, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--progress", "--watch",
                                   "--reassignment-json-file", f, "--interval", "0.05")
    assert code == OK, err
    bars = [l for l in out.splitlines() if l.startswith("[")]
    assert len(bars) >= 3
    assert bars[0].startswith("[..............................]   0% 0/1 partitions")
    assert bars[-1].startswith("[##############################] 100% 1/1 partitions, 0 B left")
    assert "\x1b[" not in out  # no terminal control codes in a pipe
    assert "orders  0          3       In sync" in out


async def test_progress_watch_json_lines(cluster, tmp_path):
    _progress_cluster(cluster)
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [1, 3])))
    code, out, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--progress", "--watch",
                                   "--reassignment-json-file", f, "--interval", "0.05", "--output", "json")
    assert code == OK, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert docs[0]["done"] is False and docs[-1]["done"] is True
    assert docs[0]["replicas"][1]["status"] == "Behind: 3000 messages behind"
    assert docs[-1]["bytes_remaining"] == 0
    assert any(d["replicas"][1]["eta_from_throttle"] for d in docs[:1])  # first sample: the throttle


async def test_decommission_over_the_admin_listener(cluster):
    cluster.logs = {1: {("orders", 0): (500, 0)}, 2: {("orders", 0): (500, 0), ("orders", 1): (70, 0)},
                    3: {("orders", 1): (70, 0), ("audit", 0): (9, 0)}, 4: {("audit", 0): (9, 0)}}
    code, out, err = await run_cli("--bootstrap-server", cluster.bootstrap, "--decommission-broker", "2",
                                   "--throttle", "1000", "--output", "json")
    assert code == OK, err
    doc = json.loads(out)
    assert doc["plan"]["moves"] == 2 and doc["plan"]["bytes_to_move"] == 570
    [(version, body)] = cluster.received(ApiKey.REASSIGN_PARTITIONS)
    moved = {(t["topic"], p["partition_id"]): p["broker"] for t in body["topic_reassignments"]
             for p in t["partition_reassignments"]}
    assert set(moved) == {("orders", 0), ("orders", 1)}
    assert all(2 not in r and len(r) == 2 for r in moved.values())
    assert body["throttle"] == 1000 and body["remove_throttle"] is True


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_progress_watch_on_a_terminal_redraws_with_a_bar(cluster, tmp_path):
    _progress_cluster(cluster)
    backend = await AdminBackend.open(cluster.bootstrap, 5000)
    screen = _Terminal()
    try:
        report = await commands.show_progress(
            backend, commands.Inputs(plan=parse_reassignment(plan(("orders", 0, [1, 3])), "p.json")),
            interval=0.01, watch=True, json_out=False, stream=screen)
    finally:
        await backend.close()
    frames = screen.getvalue().split("\x1b[H\x1b[2J")[1:]
    assert len(frames) >= 3
    assert all(f.startswith("Topic") for f in frames)
    assert "Behind: 3000 messages behind" in frames[0] and "[" in frames[0].splitlines()[-1]
    assert "100% 1/1 partitions" in frames[-1]
    assert report.code == OK and report.text == ""
