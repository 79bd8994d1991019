"""Issue 14 items 1, 3 and 6 with standard clients, unchanged, against 2 controller processes
configured with a topic policy (controller.core.topic_policy): kafka-python's
``KafkaAdminClient`` gets POLICY_VIOLATION per topic for each rule (``create_topics``, its
``validate_only``, ``create_partitions``) and the other per-topic errors of CreatePartitions, with
nothing of a refused topic written; kafka-python's and confluent-kafka's ``describe_configs``
read the controller's configs (defaults, sources, synonyms, read-only flags).

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py).
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from tests.e2e.processes import running_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "4", "--topics", "orders:3:2:1KiB", "--produce-rate", "0", "--tick-ms", "50"]
POLICY = {"topic_policy_min_replication_factor": 2, "topic_policy_max_replication_factor": 3,
          "topic_policy_max_partitions": 8, "topic_policy_name_pattern": r"team-a\..+"}


def _code(call) -> int:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - kafka-python raises Kafka's error per code
        return getattr(e, "errno", repr(e))
    return ErrorCode.NONE


def test_topic_policy_refuses_per_topic_and_describe_configs(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=POLICY) as c:
        try:
            active = c.active_controller()
            standby = next(cid for cid in CONTROLLER_IDS if cid != active)
            bootstrap = c.listeners[standby]
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-policy", request_timeout_ms=20000)

            def create(spec, **kw):
                return _code(lambda: admin.create_topics(spec, timeout_ms=10000, **kw))

            def nothing_of(name):
                return not c.zk.exists(f"/brokers/topics/{name}") and not c.zk.exists(f"/config/topics/{name}")

            # Each rule, with and without validate_only; nothing written for a refused topic.
            for validate_only in (True, False):
                assert create({"other.x": {"num_partitions": 1, "replication_factor": 2}},
                              validate_only=validate_only) == ErrorCode.POLICY_VIOLATION  # name pattern
                assert create({"team-a.rf1": {"num_partitions": 1, "replication_factor": 1}},
                              validate_only=validate_only) == ErrorCode.POLICY_VIOLATION  # min RF
                assert create({"team-a.rf4": {"num_partitions": 1, "replication_factor": 4}},
                              validate_only=validate_only) == ErrorCode.POLICY_VIOLATION  # max RF
                assert create({"team-a.p9": {"num_partitions": 9, "replication_factor": 2}},
                              validate_only=validate_only) == ErrorCode.POLICY_VIOLATION  # max partitions
                assert create({"team-a.given": {"assignments": {0: [1]}}},
                              validate_only=validate_only) == ErrorCode.POLICY_VIOLATION  # explicit, RF 1
            assert all(nothing_of(n) for n in ("other.x", "team-a.rf1", "team-a.rf4", "team-a.p9", "team-a.given"))
            # The policy's message says which rule, through the client's error.
            answer = admin.create_topics({"team-a.p9": {"num_partitions": 9, "replication_factor": 2}},
                                         timeout_ms=10000, raise_errors=False)
            [refused] = answer["topics"] if isinstance(answer, dict) else answer.topics
            message = refused["error_message"] if isinstance(refused, dict) else refused[2]
            assert "topic_policy_max_partitions" in message

            # A batch: the topic the policy accepts is created, the one it refuses is not.
            assert create({"team-a.ok": {"num_partitions": 4, "replication_factor": 2},
                           "team-a.big": {"num_partitions": 20, "replication_factor": 2}}) == ErrorCode.POLICY_VIOLATION
            assert sorted(c.topic("team-a.ok")["partitions"]) == ["0", "1", "2", "3"]
            assert nothing_of("team-a.big")

            # CreatePartitions: rule 3 on the new total; the topic znode is left as it was.
            def grow(spec):
                return _code(lambda: admin.create_partitions(spec, timeout_ms=10000))

            before = c.topic("team-a.ok")
            assert grow({"team-a.ok": NewPartitions(9)}) == ErrorCode.POLICY_VIOLATION
            assert _code(lambda: admin.create_partitions({"team-a.ok": NewPartitions(9)}, timeout_ms=10000,
                                                         validate_only=True)) == ErrorCode.POLICY_VIOLATION
            # Issue 14 item 6's CreatePartitions errors through the client.
            assert grow({"team-a.ok": NewPartitions(5, [[1, 1]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert grow({"team-a.ok": NewPartitions(5, [[1, 9]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert grow({"team-a.ok": NewPartitions(6, [[1, 2]])}) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert grow({"team-a.ok": NewPartitions(3)}) == ErrorCode.INVALID_PARTITIONS
            assert grow({"team-a.none": NewPartitions(3)}) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert c.topic("team-a.ok") == before and not c.zk.exists("/brokers/topics/team-a.ok/partitions/4")
            assert grow({"team-a.ok": NewPartitions(8)}) == ErrorCode.NONE  # at the maximum: allowed
            assert sorted(int(p) for p in c.topic("team-a.ok")["partitions"]) == list(range(8))

            # DescribeConfigs (item 1): the controller instance's own BROKER resource (kafka-python
            # sends it to that node), every config with its source; synonyms when asked.
            got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(standby))],
                                         include_synonyms=True, config_filter="all")["broker"][str(standby)]
            assert got["zookeeper.session.timeout.ms"]["value"] == "2000"
            assert got["zookeeper.session.timeout.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
            assert [(s["value"], s["source"]) for s in got["zookeeper.session.timeout.ms"]["synonyms"]] == [
                ("2000", "STATIC_BROKER_CONFIG"), ("6000", "DEFAULT_CONFIG")]
            assert got["delete.topic.enable"]["config_source"] == "DEFAULT_CONFIG"
            assert got["delete.topic.enable"]["read_only"] is True
            assert got["create.topic.policy.class.name"]["value"] == "controller.core.topic_policy.TopicPolicy"
            rate = got["follower.replication.throttled.rate"]
            assert rate["value"] == str(2**63 - 1) and rate["config_source"] == "DEFAULT_CONFIG"
            assert rate["read_only"] is False and rate["is_sensitive"] is False
            static = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(standby))],
                                            config_filter="static")
            # broker.id is static too, as in a Kafka broker's server.properties (5237e8b).
            assert set(static["broker"][str(standby)]) == {"zookeeper.session.timeout.ms",
                                                              "create.topic.policy.class.name", "broker.id"}
            assert static["broker"][str(standby)]["broker.id"]["value"] == str(standby)
        finally:
            if admin is not None:
                admin.close()

        # confluent-kafka (librdkafka) against the same listener: the same entries.
        from confluent_kafka.admin import AdminClient, ConfigSource
        from confluent_kafka.admin import ConfigResource as CR

        client = AdminClient({"bootstrap.servers": c.listeners[active]})
        [future] = client.describe_configs([CR("broker", str(active))], request_timeout=20).values()
        entries = future.result(timeout=30)
        zk_timeout = entries["zookeeper.session.timeout.ms"]
        assert zk_timeout.value == "2000" and zk_timeout.source == ConfigSource.STATIC_BROKER_CONFIG.value
        assert zk_timeout.is_read_only and not zk_timeout.is_sensitive and not zk_timeout.is_default
        policy = entries["create.topic.policy.class.name"]
        assert policy.is_read_only and policy.source == ConfigSource.STATIC_BROKER_CONFIG.value
        rate = entries["leader.replication.throttled.rate"]
        assert rate.is_default and not rate.is_read_only and rate.source == ConfigSource.DEFAULT_CONFIG.value
        [future] = client.describe_configs([CR("topic", "team-a.ok")], request_timeout=20).values()
        topic = future.result(timeout=30)
        assert topic["follower.replication.throttled.replicas"].value == ""
        assert topic["follower.replication.throttled.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
