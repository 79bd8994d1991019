"""Znode payloads <-> the controller's state types (controller.state).

Decoders raise :class:`znodes.errors.ZnodeFormatError` naming the path and the problem, and
nothing else; encoders write Kafka's formats (DESIGN.md section 3) compactly.

    decode_topic("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1,2]}}')
    # {0: Assignment(replicas=(1, 2), adding=(), removing=())}
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from controller.state import Assignment, Broker, LeaderIsr, Request
from znodes.errors import ZnodeFormatError

MAX_INT32 = 2**31 - 1


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(path: str, data: bytes) -> dict:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ZnodeFormatError(path, f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise ZnodeFormatError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def _int(path: str, value, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INT32:
        raise ZnodeFormatError(path, f"{what} must be an int in [{minimum}, {MAX_INT32}], got {value!r}")
    return value


def _int_list(path: str, value, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZnodeFormatError(path, f"{what} must be a list of broker ids, got {value!r}")
    return tuple(_int(path, v, f"{what} entry") for v in value)


def _version(path: str, obj: dict, allowed: Iterable[int]) -> int:
    version = obj.get("version")
    if version not in tuple(allowed) or isinstance(version, bool):
        raise ZnodeFormatError(path, f"unsupported version {version!r}")
    return version


# ---- /brokers/topics/T ---------------------------------------------------------------------


def decode_topic(path: str, data: bytes) -> dict[int, Assignment]:
    obj = _load(path, data)
    _version(path, obj, (1, 2))
    parts = obj.get("partitions")
    if not isinstance(parts, dict):
        raise ZnodeFormatError(path, "partitions must be an object")
    extra = {}
    for key in ("adding_replicas", "removing_replicas"):
        value = obj.get(key) or {}
        if not isinstance(value, dict):
            raise ZnodeFormatError(path, f"{key} must be an object")
        extra[key] = value
    out: dict[int, Assignment] = {}
    for key, replicas in parts.items():
        if not (key.isascii() and key.isdigit()):
            raise ZnodeFormatError(path, f"partition key {key!r} is not a partition number")
        p = _int(path, int(key), "partition")
        out[p] = Assignment(
            _int_list(path, replicas, f"partition {key} replicas"),
            _int_list(path, extra["adding_replicas"].get(key, []), f"adding_replicas {key}"),
            _int_list(path, extra["removing_replicas"].get(key, []), f"removing_replicas {key}"),
        )
    return dict(sorted(out.items()))


def encode_topic(assignments: dict[int, Assignment]) -> bytes:
    ordered = sorted(assignments.items())
    return _json(
        {
            "version": 2,
            "partitions": {str(p): list(a.replicas) for p, a in ordered},
            "adding_replicas": {str(p): list(a.adding) for p, a in ordered if a.adding},
            "removing_replicas": {str(p): list(a.removing) for p, a in ordered if a.removing},
        }
    )


# ---- /brokers/topics/T/partitions/P/state --------------------------------------------------


def decode_state(path: str, data: bytes, zk_version: int) -> LeaderIsr:
    obj = _load(path, data)
    _version(path, obj, (1,))
    return LeaderIsr(
        leader=_int(path, obj.get("leader"), "leader", minimum=-1),
        leader_epoch=_int(path, obj.get("leader_epoch"), "leader_epoch", minimum=-1),
        controller_epoch=_int(path, obj.get("controller_epoch"), "controller_epoch", minimum=-1),
        isr=_int_list(path, obj.get("isr"), "isr"),
        zk_version=zk_version,
    )


def encode_state(state: LeaderIsr) -> bytes:
    # Field order as Kafka's PartitionStateZNode writes it.
    return _json(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


# ---- /admin/reassign_partitions ------------------------------------------------------------


def decode_requests(path: str, data: bytes) -> list[Request]:
    """All entries, in order. Structural problems of any entry reject the whole znode."""
    obj = _load(path, data)
    _version(path, obj, (1,))
    parts = obj.get("partitions")
    if not isinstance(parts, list):
        raise ZnodeFormatError(path, "partitions must be a list")
    out = []
    for i, entry in enumerate(parts):
        if not isinstance(entry, dict):
            raise ZnodeFormatError(path, f"partitions[{i}] must be an object")
        topic = entry.get("topic")
        if not isinstance(topic, str) or not topic:
            raise ZnodeFormatError(path, f"partitions[{i}].topic must be a non-empty string")
        partition = _int(path, entry.get("partition"), f"partitions[{i}].partition")
        replicas = _int_list(path, entry.get("replicas"), f"partitions[{i}].replicas")
        original = entry.get("original_replicas")
        if original is not None:
            original = _int_list(path, original, f"partitions[{i}].original_replicas")
        out.append(Request(topic, partition, replicas, original))
    return out


def encode_requests(requests: Iterable[Request]) -> bytes:
    entries = []
    for r in requests:
        entry = {"topic": r.topic, "partition": r.partition, "replicas": list(r.replicas)}
        if r.original_replicas is not None:
            entry["original_replicas"] = list(r.original_replicas)
        entries.append(entry)
    return _json({"version": 1, "partitions": entries})


# ---- /admin/reassignments/T/P (KIP-240) ----------------------------------------------------


def decode_record(path: str, data: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(target replicas, original replicas)."""
    obj = _load(path, data)
    _version(path, obj, (1,))
    target = _int_list(path, obj.get("replicas"), "replicas")
    original = _int_list(path, obj.get("original_replicas"), "original_replicas")
    if not target:
        raise ZnodeFormatError(path, "replicas must not be empty")
    return target, original


