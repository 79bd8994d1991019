"""kafka-reassign --zookeeper against a real ZooKeeper (a fresh chroot per test), the znodes
written in Kafka's formats by the test as a Kafka cluster would have left them."""

from __future__ import annotations

import json

import pytest

from client import cli
from client.exit_codes import (
    BAD_INPUT_FILE,
    CLUSTER_DATA,
    CLUSTER_MISMATCH,
    CLUSTER_UNREACHABLE,
    CONFLICT,
    IN_PROGRESS,
    OK,
    PLAN_REFUSED,
    USAGE,
    VERIFY_FAILED,
)

from tests.client.cluster_zk import KafkaZk, dumps, plan, run_cli, write_json

pytestmark = pytest.mark.zk


@pytest.fixture
def kzk(zk_hosts):
    k = KafkaZk(zk_hosts)
    k.populate()
    try:
        yield k
    finally:
        k.close()


def cli_main(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- --execute ------------------------------------------------------------------------------


def test_execute_writes_reassign_partitions_with_original_replicas(kzk, tmp_path):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4]), ("orders", 1, [2, 3, 4])))
    r = run_cli("--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f)
    assert r.returncode == OK, r.stderr
    assert "--zookeeper is deprecated" in r.stderr and "--bootstrap-server" in r.stderr
    assert kzk.get_json("/admin/reassign_partitions") == {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2]},
            {"topic": "orders", "partition": 1, "replicas": [2, 3, 4], "original_replicas": [2, 3]},
        ],
    }
    # Kafka's rollback hint: the current assignment, as a reassignment file.
    assert "Current partition replica assignment" in r.stdout
    assert '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]},' in r.stdout
    assert "Successfully started partition reassignments for orders-0,orders-1" in r.stdout
    # no throttle: no config written
    assert kzk.get_json("/config/topics/orders") == {"version": 1, "config": {}}
    assert kzk.zk.get_children("/config/changes") == []


def test_execute_with_throttle_sets_kafka_throttle_configs(kzk, tmp_path, capsys):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f,
                            "--throttle", "50000000")
    assert code == OK
    assert kzk.get_json("/config/topics/orders")["config"] == {
        "leader.replication.throttled.replicas": "0:1,0:2",
        "follower.replication.throttled.replicas": "0:3,0:4",
    }
    for b in (1, 2, 3, 4):
        assert kzk.get_json(f"/config/brokers/{b}")["config"] == {
            "leader.replication.throttled.rate": "50000000",
            "follower.replication.throttled.rate": "50000000",
        }
    changes = sorted(kzk.zk.get_children("/config/changes"))
    entities = sorted(kzk.get_json(f"/config/changes/{c}")["entity_path"] for c in changes)
    assert entities == ["brokers/1", "brokers/2", "brokers/3", "brokers/4", "topics/orders"]
    assert all(kzk.get_json(f"/config/changes/{c}")["version"] == 2 for c in changes)
    assert "The inter-broker throttle limit was set to 50000000 B/s" in out
    assert "You must run --verify periodically" in out


def test_execute_refused_while_a_reassignment_runs(kzk, tmp_path, capsys):
    kzk.zk.create("/admin/reassign_partitions",
                  dumps(plan(("audit", 0, [2, 3, 4])) | {"partitions": [{"topic": "audit", "partition": 0,
                                                                          "replicas": [2, 3, 4], "original_replicas": [1, 2, 3]}]}))
    before = kzk.tree()
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f)
    assert code == CONFLICT
    assert "There is an existing assignment running" in err
    assert kzk.tree() == before


def test_execute_additional_adds_only_partitions_not_moving(kzk, tmp_path, capsys):
    running = {"version": 1, "partitions": [{"topic": "audit", "partition": 0, "replicas": [2, 3, 4],
                                             "original_replicas": [1, 2, 3]}]}
    kzk.zk.create("/admin/reassign_partitions", dumps(running))
    overlap = write_json(tmp_path, "overlap.json", plan(("audit", 0, [1, 2, 4]), ("orders", 0, [3, 4])))
    before = kzk.tree()
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--additional",
                            "--reassignment-json-file", overlap)
    assert code == CONFLICT and "already being reassigned: audit-0" in err
    assert kzk.tree() == before

    extra = write_json(tmp_path, "extra.json", plan(("orders", 0, [3, 4])))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--additional",
                            "--reassignment-json-file", extra)
    assert code == OK
    assert kzk.get_json("/admin/reassign_partitions")["partitions"] == [
        {"topic": "audit", "partition": 0, "replicas": [2, 3, 4], "original_replicas": [1, 2, 3]},
        {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2]},
    ]


