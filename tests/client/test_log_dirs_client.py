"""kafka-reassign's log-dir moves (KIP-113) without a cluster: the reassignment JSON's log_dirs,
AlterReplicaLogDirs bodies and answers, move states from DescribeLogDirs, the retry loop, the
CLI's refusals and the progress table."""

import pytest

from client import intra_broker, logdirs, progress
from client.cli import main
from client.errors import InputFileError, error_for_code
from client.inputs import parse_reassignment
from client.metadata import LogDirsResult
from client.results import KeyedResult

NONE, REPLICA_NOT_AVAILABLE, STORAGE, NOT_FOUND = 0, 9, 56, 57


def test_log_dirs_name_directories_per_replica():
    doc = {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3], "log_dirs": ["/data/d2", "any", "/data/d1"]},
        {"topic": "t", "partition": 1, "replicas": [2], "log_dirs": ["any"]},
        {"topic": "u", "partition": 0, "replicas": [3]}]}
    plan = parse_reassignment(doc, "plan.json")
    assert plan.log_dirs == {("t", 0, 1): "/data/d2", ("t", 0, 3): "/data/d1"}
    assert plan.assignments == {("t", 0): [1, 2, 3], ("t", 1): [2], ("u", 0): [3]}


@pytest.mark.parametrize("dirs, message", [
    (["data/d1"], "not an absolute path"),
    ([7], 'must be "any" or an absolute path'),
    ([None], 'must be "any" or an absolute path'),
    (["/d\n1"], "control characters"),
    (["/" + "d" * 5000], "longer than 4096"),
    (["/d1", "/d2"], "one directory per replica (1)"),
    ("/d1", "one directory per replica"),
])
def test_bad_log_dirs_are_refused_naming_file_entry_and_broker(dirs, message):
    doc = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [4], "log_dirs": dirs}]}
    with pytest.raises(InputFileError) as e:
        parse_reassignment(doc, "plan.json")
    assert message in str(e.value) and "plan.json" in str(e.value) and "partitions[0] (t-0)" in str(e.value)


def test_requests_are_grouped_per_broker_and_directory():
    bodies = logdirs.requests_by_broker({("t", 1, 2): "/d2", ("t", 0, 2): "/d2", ("u", 0, 2): "/d1",
                                         ("t", 0, 3): "/d1"})
    assert bodies == {
        2: {"dirs": [{"path": "/d1", "topics": [{"name": "u", "partitions": [0]}]},
                     {"path": "/d2", "topics": [{"name": "t", "partitions": [0, 1]}]}]},
        3: {"dirs": [{"path": "/d1", "topics": [{"name": "t", "partitions": [0]}]}]},
    }


def test_results_per_replica_and_a_left_out_replica_is_an_error():
    answer = {"results": [{"topic_name": "t", "partitions": [{"partition_index": 0, "error_code": 0},
                                                             {"partition_index": 1, "error_code": NOT_FOUND}]}]}
    out = logdirs.results(2, answer, [("t", 0, 2), ("t", 1, 2), ("t", 2, 2)])
    assert out[("t", 0, 2)] is None
    assert out[("t", 1, 2)].code == NOT_FOUND
    assert "left this replica out" in str(out[("t", 2, 2)])


def _logs(broker, entries):
    result = LogDirsResult()
    by_dir = {}
    for (topic, partition, log_dir, size, is_future) in entries:
        by_dir.setdefault(log_dir, []).append({"name": topic, "partitions": [
            {"partition_index": partition, "partition_size": size, "offset_lag": 0, "is_future_key": is_future}]})
    result.add_body(broker, {"results": [{"error_code": 0, "log_dir": d, "topics": ts, "total_bytes": 100,
                                          "usable_bytes": 50} for d, ts in by_dir.items()]})
    return result


def test_move_states():
    logs = _logs(2, [("t", 0, "/d1", 100, False), ("t", 0, "/d2", 30, True),
                     ("t", 1, "/d2", 100, False),
                     ("t", 2, "/d1", 100, False), ("t", 2, "/d3", 10, True),
                     ("t", 3, "/d1", 100, False)])
    states = {(m.topic, m.partition): m for m in logdirs.move_states({("t", p, 2): "/d2" for p in range(5)}, logs)}
    assert states[("t", 0)].state == logdirs.IN_PROGRESS and states[("t", 0)].remaining == 70
    assert states[("t", 1)].done
    assert states[("t", 2)].state == logdirs.CANCELLED and states[("t", 2)].future == "/d3"
    assert states[("t", 3)].state == logdirs.NOT_STARTED and states[("t", 3)].current == "/d1"
    assert states[("t", 4)].state == logdirs.MISSING
    assert logdirs.move_state(("t", 0, 9), "/d2", logs).state == logdirs.UNAVAILABLE
    assert [(d.path, d.logs, d.total_bytes) for d in logs.dirs[2]] == [("/d1", 3, 100), ("/d2", 2, 100),
                                                                        ("/d3", 1, 100)]


class FakeAdmin:
    """Answers AlterReplicaLogDirs from a script: per round, replica -> code."""

    def __init__(self, rounds):
        self.rounds = list(rounds)
        self.asked = []

    async def alter_replica_log_dirs(self, moves):
        self.asked.append(dict(moves))
        codes = self.rounds.pop(0) if self.rounds else {}
        return KeyedResult({k: None if codes.get(k, NONE) == 0 else error_for_code(codes[k]) for k in moves})