def encode_record(target, original) -> bytes:
    return _json({"version": 1, "replicas": list(target), "original_replicas": list(original)})


# ---- /brokers/ids/N, /controller, /controller_epoch, notifications --------------------------


def decode_broker(path: str, data: bytes, broker_id: int, czxid: int) -> Broker:
    obj = _load(path, data)
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ZnodeFormatError(path, f"unsupported version {version!r}")
    host, port = obj.get("host"), obj.get("port")
    for endpoint in obj.get("endpoints") or []:
        if isinstance(endpoint, str) and endpoint.startswith("PLAINTEXT://"):
            h, _, p = endpoint[len("PLAINTEXT://") :].rpartition(":")
            if h and p.isdigit():
                host, port = h.strip("[]"), int(p)
                break
    if not isinstance(host, str) or not host:
        raise ZnodeFormatError(path, "no PLAINTEXT endpoint and no host")
    port = _int(path, port, "port", minimum=1)
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZnodeFormatError(path, "rack must be a string")
    return Broker(broker_id, host, port, rack, czxid)


def encode_controller(controller_id: int, timestamp_ms: int) -> bytes:
    return _json({"version": 1, "brokerid": controller_id, "timestamp": str(timestamp_ms)})


def decode_controller(path: str, data: bytes) -> int:
    obj = _load(path, data)
    return _int(path, obj.get("brokerid"), "brokerid")


def decode_epoch(path: str, data: bytes) -> int:
    text = data.decode("ascii", "replace").strip()
    if not (text.isascii() and text.isdigit()):
        raise ZnodeFormatError(path, f"controller epoch must be an integer, got {text[:40]!r}")
    return int(text)


def decode_notification(path: str, data: bytes) -> list[tuple[str, int]]:
    obj = _load(path, data)
    _version(path, obj, (1,))
    parts = obj.get("partitions")
    if not isinstance(parts, list):
        raise ZnodeFormatError(path, "partitions must be a list")
    out = []
    for i, entry in enumerate(parts):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ZnodeFormatError(path, f"partitions[{i}] must name a topic")
        out.append((entry["topic"], _int(path, entry.get("partition"), f"partitions[{i}].partition")))
    return out


def encode_listener(host: str, port: int) -> bytes:
    return _json({"version": 1, "host": host, "port": port})
