"""DescribeConfigs (32, KIP-133) entries as Kafka shapes them, for every server of the project.

The controller's admin listener and the simulated brokers both describe the dynamic configs
ZooKeeper holds (``/config/topics/T``, ``/config/brokers/N`` and the default entity) over the
defaults of the configs this project knows; the controller adds its own read-only settings
(``static``). This is the one place that turns them into Kafka's response entries, with Kafka's
rules (``kafka.server.ConfigHelper``):

 1. Which entries. A topic: every key of its config znode, and every topic config this project
    knows (``TOPIC_CONFIGS``) at its default. A broker N: its own keys, the default entity's,
    every broker config known here (``BROKER_CONFIGS``) at its default, and ``static``. The
    default entity (resource name ""): its own keys only, as Kafka describes it.
    ``configuration_keys`` null or empty: every entry; else the named ones that exist, in the
    order asked, each once (an unknown key gives nothing).
 2. Synonyms, in precedence order; the first is the entry's value and ``config_source``:
    DYNAMIC_TOPIC_CONFIG (1, ``/config/topics/T``); DYNAMIC_BROKER_CONFIG (2,
    ``/config/brokers/N``); DYNAMIC_DEFAULT_BROKER_CONFIG (3, ``/config/brokers/<default>``);
    STATIC_BROKER_CONFIG (4, a static setting whose value is not its default); DEFAULT_CONFIG (5,
    the default of a known broker config). A topic's known configs have no broker synonym (Kafka's
    throttled-replica lists have none), so an unset one has no synonym and source DEFAULT_CONFIG.
    The default entity lists only its own synonym. ``synonyms`` are sent only when asked (v1+).
 3. ``read_only``: true for static (not dynamically alterable) broker configs, false for topic
    configs and the dynamic broker configs. ``is_default`` (v0 only): source is DEFAULT_CONFIG
    (Kafka's v0 rule). ``is_sensitive``: a PASSWORD config (Kafka's type for ``*.password``,
    ``sasl.jaas.config``, the PEM key and certificate configs): its value and its synonyms'
    values are null.
 4. ``config_type`` (v3+): Kafka's type code of a known config, UNKNOWN (0) for a key this
    project does not know (a value another tool stored is shown as it is: Kafka knows the type of
    every config, this project only of its own). ``documentation`` (v3+): the config's doc when
    ``include_documentation`` is asked, else null.

    config_entries(4, {"leader.replication.throttled.rate": "1000"}, {}, DYNAMIC_BROKER_CONFIG,
                   None, synonyms=True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DESCRIBE_CONFIGS = 32
TOPIC = 2
BROKER = 4
# Kafka's ConfigSource codes (DescribeConfigs v1+).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
# Kafka's ConfigType codes (v3+).
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ConfigDef:
    default: str | None  # None: no default (Kafka's NO_DEFAULT_VALUE or a null default)
    type: int
    doc: str


# The dynamic configs this project reads and writes (the KIP-73 throttles KIP-179 drives).
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    "leader.replication.throttled.replicas": ConfigDef(
        "", LIST, "A list of replicas for which log replication should be throttled on the leader side. The list "
        "should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or "
        "alternatively the wildcard '*' can be used to throttle all replicas for this topic."),
    "follower.replication.throttled.replicas": ConfigDef(
        "", LIST, "A list of replicas for which log replication should be throttled on the follower side. The list "
        "should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or "
        "alternatively the wildcard '*' can be used to throttle all replicas for this topic."),
}
BROKER_CONFIGS: dict[str, ConfigDef] = {
    "leader.replication.throttled.rate": ConfigDef(
        str(LONG_MAX), LONG, "A long representing the upper bound (bytes/sec) on replication traffic for leaders "
        "enumerated in the property leader.replication.throttled.replicas (for each topic)."),
    "follower.replication.throttled.rate": ConfigDef(
        str(LONG_MAX), LONG, "A long representing the upper bound (bytes/sec) on replication traffic for followers "
        "enumerated in the property follower.replication.throttled.replicas (for each topic)."),
}
# The type code of each known config, for servers that only need the type.
CONFIG_TYPES = {name: d.type for name, d in (TOPIC_CONFIGS | BROKER_CONFIGS).items()}
_SENSITIVE_NAMES = ("sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                    "ssl.truststore.certificates")


@dataclass(frozen=True)
class Static:
    """A read-only setting of the serving process, under its Kafka name."""

    value: str | None
    definition: ConfigDef


def sensitive(name: str, definition: ConfigDef | None) -> bool:
    """Kafka's PASSWORD configs: known ones by type, others by Kafka's names for them."""
    if definition is not None:
        return definition.type == PASSWORD
    return name.endswith(".password") or name.endswith(_SENSITIVE_NAMES)


def config_entries(version, own: Mapping[str, str], inherited: Mapping[str, str], source: int, keys,
                   synonyms: bool, *, static: Mapping[str, Static] | None = None,
                   documentation: bool = False) -> list[dict]:
    """One resource's entries (rules 1-4 above): ``own`` is its config znode's map, ``source``
    where it comes from (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, or
    DYNAMIC_DEFAULT_BROKER_CONFIG for the default entity); ``inherited`` the default entity's
    map under a broker; ``static`` the serving process's read-only settings (brokers only)."""
    static = {} if source != DYNAMIC_BROKER_CONFIG or static is None else static
    if source == DYNAMIC_TOPIC_CONFIG:
        known: Mapping[str, ConfigDef] = TOPIC_CONFIGS
        names = set(own) | set(known)
    elif source == DYNAMIC_BROKER_CONFIG:
        known = BROKER_CONFIGS | {k: s.definition for k, s in static.items()}
        names = set(own) | set(inherited) | set(known)
    else:  # the default entity: what it holds, nothing else
        known = BROKER_CONFIGS
        names = set(own)
    if keys:
        chosen = [k for k in dict.fromkeys(keys) if k in names]
    else:
        chosen = sorted(names)
    out = []
    for name in chosen:
        d = known.get(name)
        chain: list[tuple[str | None, int]] = []
        if name in own:
            chain.append((own[name], source))
        if source == DYNAMIC_BROKER_CONFIG:
            if name in inherited:
                chain.append((inherited[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
            s = static.get(name)
            if s is not None and s.value != d.default:
                chain.append((s.value, STATIC_BROKER_CONFIG))
            if d is not None and d.default is not None:
                chain.append((d.default, DEFAULT_CONFIG))
        value, from_ = chain[0] if chain else (d.default if d is not None else None, DEFAULT_CONFIG)
        hidden = sensitive(name, d)
        entry = {
            "name": name,
            "value": None if hidden else value,
            "read_only": name in static,
            "config_source": from_,
            "is_default": from_ == DEFAULT_CONFIG,
            "is_sensitive": hidden,
            "config_type": d.type if d is not None else UNKNOWN,
            "documentation": d.doc if documentation and d is not None else None,
            "synonyms": [{"name": name, "value": None if hidden else v, "source": src} for v, src in chain]
            if synonyms else [],
        }
        out.append(entry)
    return out
