"""kafka-reassign as a new user runs it: the installed command, against a real ZooKeeper, a
``reassignd sim`` process (five brokers; topics on 1-4, broker 5 empty) and a
``reassignd controller``, one cluster for the whole module.

Every test starts from an idle cluster, works out its inputs from the cluster as it finds it,
and leaves it idle again. The tests that change nothing check that nothing changed: the
assignment, the ``/admin`` znodes and the throttle configs.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from client import exit_codes
from client.admin import AdminClient
from demo.cluster import ClusterSpec, LocalCluster, wait_for
from demo.procs import Children

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(240)]

BIN = Path(sys.executable).parent / "kafka-reassign"
CLI = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "client.cli"]
NEW_BROKER = 5
SPEC = ClusterSpec(
    brokers=5,
    topic_brokers=(1, 2, 3, 4),
    # orders/audit: small, moves finish at once; slow: big, so a throttled move stays in flight.
    topics=("orders:4:2:1MiB", "audit:2:3:1MiB", "slow:1:2:48MiB"),
    bandwidth="100MiB",
    produce_rate="1KiB",
    controller_ids=(101,),
    controller_config={"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0},
)
FAST_THROTTLE = 50 * 1024 * 1024
SLOW_THROTTLE = 64 * 1024  # 48 MiB at 64 KiB/s: minutes, so the move is surely still running
SETTLE_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def cluster(zk_server, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cli_e2e")
    chroot = f"/cli_e2e_{uuid.uuid4().hex[:8]}"
    with Children(workdir) as kids:
        c = LocalCluster.start(kids, workdir, SPEC, hosts=zk_server.connect_string + chroot, say=lambda _: None)
        try:
            yield c
        finally:
            kids.stop_all()
            c.close()
            admin = KazooClient(hosts=zk_server.connect_string, timeout=10)
            admin.start(timeout=15)
            admin.delete(chroot, recursive=True)
            admin.stop()
            admin.close()


@pytest.fixture(autouse=True)
def idle_before_and_after(cluster):
    wait_for(cluster.idle, SETTLE_TIMEOUT_S, "an idle cluster before the test")
    yield
    wait_for(cluster.idle, SETTLE_TIMEOUT_S, "the test's reassignments to finish")


def kr(cluster: LocalCluster, *args: str, zookeeper: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:
    door = ["--zookeeper", cluster.hosts] if zookeeper else ["--bootstrap-server", cluster.bootstrap]
    return subprocess.run([*CLI, *door, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def write_plan(tmp_path: Path, name: str, *entries) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for t, p, r in entries]}))
    return str(path)


def fingerprint(cluster: LocalCluster) -> tuple:
    """What a command that must change nothing could have changed."""
    admin = sorted(cluster.zk.get_children("/admin")) if cluster.zk.exists("/admin") else []
    return cluster.all_assignments(), admin, cluster.throttle_configs()


def not_on(replicas: list[int], broker: int = NEW_BROKER) -> list[int]:
    """``replicas`` with its last broker swapped for ``broker``."""
    assert broker not in replicas
    return replicas[:-1] + [broker]


def settle(cluster: LocalCluster) -> None:
    wait_for(cluster.idle, SETTLE_TIMEOUT_S, "the reassignment to finish")
    wait_for(lambda: not cluster.throttle_configs(), SETTLE_TIMEOUT_S, "the throttles to be removed")


def start_slow_move(cluster: LocalCluster, tmp_path: Path):
    """slow-0 onto the new broker at SLOW_THROTTLE; returns (original, target) once it runs."""
    original = cluster.assignment("slow")[0]
    target = not_on(original)
    plan = write_plan(tmp_path, "slow.json", ("slow", 0, target))
    r = kr(cluster, "--execute", "--throttle", str(SLOW_THROTTLE), "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.OK, r.stderr
    wait_for(lambda: "slow-0" in cluster.moving(), SETTLE_TIMEOUT_S, "slow-0 to start moving")
    return original, target, plan


def test_the_new_broker_starts_empty(cluster):
    """``reassignd sim --topic-brokers 1,2,3,4``: broker 5 is registered and hosts nothing."""
    assert NEW_BROKER in cluster.brokers
    assert not [tp for tp, rs in cluster.all_assignments().items() if NEW_BROKER in rs]
    assert cluster.sim_status()["brokers"][str(NEW_BROKER)]["replicas"] == []


# ---- bad input: a clear error, a distinct exit code, nothing changed --------------------------


def test_bad_input_is_refused_and_changes_nothing(cluster, tmp_path):
    before = fingerprint(cluster)
    current = cluster.assignment("orders")[0]

    r = kr(cluster, "--execute", "--reassignment-json-file", str(tmp_path / "missing.json"))
    assert r.returncode == exit_codes.BAD_INPUT_FILE, r.stderr
    assert "missing.json" in r.stderr

    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "partitions": [')
    r = kr(cluster, "--execute", "--reassignment-json-file", str(bad))
    assert r.returncode == exit_codes.BAD_INPUT_FILE, r.stderr
    assert "bad.json" in r.stderr and "JSON" in r.stderr

    unknown_broker = write_plan(tmp_path, "broker.json", ("orders", 0, [current[0], 42]))
    for zookeeper in (False, True):
        r = kr(cluster, "--execute", "--throttle", "1000", "--reassignment-json-file", unknown_broker,
               zookeeper=zookeeper)
        assert r.returncode == exit_codes.CLUSTER_MISMATCH, r.stderr
        assert "42" in r.stderr

    unknown_topic = write_plan(tmp_path, "topic.json", ("nosuchtopic", 0, [1, 2]))
    r = kr(cluster, "--execute", "--reassignment-json-file", unknown_topic)
    assert r.returncode == exit_codes.CLUSTER_MISMATCH, r.stderr
    assert "nosuchtopic" in r.stderr

    good = write_plan(tmp_path, "good.json", ("orders", 0, not_on(current)))
    r = subprocess.run([*CLI, "--bootstrap-server", cluster.bootstrap, "--zookeeper", cluster.hosts,
                        "--execute", "--reassignment-json-file", good], capture_output=True, text=True, timeout=60)
    assert r.returncode == exit_codes.USAGE, r.stderr
    assert "not both" in r.stderr

    r = kr(cluster, "--execute", "--throttle", "-5", "--reassignment-json-file", good)
    assert r.returncode == exit_codes.USAGE, r.stderr

    assert fingerprint(cluster) == before


# ---- --generate, --rebalance: proposals only --------------------------------------------------


def test_generate_proposes_a_layout_over_the_broker_list(cluster, tmp_path):
    before = fingerprint(cluster)
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "orders"}, {"topic": "audit"}]}))
    r = kr(cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "2,3,4,5",
           "--output", "json")
    assert r.returncode == exit_codes.OK, r.stderr
    doc = json.loads(r.stdout)
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    current = {tp: rs for tp, rs in before[0].items() if tp[0] in ("orders", "audit")}
    assert set(proposed) == set(current)
    for tp, replicas in proposed.items():
        assert len(replicas) == len(set(replicas)) == len(current[tp]), (tp, replicas)
        assert set(replicas) <= {2, 3, 4, 5}, (tp, replicas)
    assert fingerprint(cluster) == before


def test_rebalance_proposes_fair_counts_in_process_and_on_spark(cluster):
    before = fingerprint(cluster)
    r = kr(cluster, "--rebalance", "--output", "json")
    assert r.returncode == exit_codes.OK, r.stderr
    doc = json.loads(r.stdout)
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    after = before[0] | proposed
    counts = {b: sum(b in rs for rs in after.values()) for b in range(1, SPEC.brokers + 1)}
    assert max(counts.values()) - min(counts.values()) <= 1, counts  # KIP-6: R or R+1 each
    assert counts[NEW_BROKER] > 0
    assert doc["plan"]["moves"] == doc["plan"]["lower_bound"]
    # A plan as good from a Spark session (the one Spark-backed test of this module). Not
    # byte-equal: the brokers produce all along, and replica sizes (read from them again for
    # this run) break ties between equally good moves - which partition of a topic goes.
    r = kr(cluster, "--rebalance", "--output", "json", "--spark-master", "local[1]", timeout=180)
    assert r.returncode == exit_codes.OK, r.stderr
    spark = json.loads(r.stdout)
    assert spark["plan"]["moves"] == spark["plan"]["lower_bound"] == doc["plan"]["lower_bound"]
    on_spark = before[0] | {(e["topic"], e["partition"]): e["replicas"] for e in spark["proposed"]["partitions"]}
    assert {b: sum(b in rs for rs in on_spark.values()) for b in range(1, SPEC.brokers + 1)} == counts
    assert fingerprint(cluster) == before


# ---- --execute --throttle, --verify -------------------------------------------------------------


def test_execute_with_throttle_then_verify(cluster, tmp_path):
    original = cluster.assignment("orders")[1]
    target = not_on(original)
    plan = write_plan(tmp_path, "plan.json", ("orders", 1, target))
    r = kr(cluster, "--execute", "--throttle", str(FAST_THROTTLE), "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.OK, r.stderr
    assert "Successfully started partition reassignments for orders-1" in r.stdout
    assert f"The inter-broker throttle limit was set to {FAST_THROTTLE} B/s" in r.stdout
    rollback = {"version": 1, "partitions": [{"topic": "orders", "partition": 1, "replicas": original}]}
    assert json.dumps(rollback, separators=(",", ":")) in r.stdout.splitlines()  # Kafka's rollback hint

    def verified():
        v = kr(cluster, "--verify", "--reassignment-json-file", plan)
        assert v.returncode in (exit_codes.OK, exit_codes.IN_PROGRESS), v.stderr
        return v if v.returncode == exit_codes.OK else None

    v = wait_for(verified, SETTLE_TIMEOUT_S, "--verify to report completion", interval=0.3)
    assert "Reassignment of partition orders-1 is complete." in v.stdout
    settle(cluster)  # KIP-179: the controller removed the throttle on completion
    assert cluster.assignment("orders")[1] == target
    assert set(cluster.hosted()[("orders", 1)]) == set(target)


def test_execute_elect_preferred_leads_the_moved_partitions_from_their_new_first_replica(cluster, tmp_path):
    """Issue 14 item 5: a move that keeps the old leader in the target leaves it leading (Kafka's
    completion elects only when the leader leaves); --elect-preferred then elects the new first
    replica through ElectLeaders once the move finished."""
    original = cluster.assignment("orders")[2]
    leader = json.loads(cluster.zk.get("/brokers/topics/orders/partitions/2/state")[0])["leader"]
    target = [NEW_BROKER, leader]
    plan = write_plan(tmp_path, "elect.json", ("orders", 2, target), ("orders", 3, cluster.assignment("orders")[3]))
    r = kr(cluster, "--execute", "--elect-preferred", "--throttle", str(FAST_THROTTLE), "--reassignment-json-file",
           plan, "--output", "json", timeout=90)
    assert r.returncode == exit_codes.OK, (r.stdout, r.stderr)
    report = json.loads(r.stdout)
    # Only the partition that moved is elected (orders-3 was already at its target).
    assert report["preferred_election"] == {"elected": [{"topic": "orders", "partition": 2}], "failed": []}
    assert cluster.assignment("orders")[2] == target
    state = json.loads(cluster.zk.get("/brokers/topics/orders/partitions/2/state")[0])
    assert state["leader"] == NEW_BROKER
    settle(cluster)
    # Put it back (the other tests expect broker 5 empty), electing the original first replica again.
    back = write_plan(tmp_path, "back.json", ("orders", 2, original))
    r = kr(cluster, "--execute", "--elect-preferred", "--reassignment-json-file", back, timeout=90)
    assert r.returncode == exit_codes.OK, (r.stdout, r.stderr)
    assert "Preferred leaders elected for 1 moved partition(s)" in r.stdout
    assert json.loads(cluster.zk.get("/brokers/topics/orders/partitions/2/state")[0])["leader"] == original[0]
    settle(cluster)


def test_elect_preferred_needs_the_controller_and_no_dry_run(cluster, tmp_path):
    plan = write_plan(tmp_path, "p.json", ("orders", 0, cluster.assignment("orders")[0]))
    r = kr(cluster, "--execute", "--elect-preferred", "--reassignment-json-file", plan, zookeeper=True)
    assert r.returncode == exit_codes.USAGE and "--bootstrap-server" in r.stderr
    r = kr(cluster, "--execute", "--elect-preferred", "--dry-run", "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.USAGE and "--dry-run" in r.stderr
    r = kr(cluster, "--verify", "--elect-preferred", "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.USAGE


# ---- --progress: the KIP-179 table ---------------------------------------------------------------


def test_progress_reports_unknown_rows_for_a_bad_file(cluster, tmp_path):
    before = fingerprint(cluster)
    orders = cluster.assignment("orders")
    p, replicas = next((p, r) for p, r in sorted(orders.items()) if NEW_BROKER not in r)
    plan = write_plan(tmp_path, "bad.json", ("nosuchtopic", 0, [1, 2]), ("orders", 99, [1, 2]),
                      ("orders", p, [replicas[0], NEW_BROKER, 42]))
    r = kr(cluster, "--progress", "--interval", "0.2", "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.CLUSTER_MISMATCH, r.stderr
    rows = r.stdout
    assert re.search(r"^nosuchtopic\s+0\s+1\s+Unknown topic\s*$", rows, re.M), rows
    assert re.search(r"^orders\s+99\s+1\s+Unknown partition\s*$", rows, re.M), rows
    assert re.search(rf"^orders\s+{p}\s+42\s+Unknown broker\s*$", rows, re.M), rows
    assert re.search(rf"^orders\s+{p}\s+{NEW_BROKER}\s+Broker does not host this partition\b", rows, re.M), rows
    assert re.search(rf"^orders\s+{p}\s+{replicas[0]}\s+In sync\b", rows, re.M), rows
    assert fingerprint(cluster) == before


# ---- a move in flight: --progress, --list, --describe, --cancel ---------------------------------


def test_running_move_progress_list_describe_then_cancel(cluster, tmp_path):
    original, target, plan = start_slow_move(cluster, tmp_path)

    r = kr(cluster, "--progress", "--interval", "0.5", "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.OK, r.stderr
    assert re.search(rf"^slow\s+0\s+{NEW_BROKER}\s+Behind: \d+ messages behind\s+\d", r.stdout, re.M), r.stdout
    assert re.search(rf"^slow\s+0\s+{original[0]}\s+In sync\b", r.stdout, re.M), r.stdout
    assert re.search(r"^Overall: 0/1 partitions done", r.stdout, re.M), r.stdout

    r = kr(cluster, "--list", "--output", "json")
    assert r.returncode == exit_codes.OK, r.stderr
    (listed,) = json.loads(r.stdout)["reassignments"]
    assert (listed["topic"], listed["partition"]) == ("slow", 0)
    assert listed["replicas"] == target and listed["original_replicas"] == original
    assert isinstance(listed["reassignment_id"], int)
    r = kr(cluster, "--list")
    assert re.search(r"^slow\s+0\s+\d+", r.stdout, re.M), r.stdout

    r = kr(cluster, "--describe")
    assert r.returncode == exit_codes.OK, r.stderr
    assert f"Reassignment of slow-0 (id {listed['reassignment_id']})" in r.stdout
    assert f"new brokers:      {NEW_BROKER} (throttle {SLOW_THROTTLE} B/s)" in r.stdout

    r = kr(cluster, "--cancel", "--output", "json")
    assert r.returncode == exit_codes.OK, r.stderr
    assert json.loads(r.stdout)["cancelled"] == ["slow-0"]
    settle(cluster)  # KIP-236: rolled back, and the cancelled partition's throttles removed
    assert cluster.assignment("slow")[0] == original
    wait_for(lambda: set(cluster.hosted()[("slow", 0)]) == set(original), SETTLE_TIMEOUT_S,
             f"broker {NEW_BROKER} to delete its copy of slow-0")
    r = kr(cluster, "--list")
    assert r.returncode == exit_codes.OK and "No partition reassignments in progress." in r.stdout


def test_list_then_describe_then_describe_after_completion_omits_it(cluster, tmp_path):
    """KIP-240 through the AdminClient: ids from ListReassignments describe the running moves;
    once they complete, describing the same ids gives nothing for them (omitted, no error)."""
    # Earlier tests of the module may have moved these partitions: take any broker they lack.
    added = {}
    moves = []
    for p in (0, 1):
        current = cluster.assignment("orders")[p]
        added[p] = min(b for b in range(1, SPEC.brokers + 1) if b not in current)
        moves.append(("orders", p, not_on(current, added[p])))
    plan = write_plan(tmp_path, "two.json", *moves)
    # slow enough to be seen running (1 MiB at 256 KiB/s: a few seconds), fast enough to finish
    r = kr(cluster, "--execute", "--throttle", str(256 * 1024), "--reassignment-json-file", plan)
    assert r.returncode == exit_codes.OK, r.stderr

    wanted = {("orders", 0), ("orders", 1)}

    async def listed_and_described():
        # --execute returns once the request is written; the moves are listed once the
        # controller started them (their records exist), a step later on a loaded machine.
        async with AdminClient(cluster.bootstrap) as admin:
            for _ in range(100):
                listed = await admin.list_reassignments()
                if set(listed) == wanted:
                    break
                await asyncio.sleep(0.05)
            described = await admin.describe_reassignments(listed.values())
            return listed, described

    listed, described = asyncio.run(listed_and_described())
    assert set(listed) == wanted, listed
    for (topic, p), d in described.items():
        target = moves[p][2]
        assert d is not None and d.reassignment == listed[(topic, p)]
        assert d.new_assigned_brokers == target  # KIP-240: every broker of the new assignment
        assert d.new_assigned_throttles[added[p]] == 256 * 1024  # the new replica is throttled
        assert d.current_leader in cluster.assignment(topic)[p]

    settle(cluster)

    async def described_again():
        async with AdminClient(cluster.bootstrap) as admin:
            return await admin.describe_reassignments(listed.values())

    again = asyncio.run(described_again())
    assert again == {tp: None for tp in listed}, again


def test_cancel_with_nothing_running(cluster):
    r = kr(cluster, "--cancel")
    assert r.returncode == exit_codes.OK, r.stderr
    assert "nothing to cancel" in r.stdout


# ---- --execute-queue, --verify-queue --------------------------------------------------------------


def test_execute_queue_replaces_a_running_move_then_verify_queue(cluster, tmp_path):
    original, _, _ = start_slow_move(cluster, tmp_path)
    audit = cluster.assignment("audit")[0]
    # Queued: slow-0 back to its original brokers, leader swapped (no copy), and an audit move.
    queued = write_plan(tmp_path, "queued.json", ("slow", 0, original[::-1]), ("audit", 0, not_on(audit)))
    r = kr(cluster, "--execute-queue", "--reassignment-json-file", queued)
    assert r.returncode == exit_codes.OK, r.stderr

    def verified():
        v = kr(cluster, "--verify-queue", "--reassignment-json-file", queued)
        assert v.returncode in (exit_codes.OK, exit_codes.IN_PROGRESS), v.stderr
        return v if v.returncode == exit_codes.OK else None

    v = wait_for(verified, SETTLE_TIMEOUT_S, "--verify-queue to report completion", interval=0.3)
    assert "Reassignment of partition slow-0 is complete." in v.stdout
    assert "Reassignment of partition audit-0 is complete." in v.stdout
    settle(cluster)
    assert cluster.assignment("slow")[0] == original[::-1]
    assert cluster.assignment("audit")[0] == not_on(audit)
    wait_for(lambda: set(cluster.hosted()[("slow", 0)]) == set(original), SETTLE_TIMEOUT_S,
             f"broker {NEW_BROKER} to delete its copy of slow-0")


# ---- --decommission-broker (KIP-6: planned and executed at once) ----------------------------------


def test_decommission_broker_empties_it(cluster):
    victim = 4
    assert any(victim in r for r in cluster.all_assignments().values())
    r = kr(cluster, "--decommission-broker", str(victim), "--throttle", str(FAST_THROTTLE))
    assert r.returncode == exit_codes.OK, r.stderr
    assert "Successfully started partition reassignments" in r.stdout
    settle(cluster)
    after = cluster.all_assignments()
    assert not [tp for tp, rs in after.items() if victim in rs]
    assert not [tp for tp, on in cluster.hosted().items() if victim in on]
    counts = {b: sum(b in rs for rs in after.values()) for b in (1, 2, 3, 5)}
    assert max(counts.values()) - min(counts.values()) <= 1, counts


# ---- --zookeeper (deprecated): direct znode writes, carried out by the same controller -----------


def test_zookeeper_mode_execute_and_verify(cluster, tmp_path):
    p, original = next((p, r) for p, r in sorted(cluster.assignment("orders").items()) if NEW_BROKER not in r)
    target = not_on(original)
    plan = write_plan(tmp_path, "zk.json", ("orders", p, target))
    r = kr(cluster, "--execute", "--throttle", str(FAST_THROTTLE), "--reassignment-json-file", plan, zookeeper=True)
    assert r.returncode == exit_codes.OK, r.stderr
    assert "--zookeeper is deprecated" in r.stderr
    assert f"Successfully started partition reassignments for orders-{p}" in r.stdout
    wait_for(cluster.idle, SETTLE_TIMEOUT_S, f"the controller to complete orders-{p}")
    assert cluster.assignment("orders")[p] == target
    assert cluster.throttle_configs()  # --zookeeper: the throttle stays until --verify
    r = kr(cluster, "--verify", "--reassignment-json-file", plan, zookeeper=True)
    assert r.returncode == exit_codes.OK, r.stderr
    assert f"Reassignment of partition orders-{p} is complete." in r.stdout
    assert "Throttle was removed" in r.stdout
    assert not cluster.throttle_configs()