def test_execute_throttle_while_running_updates_the_rate_only(kzk, tmp_path, capsys):
    kzk.zk.create("/admin/reassign_partitions", dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2]}]}))
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f,
                              "--throttle", "777")
    assert code == CONFLICT
    assert "was NOT started" in out and "updated to 777 B/s" in out
    assert kzk.get_json("/config/brokers/3")["config"]["follower.replication.throttled.rate"] == "777"
    # the running reassignment itself is untouched
    assert len(kzk.get_json("/admin/reassign_partitions")["partitions"]) == 1


def test_dry_run_writes_nothing_and_shows_the_writes(kzk, tmp_path, capsys):
    before = kzk.tree()
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--dry-run", "--throttle", "1000",
                            "--reassignment-json-file", f, "--output", "json")
    assert code == OK
    doc = json.loads(out)
    assert doc["dry_run"] is True and doc["started"] == []
    assert doc["writes"]["/admin/reassign_partitions"]["partitions"][0]["original_replicas"] == [1, 2]
    assert doc["writes"]["/config/brokers/4"]["config"]["leader.replication.throttled.rate"] == "1000"
    assert kzk.tree() == before


@pytest.mark.parametrize(
    "entry, message",
    [
        (("orders", 0, [1, 42]), "partitions[0] (orders-0): broker(s) [42] not in the cluster"),
        (("nosuch", 0, [1, 2]), "partitions[0] (nosuch-0): topic 'nosuch' does not exist"),
        (("orders", 9, [1, 2]), "partitions[0] (orders-9): topic 'orders' has no partition 9 (partitions: 0-2)"),
    ],
)
def test_input_not_matching_the_cluster_writes_nothing(kzk, tmp_path, entry, message):
    before = kzk.tree()
    f = write_json(tmp_path, "plan.json", plan(entry))
    r = run_cli("--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f)
    assert r.returncode == CLUSTER_MISMATCH
    assert f"{f}: {message}" in r.stderr
    assert kzk.tree() == before


# ---- --verify -------------------------------------------------------------------------------


def test_verify_in_progress_keeps_throttles(kzk, tmp_path, capsys):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    assert cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--throttle", "1000",
                    "--reassignment-json-file", f)[0] == OK
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify", "--reassignment-json-file", f)
    assert code == IN_PROGRESS
    assert "Reassignment of partition orders-0 is still in progress." in out
    assert kzk.get_json("/config/brokers/1")["config"]


def test_verify_complete_removes_throttles_like_kafka(kzk, tmp_path, capsys):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    assert cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--throttle", "1000",
                    "--reassignment-json-file", f)[0] == OK
    # what the controller does when the move completes
    kzk.zk.delete("/admin/reassign_partitions")
    kzk.set_assignment("orders", {0: [3, 4], 1: [2, 3], 2: [3, 1]})
    kzk.zk.set("/config/topics/orders", dumps({"version": 1, "config": {
        "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:3,0:4",
        "retention.ms": "1000"}}))
    n_changes = len(kzk.zk.get_children("/config/changes"))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify", "--reassignment-json-file", f)
    assert code == OK
    assert "Reassignment of partition orders-0 is complete." in out
    assert "Throttle was removed from topics orders and brokers 1,2,3,4." in out
    assert kzk.get_json("/config/topics/orders")["config"] == {"retention.ms": "1000"}
    for b in (1, 2, 3, 4):
        assert kzk.get_json(f"/config/brokers/{b}")["config"] == {}
    assert len(kzk.zk.get_children("/config/changes")) == n_changes + 5


