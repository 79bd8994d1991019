"""DescribeConfigs (32, KIP-133): topic and broker configs as ZooKeeper holds them.

Served by every instance (configs are not controller state): the dynamic configs in
``/config/topics/T`` and ``/config/brokers/N`` (and the cluster-wide
``/config/brokers/<default>``) over Kafka's configs and defaults (``protocol.kafka_configs``),
so throttles (KIP-179), retention and the rest are visible to any Kafka admin client.

Per resource, in request order:

 1. TOPIC (2): the name must be a legal topic name and the topic must exist
    (``/brokers/topics/T``), else UNKNOWN_TOPIC_OR_PARTITION (an illegal name:
    INVALID_TOPIC_EXCEPTION). Every Kafka topic config: ``/config/topics/T``'s, source
    DYNAMIC_TOPIC_CONFIG, else the default entity's broker synonym (``log.retention.ms`` for
    ``retention.ms``), source DYNAMIC_DEFAULT_BROKER_CONFIG, else Kafka's default.
 2. BROKER (4): the name is a broker id as canonical decimal text, else INVALID_REQUEST; the
    empty name means the cluster-wide default (Kafka's rule). Entries from
    ``/config/brokers/N``, source DYNAMIC_BROKER_CONFIG, plus the default entity's keys the
    broker does not override, source DYNAMIC_DEFAULT_BROKER_CONFIG. Any id is accepted:
    Kafka lets operators configure a broker before it first starts.
 3. Any other resource type: INVALID_REQUEST with a message naming it.
 4. Entries, sources, synonyms, defaults and flags: ``protocol.describe_configs`` (Kafka's
    ConfigHelper rules). A broker N also lists this controller's settings that are Kafka broker
    configs (``STATIC_SETTINGS``: ``delete.topic.enable``, the leader-rebalance ones, the
    listener limits, the ZooKeeper session timeout, the topic policy's), read-only, source
    STATIC_BROKER_CONFIG when the setting is not at its default, else DEFAULT_CONFIG. The
    default entity lists only what it holds. ``include_documentation`` (v3+) fills
    ``documentation``.

A config znode that cannot be parsed fails its resource only (UNKNOWN_SERVER_ERROR, saying
which znode), never the request.
"""

from __future__ import annotations

from controller.core import acl
from controller.core.topic_policy import TopicPolicy
from controller.shell.admin.base import AdminContext, Api
from controller.shell.listener import SESSION
from protocol import ApiKey
from protocol.describe_configs import (
    BOOLEAN,
    BROKER,
    BROKER_CONFIGS,
    CLASS,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    INT,
    LONG,
    TOPIC,
    ConfigDef,
    Static,
    config_entries,
)
from protocol.errors import ErrorCode
from znodes import cluster_reader, paths
from znodes.api import Store
from znodes.errors import ZnodeFormatError
from znodes.reads import get_many


def _bool(v) -> str:
    return "true" if v else "false"


def _seconds_as_ms(v) -> str:
    return str(round(v * 1000))


def _number(v) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _names(v) -> str:
    return ",".join(v or ())


def _text(v) -> str | None:
    return None if v is None else str(v)


# The controller's settings that are Kafka broker configs (controller.core.config): Kafka name,
# setting, type, value as Kafka writes it, Kafka's documentation.
STATIC_SETTINGS = (
    ("delete.topic.enable", "delete_topic_enable", BOOLEAN, _bool,
     "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off"),
    ("auto.leader.rebalance.enable", "auto_leader_rebalance_enable", BOOLEAN, _bool,
     "Enables auto leader balancing. A background thread checks the distribution of partition leaders at "
     "regular intervals, configurable by leader.imbalance.check.interval.seconds."),
    ("leader.imbalance.per.broker.percentage", "leader_imbalance_per_broker_percentage", INT, _number,
     "The ratio of leader imbalance allowed per broker. The controller would trigger a leader balance if it goes "
     "above this value per broker. The value is specified in percentage."),
    ("leader.imbalance.check.interval.seconds", "leader_imbalance_check_interval_s", LONG, _number,
     "The frequency with which the partition rebalance check is triggered by the controller"),
    ("socket.request.max.bytes", "listener_max_request_bytes", INT, _number,
     "The maximum number of bytes in a socket request"),
    ("connections.max.idle.ms", "listener_idle_timeout_s", LONG, _seconds_as_ms,
     "Idle connections timeout: the server socket processor threads close the connections that idle more than this"),
    ("zookeeper.session.timeout.ms", "zk_session_timeout_s", INT, _seconds_as_ms, "Zookeeper session timeout"),
)


POLICY_CLASS = "controller.core.topic_policy.TopicPolicy"
POLICY_CONFIG = "create.topic.policy.class.name"
# Every name static_configs may list: Kafka broker configs that are read-only here.
STATIC_NAMES = tuple(name for name, *_ in STATIC_SETTINGS) + (POLICY_CONFIG,)


def static_configs(config) -> dict[str, Static]:
    """This controller's read-only configs, from its settings (none without settings)."""
    if config is None:
        return {}
    from controller.core.config import ControllerConfig

    out = {}
    for name, setting, ctype, text, doc in STATIC_SETTINGS:
        field = ControllerConfig.model_fields.get(setting)
        if field is None or not hasattr(config, setting):
            continue
        out[name] = Static(text(getattr(config, setting)), ConfigDef(text(field.default), ctype, doc))
    # The topic policy's rules are settings (controller.core.topic_policy); Kafka names the
    # plug-in that holds them.
    policy = TopicPolicy.from_config(config)
    out[POLICY_CONFIG] = Static(
        POLICY_CLASS if policy.enabled else None,
        ConfigDef(None, CLASS, "The create topic policy class that should be used for validation (here: the "
                  "topic_policy_* settings)"))
    return out


