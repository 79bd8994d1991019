"""KIP-4 topic administration with standard clients, unchanged, against 2 controller processes
(issue 14): kafka-python's ``KafkaAdminClient`` bootstrapped from the STANDBY creates topics
(the controller places them; the simulated brokers host and lead every partition), gets
Kafka's error per topic for each bad input, adds partitions (``create_partitions``), ``kcat -L`` lists the new topic with leaders, and
``delete_topics`` removes a topic from every broker's disk.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from protocol.errors import ErrorCode
from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "4", "--topics", "orders:3:2:1KiB", "--produce-rate", "0", "--tick-ms", "50"]


def test_kafka_python_create_topics_from_the_standby_and_kcat_lists_them(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
        try:
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            bootstrap = c.listeners[standby]
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-topics", request_timeout_ms=20000)

            answer = admin.create_topics({"events": {"num_partitions": 6, "replication_factor": 3},
                                          "pinned": {"assignments": {0: [4, 1], 1: [1, 4]}}}, timeout_ms=15000)
            assert {t["name"]: t["error_code"] for t in answer["topics"]} == {"events": 0, "pinned": 0}
            # timeout_ms > 0: every partition has its leader when the answer comes.
            events = c.topic("events")["partitions"]
            assert len(events) == 6 and all(len(set(rs)) == 3 for rs in events.values())
            for p, rs in events.items():
                state = c.json(f"/brokers/topics/events/partitions/{p}/state")
                assert state["leader"] == rs[0] and sorted(state["isr"]) == sorted(rs)
            # orders (3 x 2) + events (6 x 3) = 24 replicas on 4 brokers: 6 each (R/R+1).
            counts: dict[int, int] = {}
            for rs in [*c.topic("orders")["partitions"].values(), *events.values()]:
                for b in rs:
                    counts[b] = counts.get(b, 0) + 1
            assert sorted(counts.values()) == [6, 6, 6, 6], counts
            assert c.topic("pinned")["partitions"] == {"0": [4, 1], "1": [1, 4]}
            wait_for(lambda: all(c.hosted().get(("events", int(p))) == set(rs) for p, rs in events.items()),
                     20, "the simulated brokers to host every replica of events")
            assert c.hosted()[("pinned", 0)] == {1, 4}

            def error_of(spec, **kw):
                try:
                    admin.create_topics(spec, timeout_ms=5000, **kw)
                except Exception as e:  # noqa: BLE001 - kafka-python raises Kafka's error per code
                    return getattr(e, "errno", repr(e))
                return ErrorCode.NONE

            assert error_of({"events": {"num_partitions": 1, "replication_factor": 1}}) == ErrorCode.TOPIC_ALREADY_EXISTS
            assert error_of({"bad/name": {"num_partitions": 1, "replication_factor": 1}}) == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert error_of({"x": {"num_partitions": 0, "replication_factor": 1}}) == ErrorCode.INVALID_PARTITIONS
            assert error_of({"x": {"num_partitions": 1, "replication_factor": 5}}) == ErrorCode.INVALID_REPLICATION_FACTOR
            assert error_of({"x": {"assignments": {0: [1, 9]}}}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert error_of({"x": {"num_partitions": 1, "replication_factor": 1,
                                   "configs": {"retention.ms": "1h"}}}) == ErrorCode.INVALID_CONFIG
            assert error_of({"x": {"num_partitions": 1, "assignments": {0: [1]}}}) == ErrorCode.INVALID_REQUEST
            assert error_of({"v": {"num_partitions": 2, "replication_factor": 2}}, validate_only=True) == ErrorCode.NONE
            assert not c.zk.exists("/brokers/topics/x") and not c.zk.exists("/brokers/topics/v")

            listing = subprocess.run(["kcat", "-b", bootstrap, "-L", "-J", "-t", "events"], capture_output=True,
                                     text=True, timeout=30, check=True)
            meta = json.loads(listing.stdout)
            [topic] = [t for t in meta["topics"] if t["topic"] == "events"]
            assert sorted(p["partition"] for p in topic["partitions"]) == list(range(6))
            assert all(p["leader"] == events[str(p["partition"])][0] for p in topic["partitions"])

            # create_partitions (KIP-195): events grows to 8, led and hosted; a decrease is refused.
            admin.create_partitions({"events": 8}, timeout_ms=15000)
            grown = c.topic("events")["partitions"]
            assert sorted(int(p) for p in grown) == list(range(8))
            for p in ("6", "7"):
                assert c.json(f"/brokers/topics/events/partitions/{p}/state")["leader"] == grown[p][0]
            wait_for(lambda: all(c.hosted().get(("events", p)) == set(grown[str(p)]) for p in (6, 7)), 20,
                     "the new partitions to be hosted")
            try:
                admin.create_partitions({"events": 2}, timeout_ms=5000)
                code = ErrorCode.NONE
            except Exception as e:  # noqa: BLE001
                code = getattr(e, "errno", repr(e))
            assert code == ErrorCode.INVALID_PARTITIONS

            # delete_topics: every replica leaves every simulated broker's disk, then the znodes.
            answer = admin.delete_topics(["pinned"], timeout_ms=15000)
            assert [t["error_code"] for t in answer["topics"]] == [0]
            assert not c.zk.exists("/brokers/topics/pinned") and not c.zk.exists("/admin/delete_topics/pinned")
            assert not any(t == "pinned" for t, _ in c.hosted())
            try:
                admin.delete_topics(["nope"], timeout_ms=5000)
                code = ErrorCode.NONE
            except Exception as e:  # noqa: BLE001
                code = getattr(e, "errno", repr(e))
            assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        finally:
            if admin is not None:
                admin.close()