def test_verify_with_preserve_throttles_removes_none(kzk, tmp_path, capsys):
    """Kafka's --preserve-throttles: a complete reassignment, and every throttle stays."""
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    assert cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--throttle", "1000",
                    "--reassignment-json-file", f)[0] == OK
    kzk.zk.delete("/admin/reassign_partitions")  # the move completed
    kzk.set_assignment("orders", {0: [3, 4], 1: [2, 3], 2: [3, 1]})
    before = kzk.tree()
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify", "--preserve-throttles",
                            "--reassignment-json-file", f)
    assert code == OK
    assert "Reassignment of partition orders-0 is complete." in out
    assert "Throttles are kept (--preserve-throttles)." in out and "removed" not in out
    assert kzk.tree() == before
    # Only with --verify and --cancel, as Kafka's tool takes it.
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--preserve-throttles",
                            "--reassignment-json-file", f)
    assert code != OK and "--preserve-throttles cannot be used with --execute" in err


def test_verify_failed_and_dry_run(kzk, tmp_path, capsys):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4]), ("orders", 1, [2, 3])))
    kzk.zk.create("/config/brokers/2", dumps({"version": 1, "config": {"leader.replication.throttled.rate": "5"}}))
    before = kzk.tree()
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify", "--dry-run",
                            "--reassignment-json-file", f, "--output", "json")
    assert code == VERIFY_FAILED
    doc = json.loads(out)
    assert [(p["partition"], p["status"]) for p in doc["partitions"]] == [(0, "failed"), (1, "complete")]
    assert doc["partitions"][0]["replicas"] == [1, 2]
    assert doc["throttle_removed"] == {"topics": [], "brokers": [2]}
    assert kzk.tree() == before


# ---- KIP-240 --list / --describe --------------------------------------------------------------


def _start_running(kzk):
    kzk.zk.create("/admin/reassign_partitions", dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2]},
        {"topic": "orders", "partition": 1, "replicas": [2, 4], "original_replicas": [2, 3]}]}))
    kzk.zk.create("/admin/reassignments/orders/0",
                  dumps({"version": 1, "replicas": [3, 4], "original_replicas": [1, 2]}), makepath=True)
    kzk.zk.set("/config/topics/orders", dumps({"version": 1, "config": {
        "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:3"}}))
    kzk.zk.create("/config/brokers/1", dumps({"version": 1, "config": {"leader.replication.throttled.rate": "900"}}))
    kzk.zk.create("/config/brokers/3", dumps({"version": 1, "config": {"follower.replication.throttled.rate": "800"}}))
    return kzk.zk.exists("/admin/reassignments/orders/0")


def test_list_shows_running_and_pending(kzk, capsys):
    stat = _start_running(kzk)
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--list", "--output", "json")
    assert code == OK
    items = json.loads(out)["reassignments"]
    assert items[0] == {"topic": "orders", "partition": 0, "reassignment_id": stat.czxid, "state": "running",
                        "replicas": [3, 4], "original_replicas": [1, 2], "adding_replicas": None,
                        "removing_replicas": None}
    assert (items[1]["partition"], items[1]["state"], items[1]["reassignment_id"]) == (1, "pending", None)
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--list")
    assert out.splitlines()[0].split() == ["Topic", "Partition", "ReassignmentId", "State", "Replicas", "OriginalReplicas"]
    assert out.splitlines()[1].split() == ["orders", "0", str(stat.czxid), "running", "3,4", "1,2"]


def test_describe_reads_start_time_leader_and_throttles(kzk, capsys):
    stat = _start_running(kzk)
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--describe", "--output", "json")
    assert code == OK
    [d] = json.loads(out)["reassignments"]
    assert d["reassignment_id"] == stat.czxid and d["start_time_ms"] == stat.ctime
    assert d["leader"] == 1 and d["leader_throttle"] == 900
    assert d["new_assigned_brokers"] == [3, 4]
    assert d["follower_throttles"] == {"3": 800, "4": None}


def test_list_with_nothing_running(kzk, capsys):
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--list")
    assert (code, out.strip()) == (OK, "No partition reassignments in progress.")


# ---- KIP-236 --cancel and the queue -----------------------------------------------------------


