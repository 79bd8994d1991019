"""The client's pure parts: input validation, the progress computation, cluster checks, exit
codes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client import exit_codes, progress
from client.cluster import ClusterAssignment, check_plan
from client.errors import (
    ClusterMismatchError,
    ConflictError,
    InputError,
    InputFileError,
    NotControllerError,
    ReassignmentInProgressError,
    error_for_code,
)
from client.inputs import (
    parse_broker_list,
    parse_reassignment,
    parse_throttle,
    parse_topics_to_move,
    read_json_file,
    reassignment_json,
)

# ---- inputs ---------------------------------------------------------------------------------


def test_reassignment_round_trip_and_kafka_defaults():
    doc = {"partitions": [{"topic": "b", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "any"]},
                          {"topic": "a", "partition": 0, "replicas": [1], "original_replicas": [3]}]}
    plan = parse_reassignment(doc, "f.json")  # a missing version reads as 1, as in Kafka
    assert list(plan.assignments) == [("b", 1), ("a", 0)]  # file order kept
    assert plan.topics == ["a", "b"] and plan.brokers == [1, 2]
    assert reassignment_json(plan.assignments) == (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},'
        '{"topic":"b","partition":1,"replicas":[2,1]}]}'
    )


@pytest.mark.parametrize(
    "doc, message",
    [
        ([], "expected a JSON object"),
        ({"version": "1", "partitions": []}, 'unsupported "version" "1"'),
        ({"version": 1, "partitions": [], "extra": 1}, "unknown top-level field(s) ['extra']"),
        ({"version": 1, "partitions": [5]}, "partitions[0]: expected an object"),
        ({"version": 1, "partitions": [{"topic": "", "partition": 0, "replicas": [1]}]}, '"topic" must be a non-empty string'),
        ({"version": 1, "partitions": [{"topic": "a/b", "partition": 0, "replicas": [1]}]}, "is not a legal topic name"),
        ({"version": 1, "partitions": [{"topic": "orders\n", "partition": 0, "replicas": [1]}]}, "is not a legal topic name"),
        ({"version": 1, "partitions": [{"topic": "t", "partition": True, "replicas": [1]}]}, '"partition" must be an integer'),
        ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "non-empty list of broker ids"),
        ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1.5]}]}, "holds 1.5, not a broker id"),
        ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2**31]}]}, "larger than int32"),
        ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["d"]}]}, "not an absolute path"),
        ({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]}, "one directory per replica"),
    ],
)
def test_reassignment_shape_errors(doc, message):
    with pytest.raises(InputFileError) as exc:
        parse_reassignment(doc, "plan.json")
    assert str(exc.value).startswith("plan.json: ") and message in str(exc.value)


def test_cancel_files_may_omit_replicas():
    plan = parse_reassignment({"version": 1, "partitions": [{"topic": "t", "partition": 3}]}, "c.json",
                              require_replicas=False)
    assert plan.assignments == {("t", 3): []}


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3)), min_size=1, max_size=8))
def test_duplicate_partitions_are_always_found(keys):
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": [1]} for t, p in keys]}
    if len(set(keys)) == len(keys):
        assert list(parse_reassignment(doc, "f").assignments) == keys
    else:
        with pytest.raises(InputFileError, match="duplicate of partitions"):
            parse_reassignment(doc, "f")


def test_topics_to_move():
    assert parse_topics_to_move({"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]}, "t") == ["a", "b"]
    for bad, message in [({"topics": []}, "empty"), ({"topics": [{"topic": "a"}, {"topic": "a"}]}, "listed twice"),
                         ({"topics": [{"name": "a"}]}, 'expected {"topic": NAME}'), ({}, 'missing "topics"')]:
        with pytest.raises(InputFileError, match=message):
            parse_topics_to_move(bad, "t")


def test_option_values():
    assert parse_broker_list(" 3,1 ,2") == [3, 1, 2]
    for bad in ("", "1,,2", "a", "1,1", "-1"):
        with pytest.raises(InputError) as exc:
            parse_broker_list(bad)
        assert not isinstance(exc.value, InputFileError)
    assert parse_throttle("1000") == 1000
    for bad in ("0", "-1", "1e6", "", str(2**63)):
        with pytest.raises(InputError):
            parse_throttle(bad)


def test_read_json_file_errors(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_json_file(str(tmp_path / "nope.json"))
    with pytest.raises(InputFileError, match="is a directory"):
        read_json_file(str(tmp_path))
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"t": "\xe9"}')
    with pytest.raises(InputFileError, match="not UTF-8"):
        read_json_file(str(bad))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputFileError, match="malformed JSON"):
        read_json_file(str(deep))


# ---- progress -------------------------------------------------------------------------------


def _sample(t, follower_size, lag, throttles=None):
    return progress.Sample(
        time=t,
        brokers={1, 2, 3},
        topics={"t": {0: (1, [1, 2, 3])}},
        logs={1: {("t", 0): progress.ReplicaLog(1000, 0)}, 2: {("t", 0): progress.ReplicaLog(1000, 0)},
              3: {("t", 0): progress.ReplicaLog(follower_size, lag)}},
        follower_throttles=throttles or {},
    )


def test_progress_rates_and_etas():
    targets = {("t", 0): [1, 3]}
    first = progress.compute(targets, _sample(0.0, 200, 80, {3: 400}))
    [leader, follower] = first.rows
    assert leader.status == "In sync" and leader.remaining == 0
    assert follower.status == "Behind: 80 messages behind" and follower.remaining == 800
    assert (follower.eta_s, follower.eta_from_throttle) == (2.0, True)
    second = progress.compute(targets, _sample(2.0, 600, 40, {3: 400}), _sample(0.0, 200, 80, {3: 400}))
    follower = second.rows[1]
    assert (follower.rate, follower.remaining, follower.eta_s, follower.eta_from_throttle) == (200.0, 400, 2.0, False)
    assert (second.total_remaining, second.overall_rate, second.overall_eta_s) == (400, 200.0, 2.0)
    assert not second.done and second.partitions[0].remaining == 400
    assert progress.fraction_done(second, first.total_remaining) == 0.5
    bar = progress.render_bar(second, first.total_remaining)
    assert bar.startswith("[###############...............]  50% 0/1 partitions, 400 B left, ETA 0:00:02")


def test_progress_ignores_kip179s_not_throttled_value():
    # Long.MAX_VALUE is "not throttled": no ETA from it (it made every ETA 0), none in the JSON.
    targets = {("t", 0): [1, 3]}
    report = progress.compute(targets, _sample(0.0, 200, 80, {3: 2**63 - 1}))
    follower = report.rows[1]
    assert (follower.eta_s, follower.eta_from_throttle, report.overall_eta_s) == (None, False, None)
    assert report.as_json()["follower_throttles"] == {}
    throttled = progress.compute(targets, _sample(0.0, 200, 80, {3: 400, 2: 500}))
    assert throttled.as_json()["follower_throttles"] == {"3": 400}  # broker 2 receives nothing


def test_progress_done_needs_the_assignment_too():
    targets = {("t", 0): [1, 2, 3]}
    report = progress.compute(targets, _sample(0.0, 1000, 0))
    assert report.done and report.overall_eta_s == 0.0
    moving = progress.compute({("t", 0): [1, 3]}, _sample(0.0, 1000, 0))
    assert not moving.done  # in sync, but broker 2 is still assigned
    assert progress.render_table(report).splitlines()[-1] == "Overall: 1/1 partitions done, nothing left to copy"


def test_rate_window_measures_against_the_last_sample_old_enough():
    window = progress.RateWindow(_sample(0.0, 1000, 0), seconds=10.0)
    assert window.push(_sample(2.0, 1000, 0)).time == 0.0
    assert window.push(_sample(9.0, 1000, 0)).time == 0.0
    assert window.push(_sample(11.0, 1000, 0)).time == 0.0  # 2.0 is not 10 s old yet
    assert window.push(_sample(12.5, 1000, 0)).time == 2.0  # the last at least 10 s before 12.5
    assert window.push(_sample(30.0, 1000, 0)).time == 12.5
    assert len(window.samples) == 2


def test_progress_statuses_for_what_the_cluster_lacks():
    s = _sample(0.0, 0, 0)
    del s.logs[2]  # broker 2 did not answer
    report = progress.compute({("t", 0): [2, 4], ("t", 9): [1], ("u", 0): [1]}, s)
    assert [(r.topic, r.partition, r.broker, r.status) for r in report.rows] == [
        ("t", 0, 2, "Broker unavailable"), ("t", 0, 4, "Unknown broker"),
        ("t", 9, 1, "Unknown partition"), ("u", 0, 1, "Unknown topic")]
    assert len(report.hopeless) == 3
    text = progress.render_table(report)
    assert text.splitlines()[0].split() == ["Topic", "Partition", "Broker", "Status", "Remaining", "ETA"]
    assert json.loads(json.dumps(report.as_json()))["done"] is False


def test_human_units():
    assert progress.human_bytes(1023) == "1023 B" and progress.human_bytes(1536) == "1.5 KiB"
    assert progress.human_eta(3725) == "1:02:05" and progress.human_eta(None) == "unknown"


# ---- cluster checks and exit codes ---------------------------------------------------------------


def test_check_plan_lists_every_problem():
    state = ClusterAssignment(brokers={1: None, 2: None}, topics={"t": {0: [1], 1: [2]}})
    plan = parse_reassignment({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 7]}, {"topic": "x", "partition": 0, "replicas": [1]},
        {"topic": "t", "partition": 5, "replicas": [1]}]}, "p.json")
    with pytest.raises(ClusterMismatchError) as exc:
        check_plan(plan, state)
    lines = str(exc.value).splitlines()
    assert lines[0] == "p.json: partitions[0] (t-0): broker(s) [7] not in the cluster (brokers: 1-2) (and 2 more)"
    assert lines[1] == "  partitions[1] (x-0): topic 'x' does not exist"
    assert lines[2] == "  partitions[2] (t-5): topic 't' has no partition 5 (partitions: 0-1)"


def test_exit_codes_are_distinct_per_class():
    codes = [code for code, _ in exit_codes.TABLE]
    assert len(codes) == len(set(codes))
    assert exit_codes.for_error(InputFileError("x", "f.json")) == exit_codes.BAD_INPUT_FILE
    assert exit_codes.for_error(InputError("x", "--throttle")) == exit_codes.USAGE
    assert exit_codes.for_error(ConflictError("x")) == exit_codes.CONFLICT
    assert exit_codes.for_error(error_for_code(60)) == exit_codes.CONFLICT
    assert isinstance(error_for_code(60), ReassignmentInProgressError)
    assert isinstance(error_for_code(41), NotControllerError)
    assert exit_codes.for_error(error_for_code(39, "no")) == exit_codes.REJECTED
    assert error_for_code(1001).name == "INVALID_THROTTLE"
    assert error_for_code(12345).name == "UNKNOWN_ERROR_CODE_12345"  # protocol.errors names it


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "partitions", "topics", "topic", "partition", "replicas", "log_dirs",
                         "original_replicas", "x"]), inner, max_size=5),
    max_leaves=20,
)


@given(_json_values)
def test_any_json_is_accepted_or_refused_with_an_input_file_error(doc):
    for parse in (lambda d: parse_reassignment(d, "f.json"), lambda d: parse_topics_to_move(d, "f.json")):
        try:
            parse(doc)
        except InputFileError as exc:
            assert str(exc).startswith("f.json: ")


def test_version_as_kafkas_tools_print_it(capsys):
    """`kafka-reassign --version` and `reassignd --version` print the installed version and exit
    0 (Kafka's tools take --version; scripts that probe with it were refused, exit 2)."""
    import importlib.metadata

    from client import cli as kafka_reassign
    from reassignd import cli as reassignd

    version = importlib.metadata.version("reassignd")
    assert kafka_reassign.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"kafka-reassign {version}"
    assert reassignd.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"reassignd {version}"
