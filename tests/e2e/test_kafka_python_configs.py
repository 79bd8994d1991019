"""Kafka's topic configs through kafka-python's ``KafkaAdminClient``, unchanged (issue 23 items
1-3): ``NewTopic(..., topic_configs=...)`` with standard configs is created and its configs
stored in ``/config/topics/T`` with a change notification; ``describe_configs`` shows them as
the topic's and every other topic config at Kafka's default or at the broker default the
operator set (``log.retention.bytes`` in ``/config/brokers/<default>``); ``alter_configs``
(IncrementalAlterConfigs: SET, SUBTRACT, DELETE) changes them, ``validate_only`` writes nothing,
and a bad value is refused with Kafka's error naming the key and the rule, nothing written. A
simulated broker, told by the change notification, describes the same values. Then the same
through confluent-kafka (librdkafka).

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "3", "--topics", "orders:1:1:1KiB", "--produce-rate", "0", "--tick-ms", "50"]
CONFIGS = {"retention.ms": "3600000", "cleanup.policy": "compact,delete", "min.insync.replicas": "2",
           "max.message.bytes": "2000000"}


def test_kafka_python_topic_configs_create_describe_alter(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic

    admins = []
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
        try:
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            admin = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-configs",
                                     request_timeout_ms=20000)
            admins.append(admin)
            c.set_dynamic_config("brokers/<default>", {"log.retention.bytes": "1048576"})
            changes_before = len(c.zk.get_children("/config/changes"))

            answer = admin.create_topics([NewTopic("logs", 2, 2, topic_configs=CONFIGS)], timeout_ms=15000)
            assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [("logs", 0)]
            assert c.json("/config/topics/logs")["config"] == CONFIGS
            notes = [json.loads(c.zk.get(f"/config/changes/{n}")[0])
                     for n in sorted(c.zk.get_children("/config/changes"))[changes_before:]]
            assert {"version": 2, "entity_path": "topics/logs"} in notes

            def described(client=admin, config_filter="all"):
                got = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "logs")],
                                              config_filter=config_filter)
                return got["topic"]["logs"]

            # kafka-python asks any node: a simulated broker knows the topic and its configs once
            # its watches have told it.
            topic = wait_for(lambda: (got := described()).get("retention.ms", {}).get("value") == "3600000" and got,
                             20, "the topic's configs to be described")
            assert {k: (topic[k]["value"], topic[k]["config_source"]) for k in CONFIGS} == {
                k: (v, "DYNAMIC_TOPIC_CONFIG") for k, v in CONFIGS.items()}
            assert (topic["retention.bytes"]["value"], topic["retention.bytes"]["config_source"]) == (
                "1048576", "DYNAMIC_DEFAULT_BROKER_CONFIG")
            assert (topic["segment.bytes"]["value"], topic["segment.bytes"]["config_source"]) == (
                "1073741824", "DEFAULT_CONFIG")
            wait_for(lambda: set(described(config_filter="modified")) == set(CONFIGS), 20,
                     "a node to describe the topic's own configs as modified")
            # kafka-python's incremental alter_configs first asks whichever node it likes for the
            # topic's dynamic configs and refuses keys that node does not list: every simulated
            # broker must have learned the topic's configs (each from its own watches) first.
            wait_for(lambda: every_broker_describes(c, "logs", CONFIGS), 20,
                     "every broker to describe the topic's own configs")

            # A simulated broker, bootstrapped on its own, learns the configs from the notification.
            broker = KafkaAdminClient(bootstrap_servers=c.brokers[1], client_id="kafka-python-configs-sim",
                                      request_timeout_ms=20000)
            admins.append(broker)
            wait_for(lambda: described(broker).get("retention.ms", {}).get("value") == "3600000", 20,
                     "the configs to reach the brokers")
            assert {k: described(broker)[k]["value"] for k in ("retention.bytes", "min.insync.replicas")} == {
                "retention.bytes": "1048576", "min.insync.replicas": "2"}

            def alter(configs, validate_only=False):
                result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "logs", configs=configs)],
                                             validate_only=validate_only, incremental=True)
                return result["topic"]["logs"]

            # validate_only: answered, nothing written.
            assert alter({"retention.ms": (AlterConfigOp.SET, "60000")}, validate_only=True) == "OK"
            assert c.json("/config/topics/logs")["config"] == CONFIGS
            assert alter({"retention.ms": (AlterConfigOp.SET, "7200000"),
                          "cleanup.policy": (AlterConfigOp.SUBTRACT, "compact"),
                          "max.message.bytes": (AlterConfigOp.DELETE, None)}) == "OK"
            expected = {"retention.ms": "7200000", "cleanup.policy": "delete", "min.insync.replicas": "2"}
            assert c.json("/config/topics/logs")["config"] == expected
            wait_for(lambda: described().get("max.message.bytes", {}).get("value") == "1048588", 20,
                     "max.message.bytes back at Kafka's default")
            # Bad values: Kafka's error naming the key and the rule; nothing written.
            refused = alter({"min.insync.replicas": (AlterConfigOp.SET, "0")})
            assert "InvalidConfig" in refused and "min.insync.replicas" in refused and "at least 1" in refused
            refused = alter({"compression.type": (AlterConfigOp.SET, "brotli")})
            assert "InvalidConfig" in refused and "String must be one of" in refused
            assert c.json("/config/topics/logs")["config"] == expected
            confluent_kafka_topic_configs(c)
        finally:
            for a in admins:
                a.close()


DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs' config_source of a topic's own setting


def every_broker_describes(c, topic: str, configs: dict[str, str]) -> bool:
    """Each simulated broker, asked itself (DescribeConfigs over its own connection), describes
    ``configs`` as ``topic``'s own settings."""
    from controller.shell.transport import TcpTransport
    from protocol import ApiKey

    endpoints = {b: (addr.rsplit(":", 1)[0], int(addr.rsplit(":", 1)[1])) for b, addr in c.brokers.items()}

    async def views() -> list[dict]:
        transport = TcpTransport(endpoints.get)
        try:
            out = []
            for broker in sorted(endpoints):
                answer = await transport.request(broker, ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
                    {"resource_type": 2, "resource_name": topic, "configuration_keys": None}], "include_synonyms": False})
                (result,) = answer["results"]
                out.append({e["name"]: (e["value"], e.get("config_source")) for e in result["configs"] or ()})
            return out
        finally:
            await transport.close()

    return all(all(view.get(k) == (v, DYNAMIC_TOPIC_CONFIG) for k, v in configs.items()) for view in asyncio.run(views()))


