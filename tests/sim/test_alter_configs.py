"""AlterConfigs (33) and IncrementalAlterConfigs (44) on simulated brokers: Kafka clients send
them to any node, and a Kafka broker in ZooKeeper mode writes the config and its change
notification itself. The controller listener's rules (protocol.config_changes); then over TCP
on a real ZooKeeper, the other broker learning the change from the notification."""

import asyncio
import json
import struct

import pytest

import protocol
from protocol import ApiKey
from protocol.config_changes import APPEND, DELETE, SET
from protocol.errors import ErrorCode
from sim.alterconfigs import alter_configs
from tests.sim.zkcluster import real_zk_cluster, twin_cluster

TOPIC, BROKER = 2, 4


def _inc(rtype, name, *ops) -> dict:
    return {"resource_type": rtype, "resource_name": name,
            "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}


async def _config(store, path) -> dict:
    if await store.exists(path) is None:
        return {}
    return json.loads((await store.get(path))[0])["config"]


async def _notes(store) -> list[str]:
    names = sorted(await store.children("/config/changes"))
    return [json.loads((await store.get(f"/config/changes/{n}"))[0])["entity_path"] for n in names]


async def test_the_rules_and_the_writes():
    async with twin_cluster("orders:1:2:1KiB") as (_, _cluster, store):
        before = await _notes(store)
        answer = await alter_configs(store, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            _inc(TOPIC, "orders", ("retention.ms", SET, "3600000"), ("cleanup.policy", APPEND, "compact")),
            _inc(BROKER, "", ("min.insync.replicas", SET, "2")),
            _inc(BROKER, "2", ("leader.replication.throttled.rate", SET, "1000")),
        ], "validate_only": False})
        assert [r["error_code"] for r in answer["responses"]] == [0, 0, 0]
        assert await _config(store, "/config/topics/orders") == {"retention.ms": "3600000",
                                                                 "cleanup.policy": "delete,compact"}
        assert await _config(store, "/config/brokers/<default>") == {"min.insync.replicas": "2"}
        assert await _config(store, "/config/brokers/2") == {"leader.replication.throttled.rate": "1000"}
        assert (await _notes(store))[len(before):] == ["topics/orders", "brokers/<default>", "brokers/2"]

        state = await _notes(store), await _config(store, "/config/topics/orders")
        responses = [(await alter_configs(store, ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [r], "validate_only": False}))
                     ["responses"][0] for r in [
            _inc(TOPIC, "orders", ("retention.ms", SET, "1h")),
            _inc(TOPIC, "orders", ("retention.mss", SET, "1")),
            _inc(BROKER, "1", ("log.retention.hours", SET, "1")),
            _inc(TOPIC, "orders", ("retention.ms", SET, "1"), ("retention.ms", DELETE, None)),
            _inc(TOPIC, "missing", ("retention.ms", SET, "1")),
            _inc(TOPIC, "bad/name"),
            _inc(BROKER, "one"),
            _inc(3, "group"),
        ]]
        codes = [r["error_code"] for r in responses]
        assert codes == [40, 40, 40, 42, 3, 17, 42, 42]
        assert "Invalid value 1h for configuration retention.ms: Not a number of type LONG" in \
            responses[0]["error_message"]
        assert "Cannot update these configs dynamically" in responses[2]["error_message"]
        # A resource named twice in one request: each copy refused, none applied; the others are.
        answer = await alter_configs(store, ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [
            _inc(TOPIC, "orders", ("retention.ms", SET, "1")), _inc(BROKER, "3", ("log.retention.ms", SET, "5")),
            _inc(TOPIC, "orders", ("retention.ms", SET, "2"))], "validate_only": False})
        assert [r["error_code"] for r in answer["responses"]] == [42, 0, 42]
        assert await _config(store, "/config/brokers/3") == {"log.retention.ms": "5"}
        state = await _notes(store), await _config(store, "/config/topics/orders")
        # validate_only: answered, nothing written; AlterConfigs replaces the known keys.
        answer = await alter_configs(store, ApiKey.ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": TOPIC, "resource_name": "orders", "configs": [{"name": "segment.ms", "value": "60000"}]}],
            "validate_only": True})
        assert answer["responses"][0]["error_code"] == 0
        assert (await _notes(store), await _config(store, "/config/topics/orders")) == state
        answer = await alter_configs(store, ApiKey.ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": TOPIC, "resource_name": "orders", "configs": [{"name": "segment.ms", "value": "60000"}]}],
            "validate_only": False})
        assert answer["responses"][0]["error_code"] == 0
        assert await _config(store, "/config/topics/orders") == {"segment.ms": "60000"}


async def test_an_unreadable_config_is_never_overwritten():
    async with twin_cluster("orders:1:1:1KiB") as (_, _cluster, store):
        await store.create("/config/brokers/3", b"[]", makepath=True)
        answer = await alter_configs(store, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            _inc(BROKER, "3", ("leader.replication.throttled.rate", SET, "5"))], "validate_only": False})
        assert answer["responses"][0]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
        assert (await store.get("/config/brokers/3"))[0] == b"[]"


async def _call(port: int, api_key: int, version: int, body: dict) -> dict:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(protocol.encode_request(api_key, version, 7, "test", body))
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        frame = struct.pack(">i", size) + await reader.readexactly(size)
        return protocol.decode_response(api_key, version, frame)[1]
    finally:
        writer.close()


@pytest.mark.zk
async def test_over_tcp_and_the_other_broker_learns_it(zk_hosts):
    async with real_zk_cluster(zk_hosts, "orders:1:2:1KiB", brokers=2, serve=True) as (cluster, other):
        versions = {k["api_key"]: (k["min_version"], k["max_version"])
                    for k in (await _call(cluster.broker(2).port, 18, 3, {"client_software_name": "t",
                                                                        "client_software_version": "1"}))["api_keys"]}
        assert versions[ApiKey.ALTER_CONFIGS] == (0, 2) and versions[ApiKey.INCREMENTAL_ALTER_CONFIGS] == (0, 1)
        answer = await _call(cluster.broker(2).port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            _inc(TOPIC, "orders", ("min.insync.replicas", SET, "2"))], "validate_only": False})
        assert answer["responses"][0]["error_code"] == 0
        assert await _config(other, "/config/topics/orders") == {"min.insync.replicas": "2"}
        answer = await _call(cluster.broker(2).port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            _inc(TOPIC, "orders", ("min.insync.replicas", SET, "0"))], "validate_only": False})
        assert answer["responses"][0]["error_code"] == ErrorCode.INVALID_CONFIG
        describe = {"resources": [{"resource_type": TOPIC, "resource_name": "orders",
                                   "configuration_keys": ["min.insync.replicas"]}], "include_synonyms": False,
                    "include_documentation": False}
        for _ in range(200):  # the notification arrives through kazoo's thread
            await cluster.advance()
            [result] = (await _call(cluster.broker(1).port, 32, 4, describe))["results"]
            if result["configs"][0]["value"] == "2":
                break
            await asyncio.sleep(0.02)
        assert result["configs"][0]["value"] == "2" and result["configs"][0]["config_source"] == 1
        assert cluster.model.log_configs.min_insync_replicas("orders", 1) == 2
