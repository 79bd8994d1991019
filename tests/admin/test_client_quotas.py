"""DescribeClientQuotas (48) and AlterClientQuotas (49), KIP-546, as a controller instance serves
them: on the ZooKeeper twin through a standby's admin handler (every instance serves them), each
answer encoded and decoded again, the znodes read back in Kafka's layout. The real-ZooKeeper and
authorizer paths are in tests/security/test_client_quotas_acl.py.
"""

from __future__ import annotations

import json

import pytest

from protocol.client_quotas import MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED
from protocol.errors import ErrorCode
from tests.admin.test_scram_groups_probe import ask, node  # noqa: F401 (node: a standby's handler on the twin)
from znodes import users as zusers
from znodes.twin import TwinServer

DESCRIBE, ALTER = 48, 49


def entry(entity: dict, *ops) -> dict:
    """``ops``: (key, value) to set, (key, None) to remove."""
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
            "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None} for k, v in ops]}


async def alter(handler, *entries, validate_only=False, version=1) -> list[tuple[int, str | None]]:
    answer = await ask(handler, ALTER, version, {"entries": list(entries), "validate_only": validate_only})
    return [(e["error_code"], e["error_message"]) for e in answer["entries"]]


async def describe(handler, components=(), strict=False, version=1) -> dict:
    body = {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
            "strict": strict}
    return await ask(handler, DESCRIBE, version, body)


def found(answer: dict) -> dict:
    assert answer["error_code"] == 0, answer
    return {tuple((e["entity_type"], e["entity_name"]) for e in x["entity"]): {v["key"]: v["value"] for v in x["values"]}
            for x in answer["entries"]}


def znode(server: TwinServer, path: str) -> dict:
    return json.loads(server.read(path)[0])


def notes(server: TwinServer) -> list[str]:
    try:
        names = sorted(server.children("/config/changes"))
    except Exception:
        return []
    return [json.loads(server.read(f"/config/changes/{n}")[0])["entity_path"] for n in names]


async def test_each_entity_shape_is_written_where_kafka_keeps_it_with_its_notification(node):
    handler, server = node
    results = await alter(
        handler,
        entry({"user": "alice"}, ("producer_byte_rate", 1024), ("request_percentage", 12.5)),
        entry({"user": "alice", "client-id": "app"}, ("consumer_byte_rate", 2048)),
        entry({"client-id": "app"}, ("controller_mutation_rate", 10)),
        entry({"user": None}, ("producer_byte_rate", 1e7)),
        entry({"user": None, "client-id": None}, ("consumer_byte_rate", 99)),
        entry({"ip": "10.0.0.1"}, ("connection_creation_rate", 5)),
        entry({"ip": None}, ("connection_creation_rate", 100)),
        entry({"client-id": "a b*/c"}, ("producer_byte_rate", 1)),
    )
    assert results == [(0, None)] * 8
    # LONG and INT keys as whole numbers, DOUBLE ones as Java's Double.toString writes them.
    assert znode(server, "/config/users/alice") == {"version": 1, "config": {
        "producer_byte_rate": "1024", "request_percentage": "12.5"}}
    assert znode(server, "/config/users/alice/clients/app")["config"] == {"consumer_byte_rate": "2048"}
    assert znode(server, "/config/clients/app")["config"] == {"controller_mutation_rate": "10.0"}
    assert znode(server, "/config/users/<default>")["config"] == {"producer_byte_rate": "10000000"}
    assert znode(server, "/config/users/<default>/clients/<default>")["config"] == {"consumer_byte_rate": "99"}
    assert znode(server, "/config/ips/10.0.0.1")["config"] == {"connection_creation_rate": "5"}
    assert znode(server, "/config/ips/<default>")["config"] == {"connection_creation_rate": "100"}
    assert znode(server, "/config/clients/a%20b%2A%2Fc")["config"] == {"producer_byte_rate": "1"}
    assert notes(server) == ["users/alice", "users/alice/clients/app", "clients/app", "users/<default>",
                             "users/<default>/clients/<default>", "ips/10.0.0.1", "ips/<default>", "clients/a%20b%2A%2Fc"]
    assert found(await describe(handler)) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        (("user", "alice"), ("client-id", "app")): {"consumer_byte_rate": 2048.0},
        (("client-id", "app"),): {"controller_mutation_rate": 10.0},
        (("user", None),): {"producer_byte_rate": 1e7},
        (("user", None), ("client-id", None)): {"consumer_byte_rate": 99.0},
        (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
        (("ip", None),): {"connection_creation_rate": 100.0},
        (("client-id", "a b*/c"),): {"producer_byte_rate": 1.0},
    }


