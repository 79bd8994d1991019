"""Probes of the ACL admin APIs (DescribeAcls 29, CreateAcls 30, DeleteAcls 31), every version
served (0-3), against what a ZooKeeper-mode Kafka broker answers (2.x-3.x): AclApis (KafkaApis'
handleCreateAcls / handleDescribeAcls / handleDeleteAcls before 2.8), AclAuthorizer.createAcls /
deleteAcls / acls, CreateAclsRequest.validate / aclBinding, DescribeAclsRequest and
DeleteAclsRequest.normalizeAndValidate, ResourcePattern, ResourcePatternFilter.matches,
AccessControlEntryFilter.matches, DeleteAclsResponse.filterResult, AclEntry, ZkAclStore and
ZkAclChangeStore. Every answer goes through the handler and the codec (encoded and decoded
again at the version asked), on the ZooKeeper twin.

Where this project answers otherwise on purpose (docs/DESIGN.md section 8: a binding Kafka
would not accept is refused per creation with INVALID_REQUEST) the test says so; a divergence
not fixable in the ACL handler is a strict xfail.
"""

from __future__ import annotations

import json
import time

import pytest

import protocol
from controller.core.acl import (
    ALL,
    ALLOW,
    ALTER,
    ANY_OP,
    ANY_PATTERN,
    ANY_PERMISSION,
    ANY_RESOURCE,
    CLUSTER,
    CLUSTER_NAME,
    DENY,
    DESCRIBE,
    GROUP,
    LITERAL,
    MATCH,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
)
from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.authorizer import Authorizer
from controller.shell.listener import SESSION
from controller.shell.role import Role
from protocol.errors import ErrorCode
from znodes import acls as zacls
from znodes.api import BadVersionError
from znodes.twin import TwinServer

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ADMIN = "User:admin"
OK = int(ErrorCode.NONE)
INVALID = int(ErrorCode.INVALID_REQUEST)
UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)


class Who:
    """A connection's security session, as controller.shell.authorizer.who reads it."""

    def __init__(self, principal: str, host: str = "10.0.0.1"):
        self.principal, self.host = principal, host

    def current_principal(self) -> str:
        return self.principal


class Node:
    """One controller instance (a standby: the ACL APIs are served by every instance) with
    the AclAuthorizer on, over a twin ZooKeeper."""

    def __init__(self, authorizer: bool = True):
        # The wall clock: the authorizer purges change notifications older than 15 minutes
        # of time.time() (Kafka's expiry), and the twin's default clock stands in 2020.
        self.server = TwinServer(clock=lambda: int(time.time() * 1000))
        role = Role(101)
        role.store = self.server.connect()
        ctx = AdminContext(role, ControllerConfig())
        if authorizer:
            ctx.authorizer = Authorizer(role, super_users={ADMIN})
        self.handler = AdminHandler(ctx)

    async def ask(self, key: int, version: int, body: dict, principal: str = ADMIN) -> dict:
        """The answer, through the codec both ways at ``version``."""
        body = protocol.decode_body(key, version, "request", protocol.encode_body(key, version, "request", body))
        token = SESSION.set(Who(principal))
        try:
            answer = await self.handler.handle({"request_api_key": key, "request_api_version": version}, body)
        finally:
            SESSION.reset(token)
        assert answer is not None, f"api {key} v{version} not served"
        return protocol.decode_body(key, version, "response", protocol.encode_body(key, version, "response", answer))

    async def create(self, *creations: dict, version: int = 3) -> list[tuple[int, str | None]]:
        answer = await self.ask(CREATE_ACLS, version, {"creations": list(creations)})
        return [(r["error_code"], r["error_message"]) for r in answer["results"]]

    async def describe(self, version: int = 3, **filt) -> dict:
        return await self.ask(DESCRIBE_ACLS, version, flt(version, **filt))

    async def listed(self, version: int = 3, **filt) -> set[tuple]:
        """DescribeAcls' answer flattened: {(type, name, pattern, principal, host, op, perm)}."""
        answer = await self.describe(version, **filt)
        assert answer["error_code"] == OK, answer
        return {(r["resource_type"], r["resource_name"], r["pattern_type"], a["principal"], a["host"],
                 a["operation"], a["permission_type"]) for r in answer["resources"] for a in r["acls"]}

    async def delete(self, *filters: dict, version: int = 3) -> list[dict]:
        return (await self.ask(DELETE_ACLS, version, {"filters": list(filters)}))["filter_results"]

    def znode(self, path: str) -> list[dict] | None:
        if self.server.exists(path) is None:
            return None
        doc = json.loads(self.server.read(path)[0])
        assert doc["version"] == 1
        return doc["acls"]

    def literal_changes(self) -> list[str]:
        parent = zacls.LITERAL_CHANGES
        if self.server.exists(parent) is None:
            return []
        return [self.server.read(f"{parent}/{n}")[0].decode() for n in sorted(self.server.children(parent))]

    def extended_changes(self) -> list[dict]:
        parent = zacls.EXTENDED_CHANGES
        if self.server.exists(parent) is None:
            return []
        return [json.loads(self.server.read(f"{parent}/{n}")[0]) for n in sorted(self.server.children(parent))]