async def test_replicas_not_available_are_asked_again_until_accepted():
    a, b, c = ("t", 0, 1), ("t", 0, 2), ("t", 1, 2)
    moves = {a: "/d1", b: "/d2", c: "/d2"}
    admin = FakeAdmin([{b: REPLICA_NOT_AVAILABLE, c: STORAGE}, {b: REPLICA_NOT_AVAILABLE}, {}])
    outcome = intra_broker.MovesOutcome(dict(moves))
    pending = await intra_broker.request_moves(admin, moves, outcome)
    assert pending == {b: "/d2"} and outcome.accepted == [a] and outcome.failed[c].code == STORAGE
    slept = []

    async def sleep(s):
        slept.append(s)

    await intra_broker.finish_moves(admin, pending, outcome, timeout_s=10, sleep=sleep)
    assert outcome.accepted == [a, b] and outcome.timed_out == [] and not outcome.ok  # c failed
    assert [list(m) for m in admin.asked] == [[a, b, c], [b], [b]] and slept == [0.1]


async def test_replicas_never_created_time_out():
    b = ("t", 0, 2)
    admin = FakeAdmin([{b: REPLICA_NOT_AVAILABLE}] * 100)
    now = [0.0]

    async def sleep(s):
        now[0] += s

    outcome = intra_broker.MovesOutcome({b: "/d2"})
    await intra_broker.finish_moves(admin, {b: "/d2"}, outcome, timeout_s=1.0, clock=lambda: now[0], sleep=sleep)
    assert outcome.timed_out == [b] and not outcome.ok
    assert "Timed out before these replicas existed" in outcome.text()
    assert 10 <= len(admin.asked) <= 12


def _plan(tmp_path, log_dirs=("/d1",)):
    path = tmp_path / "plan.json"
    path.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":%s}]}'
                    % ("[" + ",".join(f'"{d}"' for d in log_dirs) + "]"))
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["--zookeeper", "127.0.0.1:1", "--execute"], "needs --bootstrap-server"),
    (["--zookeeper", "127.0.0.1:1", "--verify"], "needs --bootstrap-server"),
    (["--zookeeper", "127.0.0.1:1", "--execute-queue"], "only --execute moves"),
    (["--bootstrap-server", "127.0.0.1:1", "--execute", "--replica-alter-log-dirs-throttle", "0"], "must be positive"),
    (["--zookeeper", "127.0.0.1:1", "--execute", "--replica-alter-log-dirs-throttle", "5"], "needs --bootstrap-server"),
    (["--bootstrap-server", "127.0.0.1:1", "--verify", "--replica-alter-log-dirs-throttle", "5"],
     "cannot be used with --verify"),
])
def test_cli_refusals_before_anything_is_sent(tmp_path, capsys, args, message):
    assert main([*args, "--reassignment-json-file", _plan(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_throttle_without_any_log_dir_move_is_refused(tmp_path, capsys):
    plan = _plan(tmp_path, ["any"])
    assert main(["--bootstrap-server", "127.0.0.1:1", "--execute", "--reassignment-json-file", plan,
                 "--replica-alter-log-dirs-throttle", "5"]) == 2
    assert "names no log directory" in capsys.readouterr().err


def test_progress_shows_log_dir_moves_and_is_done_only_when_they_are():
    moving = logdirs.LogDirMove("t", 0, 2, "/d2", logdirs.IN_PROGRESS, "/d1", "/d2", 3 * 1024 * 1024)
    sample = progress.Sample(time=0.0, brokers={2}, topics={"t": {0: (2, [2])}},
                             logs={2: {("t", 0): progress.ReplicaLog(100, 0)}}, log_dir_moves=[moving])
    report = progress.compute({("t", 0): [2]}, sample)
    assert not report.done
    text = progress.render_table(report)
    assert "Log directory moves: 0/1 done" in text and "In progress from /d1: 3.0 MiB left" in text
    assert report.as_json()["log_dir_moves"][0]["bytes_remaining"] == 3 * 1024 * 1024
    done = logdirs.LogDirMove("t", 0, 2, "/d2", logdirs.COMPLETE, "/d2")
    sample.log_dir_moves = [done]
    assert progress.compute({("t", 0): [2]}, sample).done


class DirsAdmin:
    def __init__(self, result):
        self.result = result
        self.asked = []

    async def describe_log_dirs(self, broker_ids=None, partitions=None):
        self.asked.append((broker_ids, partitions))
        return self.result


async def test_named_directories_are_checked_before_anything_changes():
    result = LogDirsResult()
    result.add_body(2, {"results": [{"error_code": 0, "log_dir": "/d1", "topics": []},
                                    {"error_code": STORAGE, "log_dir": "/d2", "topics": []}]})
    admin = DirsAdmin(result)
    await intra_broker.check_dirs(admin, {("t", 0, 2): "/d1", ("t", 0, 7): "/d9"}, "plan.json")  # 7: no answer
    assert admin.asked == [([2, 7], [])]
    with pytest.raises(Exception) as e:
        await intra_broker.check_dirs(admin, {("t", 0, 2): "/d9", ("t", 1, 2): "/d2"}, "plan.json")
    text = str(e.value)
    assert type(e.value).__name__ == "ClusterMismatchError"
    assert "t-0: broker 2 has no log dir /d9 (it has /d1, /d2)" in text
    assert "t-1: log dir /d2 of broker 2 is offline" in text and "nothing was changed" in text