async def test_quotas_and_scram_credentials_share_a_users_znode_without_losing_each_other(node):
    handler, server = node
    await zusers.write_credentials(handler.ctx.store, "alice", {"SCRAM-SHA-512": "salt=c2FsdA==,stored_key=a,server_key=b,iterations=4096"})
    assert await alter(handler, entry({"user": "alice"}, ("producer_byte_rate", 10))) == [(0, None)]
    # A removal of a SCRAM mechanism's name through the quota API is no change (Kafka's
    # ZooKeeper mode removed any key it was given, the credential with it).
    assert await alter(handler, entry({"user": "alice"}, ("SCRAM-SHA-512", None))) == [(0, None)]
    config = znode(server, "/config/users/alice")["config"]
    assert set(config) == {"SCRAM-SHA-512", "producer_byte_rate"}
    assert found(await describe(handler)) == {(("user", "alice"),): {"producer_byte_rate": 10.0}}
    await zusers.write_credentials(handler.ctx.store, "alice", {"SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a,server_key=b,iterations=4096"})
    assert znode(server, "/config/users/alice")["config"]["producer_byte_rate"] == "10"
    assert await alter(handler, entry({"user": "alice"}, ("producer_byte_rate", None))) == [(0, None)]
    assert set(znode(server, "/config/users/alice")["config"]) == {"SCRAM-SHA-512", "SCRAM-SHA-256"}
    assert found(await describe(handler)) == {}  # only entities with quotas are listed


async def test_refusals_in_kafkas_words_change_nothing_and_leave_the_other_entries_applied(node):
    handler, server = node
    refused = [
        (entry({}, ("producer_byte_rate", 1)), "Invalid empty client quota entity"),
        ({"entity": [{"entity_type": "user", "entity_name": "a"}, {"entity_type": "user", "entity_name": "b"}],
          "ops": []}, "Invalid empty client quota entity, duplicate entity entry user"),
        (entry({"group": "g"}, ("producer_byte_rate", 1)), "Unhandled client quota entity type: group"),
        (entry({"user": ""}, ("producer_byte_rate", 1)), "Empty user not supported"),
        (entry({"user": "a", "ip": "10.0.0.1"}, ("producer_byte_rate", 1)),
         "Invalid quota entity combination, IP entity should not be used with user/client ID entity."),
        (entry({"ip": "no-such-host.invalid"}, ("connection_creation_rate", 1)),
         "no-such-host.invalid is not a valid IP or resolvable host."),
        (entry({"user": "a"}, ("connection_creation_rate", 1)), "Invalid configuration key connection_creation_rate"),
        (entry({"ip": "10.0.0.2"}, ("producer_byte_rate", 1)), "Invalid configuration key producer_byte_rate"),
        (entry({"user": "a"}, ("SCRAM-SHA-256", 1)), "Invalid configuration key SCRAM-SHA-256"),
        (entry({"user": "a"}, ("producer_byte_rate", 0)), "Quota producer_byte_rate must be greater than 0"),
        (entry({"user": "a"}, ("request_percentage", -1)), "Quota request_percentage must be greater than 0"),
        (entry({"user": "a"}, ("producer_byte_rate", 1.5)), "Configuration producer_byte_rate must be a LONG value"),
        (entry({"user": "a"}, ("producer_byte_rate", 2.0**64)), "Configuration producer_byte_rate must be a LONG value"),
        (entry({"ip": "10.0.0.2"}, ("connection_creation_rate", 2.0**31)),
         "Configuration connection_creation_rate must be a INT value"),
        (entry({"user": "a"}, ("request_percentage", float("inf"))), "Quota request_percentage must be a finite number"),
        (entry({"user": "a"}, ("request_percentage", float("nan"))), "Quota request_percentage must be a finite number"),
        # one good op and one bad: neither is written
        (entry({"user": "a"}, ("consumer_byte_rate", 5), ("producer_byte_rate", -5)),
         "Quota producer_byte_rate must be greater than 0"),
    ]
    good = entry({"client-id": "ok"}, ("producer_byte_rate", 7))
    results = await alter(handler, *(e for e, _ in refused), good)
    assert results == [(int(ErrorCode.INVALID_REQUEST), m) for _, m in refused] + [(0, None)]
    assert found(await describe(handler)) == {(("client-id", "ok"),): {"producer_byte_rate": 7.0}}
    assert notes(server) == ["clients/ok"]
    # A name no znode can have: refused, where Kafka's write fails UNKNOWN_SERVER_ERROR.
    [(code, message)] = await alter(handler, entry({"client-id": ".."}, ("producer_byte_rate", 1)))
    assert (code, message) == (ErrorCode.INVALID_REQUEST,
                               "client-id '..' cannot be stored in ZooKeeper: its znode name would be a relative path")


