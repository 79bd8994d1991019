"""Probe: DescribeUserScramCredentials (50), AlterUserScramCredentials (51), ListGroups (16),
DescribeGroups (15), ListTransactions (66) and ApiVersions (18) as a controller instance serves
them, against what a ZooKeeper-mode Kafka broker (2.7-3.x) answers.

Kafka's behaviour was read in its sources (apache/kafka, and the 2.8.2 tree for the ZooKeeper
paths): ``KafkaApis.handleDescribeUserScramCredentialsRequest`` /
``handleAlterUserScramCredentialsRequest`` / ``handleApiVersionsRequest``,
``ZkAdminManager.describeUserScramCredentials`` / ``alterUserScramCredentials``,
``AdminZkClient.fetchAllEntityConfigs`` / ``changeConfigs``, ``ScramFormatter.generateCredential``,
``AlterUserScramCredentialsRequest.getErrorResponse``, ``ApiVersionsRequest.isValid`` /
``getErrorResponse``, ``GroupCoordinator.handleListGroups`` / ``handleDescribeGroup`` /
``validateGroupStatus``, ``TransactionCoordinator.handleListTransactions`` and
``TransactionStateManager.listTransactionStates``. Each test's comment says what Kafka does and
how sure the reading is.

Everything runs on the ZooKeeper twin through the admin handler of a standby instance (the
APIs here are served by every instance), each answer encoded and decoded again; the ApiVersions
frames go through the listener's ``respond`` without a socket.
"""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

import protocol
from controller.core.config import ControllerConfig
from controller.shell.admin import scram_users
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import AdminListener
from controller.shell.role import Role
from protocol.errors import ErrorCode
from znodes import users as zusers
from znodes.twin import TwinServer

SHA256, SHA512 = 1, 2
DESCRIBE, ALTER = 50, 51
# Kafka's Errors.UNKNOWN_SERVER_ERROR.message(), what ZkAdminManager puts in a per-user result
# when reading a stored credential throws.
KAFKA_UNKNOWN_SERVER_ERROR = "The server experienced an unexpected error when processing the request."


def upsert(name, mechanism=SHA512, iterations=4096, password="pw", salt=b"salt-salt", salted=None):
    digest = {SHA256: "sha256", SHA512: "sha512"}.get(mechanism, "sha512")
    if salted is None:
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt or b"x", max(iterations, 1))
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


def delete(name, mechanism=SHA512):
    return {"name": name, "mechanism": mechanism}


@pytest.fixture
def node():
    """A standby instance's handler over a ZooKeeper twin: (handler, twin server)."""
    server = TwinServer()
    role = Role(101)
    role.store = server.connect()
    return AdminHandler(AdminContext(role, ControllerConfig())), server


async def ask(handler: AdminHandler, key: int, version: int, body: dict) -> dict:
    answer = await handler.handle({"request_api_key": key, "request_api_version": version}, body)
    assert answer is not None, f"api {key} v{version} not served"
    return protocol.decode_body(key, version, "response", protocol.encode_body(key, version, "response", answer))


async def alter(handler, deletions=(), upsertions=()) -> dict:
    answer = await ask(handler, ALTER, 0, {"deletions": list(deletions), "upsertions": list(upsertions)})
    return {r["user"]: (r["error_code"], r["error_message"]) for r in answer["results"]}


async def describe(handler, names) -> dict:
    users = None if names is None else [{"name": n} for n in names]
    return await ask(handler, DESCRIBE, 0, {"users": users})


def notifications(server: TwinServer) -> list[dict]:
    try:
        names = sorted(server.children("/config/changes"))
    except Exception:
        return []
    return [json.loads(server.read(f"/config/changes/{n}")[0]) for n in names]


def user_znode(server: TwinServer, sanitized: str) -> dict:
    return json.loads(server.read(f"/config/users/{sanitized}")[0])


# ---------------------------------------------------------------------------------------------
# DescribeUserScramCredentials (50)


