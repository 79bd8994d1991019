"""What each kafka-reassign action found or did, the same whichever way the cluster was
reached (``--zookeeper`` or ``--bootstrap-server``). Pure data; rendered as text or JSON by
:mod:`client.render`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client.errors import KafkaApiError
from znodes.values import TopicPartition


COMPLETE = "complete"
IN_PROGRESS = "in_progress"
FAILED = "failed"
QUEUED = "queued"


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass
class ExecuteOutcome:
    """--execute / --execute-queue / --decommission-broker."""

    requested: dict[TopicPartition, list[int]]
    current: dict[TopicPartition, list[int]]
    started: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, KafkaApiError] = field(default_factory=dict)
    throttle: int | None = None
    throttled_brokers: list[int] = field(default_factory=list)
    auto_remove_throttle: bool = False
    dry_run: bool = False
    queued: bool = False
    # Written (or, on a dry run, to be written) znodes, in --zookeeper mode: path -> JSON text.
    writes: dict[str, str] = field(default_factory=dict)


@dataclass
class VerifyOutcome:
    statuses: dict[TopicPartition, str]
    current: dict[TopicPartition, list[int] | None]
    requested: dict[TopicPartition, list[int]]
    throttle_removed: dict[str, list] | None = None  # {"topics": [...], "brokers": [...]}
    throttle_note: str | None = None


@dataclass
class CancelOutcome:
    cancelled: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, KafkaApiError] = field(default_factory=dict)
    # --zookeeper: the pending entries the controller will roll back, and those it must skip
    pending: dict[TopicPartition, tuple[list[int], list[int] | None]] = field(default_factory=dict)
    unsafe: list[TopicPartition] = field(default_factory=list)
    submitted: bool = False
    nothing_pending: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class Listed:
    """One running (or, in --zookeeper mode, not yet started) reassignment."""

    topic: str
    partition: int
    reassignment_id: int | None
    replicas: list[int] | None = None
    original_replicas: list[int] | None = None
    adding: list[int] | None = None
    removing: list[int] | None = None
    state: str = "running"


@dataclass(frozen=True)
class Described:
    listed: Listed
    start_time: int
    leader: int
    leader_throttle: int | None  # None: not throttled
    new_brokers: list[int]
    follower_throttles: dict[int, int | None]
