"""DescribeConfigs (32, KIP-133) entries as Kafka shapes them, for every server of the project.

The controller's admin listener and the simulated brokers both describe the dynamic configs
ZooKeeper holds (``/config/topics/T``, ``/config/brokers/N`` and the default entity); this is
the one place that turns a config map into Kafka's response entries.

    config_entries(4, {"leader.replication.throttled.rate": "1000"}, {}, DYNAMIC_BROKER_CONFIG,
                   None, synonyms=False)
"""

from __future__ import annotations

DESCRIBE_CONFIGS = 32
TOPIC = 2
BROKER = 4
# Kafka's ConfigSource codes (DescribeConfigs v1+).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
# Kafka's ConfigType codes (v3+) for the keys this project writes; others are UNKNOWN (0).
LONG, LIST = 5, 7
CONFIG_TYPES = {
    "leader.replication.throttled.rate": LONG,
    "follower.replication.throttled.rate": LONG,
    "leader.replication.throttled.replicas": LIST,
    "follower.replication.throttled.replicas": LIST,
}


def config_entries(version, own: dict, inherited: dict, source: int, keys, synonyms: bool) -> list[dict]:
    """One resource's entries: its own values (``source``) over the inherited default entity's
    ones, only ``keys`` when given, with synonyms in precedence order when asked (v1+)."""
    merged = {k: (v, DYNAMIC_DEFAULT_BROKER_CONFIG) for k, v in inherited.items()}
    merged.update({k: (v, source) for k, v in own.items()})
    names = sorted(merged) if keys is None else [k for k in dict.fromkeys(keys) if k in merged]
    out = []
    for name in names:
        value, from_ = merged[name]
        entry = {
            "name": name,
            "value": value,
            "read_only": False,
            "config_source": from_,
            "is_default": False,
            "is_sensitive": False,
            "config_type": CONFIG_TYPES.get(name, 0),
            "documentation": None,
            "synonyms": [],
        }
        if synonyms:
            entry["synonyms"].append({"name": name, "value": value, "source": from_})
            if from_ != DYNAMIC_DEFAULT_BROKER_CONFIG and name in inherited:
                entry["synonyms"].append({"name": name, "value": inherited[name], "source": DYNAMIC_DEFAULT_BROKER_CONFIG})
        out.append(entry)
    return out
