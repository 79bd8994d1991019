"""The client compatibility matrix: kafka-python, aiokafka, confluent-kafka and kcat, unchanged,
run one admin scenario (tests/e2e/client_matrix.py) against a STANDBY controller's admin
listener and against a simulated broker, through real sockets.

Everything is real: ZooKeeper (the session's server, a chroot for this module), two
``python -m reassignd controller`` processes and ``python -m reassignd sim`` brokers with a
bandwidth so low that a started move keeps running while a client looks at it. One cluster
serves the whole module; the clients that reassign each use their own partition.

Each test records its steps; once every (client, target) has run, the rows are written to
tests/e2e/client_matrix.json, from which ``python -m tests.e2e.matrix_report`` writes the
README's table (and test_matrix_report.py checks the README against the file).
"""

from __future__ import annotations

import json
import re
import time
import traceback
import urllib.request
import uuid
from collections import Counter

import pytest

import protocol
from tests.e2e.client_matrix import (
    ADAPTERS,
    FAILED,
    NO_SUCH_CALL,
    PASSED,
    STEPS,
    TARGETS,
    NoSuchCall,
    Refused,
    save_results,
)
from tests.e2e.processes import running_cluster, wait_for
from tests.fixtures.zk import _delete_tree

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(180)]

CONTROLLER_IDS = (101, 102)
BROKERS = (1, 2, 3)
TOPIC = "orders"
LOG_DIRS = ("/data/d1", "/data/d2")
SIM_ARGS = ["--brokers", "3", "--topics", f"{TOPIC}:4:2:64MiB", "--bandwidth", "1KiB", "--produce-rate", "0",
            "--log-dirs", ",".join(LOG_DIRS)]
TOPIC_CONFIG = {"retention.ms": "86400000"}
# The topic each client creates (its own name per client and target), with standard configs
NEW_TOPIC_CONFIGS = {"retention.ms": "3600000", "cleanup.policy": "compact,delete", "min.insync.replicas": "1",
                     "segment.bytes": "16777216"}
# A config the topic does not set: described at Kafka's default
DEFAULT_KEY = ("retention.bytes", "-1", "DEFAULT_CONFIG")
# The partition each (client, target) that can reassign moves and cancels.
PARTITION = {("kafka-python", "standby"): 0, ("kafka-python", "broker"): 1,
             ("aiokafka", "standby"): 2, ("aiokafka", "broker"): 3,
             ("confluent-kafka", "standby"): 2, ("confluent-kafka", "broker"): 3,
             ("kcat", "standby"): 2, ("kcat", "broker"): 3}
WAIT_S = 30
# Each controller serves /metrics (reassignd_admin_requests by API key and version) on a port
# it picks and logs; the matrix reads it to tell which versions each client sent.
OPS_LINE = re.compile(r"controller (\d+) operations port on http://([0-9.]+):(\d+)")
REQUESTS_LINE = re.compile(r'^reassignd_admin_requests_total\{api_key="(\d+)",api_version="(\d+)",[^}]*\} ([0-9.e+]+)$')

_ROWS: dict[tuple[str, str], list[dict]] = {}
_SENT: dict[tuple[str, str], list[str]] = {}


@pytest.fixture(scope="module")
def cluster(zk_server, _zk_admin, tmp_path_factory):
    chroot = f"/t_{uuid.uuid4().hex[:10]}"
    _zk_admin.create(chroot)
    try:
        with running_cluster(f"{zk_server.connect_string}{chroot}", tmp_path_factory.mktemp("matrix"),
                             sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                             controller_config={"ops_listen": "127.0.0.1:0"}) as c:
            c.set_dynamic_config(f"topics/{TOPIC}", TOPIC_CONFIG)
            yield c
    finally:
        _delete_tree(_zk_admin, chroot)
    # Written only when every (client, target) ran: a partial run must not shrink the matrix.
    if len(_ROWS) == len(ADAPTERS) * len(TARGETS):
        save_results([row for rows in _ROWS.values() for row in rows], _SENT)


