"""AlterConfigs (33, KIP-133, v0-2) and IncrementalAlterConfigs (44, KIP-339, v0-1): topic and
broker configs written where Kafka keeps them, so standard tools (kafka-configs.sh,
kafka-python's ``alter_configs``) set every Kafka topic config (retention, cleanup,
min.insync.replicas, the throttled replicas, ...) and the dynamic broker configs (the throttle
rates, the log defaults). The rules are protocol.config_changes, the configs
protocol.kafka_configs.

Served by every instance, as every Kafka broker serves them in ZooKeeper mode (configs are not
controller state): the write is conditional on the config znode's version read (a conflict is
read again and redone), with its ``/config/changes/config_change_<seq>`` notification, not
fenced by the controller epoch. This instance's own alters take turns (``AdminContext.
config_writes``): clients altering the same config at once would otherwise keep beating each
other's conditional writes, where Kafka lets each land. Per resource, in request order:

 0. A resource named twice in the request: INVALID_REQUEST for each copy, none applied.
 1. TOPIC (2): a legal name of an existing topic, else UNKNOWN_TOPIC_OR_PARTITION
    (INVALID_TOPIC_EXCEPTION for an illegal name); BROKER (4): a broker id, or "" for the cluster
    default (Kafka's ``<default>`` entity), else INVALID_REQUEST; other types INVALID_REQUEST.
    With ACLs enforced: ALTER_CONFIGS on the topic, or on the cluster for a broker.
 2. The new config (config_changes.replace / alter_incremental): INVALID_CONFIG for an unknown
    key, a read-only broker config (the controller's settings DescribeConfigs lists included),
    a bad value (Kafka's wording: key and rule) or conflicting topic values; INVALID_REQUEST for
    a null value, a repeated key or operation. A config too large for one ZooKeeper request
    (jute.maxbuffer): INVALID_CONFIG, with ``validate_only`` too, nothing sent.
 3. ``validate_only``: answer now; else write the config and its change notification. A
    write that fails answers that resource alone: UNKNOWN_SERVER_ERROR when other writers
    (another instance, a tool writing ZooKeeper) kept changing the znode through every retry,
    REQUEST_TIMED_OUT when the connection was lost mid-write (it may have landed). The
    resources before it stay written and are answered NONE, as they are.

Throttles written this way are the operator's: KIP-179 removes only what its removal znodes
list (controller.shell.throttles), so they stay unless their topic or broker was registered
for removal by a KIP-179 request.

    # kafka-python
    admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                        configs={"leader.replication.throttled.rate": "1000000"})])
"""

from __future__ import annotations

from controller.core import acl
from protocol import ApiKey
from protocol.config_changes import BROKER_CONFIGS, REPEATED_RESOURCE, TOPIC_CONFIGS, apply_request, repeated_resources
from controller.shell import throttle_configs as tc
from controller.shell.admin.base import AdminContext, Api, session_failure
from controller.shell.admin.configs import STATIC_NAMES
from controller.shell.listener import SESSION
from protocol.describe_configs import BROKER, TOPIC, UNKNOWN, ConfigDef
from protocol.errors import ErrorCode
from znodes import paths
from znodes.batch import BatchedWriter, FlushError, RequestTooLargeError


# The broker configs a BROKER resource may name: the catalogue's, and the controller's settings
# DescribeConfigs lists as read-only broker configs, so altering one is refused as read-only
# (Kafka's "Cannot update these configs dynamically") rather than as an unknown name.
BROKER_KNOWN = BROKER_CONFIGS | {name: ConfigDef(None, UNKNOWN, "a controller setting (read-only)")
                                 for name in STATIC_NAMES if name not in BROKER_CONFIGS}


def _out(r: dict, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"error_code": int(code), "error_message": message, "resource_type": r.get("resource_type"),
            "resource_name": r.get("resource_name")}