def test_cancel_creates_the_cancel_znode_once(kzk, capsys):
    _start_running(kzk)
    kzk.zk.set("/admin/reassign_partitions", dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2]},
        {"topic": "audit", "partition": 0, "replicas": [2, 3, 4]}]}))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--cancel")
    assert code == OK
    assert kzk.exists("/admin/cancel_reassignment_in_progress")
    assert "orders-0: [3, 4] -> [1, 2]" in out
    assert "audit-0: [2, 3, 4] has no original_replicas" in out
    assert "Successfully submitted cancellation of reassignments." in out
    before = kzk.tree()
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--cancel")
    assert code == CONFLICT and "a cancellation is already in progress" in err
    assert kzk.tree() == before


def test_cancel_with_nothing_pending_and_with_a_file(kzk, tmp_path, capsys):
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--cancel")
    assert code == OK and "nothing to cancel" in out
    assert not kzk.exists("/admin/cancel_reassignment_in_progress")
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--cancel", "--reassignment-json-file", f)
    assert code == USAGE and "use --bootstrap-server" in err


def test_execute_queue_and_verify_queue(kzk, tmp_path, capsys):
    _start_running(kzk)
    f = write_json(tmp_path, "next.json", plan(("orders", 0, [4, 1]), ("audit", 0, [2, 3, 4])))
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute-queue", "--reassignment-json-file", f)
    assert code == OK
    assert kzk.get_json("/admin/reassign_partitions_queue") == {"version": 1, "partitions": [
        {"topic": "audit", "partition": 0, "replicas": [2, 3, 4]},
        {"topic": "orders", "partition": 0, "replicas": [4, 1]}]}
    assert "Successfully queued partition reassignments for audit-0,orders-0" in out
    before = kzk.tree()
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute-queue", "--reassignment-json-file", f)
    assert code == CONFLICT and "queued batch is still waiting" in err
    assert kzk.tree() == before
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify-queue", "--reassignment-json-file", f)
    assert code == IN_PROGRESS
    assert "Reassignment of partition orders-0 is queued" in out
    # the controller takes the batch; audit-0 completes
    kzk.zk.delete("/admin/reassign_partitions_queue")
    kzk.set_assignment("audit", {0: [2, 3, 4]})
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--verify-queue", "--reassignment-json-file", f,
                            "--output", "json")
    statuses = {p["topic"]: p["status"] for p in json.loads(out)["partitions"]}
    assert statuses == {"audit": "complete", "orders": "in_progress"}
    assert code == IN_PROGRESS


# ---- --generate -----------------------------------------------------------------------------


def test_generate_output_format_and_determinism(kzk, tmp_path):
    topics = write_json(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "orders"}, {"topic": "audit"}]})
    before = kzk.tree()
    runs = [run_cli("--zookeeper", kzk.hosts, "--generate", "--topics-to-move-json-file", topics,
                    "--broker-list", "1,2,3,4") for _ in range(2)]
    assert [r.returncode for r in runs] == [OK, OK]
    assert runs[0].stdout == runs[1].stdout
    lines = runs[0].stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": "audit", "partition": 0, "replicas": [1, 2, 3]},
        {"topic": "orders", "partition": 0, "replicas": [1, 2]},
        {"topic": "orders", "partition": 1, "replicas": [2, 3]},
        {"topic": "orders", "partition": 2, "replicas": [3, 1]}]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])["partitions"]
    assert [(p["topic"], p["partition"]) for p in proposed] == [("audit", 0), ("orders", 0), ("orders", 1), ("orders", 2)]
    for p in proposed:
        assert len(p["replicas"]) == (3 if p["topic"] == "audit" else 2)
        assert len(set(p["replicas"])) == len(p["replicas"]) and set(p["replicas"]) <= {1, 2, 3, 4}
    # orders' three leaders land on three different brokers, as Kafka's round robin does
    assert len({p["replicas"][0] for p in proposed if p["topic"] == "orders"}) == 3
    assert kzk.tree() == before


def test_generate_checks_brokers_and_topics(kzk, tmp_path, capsys):
    topics = write_json(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "orders"}]})
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--generate", "--topics-to-move-json-file", topics,
                            "--broker-list", "1,9")
    assert code == CLUSTER_MISMATCH and "--broker-list: broker(s) [9] not in the cluster" in err
    missing = write_json(tmp_path, "missing.json", {"version": 1, "topics": [{"topic": "ghost"}]})
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--generate", "--topics-to-move-json-file", missing,
                            "--broker-list", "1,2")
    assert code == CLUSTER_MISMATCH and "topic(s) ['ghost'] do not exist" in err
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--generate", "--topics-to-move-json-file", topics,
                            "--broker-list", "1")
    assert code == PLAN_REFUSED and "replication factor 2 larger than 1 available brokers" in err


