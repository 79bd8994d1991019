"""controller.core.acl: Kafka's AclAuthorizer rule and ACL filters, table by table."""

from __future__ import annotations

import pytest

from controller.core.acl import (
    ALL, ALLOW, ALTER, ALTER_CONFIGS, ANY_OP, CLUSTER, CLUSTER_NAME, CREATE, DENY, DESCRIBE, DESCRIBE_CONFIGS,
    GROUP, LITERAL, MATCH, PREFIXED, READ, TOPIC, WRITE, Acl, AclFilter, AclRules, Resource, filter_error, validate,
)


def acl(rtype, name, principal, op, perm=ALLOW, pattern=LITERAL, host="*"):
    return Acl(Resource(rtype, name, pattern), principal, host, op, perm)


RULES = AclRules([
    acl(CLUSTER, CLUSTER_NAME, "User:alice", ALTER),
    acl(TOPIC, "orders", "User:bob", READ),
    acl(TOPIC, "pay", "User:bob", WRITE, pattern=PREFIXED),
    acl(TOPIC, "payroll", "User:bob", ALL, DENY),
    acl(TOPIC, "*", "User:carol", DESCRIBE),
    acl(TOPIC, "audit", "User:*", ALTER_CONFIGS, host="10.0.0.1"),
    acl(GROUP, "g", "User:dave", ALL),
], super_users={"User:admin"})


@pytest.mark.parametrize("principal,host,op,rtype,name,allowed", [
    ("User:admin", "1.1.1.1", ALTER, CLUSTER, CLUSTER_NAME, True),       # super user
    ("User:alice", "1.1.1.1", ALTER, CLUSTER, CLUSTER_NAME, True),
    ("User:alice", "1.1.1.1", DESCRIBE, CLUSTER, CLUSTER_NAME, True),    # ALTER implies DESCRIBE
    ("User:alice", "1.1.1.1", CREATE, CLUSTER, CLUSTER_NAME, False),
    ("User:bob", "1.1.1.1", ALTER, CLUSTER, CLUSTER_NAME, False),        # ACLs exist, none for bob
    ("User:bob", "1.1.1.1", DESCRIBE, TOPIC, "orders", True),            # READ implies DESCRIBE
    ("User:bob", "1.1.1.1", WRITE, TOPIC, "orders", False),
    ("User:bob", "1.1.1.1", WRITE, TOPIC, "payments", True),             # PREFIXED "pay"
    ("User:bob", "1.1.1.1", WRITE, TOPIC, "payroll", False),             # DENY ALL beats the prefix ALLOW
    ("User:carol", "1.1.1.1", DESCRIBE, TOPIC, "anything", True),        # wildcard resource
    ("User:carol", "1.1.1.1", READ, TOPIC, "anything", False),
    ("User:eve", "10.0.0.1", DESCRIBE_CONFIGS, TOPIC, "audit", True),    # ALTER_CONFIGS implies, any user
    ("User:eve", "10.0.0.2", DESCRIBE_CONFIGS, TOPIC, "audit", False),   # other host
    ("User:eve", "1.1.1.1", DESCRIBE, TOPIC, "other", False),            # carol's "*" ACL applies: not eve's
    (None, "1.1.1.1", DESCRIBE, GROUP, "g", False),                      # no principal: nothing
])
def test_authorization_rule(principal, host, op, rtype, name, allowed):
    assert RULES.allows(principal, host, op, rtype, name) is allowed


def test_no_acl_found_follows_the_setting():
    empty = AclRules([acl(TOPIC, "x", "User:a", READ)])
    assert not empty.allows("User:b", "h", ALTER, CLUSTER, CLUSTER_NAME)
    everyone = AclRules([acl(TOPIC, "x", "User:a", READ)], allow_if_no_acl=True)
    assert everyone.allows("User:b", "h", ALTER, CLUSTER, CLUSTER_NAME)
    assert not everyone.allows("User:b", "h", READ, TOPIC, "x")  # x has ACLs, none for b
    denied = AclRules([acl(CLUSTER, CLUSTER_NAME, "User:b", ALTER, DENY)], allow_if_no_acl=True)
    assert not denied.allows("User:b", "h", ALTER, CLUSTER, CLUSTER_NAME)


def test_filters():
    acls = sorted(RULES.acls)
    pick = lambda f: {(a.resource.name, a.principal) for a in acls if f.matches(a)}  # noqa: E731
    assert pick(AclFilter(resource_type=TOPIC, name="orders", pattern=LITERAL)) == {("orders", "User:bob")}
    assert pick(AclFilter(resource_type=TOPIC, name="payroll", pattern=MATCH)) == {
        ("pay", "User:bob"), ("payroll", "User:bob"), ("*", "User:carol")}
    assert pick(AclFilter(principal="User:dave")) == {("g", "User:dave")}
    assert pick(AclFilter(resource_type=TOPIC, pattern=PREFIXED)) == {("pay", "User:bob")}
    assert len(pick(AclFilter())) == len(acls)
    assert filter_error(AclFilter(operation=99)) and filter_error(AclFilter(resource_type=0))
    assert filter_error(AclFilter(operation=ANY_OP)) is None


@pytest.mark.parametrize("bad", [
    acl(1, "x", "User:a", READ),                          # ANY is not a resource type
    acl(TOPIC, "x", "User:a", ANY_OP),                    # nor ANY an operation
    acl(TOPIC, "x", "alice", READ),                       # principal without a type
    acl(CLUSTER, "other", "User:a", ALTER),               # the cluster is kafka-cluster
    acl(TOPIC, "*", "User:a", READ, pattern=PREFIXED),
    acl(TOPIC, "x", "User:a", READ, perm=1),
    acl(TOPIC, "x", "User:a", READ, pattern=MATCH),
])
def test_validate_refuses(bad):
    assert validate(bad)


def test_validate_accepts():
    assert validate(acl(CLUSTER, CLUSTER_NAME, "User:a", ALTER)) is None
    assert validate(acl(TOPIC, "pay", "User:*", WRITE, pattern=PREFIXED, host="10.0.0.1")) is None
