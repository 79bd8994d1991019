"""AlterConfigs (33, v0-2) and IncrementalAlterConfigs (44, v0-1) on a simulated broker, as a
Kafka broker in ZooKeeper mode serves them: it writes the config znode and its change
notification itself. Clients send these requests to any node (kafka-python picks the least
loaded one), so a broker that did not serve them would close the client's connection.

The rules are the controller listener's (``protocol.config_changes``, shared): per resource,
in request order,

 0. A resource named twice in the request: INVALID_REQUEST for each copy, none applied.
 1. TOPIC (2): a legal name of an existing topic, else UNKNOWN_TOPIC_OR_PARTITION
    (INVALID_TOPIC_EXCEPTION for an illegal name); BROKER (4): a broker id, or "" for the cluster
    default (``<default>``), else INVALID_REQUEST; other types INVALID_REQUEST.
 2. The new config from the znode read now (not the watch-fed view, which may lag):
    INVALID_CONFIG for an unknown key, a read-only broker config, a bad value; INVALID_REQUEST
    for a null value, a repeated key or operation.
 3. ``validate_only``: answer now. Else write the config conditional on the version read, with
    its ``/config/changes/config_change_<seq>`` notification, in one multi; a conflict is read
    again and redone, up to ``CONFLICT_RETRIES`` times (then UNKNOWN_SERVER_ERROR: the write
    lost to others that often).

Unfenced, as Kafka's brokers write configs: configs are not controller state. No ACLs: the
simulated brokers have no authorizer (the controller's listener has one).

    answer = await alter_configs(store, 44, 1, {"resources": [...], "validate_only": False})
"""

from __future__ import annotations

import json

from protocol import ApiKey
from protocol.config_changes import BROKER_CONFIGS, REPEATED_RESOURCE, TOPIC_CONFIGS, apply_request, repeated_resources
from protocol.errors import ErrorCode
from znodes import models, paths
from znodes.api import BadVersionError, Create, MultiOpError, NodeExistsError, SetData, Store
from znodes.errors import ZnodeFormatError
from znodes.reads import get_or_none

TOPIC, BROKER = 2, 4
# A write that loses the race for the config znode this many times in a row gives up: others
# are changing it as fast as it can be read.
CONFLICT_RETRIES = 5


def _out(r: dict, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"error_code": int(code), "error_message": message, "resource_type": r.get("resource_type"),
            "resource_name": r.get("resource_name")}


async def _entity(store: Store, r: dict):
    """(config path, entity path, known configs) of a resource, or (code, message)."""
    rtype, name = r.get("resource_type"), r.get("resource_name")
    if rtype == TOPIC:
        try:
            paths.validate_topic_name(name)
        except ValueError as e:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)
        if await store.exists(paths.topic(name)) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
        return paths.topic_config(name), f"topics/{name}", TOPIC_CONFIGS
    if rtype == BROKER:
        if name == "":
            entity = paths.BROKER_DEFAULT_CONFIG
        else:
            try:
                entity = paths.parse_id(name, "broker id")
            except ValueError:
                return ErrorCode.INVALID_REQUEST, (
                    f"broker resource name must be a broker id (or empty for the default), got {name!r}")
        return paths.broker_config(entity), f"brokers/{entity}", BROKER_CONFIGS
    return ErrorCode.INVALID_REQUEST, f"resource type {rtype} is not served here (only TOPIC={TOPIC} and BROKER={BROKER})"


async def _alter_one(store: Store, r: dict, incremental: bool, validate_only: bool) -> dict:
    entity = await _entity(store, r)
    if len(entity) == 2:
        return _out(r, *entity)
    path, entity_path, known = entity
    note = json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()
    for _ in range(CONFLICT_RETRIES):
        read = await get_or_none(store, path)
        try:
            current = dict(models.EntityConfig.from_bytes(path, read[0]).config) if read is not None else {}
        except ZnodeFormatError as e:  # never overwritten on a guess
            return _out(r, ErrorCode.UNKNOWN_SERVER_ERROR, f"unreadable config: {e}")
        new, problem = apply_request(current, r.get("configs") or [], known, incremental)
        if problem is not None:
            return _out(r, *problem)
        if validate_only or new == current:
            return _out(r)
        data = models.EntityConfig(version=1, config=new).to_bytes()
        first = Create(path, data) if read is None else SetData(path, data, read[1].version)
        try:
            await store.multi([first, Create(paths.config_change_prefix(), note, sequential=True)])
            return _out(r)
        except MultiOpError as e:
            if not isinstance(e.cause, (BadVersionError, NodeExistsError)):
                raise
    return _out(r, ErrorCode.UNKNOWN_SERVER_ERROR, f"{path} kept changing: not written after {CONFLICT_RETRIES} tries")


async def alter_configs(store: Store, api_key: int, version: int, body: dict) -> dict:
    """The response body of one AlterConfigs or IncrementalAlterConfigs request."""
    incremental = api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS
    validate_only = bool(body.get("validate_only"))
    resources = body.get("resources") or []
    repeated = repeated_resources(resources)
    results = [_out(r, *REPEATED_RESOURCE) if (r.get("resource_type"), r.get("resource_name")) in repeated
               else await _alter_one(store, r, incremental, validate_only) for r in resources]
    return {"throttle_time_ms": 0, "responses": results}
