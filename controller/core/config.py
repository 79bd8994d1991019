"""Every setting of ``reassignd controller``, in one pydantic model, and how its sources merge.

Usage::

    resolved = resolve(file=parse_toml(data, "controller.toml"), file_name="controller.toml",
                       env=dict(os.environ), flags={"id": "101"})    # ConfigError if anything is bad
    resolved.settings.max_incoming_per_broker    # 10
    resolved.origins["id"]                       # "flag --id"
    print(render_toml(resolved))                 # what --print-config shows
    config = ControllerConfig()                  # the engine's tunables, all defaulted

Sources, highest first: command-line flags, ``REASSIGND_<NAME>`` environment variables, the
TOML file of ``--config`` (top-level ``name = value`` keys), the defaults below. Each setting is
one field of :class:`Settings`; its description is its documentation (``--help``,
``--print-config`` and the README table all come from it). A value is checked where it comes
from: the file's values keep their TOML types (``"10"`` is not an integer), the environment's
and the flags' are text converted to the field's type. Every bad value is reported, each as
``<setting> (<source>): <reason>``; an unknown key in the file is an error (a typo must not fall
back to a default silently).

Settings marked live are re-read on SIGHUP (controller.shell.daemon); the others need a
restart. Pure: no file, environment or clock is read here (the shell passes them in).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from controller.core.listeners import Listener, advertised_addresses, parse_listeners
from controller.core.move_order import parse as parse_strategies

ENV_PREFIX = "REASSIGND_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


# ZooKeeper carries a session timeout as int32 milliseconds.
ZK_MAX_SESSION_TIMEOUT_S = (2**31 - 1) / 1000


class ConfigError(ValueError):
    """Bad settings. The message names each setting, where its value came from and why."""


def _setting(default: Any = ..., doc: str = "", *, live: bool = False, **limits: Any) -> Any:
    return Field(default, description=doc, json_schema_extra={"live": live}, **limits)


def parse_hostport(text: str) -> tuple[str, int]:
    """``"host:port"`` (``"[::1]:9190"`` for IPv6) -> ``("host", port)``; ValueError if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"must be HOST:PORT with PORT in 0..65535, got {text!r}")
    return host.strip("[]"), int(port)


def _advertised_syntax(text: str) -> None:
    """HOST:PORT (the first listener's) or Kafka's NAME://HOST:PORT[,NAME://HOST:PORT...]."""
    if "://" in text:
        parse_listeners(text)
    else:
        parse_hostport(text)


def _strategies(text: str) -> str:
    """A strategy list (controller.core.move_order.parse), written back as ``a,b``; ValueError
    naming the unknown or repeated names."""
    return ",".join(parse_strategies(text))


def _regex(text: str) -> None:
    """ValueError unless ``text`` is a valid regular expression."""
    import re

    try:
        re.compile(text)
    except re.error as e:
        raise ValueError(f"not a regular expression: {e}") from None


