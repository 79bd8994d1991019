"""DescribeConfigs (32) against an in-process controller on a real ZooKeeper, through sockets."""

from __future__ import annotations

import pytest

from controller.core.config import ControllerConfig
from protocol.kafka_configs import BROKER_CONFIGS, TOPIC_CONFIGS
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2]}, "audit": {0: [2, 3]}}


def _res(rtype, name, keys=None):
    return {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}


def _configs(result) -> dict:
    return {c["name"]: c for c in result["configs"]}


RATE, LEADER_RATE = "follower.replication.throttled.rate", "leader.replication.throttled.rate"
REPLICAS, LEADER_REPLICAS = "follower.replication.throttled.replicas", "leader.replication.throttled.replicas"
LONG_MAX = str(2**63 - 1)
STATIC = {"delete.topic.enable", "auto.leader.rebalance.enable", "leader.imbalance.per.broker.percentage",
          "leader.imbalance.check.interval.seconds", "socket.request.max.bytes", "connections.max.idle.ms",
          "zookeeper.session.timeout.ms", "create.topic.policy.class.name"}


async def test_topic_and_broker_configs_every_version(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        c.set_json("/config/topics/orders", {"version": 1, "config": {
            "retention.ms": "1000", LEADER_REPLICAS: "0:1"}})
        c.set_json("/config/brokers/2", {"version": 1, "config": {RATE: "500"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {
            RATE: "100", LEADER_RATE: "200", "log.retention.bytes": "1048576"}})
        for cid in (active, c.standby(active)):  # standbys answer too
            for version in range(5):
                body = await c.call(cid, 32, version, {"resources": [
                    _res(2, "orders"), _res(4, "2"), _res(2, "audit"), _res(4, ""),
                    _res(2, "orders", ["retention.ms", "absent.key"]), _res(4, "3", [])]})
                orders, broker, audit, default, filtered, empty_keys = body["results"]
                assert [r["error_code"] for r in body["results"]] == [0] * 6
                assert (orders["resource_type"], orders["resource_name"]) == (2, "orders")
                oc = _configs(orders)
                # Its own keys, and every Kafka topic config: the broker default (the default
                # entity's log.retention.bytes), else Kafka's default.
                assert set(oc) == set(TOPIC_CONFIGS)
                assert {k: oc[k]["value"] for k in ("retention.ms", LEADER_REPLICAS, REPLICAS, "retention.bytes",
                                                    "min.insync.replicas", "segment.ms")} == {
                    "retention.ms": "1000", LEADER_REPLICAS: "0:1", REPLICAS: "", "retention.bytes": "1048576",
                    "min.insync.replicas": "1", "segment.ms": "604800000"}
                assert not any(v["read_only"] or v["is_sensitive"] for v in oc.values())
                bc = _configs(broker)
                assert set(bc) == set(BROKER_CONFIGS) | STATIC
                assert (bc[RATE]["value"], bc[LEADER_RATE]["value"]) == ("500", "200")
                assert bc["log.retention.hours"]["value"] == "168" and bc["log.retention.ms"]["value"] is None
                assert bc["broker.id"]["value"] == "2" and bc["broker.id"]["read_only"]
                assert bc["zookeeper.session.timeout.ms"]["value"] == "4000"  # the cluster's 4 s
                assert bc["delete.topic.enable"]["value"] == "true"
                assert bc["create.topic.policy.class.name"]["value"] is None  # no topic policy
                read_only = STATIC | {k for k, d in BROKER_CONFIGS.items() if not d.dynamic}
                assert {k for k, v in bc.items() if v["read_only"]} == read_only
                assert {"log.retention.hours", "broker.id", "password.encoder.secret"} <= read_only
                assert not {"log.retention.ms", "min.insync.replicas", RATE} & read_only
                assert _configs(audit)["retention.bytes"]["value"] == "1048576"
                assert _configs(audit)[REPLICAS]["value"] == ""
                # The default entity: what it holds, nothing else (Kafka's rule).
                assert {k: v["value"] for k, v in _configs(default).items()} == {
                    RATE: "100", LEADER_RATE: "200", "log.retention.bytes": "1048576"}
                assert list(_configs(filtered)) == ["retention.ms"]
                assert set(_configs(empty_keys)) == set(bc)  # an empty key list: every entry, as Kafka
                if version >= 1:
                    assert oc["retention.ms"]["config_source"] == 1
                    assert oc["retention.bytes"]["config_source"] == 3  # the default entity's synonym
                    assert oc[REPLICAS]["config_source"] == 5
                    assert bc[RATE]["config_source"] == 2
                    assert bc[LEADER_RATE]["config_source"] == 3
                    assert bc["zookeeper.session.timeout.ms"]["config_source"] == 4  # not its default
                    assert bc["delete.topic.enable"]["config_source"] == 5
                    assert _configs(default)[RATE]["config_source"] == 3
                else:
                    assert oc["retention.ms"]["is_default"] is False
                    assert oc[REPLICAS]["is_default"] is True
                    assert bc["delete.topic.enable"]["is_default"] is True
                    assert bc["zookeeper.session.timeout.ms"]["is_default"] is False
                if version >= 3:
                    assert bc[RATE]["config_type"] == 5 and oc[REPLICAS]["config_type"] == 7
                    assert bc["delete.topic.enable"]["config_type"] == 1
                    assert oc["retention.ms"]["config_type"] == 5  # Kafka's LONG
                    assert bc[RATE]["documentation"] is None  # not asked


async def test_synonyms_and_documentation_when_asked(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        c.set_json("/config/brokers/2", {"version": 1, "config": {RATE: "500"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {RATE: "100"}})
        c.set_json("/config/topics/orders", {"version": 1, "config": {REPLICAS: "*"}})
        body = await c.call(101, 32, 3, {"resources": [_res(4, "2"), _res(4, ""), _res(2, "orders")],
                                         "include_synonyms": True, "include_documentation": True})
        broker, default, topic = (_configs(r) for r in body["results"])
        assert broker[RATE]["synonyms"] == [
            {"name": RATE, "value": "500", "source": 2},
            {"name": RATE, "value": "100", "source": 3},
            {"name": RATE, "value": LONG_MAX, "source": 5},
        ]
        assert broker[LEADER_RATE]["synonyms"] == [{"name": LEADER_RATE, "value": LONG_MAX, "source": 5}]
        assert broker["zookeeper.session.timeout.ms"]["synonyms"] == [
            {"name": "zookeeper.session.timeout.ms", "value": "4000", "source": 4},
            {"name": "zookeeper.session.timeout.ms", "value": "6000", "source": 5},
        ]
        assert broker["create.topic.policy.class.name"]["synonyms"] == []  # no value, no default
        assert default[RATE]["synonyms"] == [{"name": RATE, "value": "100", "source": 3}]
        assert topic[REPLICAS]["synonyms"] == [{"name": REPLICAS, "value": "*", "source": 1}]
        assert topic[LEADER_REPLICAS]["synonyms"] == []  # no broker synonym: only its default
        assert "upper bound" in broker[RATE]["documentation"] and "Zookeeper" in broker[
            "zookeeper.session.timeout.ms"]["documentation"]
        assert topic["follower.replication.throttled.replicas"]["documentation"].startswith("A list of replicas")
        body = await c.call(101, 32, 1, {"resources": [_res(4, "2")], "include_synonyms": False})
        assert _configs(body["results"][0])[RATE]["synonyms"] == []


async def test_sensitive_values_are_not_returned(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        c.set_json("/config/brokers/2", {"version": 1, "config": {
            "listener.name.secure.ssl.key.password": "s3cret", "sasl.jaas.config": "x required;",
            "password.encoder.secret": "pe-s3cret", "delegation.token.secret.key": "dt-s3cret"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {
            "ssl.keystore.password": "other", "delegation.token.secret.key": "dt-other"}})
        body = await c.call(101, 32, 4, {"resources": [_res(4, "2"), _res(4, "")], "include_synonyms": True})
        broker, default = (_configs(r) for r in body["results"])
        # Issue 22 item 7: every PASSWORD config, password.encoder.secret and
        # delegation.token.secret.key among them, is sensitive: no value anywhere.
        for entries, name in ((broker, "listener.name.secure.ssl.key.password"), (broker, "sasl.jaas.config"),
                              (broker, "ssl.keystore.password"), (default, "ssl.keystore.password"),
                              (broker, "password.encoder.secret"), (broker, "delegation.token.secret.key"),
                              (default, "delegation.token.secret.key"), (broker, "password.encoder.old.secret")):
            assert entries[name]["is_sensitive"] is True and entries[name]["value"] is None
            assert entries[name]["config_type"] == 9  # PASSWORD
            assert all(s["value"] is None for s in entries[name]["synonyms"])
        assert broker["delegation.token.secret.key"]["config_source"] == 2
        assert not any(secret in repr(body) for secret in ("s3cret", "other", "dt-", "pe-"))


async def test_topic_policy_is_described(zk_hosts):
    config = ControllerConfig(zk_session_timeout_s=4.0, topic_policy_max_partitions=8)
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS, config=config) as c:
        await c.wait_active()
        body = await c.call(101, 32, 4, {"resources": [_res(4, "1", ["create.topic.policy.class.name"])],
                                         "include_synonyms": True})
        (entry,) = body["results"][0]["configs"]
        assert entry["value"] == "controller.core.topic_policy.TopicPolicy" and entry["config_source"] == 4
        assert entry["read_only"] is True and entry["config_type"] == 8


async def test_bad_resources_fail_alone(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        c.set_json("/config/topics/audit", {"version": 1, "config": {"retention.ms": 5}})  # not a string
        body = await c.call(101, 32, 4, {"resources": [
            _res(2, "nope"), _res(4, "x1"), _res(4, "-1"), _res(4, "007"), _res(8, "1"), _res(2, "bad/name"),
            _res(2, "audit"), _res(2, "orders")]})
        codes = [(r["error_code"], r["error_message"]) for r in body["results"]]
        assert codes[0][0] == 3 and "nope" in codes[0][1]
        assert [code for code, _ in codes[1:4]] == [42, 42, 42] and "broker id" in codes[1][1]
        assert codes[4][0] == 42 and "resource type 8" in codes[4][1]
        assert codes[5][0] == 17
        assert codes[6][0] == -1 and "/config/topics/audit" in codes[6][1]
        assert codes[7] == (0, None)
        assert not c.kafka.zk.exists("/config/topics/nope")  # describing changes nothing