def test_generate_rack_aware_json(zk_hosts, tmp_path, capsys):
    k = KafkaZk(zk_hosts)
    try:
        k.populate(brokers=(1, 2, 3, 4), topics={"t": {p: [1, 2] for p in range(8)}},
                   racks={1: "a", 2: "a", 3: "b", 4: "b"})
        topics = write_json(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "t"}]})
        code, out, _ = cli_main(capsys, "--zookeeper", zk_hosts, "--generate", "--topics-to-move-json-file", topics,
                                "--broker-list", "1,2,3,4", "--output", "json")
        assert code == OK
        doc = json.loads(out)
        assert doc["action"] == "generate" and doc["rack_aware"] is True
        rack = {1: "a", 2: "a", 3: "b", 4: "b"}
        for p in doc["proposed"]["partitions"]:
            assert {rack[b] for b in p["replicas"]} == {"a", "b"}
        code, out, _ = cli_main(capsys, "--zookeeper", zk_hosts, "--generate", "--topics-to-move-json-file", topics,
                                "--broker-list", "1,2,3,4", "--output", "json", "--disable-rack-aware")
        assert json.loads(out)["rack_aware"] is False
    finally:
        k.close()


# ---- bad input, as a user meets it -------------------------------------------------------------


BAD_FILES = [
    (None, "file not found", BAD_INPUT_FILE),
    ("{not json", "malformed JSON: Expecting property name enclosed in double quotes at line 1 column 2", BAD_INPUT_FILE),
    ("", "file is empty", BAD_INPUT_FILE),
    ('{"version": 2, "partitions": []}', 'unsupported "version" 2', BAD_INPUT_FILE),
    ('{"version": 1, "partitions": {}}', '"partitions" must be a list', BAD_INPUT_FILE),
    ('{"version": 1, "partitions": []}', '"partitions" is empty', BAD_INPUT_FILE),
    (json.dumps(plan(("orders", 0, [1, 2]), ("orders", 0, [2, 3]))), "partitions[1] (orders-0): duplicate of partitions[0]", BAD_INPUT_FILE),
    (json.dumps(plan(("orders", 0, [1, 1]))), 'partitions[0] (orders-0): "replicas" lists broker 1 twice', BAD_INPUT_FILE),
    (json.dumps(plan(("orders", 0, [1, -2]))), 'partitions[0] (orders-0): "replicas" holds negative broker id -2', BAD_INPUT_FILE),
    (json.dumps(plan(("orders", -1, [1, 2]))), "partitions[0] (topic 'orders'): partition -1 is out of range", BAD_INPUT_FILE),
    ('{"version":1,"partitions":[{"topic":"orders","partition":0,"replica":[1]}]}', "partitions[0]: unknown field(s) ['replica']", BAD_INPUT_FILE),
]


@pytest.mark.parametrize("content, message, code", BAD_FILES)
def test_bad_reassignment_file(kzk, tmp_path, content, message, code):
    path = str(tmp_path / "absent.json") if content is None else write_json(tmp_path, "plan.json", content)
    before = kzk.tree()
    r = run_cli("--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", path)
    assert r.returncode == code, r.stderr
    assert f"kafka-reassign: error: {path}: {message}" in r.stderr
    assert r.stdout == ""
    assert kzk.tree() == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["--execute", "--bootstrap-server", "127.0.0.1:1"], "give --bootstrap-server or --zookeeper, not both; nothing was done"),
        (["--progress"], "--progress needs --bootstrap-server: it is not supported with --zookeeper (KIP-179)"),
        (["--execute", "--throttle", "0"], "--throttle: must be positive (bytes/second), got 0"),
        (["--execute", "--throttle", "-5"], "--throttle: must be positive (bytes/second), got -5"),
        (["--execute", "--throttle", "10MB"], "--throttle: must be a whole number of bytes/second, got '10MB'"),
        (["--execute", "--watch"], "--watch cannot be used with --execute"),
        (["--execute", "--verify"], "exactly one action is required"),
        (["--execute", "--timeout", "soon"], "--timeout: expected a whole number, got 'soon'"),
        (["--execute", "--timeout", "99999999999999999999"], "--timeout: at most 2147483647 ms"),  # int32 on the wire
    ],
)
def test_bad_options_change_nothing(kzk, tmp_path, args, message):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    before = kzk.tree()
    r = run_cli("--zookeeper", kzk.hosts, "--reassignment-json-file", f, *args)
    assert r.returncode == USAGE, r.stderr
    assert message in r.stderr
    assert "deprecated" not in r.stderr  # refused before connecting
    assert kzk.tree() == before


