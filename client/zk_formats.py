"""The Kafka znode payloads kafka-reassign reads and writes in ``--zookeeper`` mode. Pure.

Formats are docs/DESIGN.md section 3, read and written through :mod:`znodes.models`; this module
gives the tool the plain views it works with. A payload the models refuse raises
:class:`client.errors.ClusterDataError` naming the znode. Writing is byte-stable (compact JSON,
entries sorted), so the same input always writes the same bytes.

Usage::

    rack = parse_broker("/brokers/ids/1", data).rack
    partitions = parse_topic("/brokers/topics/t", data)              # {0: [1, 2]}
    entries = parse_reassign_partitions(path, data)                   # {("t", 0): Entry}
    data = encode_reassign_partitions({("t", 0): Entry([4, 5], [1, 2])})
"""

from __future__ import annotations

from dataclasses import dataclass

from znodes import models
from znodes.errors import ZnodeFormatError

from client.errors import ClusterDataError


from znodes.throttle_keys import FOLLOWER_RATE as FOLLOWER_THROTTLED_RATE
from znodes.throttle_keys import FOLLOWER_REPLICAS as FOLLOWER_THROTTLED_REPLICAS
from znodes.throttle_keys import LEADER_RATE as LEADER_THROTTLED_RATE
from znodes.throttle_keys import LEADER_REPLICAS as LEADER_THROTTLED_REPLICAS
from znodes.throttle_keys import RATE_KEYS as THROTTLED_RATE_KEYS
from znodes.throttle_keys import REPLICA_KEYS as THROTTLED_REPLICA_KEYS
from znodes.values import TopicPartition


def _model(model, path: str, data: bytes):
    try:
        return model.from_bytes(path, data)
    except ZnodeFormatError as exc:
        raise ClusterDataError(str(exc)) from None


# ---- /brokers/ids/N ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerRegistration:
    host: str | None
    port: int | None
    rack: str | None


def parse_broker(path: str, data: bytes) -> BrokerRegistration:
    reg = _model(models.BrokerRegistration, path, data)
    return BrokerRegistration(reg.host, reg.port if reg.port >= 0 else None, reg.rack)


# ---- /brokers/topics/T ------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicZnode:
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]]
    removing: dict[int, list[int]]


def parse_topic(path: str, data: bytes) -> TopicZnode:
    t = _model(models.TopicAssignment, path, data)
    return TopicZnode(
        {p: list(r) for p, r in t.partitions.items()},
        {p: list(r) for p, r in t.adding_replicas.items()},
        {p: list(r) for p, r in t.removing_replicas.items()},
    )


# ---- /brokers/topics/T/partitions/P/state ---------------------------------------------------


def parse_partition_leader(path: str, data: bytes) -> int:
    return _model(models.PartitionState, path, data).leader


# ---- /admin/reassign_partitions and the KIP-236 queue ---------------------------------------


@dataclass(frozen=True)
class Entry:
    replicas: list[int]
    original_replicas: list[int] | None = None
    skip_isr_check: bool = False  # reassignd's key: start even at the ISR's floor
    movement_strategies: tuple[str, ...] = ()  # reassignd's key: the order its request's moves start in


def parse_reassign_partitions(path: str, data: bytes) -> dict[TopicPartition, Entry]:
    doc = _model(models.ReassignPartitions, path, data)
    return {
        (e.topic, e.partition): Entry(
            list(e.replicas), None if e.original_replicas is None else list(e.original_replicas), e.skip_isr_check,
            tuple(e.movement_strategies),
        )
        for e in doc.partitions
    }


def encode_reassign_partitions(entries: dict[TopicPartition, Entry]) -> bytes:
    """Entries sorted by topic and partition, so the same input writes the same bytes."""
    return models.ReassignPartitions(
        partitions=[
            models.ReassignEntry(
                topic=t, partition=p, replicas=list(entries[(t, p)].replicas),
                original_replicas=entries[(t, p)].original_replicas,
                skip_isr_check=entries[(t, p)].skip_isr_check,
                movement_strategies=list(entries[(t, p)].movement_strategies),
            )
            for (t, p) in sorted(entries)
        ]
    ).to_bytes()


# ---- /admin/reassignments/T/P (KIP-240) -----------------------------------------------------


def parse_reassignment_record(path: str, data: bytes) -> Entry:
    r = _model(models.ReassignmentRecord, path, data)
    return Entry(list(r.replicas), list(r.original_replicas))


# ---- /config/topics/T, /config/brokers/N, /config/changes ----------------------------------


def parse_config(path: str, data: bytes) -> dict[str, str]:
    return dict(_model(models.EntityConfig, path, data).config)


def encode_config(config: dict[str, str]) -> bytes:
    return models.EntityConfig(config=dict(config)).to_bytes()


def encode_config_change(entity_path: str) -> bytes:
    """A config change notification: tells brokers to re-read ``topics/T`` or ``brokers/N``."""
    return models.ConfigChangeNotification(version=2, entity_path=entity_path).to_bytes()
