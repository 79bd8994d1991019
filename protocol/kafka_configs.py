"""Kafka's topic and broker configs as data: the one catalogue the controller and the simulated
brokers share. Pure; no I/O, nothing from above ``protocol``.

Kafka 3.9's (the last release with ZooKeeper mode, the one this project stands in for):

* ``TOPIC_CONFIGS``: every topic config of ``LogConfig`` with its ``ConfigDef`` type, default,
  validator and the broker configs it falls back to, in Kafka's order
  (``ServerTopicConfigSynonyms``; ``retention.ms`` falls back to ``log.retention.ms``, then
  ``log.retention.minutes`` x 60,000, then ``log.retention.hours`` x 3,600,000).
* ``BROKER_CONFIGS``: the broker configs this project describes: every broker synonym of a
  topic config, the replication throttles, a few read-only settings a simulated broker has, and
  Kafka's PASSWORD configs (always described without their value). ``dynamic`` marks the ones
  Kafka's ``DynamicBrokerConfig`` lets an admin client alter, per broker or cluster-wide; the
  others are read-only (``log.retention.hours``, ``log.roll.hours``, ``log.message.format.version``,
  ``broker.id``, ...).
* ``BROKER_SYNONYM_GROUPS``: Kafka's ``brokerConfigSynonyms``, the broker configs that set the
  same thing in other units.

Values are strings, as ZooKeeper stores them. ``problem(name, value, catalogue)`` checks one as
Kafka's ``ConfigDef`` parses and validates it, and words a refusal as Kafka's ConfigException
does: ``Invalid value 1x for configuration retention.ms: Not a number of type LONG``.

    problem("min.insync.replicas", "0", TOPIC_CONFIGS)
    # -> 'Invalid value 0 for configuration min.insync.replicas: Value must be at least 1'
    topic_value("retention.ms", {}, [{"log.retention.hours": "1"}])   # -> '3600000'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import throttled_replicas

# Kafka's ConfigType codes (DescribeConfigs v3+).
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)
TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", SHORT: "SHORT", LONG: "LONG", DOUBLE: "DOUBLE",
              LIST: "LIST", CLASS: "CLASS", PASSWORD: "PASSWORD"}
LONG_MAX = 2**63 - 1
_BOUNDS = {INT: (-(2**31), 2**31 - 1), SHORT: (-(2**15), 2**15 - 1), LONG: (-(2**63), LONG_MAX)}
_MINUTE_MS, _HOUR_MS = 60_000, 3_600_000


# ---- validators (Kafka's ConfigDef validators; each returns the rule broken, or None) --------


@dataclass(frozen=True)
class Range:
    """ConfigDef.Range: ``at_least`` and/or ``at_most`` on a number."""

    lo: float | None = None
    hi: float | None = None

    def __call__(self, value) -> str | None:
        if self.lo is not None and value < self.lo:
            return f"Value must be at least {_num(self.lo)}"
        if self.hi is not None and value > self.hi:
            return f"Value must be no more than {_num(self.hi)}"
        return None


@dataclass(frozen=True)
class OneOf:
    """ConfigDef.ValidString.in: the value is one of these (case-sensitive, as Kafka's)."""

    values: tuple[str, ...]

    def __call__(self, value: str) -> str | None:
        return None if value in self.values else f"String must be one of: {', '.join(self.values)}"


@dataclass(frozen=True)
class EachOf:
    """ConfigDef.ValidList.in: every item of a list is one of these."""

    values: tuple[str, ...]

    def __call__(self, items: list[str]) -> str | None:
        bad = [x for x in items if x not in self.values]
        return None if not bad else f"String must be one of: {', '.join(self.values)}"


def _throttled_replicas(items: list[str]) -> str | None:
    """Kafka's ThrottledReplicaListValidator, through the one parser of the format."""
    try:
        throttled_replicas.parse_items(items)
    except throttled_replicas.ThrottledReplicasError as e:
        return f"{throttled_replicas.RULE} ({e.entry!r} is not)"
    return None


def _gzip_level(value: int) -> str | None:
    # GzipCompression: Deflater's DEFAULT_COMPRESSION (-1) or a level from 1 to 9.
    return None if value == -1 or 1 <= value <= 9 else "Value must be between 1 and 9, or -1 (the default level)"


# Kafka's record format versions (MetadataVersion), short ("2.8") or with their IV ("3.0-IV1").
_FORMAT_VERSION = re.compile(r"^(0\.(8\.[0-2]|9\.0|10\.[0-2]|11\.0)|[1-3]\.\d+)(-IV\d+)?$")


def _format_version(value: str) -> str | None:
    return None if _FORMAT_VERSION.match(value) else "Unknown metadata.version or message format version"


# ---- the catalogue -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigDef:
    """One config: its default as Kafka writes it (None: no default), Kafka's type code, its
    documentation; its validator; a topic config's broker synonyms ((name, ms factor), Kafka's
    order); whether a broker config is dynamically updatable."""

    default: str | None
    type: int
    doc: str
    validator: object = None
    synonyms: tuple[tuple[str, int], ...] = ()
    dynamic: bool = False


def _t(type_, default, doc, validator=None, *synonyms) -> ConfigDef:
    return ConfigDef(default, type_, doc, validator, tuple(s if isinstance(s, tuple) else (s, 1) for s in synonyms))


_THROTTLED_DOC = ("A list of replicas whose replication is throttled on the {side} side: partition:broker pairs "
                  "([PartitionId]:[BrokerId],...), or the wildcard '*' for every replica of the topic.")

TOPIC_CONFIGS: dict[str, ConfigDef] = {
    "cleanup.policy": _t(LIST, "delete", "What happens to old segments: 'delete' removes them once past the retention "
                         "time or size, 'compact' keeps the latest record of each key; both may be given.",
                         EachOf(("compact", "delete")), "log.cleanup.policy"),
    "compression.gzip.level": _t(INT, "-1", "The level used when compression.type is gzip.", _gzip_level,
                                 "compression.gzip.level"),
    "compression.lz4.level": _t(INT, "9", "The level used when compression.type is lz4.", Range(1, 17),
                                "compression.lz4.level"),
    "compression.type": _t(STRING, "producer", "The topic's final compression: a codec (uncompressed, zstd, lz4, "
                           "snappy, gzip), or 'producer' to keep whatever the producer used.",
                           OneOf(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")), "compression.type"),
    "compression.zstd.level": _t(INT, "3", "The level used when compression.type is zstd.", Range(-131072, 22),
                                 "compression.zstd.level"),
    "delete.retention.ms": _t(LONG, "86400000", "How long delete tombstones stay in a compacted topic, so that "
                              "consumers reading from the start see them.", Range(0),
                              "log.cleaner.delete.retention.ms"),
    "file.delete.delay.ms": _t(LONG, "60000", "How long a deleted segment's files wait before removal from disk.",
                               Range(0), "log.segment.delete.delay.ms"),
    "flush.messages": _t(LONG, str(LONG_MAX), "Messages written between forced fsyncs of the log.", Range(1),
                         "log.flush.interval.messages"),
    "flush.ms": _t(LONG, str(LONG_MAX), "Milliseconds between forced fsyncs of the log.", Range(0),
                   "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "follower.replication.throttled.replicas": _t(LIST, "", _THROTTLED_DOC.format(side="follower"),
                                                  _throttled_replicas),
    "index.interval.bytes": _t(INT, "4096", "Bytes between entries of the offset index.", Range(0),
                               "log.index.interval.bytes"),
    "leader.replication.throttled.replicas": _t(LIST, "", _THROTTLED_DOC.format(side="leader"), _throttled_replicas),
    "local.retention.bytes": _t(LONG, "-2", "With tiered storage: the bytes a partition keeps locally before "
                                "deleting uploaded segments; -2 means retention.bytes.", Range(-2),
                                "log.local.retention.bytes"),
    "local.retention.ms": _t(LONG, "-2", "With tiered storage: how long uploaded segments stay local; -2 means "
                             "retention.ms.", Range(-2), "log.local.retention.ms"),
    "max.compaction.lag.ms": _t(LONG, str(LONG_MAX), "The longest a record stays ineligible for compaction.",
                                Range(1), "log.cleaner.max.compaction.lag.ms"),
    "max.message.bytes": _t(INT, "1048588", "The largest record batch the topic accepts (after compression).",
                            Range(0), "message.max.bytes"),
    "message.downconversion.enable": _t(BOOLEAN, "true", "Whether the broker converts batches down for older "
                                        "consumers (deprecated).", None, "log.message.downconversion.enable"),
    "message.format.version": _t(STRING, "3.0-IV1", "The record format version (deprecated; ignored from "
                                 "inter.broker.protocol.version 3.0).", _format_version, "log.message.format.version"),
    "message.timestamp.after.max.ms": _t(LONG, str(LONG_MAX), "How far a CreateTime timestamp may be ahead of the "
                                         "broker's clock.", Range(0), "log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": _t(LONG, str(LONG_MAX), "How far a CreateTime timestamp may be behind the "
                                          "broker's clock.", Range(0), "log.message.timestamp.before.max.ms"),
    "message.timestamp.difference.max.ms": _t(LONG, str(LONG_MAX), "The largest difference allowed between a "
                                              "CreateTime timestamp and the broker's clock (deprecated).", Range(0),
                                              "log.message.timestamp.difference.max.ms"),
    "message.timestamp.type": _t(STRING, "CreateTime", "Whose timestamp records carry: the producer's "
                                 "(CreateTime) or the broker's at append (LogAppendTime).",
                                 OneOf(("CreateTime", "LogAppendTime")), "log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": _t(DOUBLE, "0.5", "The share of a log not yet compacted above which the cleaner "
                                    "compacts it.", Range(0, 1), "log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": _t(LONG, "0", "The shortest time a record stays uncompacted.", Range(0),
                                "log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": _t(INT, "1", "The fewest in-sync replicas that must acknowledge a write with acks=all; "
                              "fewer, and such writes fail with NOT_ENOUGH_REPLICAS.", Range(1), "min.insync.replicas"),
    "preallocate": _t(BOOLEAN, "false", "Whether segment files are allocated on disk in full when created.", None,
                      "log.preallocate"),
    "remote.log.copy.disable": _t(BOOLEAN, "false", "With tiered storage: stop uploading segments, keep the "
                                  "remote ones readable."),
    "remote.log.delete.on.disable": _t(BOOLEAN, "false", "With tiered storage: whether turning it off deletes the "
                                       "remote data."),
    "remote.storage.enable": _t(BOOLEAN, "false", "Whether the topic uses tiered storage (the broker must have "
                                "remote.log.storage.system.enable)."),
    "retention.bytes": _t(LONG, "-1", "The most bytes a partition keeps before old segments are deleted (with the "
                          "delete policy); -1: no limit.", None, "log.retention.bytes"),
    "retention.ms": _t(LONG, "604800000", "How long a segment is kept before it is deleted (with the delete "
                       "policy); -1: no limit.", Range(-1), "log.retention.ms", ("log.retention.minutes", _MINUTE_MS),
                       ("log.retention.hours", _HOUR_MS)),
    "segment.bytes": _t(INT, "1073741824", "The size of a segment file: retention deletes whole segments.",
                        Range(14), "log.segment.bytes"),
    "segment.index.bytes": _t(INT, "10485760", "The size of a segment's offset index.", Range(4),
                              "log.index.size.max.bytes"),
    "segment.jitter.ms": _t(LONG, "0", "The most random time taken off segment.ms, so segments do not roll at once.",
                            Range(0), "log.roll.jitter.ms", ("log.roll.jitter.hours", _HOUR_MS)),
    "segment.ms": _t(LONG, "604800000", "The time after which a segment is rolled even if not full, so "
                     "retention can delete it.", Range(1), "log.roll.ms", ("log.roll.hours", _HOUR_MS)),
    "unclean.leader.election.enable": _t(BOOLEAN, "false", "Whether a replica outside the ISR may become leader "
                                         "when no ISR member is alive, at the cost of lost records.", None,
                                         "unclean.leader.election.enable"),
}


def _b(type_, default, doc, validator=None, *, dynamic: bool = True) -> ConfigDef:
    return ConfigDef(default, type_, doc, validator, (), dynamic)


def _broker_synonyms() -> dict[str, ConfigDef]:
    """The broker configs behind topic configs: the topic config's type, default and rule, as Kafka
    defines them (dynamic unless listed in _READ_ONLY_SYNONYMS)."""
    out: dict[str, ConfigDef] = {}
    for topic_name, d in TOPIC_CONFIGS.items():
        for i, (name, factor) in enumerate(d.synonyms):
            if i == 0:
                default = d.default if name not in _NO_DEFAULT else None
                out[name] = _b(d.type, default, f"The broker's default for {topic_name}. {d.doc}", d.validator,
                               dynamic=name not in _READ_ONLY_SYNONYMS)
            else:  # the same config in other units (hours, minutes), Kafka's INT, read-only
                default = _UNIT_DEFAULTS.get(name)
                unit = {_MINUTE_MS: "minutes", _HOUR_MS: "hours"}.get(factor, "milliseconds")
                out[name] = _b(INT if factor != 1 else d.type, default,
                               f"{topic_name}'s broker default in {unit}, used when the configs before it in "
                               f"its synonym list are unset.", Range(*_UNIT_RANGES.get(name, (None, None))),
                               dynamic=False)
    return out


# Broker synonyms Kafka defines without a default (the topic default then comes from the next).
_NO_DEFAULT = {"log.retention.ms", "log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms"}
_UNIT_DEFAULTS = {"log.retention.minutes": None, "log.retention.hours": "168", "log.roll.hours": "168",
                  "log.roll.jitter.hours": "0", "log.flush.scheduler.interval.ms": str(LONG_MAX)}
_UNIT_RANGES = {"log.roll.hours": (1, None), "log.roll.jitter.hours": (0, None)}
# DynamicLogConfig leaves out log.message.format.version (every broker must support it first).
_READ_ONLY_SYNONYMS = {"log.message.format.version"}

_RATE_DOC = ("The upper bound in bytes/s on replication traffic {what}; the throttled replicas are each topic's "
             "{side}.replication.throttled.replicas.")

BROKER_CONFIGS: dict[str, ConfigDef] = {
    **_broker_synonyms(),
    "leader.replication.throttled.rate": _b(LONG, str(LONG_MAX), _RATE_DOC.format(
        what="a leader serves to throttled followers", side="leader"), Range(0)),
    "follower.replication.throttled.rate": _b(LONG, str(LONG_MAX), _RATE_DOC.format(
        what="a follower fetches for throttled replicas", side="follower"), Range(0)),
    "replica.alter.log.dirs.io.max.bytes.per.second": _b(LONG, str(LONG_MAX), "The upper bound in bytes/s on "
                                                         "moving replicas between a broker's log dirs.", Range(0)),
    # Read-only: what a broker is started with.
    "broker.id": _b(INT, "-1", "The broker's id.", dynamic=False),
    "log.dirs": _b(LIST, None, "The directories that hold the broker's logs.", dynamic=False),
    "num.partitions": _b(INT, "1", "Partitions of a topic created without a count.", Range(1), dynamic=False),
    "default.replication.factor": _b(INT, "1", "Replication factor of a topic created without one.", dynamic=False),
    "replica.lag.time.max.ms": _b(LONG, "30000", "A follower that has not caught up with its leader for this long "
                                  "leaves the ISR.", dynamic=False),
    "remote.log.storage.system.enable": _b(BOOLEAN, "false", "Whether the broker has tiered storage.",
                                           dynamic=False),
    # Kafka's PASSWORD configs: never described with a value.
    "password.encoder.secret": _b(PASSWORD, None, "The secret that encodes dynamically configured passwords.",
                                  dynamic=False),
    "password.encoder.old.secret": _b(PASSWORD, None, "The previous password.encoder.secret, to re-encode "
                                      "passwords stored with it.", dynamic=False),
    "delegation.token.secret.key": _b(PASSWORD, None, "The key that signs and checks delegation tokens.",
                                      dynamic=False),
    "ssl.key.password": _b(PASSWORD, None, "The password of the key in the key store.", dynamic=False),
    "ssl.keystore.password": _b(PASSWORD, None, "The key store's password.", dynamic=False),
    "ssl.truststore.password": _b(PASSWORD, None, "The trust store's password.", dynamic=False),
    "ssl.keystore.key": _b(PASSWORD, None, "A PEM private key.", dynamic=False),
    "ssl.keystore.certificate.chain": _b(PASSWORD, None, "A PEM certificate chain.", dynamic=False),
    "ssl.truststore.certificates": _b(PASSWORD, None, "PEM trusted certificates.", dynamic=False),
    "sasl.jaas.config": _b(PASSWORD, None, "JAAS login context for SASL connections.", dynamic=False),
}

# Kafka's brokerConfigSynonyms: the broker configs that set one thing in several units, in order.
BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_GROUP_OF = {name: group for group in BROKER_SYNONYM_GROUPS for name in group}


def broker_synonyms(name: str) -> tuple[str, ...]:
    return _GROUP_OF.get(name, (name,))


_LISTENER_PREFIX = re.compile(r"^listener\.name\.[^.]*\.(.*)$")


def listener_base(name: str) -> ConfigDef | None:
    """The definition behind a listener-prefixed broker config (Kafka's KafkaConfig.configType:
    ``listener.name.secure.ssl.key.password`` is ``ssl.key.password``; a mechanism's
    ``listener.name.sasl.plain.sasl.jaas.config`` is ``sasl.jaas.config``), or None."""
    match = _LISTENER_PREFIX.match(name)
    if match is None:
        return None
    base = match.group(1)
    if base in BROKER_CONFIGS:
        return BROKER_CONFIGS[base]
    return next((d for known, d in BROKER_CONFIGS.items() if base.endswith("." + known)), None)


# ---- values --------------------------------------------------------------------------------------


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def parse(type_: int, text: str):
    """A string as Kafka's ConfigDef.parseType reads it: (value, None) or (None, the rule broken)."""
    trimmed = text.strip()
    if type_ == BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true", None
        return None, "Expected value to be either true or false"
    if type_ in _BOUNDS:
        lo, hi = _BOUNDS[type_]
        if re.fullmatch(r"[+-]?\d+", trimmed) and lo <= int(trimmed) <= hi:
            return int(trimmed), None
        return None, f"Not a number of type {TYPE_NAMES[type_]}"
    if type_ == DOUBLE:
        try:
            value = float(trimmed)
        except ValueError:
            value = math.nan
        if math.isnan(value) and trimmed.lower() != "nan":
            return None, "Not a number of type DOUBLE"
        return value, None
    if type_ == LIST:
        return ([x.strip() for x in trimmed.split(",")] if trimmed else []), None
    return trimmed, None


def problem(name: str, value: str, catalogue: Mapping[str, ConfigDef]) -> str | None:
    """Why ``value`` is not a valid ``name`` (Kafka's wording), or None. ``name`` must be known."""
    d = catalogue[name]
    parsed, broken = parse(d.type, value)
    if broken is None and d.validator is not None:
        broken = d.validator(parsed)
    return None if broken is None else f"Invalid value {value} for configuration {name}: {broken}"


def topic_problems(config: Mapping[str, str]) -> str | None:
    """Kafka's checks across a topic's whole config (LogConfig.validateValues and the broker's
    own), once every value is valid alone: the first broken, or None."""
    def value(name):
        return parse(TOPIC_CONFIGS[name].type, config.get(name, TOPIC_CONFIGS[name].default))[0]

    lo, hi = value("min.compaction.lag.ms"), value("max.compaction.lag.ms")
    if lo > hi:
        return f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})"
    if value("remote.storage.enable"):
        # No simulated broker has tiered storage (remote.log.storage.system.enable is false).
        return ("Tiered Storage functionality is disabled in the broker. "
                "Topic cannot be configured with remote log storage.")
    return None


def converted(value: str, factor: int) -> str:
    """A broker synonym's value in the topic config's unit (hours -> ms); -1 stays -1."""
    if factor == 1:
        return value
    parsed, broken = parse(LONG, value)
    if broken is not None:
        return value
    return str(parsed * factor) if parsed >= 0 else "-1"


def topic_value(name: str, topic_config: Mapping[str, str], layers: Sequence[Mapping[str, str]]) -> str | None:
    """The value a topic config has on a broker: the topic's own, else the first of its broker
    synonyms set in ``layers`` (Kafka's order, converted to its unit), else the default."""
    if name in topic_config:
        return topic_config[name]
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        return None
    for synonym, factor in d.synonyms:
        for layer in layers:
            if synonym in layer:
                return converted(layer[synonym], factor)
    for synonym, factor in d.synonyms:  # a broker default in other units (log.retention.hours)
        default = BROKER_CONFIGS[synonym].default
        if default is not None:
            return converted(default, factor)
    return d.default
