"""Client quotas (KIP-546) over a real SASL listener on real ZooKeeper with Kafka's authorizer:
DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster (ALTER_CONFIGS implies it) and
AlterClientQuotas ALTER_CONFIGS, else CLUSTER_AUTHORIZATION_FAILED for the whole request (every
entry, as Kafka's getErrorResponse), nothing written; a granted principal's quotas land in
Kafka's znodes beside the users' SCRAM credentials, which stay readable only by the service."""

from __future__ import annotations

import json

import pytest

from controller.core.acl import ALLOW, ALTER_CONFIGS, CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS, LITERAL, Acl, Resource
from controller.shell.security.scram import format_credential, make_credential
from protocol.errors import ErrorCode
from tests.security.test_topic_authorization import sasl_listener, session
from znodes import users
from znodes.store import connect

pytestmark = [pytest.mark.zk, pytest.mark.timeout(60)]

DESCRIBE, ALTER = 48, 49
EVERYTHING = {"components": [], "strict": False}


def quota(entity: dict, key: str, value: float) -> dict:
    return {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                         "ops": [{"key": key, "value": value, "remove": False}]}], "validate_only": False}


@pytest.fixture
async def cluster(zk_hosts):
    store = await connect(zk_hosts)
    lis, ctx = await sasl_listener(store, ("dan", "erin", "root"))
    cluster_resource = Resource(CLUSTER, CLUSTER_NAME, LITERAL)
    await ctx.authorizer.create(Acl(cluster_resource, "User:dan", "*", DESCRIBE_CONFIGS, ALLOW))
    await ctx.authorizer.create(Acl(cluster_resource, "User:erin", "*", ALTER_CONFIGS, ALLOW))
    await lis.start()
    try:
        yield lis.port, store
    finally:
        await lis.close()
        await store.close()


async def test_quota_apis_follow_kafkas_cluster_acls_and_write_kafkas_znodes(cluster):
    port, store = cluster
    root, dan, erin = [await session(port, u) for u in ("root", "dan", "erin")]
    # dan may describe, not alter: every entry refused, nothing written
    refused = await dan(ALTER, 1, {"entries": quota({"user": "dan"}, "producer_byte_rate", 1)["entries"]
                                   + quota({"client-id": "x"}, "producer_byte_rate", 1)["entries"],
                                   "validate_only": False})
    assert [e["error_code"] for e in refused["entries"]] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
    assert [e["entity"][0]["entity_name"] for e in refused["entries"]] == ["dan", "x"]
    assert await store.exists("/config/clients/x") is None
    assert (await dan(DESCRIBE, 1, EVERYTHING)) == {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                                                    "entries": []}
    # erin's ALTER_CONFIGS implies DESCRIBE_CONFIGS (Kafka's implied operations)
    assert [e["error_code"] for e in (await erin(ALTER, 1, quota({"user": "dan"}, "producer_byte_rate", 4096)))["entries"]] == [0]
    assert [e["error_code"] for e in (await root(ALTER, 0, quota({"ip": None}, "connection_creation_rate", 20)))["entries"]] == [0]
    described = await erin(DESCRIBE, 1, EVERYTHING)
    assert {(e["entity"][0]["entity_type"], e["entity"][0]["entity_name"]): e["values"] for e in described["entries"]} == {
        ("user", "dan"): [{"key": "producer_byte_rate", "value": 4096.0}],
        ("ip", None): [{"key": "connection_creation_rate", "value": 20.0}]}
    # dan's credential survived the quota written beside it, and still logs in
    data, _ = await store.get("/config/users/dan")
    assert set(json.loads(data)["config"]) == {"SCRAM-SHA-512", "producer_byte_rate"}
    assert await session(port, "dan")
    # a principal with no grant: CLUSTER_AUTHORIZATION_FAILED for the describe, null entries
    await users.write_credentials(store, "frank", {"SCRAM-SHA-512": format_credential(
        make_credential("SCRAM-SHA-512", "frank-secret"))})
    frank = await session(port, "frank")
    answer = await frank(DESCRIBE, 0, EVERYTHING)
    assert (answer["error_code"], answer["entries"]) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