class ControllerConfig(BaseModel):
    """The engine's and the shell's tunables: every field has a default."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    # Per-broker caps (cruise-control's num.concurrent.partition.movements.per.broker is 5 in
    # and 5 out; a reassignd move is one partition however many replicas change, so a little
    # coarser and the default a little higher).
    max_incoming_per_broker: Annotated[int, _setting(10, "concurrent moves adding a replica to one broker", live=True, ge=1)]
    max_outgoing_per_broker: Annotated[int, _setting(10, "concurrent moves removing a replica from one broker", live=True, ge=1)]
    # Bounds the in-memory running set and a failover's re-read (cruise-control: 1250).
    max_cluster_moves: Annotated[int, _setting(1000, "concurrent moves in the whole cluster", live=True, ge=1)]
    request_timeout_s: Annotated[float, _setting(10.0, "timeout of one controller->broker request (LeaderAndIsr, StopReplica, UpdateMetadata)", ge=0.001)]
    request_retries: Annotated[int, _setting(3, "retries of a send to a registered broker before waiting for it to re-register", ge=0)]
    broker_listener: Annotated[str, _setting("PLAINTEXT", "the brokers' listener (by name, in their /brokers/ids registrations) the controller sends its requests to, Kafka's inter.broker.listener.name (left at this default, --security-config's inter.broker.listener.name or security.inter.broker.protocol names it, as in Kafka); its protocol is --security-config's listener.security.protocol.map entry (TLS and SASL: the file's ssl.* keys, sasl.mechanism.inter.broker.protocol and listener.name.<name>.<mechanism>.sasl.jaas.config), else PLAINTEXT. A broker without it is alive but unreachable, never taken for dead", pattern=r"^[A-Za-z0-9_.-]+$")]
    retry_backoff_s: Annotated[float, _setting(0.2, "wait between those retries", ge=0.0)]
    # Below 1 s ZooKeeper negotiates it up anyway.
    zk_session_timeout_s: Annotated[float, _setting(6.0, "ZooKeeper session timeout: a crashed active controller is replaced this long after it died", ge=1.0,
                                                    le=ZK_MAX_SESSION_TIMEOUT_S)]
    shutdown_timeout_s: Annotated[float, _setting(5.0, "SIGTERM: the process is gone within this bound whatever is in flight", ge=0.1)]
    max_events_per_step: Annotated[int, _setting(10000, "queued events folded into one engine step (one batched flush of ZooKeeper writes)", ge=1)]
    # Kafka's socket.request.max.bytes; the minimum leaves room for a header and a small body.
    listener_max_request_bytes: Annotated[int, _setting(100 * 1024 * 1024, "largest admin request frame accepted (bigger ones close the connection unread)", ge=64)]
    # Under the common 1024 open-file limit, with room for ZooKeeper and broker connections.
    listener_max_connections: Annotated[int, _setting(512, "admin connections open at once; further ones are closed on accept", ge=1)]
    # Kafka's connections.max.idle.ms.
    listener_idle_timeout_s: Annotated[float, _setting(600.0, "an admin connection idle this long is closed", ge=0.01)]
    listener_max_pipelined: Annotated[int, _setting(64, "requests read ahead on one admin connection", ge=1)]
    listener_max_pipelined_bytes: Annotated[int, _setting(100 * 1024 * 1024, "request bytes read ahead on one admin connection", ge=1)]
    # ISR-aware execution (controller.core.isr_health, engine step 2a-2b; Cruise Control's
    # executor skips partitions at min ISR and lowers concurrency while any is under it).
    isr_aware_moves: Annotated[bool, _setting(True, "a pending move whose partition's ISR is short and at or under its min.insync.replicas (all replicas live) waits until the ISR recovers; an entry's skip_isr_check starts it anyway")]
    isr_wait_offline_replicas: Annotated[bool, _setting(False, "with isr_aware_moves, a move of a partition with a replica on a broker not live waits too (off: a dead broker may never return, and moving off it is the point)")]
    isr_throttled_concurrency: Annotated[int, _setting(1, "per-broker cap on concurrent moves (incoming and outgoing) while any partition is under its min.insync.replicas", ge=1)]
    # Kafka's broker default of min.insync.replicas; a topic's /config/topics/T overrides it.
    min_insync_replicas: Annotated[int, _setting(1, "the cluster default of min.insync.replicas for topics without their own (the brokers' setting)", ge=1)]
    # Cruise Control's replica_movement_strategies (controller.core.move_order, engine step 2c).
    replica_movement_strategies: Annotated[str, _setting("order_given", "the order pending moves start in: comma-separated strategies, the first deciding and the next breaking its ties: order_given (as requested), smallest_first / largest_first (bytes to copy, sizes from the brokers' DescribeLogDirs answers), under_replicated_last, leader_moves_first (moves that copy nothing); a request's own list orders its moves", live=True)]
    # Kafka's delete.topic.enable (true since 1.0).
    delete_topic_enable: Annotated[bool, _setting(True, "DeleteTopics and /admin/delete_topics delete topics; false: refused (TOPIC_DELETION_DISABLED; INVALID_REQUEST for DeleteTopics v0-2, as Kafka) and markers dropped")]
    # Kafka's auto.leader.rebalance.enable, leader.imbalance.per.broker.percentage and
    # leader.imbalance.check.interval.seconds (controller.core.elections.imbalanced).
    auto_leader_rebalance_enable: Annotated[bool, _setting(True, "elect preferred leaders back when a broker's share of partitions led by others exceeds leader_imbalance_per_broker_percentage")]
    leader_imbalance_per_broker_percentage: Annotated[int, _setting(10, "the share (percent) of a broker's preferred partitions led by others that triggers the rebalance", ge=0, le=100)]
    leader_imbalance_check_interval_s: Annotated[float, _setting(300.0, "how often the active controller checks the leader imbalance", gt=0.0)]
    # The topic policy (Kafka's create.topic.policy.class.name, as rules; controller.core.topic_policy):
    # CreateTopics / CreatePartitions breaking one get POLICY_VIOLATION for that topic.
    topic_policy_min_replication_factor: Annotated[int | None, _setting(None, "topic policy: a new topic's replication factor is at least this; unset: no minimum", ge=1)]
    topic_policy_max_replication_factor: Annotated[int | None, _setting(None, "topic policy: a new topic's replication factor is at most this; unset: no maximum", ge=1)]
    topic_policy_max_partitions: Annotated[int | None, _setting(None, "topic policy: a topic has at most this many partitions, when created and after CreatePartitions; unset: no maximum", ge=1)]
    topic_policy_name_pattern: Annotated[str | None, _setting(None, "topic policy: a new topic's whole name matches this regular expression (e.g. \"(orders|payments)\\..+\" for a required prefix); unset: any legal name", min_length=1)]

    @field_validator("topic_policy_name_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            _regex(value)
        return value

    @field_validator("replica_movement_strategies")
    @classmethod
    def _strategies(cls, value: str) -> str:
        return _strategies(value)


class Settings(ControllerConfig):
    """Everything one ``reassignd controller`` process is told: the tunables plus who it is,
    where it listens and how it logs."""

    zookeeper: Annotated[str, _setting(doc="ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot]", min_length=1)]
    id: Annotated[int, _setting(doc="this controller's id, written to /controller", ge=0, le=2**31 - 1)]
    listen: Annotated[str, _setting(doc="the admin listeners: [NAME://]HOST:PORT, several comma-separated or --listen given again (Kafka's listeners; NAME's protocol from the security config, no NAME: PLAINTEXT), port 0 picks a free one")]
    security_config: Annotated[str | None, _setting(None, "Kafka-style properties file of listener security (TLS, SASL), the ACL authorizer and ZooKeeper authentication (controller.shell.security.config); unset: PLAINTEXT, no authorizer")]
    advertised_listen: Annotated[str | None, _setting(None, "where clients are told to reach the listeners (/reassignd/controllers, Metadata): HOST:PORT for the first, or Kafka's advertised.listeners form NAME://HOST:PORT[,NAME://HOST:PORT...] for any; the others at their bound address. A listener bound to 0.0.0.0 (as in a container) needs one: Kafka refuses to advertise a wildcard too")]
    ops_listen: Annotated[str | None, _setting(None, "HOST:PORT of the operations HTTP server (/healthz, /readyz, /metrics); unset: none")]
    copy_progress_interval_s: Annotated[float, _setting(10.0, "while active, sample the brokers' log sizes this often for the bytes-remaining and copy-rate metrics", gt=0.0)]
    ops_max_loop_lag_s: Annotated[float, _setting(1.0, "/healthz fails while the event loop lags behind by more than this", gt=0.0)]
    log_level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], _setting("INFO", "log level", live=True)]
    log_format: Annotated[Literal["text", "json"], _setting("text", "log lines: text, or json (one JSON object per line)")]
    audit_log: Annotated[str | None, _setting(None, "file that also receives the audit log (JSON lines); it always goes to the log as logger reassignd.audit")]
    write_audit: Annotated[str | None, _setting(None, "file that receives every committed fenced ZooKeeper write, each election and each fenced-off write as a JSON line (controller.shell.audit); unset: none")]

    @field_validator("zookeeper")
    @classmethod
    def _connect_string(cls, value: str) -> str:
        from znodes.paths import split_connect_string

        split_connect_string(value)  # raises ValueError with the reason
        return value

    @field_validator("ops_listen")
    @classmethod
    def _hostport(cls, value: str | None) -> str | None:
        if value is not None:
            parse_hostport(value)
        return value

    @field_validator("advertised_listen")
    @classmethod
    def _advertised(cls, value: str | None) -> str | None:
        if value is not None:
            _advertised_syntax(value)
        return value

    @field_validator("listen")
    @classmethod
    def _listeners(cls, value: str) -> str:
        parse_listeners(value)
        return value

    @property
    def listeners(self) -> list[Listener]:
        return parse_listeners(self.listen)

    @property
    def listen_address(self) -> tuple[str, int]:
        first = self.listeners[0]
        return first.host, first.port

    @property
    def ops_address(self) -> tuple[str, int] | None:
        return None if self.ops_listen is None else parse_hostport(self.ops_listen)

    def tunables(self) -> ControllerConfig:
        return ControllerConfig(**{name: getattr(self, name) for name in ControllerConfig.model_fields})


FIELDS = Settings.model_fields
LIVE = frozenset(name for name, f in FIELDS.items() if (f.json_schema_extra or {}).get("live"))
# Durations and rates are finite: "inf" parses as a float, and a timer or a ZooKeeper session
# given one fails only when it is used.
_FINITE = ConfigDict(allow_inf_nan=False)
_ADAPTERS = {
    name: TypeAdapter(Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation, config=_FINITE)
    for name, f in FIELDS.items()
}


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def describe(name: str) -> str:
    """A setting's documentation line: description, default, live or not."""
    f = FIELDS[name]
    default = "required" if f.is_required() else f"default {_toml_value(f.default)}"
    return f"{f.description}; {default}{'; reloaded on SIGHUP' if name in LIVE else ''}"


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    origins: dict[str, str]  # setting -> "default" | "file F" | "env REASSIGND_X" | "flag --x"