def test_malformed_znode_is_reported(kzk, tmp_path, capsys):
    kzk.zk.set("/brokers/topics/orders", b'{"version":2,"partitions":{"0":"oops"}}')
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    before = kzk.tree()
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--execute", "--reassignment-json-file", f)
    assert code == CLUSTER_DATA and "malformed znode /brokers/topics/orders" in err
    assert kzk.tree() == before


def test_unreachable_zookeeper(tmp_path, capsys):
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code, out, err = cli_main(capsys, "--zookeeper", "127.0.0.1:1", "--execute", "--reassignment-json-file", f,
                              "--timeout", "1500", "--output", "json")
    assert code == CLUSTER_UNREACHABLE
    assert "cannot connect to ZooKeeper at 127.0.0.1:1" in err
    assert json.loads(out)["error"]["exit_code"] == CLUSTER_UNREACHABLE


# ---- KIP-6 --rebalance / --decommission-broker (the planner) -----------------------------------


def test_decommission_executes_at_once(kzk, capsys):
    code, out, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--decommission-broker", "3", "--timeout", "5000")
    assert code == OK, err
    written = kzk.get_json("/admin/reassign_partitions")["partitions"]
    before = {("orders", 0): [1, 2], ("orders", 1): [2, 3], ("orders", 2): [3, 1], ("audit", 0): [1, 2, 3]}
    moved = {(e["topic"], e["partition"]) for e in written}
    assert moved == {tp for tp, r in before.items() if 3 in r}
    for e in written:
        assert 3 not in e["replicas"] and len(e["replicas"]) == len(before[(e["topic"], e["partition"])])
        assert e["original_replicas"] == before[(e["topic"], e["partition"])]
    assert out.startswith("Planner: 3 replica move(s) (lower bound 3)")
    assert "Successfully started partition reassignments for" in out


def test_decommission_dry_run_and_refusals(kzk, capsys):
    before = kzk.tree()
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--decommission-broker", "3", "--dry-run",
                            "--timeout", "5000", "--output", "json")
    assert code == OK
    doc = json.loads(out)
    assert doc["dry_run"] is True and doc["plan"]["moves"] == doc["plan"]["lower_bound"] == 3
    code, out, _ = cli_main(capsys, "--zookeeper", kzk.hosts, "--decommission-broker", "4")
    assert (code, out.strip()) == (OK, "Broker 4 holds no replicas: nothing to move.")
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--decommission-broker", "9")
    assert code == CLUSTER_MISMATCH and "broker 9 is not in the cluster" in err
    code, _, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--decommission-broker", "3,4")
    assert code == USAGE and "expected one broker id" in err
    assert kzk.tree() == before


def test_rebalance_proposes_fair_counts_without_writing(kzk, tmp_path, capsys):
    before = kzk.tree()
    code, out, err = cli_main(capsys, "--zookeeper", kzk.hosts, "--rebalance", "--timeout", "5000", "--output", "json")
    assert code == OK, err
    doc = json.loads(out)
    counts = {b: 0 for b in (1, 2, 3, 4)}
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    layout = {("orders", 0): [1, 2], ("orders", 1): [2, 3], ("orders", 2): [3, 1], ("audit", 0): [1, 2, 3]}
    layout.update(proposed)
    for replicas in layout.values():
        for b in replicas:
            counts[b] += 1
    assert sorted(counts.values()) == [2, 2, 2, 3]  # 9 replicas over 4 brokers: R or R+1
    assert doc["plan"]["moves"] == doc["plan"]["lower_bound"] == 2
    assert {tp for tp in proposed} == {(e["topic"], e["partition"]) for e in doc["current"]["partitions"]}
    assert kzk.tree() == before