def creation(rtype=TOPIC, name="orders", pattern=LITERAL, principal="User:alice", host="*", op=READ,
             perm=ALLOW, version=3) -> dict:
    c = {"resource_type": rtype, "resource_name": name, "principal": principal, "host": host,
         "operation": op, "permission_type": perm}
    if version >= 1:
        c["resource_pattern_type"] = pattern
    return c


def flt(version=3, rtype=ANY_RESOURCE, name=None, pattern=ANY_PATTERN, principal=None, host=None, op=ANY_OP,
        perm=ANY_PERMISSION) -> dict:
    f = {"resource_type_filter": rtype, "resource_name_filter": name, "principal_filter": principal,
         "host_filter": host, "operation": op, "permission_type": perm}
    if version >= 1:
        f["pattern_type_filter"] = pattern
    return f


def row(rtype=TOPIC, name="orders", pattern=LITERAL, principal="User:alice", host="*", op=READ, perm=ALLOW):
    return (rtype, name, pattern, principal, host, op, perm)


def matched(result: dict) -> set[tuple]:
    return {(m["resource_type"], m["resource_name"], m["pattern_type"], m["principal"], m["host"], m["operation"],
             m["permission_type"]) for m in result["matching_acls"]}


# ---- every version: round trip, v0 without pattern types -------------------------------------


@pytest.mark.parametrize("version", range(4))
async def test_create_describe_delete_at_every_version(version):
    """Kafka (CreateAclsRequest/DescribeAclsRequest/DeleteAclsRequest schemas, 0-3; v1 adds the
    pattern type, KIP-290; v2+ flexible; v3 the USER resource type): every version creates,
    lists and deletes; v0 carries no pattern type and means LITERAL (the schema default 3).
    Confidence: high (the JSON schemas and AclApis)."""
    node = Node()
    assert await node.create(creation(version=version), creation(op=WRITE, version=version),
                             version=version) == [(OK, None), (OK, None)]
    assert node.znode("/kafka-acl/Topic/orders") is not None
    assert await node.listed(version) == {row(), row(op=WRITE)}
    [result] = await node.delete(flt(version, rtype=TOPIC, name="orders", op=WRITE), version=version)
    assert (result["error_code"], result["error_message"]) == (OK, None)
    assert matched(result) == {row(op=WRITE)}
    assert [m["error_code"] for m in result["matching_acls"]] == [OK]
    assert await node.listed(version) == {row()}


async def test_v0_describe_and_delete_see_only_literal_acls():
    """Kafka: a v0 DescribeAcls/DeleteAcls filter has no pattern type and is read as LITERAL
    (schema default; DescribeAclsRequest/DeleteAclsRequest.normalizeAndValidate turn ANY into
    LITERAL for v0), so PREFIXED ACLs are neither listed nor deleted by a v0 client (whose
    response could not say PREFIXED: DescribeAclsResponse/DeleteAclsResponse.validate refuse a
    non-LITERAL pattern at v0). Confidence: high."""
    node = Node()
    assert await node.create(creation(), creation(name="pay", pattern=PREFIXED)) == [(OK, None), (OK, None)]
    assert await node.listed(0) == {row()}
    assert await node.listed(1) == {row(), row(name="pay", pattern=PREFIXED)}
    [result] = await node.delete(flt(0), version=0)
    assert matched(result) == {row()}
    assert await node.listed() == {row(name="pay", pattern=PREFIXED)}


