"""DescribeConfigs (32, KIP-133) entries as Kafka shapes them, for every server of the project.

The controller's admin listener and the simulated brokers both describe the dynamic configs
ZooKeeper holds (``/config/topics/T``, ``/config/brokers/N`` and the default entity) over Kafka's
configs (``protocol.kafka_configs``, the one catalogue); the servers add their own read-only
settings (``static``). This is the one place that turns them into Kafka's response entries, with
Kafka's rules (``kafka.server.ConfigHelper``):

 1. Which entries. A topic: every key of its config znode and every topic config of the
    catalogue. A broker N: its own keys, the default entity's, every broker config of the
    catalogue, and ``static``. The default entity (resource name ""): its own keys only, as
    Kafka describes it. ``configuration_keys`` null or empty: every entry; else the named ones
    that exist, in the order asked, each once (an unknown key gives nothing).
 2. Synonyms, in precedence order; the first is the entry's ``config_source``:
    DYNAMIC_TOPIC_CONFIG (1, ``/config/topics/T``); DYNAMIC_BROKER_CONFIG (2,
    ``/config/brokers/N``, on a broker: its own); DYNAMIC_DEFAULT_BROKER_CONFIG (3,
    ``/config/brokers/<default>``); STATIC_BROKER_CONFIG (4, a static setting whose value is
    not its default); DEFAULT_CONFIG (5, a catalogue default). A broker config's synonyms are
    its Kafka synonym group (``log.retention.ms``, ``.minutes``, ``.hours``) at each level in
    that order, dropped up to the first of its own name (Kafka's ``dropWhile``: an unset
    ``log.retention.ms`` lists nothing though ``log.retention.hours`` has a default). A topic
    config's are its own override, then those of its first broker synonym
    (``retention.ms`` -> ``log.retention.ms``); the throttled-replica lists have none. A topic
    config's value is its override, else the first broker synonym set, in the topic config's
    unit (``log.retention.hours=1`` -> ``3600000``), else the default. The default entity lists
    only its own synonym. ``synonyms`` are sent only when asked (v1+).
 3. ``read_only``: broker configs Kafka cannot alter dynamically and the static settings;
    false for topic configs and keys the catalogue does not know. ``is_default`` (v0 only):
    source is DEFAULT_CONFIG (Kafka's v0 rule). ``is_sensitive``: a PASSWORD config
    (``password.encoder.secret``, ``delegation.token.secret.key``, ``*.password``,
    ``sasl.jaas.config``, the PEM ones): its value and its synonyms' values are null.
 4. ``config_type`` (v3+): Kafka's type code, UNKNOWN (0) for a key the catalogue does not know
    (a value another tool stored is shown as it is). ``documentation`` (v3+): the config's doc
    when ``include_documentation`` is asked, else null.

    config_entries(4, {"leader.replication.throttled.rate": "1000"}, {}, DYNAMIC_BROKER_CONFIG,
                   None, synonyms=True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol import ApiKey
from protocol.kafka_configs import (
    BOOLEAN,
    BROKER_CONFIGS,
    CLASS,
    DOUBLE,
    INT,
    LIST,
    LONG,
    LONG_MAX,
    PASSWORD,
    SHORT,
    STRING,
    TOPIC_CONFIGS,
    UNKNOWN,
    ConfigDef,
    broker_synonyms,
    listener_base,
    topic_value,
)

__all__ = [
    "BOOLEAN", "BROKER", "BROKER_CONFIGS", "CLASS", "CONFIG_TYPES", "DEFAULT_CONFIG", "DOUBLE",
    "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "DYNAMIC_TOPIC_CONFIG", "INT", "LIST", "LONG",
    "LONG_MAX", "PASSWORD", "SHORT", "STATIC_BROKER_CONFIG", "STRING", "TOPIC", "TOPIC_CONFIGS", "UNKNOWN",
    "ConfigDef", "Static", "config_entries", "sensitive",
]

TOPIC = 2
BROKER = 4
# Kafka's ConfigSource codes (DescribeConfigs v1+).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# The type code of each known config, for servers that only need the type.
CONFIG_TYPES = {name: d.type for name, d in (TOPIC_CONFIGS | BROKER_CONFIGS).items()}
# Names Kafka gives PASSWORD configs, for keys the catalogue does not know (listener-prefixed ones).
_SENSITIVE_NAMES = ("sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                    "ssl.truststore.certificates", "password.encoder.secret", "password.encoder.old.secret",
                    "delegation.token.secret.key")


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


Chain = list[tuple[str, str | None, int]]  # (synonym name, value, source)


def _synonym_chain(name: str, layers, definitions: Mapping[str, ConfigDef]) -> Chain:
    """Kafka's configSynonyms(name, brokerConfigSynonyms(name)): the group's names at each level,
    then their defaults, dropped up to the first entry of ``name`` itself."""
    group = broker_synonyms(name)
    chain: Chain = [(s, layer[s], src) for layer, src in layers for s in group if s in layer]
    for s in group:
        d = definitions.get(s)
        if d is not None and d.default is not None:
            chain.append((s, d.default, DEFAULT_CONFIG))
    while chain and chain[0][0] != name:
        chain.pop(0)
    return chain


def config_entries(version, own: Mapping[str, str], inherited: Mapping[str, str], source: int, keys,
                   synonyms: bool, *, static: Mapping[str, Static] | None = None,
                   documentation: bool = False, broker_own: Mapping[str, str] | None = None) -> list[dict]:
    """One resource's entries (rules 1-4 above). ``own`` is its config znode's map, ``source``
    where it comes from (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, or
    DYNAMIC_DEFAULT_BROKER_CONFIG for the default entity); ``inherited`` the default entity's map
    (under a broker or a topic); ``broker_own`` the serving broker's own dynamic config (a topic
    described by a broker); ``static`` the serving process's read-only settings."""
    static = static or {}
    static_values = {k: s.value for k, s in static.items() if s.value is not None and s.value != s.definition.default}
    definitions: dict[str, ConfigDef] = BROKER_CONFIGS | {k: s.definition for k, s in static.items()}
    if source == DYNAMIC_TOPIC_CONFIG:
        names = set(own) | set(TOPIC_CONFIGS)
        layers = [(broker_own or {}, DYNAMIC_BROKER_CONFIG), (inherited, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (static_values, STATIC_BROKER_CONFIG)]
    elif source == DYNAMIC_BROKER_CONFIG:
        names = set(own) | set(inherited) | set(definitions)
        layers = [(own, DYNAMIC_BROKER_CONFIG), (inherited, DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (static_values, STATIC_BROKER_CONFIG)]
    else:  # the default entity: what it holds, nothing else
        names = set(own)
        layers = [(own, DYNAMIC_DEFAULT_BROKER_CONFIG)]
    chosen = [k for k in dict.fromkeys(keys) if k in names] if keys else sorted(names)
    out = []
    for name in chosen:
        if source == DYNAMIC_TOPIC_CONFIG:
            d = TOPIC_CONFIGS.get(name)
            chain: Chain = [(name, own[name], DYNAMIC_TOPIC_CONFIG)] if name in own else []
            if d is not None and d.synonyms:
                chain += _synonym_chain(d.synonyms[0][0], layers, definitions)
            value = topic_value(name, own, [layer for layer, _ in layers])
            read_only = False
        else:
            d = definitions.get(name) or listener_base(name)
            chain = _synonym_chain(name, layers, definitions)
            if source != DYNAMIC_BROKER_CONFIG:
                chain = [c for c in chain if c[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
            value = next((v for n, v, _ in chain if n == name), d.default if d is not None else None)
            read_only = name in static or (name in definitions and not d.dynamic)
        from_ = chain[0][2] if chain else DEFAULT_CONFIG
        hidden = sensitive(name, d)
        out.append({
            "name": name,
            "value": None if hidden else value,
            "read_only": read_only,
            "config_source": from_,
            "is_default": from_ == DEFAULT_CONFIG,
            "is_sensitive": hidden,
            "config_type": d.type if d is not None else UNKNOWN,
            "documentation": d.doc if documentation and d is not None else None,
            "synonyms": [{"name": n, "value": None if hidden else v, "source": src} for n, v, src in chain]
            if synonyms else [],
        })
    return out