async def test_ops_apply_in_order_and_a_whole_value_within_kafkas_epsilon_is_a_long(node):
    handler, server = node
    assert await alter(handler, entry({"user": "u"}, ("producer_byte_rate", 5), ("producer_byte_rate", None),
                                      ("consumer_byte_rate", 3), ("consumer_byte_rate", 4.0000000001))) == [(0, None)]
    assert znode(server, "/config/users/u")["config"] == {"consumer_byte_rate": "4"}


async def test_validate_only_checks_everything_and_writes_nothing(node):
    handler, server = node
    results = await alter(handler, entry({"user": "u"}, ("producer_byte_rate", 5)),
                          entry({"user": "u"}, ("producer_byte_rate", 5.5)), validate_only=True)
    assert results == [(0, None), (int(ErrorCode.INVALID_REQUEST), "Configuration producer_byte_rate must be a LONG value")]
    assert not server.exists("/config/users/u") and notes(server) == []


async def test_an_unchanged_quota_writes_nothing_and_notifies_no_one(node):
    handler, server = node
    await alter(handler, entry({"user": "u"}, ("producer_byte_rate", 5)))
    version = server.read("/config/users/u")[1].version
    assert await alter(handler, entry({"user": "u"}, ("producer_byte_rate", 5), ("consumer_byte_rate", None))) == [(0, None)]
    assert server.read("/config/users/u")[1].version == version and notes(server) == ["users/u"]


async def _populate(handler):
    await alter(handler,
                entry({"user": "alice"}, ("producer_byte_rate", 1)),
                entry({"user": None}, ("producer_byte_rate", 2)),
                entry({"user": "alice", "client-id": "app"}, ("producer_byte_rate", 3)),
                entry({"user": None, "client-id": "app"}, ("producer_byte_rate", 4)),
                entry({"client-id": "app"}, ("producer_byte_rate", 5)),
                entry({"client-id": None}, ("producer_byte_rate", 6)),
                entry({"ip": "10.0.0.1"}, ("connection_creation_rate", 7)),
                entry({"ip": None}, ("connection_creation_rate", 8)))


def rates(answer: dict) -> set[float]:
    return {next(iter(v.values())) for v in found(answer).values()}


@pytest.mark.parametrize("components, strict, expected", [
    ((), False, {1, 2, 3, 4, 5, 6, 7, 8}),
    ((), True, set()),
    ((("user", MATCH_EXACT, "alice"),), True, {1}),
    ((("user", MATCH_EXACT, "alice"),), False, {1, 3}),
    ((("user", MATCH_DEFAULT, None),), True, {2}),
    ((("user", MATCH_DEFAULT, None),), False, {2, 4}),
    # SPECIFIED: any entity of the type, the default one too (Kafka's ZooKeeper mode)
    ((("user", MATCH_SPECIFIED, None),), True, {1, 2}),
    ((("user", MATCH_SPECIFIED, None), ("client-id", MATCH_EXACT, "app")), True, {3, 4}),
    ((("user", MATCH_SPECIFIED, None), ("client-id", MATCH_SPECIFIED, None)), False, {3, 4}),
    ((("client-id", MATCH_EXACT, "app"),), False, {3, 4, 5}),
    ((("client-id", MATCH_DEFAULT, None),), True, {6}),
    ((("ip", MATCH_EXACT, "10.0.0.1"),), False, {7}),
    ((("ip", MATCH_DEFAULT, None),), True, {8}),
    ((("ip", MATCH_SPECIFIED, None),), True, {7, 8}),
    ((("user", MATCH_EXACT, "nobody"),), False, set()),
])
async def test_filters_select_as_kafkas_zookeeper_mode_does(node, components, strict, expected):
    handler, _ = node
    await _populate(handler)
    for version in (0, 1):
        assert rates(await describe(handler, components, strict, version=version)) == expected


