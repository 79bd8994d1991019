"""Issue 23 item 5: every node Metadata lists answers what a broker answers.

Metadata lists every controller instance as a node (that is how clients find ``controller_id``),
so a client that sends a broker request to every node, or to any node, reaches them. These
tests hold that a controller instance, active or standby, serves every API a simulated broker
serves to clients, at the same versions, and answers as a Kafka node that holds nothing:
DescribeLogDirs no directories, ListGroups and ListTransactions nothing, DescribeGroups
NOT_COORDINATOR, the ACL APIs without an authorizer SECURITY_DISABLED,
DescribeConfigs for its own id its own configs; and that each is authorised as Kafka does.
The answers go through the handler and the codec at every version a client may send.
"""

from __future__ import annotations

import pytest

import protocol
from controller.core import acl
from controller.core.acl import ALLOW, LITERAL, Acl, Resource
from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import SESSION
from controller.shell.role import Role
from protocol.errors import ErrorCode
from sim.core import BrokerCore
from sim.replica import ReplicationModel
from sim.versions import served_versions as broker_versions
from tests.admin.test_topic_acls import PRINCIPAL, FixedAcls, OpsSession
from znodes.twin import TwinServer

CONTROLLER_ID = 101
# What only a controller sends a broker (ZooKeeper-mode LeaderAndIsr, StopReplica,
# UpdateMetadata): no client sends them, so a controller instance need not answer them.
CONTROLLER_TO_BROKER = {4, 5, 6}
# The requests the client matrix's clients send to every node or to any node, by key:
# ApiVersions and Metadata (all of them, to each node they connect to), DescribeLogDirs
# (kafka-python's describe_log_dirs), ListGroups (list_groups / list_consumer_groups of
# kafka-python, aiokafka and confluent-kafka), ListTransactions (kafka-python's
# list_transactions), DescribeGroups (to a group's coordinator), DescribeConfigs for a BROKER
# resource (to that broker's id).
FAN_OUT = {18, 3, 35, 16, 66, 15, 32}
CLUSTER = Resource(acl.CLUSTER, acl.CLUSTER_NAME, LITERAL)


def standby() -> AdminHandler:
    """A standby instance's handler: no active controller, a ZooKeeper session on a twin."""
    role = Role(CONTROLLER_ID)
    role.store = TwinServer().connect()
    return AdminHandler(AdminContext(role, ControllerConfig()))


def lone_broker() -> BrokerCore:
    return BrokerCore(1, ReplicationModel(), clock=lambda: 0.0)


async def ask(handler: AdminHandler, key: int, version: int, body: dict) -> dict:
    """The handler's answer, encoded and decoded again: it must be exactly the spec's layout."""
    answer = await handler.handle({"request_api_key": key, "request_api_version": version}, body)
    assert answer is not None, f"api {key} v{version} not served"
    return protocol.decode_body(key, version, "response", protocol.encode_body(key, version, "response", answer))


def test_a_controller_instance_serves_every_api_a_broker_serves_to_clients():
    listener = {v["api_key"]: (v["min_version"], v["max_version"]) for v in standby().api_versions()}
    brokers = broker_versions()
    short = {key: (brokers[key], listener.get(key)) for key in set(brokers) - CONTROLLER_TO_BROKER
             if listener.get(key) != brokers[key]}
    assert not short, f"(broker's range, controller's range) where they differ: {short}"
    assert FAN_OUT <= set(listener)


@pytest.mark.parametrize("version", range(0, 6))
async def test_describe_log_dirs_no_directories(version):
    for topics in (None, [{"topic": "orders", "partitions": [0, 1]}]):
        answer = await ask(standby(), 35, version, {"topics": topics})
        assert answer["results"] == []
        assert answer.get("error_code", 0) == 0


@pytest.mark.parametrize("version", range(0, 6))
async def test_list_groups_none_as_a_simulated_broker_answers(version):
    body = {"states_filter": ["Stable"] if version >= 4 else [], "types_filter": ["classic"] if version >= 5 else []}
    answer = await ask(standby(), 16, version, body)
    assert (answer["error_code"], answer["groups"]) == (0, [])
    assert answer == protocol.decode_body(16, version, "response", protocol.encode_body(
        16, version, "response", lone_broker().handle(16, version, body)))


@pytest.mark.parametrize("version", range(0, 7))
async def test_describe_groups_not_coordinator_as_a_simulated_broker_answers(version):
    body = {"groups": ["orders-app", "audit"], "include_authorized_operations": True}
    answer = await ask(standby(), 15, version, body)
    assert [(g["group_id"], g["error_code"], g["group_state"], g["members"]) for g in answer["groups"]] == [
        ("orders-app", ErrorCode.NOT_COORDINATOR, "", []), ("audit", ErrorCode.NOT_COORDINATOR, "", [])]
    assert answer == protocol.decode_body(15, version, "response", protocol.encode_body(
        15, version, "response", lone_broker().handle(15, version, body)))


