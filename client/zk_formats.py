"""The Kafka znode payloads kafka-reassign reads and writes in ``--zookeeper`` mode. Pure.

Formats are DESIGN.md section 3 (Kafka 2.4+ and the KIPs). Reading is strict about what the
tool relies on and tolerant of fields it does not use; anything it cannot read raises
:class:`client.errors.ClusterDataError` naming the znode. Writing is byte-stable (compact JSON,
entries sorted), so the same input always writes the same bytes.

Usage::

    rack = parse_broker("/brokers/ids/1", data).rack
    partitions = parse_topic("/brokers/topics/t", data)              # {0: [1, 2]}
    entries = parse_reassign_partitions(path, data)                   # {("t", 0): Entry}
    data = encode_reassign_partitions({("t", 0): Entry([4, 5], [1, 2])})
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from client.errors import ClusterDataError

TopicPartition = tuple[str, int]

LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
THROTTLED_REPLICA_KEYS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
THROTTLED_RATE_KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)
ALL_REPLICAS = "*"


def _compact(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def _load(path: str, data: bytes) -> dict:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ClusterDataError(f"znode {path} does not hold JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ClusterDataError(f"znode {path} holds {type(doc).__name__}, expected a JSON object")
    return doc


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ids(path: str, what: str, values: object) -> list[int]:
    if not isinstance(values, list) or not all(_int(v) and v >= 0 for v in values):
        raise ClusterDataError(f"znode {path}: {what} is {json.dumps(values)[:80]}, expected a list of broker ids")
    return list(values)


# ---- /brokers/ids/N ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerRegistration:
    host: str | None
    port: int | None
    rack: str | None


def parse_broker(path: str, data: bytes) -> BrokerRegistration:
    doc = _load(path, data)
    rack = doc.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ClusterDataError(f"znode {path}: rack is {rack!r}, expected a string")
    host, port = doc.get("host"), doc.get("port")
    return BrokerRegistration(host if isinstance(host, str) else None, port if _int(port) else None, rack)


# ---- /brokers/topics/T ------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicZnode:
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]]
    removing: dict[int, list[int]]


def parse_topic(path: str, data: bytes) -> TopicZnode:
    doc = _load(path, data)

    def part_map(key: str, required: bool) -> dict[int, list[int]]:
        raw = doc.get(key)
        if raw is None and not required:
            return {}
        if not isinstance(raw, dict):
            raise ClusterDataError(f"znode {path}: \"{key}\" is missing or not an object")
        out: dict[int, list[int]] = {}
        for k, v in raw.items():
            if not (isinstance(k, str) and k.isdigit()):
                raise ClusterDataError(f"znode {path}: partition key {k!r} is not a number")
            out[int(k)] = _ids(path, f"{key}[{k}]", v)
        return out

    return TopicZnode(part_map("partitions", True), part_map("adding_replicas", False),
                      part_map("removing_replicas", False))


# ---- /brokers/topics/T/partitions/P/state ---------------------------------------------------


def parse_partition_leader(path: str, data: bytes) -> int:
    doc = _load(path, data)
    leader = doc.get("leader")
    if not _int(leader):
        raise ClusterDataError(f"znode {path}: leader is {leader!r}, expected an integer")
    return leader


# ---- /admin/reassign_partitions and the KIP-236 queue ---------------------------------------


@dataclass(frozen=True)
class Entry:
    replicas: list[int]
    original_replicas: list[int] | None = None


def parse_reassign_partitions(path: str, data: bytes) -> dict[TopicPartition, Entry]:
    doc = _load(path, data)
    parts = doc.get("partitions")
    if not isinstance(parts, list):
        raise ClusterDataError(f"znode {path}: \"partitions\" is missing or not a list")
    out: dict[TopicPartition, Entry] = {}
    for i, e in enumerate(parts):
        if not isinstance(e, dict) or not isinstance(e.get("topic"), str) or not _int(e.get("partition")):
            raise ClusterDataError(f"znode {path}: partitions[{i}] lacks a topic and partition")
        original = e.get("original_replicas")
        out[(e["topic"], e["partition"])] = Entry(
            _ids(path, f"partitions[{i}].replicas", e.get("replicas")),
            None if original is None else _ids(path, f"partitions[{i}].original_replicas", original),
        )
    return out


def encode_reassign_partitions(entries: dict[TopicPartition, Entry]) -> bytes:
    parts = []
    for (topic, partition) in sorted(entries):
        e = entries[(topic, partition)]
        item: dict = {"topic": topic, "partition": partition, "replicas": list(e.replicas)}
        if e.original_replicas is not None:
            item["original_replicas"] = list(e.original_replicas)
        parts.append(item)
    return _compact({"version": 1, "partitions": parts})


# ---- /admin/reassignments/T/P (KIP-240) -----------------------------------------------------


def parse_reassignment_record(path: str, data: bytes) -> Entry:
    doc = _load(path, data)
    original = doc.get("original_replicas")
    return Entry(_ids(path, "replicas", doc.get("replicas")),
                 None if original is None else _ids(path, "original_replicas", original))


# ---- /config/topics/T, /config/brokers/N, /config/changes ----------------------------------


def parse_config(path: str, data: bytes) -> dict[str, str]:
    doc = _load(path, data)
    config = doc.get("config", {})
    if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
        raise ClusterDataError(f"znode {path}: \"config\" must map names to string values")
    return dict(config)


def encode_config(config: dict[str, str]) -> bytes:
    return _compact({"version": 1, "config": dict(sorted(config.items()))})


def encode_config_change(entity_path: str) -> bytes:
    """A config change notification: tells brokers to re-read ``topics/T`` or ``brokers/N``."""
    return _compact({"version": 2, "entity_path": entity_path})


def parse_throttled_replicas(value: str | None) -> set[tuple[int, int]] | str:
    """``"0:1,0:2"`` -> {(0, 1), (0, 2)}; ``"*"`` -> "*"; None/"" -> empty set. Entries that
    are not P:B are ignored, as brokers ignore them."""
    if not value:
        return set()
    if value.strip() == ALL_REPLICAS:
        return ALL_REPLICAS
    out: set[tuple[int, int]] = set()
    for item in value.split(","):
        p, _, b = item.strip().partition(":")
        if p.isdigit() and b.isdigit():
            out.add((int(p), int(b)))
    return out


def format_throttled_replicas(pairs: set[tuple[int, int]] | str) -> str:
    if pairs == ALL_REPLICAS:
        return ALL_REPLICAS
    return ",".join(f"{p}:{b}" for p, b in sorted(pairs))
