"""znodes.acls and the authorizer on a real ZooKeeper: Kafka's layout written and read back
(including ACLs written directly, as kafka-acls.sh would), change notifications, their purge,
and ACLs written elsewhere applying within the refresh bound."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.core.acl import ALLOW, ALTER, CLUSTER, CLUSTER_NAME, LITERAL, PREFIXED, READ, TOPIC, Acl, AclFilter, Resource
from controller.shell import authorizer as A
from controller.shell.role import Role
from znodes import acls as zacls
from znodes.store import connect

pytestmark = pytest.mark.zk


class Who:
    def __init__(self, principal, host="10.0.0.1"):
        self.principal, self.host = principal, host

    def current_principal(self):
        return self.principal


@pytest.fixture
async def store(zk_hosts):
    s = await connect(zk_hosts)
    yield s
    await s.close()


async def test_layout_and_notifications(store):
    role = Role(1)
    role.store = store
    auth = A.Authorizer(role)
    await auth.create(Acl(Resource(TOPIC, "pay", PREFIXED), "User:bob", "*", READ, ALLOW))
    await auth.create(Acl(Resource(CLUSTER, CLUSTER_NAME, LITERAL), "User:alice", "*", ALTER, ALLOW))
    assert json.loads((await store.get("/kafka-acl-extended/prefixed/Topic/pay"))[0]) == {
        "version": 1, "acls": [{"principal": "User:bob", "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    literal = [(await store.get(f"/kafka-acl-changes/{n}"))[0] for n in await store.children("/kafka-acl-changes")]
    extended = [json.loads((await store.get(f"/kafka-acl-extended-changes/{n}"))[0])
                for n in await store.children("/kafka-acl-extended-changes")]
    assert literal == [b"Cluster:kafka-cluster"]
    assert extended == [{"version": 1, "resourceType": "TOPIC", "name": "pay", "patternType": "PREFIXED"}]
    assert await auth.allows(Who("User:bob"), READ, TOPIC, "payments")
    deleted = await auth.delete(AclFilter(principal="User:bob"))
    assert [a.principal for a in deleted] == ["User:bob"]
    assert await store.exists("/kafka-acl-extended/prefixed/Topic/pay") is None  # the last ACL took the znode
    # every notification is older than a zero expiry: all purged
    assert await zacls.purge_notifications(store, 10**15, 0) == 3
    assert await store.children("/kafka-acl-changes") == []


async def test_acls_written_elsewhere_apply_within_the_refresh_bound(store, monkeypatch):
    monkeypatch.setattr(A, "REFRESH_S", 0.2)
    role = Role(1)
    role.store = store
    auth = A.Authorizer(role)
    assert not await auth.allows(Who("User:carol"), ALTER, CLUSTER, CLUSTER_NAME)
    # Another writer (kafka-acls.sh with --authorizer-properties zookeeper.connect=...) writes
    # Kafka's znode and its notification directly.
    await store.create("/kafka-acl/Cluster/kafka-cluster", json.dumps({"version": 1, "acls": [
        {"principal": "User:carol", "permissionType": "ALLOW", "operation": "ALTER", "host": "*"}]}).encode(),
        makepath=True)
    await store.create("/kafka-acl-changes/acl_changes_", b"Cluster:kafka-cluster", sequential=True, makepath=True)
    await asyncio.sleep(0.3)
    assert await auth.allows(Who("User:carol"), ALTER, CLUSTER, CLUSTER_NAME)


async def test_a_binding_kafka_refuses_grants_nothing_when_written_directly(store, monkeypatch, caplog):
    """The reported injection's ACL (PREFIXED Cluster 'kafka', User:* ALLOW ALL) and its change
    notification, written straight into ZooKeeper: it applied within a second; now the
    authorizer refuses and logs it, while a valid ACL written the same way applies."""
    monkeypatch.setattr(A, "REFRESH_S", 0.2)
    role = Role(1)
    role.store = store
    auth = A.Authorizer(role)
    assert not await auth.allows(Who("User:mallory"), ALTER, CLUSTER, CLUSTER_NAME)
    everyone = {"principal": "User:*", "permissionType": "Allow", "operation": "All", "host": "*"}
    await store.create("/kafka-acl-extended/prefixed/Cluster/kafka", json.dumps(
        {"version": 1, "acls": [everyone]}).encode(), makepath=True)
    await store.create("/kafka-acl/Topic/orders", json.dumps({"version": 1, "acls": [everyone]}).encode(),
                       makepath=True)
    await store.create("/kafka-acl-extended-changes/acl_changes_", json.dumps(
        {"version": 1, "resourceType": "CLUSTER", "name": "kafka", "patternType": "PREFIXED"}).encode(),
        sequential=True, makepath=True)
    await asyncio.sleep(0.3)
    with caplog.at_level("WARNING", logger="reassignd.authorizer"):
        assert not await auth.allows(Who("User:mallory"), ALTER, CLUSTER, CLUSTER_NAME)
        assert not await auth.allows(Who("User:ANONYMOUS"), ALTER, CLUSTER, CLUSTER_NAME)
    assert await auth.allows(Who("User:mallory"), READ, TOPIC, "orders")  # the valid one applies
    assert "PREFIXED Cluster 'kafka' refused" in caplog.text
    assert [a.resource.name for a in await auth.describe(AclFilter())] == ["orders"]