def parse_toml(data: bytes, file_name: str) -> dict:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {file_name} is not valid TOML: {e}") from None


def resolve(
    *,
    file: Mapping[str, Any] | None = None,
    file_name: str = "",
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, str | None] | None = None,
) -> Resolved:
    """Merge the sources (flags > env > file > defaults) and validate; ConfigError lists every
    bad value."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    errors: list[str] = []

    def take(name: str, raw: Any, source: str, *, text: bool) -> None:
        if text and raw == "" and not FIELDS[name].is_required() and FIELDS[name].default is None:
            value = None  # an empty REASSIGND_OPS_LISTEN= or --ops-listen= unsets it
        else:
            try:
                value = _ADAPTERS[name].validate_python(raw, strict=not text)
                check = _FIELD_CHECKS.get(name)
                if check is not None and value is not None:  # the model's field validators, run here
                    check(value)                             # so the error names its source
            except ValidationError as e:
                errors.append(f"{name} ({source}): {_reason(e)}")
                return
            except ValueError as e:
                errors.append(f"{name} ({source}): {e}")
                return
        values[name] = value
        origins[name] = source

    for key, raw in (file or {}).items():
        if key not in FIELDS:
            errors.append(f"{key} (file {file_name}): unknown setting; known: {', '.join(sorted(FIELDS))}")
        else:
            take(key, raw, f"file {file_name}", text=False)
    for name in FIELDS:
        var = env_name(name)
        if env and var in env:
            take(name, env[var], f"env {var}", text=True)
    for name, raw in (flags or {}).items():
        if raw is not None:
            take(name, raw, f"flag {flag_name(name)}", text=True)
    for name, f in FIELDS.items():
        if f.is_required() and name not in values and not any(e.startswith(f"{name} (") for e in errors):
            errors.append(f"{name}: required; give {flag_name(name)}, {env_name(name)} or `{name}` in the config file")
        origins.setdefault(name, "default")
    low, high = values.get("topic_policy_min_replication_factor"), values.get("topic_policy_max_replication_factor")
    if low is not None and high is not None and low > high:
        errors.append(f"topic_policy_min_replication_factor ({origins['topic_policy_min_replication_factor']}) is {low}, above "
                      f"topic_policy_max_replication_factor ({origins['topic_policy_max_replication_factor']}) {high}: "
                      "no topic could be created")
    listen, advertised = values.get("listen"), values.get("advertised_listen")
    if listen is not None:
        try:
            advertised_addresses(parse_listeners(listen), advertised)
        except ValueError as e:
            where = origins.get("advertised_listen") if advertised is not None else origins["listen"]
            errors.append(f"{'advertised_listen' if advertised is not None else 'listen'} ({where}): {e}")
    if errors:
        raise ConfigError("bad configuration:\n  " + "\n  ".join(errors))
    return Resolved(Settings(**values), origins)


def reload_changes(old: Settings, new: Settings) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """What a reload may apply now (live settings that changed: name -> (old, new)) and what
    changed but needs a restart."""
    live, restart = {}, []
    for name in FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            if name in LIVE:
                live[name] = (before, after)
            else:
                restart.append(name)
    return live, restart


def render_toml(resolved: Resolved) -> str:
    """The effective settings as a TOML file (usable as ``--config``), each line saying where
    its value came from, followed by the setting's documentation."""
    lines = ["# reassignd controller: effective configuration", "# precedence: flags > REASSIGND_* environment > config file > defaults"]
    for name in FIELDS:
        value = getattr(resolved.settings, name)
        body = f"{name} = {_toml_value(value)}" if value is not None else f"# {name} is unset"
        lines.append(f"{body:<48} # from {resolved.origins[name]}: {describe(name)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"  # TOML's spelling, not Python's
    return repr(value)


def to_toml(values: Mapping[str, Any]) -> str:
    """A flat mapping of settings as TOML text (for tests and tools that write config files)."""
    return "".join(f"{k} = {_toml_value(v)}\n" for k, v in values.items())


def _reason(error: ValidationError) -> str:
    first = error.errors()[0]
    msg = first["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return f"{msg}, got {first['input']!r}"


_FIELD_CHECKS = {
    "zookeeper": Settings._connect_string,
    "listen": parse_listeners,
    "ops_listen": parse_hostport,
    "advertised_listen": _advertised_syntax,
    "topic_policy_name_pattern": _regex,
    "replica_movement_strategies": _strategies,
}
