"""kafka-reassign with bad or unusual input: every case a clear error and a documented exit code
before anything is sent, never a Python traceback; and a request that timed out after it was
sent is not reported as if nothing happened."""

from __future__ import annotations

import asyncio
import struct
import json

import pytest

from client.cli import main
from client.errors import InputFileError
from client.exit_codes import BAD_INPUT_FILE, CLUSTER_UNREACHABLE, OK, USAGE
from client.inputs import parse_reassignment, read_json_file
from protocol import ApiKey
from tests.client.cluster_zk import plan, write_json
from tests.client.wire_cluster import WireCluster
from tests.client.wire_server import WireServer
from znodes.launcher import free_port

# Nothing listens here, and nothing may be reached: every case below fails before connecting.
NOWHERE = "127.0.0.1:1"
HUGE = "1" + "0" * 5000  # past the 4300 digits Python's int() converts


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# ---- --ops and --planner URLs ---------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://", "https://", "http://:99999", "http://h:70000", "http://h:0", "http:///x",
                                 "http://[::1", "http://h:1/with spaces", "http://h:1?x=1", "http://h:1#f",
                                 "http://h:1?", "ftp://h:1", "h:1"])
def test_a_bad_ops_url_is_a_usage_error_before_the_cluster_is_asked(capsys, tmp_path, url):
    f = write_json(tmp_path, "plan.json", plan(("t", 0, [1])))
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--progress", "--reassignment-json-file", f,
                       "--chart-data", str(tmp_path / "c.csv"), "--ops", url)
    assert code == USAGE, err
    assert "--ops:" in err and "no bootstrap server answered" not in err


@pytest.mark.parametrize("url", ["http://h:1/with spaces", "http://h:1?x=1", "http://h:1#"])
def test_a_planner_url_the_tool_cannot_append_to_is_a_usage_error(capsys, url):
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--rebalance", "--planner", url)
    assert code == USAGE, err
    assert "--planner:" in err


def test_good_urls_still_pass(capsys, tmp_path):
    from client.cli import _check_http_url

    for url in ("http://127.0.0.1:9191", "https://ops.example:443/", "http://[::1]:9191", "http://h/prefix"):
        _check_http_url(url, "--ops")


# ---- JSON files -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, key", [
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}],'
     '"partitions":[{"topic":"u","partition":0,"replicas":[2]}]}', "partitions"),
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"replicas":[3]}]}', "replicas"),
    ('{"version":1,"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}', "version"),
])
def test_a_key_given_twice_is_refused_not_silently_dropped(capsys, tmp_path, text, key):
    f = tmp_path / "plan.json"
    f.write_text(text)
    with pytest.raises(InputFileError, match=f'key "{key}" appears twice'):
        read_json_file(str(f))
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--execute", "--reassignment-json-file", str(f))
    assert code == BAD_INPUT_FILE and f'key "{key}" appears twice' in err


def test_a_topic_listed_under_two_topics_keys_is_refused(capsys, tmp_path):
    f = tmp_path / "topics.json"
    f.write_text('{"version":1,"topics":[{"topic":"a"}],"topics":[{"topic":"b"}]}')
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--generate", "--topics-to-move-json-file", str(f),
                       "--broker-list", "1,2")
    assert code == BAD_INPUT_FILE and 'key "topics" appears twice' in err


@pytest.mark.parametrize("where", ["partition", "replicas", "version"])
def test_a_number_too_long_for_python_is_a_bad_input_file(capsys, tmp_path, where):
    entry = {"topic": "t", "partition": 0, "replicas": [1]}
    doc = {"version": 1, "partitions": [entry]}
    text = json.dumps(doc)
    text = {"partition": text.replace('"partition": 0', f'"partition": {HUGE}'),
            "replicas": text.replace('"replicas": [1]', f'"replicas": [{HUGE}]'),
            "version": text.replace('"version": 1', f'"version": {HUGE}')}[where]
    f = tmp_path / "plan.json"
    f.write_text(text)
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--execute", "--reassignment-json-file", str(f))
    assert code == BAD_INPUT_FILE, err
    assert "a number with too many digits" in err


def test_a_log_dir_with_a_lone_surrogate_is_refused_up_front(tmp_path):
    f = tmp_path / "plan.json"
    f.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d\\ud800"]}]}')
    with pytest.raises(InputFileError, match="not a usable path"):
        parse_reassignment(read_json_file(str(f)), str(f))


# ---- option values --------------------------------------------------------------------------


@pytest.mark.parametrize("extra, option", [
    (["--execute", "--throttle", HUGE], "--throttle"),
    (["--execute", "--throttle", "-" + HUGE], "--throttle"),
    (["--execute", "--replica-alter-log-dirs-throttle", HUGE], "--replica-alter-log-dirs-throttle"),
    (["--decommission-broker", HUGE], "--decommission-broker"),
    (["--demote-broker", "1," + HUGE], "--demote-broker"),
    (["--generate", "--broker-list", HUGE], "--broker-list"),
])
def test_an_option_number_too_long_for_python_is_a_usage_error(capsys, tmp_path, extra, option):
    f = write_json(tmp_path, "plan.json", {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/d"]}]})
    topics = write_json(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "t"}]})
    files = (["--reassignment-json-file", f] if "--execute" in extra
             else ["--topics-to-move-json-file", topics] if "--generate" in extra else [])
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, *extra, *files)
    assert code == USAGE, err
    assert f"{option}:" in err and "out of range" in err


