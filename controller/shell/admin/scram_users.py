"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): KIP-554, over the
SCRAM credentials in ``/config/users/<user>`` (znodes.users, Kafka's format). Served by every
instance: the credentials live in ZooKeeper. Who may call them (DESCRIBE / ALTER on the
cluster) is the handler's check.

    Describe: no users (null or empty) -> every user with a credential; a named user without
              one -> RESOURCE_NOT_FOUND; a user named twice -> DUPLICATE_RESOURCE.
    Alter:    per user, every change or none: an empty name or iterations outside
              [4096, 16384] -> UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256 (1)
              / SCRAM-SHA-512 (2) -> UNSUPPORTED_SASL_MECHANISM, the same user and mechanism
              twice -> DUPLICATE_RESOURCE, deleting a credential that is not there ->
              RESOURCE_NOT_FOUND. The client sends the salted password, never the password.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from controller.shell.security.scram import (
    ScramError,
    credential_from_salted,
    format_credential,
    parse_credential,
)
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import users as zusers

# KIP-554's ScramMechanism codes.
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CODE_OF = {name: code for code, name in MECHANISM_CODES.items()}


def _infos(texts: dict[str, str]) -> list[dict]:
    out = []
    for mechanism, text in sorted(texts.items()):
        try:
            iterations = parse_credential(mechanism, text).iterations
        except ScramError:
            continue
        out.append({"mechanism": CODE_OF[mechanism], "iterations": iterations})
    return out


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    store = ctx.store
    names = [u["name"] for u in body.get("users") or []]
    results = []
    if not names:
        for user in await zusers.list_users(store):
            results.append({"user": user, "error_code": 0, "error_message": None,
                            "credential_infos": _infos(await zusers.read_credentials(store, user))})
    else:
        for user in dict.fromkeys(names):
            if names.count(user) > 1:
                results.append({"user": user, "error_code": int(ErrorCode.DUPLICATE_RESOURCE),
                                "error_message": "Cannot describe SCRAM credentials for the same user twice in a single request",
                                "credential_infos": []})
                continue
            infos = _infos(await zusers.read_credentials(store, user))
            if not infos:
                results.append({"user": user, "error_code": int(ErrorCode.RESOURCE_NOT_FOUND),
                                "error_message": "Attempt to describe a user credential that does not exist",
                                "credential_infos": []})
            else:
                results.append({"user": user, "error_code": 0, "error_message": None, "credential_infos": infos})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "results": []}


def _problem(user: str, changes: list[tuple[str, dict]]) -> tuple[ErrorCode, str] | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    seen = set()
    for kind, c in changes:
        if c["mechanism"] not in MECHANISM_CODES:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {c['mechanism']}"
        if c["mechanism"] in seen:
            return ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
        seen.add(c["mechanism"])
        if kind == "upsert":
            try:
                credential_from_salted(MECHANISM_CODES[c["mechanism"]], bytes(c["salted_password"]), bytes(c["salt"]),
                                       c["iterations"])
            except ScramError as e:
                return ErrorCode.UNACCEPTABLE_CREDENTIAL, str(e)
    return None


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    store = ctx.store
    by_user: dict[str, list[tuple[str, dict]]] = {}
    for d in body.get("deletions") or []:
        by_user.setdefault(d["name"], []).append(("delete", d))
    for u in body.get("upsertions") or []:
        by_user.setdefault(u["name"], []).append(("upsert", u))
    results = []
    for user, changes in by_user.items():
        problem = _problem(user, changes)
        if problem is None:
            existing = await zusers.read_credentials(store, user)
            missing = [MECHANISM_CODES[c["mechanism"]] for kind, c in changes
                       if kind == "delete" and MECHANISM_CODES[c["mechanism"]] not in existing]
            if missing:
                problem = ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to delete a user credential that does not exist: {missing[0]}"
        if problem is not None:
            results.append({"user": user, "error_code": int(problem[0]), "error_message": problem[1]})
            continue
        upserts = {
            MECHANISM_CODES[c["mechanism"]]: format_credential(credential_from_salted(
                MECHANISM_CODES[c["mechanism"]], bytes(c["salted_password"]), bytes(c["salt"]), c["iterations"]))
            for kind, c in changes if kind == "upsert"
        }
        deletions = [MECHANISM_CODES[c["mechanism"]] for kind, c in changes if kind == "delete"]
        if deletions:
            await zusers.delete_credentials(store, user, deletions)
        if upserts:
            await zusers.write_credentials(store, user, upserts)
        results.append({"user": user, "error_code": 0, "error_message": None})
    return {"throttle_time_ms": 0, "results": results}


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    users = dict.fromkeys([d["name"] for d in body.get("deletions") or []] + [u["name"] for u in body.get("upsertions") or []])
    return {"throttle_time_ms": 0, "results": [{"user": u, "error_code": int(code), "error_message": message} for u in users]}


APIS = [
    Api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0, controller_only=False,
        handle=handle_describe, error_response=describe_error),
    Api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0, controller_only=False,
        handle=handle_alter, error_response=alter_error),
]
