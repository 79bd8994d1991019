"""DescribeConfigs (32) against an in-process controller on a real ZooKeeper, through sockets."""

from __future__ import annotations

import pytest

from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2]}, "audit": {0: [2, 3]}}


def _res(rtype, name, keys=None):
    return {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}


def _configs(result) -> dict:
    return {c["name"]: c for c in result["configs"]}


async def test_topic_and_broker_configs_every_version(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        c.set_json("/config/topics/orders", {"version": 1, "config": {
            "retention.ms": "1000", "leader.replication.throttled.replicas": "0:1"}})
        c.set_json("/config/brokers/2", {"version": 1, "config": {"follower.replication.throttled.rate": "500"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {
            "follower.replication.throttled.rate": "100", "leader.replication.throttled.rate": "200"}})
        for cid in (active, c.standby(active)):  # standbys answer too
            for version in range(5):
                body = await c.call(cid, 32, version, {"resources": [
                    _res(2, "orders"), _res(4, "2"), _res(2, "audit"), _res(4, ""),
                    _res(2, "orders", ["retention.ms", "absent.key"])]})
                orders, broker, audit, default, filtered = body["results"]
                assert [r["error_code"] for r in body["results"]] == [0] * 5
                assert (orders["resource_type"], orders["resource_name"]) == (2, "orders")
                oc = _configs(orders)
                assert {k: v["value"] for k, v in oc.items()} == {
                    "retention.ms": "1000", "leader.replication.throttled.replicas": "0:1"}
                assert not any(v["read_only"] or v["is_sensitive"] for v in oc.values())
                bc = _configs(broker)
                assert {k: v["value"] for k, v in bc.items()} == {
                    "follower.replication.throttled.rate": "500", "leader.replication.throttled.rate": "200"}
                assert audit["configs"] == []
                assert {k: v["value"] for k, v in _configs(default).items()} == {
                    "follower.replication.throttled.rate": "100", "leader.replication.throttled.rate": "200"}
                assert list(_configs(filtered)) == ["retention.ms"]
                if version >= 1:
                    assert oc["retention.ms"]["config_source"] == 1
                    assert bc["follower.replication.throttled.rate"]["config_source"] == 2
                    assert bc["leader.replication.throttled.rate"]["config_source"] == 3
                else:
                    assert oc["retention.ms"]["is_default"] is False
                if version >= 3:
                    assert bc["follower.replication.throttled.rate"]["config_type"] == 5


async def test_synonyms_when_asked(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        c.set_json("/config/brokers/2", {"version": 1, "config": {"follower.replication.throttled.rate": "500"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {"follower.replication.throttled.rate": "100"}})
        body = await c.call(101, 32, 1, {"resources": [_res(4, "2")], "include_synonyms": True})
        entry = _configs(body["results"][0])["follower.replication.throttled.rate"]
        assert entry["synonyms"] == [
            {"name": "follower.replication.throttled.rate", "value": "500", "source": 2},
            {"name": "follower.replication.throttled.rate", "value": "100", "source": 3},
        ]
        body = await c.call(101, 32, 1, {"resources": [_res(4, "2")], "include_synonyms": False})
        assert _configs(body["results"][0])["follower.replication.throttled.rate"]["synonyms"] == []


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