async def test_user_resource_type_at_v3():
    """Kafka: ResourceType USER (7) is a resource of its own (KIP-373's delegation token
    owners; CreateAcls v3). Its znodes go under /kafka-acl/User. Confidence: high."""
    node = Node()
    assert await node.create(creation(rtype=7, name="bob", op=13)) == [(OK, None)]
    assert node.znode("/kafka-acl/User/bob") == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"}]


# ---- CreateAcls: per-creation answers ------------------------------------------------------


async def test_creations_kafka_refuses_per_creation_and_the_rest_are_created():
    """Kafka (AclApis.handleCreateAcls): a CLUSTER resource not named kafka-cluster is
    INVALID_REQUEST "The only valid name for the CLUSTER resource is kafka-cluster" (checked
    first, so an empty CLUSTER name gets that message too); an empty name INVALID_REQUEST
    "Invalid empty resource name"; then AclAuthorizer.createAcls/validateAclBinding: a name
    with '/' or an unknown element (a code fromCode maps to UNKNOWN, e.g. 99) INVALID_REQUEST
    "Failed to create ACL" (ours names the cause instead). The others are created, and the
    results are in request order. Confidence: high (AclApis, AclAuthorizer, 3.x)."""
    node = Node()
    answers = await node.create(
        creation(),
        creation(rtype=CLUSTER, name="other"),
        creation(rtype=CLUSTER, name=""),
        creation(name=""),
        creation(name="a/b"),
        creation(rtype=99),
        creation(rtype=CLUSTER, name=CLUSTER_NAME, op=ALTER),
    )
    assert [code for code, _ in answers] == [OK, INVALID, INVALID, INVALID, INVALID, INVALID, OK]
    assert answers[1][1] == answers[2][1] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert answers[3][1] == "Invalid empty resource name"
    assert "a/b" in answers[4][1]
    assert await node.listed() == {row(), row(rtype=CLUSTER, name=CLUSTER_NAME, op=ALTER)}


@pytest.mark.parametrize("bad, kafka", [
    (dict(pattern=ANY_PATTERN), "ResourcePattern: patternType must not be ANY"),
    (dict(pattern=MATCH), "ResourcePattern: patternType must not be MATCH"),
    (dict(rtype=ANY_RESOURCE), "ResourcePattern: resourceType must not be ANY"),
    (dict(op=ANY_OP), "AccessControlEntry: operation must not be ANY"),
    (dict(perm=ANY_PERMISSION), "AccessControlEntry: permissionType must not be ANY"),
])
async def test_a_filter_value_in_a_creation_is_invalid_request_for_it_alone(bad, kafka):
    """Kafka: CreateAclsRequest.aclBinding builds a ResourcePattern / AccessControlEntry, whose
    constructors throw IllegalArgumentException for ANY (and MATCH) values; AclApis calls it
    outside any try, so KafkaApis.handleError answers every creation of the request
    UNKNOWN_SERVER_ERROR (message null in 3.x). Kafka's clients cannot send this (the same
    constructors refuse it client-side). DIFFERS ON PURPOSE (docs/DESIGN.md 8: a binding Kafka
    would not accept is refused with INVALID_REQUEST): only that creation is refused, with
    the reason, and the others go on. Confidence: high for Kafka's answer."""
    node = Node()
    answers = await node.create(creation(**bad), creation(name="kept"))
    assert answers[0][0] == INVALID and answers[0][1], kafka
    assert answers[1] == (OK, None)
    assert await node.listed() == {row(name="kept")}


@pytest.mark.parametrize("bad", [dict(pattern=0), dict(rtype=0), dict(op=0), dict(perm=0)])
async def test_an_unknown_code_in_a_creation_is_invalid_request(bad):
    """Kafka: CreateAclsRequest.validate (run while the request parses) throws
    IllegalArgumentException "CreatableAcls contain unknown elements" for a 0 (UNKNOWN) code,
    so RequestContext.parseRequest fails and the broker closes the connection. DIFFERS ON
    PURPOSE (DESIGN 8): INVALID_REQUEST for that creation, the connection stays. Confidence:
    high."""
    node = Node()
    assert [c for c, _ in await node.create(creation(**bad), creation(name="kept"))] == [INVALID, OK]


