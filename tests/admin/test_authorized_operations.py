"""Issue 22 item 7: Metadata's KIP-430 authorised-operations fields computed from the ACLs (they
claimed every operation for everyone), with the real Authorizer over fixed ACLs on the twin."""

from __future__ import annotations

from controller.core import acl
from controller.core.acl import DENY, LITERAL, Acl, Resource
from controller.shell.admin.metadata import CLUSTER_OPERATIONS, OPERATIONS_OMITTED, TOPIC_OPERATIONS, handle_metadata
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.admin.test_topic_acls import CLUSTER, PRINCIPAL, FixedAcls, grant, h, topic  # noqa: F401 - h: fixture


def bits(*operations: int) -> int:
    return sum(1 << op for op in operations)


def body(*names: str, cluster: bool = True) -> dict:
    return {"topics": [{"name": n, "topic_id": None} for n in names], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": cluster, "include_topic_authorized_operations": True}


async def test_each_field_holds_what_the_acls_allow(h):
    ctx = context(h)
    ctx.authorizer = FixedAcls(
        *grant(topic("t"), acl.WRITE, acl.DESCRIBE_CONFIGS),
        *grant(topic("u"), acl.ALTER_CONFIGS, acl.DESCRIBE, acl.DELETE),
        Acl(topic("u"), PRINCIPAL, "*", acl.DELETE, DENY),  # a DENY wins over the ALLOW
        *grant(topic("nope"), acl.DESCRIBE),
        *grant(Resource(acl.TOPIC, "sec", acl.PREFIXED), acl.CREATE),  # CREATE implies no DESCRIBE
    )
    answer = await handle_metadata(ctx, 10, body("t", "u", "nope", "secret"))
    got = {t["name"]: (t["error_code"], t["topic_authorized_operations"]) for t in answer["topics"]}
    assert got == {
        # WRITE implies DESCRIBE; DESCRIBE_CONFIGS as granted
        "t": (0, bits(acl.WRITE, acl.DESCRIBE, acl.DESCRIBE_CONFIGS)),
        "u": (0, bits(acl.DESCRIBE, acl.ALTER_CONFIGS, acl.DESCRIBE_CONFIGS)),
        "nope": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, bits(acl.DESCRIBE)),
        "secret": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, OPERATIONS_OMITTED),
    }
    assert answer["cluster_authorized_operations"] == 0  # no DESCRIBE on the cluster
    ctx.authorizer = FixedAcls(*grant(CLUSTER, acl.ALTER, acl.IDEMPOTENT_WRITE))
    answer = await handle_metadata(ctx, 10, body())
    assert answer["cluster_authorized_operations"] == bits(acl.ALTER, acl.DESCRIBE, acl.IDEMPOTENT_WRITE)


async def test_a_super_user_and_no_authorizer_get_every_supported_operation(h):
    ctx = context(h)
    answer = await handle_metadata(ctx, 10, body("t"))
    assert (answer["topics"][0]["topic_authorized_operations"], answer["cluster_authorized_operations"]) == (
        TOPIC_OPERATIONS, CLUSTER_OPERATIONS)
    ctx.authorizer = FixedAcls()
    ctx.authorizer.super_users = frozenset({PRINCIPAL})
    answer = await handle_metadata(ctx, 10, body("t"))
    assert (answer["topics"][0]["topic_authorized_operations"], answer["cluster_authorized_operations"]) == (
        TOPIC_OPERATIONS, CLUSTER_OPERATIONS)
    # not asked for: "not requested" (INT32_MIN), whoever asks
    answer = await handle_metadata(ctx, 10, {**body("t", cluster=False), "include_topic_authorized_operations": False})
    assert (answer["topics"][0]["topic_authorized_operations"], answer["cluster_authorized_operations"]) == (
        OPERATIONS_OMITTED, OPERATIONS_OMITTED)


def test_the_field_is_the_rule_asked_op_by_op():
    """acl.authorized_operations looks the resource's ACLs up once; it must answer as the rule
    asked operation by operation, across LITERAL, wildcard and PREFIXED ACLs, DENY and ALL."""
    import itertools
    import random

    rng = random.Random(22)
    resources = [topic("t"), topic("*"), Resource(acl.TOPIC, "t", acl.PREFIXED), Resource(acl.TOPIC, "x", LITERAL),
                 CLUSTER]
    principals, hosts = [PRINCIPAL, "User:*", "User:other"], ["*", "10.0.0.9", "10.0.0.1"]
    operations = [acl.ALL, *acl.SUPPORTED_OPERATIONS[acl.TOPIC], *acl.SUPPORTED_OPERATIONS[acl.CLUSTER]]
    for _ in range(300):
        acls = [Acl(rng.choice(resources), rng.choice(principals), rng.choice(hosts), rng.choice(operations),
                    rng.choice((acl.ALLOW, DENY))) for _ in range(rng.randint(0, 6))]
        rules = acl.AclRules(acls, allow_if_no_acl=rng.random() < 0.3)
        for rtype, name in itertools.product((acl.TOPIC, acl.CLUSTER), ("t", "tx", acl.CLUSTER_NAME)):
            expected = bits(*(op for op in acl.SUPPORTED_OPERATIONS[rtype]
                              if rules.allows(PRINCIPAL, "10.0.0.9", op, rtype, name)))
            assert acl.authorized_operations(rules, PRINCIPAL, "10.0.0.9", rtype, name) == expected, acls