async def _entity(ctx: AdminContext, r: dict):
    """(kind, name, known configs) of a resource, or (code, message)."""
    rtype, name = r.get("resource_type"), r.get("resource_name")
    authorizer, session = getattr(ctx, "authorizer", None), SESSION.get()
    if rtype == TOPIC:
        if authorizer is not None and not await authorizer.allows(session, acl.ALTER_CONFIGS, acl.TOPIC, name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "ALTER_CONFIGS is not allowed"
        try:
            paths.validate_topic_name(name)
        except ValueError as e:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)
        if await ctx.store.exists(paths.topic(name)) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
        return "topics", name, TOPIC_CONFIGS
    if rtype == BROKER:
        if authorizer is not None and not await authorizer.allows(session, acl.ALTER_CONFIGS, acl.CLUSTER, acl.CLUSTER_NAME):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ALTER_CONFIGS is not allowed"
        if name == "":
            return "brokers", paths.BROKER_DEFAULT_CONFIG, BROKER_KNOWN
        try:
            return "brokers", paths.parse_id(name, "broker id"), BROKER_KNOWN
        except ValueError:
            return ErrorCode.INVALID_REQUEST, f"broker resource name must be a broker id (or empty for the default), got {name!r}"
    return ErrorCode.INVALID_REQUEST, f"resource type {rtype} is not served here (only TOPIC={TOPIC} and BROKER={BROKER})"


async def _alter(ctx: AdminContext, body: dict, incremental: bool) -> dict:
    results = []
    resources = body.get("resources") or []
    repeated = repeated_resources(resources)
    for r in resources:
        if (r.get("resource_type"), r.get("resource_name")) in repeated:
            results.append(_out(r, *REPEATED_RESOURCE))
            continue
        entity = await _entity(ctx, r)
        if len(entity) == 2:
            results.append(_out(r, *entity))
            continue
        kind, name, known = entity
        configs = r.get("configs") or []
        problem_seen: list = []

        def update(current: dict[str, str]) -> dict[str, str]:
            new, problem = apply_request(current, configs, known, incremental)
            if problem is not None:
                problem_seen.append(problem)
                return current
            return new

        async def build():
            problem_seen.clear()
            ops = await tc.config_ops(ctx.store, kind, name, update)
            if problem_seen:
                return []
            if body.get("validate_only"):
                # Sized as the write would be, so validate_only refuses what the write would.
                BatchedWriter(ctx.store).extend(ops)
                return []
            return ops

        try:
            async with ctx.config_writes:
                await tc.write_with_retry(ctx.store, None, build)
        except RequestTooLargeError as e:
            # A valid config ZooKeeper cannot hold (jute.maxbuffer): nothing was sent. Caught
            # before ValueError, its base, which would call it an unreadable znode.
            results.append(_out(r, ErrorCode.INVALID_CONFIG, f"the {kind} config of {name!r} is too large "
                                                             f"to store in ZooKeeper: {e}"))
            continue
        except ValueError as e:  # a config znode that is not a config (ZnodeFormatError)
            results.append(_out(r, ErrorCode.UNKNOWN_SERVER_ERROR, f"unreadable config: {e}"))
            continue
        except FlushError as e:
            failure = session_failure(e)
            if failure is not None:
                results.append(_out(r, failure.code, failure.message))
            else:
                results.append(_out(r, ErrorCode.UNKNOWN_SERVER_ERROR,
                                    f"the {kind} config of {name!r} kept changing under other writers: not written"))
            continue
        results.append(_out(r, *problem_seen[0]) if problem_seen else _out(r))
    return {"throttle_time_ms": 0, "responses": results}


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    return await _alter(ctx, body, incremental=False)


async def handle_incremental(ctx: AdminContext, version: int, body: dict) -> dict:
    return await _alter(ctx, body, incremental=True)


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "responses": [_out(r, code, message) for r in body.get("resources") or []]}


APIS = [
    Api(ApiKey.ALTER_CONFIGS, "AlterConfigs", 0, 2, controller_only=False, handle=handle_alter, error_response=alter_error),
    Api(ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1, controller_only=False,
        handle=handle_incremental, error_response=alter_error),
]