async def test_describe_names_an_empty_user_resource_not_found_and_answers_the_others(node):
    # Kafka: ZkAdminManager.describeUserScramCredentials puts every empty name in ``illegalUsers``
    # and answers it RESOURCE_NOT_FOUND "Username must not be empty"; the other users are
    # described as usual and the request's own error is NONE. Confidence: high (source read,
    # 2.8.2 and 3.x alike). Before: the empty name reached the znode path's sanitizer, which
    # raised, and the whole request failed UNKNOWN_SERVER_ERROR with no results.
    handler, _ = node
    await alter(handler, upsertions=[upsert("alice")])
    answer = await describe(handler, ["", "alice"])
    assert answer["error_code"] == 0
    assert [(r["user"], r["error_code"], r["error_message"]) for r in answer["results"]] == [
        ("", ErrorCode.RESOURCE_NOT_FOUND, "Username must not be empty"),
        ("alice", 0, None),
    ]
    # an empty name given twice is still "must not be empty", not a duplicate
    answer = await describe(handler, ["", ""])
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [("", ErrorCode.RESOURCE_NOT_FOUND)]


async def test_describe_a_user_named_twice_is_one_duplicate_resource_result_naming_the_user(node):
    # Kafka: a user named more than once gets ONE result (``users.get.distinct``), DUPLICATE_RESOURCE,
    # "Cannot describe SCRAM credentials for the same user twice in a single request: <user>",
    # whether it has credentials or not; results follow the request's order. Confidence: high.
    # Before: the code was right, the message lacked ": <user>".
    handler, _ = node
    await alter(handler, upsertions=[upsert("alice")])
    answer = await describe(handler, ["bob", "alice", "bob", "alice"])
    assert [(r["user"], r["error_code"], r["error_message"], r["credential_infos"]) for r in answer["results"]] == [
        ("bob", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: bob", []),
        ("alice", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: alice", []),
    ]


async def test_describe_a_user_without_credentials_is_resource_not_found_naming_the_user(node):
    # Kafka: a named user whose config holds no SCRAM mechanism (no znode, or only quotas) is
    # RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not exist: <user>".
    # Confidence: high. Before: the code was right, the message lacked ": <user>".
    handler, server = node
    await handler.ctx.store.create("/config/users/quota-only",
                                   zusers.encode_user_config({"producer_byte_rate": "1024"}), makepath=True)
    await alter(handler, upsertions=[upsert("alice", mechanism=SHA256, iterations=8192)])
    answer = await describe(handler, ["zed", "quota-only", "alice"])
    assert [(r["user"], r["error_code"], r["error_message"], r["credential_infos"]) for r in answer["results"]] == [
        ("zed", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: zed", []),
        ("quota-only", ErrorCode.RESOURCE_NOT_FOUND,
         "Attempt to describe a user credential that does not exist: quota-only", []),
        ("alice", 0, None, [{"mechanism": SHA256, "iterations": 8192}]),
    ]


@pytest.mark.parametrize("users", [None, []])
async def test_describe_naming_no_user_lists_every_user_with_a_credential_sorted(node, users):
    # Kafka: ``users`` null or empty describes all: every /config/users child whose config has a
    # SCRAM mechanism, sorted by name, NONE each; quota-only users are left out. Confidence: high.
    # DIFFERS ON PURPOSE (Kafka's bug): Kafka takes the names from
    # AdminZkClient.fetchAllEntityConfigs, i.e. the znode names, still sanitized, so ZooKeeper-mode
    # Kafka lists "a@b" as "a%40b" (a name the same API then answers RESOURCE_NOT_FOUND);
    # this project lists the user's own name. Confidence in Kafka's behaviour: high (the
    # describe-all path never calls Sanitizer.desanitize).
    handler, _ = node
    await handler.ctx.store.create("/config/users/quota-only",
                                   zusers.encode_user_config({"producer_byte_rate": "1024"}), makepath=True)
    await alter(handler, upsertions=[upsert("zoe"), upsert("a@b", mechanism=SHA256), upsert("a@b")])
    answer = await describe(handler, users)
    assert answer["error_code"] == 0 and answer["error_message"] is None
    assert [(r["user"], r["error_code"], r["credential_infos"]) for r in answer["results"]] == [
        ("a@b", 0, [{"mechanism": SHA256, "iterations": 4096}, {"mechanism": SHA512, "iterations": 4096}]),
        ("zoe", 0, [{"mechanism": SHA512, "iterations": 4096}]),
    ]


async def test_describe_a_credential_that_does_not_parse_is_that_users_unknown_server_error(node):
    # Kafka: addToResultsIfHasScramCredential catches what ScramCredentialUtils.credentialFromString
    # throws (IllegalArgumentException) and answers that user UNKNOWN_SERVER_ERROR with the
    # error's own message; the other users are described. Confidence: medium-high (source read;
    # "should generally never happen, but just in case bad data gets in"). Before: the bad
    # credential was skipped silently, so the user read as RESOURCE_NOT_FOUND and was left out
    # of the describe-all answer.
    handler, _ = node
    await handler.ctx.store.create("/config/users/broken",
                                   zusers.encode_user_config({"SCRAM-SHA-512": "not a credential"}), makepath=True)
    await alter(handler, upsertions=[upsert("alice")])
    named = await describe(handler, ["broken", "alice"])
    assert [(r["user"], r["error_code"], r["error_message"]) for r in named["results"]] == [
        ("broken", ErrorCode.UNKNOWN_SERVER_ERROR, KAFKA_UNKNOWN_SERVER_ERROR), ("alice", 0, None)]
    every = await describe(handler, None)
    assert [(r["user"], r["error_code"]) for r in every["results"]] == [
        ("alice", 0), ("broken", ErrorCode.UNKNOWN_SERVER_ERROR)]


# ---------------------------------------------------------------------------------------------
# AlterUserScramCredentials (51)


async def test_alter_an_empty_user_name_is_unacceptable_credential(node):
    # Kafka: an upsertion or deletion with an empty name is illegal, UNACCEPTABLE_CREDENTIAL
    # "Username must not be empty", one result for "" however many entries. Confidence: high.
    handler, server = node
    assert await alter(handler, deletions=[delete("")], upsertions=[upsert(""), upsert("", mechanism=9)]) == {
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")}
    assert notifications(server) == []


async def test_alter_an_unknown_mechanism_is_unsupported_sasl_mechanism(node):
    # Kafka: ScramMechanism.fromType gives UNKNOWN for anything but 1 and 2 (0 included); such an
    # upsertion or deletion is UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism" (no suffix),
    # and the user's other, legal, changes are not applied. Confidence: high.
    # Before: the message was "Unknown SCRAM mechanism <n>".
    handler, server = node
    assert await alter(handler, upsertions=[upsert("a", mechanism=0), upsert("b", mechanism=3)],
                       deletions=[delete("c", mechanism=9)]) == {
        "a": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "b": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "c": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    }
    assert await alter(handler, upsertions=[upsert("d"), upsert("d", mechanism=7)]) == {
        "d": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")}
    assert notifications(server) == []


async def test_alter_iterations_outside_4096_to_16384(node):
    # Kafka: below the mechanism's minIterations (4096 for both SCRAM mechanisms) is
    # UNACCEPTABLE_CREDENTIAL "Too few iterations", above 16384 "Too many iterations"; both
    # bounds are accepted. Confidence: high. Before: the code was right, the message was
    # "iterations must be in [4096, 16384], not N".
    handler, _ = node
    assert await alter(handler, upsertions=[upsert("few", iterations=4095), upsert("many", iterations=16385),
                                            upsert("low", iterations=4096), upsert("high", iterations=16384)]) == {
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "low": (0, None),
        "high": (0, None),
    }


async def test_alter_an_upsertions_error_wins_over_a_deletions(node):
    # Kafka: illegalRequestsByUser is (illegal deletions).toMap ++ (illegal upsertions).toMap, so
    # a user with both an unknown-mechanism deletion and a bad upsertion is answered the
    # upsertion's error (the right-hand map wins). Confidence: high (Scala ``++`` semantics).
    # Before: the deletion's UNSUPPORTED_SASL_MECHANISM.
    handler, _ = node
    assert await alter(handler, deletions=[delete("u", mechanism=5)], upsertions=[upsert("u", iterations=100)]) == {
        "u": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")}


async def test_alter_an_illegal_change_is_reported_before_a_duplicate(node):
    # Kafka: the illegal changes (empty name, unknown mechanism, iterations) of a user are found
    # first, over all its changes; only users with none are checked for duplicates. Confidence:
    # high. Before: the changes were checked in order, and the duplicate came first.
    handler, _ = node
    assert await alter(handler, deletions=[delete("u")],
                       upsertions=[upsert("u"), upsert("u", mechanism=SHA256, iterations=99999)]) == {
        "u": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")}


async def test_alter_the_same_user_and_mechanism_twice_is_duplicate_resource_and_changes_nothing(node):
    # Kafka: a (user, mechanism) pair appearing twice among the upsertions and deletions -
    # a deletion and an upsertion of the same mechanism included - is DUPLICATE_RESOURCE "A user
    # credential cannot be altered twice in the same request", and none of that user's changes is
    # applied; other users are. Confidence: high.
    handler, server = node
    await alter(handler, upsertions=[upsert("alice", password="old")])
    before = server.read("/config/users/alice")[0]
    seen = len(notifications(server))
    assert await alter(handler, deletions=[delete("alice")],
                       upsertions=[upsert("alice", password="new"), upsert("bob")]) == {
        "alice": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "bob": (0, None),
    }
    assert await alter(handler, upsertions=[upsert("carol"), upsert("carol", iterations=8192)]) == {
        "carol": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")}
    assert server.read("/config/users/alice")[0] == before
    assert [n["entity_path"] for n in notifications(server)[seen:]] == ["users/bob"]


async def test_alter_deleting_a_credential_that_is_not_there_is_resource_not_found(node):
    # Kafka: RESOURCE_NOT_FOUND "Attempt to delete a user credential that does not exist" (no
    # mechanism named), and the user's other changes in the request are not applied.
    # Confidence: high. Before: the message ended ": SCRAM-SHA-256".
    handler, server = node
    assert await alter(handler, deletions=[delete("dan", mechanism=SHA256)], upsertions=[upsert("dan")]) == {
        "dan": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")}
    assert server.exists("/config/users/dan") is None and notifications(server) == []


async def test_alter_writes_each_user_once_in_kafkas_layout_with_one_notification(node):
    # Kafka: per user, the changes are applied to the fetched config (other keys, quotas, kept)
    # and written by ONE AdminZkClient.changeConfigs: /config/users/<Sanitizer.sanitize(user)>
    # = {"version":1,"config":{...}} and one /config/changes/config_change_<seq> with
    # {"version":2,"entity_path":"users/<sanitized>"}. Confidence: high.
    # Before: a deletion plus an upsertion for one user were two writes and two notifications
    # (and not atomic: the deletion could land without the upsertion).
    handler, server = node
    await handler.ctx.store.create("/config/users/a%20b", zusers.encode_user_config(
        {"producer_byte_rate": "1024"}), makepath=True)
    assert await alter(handler, upsertions=[upsert("a b", mechanism=SHA256)]) == {"a b": (0, None)}
    seen = len(notifications(server))
    assert await alter(handler, deletions=[delete("a b", mechanism=SHA256)],
                       upsertions=[upsert("a b", mechanism=SHA512, iterations=8192)]) == {"a b": (0, None)}
    doc = user_znode(server, "a%20b")
    assert doc["version"] == 1 and set(doc["config"]) == {"producer_byte_rate", "SCRAM-SHA-512"}
    assert doc["config"]["SCRAM-SHA-512"].endswith(",iterations=8192")
    assert notifications(server)[seen:] == [{"version": 2, "entity_path": "users/a%20b"}]


async def test_alter_deleting_the_last_credential_keeps_the_znode_with_the_other_configs(node):
    # Kafka: changeConfigs writes whatever is left, an empty config included; the znode stays.
    # The user then describes as RESOURCE_NOT_FOUND. Confidence: high.
    handler, server = node
    await alter(handler, upsertions=[upsert("eve")])
    assert await alter(handler, deletions=[delete("eve")]) == {"eve": (0, None)}
    assert user_znode(server, "eve") == {"version": 1, "config": {}}
    assert (await describe(handler, ["eve"]))["results"][0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND


async def test_alter_salt_and_salted_password_checks_are_stricter_than_kafka(node):
    # Kafka: nothing checks salt or salted password. ScramFormatter.generateCredential(salt,
    # saltedPassword, iterations) HMACs with the salted password as key: an EMPTY one makes
    # javax.crypto.spec.SecretKeySpec throw IllegalArgumentException("Empty key"), answered
    # UNKNOWN_SERVER_ERROR with Errors' generic message; an empty salt, or a salted password of
    # the wrong length for the hash, is stored (the latter can never log in). Confidence: high
    # for the empty key (SecretKeySpec's contract), high for the rest (no check in the path).
    # DIFFERS ON PURPOSE: this project refuses all three UNACCEPTABLE_CREDENTIAL
    # (controller.shell.security.scram.credential_from_salted), checked where Kafka builds the
    # credential: after the illegal, duplicate and missing-deletion checks.
    handler, server = node
    answer = await alter(handler, upsertions=[upsert("p", salted=b""), upsert("q", salt=b""),
                                              upsert("r", salted=b"\x01" * 32)])
    assert {u: code for u, (code, _) in answer.items()} == {
        "p": ErrorCode.UNACCEPTABLE_CREDENTIAL, "q": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "r": ErrorCode.UNACCEPTABLE_CREDENTIAL}
    assert notifications(server) == []
    # found after a duplicate, as Kafka finds a credential it cannot build
    assert await alter(handler, upsertions=[upsert("s", salted=b""), upsert("s", salted=b"")]) == {
        "s": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")}


async def test_alter_error_response_lists_each_user_once_sorted(node):
    # Kafka: AlterUserScramCredentialsRequest.getErrorResponse (authorisation refused, NOT_CONTROLLER,
    # ...) answers the distinct users of the deletions and upsertions, SORTED, each with the
    # error. Confidence: high. Before: deletions' users first, in request order.
    body = {"deletions": [delete("zed"), delete("amy")], "upsertions": [upsert("bob"), upsert("zed")]}
    answer = scram_users.alter_error(0, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "refused")
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [
        ("amy", 31), ("bob", 31), ("zed", 31)]


async def test_alter_on_a_standby_instance_is_applied(node):
    # Kafka: handleAlterUserScramCredentialsRequest answers NOT_CONTROLLER (every user) on a broker
    # that is not the active controller, before authorising; KafkaAdminClient sends the request
    # to the controller (ControllerNodeProvider). Confidence: high.
    # DIFFERS ON PURPOSE (scram_users' module doc: "Served by every instance: the credentials
    # live in ZooKeeper"): any instance writes them with a version check, so a client that
    # sends it to another node is served; the Java client sends it to controller_id anyway.
    handler, _ = node
    assert not handler.ctx.role.is_active
    assert await alter(handler, upsertions=[upsert("frank")]) == {"frank": (0, None)}


# ---------------------------------------------------------------------------------------------
# ListGroups (16), DescribeGroups (15), ListTransactions (66) on a node coordinating nothing


@pytest.mark.parametrize("version", range(0, 6))
async def test_list_groups_from_a_node_coordinating_no_group_is_empty_without_error(node, version):
    # Kafka (ZooKeeper mode): every broker runs a GroupCoordinator; handleListGroups answers
    # COORDINATOR_NOT_AVAILABLE only while it is not active (start-up/shut-down) and
    # COORDINATOR_LOAD_IN_PROGRESS while loading; a running broker that owns no
    # __consumer_offsets partition answers NONE and no groups, whatever the state (v4) or type
    # (v5) filters. Confidence: high. Ours: the same.
    handler, _ = node
    body = {"states_filter": ["Stable", "Bogus"], "types_filter": ["classic", "nonsense"]}
    answer = await ask(handler, 16, version, body)
    assert answer["error_code"] == 0 and answer["groups"] == []


@pytest.mark.parametrize("version", range(0, 7))
async def test_describe_groups_from_a_non_coordinator_is_not_coordinator_per_group(node, version):
    # Kafka: handleDescribeGroup -> validateGroupStatus: INVALID_GROUP_ID only for a null id
    # (DescribeGroups allows ""), COORDINATOR_NOT_AVAILABLE only while inactive, else
    # NOT_COORDINATOR for a group whose partition this broker does not own, with
    # GroupCoordinator.EmptyGroup: state "", protocol type "", protocol "", no members;
    # authorized_operations is only filled for NONE (stays INT32_MIN). Every id asked is
    # answered, a repeated one each time. Confidence: high. Ours: the same.
    handler, _ = node
    answer = await ask(handler, 15, version, {"groups": ["g", "", "g"], "include_authorized_operations": True})
    assert [(g["group_id"], g["error_code"], g["group_state"], g["protocol_type"], g["protocol_data"],
             g["members"]) for g in answer["groups"]] == [
        (gid, ErrorCode.NOT_COORDINATOR, "", "", "", []) for gid in ("g", "", "g")]
    if version >= 3:
        assert {g["authorized_operations"] for g in answer["groups"]} == {-(2**31)}


@pytest.mark.parametrize("version", range(0, 3))
async def test_list_transactions_from_a_node_coordinating_none_is_empty(node, version):
    # Kafka: TransactionCoordinator.handleListTransactions (COORDINATOR_NOT_AVAILABLE only while
    # inactive) -> TransactionStateManager.listTransactionStates: with nothing loading, NONE, the
    # state filters TransactionState.fromName does not know (exact, case-sensitive names) in
    # unknown_state_filters, and no transactions on a broker owning no __transaction_state
    # partition. The filters arrive as a Scala Set (``filteredStates: Set[String]``), so a
    # repeated unknown filter is listed once. Confidence: high for the Set (the method's
    # signature), medium for the order of several unknown filters (a Scala Set keeps insertion
    # order up to 4 elements). Before: a repeated unknown filter was listed as many times.
    handler, _ = node
    body = {"state_filters": ["Ongoing", "Bogus", "ongoing", "Bogus"], "producer_id_filters": [1, 1],
            "duration_filter": -1, "transactional_id_pattern": None}
    answer = await ask(handler, 66, version, body)
    assert answer["error_code"] == 0 and answer["transaction_states"] == []
    assert answer["unknown_state_filters"] == ["Bogus", "ongoing"]


# ---------------------------------------------------------------------------------------------
# ApiVersions (18)


@pytest.mark.parametrize("name, software_version, valid", [
    ("kafka-python", "2.0.2", True), ("a", "1", True), ("librdkafka", "2.3.0-RC1", True),
    ("", "1", False), ("x", "", False), ("bad name", "1", False), ("-a", "1", False), ("a-", "1", False),
    ("a_b", "1", False),
])
async def test_api_versions_v3_checks_the_client_software_like_kafka(node, name, software_version, valid):
    # Kafka: ApiVersionsRequest.isValid (v3+): both fields must match
    # [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? - so not empty, no '_', no space, no leading or
    # trailing '-' or '.'; else KafkaApis.handleApiVersionsRequest answers INVALID_REQUEST.
    # Confidence: high. Ours: the same rule (controller/shell/admin/handler.py).
    handler, _ = node
    for version in (3, 4):
        answer = await ask(handler, 18, version, {"client_software_name": name,
                                                  "client_software_version": software_version})
        assert answer["error_code"] == (0 if valid else ErrorCode.INVALID_REQUEST)
    assert (await ask(handler, 18, 2, {}))["error_code"] == 0  # v0-2 carry no software fields


async def test_api_versions_invalid_request_carries_no_api_keys(node):
    # Kafka: for an invalid v3+ request, handleApiVersionsRequest answers
    # apiVersionRequest.getErrorResponse(throttle, INVALID_REQUEST): error_code and throttle_time_ms
    # only, api_keys EMPTY (getErrorResponse adds the ApiVersions key only for UNSUPPORTED_VERSION).
    # Confidence: high (KafkaApis 2.8-3.x and ApiVersionsRequest read). Ours: INVALID_REQUEST
    # with every served API listed (AdminHandler.handle, controller/shell/admin/handler.py; the
    # same list is asserted by tests/admin/test_listener.py) - not in this probe's files.
    handler, _ = node
    answer = await ask(handler, 18, 3, {"client_software_name": "bad name", "client_software_version": "1"})
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST
    assert answer["api_keys"] == []


def _api_versions_frame(version: int, correlation_id: int) -> bytes:
    """An ApiVersions request of a version no codec knows: header v2 (what Kafka's
    requestHeaderVersion gives ApiVersions v3+), an empty body."""
    client = b"probe"
    payload = struct.pack(">hhih", 18, version, correlation_id, len(client)) + client + b"\x00" + b"\x00\x00\x00"
    return protocol.size_prefixed(payload)


async def _unsupported_answer(handler) -> tuple[dict, dict]:
    listener = AdminListener("127.0.0.1", 0, handler)  # never started: respond() alone
    frame = await listener.respond(_api_versions_frame(99, 4242))
    return protocol.decode_response(18, 0, frame)


async def test_api_versions_newer_than_served_is_answered_v0_unsupported_version(node):
    # Kafka: RequestContext.parseRequest turns an ApiVersions request of an unsupported version
    # into a v0 request without parsing its body; handleApiVersionsRequest answers
    # UNSUPPORTED_VERSION in the v0 layout (response header v0, no throttle time), and api_keys
    # holds ApiVersions' own range so the client retries with the newest it shares. Confidence:
    # high. Ours (controller/shell/listener.py): the same, the ApiVersions range included.
    handler, _ = node
    header, body = await _unsupported_answer(handler)
    assert header["correlation_id"] == 4242 and body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert {"api_key": 18, "min_version": 0, "max_version": 4} in body["api_keys"]


async def test_api_versions_unsupported_version_lists_api_versions_alone(node):
    # Kafka: ApiVersionsRequest.getErrorResponse(UNSUPPORTED_VERSION) sets api_keys to ONE entry,
    # ApiVersionsResponse.toApiVersion(ApiKeys.API_VERSIONS) ("Starting from Apache Kafka 2.4
    # (KIP-511), ApiKeys field is populated with the supported versions of the
    # ApiVersionsRequest"). Confidence: high. Ours: every served API
    # (controller/shell/listener.py AdminListener.respond, and sim/server.py likewise) - harmless
    # to clients, which only look for key 18, but not Kafka's answer.
    handler, _ = node
    _, body = await _unsupported_answer(handler)
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


# ---------------------------------------------------------------------------------------------
# User names no znode can carry ('.' and '..' sanitize to themselves; ZooKeeper refuses them)


@pytest.mark.parametrize("name", [".", ".."])
async def test_a_user_no_znode_can_name_is_refused_clearly(node, name):
    # Kafka: its write fails on ZooKeeper's path check, a per-user UNKNOWN_SERVER_ERROR; here the
    # name is refused up front (UNACCEPTABLE_CREDENTIAL, saying why), nothing written, and a
    # describe finds no credential, as for any stranger. The handler raised before (the request
    # answered UNKNOWN_SERVER_ERROR as a whole, the other users' results lost).
    handler, server = node
    assert (await alter(handler, upsertions=[upsert(name), upsert("alice")])) == {
        name: (ErrorCode.UNACCEPTABLE_CREDENTIAL, f"{scram_users.UNSTORABLE_NAME}: {name}"), "alice": (0, None)}
    assert [n["entity_path"] for n in notifications(server)] == ["users/alice"]
    answer = await describe(handler, [name, "alice"])
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [
        (name, ErrorCode.RESOURCE_NOT_FOUND), ("alice", ErrorCode.NONE)]


@pytest.mark.parametrize("name", ["", ".", ".."])
async def test_a_login_with_an_unstorable_name_finds_no_credential(node, name):
    _, server = node
    assert await zusers.read_credentials(server.connect(), name) == {}


@pytest.mark.parametrize("name", [".", ".."])
def test_the_users_command_refuses_an_unstorable_name(name, capsys):
    from controller.shell.security.users import main

    assert main(["add", "--zookeeper", "127.0.0.1:1", "--user", name, "--password", "pw"]) == 2
    assert "can be stored under" in capsys.readouterr().err


def test_a_whole_describe_error_carries_one_result_per_user_named():
    # Kafka: DescribeUserScramCredentialsRequest.getErrorResponse sets the request's code and
    # message and adds one result with them per user the request names (the user left at its
    # default ""), repeats included; a request naming no user gets none. Confidence: high
    # (source read). Before: no results at all.
    body = {"users": [{"name": "alice"}, {"name": "bob"}, {"name": "alice"}]}
    answer = scram_users.describe_error(0, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "refused")
    assert (answer["error_code"], answer["error_message"]) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "refused")
    assert [(r["user"], r["error_code"], r["error_message"], r["credential_infos"]) for r in answer["results"]] == [
        ("", ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "refused", [])] * 3
    assert scram_users.describe_error(0, {"users": None}, ErrorCode.NOT_CONTROLLER, None)["results"] == []
    protocol.encode_body(DESCRIBE, 0, "response", answer)  # the codec carries it
