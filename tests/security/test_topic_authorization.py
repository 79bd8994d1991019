"""Per-topic authorization over a real SASL listener and ZooKeeper: Metadata leaves out the
topics the principal may not DESCRIBE and answers TOPIC_AUTHORIZATION_FAILED (29) for named
ones; DescribeConfigs needs DESCRIBE_CONFIGS on the topic (29) or on the cluster for a broker
(31); a cluster API without the ACL gets 31; a super user passes everything."""

from __future__ import annotations

import asyncio
import json
import struct

import pytest

import protocol
from controller.core.acl import ALLOW, DESCRIBE, LITERAL, TOPIC, Acl, Resource
from controller.core.config import ControllerConfig
from controller.core.listeners import Listener
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import ListenerLimits
from controller.shell.role import Role
from controller.shell.security.config import SecurityConfig
from controller.shell.security.listeners import build_listeners
from controller.shell.security.scram import format_credential, make_credential
from protocol.errors import ErrorCode
from znodes import users
from znodes.store import connect

pytestmark = [pytest.mark.zk, pytest.mark.timeout(60)]

TOPIC_ZNODE = {"version": 2, "partitions": {"0": [1]}, "adding_replicas": {}, "removing_replicas": {}}


async def sasl_listener(store, users_: tuple[str, ...]):
    """A standby's SASL_PLAINTEXT listener with Kafka's authorizer (super user root) over
    ``store``, each of ``users_`` with the SCRAM credential "<user>-secret" (PLAIN checks it):
    (listener, context) - start it, grant through ``context.authorizer``."""
    for user in users_:
        await users.write_credentials(store, user, {"SCRAM-SHA-512": format_credential(
            make_credential("SCRAM-SHA-512", f"{user}-secret"))})
    role = Role(101)
    role.store = store
    config = SecurityConfig.from_properties({
        "sasl.enabled.mechanisms": "PLAIN", "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:root"})
    ctx = AdminContext(role, ControllerConfig())
    (lis,) = build_listeners([Listener("SASL_PLAINTEXT", "127.0.0.1", 0)], AdminHandler(ctx), ListenerLimits(),
                             config, role)
    return lis, ctx


@pytest.fixture
async def listener(zk_hosts):
    store = await connect(zk_hosts)
    for name in ("orders", "secret"):
        await store.create(f"/brokers/topics/{name}", json.dumps(TOPIC_ZNODE).encode(), makepath=True)
    lis, ctx = await sasl_listener(store, ("dan", "root"))
    await ctx.authorizer.create(Acl(Resource(TOPIC, "orders", LITERAL), "User:dan", "*", DESCRIBE, ALLOW))
    await lis.start()
    try:
        yield lis.port
    finally:
        await lis.close()
        await store.close()


async def session(port: int, user: str):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    correlation = 0

    async def call(key: int, version: int, body: dict) -> dict:
        nonlocal correlation
        correlation += 1
        writer.write(protocol.encode_request(key, version, correlation, "t", body))
        await writer.drain()
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        return protocol.decode_response(key, version, struct.pack(">i", size) + await reader.readexactly(size))[1]

    assert (await call(17, 1, {"mechanism": "PLAIN"}))["error_code"] == 0
    assert (await call(36, 1, {"auth_bytes": f"\0{user}\0{user}-secret".encode()}))["error_code"] == 0
    return call


async def test_topics_and_cluster_apis_follow_the_acls(listener):
    dan = await session(listener, "dan")
    everything = await dan(3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False})
    assert [t["name"] for t in everything["topics"]] == ["orders"]
    named = await dan(3, 9, {"topics": [{"name": "orders"}, {"name": "secret"}, {"name": "missing"}],
                             "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert {t["name"]: t["error_code"] for t in named["topics"]} == {
        "orders": 0, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "missing": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    configs = await dan(32, 1, {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None}], "include_synonyms": False})
    # DESCRIBE does not imply DESCRIBE_CONFIGS: refused on the topic and on the cluster
    assert [r["error_code"] for r in configs["results"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                             ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    listed = await dan(46, 0, {"timeout_ms": 1000, "topics": None})
    assert listed["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    acls = await dan(29, 1, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert acls["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    root = await session(listener, "root")
    everything = await root(3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                   "include_topic_authorized_operations": False})
    assert sorted(t["name"] for t in everything["topics"]) == ["orders", "secret"]
    acls = await root(29, 1, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert [(r["resource_name"], [a["principal"] for a in r["acls"]]) for r in acls["resources"]] == [
        ("orders", ["User:dan"])]
    # a standby answers a controller-only API the principal may use with NOT_CONTROLLER, as before
    assert (await root(46, 0, {"timeout_ms": 1000, "topics": None}))["error_code"] == ErrorCode.NOT_CONTROLLER
