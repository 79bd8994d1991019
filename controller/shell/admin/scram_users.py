"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): KIP-554, over the
SCRAM credentials in ``/config/users/<user>`` (znodes.users, Kafka's format). Served by every
instance: the credentials live in ZooKeeper (a ZooKeeper-mode Kafka broker that is not the
controller answers Alter NOT_CONTROLLER, as the simulated brokers do, protocol.scram_users;
Kafka's clients send it to the controller anyway). Who may call them (DESCRIBE / ALTER on the
cluster) is the handler's check.

Kafka's rules and words (ZkAdminManager.describeUserScramCredentials / alterUserScramCredentials,
tests/admin/test_scram_groups_probe.py):

    Describe: znodes.scram_users' (the simulated brokers answer the same).
    Alter:    per user, every change or none, found in Kafka's order:
              1. illegal changes, over all the user's changes (an upsertion's error wins over a
                 deletion's): "" -> UNACCEPTABLE_CREDENTIAL "Username must not be empty", "." or
                 ".." (which no znode can be named; Kafka's write fails UNKNOWN_SERVER_ERROR) ->
                 UNACCEPTABLE_CREDENTIAL "Username cannot be stored in ZooKeeper ...", a
                 mechanism other than SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2) ->
                 UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism", iterations outside
                 [4096, 16384] -> UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many
                 iterations";
              2. the same user and mechanism twice -> DUPLICATE_RESOURCE;
              3. deleting a credential that is not there -> RESOURCE_NOT_FOUND;
              4. a credential that cannot be built -> UNACCEPTABLE_CREDENTIAL: an empty salt, or
                 a salted password empty or not the hash's length (stricter than Kafka, which
                 stores the last two and fails the empty key UNKNOWN_SERVER_ERROR).
              The rest: one write of the user's znode (other configs kept) and one change
              notification, conditional on the version read. The client sends the salted
              password, never the password.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from controller.shell.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramError,
    credential_from_salted,
    format_credential,
)
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.scram_users import EMPTY_NAME, MECHANISM_CODES, alter_failure, describe_failure
from znodes import scram_users as zscram
from znodes import users as zusers

# Kafka's words (ZkAdminManager.alterUserScramCredentials).
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW = "Too few iterations"
TOO_MANY = "Too many iterations"
DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"
NOT_THERE_DELETE = "Attempt to delete a user credential that does not exist"
UNSTORABLE_NAME = "Username cannot be stored in ZooKeeper (it would be a relative znode path)"


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    return await zscram.describe(ctx.store, body)


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return describe_failure(body, code, message)


def _illegal(user: str, kind: str, change: dict) -> tuple[ErrorCode, str] | None:
    """Kafka's first check of one change: an empty name, an unknown mechanism, iterations
    outside Kafka's bounds."""
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_NAME
    if not zusers.storable(user):  # '.' or '..': Kafka's write fails UNKNOWN_SERVER_ERROR there
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"{UNSTORABLE_NAME}: {user}"
    if change["mechanism"] not in MECHANISM_CODES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
    if kind == "upsert" and change["iterations"] < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW
    if kind == "upsert" and change["iterations"] > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY
    return None


def _problem(changes: list[tuple[str, dict]], user: str) -> tuple[ErrorCode, str] | None:
    """Steps 1 and 2 of Kafka's order for one user's changes (deletions first, as Kafka maps
    them, so that the last upsertion's error is the one answered)."""
    deletion_error = upsertion_error = None
    for kind, change in changes:
        error = _illegal(user, kind, change)
        if error is not None:
            if kind == "upsert":
                upsertion_error = error
            else:
                deletion_error = error
    if upsertion_error or deletion_error:
        return upsertion_error or deletion_error
    mechanisms = [change["mechanism"] for _, change in changes]
    if len(set(mechanisms)) < len(mechanisms):
        return ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER
    return None


async def _apply(ctx: AdminContext, user: str, changes: list[tuple[str, dict]]) -> tuple[ErrorCode, str] | None:
    """Steps 3 and 4, then the one write: None when written."""
    deletions = [MECHANISM_CODES[c["mechanism"]] for kind, c in changes if kind == "delete"]
    try:
        upserts = {
            MECHANISM_CODES[c["mechanism"]]: format_credential(credential_from_salted(
                MECHANISM_CODES[c["mechanism"]], bytes(c["salted_password"]), bytes(c["salt"]), c["iterations"]))
            for kind, c in changes if kind == "upsert"
        }
        built = None
    except ScramError as e:
        upserts, built = {}, (ErrorCode.UNACCEPTABLE_CREDENTIAL, str(e))
    missing: list[str] = []

    def change(config: dict[str, str]):
        missing[:] = [m for m in deletions if m not in config]
        if missing or built is not None:
            return None
        for m in deletions:
            del config[m]
        config.update(upserts)
        return config

    # One conditional write and one notification, as Kafka's changeConfigs (znodes.users'
    # read-modify-write with its retries; the check for missing credentials is re-made on
    # each attempt, against what is written then).
    await zusers.update_config(ctx.store, user, change)
    if missing:
        return ErrorCode.RESOURCE_NOT_FOUND, NOT_THERE_DELETE
    return built


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    by_user: dict[str, list[tuple[str, dict]]] = {}
    for d in body.get("deletions") or []:
        by_user.setdefault(d["name"], []).append(("delete", d))
    for u in body.get("upsertions") or []:
        by_user.setdefault(u["name"], []).append(("upsert", u))
    results = []
    for user, changes in by_user.items():
        problem = _problem(changes, user)
        if problem is None:
            problem = await _apply(ctx, user, changes)
        if problem is None:
            results.append({"user": user, "error_code": 0, "error_message": None})
        else:
            results.append({"user": user, "error_code": int(problem[0]), "error_message": problem[1]})
    return {"throttle_time_ms": 0, "results": results}


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return alter_failure(body, code, message)


APIS = [
    Api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0, controller_only=False,
        handle=handle_describe, error_response=describe_error),
    Api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0, controller_only=False,
        handle=handle_alter, error_response=alter_error),
]