@pytest.mark.parametrize("bad, why", [
    (dict(principal="alice"), "Kafka 2.4+: AclEntry's SecurityUtils.parseKafkaPrincipal throws inside "
                              "updateResourceAcls -> UNKNOWN_SERVER_ERROR; 2.0-2.3 INVALID_REQUEST"),
    (dict(principal="User:"), "Kafka accepts an empty principal name (parseKafkaPrincipal splits at ':')"),
    (dict(host=""), "Kafka accepts an empty host (no check in AclApis or AclAuthorizer)"),
    (dict(name="*", pattern=PREFIXED), "Kafka ZK mode accepts a PREFIXED '*' (no check in AclApis/AclAuthorizer)"),
    (dict(rtype=CLUSTER, name=CLUSTER_NAME, pattern=PREFIXED),
     "Kafka accepts PREFIXED kafka-cluster (AuthorizerUtils.isClusterResource checks the name only)"),
])
async def test_bindings_refused_here_on_purpose(bad, why):
    """DIFFERS ON PURPOSE (DESIGN 8 and controller/core/acl.validate, which the authorizer also
    applies to what it reads from ZooKeeper): a principal not Type:name, an empty host, a
    PREFIXED '*' and a CLUSTER resource other than LITERAL kafka-cluster are INVALID_REQUEST
    for that creation. Kafka's answer is in the parameter. Confidence: high (AclApis,
    AclAuthorizer, AclEntry, SecurityUtils)."""
    node = Node()
    [(code, message)] = await node.create(creation(**bad))
    assert code == INVALID and message, why
    assert await node.listed() == set()


async def test_creating_an_existing_acl_succeeds_and_writes_nothing():
    """Kafka (AclAuthorizer.updateResourceAcls): the resource's ACLs are a set; an ACL already
    there (or twice in one request) is success, and with nothing changed no znode write and
    no change notification (updateAclChangedFlag only on a change). Confidence: high."""
    node = Node()
    assert await node.create(creation(), creation()) == [(OK, None), (OK, None)]
    before = node.server.dump()
    assert await node.create(creation()) == [(OK, None)]
    assert node.server.dump() == before
    assert node.znode("/kafka-acl/Topic/orders") == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]
    assert node.literal_changes() == ["Topic:orders"]


async def test_znodes_and_notifications_in_kafkas_format():
    """Kafka (ZkAclStore, AclEntry.toJsonCompatibleMap, ZkAclChangeStore): LITERAL ACLs at
    /kafka-acl/<Type>/<name>, PREFIXED at /kafka-acl-extended/prefixed/<Type>/<name>, payload
    {"version":1,"acls":[{principal, permissionType, operation, host}]} with Kafka's names
    (SecurityUtils.operationName: "Read", "Allow"); a change is a sequential
    /kafka-acl-changes/acl_changes_ ("Topic:orders") or /kafka-acl-extended-changes/acl_changes_
    (JSON with the Java enum names). Confidence: high."""
    node = Node()
    assert await node.create(creation(perm=DENY, host="10.0.0.9"),
                             creation(rtype=GROUP, name="pay", pattern=PREFIXED, op=ALL)) == [(OK, None)] * 2
    assert node.znode("/kafka-acl/Topic/orders") == [
        {"principal": "User:alice", "permissionType": "Deny", "operation": "Read", "host": "10.0.0.9"}]
    assert node.znode("/kafka-acl-extended/prefixed/Group/pay") == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "All", "host": "*"}]
    assert node.literal_changes() == ["Topic:orders"]
    assert node.extended_changes() == [{"version": 1, "resourceType": "GROUP", "name": "pay", "patternType": "PREFIXED"}]
    assert all(n.startswith("acl_changes_") for n in node.server.children(zacls.LITERAL_CHANGES))


async def test_one_notification_per_resource_per_request():
    """Kafka (AclAuthorizer.createAcls groups the request's bindings by resource pattern):
    one znode write and one change notification per resource, whatever the number of ACLs
    created on it (Authorizer.create_all). Confidence: high."""
    node = Node()
    assert await node.create(creation(), creation(op=WRITE), creation(op=DESCRIBE)) == [(OK, None)] * 3
    assert node.literal_changes() == ["Topic:orders"]


