"""The engine's input events: facts the shell read from ZooKeeper or learned from brokers.

Pure data. The shell turns ZooKeeper watches into reads and the reads into these events; the
engine (controller.engine.step) turns events into state changes, writes and requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.state import Assignment, Broker, LeaderIsr, Request, TopicPartition


@dataclass(frozen=True, slots=True)
class TopicsRead:
    """Topic znodes read: name -> (zkVersion, partition -> assignment), or None if gone."""

    topics: dict[str, tuple[int, dict[int, Assignment]] | None]


@dataclass(frozen=True, slots=True)
class BrokersRead:
    """The registered brokers (``/brokers/ids``), all of them."""

    brokers: dict[int, Broker]


@dataclass(frozen=True, slots=True)
class RequestsRead:
    """``/admin/reassign_partitions`` read: its entries and version, or absent (None, None).

    ``error`` set: the znode exists but is malformed; the engine logs it and changes nothing.
    ``rejected``: why entries that did not parse were left out (the engine drops them).
    """

    version: int | None
    requests: tuple[Request, ...] | None
    error: str | None = None
    rejected: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StatesRead:
    """Partition states read (None: no state znode), and the ISR change notifications that
    named them, which the engine deletes once processed."""

    states: dict[TopicPartition, LeaderIsr | None]
    notifications: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StopReplicaSent:
    """The StopReplica requests of a step were sent (answered or failed) for these partitions."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Resume:
    """First event after failover recovery rebuilt the state (controller.recovery).

    ``create_records``: moves adopted from a topic znode's adding/removing without a KIP-240
    record. ``stale_records``: records of no running move (no such partition, or garbled and
    nothing moving). ``rewrite_records``: garbled records of a move the topic znode shows.
    """

    create_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    stale_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    rewrite_records: frozenset[TopicPartition] = field(default_factory=frozenset)


Event = TopicsRead | BrokersRead | RequestsRead | StatesRead | StopReplicaSent | Resume