def _requests_seen(c) -> Counter:
    """(api key, version) -> requests both controllers' listeners have answered so far."""
    seen: Counter = Counter()
    for cid in CONTROLLER_IDS:
        found = wait_for(lambda: OPS_LINE.search(c.controller_log(cid).read_text()), WAIT_S, "the operations port")
        with urllib.request.urlopen(f"http://{found[2]}:{found[3]}/metrics", timeout=10) as answer:
            for line in answer.read().decode().splitlines():
                m = REQUESTS_LINE.match(line)
                if m:
                    seen[(int(m[1]), int(m[2]))] += int(float(m[3]))
    return seen


# The requests that surely reach a controller when a client bootstraps from the standby: its
# first ApiVersions and Metadata go to the bootstrap address, and reassignments to the active
# controller. Other requests (DescribeConfigs, later Metadata) go to whichever node the client
# picks, so counting them would make the column change from run to run. CreateTopics and
# DeleteTopics go to the controller Metadata names; DescribeLogDirs to every node, controllers
# included (a client that has it fans it out).
ALWAYS_TO_A_CONTROLLER = {18, 3, 45, 46, 19, 20, 35}


def _sent(before: Counter, after: Counter) -> list[str]:
    """What a client sent the controllers, as "Metadata v13", by API key."""
    used = sorted(k for k in after if after[k] > before[k] and k[0] in ALWAYS_TO_A_CONTROLLER)
    return [f"{protocol.api_name(key)} v{version}" for key, version in used]


def _bootstrap(c, target: str) -> str:
    if target == "standby":
        active = c.active_controller()
        return c.listeners[next(cid for cid in CONTROLLER_IDS if cid != active)]
    return c.brokers[BROKERS[0]]


