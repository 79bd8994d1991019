"""Issue 22 item 8: every state-changing admin request gets one audit entry with its real
outcome, refused ones included - through the real AdminHandler and its authorizer (the real
rule over fixed ACLs: tests/admin/test_topic_acls.FixedAcls)."""

from __future__ import annotations

import logging

import pytest

from controller.core import acl
from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.admin_audit import STATE_CHANGING, AuditedHandler, codes, resources
from controller.shell.listener import CLIENT, SESSION
from controller.shell.role import Role
from tests.admin.test_kip179 import context
from tests.admin.test_topic_acls import CLUSTER, FixedAcls, OpsSession, grant, h, topic  # noqa: F401 - h: fixture

TOPIC_BODY = {"topics": [{"name": "t", "count": 3, "assignments": None}], "timeout_ms": 0, "validate_only": False}
# One request per API the issue found unaudited, and what a principal without any ACL gets on a
# standby: the cluster APIs are refused before their handler (31); the topic ones served only by
# the active controller answer NOT_CONTROLLER; the config ones are refused per resource (29).
REFUSED = {
    19: ({"topics": [{"name": "n", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
          "timeout_ms": 0, "validate_only": False}, {"NOT_CONTROLLER": 1}, ["Topic:n"]),
    20: ({"topic_names": ["t"], "timeout_ms": 0}, {"NOT_CONTROLLER": 1}, ["Topic:t"]),
    37: (TOPIC_BODY, {"NOT_CONTROLLER": 1}, ["Topic:t"]),
    33: ({"resources": [{"resource_type": 2, "resource_name": "t", "configs": [{"name": "retention.ms", "value": "1"}]}],
          "validate_only": False}, {"TOPIC_AUTHORIZATION_FAILED": 1}, ["Topic:t"]),
    44: ({"resources": [{"resource_type": 4, "resource_name": "1",
                         "configs": [{"name": "leader.replication.throttled.rate", "config_operation": 0, "value": "1"}]}],
          "validate_only": False}, {"CLUSTER_AUTHORIZATION_FAILED": 1}, ["Broker:1"]),
    43: ({"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0, 1]}], "timeout_ms": 1000},
         {"CLUSTER_AUTHORIZATION_FAILED": 2}, []),
    7: ({"broker_id": 2}, {"CLUSTER_AUTHORIZATION_FAILED": 1}, []),
    30: ({"creations": [{"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:ops",
                         "host": "*", "operation": 7, "permission_type": 3}]},
         {"CLUSTER_AUTHORIZATION_FAILED": 1}, ["Topic:LITERAL:t Allow User:ops from * to Alter"]),
    31: ({"filters": [{"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                       "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}]},
         {"CLUSTER_AUTHORIZATION_FAILED": 1}, ["*any*:*any*:*any* *any* *any* from *any* to *any*"]),
    51: ({"deletions": [], "upsertions": [{"name": "eve", "mechanism": 2, "iterations": 4096, "salt": b"s" * 32,
                                           "salted_password": b"p" * 64}]},
         {"CLUSTER_AUTHORIZATION_FAILED": 1}, ["upsert User:eve mechanism 2"]),
}


def entries(caplog):
    return [r for r in caplog.records if r.name == "reassignd.audit"]


async def test_every_state_changing_api_is_audited_with_its_refusal(caplog):
    assert set(REFUSED) <= set(STATE_CHANGING)
    ctx = AdminContext(Role(101), ControllerConfig())  # a standby
    ctx.authorizer = FixedAcls()  # no ACL at all: every operation refused
    handler = AuditedHandler(AdminHandler(ctx))
    CLIENT.set("10.0.0.9:4000")
    SESSION.set(OpsSession())
    try:
        with caplog.at_level(logging.INFO, logger="reassignd.audit"):
            for key, (body, _, _) in REFUSED.items():
                await handler.handle({"request_api_key": key, "request_api_version": 0}, body)
    finally:
        SESSION.set(None)
    got = {e.api_key: (e.outcome, e.resources, e.principal) for e in entries(caplog)}
    assert len(entries(caplog)) == len(REFUSED)  # one entry each
    assert got == {key: (outcome, names, "User:ops") for key, (_, outcome, names) in REFUSED.items()}
    # the salted password is nowhere in the entry
    assert all(b"p" * 64 not in repr(vars(e)).encode() and "pppp" not in repr(vars(e)) for e in entries(caplog))


async def test_the_outcome_of_a_served_request_is_each_entry_s_code(h, caplog):
    ctx = context(h)
    ctx.authorizer = FixedAcls(*grant(topic("t"), acl.ALTER))
    handler = AuditedHandler(AdminHandler(ctx))
    SESSION.set(OpsSession())
    body = {"topics": [{"name": "t", "count": 3, "assignments": None}, {"name": "u", "count": 2, "assignments": None}],
            "timeout_ms": 0, "validate_only": False}
    with caplog.at_level(logging.INFO, logger="reassignd.audit"):
        await handler.handle({"request_api_key": 37, "request_api_version": 3}, body)
    (e,) = entries(caplog)
    assert (e.api, e.outcome, e.resources) == ("CreatePartitions", {"REQUEST_TIMED_OUT": 1, "TOPIC_AUTHORIZATION_FAILED": 1},
                                               ["Topic:t", "Topic:u"])


def test_an_entry_inside_an_answer_refused_as_a_whole_is_not_counted_done():
    # AlterPartitionReassignments' shape: a whole-request error around per-partition entries
    refused = {"error_code": 31, "responses": [{"name": "o", "partitions": [{"partition_index": 0, "error_code": 0},
                                                                           {"partition_index": 1, "error_code": 3}]}]}
    assert codes(refused) == [31, 3]
    assert codes({"error_code": 0, "responses": [{"partitions": [{"error_code": 0}]}]}) == [0]
    assert resources(20, {"topics": [{"name": None, "topic_id": "AAAA"}, {"name": "x", "topic_id": None}]}) == [
        "Topic:id=AAAA", "Topic:x"]


@pytest.mark.parametrize("key", sorted(STATE_CHANGING))
def test_every_state_changing_api_is_served(key):
    from controller.shell.admin.registry import build_table

    assert key in build_table()