class UnreadableConfig(Exception):
    """A config znode that is not a config (znodes.cluster_reader's verdict)."""


async def read_configs(store: Store, config_paths: list[str]) -> list[dict[str, str] | UnreadableConfig]:
    """The ``config`` map of each entity znode ({} when it does not exist), in one bulk read
    (znodes.cluster_reader.configs)."""
    found, bad = await cluster_reader.configs(store, config_paths)
    errors = {u.path: u.reason for u in bad}
    return [UnreadableConfig(str(ZnodeFormatError(path, errors[path]))) if path in errors
            else (found[path].config if found.get(path) is not None else {}) for path in config_paths]


def broker_config_path(name: str) -> str:
    """``/config/brokers/N`` for a broker resource name; ValueError if the name is not an id."""
    if name == "":
        return paths.broker_config(paths.BROKER_DEFAULT_CONFIG)
    return paths.broker_config(paths.parse_id(name, "broker id"))


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    store = ctx.store
    resources = body.get("resources") or []
    synonyms = version >= 1 and bool(body.get("include_synonyms"))
    documentation = version >= 3 and bool(body.get("include_documentation"))
    static = static_configs(getattr(ctx, "config", None))
    # Plan every read first, then read them all at once.
    plans: list[tuple[str, object]] = []  # ("error", (code, message)) or ("topic"/"broker", ...)
    config_paths: list[str] = []
    topic_paths: list[str] = []
    authorizer, session = getattr(ctx, "authorizer", None), SESSION.get()
    for r in resources:
        rtype, name = r.get("resource_type"), r.get("resource_name")
        # With ACLs enforced, Kafka's rule: DESCRIBE_CONFIGS on the topic, or on the cluster for
        # a broker resource.
        if authorizer is not None and rtype in (TOPIC, BROKER):
            on_topic = rtype == TOPIC
            if not await authorizer.allows(session, acl.DESCRIBE_CONFIGS, acl.TOPIC if on_topic else acl.CLUSTER,
                                           name if on_topic else acl.CLUSTER_NAME):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if on_topic else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                plans.append(("error", (code, "DESCRIBE_CONFIGS is not allowed")))
                continue
        if rtype == TOPIC:
            try:
                paths.validate_topic_name(name)
            except ValueError as e:
                plans.append(("error", (ErrorCode.INVALID_TOPIC_EXCEPTION, str(e))))
                continue
            plans.append(("topic", (len(topic_paths), len(config_paths))))
            topic_paths.append(paths.topic(name))
            config_paths.append(paths.topic_config(name))
        elif rtype == BROKER:
            try:
                path = broker_config_path(name)
            except ValueError:
                message = f"broker resource name must be a broker id (or empty for the cluster default), got {name!r}"
                plans.append(("error", (ErrorCode.INVALID_REQUEST, message)))
                continue
            plans.append(("broker", (name == "", len(config_paths))))
            config_paths.append(path)
        else:
            message = f"resource type {rtype} is not served here (only TOPIC={TOPIC} and BROKER={BROKER})"
            plans.append(("error", (ErrorCode.INVALID_REQUEST, message)))
    # The default entity: inherited by every broker, and the broker defaults topic configs fall back to.
    need_default = any(kind == "topic" or (kind == "broker" and not detail[0]) for kind, detail in plans)
    default_path = paths.broker_config(paths.BROKER_DEFAULT_CONFIG)
    configs = await read_configs(store, config_paths + ([default_path] if need_default else []))
    defaults = configs.pop() if need_default else {}
    if isinstance(defaults, UnreadableConfig):
        defaults = {}  # a broken default entity must not hide a broker's own configs
    topics_exist = [read is not None for read in await get_many(store, topic_paths)]
    results = []
    for r, (kind, detail) in zip(resources, plans):
        keys = r.get("configuration_keys")
        out = {"resource_type": r.get("resource_type"), "resource_name": r.get("resource_name"),
               "error_code": 0, "error_message": None, "configs": []}
        results.append(out)
        if kind == "error":
            out["error_code"], out["error_message"] = int(detail[0]), detail[1]
            continue
        if kind == "topic":
            exists_at, config_at = detail
            if not topics_exist[exists_at]:
                out["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                out["error_message"] = f"topic {r['resource_name']!r} does not exist"
                continue
            own, inherited, source = configs[config_at], defaults, DYNAMIC_TOPIC_CONFIG
        else:
            is_default, config_at = detail
            own = configs[config_at]
            source = DYNAMIC_DEFAULT_BROKER_CONFIG if is_default else DYNAMIC_BROKER_CONFIG
            inherited = {} if is_default else defaults
        if isinstance(own, UnreadableConfig):
            out["error_code"], out["error_message"] = int(ErrorCode.UNKNOWN_SERVER_ERROR), f"unreadable config: {own}"
            continue
        mine = static
        if kind == "broker" and source == DYNAMIC_BROKER_CONFIG:
            # The broker described is the one the resource names (Kafka: each broker itself).
            mine = static | {"broker.id": Static(r["resource_name"], BROKER_CONFIGS["broker.id"])}
        out["configs"] = config_entries(version, own, inherited, source, keys, synonyms, static=mine,
                                        documentation=documentation)
    return {"throttle_time_ms": 0, "results": results}


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {
        "throttle_time_ms": 0,
        "results": [
            {"error_code": int(code), "error_message": message, "resource_type": r.get("resource_type"),
             "resource_name": r.get("resource_name"), "configs": []}
            for r in body.get("resources") or []
        ],
    }


APIS = [
    Api(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, controller_only=False,
        handle=handle_describe, error_response=describe_error),
]
