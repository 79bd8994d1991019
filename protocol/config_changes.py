"""How AlterConfigs (KIP-133), IncrementalAlterConfigs (KIP-339) and CreateTopics change a topic's
or a broker's dynamic config, checked against Kafka's configs (``protocol.kafka_configs``). Pure;
below both servers of the project, as every Kafka broker serves AlterConfigs: the controller's
listener (controller.shell.admin.alter_configs) and the simulated brokers (sim.alterconfigs).

Rules (Kafka's):

 1. A topic config must be one of Kafka's topic configs, else INVALID_CONFIG
    ("Unknown topic config name: X", LogConfig.validateNames). A broker config must be one of
    the catalogue's broker configs (INVALID_CONFIG naming it: Kafka would store a name it does
    not know, this project refuses it) and dynamically updatable, else INVALID_CONFIG
    ("Cannot update these configs dynamically: X", DynamicBrokerConfig.validateConfigs).
 2. A value must parse as the config's type and pass its validator, else INVALID_CONFIG with
    Kafka's ConfigException wording: "Invalid value 0 for configuration min.insync.replicas:
    Value must be at least 1". A topic's whole config must also pass Kafka's cross checks
    (min.compaction.lag.ms <= max.compaction.lag.ms; no remote storage: no simulated broker
    has it).
 3. AlterConfigs replaces the resource's whole dynamic config: keys left out are removed; a
    null value or a key given twice is INVALID_REQUEST.
 4. IncrementalAlterConfigs per key: SET (0) the value, DELETE (1) the key (any key: one Kafka
    does not know or may not change, stored by another tool, can be removed, as Kafka's
    prepareIncrementalConfigs removes before it validates what remains), APPEND (2) / SUBTRACT
    (3) list items (LIST configs only, else INVALID_CONFIG; the list appended to is the current
    value or, unset, the default, as Kafka's; "*" takes no APPEND); a key given twice is
    INVALID_REQUEST; an unknown operation INVALID_REQUEST.

 5. A resource (type and name) named more than once in one request is INVALID_REQUEST for
    every copy, and none of them is applied (Kafka's ConfigAdminManager.preprocess): which copy
    should win is not the server's guess.

    alter_incremental({}, [("leader.replication.throttled.rate", 0, "1000")], BROKER_CONFIGS)
    # -> ({"leader.replication.throttled.rate": "1000"}, None)
    repeated_resources([{"resource_type": 2, "resource_name": "t"}] * 2)   # {(2, "t")}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol.errors import ErrorCode
from protocol.kafka_configs import (
    BROKER_CONFIGS,
    LIST,
    LONG,
    LONG_MAX,
    TOPIC_CONFIGS,
    ConfigDef,
    problem,
    topic_problems,
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
__all__ = [
    "BROKER_CONFIGS",
    "LIST",
    "LONG",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "ConfigDef",
    "alter_incremental",
    "apply_request",
    "check",
    "check_topic",
    "replace",
]

Problem = tuple[ErrorCode, str]


def _unknown(key: str, known: Mapping[str, ConfigDef]) -> Problem | None:
    d = known.get(key)
    if known is TOPIC_CONFIGS:
        return None if d is not None else (ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
    if d is None:
        return ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {key}"
    if not d.dynamic:
        return ErrorCode.INVALID_CONFIG, f"Cannot update these configs dynamically: {key} (read-only)"
    return None


def check(key: str, value: str, known: Mapping[str, ConfigDef]) -> Problem | None:
    """Rules 1-2 for one key (``known``: TOPIC_CONFIGS or BROKER_CONFIGS)."""
    found = _unknown(key, known)
    if found is not None:
        return found
    broken = problem(key, value, known)
    return None if broken is None else (ErrorCode.INVALID_CONFIG, broken)


def check_topic(config: Mapping[str, str]) -> Problem | None:
    """Rule 2's checks across a topic's whole config (each value already valid alone)."""
    broken = topic_problems(config)
    return None if broken is None else (ErrorCode.INVALID_CONFIG, broken)


def _whole(out: dict[str, str], known) -> tuple[dict[str, str], Problem | None]:
    if known is TOPIC_CONFIGS:
        found = check_topic({k: v for k, v in out.items() if k in known})
        if found is not None:
            return {}, found
    return out, None


def replace(configs: Iterable[tuple[str, str | None]], known: Mapping[str, ConfigDef]) -> tuple[dict[str, str], Problem | None]:
    """Rule 3: the new whole config, or the first problem."""
    out: dict[str, str] = {}
    for key, value in configs:
        if value is None:
            return {}, (ErrorCode.INVALID_REQUEST, f"null value for {key!r}")
        found = check(key, value, known)
        if found is not None:
            return {}, found
        out[key] = value
    return _whole(out, known)


def alter_incremental(
    current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]], known: Mapping[str, ConfigDef]
) -> tuple[dict[str, str], Problem | None]:
    """Rule 4 applied to ``current``: the new config, or the first problem."""
    ops = list(ops)
    keys = [k for k, _, _ in ops]
    if len(set(keys)) != len(keys):
        return {}, REPEATED_KEY
    out = dict(current)
    for key, op, value in ops:
        if op == DELETE:
            # Before the name check, as Kafka's prepareIncrementalConfigs: a key it does not know
            # (or may not change) that another tool stored can still be removed, and only what
            # remains is validated.
            out.pop(key, None)
            continue
        found = _unknown(key, known)
        if found is not None:
            return {}, found
        d = known[key]
        if op not in (SET, APPEND, SUBTRACT):
            return {}, (ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
        if value is None:
            return {}, (ErrorCode.INVALID_REQUEST, f"null value for {key!r}")
        if op == SET:
            new = value
        else:
            if d.type != LIST:
                return {}, (ErrorCode.INVALID_CONFIG, f"Config value append or subtract is not allowed for config "
                            f"key: {key} (not a list)")
            have = [x.strip() for x in out.get(key, d.default or "").split(",") if x.strip()]
            items = [x.strip() for x in value.split(",") if x.strip()]
            if "*" in have + items and op == APPEND:
                return {}, (ErrorCode.INVALID_CONFIG, f"{key}: '*' takes no APPEND; SET it instead")
            if op == APPEND:
                new = ",".join(have + [x for x in items if x not in have])
            else:
                new = ",".join(x for x in have if x not in items)
        found = check(key, new, known)
        if found is not None:
            return {}, found
        if new == "" and op == SUBTRACT and d.default == "":
            out.pop(key, None)  # an emptied throttle list is its default: no key needed
        else:
            out[key] = new  # an emptied cleanup.policy stays "" (no cleanup), as Kafka keeps it
    return _whole(out, known)


REPEATED_RESOURCE: Problem = (ErrorCode.INVALID_REQUEST, "a resource may appear at most once in a request")
REPEATED_KEY: Problem = (ErrorCode.INVALID_REQUEST, "a config key is given more than once")


def repeated_resources(resources: Iterable[dict]) -> set[tuple]:
    """Rule 5: the (type, name) of every resource a request names more than once."""
    seen: set[tuple] = set()
    repeated: set[tuple] = set()
    for r in resources:
        key = (r.get("resource_type"), r.get("resource_name"))
        (repeated if key in seen else seen).add(key)
    return repeated


def apply_request(current: Mapping[str, str], entries: Iterable[dict], known: Mapping[str, ConfigDef],
                  incremental: bool) -> tuple[dict[str, str], Problem | None]:
    """One resource of an AlterConfigs (``incremental`` False) or IncrementalAlterConfigs request
    (its ``configs`` entries, the codec's dicts) applied to ``current``: the new config, or the
    first problem. AlterConfigs keeps keys Kafka does not know as they were: replacing the known
    ones must not wipe what another tool stored beside them."""
    if incremental:
        return alter_incremental(current, [(c["name"], c.get("config_operation", SET), c.get("value"))
                                           for c in entries], known)
    entries = list(entries)
    if len({c["name"] for c in entries}) != len(entries):
        return {}, REPEATED_KEY
    new, problem = replace([(c["name"], c.get("value")) for c in entries], known)
    if problem is not None:
        return {}, problem
    return {k: v for k, v in current.items() if k not in known} | new, None
