"""Typed views of the answers the AdminClient reads: cluster Metadata, DescribeLogDirs,
KIP-240 reassignments. Pure: built from decoded response bodies.

Usage::

    meta = ClusterMetadata.from_body(body)
    meta.controller_id, meta.nodes[1].host, meta.topics["t"][0].replicas
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client.errors import ReassignError
from znodes.values import TopicPartition


NO_CONTROLLER = -1


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    error_code: int = 0


@dataclass
class ClusterMetadata:
    """Metadata v1+ as the controller's admin listener answers it: ``nodes`` holds the brokers
    and the controller instances (one id space), ``controller_id`` the active controller."""

    nodes: dict[int, Node]
    controller_id: int
    cluster_id: str | None
    topics: dict[str, dict[int, PartitionMetadata]]
    topic_errors: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: dict) -> "ClusterMetadata":
        nodes = {
            b["node_id"]: Node(b["node_id"], b["host"], b["port"], b.get("rack"))
            for b in body.get("brokers") or []
        }
        topics: dict[str, dict[int, PartitionMetadata]] = {}
        errors: dict[str, int] = {}
        for t in body.get("topics") or []:
            name = t.get("name")
            if name is None:
                continue
            if t.get("error_code", 0):
                errors[name] = t["error_code"]
                continue
            topics[name] = {
                p["partition_index"]: PartitionMetadata(
                    name,
                    p["partition_index"],
                    p.get("leader_id", -1),
                    list(p.get("replica_nodes") or []),
                    list(p.get("isr_nodes") or []),
                    list(p.get("offline_replicas") or []),
                    p.get("error_code", 0),
                )
                for p in t.get("partitions") or []
            }
        controller = body.get("controller_id", NO_CONTROLLER)
        return cls(nodes, NO_CONTROLLER if controller is None else controller, body.get("cluster_id"), topics, errors)

    def assignment(self) -> dict[str, dict[int, list[int]]]:
        return {t: {p: list(m.replicas) for p, m in ps.items()} for t, ps in self.topics.items()}

    def leaders(self) -> dict[str, dict[int, int]]:
        return {t: {p: m.leader for p, m in ps.items()} for t, ps in self.topics.items()}


@dataclass(frozen=True)
class ReplicaLogDir:
    """One replica's log as a broker's DescribeLogDirs reports it."""

    log_dir: str
    size: int
    offset_lag: int
    is_future: bool = False


@dataclass(frozen=True)
class LogDirInfo:
    """One log directory of a broker (KIP-113): its error (KAFKA_STORAGE_ERROR when offline),
    its volume's total and usable bytes (KIP-827; -1 unknown) and how many logs it holds."""

    path: str
    error_code: int
    total_bytes: int
    usable_bytes: int
    logs: int


@dataclass
class LogDirsResult:
    """DescribeLogDirs across brokers. ``replicas[b][(t, p)]`` is broker b's current log of the
    partition (future logs, from intra-broker moves, are in ``future``); ``errors[b]`` says why
    broker b gave no answer."""

    replicas: dict[int, dict[TopicPartition, ReplicaLogDir]] = field(default_factory=dict)
    future: dict[int, dict[TopicPartition, ReplicaLogDir]] = field(default_factory=dict)
    errors: dict[int, ReassignError] = field(default_factory=dict)
    # node -> how many log directories it reported. A controller instance answers with none
    # (it is listed in Metadata but hosts nothing); every broker has at least one.
    log_dirs: dict[int, int] = field(default_factory=dict)
    # node -> its directories in the order it reported them
    dirs: dict[int, list[LogDirInfo]] = field(default_factory=dict)

    def hosts_nothing(self, node: int) -> bool:
        """The node answered and has no log directory: a controller instance, not a broker."""
        return self.log_dirs.get(node) == 0

    def add_body(self, broker: int, body: dict) -> None:
        self.log_dirs[broker] = len(body.get("results") or [])
        current = self.replicas.setdefault(broker, {})
        future = self.future.setdefault(broker, {})
        self.dirs[broker] = [
            LogDirInfo(r.get("log_dir", ""), r.get("error_code", 0), r.get("total_bytes", -1), r.get("usable_bytes", -1),
                       sum(len(t.get("partitions") or []) for t in r.get("topics") or []))
            for r in body.get("results") or []
        ]
        for result in body.get("results") or []:
            if result.get("error_code", 0):
                # A failed log dir (e.g. KAFKA_STORAGE_ERROR): its replicas are unknown.
                continue
            for t in result.get("topics") or []:
                for p in t.get("partitions") or []:
                    entry = ReplicaLogDir(result.get("log_dir", ""), p["partition_size"], p["offset_lag"],
                                          bool(p.get("is_future_key")))
                    target = future if entry.is_future else current
                    target[(t["name"], p["partition_index"])] = entry


@dataclass(frozen=True)
class Reassignment:
    """KIP-240: one running partition reassignment. ``reassignment_id`` (the czxid of its
    ``/admin/reassignments/T/P`` znode) tells two successive reassignments apart."""

    topic: str
    partition: int
    reassignment_id: int

    @property
    def topic_partition(self) -> TopicPartition:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class ReassignmentDescription:
    """KIP-240's ReassignmentDescription."""

    reassignment: Reassignment
    start_time: int  # ms since the epoch
    current_leader: int
    leader_throttle: int  # bytes/s; Kafka's Long.MAX_VALUE (2**63-1) when not throttled
    new_assigned_brokers: list[int]
    new_assigned_throttles: dict[int, int]