def test_a_bootstrap_port_too_long_for_python_is_a_usage_error(capsys):
    code, _, err = cli(capsys, "--bootstrap-server", f"127.0.0.1:{HUGE}", "--list")
    assert code == USAGE and "--bootstrap-server:" in err and "out of range" in err
    # leading zeros are no reason to refuse a port
    from client.admin import parse_bootstrap

    assert parse_bootstrap("127.0.0.1:0000000009092") == [("127.0.0.1", 9092)]


@pytest.mark.parametrize("value, says", [
    ("1e308", "at most 86400 seconds"),  # finite: it slept for ever after the first sample
    ("86401", "at most 86400 seconds"),
    ("1" + "0" * 400, "too large"),  # past float's range: it said "must be positive"
    ("inf", "must be positive"),
])
def test_an_interval_no_watch_could_wait_out_is_a_usage_error(capsys, tmp_path, value, says):
    f = write_json(tmp_path, "plan.json", {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    code, _, err = cli(capsys, "--bootstrap-server", NOWHERE, "--progress", "--reassignment-json-file", f,
                       "--interval", value)
    assert code == USAGE, err
    assert "--interval:" in err and says in err, err


# ---- a request that timed out after it was sent ------------------------------------------------


@pytest.fixture
async def cluster():
    c = WireCluster()
    c.controller_id = 100
    c.controllers[100] = await WireServer.start(c.controller_handlers(), port=free_port())
    for b in (1, 2, 3, 4):
        c.brokers[b] = await WireServer.start({ApiKey.METADATA: c.metadata, ApiKey.DESCRIBE_LOG_DIRS: c.log_dirs_for(b)},
                                              port=free_port())
    c.topics = {"orders": {0: [1, 2]}}
    try:
        yield c
    finally:
        await c.stop()


def _slow(answer):
    async def handler(version, body):
        await asyncio.sleep(3)
        return answer(version, body)
    return handler


async def test_execute_that_timed_out_says_the_reassignment_may_have_started(cluster, tmp_path, capsys):
    cluster.controllers[100].handlers[ApiKey.REASSIGN_PARTITIONS] = _slow(cluster.reassign)
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--execute",
                                          "--reassignment-json-file", f, "--timeout", "500"])
    err = capsys.readouterr().err
    assert code == CLUSTER_UNREACHABLE, err
    assert "the reassignment may have started" in err
    assert f"--list, or --verify --reassignment-json-file {f}" in err
    assert len(cluster.received(ApiKey.REASSIGN_PARTITIONS)) == 1  # sent once, not again


async def test_execute_whose_connection_broke_mid_request_says_so_too(cluster, tmp_path, capsys):
    cluster.controllers[100].handlers[ApiKey.REASSIGN_PARTITIONS] = lambda v, b: None  # hang up
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--execute",
                                          "--reassignment-json-file", f])
    err = capsys.readouterr().err
    assert code == CLUSTER_UNREACHABLE, err
    assert "may have started" in err and "--verify" in err


async def test_execute_answered_with_garbage_says_the_reassignment_may_have_started(cluster, tmp_path, capsys):
    server = cluster.controllers[100]

    def garbled(version, body):
        cluster.reassign(version, body)  # the controller took it; its answer is unreadable
        payload = struct.pack(">i", server.last_correlation_id) + b"\xff\xff\xff"
        return struct.pack(">i", len(payload)) + payload

    server.handlers[ApiKey.REASSIGN_PARTITIONS] = garbled
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--execute",
                                          "--reassignment-json-file", f])
    err = capsys.readouterr().err
    assert code != OK, err
    assert "undecodable response" in err and "the reassignment may have started" in err and "--verify" in err, err


async def test_cancel_that_timed_out_says_it_may_have_begun(cluster, tmp_path, capsys):
    cluster.running = {("orders", 0): 7}
    cluster.controllers[100].handlers[ApiKey.CANCEL_REASSIGNMENTS] = _slow(cluster.cancel)
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--cancel", "--timeout", "500"])
    err = capsys.readouterr().err
    assert code == CLUSTER_UNREACHABLE and "the cancellation may have begun" in err and "--list" in err


async def test_a_dry_run_or_an_unreachable_cluster_claims_nothing_started(cluster, tmp_path, capsys):
    cluster.controllers[100].handlers[ApiKey.REASSIGN_PARTITIONS] = _slow(cluster.reassign)
    f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--execute", "--dry-run",
                                          "--reassignment-json-file", f, "--timeout", "500"])
    err = capsys.readouterr().err
    assert code == CLUSTER_UNREACHABLE and "may have started" not in err
    code = await asyncio.to_thread(main, ["--bootstrap-server", f"127.0.0.1:{free_port()}", "--execute",
                                          "--reassignment-json-file", f, "--timeout", "500"])
    err = capsys.readouterr().err
    assert code == CLUSTER_UNREACHABLE and "may have started" not in err
    cluster.controllers[100].handlers[ApiKey.REASSIGN_PARTITIONS] = cluster.reassign
    code = await asyncio.to_thread(main, ["--bootstrap-server", cluster.bootstrap, "--execute",
                                          "--reassignment-json-file", f])
    assert code == OK, capsys.readouterr().err