@pytest.mark.parametrize("version", range(0, 3))
async def test_list_transactions_none_as_a_simulated_broker_answers(version):
    body = {"state_filters": ["Ongoing", "Sleeping"], "producer_id_filters": [7], "duration_filter": 1000,
            "transactional_id_pattern": "orders-.*"}
    body = {k: v for k, v in body.items() if version >= {"duration_filter": 1, "transactional_id_pattern": 2}.get(k, 0)}
    answer = await ask(standby(), 66, version, body)
    assert (answer["error_code"], answer["unknown_state_filters"], answer["transaction_states"]) == (0, ["Sleeping"], [])
    assert answer == lone_broker().handle(66, version, body)


def _acl_bodies(version: int) -> dict[int, dict]:
    """DescribeAcls, CreateAcls and DeleteAcls bodies; v0 has no pattern types (KIP-290)."""
    pattern = {"pattern_type_filter": 3} if version else {}
    acl_filter = {"resource_type_filter": 2, "resource_name_filter": "orders", **pattern, "principal_filter": None,
                  "host_filter": None, "operation": 1, "permission_type": 1}
    creation = {"resource_type": 2, "resource_name": "orders", **({"resource_pattern_type": 3} if version else {}),
                "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}
    return {29: acl_filter, 30: {"creations": [creation, creation]}, 31: {"filters": [acl_filter]}}


@pytest.mark.parametrize("version", range(0, 4))
async def test_acls_without_an_authorizer_as_a_simulated_broker_answers(version):
    """Kafka's AclApis without an authorizer: SECURITY_DISABLED, the request's error for
    DescribeAcls, each creation's and each filter's for the others (protocol.no_authorizer)."""
    for key, body in _acl_bodies(version).items():
        answer = await ask(standby(), key, version, body)
        assert answer == protocol.decode_body(key, version, "response", protocol.encode_body(
            key, version, "response", lone_broker().handle(key, version, body)))
        codes = [answer["error_code"]] if key == 29 else [r["error_code"] for r in
                                                           answer.get("results", answer.get("filter_results"))]
        assert codes and set(codes) == {ErrorCode.SECURITY_DISABLED}


async def test_list_transactions_refuses_a_pattern_that_does_not_compile():
    answer = await ask(standby(), 66, 2, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
                                          "transactional_id_pattern": "orders-("})
    assert (answer["error_code"], answer["transaction_states"]) == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])


async def test_describe_configs_for_its_own_id_is_its_own():
    answer = await ask(standby(), 32, 4, {"resources": [{"resource_type": 4, "resource_name": str(CONTROLLER_ID),
                                                         "configuration_keys": None}],
                                           "include_synonyms": False, "include_documentation": False})
    (result,) = answer["results"]
    assert result["error_code"] == 0
    configs = {c["name"]: c["value"] for c in result["configs"]}
    assert configs["broker.id"] == str(CONTROLLER_ID)
    assert configs["delete.topic.enable"] == "true"  # the instance's own setting


@pytest.fixture
def ops_session():
    SESSION.set(OpsSession())
    yield
    SESSION.set(None)


def with_acls(*acls: Acl) -> AdminHandler:
    handler = standby()
    handler.ctx.authorizer = FixedAcls(*acls)
    return handler


def grant(resource: Resource, operation: int) -> Acl:
    return Acl(resource, PRINCIPAL, "*", operation, ALLOW)


async def test_describe_log_dirs_needs_describe_on_the_cluster(ops_session):
    refused = await ask(with_acls(grant(CLUSTER, acl.ALTER_CONFIGS)), 35, 4, {"topics": None})
    assert (refused["error_code"], refused["results"]) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    # v0-2 have no request-wide code: Kafka's refusal is an empty answer.
    refused = await ask(with_acls(grant(CLUSTER, acl.ALTER_CONFIGS)), 35, 2, {"topics": None})
    assert (refused["results"], refused["error_code"]) == ([], 0)  # decoded: the field's default
    allowed = await ask(with_acls(grant(CLUSTER, acl.DESCRIBE)), 35, 4, {"topics": None})
    assert (allowed["error_code"], allowed["results"]) == (0, [])


async def test_describe_groups_needs_describe_on_each_group(ops_session):
    handler = with_acls(grant(Resource(acl.GROUP, "mine", LITERAL), acl.DESCRIBE))
    answer = await ask(handler, 15, 6, {"groups": ["mine", "theirs"], "include_authorized_operations": False})
    # Kafka answers the refused groups first.
    assert [(g["group_id"], g["error_code"]) for g in answer["groups"]] == [
        ("theirs", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("mine", ErrorCode.NOT_COORDINATOR)]


async def test_list_groups_needs_no_grant(ops_session):
    answer = await ask(with_acls(), 16, 5, {"states_filter": [], "types_filter": []})
    assert (answer["error_code"], answer["groups"]) == (0, [])