def contend(monkeypatch) -> None:
    """The resource named "contended" loses every race for its znode from now on (Kafka's
    updateResourceAcls giving up after maxUpdateRetries); the others update as usual."""
    real = zacls.update

    async def flaky(store, type_name, pattern, name, change):
        if name == "contended":
            raise BadVersionError(f"/kafka-acl/{type_name}/{name} kept changing")
        return await real(store, type_name, pattern, name, change)

    monkeypatch.setattr(zacls, "update", flaky)


async def test_a_zookeeper_failure_on_one_resource_fails_its_creations_only(monkeypatch):
    """Kafka (AclAuthorizer.createAcls): each resource's update is in its own try; a failure
    (e.g. updateResourceAcls' IllegalStateException after maxUpdateRetries) answers that
    resource's creations with it (wrapped in ApiException: UNKNOWN_SERVER_ERROR) and the others
    are created and answered NONE. Ours answered every creation UNKNOWN_SERVER_ERROR, the ones
    written included (FIXED). Confidence: high."""
    node = Node()
    contend(monkeypatch)
    answers = await node.create(creation(), creation(name="contended"), creation(name="later"))
    assert [c for c, _ in answers] == [OK, UNKNOWN_SERVER_ERROR, OK]
    assert await node.listed() == {row(), row(name="later")}


# ---- DescribeAcls: filters ------------------------------------------------------------------


async def seeded() -> Node:
    node = Node()
    answers = await node.create(
        creation(),                                                   # LITERAL orders
        creation(name="payments"),                                    # LITERAL payments
        creation(name="*", principal="User:*", op=DESCRIBE),          # LITERAL *
        creation(name="pay", pattern=PREFIXED, op=WRITE),             # PREFIXED pay
        creation(name="payx", pattern=PREFIXED, op=WRITE),            # PREFIXED payx
        creation(name="pay", perm=DENY, host="10.0.0.9"),             # LITERAL pay
        creation(rtype=GROUP, name="payments", op=ALL),               # GROUP LITERAL payments
    )
    assert answers == [(OK, None)] * 7
    return node


EVERYTHING = {
    row(), row(name="payments"), row(name="*", principal="User:*", op=DESCRIBE),
    row(name="pay", pattern=PREFIXED, op=WRITE), row(name="payx", pattern=PREFIXED, op=WRITE),
    row(name="pay", perm=DENY, host="10.0.0.9"), row(rtype=GROUP, name="payments", op=ALL),
}


async def test_describe_filters_as_kafka_matches_them():
    """Kafka (ResourcePatternFilter.matches, AccessControlEntryFilter.matches, AclAuthorizer.acls):
    ANY matches all; MATCH "payments" matches the LITERAL name, the LITERAL '*' and every PREFIXED
    name it starts with (not PREFIXED payx nor LITERAL pay); ANY with a name matches that exact
    name whatever the pattern; LITERAL '*' only the wildcard ACL; a null name with a pattern
    type every ACL of that pattern type; principal, host, operation and permission filters are
    exact (User:alice does not match a User:* ACL, a host does not match '*', READ does not
    match ALL). Confidence: high."""
    node = await seeded()
    assert await node.listed() == EVERYTHING
    assert await node.listed(rtype=TOPIC, name="payments", pattern=MATCH) == {
        row(name="payments"), row(name="*", principal="User:*", op=DESCRIBE), row(name="pay", pattern=PREFIXED, op=WRITE)}
    assert await node.listed(name="payments", pattern=MATCH) == {
        row(name="payments"), row(name="*", principal="User:*", op=DESCRIBE),
        row(name="pay", pattern=PREFIXED, op=WRITE), row(rtype=GROUP, name="payments", op=ALL)}
    assert await node.listed(rtype=TOPIC, pattern=MATCH) == EVERYTHING - {row(rtype=GROUP, name="payments", op=ALL)}
    assert await node.listed(rtype=TOPIC, name="pay") == {
        row(name="pay", pattern=PREFIXED, op=WRITE), row(name="pay", perm=DENY, host="10.0.0.9")}
    assert await node.listed(rtype=TOPIC, name="*", pattern=LITERAL) == {row(name="*", principal="User:*", op=DESCRIBE)}
    assert await node.listed(rtype=TOPIC, name="*", pattern=MATCH) == {row(name="*", principal="User:*", op=DESCRIBE)}
    assert await node.listed(pattern=PREFIXED) == {
        row(name="pay", pattern=PREFIXED, op=WRITE), row(name="payx", pattern=PREFIXED, op=WRITE)}
    assert await node.listed(principal="User:*") == {row(name="*", principal="User:*", op=DESCRIBE)}
    assert await node.listed(host="10.0.0.9") == {row(name="pay", perm=DENY, host="10.0.0.9")}
    assert await node.listed(op=READ) == {row(), row(name="payments"), row(name="pay", perm=DENY, host="10.0.0.9")}
    assert await node.listed(perm=DENY) == {row(name="pay", perm=DENY, host="10.0.0.9")}
    assert await node.listed(name="nothing") == set()


