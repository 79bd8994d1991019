"""DescribeClientQuotas (48) and AlterClientQuotas (49): KIP-546, over the quotas in ZooKeeper
(znodes.client_quotas, Kafka's ZooKeeper-mode layout; the rules are protocol.client_quotas).
Served by every instance, as every ZooKeeper-mode Kafka broker serves them (Kafka's clients send
them to any node); who may call them (DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster) is the
handler's check.

    Describe: the filter checked first (a refusal is the whole request's error, with null
              entries); then every quota entity in ZooKeeper the filter selects, with its quota
              keys as numbers. A stored quota that is not a number fails the whole request
              UNKNOWN_SERVER_ERROR naming it, as Kafka's does; so does a config znode that does
              not decode (AlterClientQuotas' removals repair the first, not the second).
    Alter:    per entry, in request order: the entity, then every op in order (a set checked and
              formatted as Kafka stores it, a removal of a quota key); any refusal leaves the
              entity unchanged. Then, unless ``validate_only``, one write of the entity's config
              znode (its other configs kept: a user's SCRAM credentials) conditional on the
              version read, and one change notification; nothing is written when nothing
              changes. An IP entity must be an address or a host name that resolves (Kafka's
              InetAddress.getByName; looked up off the event loop, at most RESOLVE_TIMEOUT_S).
              A name no znode can have ('.' or '..') is INVALID_REQUEST, where Kafka's write
              fails UNKNOWN_SERVER_ERROR. One result per entry, with the entity as the request
              named it.
"""

from __future__ import annotations

import asyncio
import socket

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.client_quotas import (
    IP,
    QuotaError,
    ip_literal,
    keys_for,
    parse_entity,
    parse_filter,
    read_value,
    stored_value,
)
from protocol.errors import ErrorCode
from znodes import client_quotas as zquotas
from znodes import entity_configs
from znodes.errors import ZnodeFormatError

# An IP entity's host name lookup (Kafka's is the JVM's resolver, unbounded): a resolver that
# hangs must not hold the request past a client's usual 30 s timeout.
RESOLVE_TIMEOUT_S = 5.0
UNSTORABLE = "cannot be stored in ZooKeeper (a '.' or '..' znode name)"


def _entity_data(pairs) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    try:
        filt = parse_filter([(c["entity_type"], c["match_type"], c["match"]) for c in body["components"]],
                            body["strict"])
    except QuotaError as e:
        code = ErrorCode.UNSUPPORTED_VERSION if e.unsupported else ErrorCode.INVALID_REQUEST
        return describe_error(version, body, code, e.message)
    try:
        found = await zquotas.read_all(ctx.store)
    except ZnodeFormatError as e:
        return describe_error(version, body, ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
    entries = []
    for entity, config in found.items():
        if not filt.selects(entity):
            continue
        values = []
        for key in sorted(config.keys() & keys_for(entity).keys()):
            value = read_value(config[key])
            if value is None:
                return describe_error(version, body, ErrorCode.UNKNOWN_SERVER_ERROR,
                                      f"Unexpected client quota configuration value: {zquotas.entity_path(entity)} "
                                      f"{key} -> {config[key]}")
            values.append({"key": key, "value": value})
        if values:
            entries.append({"entity": _entity_data(entity), "values": values})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    """DescribeClientQuotasRequest.getErrorResponse: the code and message, null entries."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "entries": None}


async def _resolves(host: str) -> bool:
    if ip_literal(host):
        return True
    try:
        await asyncio.wait_for(asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM),
                               RESOLVE_TIMEOUT_S)
    except (OSError, UnicodeError, ValueError, asyncio.TimeoutError):
        return False
    return True


async def _alter_one(ctx: AdminContext, entry: dict, validate_only: bool) -> tuple[ErrorCode, str] | None:
    """One entry's checks and write: None when done (or, validating, when it would be)."""
    try:
        entity = parse_entity([(e["entity_type"], e["entity_name"]) for e in entry["entity"]])
        first_type, first_name = entity[0]
        if first_type == IP and first_name is not None and not await _resolves(first_name):
            raise QuotaError(f"{first_name} is not a valid IP or resolvable host.")
        keys = keys_for(entity)
        ops = [(op["key"], None if op["remove"] else stored_value(keys, op["key"], op["value"])) for op in entry["ops"]]
        path = zquotas.entity_path(entity)
    except QuotaError as e:
        return ErrorCode.INVALID_REQUEST, e.message
    except ValueError as e:  # a name no znode can have
        return ErrorCode.INVALID_REQUEST, f"{e}: the entity {UNSTORABLE}"

    def change(config: dict[str, str]):
        new = dict(config)
        for key, text in ops:
            if text is not None:
                new[key] = text
            elif key in keys:  # never another config of the znode (a user's SCRAM credentials)
                new.pop(key, None)
        return new if new != config else None

    try:
        if validate_only:
            await entity_configs.read(ctx.store, path)  # a znode that does not decode fails here too
        else:
            await entity_configs.update(ctx.store, path, change)
    except ZnodeFormatError as e:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"{e}; left as it is"
    return None


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    results = []
    for entry in body["entries"]:
        problem = await _alter_one(ctx, entry, body["validate_only"])
        code, message = problem if problem is not None else (ErrorCode.NONE, None)
        results.append({"error_code": int(code), "error_message": message, "entity": _entity_data(
            (e["entity_type"], e["entity_name"]) for e in entry["entity"])})
    return {"throttle_time_ms": 0, "entries": results}


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    """AlterClientQuotasRequest.getErrorResponse: every entry with the error."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": int(code), "error_message": message,
         "entity": _entity_data((e["entity_type"], e["entity_name"]) for e in entry["entity"])}
        for entry in body.get("entries") or []]}


APIS = [
    Api(ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, controller_only=False,
        handle=handle_describe, error_response=describe_error),
    Api(ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, controller_only=False,
        handle=handle_alter, error_response=alter_error),
]