@pytest.mark.parametrize("components, code, message", [
    ((("user", 0, "a"), ("user", 2, None)), ErrorCode.INVALID_REQUEST, "Duplicate user filter component entity type"),
    ((("client-id", 1, None), ("client-id", 1, None)), ErrorCode.INVALID_REQUEST,
     "Duplicate client filter component entity type"),
    ((("", 2, None),), ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type"),
    ((("group", 2, None),), ErrorCode.UNSUPPORTED_VERSION, "Custom entity type 'group' not supported"),
    ((("ip", 2, None), ("user", 2, None)), ErrorCode.INVALID_REQUEST,
     "Invalid entity filter component combination, IP filter component should not be used with user or clientId "
     "filter component."),
    ((("user", 3, None),), ErrorCode.INVALID_REQUEST, "Unexpected match type: 3"),
    ((("user", 0, None),), ErrorCode.INVALID_REQUEST, "An exact match needs a name"),
])
async def test_a_refused_filter_is_the_whole_requests_error_with_null_entries(node, components, code, message):
    handler, _ = node
    answer = await describe(handler, components)
    assert (answer["error_code"], answer["error_message"], answer["entries"]) == (code, message, None)


async def test_a_stored_value_that_is_not_a_number_fails_the_describe_and_its_removal_repairs_it(node):
    handler, server = node
    store = handler.ctx.store
    await store.create("/config/clients/tool", json.dumps(
        {"version": 1, "config": {"producer_byte_rate": "fast", "other.key": "x"}}).encode(), makepath=True)
    await store.create("/config/clients/kafka", json.dumps(
        {"version": 1, "config": {"consumer_byte_rate": " 1.5E3 ", "request_percentage": "NaN"}}).encode())
    answer = await describe(handler)
    assert answer["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR and answer["entries"] is None
    assert answer["error_message"] == "Unexpected client quota configuration value: clients/tool producer_byte_rate -> fast"
    assert await alter(handler, entry({"client-id": "tool"}, ("producer_byte_rate", None))) == [(0, None)]
    assert znode(server, "/config/clients/tool")["config"] == {"other.key": "x"}  # other configs kept
    got = found(await describe(handler))
    assert got[(("client-id", "kafka"),)]["consumer_byte_rate"] == 1500.0  # Java's spellings read
    assert got[(("client-id", "kafka"),)]["request_percentage"] != got[(("client-id", "kafka"),)]["request_percentage"]


async def test_a_config_znode_that_does_not_decode_is_reported_and_left_as_it_is(node):
    handler, server = node
    await handler.ctx.store.create("/config/users/bob", b"{not json", makepath=True)
    answer = await describe(handler)
    assert answer["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR and "/config/users/bob" in answer["error_message"]
    [(code, message)] = await alter(handler, entry({"user": "bob"}, ("producer_byte_rate", 1)))
    assert code == ErrorCode.UNKNOWN_SERVER_ERROR and "/config/users/bob" in message
    assert server.read("/config/users/bob")[0] == b"{not json"
    assert await alter(handler, entry({"user": "carol"}, ("producer_byte_rate", 1))) == [(0, None)]


async def test_a_resolvable_host_name_is_an_ip_entity_as_kafka_takes_it(node):
    handler, server = node
    assert await alter(handler, entry({"ip": "localhost"}, ("connection_creation_rate", 3)),
                       entry({"ip": "::1"}, ("connection_creation_rate", 4))) == [(0, None)] * 2
    assert znode(server, "/config/ips/localhost")["config"] == {"connection_creation_rate": "3"}
    assert znode(server, "/config/ips/%3A%3A1")["config"] == {"connection_creation_rate": "4"}
    assert found(await describe(handler, [("ip", MATCH_EXACT, "::1")])) == {
        (("ip", "::1"),): {"connection_creation_rate": 4.0}}