async def test_describe_groups_by_resource_pattern():
    """Kafka (DescribeAclsResponse.aclsResources): one entry per resource pattern, with its
    ACLs; the order is a HashMap's (unspecified). Ours: sorted by type, name, pattern.
    Confidence: high."""
    node = await seeded()
    answer = await node.describe()
    keys = [(r["resource_type"], r["resource_name"], r["pattern_type"]) for r in answer["resources"]]
    assert len(keys) == len(set(keys)) == 7
    assert (answer["error_code"], answer["error_message"]) == (OK, None)


@pytest.mark.parametrize("bad", [dict(rtype=99), dict(pattern=99), dict(op=99), dict(perm=99),
                                 dict(rtype=0), dict(op=0)])
async def test_an_unknown_filter_code_is_invalid_request(bad):
    """Kafka: a 0 (UNKNOWN) code fails DescribeAclsRequest/DeleteAclsRequest.normalizeAndValidate
    while parsing (the connection is closed); another unknown code (99) becomes UNKNOWN
    through fromCode and simply matches nothing (error NONE, no resources). DIFFERS ON PURPOSE
    (controller/core/acl.filter_error): DescribeAcls INVALID_REQUEST, DeleteAcls INVALID_REQUEST
    for that filter, nothing deleted. Confidence: high."""
    node = await seeded()
    answer = await node.describe(**bad)
    assert answer["error_code"] == INVALID and answer["resources"] == []
    bad_result, good = await node.delete(flt(**bad), flt(rtype=GROUP))
    assert (bad_result["error_code"], bad_result["matching_acls"]) == (INVALID, [])
    assert good["error_code"] == OK and matched(good) == {row(rtype=GROUP, name="payments", op=ALL)}


async def test_without_an_authorizer_each_api_answers_security_disabled():
    """Kafka (AclApis): no authorizer: DescribeAcls SECURITY_DISABLED "No Authorizer is
    configured on the broker"; CreateAcls and DeleteAcls getErrorResponse of
    SecurityDisabledException("No Authorizer is configured."): every creation / filter.
    Ours had other words (FIXED to Kafka's). Confidence: high."""
    node = Node(authorizer=False)
    code = int(ErrorCode.SECURITY_DISABLED)
    answer = await node.describe()
    assert (answer["error_code"], answer["error_message"], answer["resources"]) == (
        code, "No Authorizer is configured on the broker", [])
    assert await node.create(creation(), creation(name="x")) == [(code, "No Authorizer is configured.")] * 2
    results = await node.delete(flt(), flt())
    assert [(r["error_code"], r["error_message"], r["matching_acls"]) for r in results] == [
        (code, "No Authorizer is configured.", [])] * 2


@pytest.mark.parametrize("key, body", [
    (DESCRIBE_ACLS, flt()), (CREATE_ACLS, {"creations": [creation()]}), (DELETE_ACLS, {"filters": [flt()]})])
