"""SCRAM credentials (KIP-554) and the ACL APIs on simulated brokers, over TCP on a real
ZooKeeper. Kafka's clients send them to any node (kafka-python 3 to its least loaded node), and
a ZooKeeper-mode Kafka broker that is not the controller answers them:

    DescribeUserScramCredentials  from ZooKeeper, on its own session (znodes.scram_users)
    AlterUserScramCredentials     NOT_CONTROLLER for every user named, once, sorted, null
                                  message, nothing written (protocol.scram_users)
    Describe/Create/DeleteAcls    SECURITY_DISABLED with Kafka's words, as a broker without an
                                  authorizer (protocol.no_authorizer)
"""

import asyncio
import json

import pytest

from controller.shell.security.scram import format_credential, make_credential
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.sim.test_alter_configs import _call
from tests.sim.zkcluster import real_zk_cluster
from znodes import users

SHA256, SHA512 = 1, 2
NO_AUTHORIZER = "No Authorizer is configured."


async def _versions(port: int) -> dict[int, tuple[int, int]]:
    answer = await _call(port, ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def _upsert(name: str) -> dict:
    return {"name": name, "mechanism": SHA256, "iterations": 4096, "salt": b"salt-salt", "salted_password": bytes(32)}


@pytest.mark.zk
async def test_a_broker_describes_credentials_from_zookeeper_and_refuses_alter_as_not_the_controller(zk_hosts):
    async with real_zk_cluster(zk_hosts, "orders:1:2:1KiB", brokers=2, serve=True) as (cluster, other):
        port = cluster.broker(2).port
        versions = await _versions(port)
        assert versions[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS] == (0, 0)
        assert versions[ApiKey.ALTER_USER_SCRAM_CREDENTIALS] == (0, 0)
        await users.write_credentials(other, "alice", {
            "SCRAM-SHA-512": format_credential(make_credential("SCRAM-SHA-512", "pw", iterations=8192))})

        named = await _call(port, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                            {"users": [{"name": "alice"}, {"name": "zed"}]})
        assert named["error_code"] == 0
        assert [(r["user"], r["error_code"], r["error_message"], r["credential_infos"]) for r in named["results"]] == [
            ("alice", 0, None, [{"mechanism": SHA512, "iterations": 8192}]),
            ("zed", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: zed", [])]
        every = await _call(cluster.broker(1).port, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert [(r["user"], r["credential_infos"]) for r in every["results"]] == [
            ("alice", [{"mechanism": SHA512, "iterations": 8192}])]

        before = sorted(await other.children("/config/changes"))
        altered = await _call(port, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {
            "deletions": [{"name": "alice", "mechanism": SHA512}], "upsertions": [_upsert("bob"), _upsert("alice")]})
        assert altered["results"] == [{"user": "alice", "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None},
                                      {"user": "bob", "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None}]
        assert json.loads((await other.get("/config/users/alice"))[0])["config"].keys() == {"SCRAM-SHA-512"}
        assert await other.exists("/config/users/bob") is None
        assert sorted(await other.children("/config/changes")) == before


@pytest.mark.zk
@pytest.mark.parametrize("version", range(0, 4))
async def test_the_acl_apis_answer_security_disabled_as_a_broker_without_an_authorizer(zk_hosts, version):
    async with real_zk_cluster(zk_hosts, "orders:1:1:1KiB", brokers=1, serve=True) as (cluster, _other):
        port = cluster.broker(1).port
        for key in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
            assert (await _versions(port))[key] == (0, 3)
        # v0 has no pattern types (KIP-290): its fields are left out there.
        pattern = {"pattern_type_filter": 1} if version else {}
        acl_filter = {"resource_type_filter": 1, "resource_name_filter": None, **pattern,
                      "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        described = await _call(port, ApiKey.DESCRIBE_ACLS, version, acl_filter)
        assert (described["error_code"], described["error_message"], described["resources"]) == (
            ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])
        creation = {"resource_type": 2, "resource_name": "orders", **({"resource_pattern_type": 3} if version else {}),
                    "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}
        created = await _call(port, ApiKey.CREATE_ACLS, version, {"creations": [creation, creation]})
        assert created["results"] == [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER}] * 2
        deleted = await _call(port, ApiKey.DELETE_ACLS, version, {"filters": [acl_filter, acl_filter]})
        assert deleted["filter_results"] == [
            {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []}] * 2


@pytest.mark.zk
async def test_kafka_python_describes_credentials_through_a_lone_simulated_broker(zk_hosts):
    """kafka-python 3 sends these to its least loaded node: bootstrapped from one broker of a
    cluster without a controller instance, that broker. (librdkafka sends every admin request to
    Metadata's controller_id, a controller instance, never a simulated broker.)"""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePatternFilter, ResourceType)

    async with real_zk_cluster(zk_hosts, "orders:1:1:1KiB", brokers=1, serve=True) as (cluster, other):
        await users.write_credentials(other, "alice", {
            "SCRAM-SHA-256": format_credential(make_credential("SCRAM-SHA-256", "pw", iterations=4096))})

        def client() -> tuple[dict, Exception]:
            admin = kafka.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{cluster.broker(1).port}",
                                           client_id="sim-scram", request_timeout_ms=10_000)
            try:
                described = admin.describe_user_scram_credentials(["alice"])
                try:
                    admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                                  permission_type=ACLPermissionType.ANY,
                                                  resource_pattern=ResourcePatternFilter(
                                                      ResourceType.ANY, None, ACLResourcePatternType.ANY)))
                except kafka.errors.SecurityDisabledError as e:
                    return described, e
                return described, None
            finally:
                admin.close()

        described, refused = await asyncio.to_thread(client)
        assert {u: (d["error"], [(int(c["mechanism"]), c["iterations"]) for c in d["credential_infos"]])
                for u, d in described.items()} == {"alice": (None, [(SHA256, 4096)])}
        assert isinstance(refused, kafka.errors.SecurityDisabledError)
