"""Issue 22 item 6: the topic administration APIs authorised as Kafka's KafkaApis does, with the
real rule (controller.core.acl) and the real Authorizer over a fixed set of ACLs, on the
ZooKeeper twin with simulated brokers.

A cluster grant covers CreateTopics (CREATE on the cluster or the topic) but not
CreatePartitions (ALTER on the topic) nor DeleteTopics (DELETE on the topic); a refused topic
writes nothing. CreateTopics v5+ shows a topic's configs only with DESCRIBE_CONFIGS on it."""

from __future__ import annotations

import pytest

from controller.core import acl
from controller.core.acl import ALLOW, LITERAL, Acl, AclRules, Resource
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.create_topics import handle_create
from controller.shell.admin.delete_topics import handle_delete
from controller.shell.admin.handler import AdminHandler
from controller.shell.admin.registry import build_table
from controller.shell.authorizer import API_OPERATIONS, PER_RESOURCE_APIS, Authorizer
from controller.shell.listener import SESSION
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.harness import Harness
from znodes import paths

PRINCIPAL = "User:ops"
CLUSTER = Resource(acl.CLUSTER, acl.CLUSTER_NAME, LITERAL)


class FixedAcls(Authorizer):
    """The real Authorizer (super users, the rule, ``allows_api``) over ACLs given here."""

    def __init__(self, *acls: Acl):
        super().__init__(role=None)
        self._fixed = AclRules(acls)

    async def rules(self) -> AclRules:
        return self._fixed


class OpsSession:
    host = "10.0.0.9"

    def current_principal(self) -> str:
        return PRINCIPAL


def grant(resource: Resource, *operations: int) -> list[Acl]:
    return [Acl(resource, PRINCIPAL, "*", op, ALLOW) for op in operations]


def topic(name: str) -> Resource:
    return Resource(acl.TOPIC, name, LITERAL)


@pytest.fixture
async def h():
    harness = Harness(topics=("t:2:2:64KiB", "u:1:2:64KiB"))
    await harness.start()
    await harness.start_controller(101)
    await harness.tick()
    SESSION.set(OpsSession())
    yield harness
    SESSION.set(None)
    await harness.close()


def ctx_with(h, *acls):
    ctx = context(h)
    ctx.authorizer = FixedAcls(*acls)
    return ctx


# The bodies ask for no wait (timeout_ms 0): what is under way is answered REQUEST_TIMED_OUT at
# once, Kafka's ZooKeeper-mode answer (controller.shell.admin.base.no_wait_answers).
UNDER_WAY = ErrorCode.REQUEST_TIMED_OUT


def partitions_body(name: str, count: int) -> dict:
    return {"topics": [{"name": name, "count": count, "assignments": None}], "timeout_ms": 0, "validate_only": False}


def create_body(*names: str) -> dict:
    return {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                       for n in names], "timeout_ms": 0, "validate_only": False}


