"""The dynamic topic and broker configs this project knows, and how AlterConfigs (KIP-133) and
IncrementalAlterConfigs (KIP-339) change a resource's config map. Pure.

Known configs are the throttles (KIP-73, driven by KIP-179): per topic the two
throttled-replica lists, per broker (or the cluster default, resource name "") the two rates.
Each has Kafka's default and type. Anything else is refused with INVALID_CONFIG: this project
stores nothing it does not read.

Rules (Kafka's):

 1. AlterConfigs replaces the resource's whole dynamic config: keys left out are removed; a
    null value is INVALID_REQUEST.
 2. IncrementalAlterConfigs per key: SET (0) the value, DELETE (1) the key, APPEND (2) / SUBTRACT
    (3) list items (list configs only, else INVALID_CONFIG; "*" is a whole-list value that takes
    no append); a key given twice is INVALID_REQUEST; an unknown operation INVALID_REQUEST.
 3. Values are checked by type: a rate is a non-negative long; a replica list is empty, "*",
    or partition:broker pairs.

    alter_incremental({}, [("leader.replication.throttled.rate", 0, "1000")], BROKER_CONFIGS)
    # -> ({"leader.replication.throttled.rate": "1000"}, None)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol.describe_configs import (
    BROKER_CONFIGS,
    LIST,
    LONG,
    LONG_MAX,
    TOPIC_CONFIGS,
    ConfigDef,
)
from protocol.errors import ErrorCode

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
__all__ = [
    "BROKER_CONFIGS",
    "LIST",
    "LONG",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "ConfigDef",
    "alter_incremental",
    "check",
    "replace",
]


def _replica_list(value: str) -> str | None:
    """Kafka's ThrottledReplicaListValidator: empty, "*", or "partition:broker" pairs."""
    text = value.strip()
    if text in ("", "*"):
        return None
    for pair in text.split(","):
        p, _, b = pair.strip().partition(":")
        if not (p.isascii() and p.isdigit() and b.isascii() and b.isdigit()):
            return f"{value!r} must be '*' or a list of partition:broker pairs"
    return None


def _rate(value: str) -> str | None:
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or int(text) > LONG_MAX:
        return f"{value!r} must be a non-negative long (bytes/s)"
    return None


# TOPIC_CONFIGS and BROKER_CONFIGS (defaults, types, docs) are protocol.describe_configs'.
_CHECKS = {LIST: _replica_list, LONG: _rate}

Problem = tuple[ErrorCode, str]


def check(key: str, value: str, known: Mapping[str, ConfigDef]) -> Problem | None:
    d = known.get(key)
    if d is None:
        return ErrorCode.INVALID_CONFIG, f"unknown config {key!r} (known: {', '.join(sorted(known))})"
    problem = _CHECKS[d.type](value)
    return None if problem is None else (ErrorCode.INVALID_CONFIG, f"invalid value for {key}: {problem}")


def replace(configs: Iterable[tuple[str, str | None]], known: Mapping[str, ConfigDef]) -> tuple[dict[str, str], Problem | None]:
    """Rule 1: the new whole config, or the first problem."""
    out: dict[str, str] = {}
    for key, value in configs:
        if value is None:
            return {}, (ErrorCode.INVALID_REQUEST, f"null value for {key!r}")
        problem = check(key, value, known)
        if problem is not None:
            return {}, problem
        out[key] = value
    return out, None


def alter_incremental(
    current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]], known: Mapping[str, ConfigDef]
) -> tuple[dict[str, str], Problem | None]:
    """Rule 2 applied to ``current``: the new config, or the first problem."""
    ops = list(ops)
    keys = [k for k, _, _ in ops]
    if len(set(keys)) != len(keys):
        return {}, (ErrorCode.INVALID_REQUEST, "a config key is given more than once")
    out = dict(current)
    for key, op, value in ops:
        d = known.get(key)
        if d is None:
            return {}, (ErrorCode.INVALID_CONFIG, f"unknown config {key!r} (known: {', '.join(sorted(known))})")
        if op == DELETE:
            out.pop(key, None)
            continue
        if op not in (SET, APPEND, SUBTRACT):
            return {}, (ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
        if value is None:
            return {}, (ErrorCode.INVALID_REQUEST, f"null value for {key!r}")
        if op == SET:
            new = value
        else:
            if d.type != LIST:
                return {}, (ErrorCode.INVALID_CONFIG, f"{key} is not a list: APPEND and SUBTRACT do not apply")
            have = [x for x in out.get(key, d.default).split(",") if x.strip()]
            items = [x for x in value.split(",") if x.strip()]
            if "*" in have + items and op == APPEND:
                return {}, (ErrorCode.INVALID_CONFIG, f"{key}: '*' takes no APPEND; SET it instead")
            if op == APPEND:
                new = ",".join(have + [x for x in items if x not in have])
            else:
                new = ",".join(x for x in have if x not in items)
        problem = check(key, new, known)
        if problem is not None:
            return {}, problem
        if new == "" and op == SUBTRACT:
            out.pop(key, None)  # an emptied list is no config (Kafka keeps "" - same effect)
        else:
            out[key] = new
    return out, None