def confluent_kafka_topic_configs(c) -> None:
    """The same through confluent-kafka (librdkafka): create with configs, describe, alter
    incrementally, a bad value refused with INVALID_CONFIG and nothing written."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

    client = AdminClient({"bootstrap.servers": c.listeners[c.active_controller()]})
    [future] = client.create_topics([NewTopic("clogs", num_partitions=1, replication_factor=2,
                                              config={"retention.bytes": "65536", "segment.bytes": "16384"})],
                                    request_timeout=20).values()
    future.result(timeout=30)
    assert c.json("/config/topics/clogs")["config"] == {"retention.bytes": "65536", "segment.bytes": "16384"}
    [future] = client.describe_configs([ConfigResource("topic", "clogs")], request_timeout=20).values()
    entries = future.result(timeout=30)
    assert entries["retention.bytes"].value == "65536"
    assert entries["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["min.insync.replicas"].value == "1" and entries["min.insync.replicas"].is_default

    def alter(name, value):
        entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        [f] = client.incremental_alter_configs([ConfigResource("topic", "clogs", incremental_configs=[entry])],
                                               request_timeout=20).values()
        return f.result(timeout=30)

    alter("min.insync.replicas", "2")
    assert c.json("/config/topics/clogs")["config"]["min.insync.replicas"] == "2"
    with pytest.raises(KafkaException) as refused:
        alter("segment.bytes", "ten")
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "segment.bytes" in refused.value.args[0].str() and "Not a number of type INT" in refused.value.args[0].str()
    assert c.json("/config/topics/clogs")["config"] == {
        "retention.bytes": "65536", "segment.bytes": "16384", "min.insync.replicas": "2"}