async def test_a_cluster_grant_neither_grows_nor_deletes_topics(h):
    # The outside review's principal: ALTER and DESCRIBE on the cluster, DELETE too.
    ctx = ctx_with(h, *grant(CLUSTER, acl.ALTER, acl.DESCRIBE, acl.DELETE))
    before = h.server.dump()
    grown = await handle_create_partitions(ctx, 3, partitions_body("t", 5))
    assert [r["error_code"] for r in grown["results"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    deleted = await handle_delete(ctx, 6, {"topics": [{"name": "u", "topic_id": None}], "timeout_ms": 0})
    assert [r["error_code"] for r in deleted["responses"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert h.server.dump() == before  # nothing written for either


async def test_the_topic_grant_is_what_counts(h):
    ctx = ctx_with(h, *grant(topic("t"), acl.ALTER), *grant(topic("u"), acl.DELETE))
    grown = await handle_create_partitions(ctx, 3, partitions_body("t", 3))
    assert [r["error_code"] for r in grown["results"]] == [UNDER_WAY]
    assert sorted(h.json(paths.topic("t"))["partitions"]) == ["0", "1", "2"]
    deleted = await handle_delete(ctx, 6, {"topics": [{"name": "u", "topic_id": None}], "timeout_ms": 0})
    assert [r["error_code"] for r in deleted["responses"]] == [UNDER_WAY]
    assert h.server.exists(paths.delete_topic("u")) is not None
    # ALTER on t is not DELETE on t, DELETE on u is not ALTER on u
    refused = await handle_delete(ctx, 6, {"topics": [{"name": "t", "topic_id": None}], "timeout_ms": 0})
    assert refused["responses"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


async def test_create_topics_takes_create_on_the_cluster_and_shows_configs_with_describe_configs(h):
    ctx = ctx_with(h, *grant(CLUSTER, acl.CREATE), *grant(topic("shown"), acl.DESCRIBE_CONFIGS))
    waited = {**create_body("shown", "hidden", "twice", "twice"), "timeout_ms": 10_000}
    answer = await handle_create(ctx, 7, waited)
    by_name = [(t["name"], t["error_code"], t["topic_config_error_code"]) for t in answer["topics"]]
    assert by_name == [("shown", 0, 0), ("hidden", 0, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                       ("twice", ErrorCode.INVALID_REQUEST, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                       ("twice", ErrorCode.INVALID_REQUEST, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    shown, hidden = answer["topics"][:2]
    assert shown["num_partitions"] == 1 and shown["configs"]
    assert (hidden["num_partitions"], hidden["replication_factor"], hidden["configs"]) == (-1, -1, None)
    assert h.server.exists(paths.topic("hidden")) is not None  # created all the same
    # Not waited for (timeout_ms 0): REQUEST_TIMED_OUT, and Kafka resets every answer but NONE
    # after the DESCRIBE_CONFIGS rule: no plan, topic_config_error_code NONE, whoever asks.
    answer = await handle_create(ctx, 7, create_body("shown2", "hidden2"))
    assert [(t["error_code"], t["topic_config_error_code"], t["num_partitions"], t["configs"])
            for t in answer["topics"]] == [(UNDER_WAY, 0, -1, None), (UNDER_WAY, 0, -1, None)]
    # CREATE on the topic alone is enough too; without either, refused and not written
    ctx = ctx_with(h, *grant(topic("mine"), acl.CREATE))
    answer = await handle_create(ctx, 4, create_body("mine", "theirs"))
    assert [t["error_code"] for t in answer["topics"]] == [UNDER_WAY, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert h.server.exists(paths.topic("theirs")) is None


def test_every_served_api_has_its_rule():
    """Kafka's table (docs/DESIGN.md section 8) covers every API the listener serves: a cluster
    operation checked before the handler, or a per-resource check in the handler."""
    per_resource = set(PER_RESOURCE_APIS) | {3, 32}  # Metadata, DescribeConfigs: DESCRIBE(_CONFIGS) per topic
    served = set(build_table())
    assert served <= set(API_OPERATIONS) | per_resource
    assert not set(API_OPERATIONS) & per_resource


async def test_a_cluster_api_without_its_operation_is_refused_before_its_handler(h):
    handler = AdminHandler(ctx_with(h, *grant(CLUSTER, acl.DESCRIBE)))
    answer = await handler.handle({"request_api_key": 43, "request_api_version": 2},
                                  {"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0]}],
                                   "timeout_ms": 1000})
    assert answer["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert [p["error_code"] for r in answer["replica_election_results"] for p in r["partition_result"]] == [
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED]


async def test_delete_by_id_hides_the_name_of_a_topic_one_may_not_describe(h):
    """DeleteTopics v6 by id (Kafka 2.8+): without DESCRIBE on the topic the answer carries no
    name (TOPIC_AUTHORIZATION_FAILED, nothing marked), as Kafka's KafkaApis answers; with DELETE
    (which implies DESCRIBE) it is marked and named."""
    from tests.controller.test_topic_ids import TOPIC_ID, with_topic_id
    from znodes.values import topic_uuid

    await with_topic_id(h, "u")
    await h.tick()
    by_id = {"topics": [{"name": None, "topic_id": topic_uuid(TOPIC_ID)}], "timeout_ms": 0}
    hidden = await handle_delete(ctx_with(h, *grant(topic("t"), acl.DELETE)), 6, by_id)
    assert [(r["name"], r["error_code"]) for r in hidden["responses"]] == [(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert h.server.exists(paths.delete_topic("u")) is None
    named = await handle_delete(ctx_with(h, *grant(topic("u"), acl.DELETE)), 6, by_id)
    assert [(r["name"], r["error_code"]) for r in named["responses"]] == [("u", UNDER_WAY)]
    assert h.server.exists(paths.delete_topic("u")) is not None
