"""DescribeConfigs (32) on a simulated broker: its own BROKER resource and TOPIC resources.

Answers what the controller's listener answers (``controller.shell.admin.configs``: same fields,
sources, synonyms and error codes; its pure entry builder is reused) but for what is the
broker's own (its settings; its per-broker config under a topic's), from the dynamic configs
the simulation learned through config change notifications (:mod:`sim.configwatch`, kept in a
:class:`sim.zookeeper_view.ZooKeeperView`) instead of a read at request time. Pure.

Per resource, in request order:

 1. TOPIC (2): an illegal name is INVALID_TOPIC_EXCEPTION; a topic with no ``/brokers/topics/T``
    is UNKNOWN_TOPIC_OR_PARTITION. Every Kafka topic config: ``/config/topics/T``'s (source
    DYNAMIC_TOPIC_CONFIG), else its broker synonym in this broker's ``/config/brokers/N``
    (DYNAMIC_BROKER_CONFIG) or the default entity (DYNAMIC_DEFAULT_BROKER_CONFIG), else Kafka's
    default: what this broker applies (sim.logconfig).
 2. BROKER (4): the name must be this broker's id or empty (the cluster-wide default); a name
    that is not a broker id, or another broker's id, is INVALID_REQUEST (a Kafka broker
    describes only itself; clients send a broker's resource to that broker). Entries from
    ``/config/brokers/N``, source DYNAMIC_BROKER_CONFIG, plus the default entity's keys this
    broker does not override, source DYNAMIC_DEFAULT_BROKER_CONFIG, Kafka's broker configs at
    their defaults, and the broker's own settings read-only (``static_settings``: ``broker.id``,
    ``log.dirs``, ``replica.lag.time.max.ms``).
 3. Any other resource type: INVALID_REQUEST naming it.
 4. Key selection and entry fields as the controller's (``configuration_keys`` null: every
    entry; ``include_synonyms`` from v1).

An unreadable config znode fails its resource only, with UNKNOWN_SERVER_ERROR; an unreadable
default entity contributes nothing to a broker's configs.

    describe_configs(1, 4, {"resources": [{"resource_type": 4, "resource_name": "1",
                                            "configuration_keys": None}]}, view)
"""

from __future__ import annotations

from protocol import ApiKey
from protocol.describe_configs import (
    BROKER,
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    TOPIC,
    Static,
    config_entries,
)
from protocol.errors import ErrorCode
from sim.zookeeper_view import ConfigUnreadable, ZooKeeperView
from znodes import paths



def static_settings(broker_id: int, log_dir: str, replica_lag_time_max_s: float) -> dict[str, Static]:
    """A simulated broker's settings that are Kafka broker configs: read-only, as a broker's
    server.properties (source STATIC_BROKER_CONFIG when not Kafka's default)."""
    values = {"broker.id": str(broker_id), "log.dirs": log_dir,
              "replica.lag.time.max.ms": str(round(replica_lag_time_max_s * 1000))}
    return {name: Static(value, BROKER_CONFIGS[name]) for name, value in values.items()}


def describe_configs(broker_id: int, version: int, body: dict, view: ZooKeeperView,
                     static: dict[str, Static] | None = None) -> dict:
    synonyms = version >= 1 and bool(body.get("include_synonyms"))
    documentation = version >= 3 and bool(body.get("include_documentation"))
    defaults = view.config("brokers", paths.BROKER_DEFAULT_CONFIG)
    if isinstance(defaults, ConfigUnreadable):
        defaults = {}  # a broken default entity must not hide a broker's own configs
    mine = view.config("brokers", str(broker_id))
    mine = {} if isinstance(mine, ConfigUnreadable) else mine
    results = []
    for resource in body.get("resources") or []:
        rtype, name = resource.get("resource_type"), resource.get("resource_name")
        out = {"resource_type": rtype, "resource_name": name, "error_code": 0, "error_message": None, "configs": []}
        results.append(out)
        found = _resource_config(broker_id, rtype, name, view, defaults)
        if isinstance(found[0], ErrorCode):
            out["error_code"], out["error_message"] = int(found[0]), found[1]
            continue
        own, inherited, source = found
        keys = resource.get("configuration_keys")
        out["configs"] = config_entries(version, own, inherited, source, keys, synonyms, static=static,
                                        documentation=documentation, broker_own=mine)
    return {"throttle_time_ms": 0, "results": results}


def _resource_config(broker_id: int, rtype, name, view: ZooKeeperView, defaults: dict):
    """(own config, inherited defaults, source) of one resource, or (error code, message)."""
    if rtype == TOPIC:
        try:
            paths.validate_topic_name(name)
        except ValueError as exc:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)
        if name not in view.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
        own, inherited, source = view.config("topics", name), defaults, DYNAMIC_TOPIC_CONFIG
    elif rtype == BROKER:
        if name == "":
            own, inherited, source = view.config("brokers", paths.BROKER_DEFAULT_CONFIG), {}, DYNAMIC_DEFAULT_BROKER_CONFIG
        else:
            try:
                requested = paths.parse_id(name, "broker id") if isinstance(name, str) else None
            except ValueError:
                requested = None
            if requested is None:
                return ErrorCode.INVALID_REQUEST, (
                    f"broker resource name must be a broker id (or empty for the cluster default), got {name!r}")
            if requested != broker_id:
                return ErrorCode.INVALID_REQUEST, (
                    f"broker {broker_id} describes only its own configs (resource name '{broker_id}' or ''), "
                    f"got {name!r}")
            own, inherited, source = view.config("brokers", name), defaults, DYNAMIC_BROKER_CONFIG
    else:
        return ErrorCode.INVALID_REQUEST, f"resource type {rtype} is not served here (only TOPIC={TOPIC} and BROKER={BROKER})"
    if isinstance(own, ConfigUnreadable):
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"unreadable config: {own}"
    return own, inherited, source