def _eventually(ask, expected) -> None:
    """Ask until the answer equals ``expected()``; after WAIT_S, assert on the last answer."""
    deadline = time.monotonic() + WAIT_S
    while (got := ask()) != (want := expected()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got == want


def _scenario(c, adapter, partition: int, topic: str):
    """(step, callable) in STEPS order; each callable raises on a wrong answer. ``topic``: the
    one this client creates, describes, alters and deletes."""
    original = c.replicas(TOPIC, partition)
    spare = next(b for b in BROKERS if b not in original)
    target = [original[0], spare]
    removing = [b for b in original if b not in target]

    def listed(p):
        return adapter.list_reassignments().get((TOPIC, p))

    def alter():
        adapter.alter_reassignments(TOPIC, partition, target)
        wait_for(lambda: c.zk.exists(f"/admin/reassignments/{TOPIC}/{partition}"), WAIT_S, "the move to start")

    def list_():
        got = wait_for(lambda: listed(partition), WAIT_S, "the move to be listed")
        assert got == {"replicas": target + removing, "adding": [spare], "removing": removing}, got

    def cancel():
        adapter.alter_reassignments(TOPIC, partition, None)
        wait_for(lambda: c.replicas(TOPIC, partition) == original and listed(partition) is None, WAIT_S,
                 "the cancel to put the original replicas back")

    def describe_topics():
        # A move of another client may be under way: compare with ZooKeeper at the same moment.
        def same():
            want = {p: sorted(r) for p, r in c.topic(TOPIC)["partitions"].items()}
            got = adapter.describe_topics(TOPIC)
            return {str(p): r for p, r in got.items()} == want or None
        wait_for(same, WAIT_S, "the described replicas to match ZooKeeper's")

    def describe_configs():
        # A simulated broker learns configs from /config/changes at its next tick (as a Kafka
        # broker does): its answer may trail ZooKeeper for a moment on a loaded machine.
        deadline = time.monotonic() + WAIT_S
        while not TOPIC_CONFIG.items() <= (got := adapter.describe_configs(TOPIC)).items() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert TOPIC_CONFIG.items() <= got.items(), got

    # The client may ask any node it knows, and a simulated broker, like a Kafka broker, learns
    # the cluster from ZooKeeper watches (sim.clusterwatch) at its next tick: its answer may
    # trail ZooKeeper for a moment, so these wait for it (and fail if it never catches up).
    def list_topics():
        _eventually(lambda: TOPIC in adapter.list_topics(), lambda: True)

    def list_brokers():
        _eventually(adapter.list_brokers, lambda: set(BROKERS) | set(CONTROLLER_IDS))

    def find_controller():
        _eventually(adapter.find_controller, c.active_controller)

    return {
        "list_topics": list_topics, "list_brokers": list_brokers, "find_controller": find_controller,
        "describe_topics": describe_topics, "describe_configs": describe_configs,
        "alter_reassignments": alter, "list_reassignments": list_, "cancel_reassignments": cancel,
        **_topic_and_log_dir_steps(c, adapter, topic),
    }


def _topic_and_log_dir_steps(c, adapter, topic: str) -> dict:
    """Issue 23's steps: a topic created with standard configs, described (value and source),
    altered (a bad value refused with its reason), every broker's log dirs described, a replica
    moved between two directories of its broker and seen there, the topic deleted."""

    def create():
        adapter.create_topic(topic, 2, 2, NEW_TOPIC_CONFIGS)
        wait_for(lambda: c.zk.exists(f"/brokers/topics/{topic}"), WAIT_S, "the topic znode")
        assert c.json(f"/config/topics/{topic}")["config"] == NEW_TOPIC_CONFIGS

    def describe():
        want = {k: (v, "DYNAMIC_TOPIC_CONFIG") for k, v in NEW_TOPIC_CONFIGS.items()}
        key, value, source = DEFAULT_KEY
        want[key] = (value, source)

        # A simulated broker may answer, and learns of the topic and its configs from ZooKeeper
        # watches: until then it answers UNKNOWN_TOPIC_OR_PARTITION, as a Kafka broker would.
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                got = adapter.topic_configs(topic)
                got = {k: got.get(k) for k in want}
            except NoSuchCall:
                raise
            except Exception as e:  # noqa: BLE001 - asked again until WAIT_S, then raised
                got = e
            if got == want:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"described {got!r}, want {want!r}")
            time.sleep(0.2)

    def alter():
        adapter.alter_config(topic, "retention.ms", "7200000", NEW_TOPIC_CONFIGS)
        wait_for(lambda: c.json(f"/config/topics/{topic}")["config"].get("retention.ms") == "7200000", WAIT_S,
                 "retention.ms altered in ZooKeeper")
        now = c.json(f"/config/topics/{topic}")["config"]
        try:
            adapter.alter_config(topic, "min.insync.replicas", "0", now)
        except Refused as e:  # Kafka's reason names the key and the rule
            assert "min.insync.replicas" in str(e) and "at least 1" in str(e), str(e)
        else:
            raise AssertionError("min.insync.replicas=0 was accepted")
        assert c.json(f"/config/topics/{topic}")["config"] == now  # nothing written

    def assigned() -> dict[tuple[str, int], list[int]]:
        return {(topic, int(p)): r for p, r in c.topic(topic)["partitions"].items()}

    def log_dirs():
        def every_replica():
            got = adapter.describe_log_dirs()
            if not set(BROKERS) <= set(got):
                return None
            assert all(not got[n] for n in CONTROLLER_IDS if n in got)  # controllers hold no directory
            return all(got[b].get(tp) in LOG_DIRS for tp, replicas in assigned().items() for b in replicas) or None
        wait_for(every_replica, WAIT_S, "every broker to describe its replicas of the topic in its directories")

    def move():
        tp = (topic, 0)
        described = adapter.describe_log_dirs()  # first: a client without the call has no move either
        broker = assigned()[tp][0]
        where = described[broker][tp]
        other = next(d for d in LOG_DIRS if d != where)
        adapter.move_replica(topic, 0, broker, other)
        wait_for(lambda: adapter.describe_log_dirs()[broker].get(tp) == other, WAIT_S,
                 f"the replica of {topic}-0 on broker {broker} to be described in {other}")

    def delete():
        adapter.delete_topic(topic)
        wait_for(lambda: not c.zk.exists(f"/brokers/topics/{topic}") and topic not in adapter.list_topics(), WAIT_S,
                 "the topic to be gone, in ZooKeeper and for the client")

    return {"create_topic": create, "describe_topic_configs": describe, "alter_configs": alter,
            "describe_log_dirs": log_dirs, "move_log_dir": move, "delete_topic": delete}


