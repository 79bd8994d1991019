"""Client quotas (KIP-546) on simulated brokers: Kafka's clients send DescribeClientQuotas and
AlterClientQuotas to any node, and a ZooKeeper-mode Kafka broker answers them from ZooKeeper on
its own session; the simulated brokers do the same (znodes.client_quotas, the controller
listener's rules), over TCP on a real ZooKeeper."""

import json

import pytest

from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.sim.test_alter_configs import _call
from tests.sim.zkcluster import real_zk_cluster


def _entry(entity: dict, key: str, value: float) -> dict:
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
            "ops": [{"key": key, "value": value, "remove": False}]}


@pytest.mark.zk
async def test_a_broker_serves_client_quotas_from_zookeeper(zk_hosts):
    async with real_zk_cluster(zk_hosts, "orders:1:2:1KiB", brokers=2, serve=True) as (cluster, other):
        port = cluster.broker(2).port
        versions = {k["api_key"]: (k["min_version"], k["max_version"])
                    for k in (await _call(port, 18, 3, {"client_software_name": "t",
                                                        "client_software_version": "1"}))["api_keys"]}
        assert versions[ApiKey.DESCRIBE_CLIENT_QUOTAS] == (0, 1) and versions[ApiKey.ALTER_CLIENT_QUOTAS] == (0, 1)
        answer = await _call(port, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [
            _entry({"client-id": "app"}, "producer_byte_rate", 2048),
            _entry({"user": "bob"}, "producer_byte_rate", -1)], "validate_only": False})
        assert [(e["error_code"], e["error_message"]) for e in answer["entries"]] == [
            (0, None), (ErrorCode.INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0")]
        data, _ = await other.get("/config/clients/app")
        assert json.loads(data)["config"] == {"producer_byte_rate": "2048"}
        described = await _call(cluster.broker(1).port, ApiKey.DESCRIBE_CLIENT_QUOTAS, 0,
                                {"components": [{"entity_type": "client-id", "match_type": 0, "match": "app"}],
                                 "strict": True})
        assert described["error_code"] == 0 and described["entries"] == [
            {"entity": [{"entity_type": "client-id", "entity_name": "app"}],
             "values": [{"key": "producer_byte_rate", "value": 2048.0}]}]