async def test_a_principal_without_the_cluster_grant_is_refused_whole(key, body):
    """Kafka (AuthHelper.authorizeClusterOperation: DESCRIBE on CLUSTER for DescribeAcls, ALTER
    for CreateAcls and DeleteAcls): CLUSTER_AUTHORIZATION_FAILED for the whole request (every
    creation / filter), nothing done. Confidence: high."""
    node = await seeded()
    before = node.server.dump()
    answer = await node.ask(key, 3, body, principal="User:mallory")
    codes = ([answer["error_code"]] if key == DESCRIBE_ACLS else
             [r["error_code"] for r in answer.get("results", answer.get("filter_results", []))])
    assert codes == [int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    assert node.server.dump() == before


# ---- DeleteAcls -----------------------------------------------------------------------------


async def test_delete_lists_each_acl_deleted_per_filter_and_empties_znodes():
    """Kafka (AclAuthorizer.deleteAcls, DeleteAclsResponse.filterResult): one result per filter
    in request order, each listing the ACLs it deleted (resource type, name, pattern type and
    entry, error NONE); an ACL two filters match is listed under the first only
    (deletedBindings.getOrElseUpdate); a filter matching nothing is NONE with no ACLs; MATCH
    deletes the literal, wildcard and prefixed ACLs that apply. A resource left without ACLs
    has its znode deleted (updateResourceAcls -> conditionalDelete) and a change notification
    is written for each resource changed. Confidence: high."""
    node = await seeded()
    first, second, nothing, by_match = await node.delete(
        flt(rtype=TOPIC, name="orders", pattern=LITERAL),
        flt(rtype=TOPIC, op=READ, pattern=ANY_PATTERN),
        flt(name="absent"),
        flt(rtype=TOPIC, name="payz", pattern=MATCH),
    )
    assert [r["error_code"] for r in (first, second, nothing, by_match)] == [OK] * 4
    assert matched(first) == {row()}
    assert matched(second) == {row(name="payments"), row(name="pay", perm=DENY, host="10.0.0.9")}
    assert matched(nothing) == set()
    assert matched(by_match) == {row(name="*", principal="User:*", op=DESCRIBE), row(name="pay", pattern=PREFIXED, op=WRITE)}
    assert all(m["error_code"] == OK and m["error_message"] is None
               for r in (first, second, by_match) for m in r["matching_acls"])
    assert await node.listed() == {row(name="payx", pattern=PREFIXED, op=WRITE), row(rtype=GROUP, name="payments", op=ALL)}
    for gone in ("/kafka-acl/Topic/orders", "/kafka-acl/Topic/payments", "/kafka-acl/Topic/pay",
                 "/kafka-acl/Topic/*", "/kafka-acl-extended/prefixed/Topic/pay"):
        assert node.server.exists(gone) is None, gone
    assert node.znode("/kafka-acl-extended/prefixed/Topic/payx") is not None
    assert sorted(node.literal_changes()[-4:]) == sorted(["Topic:orders", "Topic:pay", "Topic:payments", "Topic:*"])
    assert node.extended_changes()[-1] == {"version": 1, "resourceType": "TOPIC", "name": "pay", "patternType": "PREFIXED"}


async def test_delete_keeps_the_other_entries_of_a_resource():
    """Kafka: only the matching entries go; the znode keeps the rest. Confidence: high."""
    node = Node()
    assert await node.create(creation(), creation(op=WRITE), creation(principal="User:bob")) == [(OK, None)] * 3
    [result] = await node.delete(flt(principal="User:alice", op=READ))
    assert matched(result) == {row()}
    assert sorted((e["principal"], e["operation"]) for e in node.znode("/kafka-acl/Topic/orders")) == [
        ("User:alice", "Write"), ("User:bob", "Read")]


async def test_a_zookeeper_failure_on_one_resource_marks_its_acls_only(monkeypatch):
    """Kafka (AclAuthorizer.deleteAcls): each resource is updated in its own try; a failure is
    put on each of that resource's matching ACLs (AclBindingDeleteResult's exception ->
    DeleteAclsMatchingAcl error, UNKNOWN_SERVER_ERROR for a wrapped IllegalStateException),
    the filter's own error stays NONE and the ACLs deleted elsewhere are listed. Ours failed
    the whole request UNKNOWN_SERVER_ERROR, losing the list of what was deleted (FIXED).
    Confidence: high."""
    node = Node()
    assert await node.create(creation(name="a"), creation(name="contended"), creation(name="z")) == [(OK, None)] * 3
    real = zacls.update
    contend(monkeypatch)
    [result] = await node.delete(flt(rtype=TOPIC))
    assert result["error_code"] == OK
    by_name = {m["resource_name"]: m["error_code"] for m in result["matching_acls"]}
    assert by_name == {"a": OK, "contended": UNKNOWN_SERVER_ERROR, "z": OK}
    monkeypatch.setattr(zacls, "update", real)
    assert await node.listed() == {row(name="contended")}
