"""The controller's tunables: concurrency caps and timeouts, loaded from a JSON file.

Usage::

    config = load_config("controller.json")     # raises ConfigError with a clear reason
    config = ControllerConfig()                 # the defaults

The file is a JSON object whose keys are the field names below; any key left out takes its
default, an unknown key or a value of the wrong type or range is an error (a typo must not
silently fall back to a default)::

    {"max_incoming_per_broker": 10, "max_cluster_moves": 2000, "request_timeout_s": 10}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields


class ConfigError(ValueError):
    """A bad configuration file or value. The message says which key and why."""


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    # Per-broker caps on concurrent partition moves (cruise-control's
    # num.concurrent.partition.movements.per.broker is 5 in and 5 out by default; a
    # reassignd move is one partition, however many of its replicas change, so it is a
    # little coarser and the default a little higher).
    max_incoming_per_broker: int = 10  # moves adding a replica to the broker
    max_outgoing_per_broker: int = 10  # moves removing a replica from the broker
    # Cluster-wide cap: bounds the controller's in-memory running set and the size of a
    # failover's re-read (cruise-control: max.num.cluster.partition.movements = 1250).
    max_cluster_moves: int = 1000
    # One controller->broker request (LeaderAndIsr, StopReplica, UpdateMetadata).
    request_timeout_s: float = 10.0
    # Sends to a registered broker are retried this many times (connection refused while
    # the broker restarts) before the controller waits for it to re-register.
    request_retries: int = 3
    retry_backoff_s: float = 0.2
    # ZooKeeper session timeout: a dead active controller is replaced this long after it died.
    zk_session_timeout_s: float = 6.0
    # SIGTERM: the daemon is gone within this bound whatever is in flight.
    shutdown_timeout_s: float = 5.0
    # Coalescing: at most this many queued events are folded into one engine step (one
    # batched flush of ZooKeeper writes).
    max_events_per_step: int = 10000
    # ---- the admin listener (controller.shell.listener) ----
    # Largest request frame accepted; bigger ones close the connection before a byte of the
    # body is read (Kafka's socket.request.max.bytes default, 100 MiB).
    listener_max_request_bytes: int = 100 * 1024 * 1024
    # Open admin connections at once; further ones are closed on accept. Under the common
    # 1024 open-file limit, leaving room for ZooKeeper and broker connections.
    listener_max_connections: int = 512
    # A connection with nothing in flight and no bytes for this long is closed (Kafka's
    # connections.max.idle.ms default, 10 minutes).
    listener_idle_timeout_s: float = 600.0
    # Requests read ahead on one connection while earlier ones are being handled (answers
    # still go out in request order); a client sending more waits on TCP back-pressure.
    listener_max_pipelined: int = 64
    # ... and at most this many request bytes: read-ahead memory per connection stays bounded
    # however large the requests (one request of any allowed size is always read).
    listener_max_pipelined_bytes: int = 100 * 1024 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            want = _TYPES[f.name]
            if isinstance(value, bool) or not isinstance(value, want):
                raise ConfigError(f"{f.name} must be {_TYPE_NAMES[want]}, got {value!r}")
            low = _MINIMUM[f.name]
            if value < low:
                raise ConfigError(f"{f.name} must be >= {low}, got {value!r}")


_INT_FIELDS = {
    "max_incoming_per_broker": 1,
    "max_outgoing_per_broker": 1,
    "max_cluster_moves": 1,
    "request_retries": 0,
    "max_events_per_step": 1,
    "listener_max_request_bytes": 64,  # room for a request header and a small body
    "listener_max_connections": 1,
    "listener_max_pipelined": 1,
    "listener_max_pipelined_bytes": 1,
}
_FLOAT_FIELDS = {
    "request_timeout_s": 0.001,
    "retry_backoff_s": 0.0,
    "zk_session_timeout_s": 1.0,  # below this ZooKeeper negotiates it up anyway
    "shutdown_timeout_s": 0.1,
    "listener_idle_timeout_s": 0.01,
}
_TYPES: dict[str, type | tuple] = {**{k: int for k in _INT_FIELDS}, **{k: (int, float) for k in _FLOAT_FIELDS}}
_TYPE_NAMES = {int: "an integer", (int, float): "a number"}
_MINIMUM = {**_INT_FIELDS, **_FLOAT_FIELDS}


def config_from_dict(raw: object, source: str = "config") -> ControllerConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: must be a JSON object, got {type(raw).__name__}")
    known = {f.name for f in fields(ControllerConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}")
    try:
        return ControllerConfig(**raw)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(path: str) -> ControllerConfig:
    """Read a JSON config file; raise ConfigError (never anything else) if it is unusable."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is not valid JSON: {e}") from None
    return config_from_dict(raw, f"config file {path}")