@pytest.mark.parametrize("target", [t for t, _ in TARGETS])
@pytest.mark.parametrize("adapter_class", ADAPTERS, ids=[a.name for a in ADAPTERS])
def test_client_runs_the_admin_scenario(cluster, adapter_class, target):
    adapter = adapter_class()
    version = adapter.version()
    rows, failures = [], []
    steps = _scenario(cluster, adapter, PARTITION[(adapter.name, target)], f"matrix-{adapter.name}-{target}")
    opened = False
    before = _requests_seen(cluster)
    for step, _label in STEPS:
        try:
            if step == "bootstrap":
                adapter.open(_bootstrap(cluster, target))
                opened = True
            else:
                steps[step]()
            result, detail = PASSED, ""
        except NoSuchCall:
            result, detail = NO_SUCH_CALL, ""
        except Exception as e:  # recorded, and the test fails below with every failed step
            result, detail = FAILED, f"{type(e).__name__}: {e}"
            failures.append(f"{step}: {detail}\n{traceback.format_exc(limit=3)}")
        rows.append({"client": adapter.name, "version": version, "target": target, "step": step, "result": result})
    if opened:
        adapter.close()
    if target == "standby":
        _SENT[(adapter.name, target)] = _sent(before, _requests_seen(cluster))
    _ROWS[(adapter.name, target)] = rows
    assert not failures, f"{adapter.name} {version} against the {target}:\n" + "\n".join(failures)


def test_confluent_kafka_list_topics_from_the_listener_and_a_simulated_broker(cluster):
    """The issue's report: librdkafka's all-topics Metadata v12 request carries 3 bytes after its
    body, which the listener and the brokers used to refuse by closing the connection
    ("Broker transport failure")."""
    from confluent_kafka.admin import AdminClient

    def left_over(cid) -> dict[str, float]:
        found = OPS_LINE.search(cluster.controller_log(cid).read_text())
        with urllib.request.urlopen(f"http://{found[2]}:{found[3]}/metrics", timeout=10) as answer:
            lines = answer.read().decode().splitlines()
        # Summed over the listeners (one sample per listener, labelled by its name).
        totals = {"reassignd_admin_requests_left_over_total": 0.0, "reassignd_admin_request_bytes_left_over_total": 0.0}
        for line in lines:
            name = line.split("{")[0].split(" ")[0]
            if name in totals:
                totals[name] += float(line.rsplit(" ", 1)[1])
        return totals

    standby = next(cid for cid in CONTROLLER_IDS if cid != cluster.active_controller())
    before = left_over(standby)
    for address in (_bootstrap(cluster, "standby"), _bootstrap(cluster, "broker")):
        admin = AdminClient({"bootstrap.servers": address})
        meta = admin.list_topics(timeout=20)
        assert set(meta.brokers) == set(BROKERS) | set(CONTROLLER_IDS), address
        assert meta.controller_id == cluster.active_controller()
        partitions = meta.topics[TOPIC].partitions
        assert {p: sorted(m.replicas) for p, m in partitions.items()} == {
            int(p): sorted(r) for p, r in json.loads(cluster.zk.get(f"/brokers/topics/{TOPIC}")[0])["partitions"].items()}
    # The listener counted librdkafka's 3 left-over bytes per all-topics request, and answered.
    after = left_over(standby)
    requests = after["reassignd_admin_requests_left_over_total"] - before["reassignd_admin_requests_left_over_total"]
    extra = after["reassignd_admin_request_bytes_left_over_total"] - before["reassignd_admin_request_bytes_left_over_total"]
    assert requests >= 1 and extra == 3 * requests, (before, after)
