"""What the active controller knows: a cache of ZooKeeper plus the running moves.

:class:`ClusterState` is plain data. The engine never mutates it: a step reads it through
an :class:`Overlay` per map and returns the overlays' changes as a :class:`Delta`, which the
shell applies (``state.apply(delta)``) only after the step's ZooKeeper writes landed - ZooKeeper
is written before memory. Overlays keep a step O(what it touches) however many partitions
the cluster has.

    state = ClusterState(controller_id=101, epoch=3)
    state.assignments[("t", 0)] = Assignment((1, 2, 3))
    step = engine.step(state, events, config)
    ...                                   # flush step.writes
    state.apply(step.delta)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from controller.core.task import Move
from znodes.values import Assignment, Broker, LeaderIsr, Request, TopicPartition, topic_uuid

K = TypeVar("K")
V = TypeVar("V")


class _Deleted:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETED"


DELETED = _Deleted()
_MISSING = object()


class Overlay(Generic[K, V]):
    """A copy-on-write view of a dict: reads fall through to ``base``, writes stay in ``changes``.

    Iteration order is the order the dict would have after ``apply_to``: base keys in place
    (deleted ones skipped), then new keys in the order they were first set.
    """

    __slots__ = ("base", "changes", "writes")

    def __init__(self, base: Mapping[K, V]):
        self.base = base
        self.changes: dict[K, V | _Deleted] = {}
        self.writes = 0  # bumped by every write: lets a reader memoize a scan until the next one

    def get(self, key: K, default=None):
        changes = self.changes
        if key in changes:  # hot: most keys a step reads it never changed
            value = changes[key]
            return default if value is DELETED else value
        return self.base.get(key, default)

    def __getitem__(self, key: K) -> V:
        changes = self.changes
        if key in changes:  # get()'s lookup inlined: one call per read, not two
            value = changes[key]
            if value is DELETED:
                raise KeyError(key)
            return value
        return self.base[key]

    def __contains__(self, key: object) -> bool:
        changes = self.changes
        if key in changes:
            return changes[key] is not DELETED
        return key in self.base

    def __setitem__(self, key: K, value: V) -> None:
        self.changes[key] = value
        self.writes += 1

    def pop(self, key: K) -> None:
        if key in self:
            self.changes[key] = DELETED
            self.writes += 1

    def keys(self) -> Iterator[K]:
        changes = self.changes
        for key in self.base:
            if changes.get(key, _MISSING) is not DELETED:
                yield key
        for key, value in changes.items():
            if value is not DELETED and key not in self.base:
                yield key

    __iter__ = keys

    def items(self) -> Iterator[tuple[K, V]]:
        # keys()'s order, without a lookup per key through get(): hot on maps of 100,000.
        changes, base = self.changes, self.base
        for key, value in base.items():
            if key in changes:
                value = changes[key]
                if value is DELETED:
                    continue
            yield key, value
        for key, value in changes.items():
            if value is not DELETED and key not in base:
                yield key, value

    def values(self) -> Iterator[V]:
        for _, value in self.items():
            yield value

    def __len__(self) -> int:
        n = len(self.base)
        for key, value in self.changes.items():
            in_base = key in self.base
            if value is DELETED and in_base:
                n -= 1
            elif value is not DELETED and not in_base:
                n += 1
        return n


def apply_changes(target: dict, changes: Mapping) -> None:
    for key, value in changes.items():
        if value is DELETED:
            target.pop(key, None)
        else:
            target[key] = value


@dataclass
class Delta:
    """The state changes of one engine step (map name -> key -> value or DELETED)."""

    brokers: dict | None = None  # the whole live set when it changed
    assignments: dict = field(default_factory=dict)
    topic_versions: dict = field(default_factory=dict)
    topic_partitions: dict = field(default_factory=dict)
    topic_ids: dict = field(default_factory=dict)
    states: dict = field(default_factory=dict)
    requests: dict = field(default_factory=dict)
    requests_version: object = _MISSING  # int, or None when the znode was deleted
    tasks: dict = field(default_factory=dict)
    pending: dict = field(default_factory=dict)
    record_counts: dict = field(default_factory=dict)
    deferred: object = _MISSING  # tuple of events, when it changed
    deleting: dict = field(default_factory=dict)
    unhosted: dict = field(default_factory=dict)
    min_isr: dict = field(default_factory=dict)
    unclean: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)
    offline_replicas: dict = field(default_factory=dict)
    shutting_down: dict = field(default_factory=dict)
    controller_nodes: object = _MISSING  # dict of nodes, when it changed
    producer_id_block: object = _MISSING  # (data, version), when this controller wrote it


@dataclass
class ClusterState:
    """The controller's memory. See the module docstring for who may change it and when."""

    controller_id: int
    epoch: int
    brokers: dict[int, Broker] = field(default_factory=dict)
    # Every partition of every known topic, from the topic znodes.
    assignments: dict[TopicPartition, Assignment] = field(default_factory=dict)
    topic_versions: dict[str, int] = field(default_factory=dict)
    topic_partitions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Topics whose znode carries a topic_id (Kafka 2.8+): kept by every rewrite (encode_topic).
    topic_ids: dict[str, str] = field(default_factory=dict)
    # Partition states the controller needs: those of moves being started or running.
    states: dict[TopicPartition, LeaderIsr] = field(default_factory=dict)
    # /admin/reassign_partitions as last read or written (in znode order) and its version;
    # None = the znode does not exist.
    requests: dict[TopicPartition, Request] = field(default_factory=dict)
    requests_version: int | None = None
    # Every partition the controller has taken work for, pending or running.
    tasks: dict[TopicPartition, Move] = field(default_factory=dict)
    # The PENDING tasks in arrival order (an ordered set): the scheduler's queue.
    pending: dict[TopicPartition, None] = field(default_factory=dict)
    # KIP-240 records per /admin/reassignments/T parent (a key: the parent znode exists).
    record_counts: dict[str, int] = field(default_factory=dict)
    # Bumped by every apply(): readers that memoise answers derived from this state (the
    # admin API's ListPartitionReassignments) tell a changed state apart in O(1).
    generation: int = field(default=0, compare=False)  # bookkeeping, not content
    # Cancels and queued batches that arrived while a resumed move's partition state was
    # still being read (just after failover): taken once every such state is in.
    deferred: tuple = ()
    # Topics marked for deletion (/admin/delete_topics): controller.core.topic_deletion.
    deleting: dict = field(default_factory=dict)
    # Replicas a broker's DescribeLogDirs answer lacked while their partition's state was not
    # read yet: told (LeaderAndIsr) once it is (engine step 9b).
    unhosted: dict = field(default_factory=dict)
    # Topics' ``min.insync.replicas`` overrides (``/config/topics/T``, read with the entries
    # naming the topic): step 2a (controller.core.isr_health). Absent: the cluster default.
    min_isr: dict[str, int] = field(default_factory=dict)
    # Topics whose ``unclean.leader.election.enable`` is true, read with min_isr (same znode,
    # same topics, same notifications): a move that ends with no online ISR member gets an
    # unclean leader only for these (engine step 12c, controller.core.ended_moves).
    unclean: dict[str, bool] = field(default_factory=dict)
    # Partitions' sizes in bytes from the brokers' DescribeLogDirs answers to the controller:
    # step 2c's smallest_first / largest_first (controller.core.move_order). A cache of what
    # the brokers said, not ZooKeeper content: a new controller asks them again.
    sizes: dict[TopicPartition, int] = field(default_factory=dict)
    # Per broker, the partitions whose replica there is on an offline log directory (its
    # LeaderAndIsr answers said KAFKA_STORAGE_ERROR; Kafka's ``replicasOnOfflineDirs``):
    # controller.core.log_dir_failure. Cleared when the broker registers again or goes; a
    # cache of what brokers said, asked again by a new controller's LeaderAndIsr.
    offline_replicas: dict[int, frozenset[TopicPartition]] = field(default_factory=dict)
    # Brokers that asked for a controlled shutdown (ControlledShutdown, controller.core.
    # controlled_shutdown; Kafka's ``shuttingDownBrokerIds``) -> the registration epoch they
    # asked from: registered, told like any live broker, but no leader is elected onto them.
    # Dropped when the broker goes or registers again; not ZooKeeper content: a new
    # controller starts without it and the broker asks again (its retries).
    shutting_down: dict[int, int] = field(default_factory=dict)
    # The controller instances (``/reassignd/controllers``) as nodes: UpdateMetadata lists them
    # among the live brokers, where Kafka 3.x brokers look the controller up (by controller_id)
    # to send it AlterPartition and AllocateProducerIds. Read at each
    # election and when an instance comes or goes.
    controller_nodes: dict[int, Broker] = field(default_factory=dict)
    # ``/latest_producer_id_block`` as this controller last wrote it: (data, zkVersion), None
    # before it wrote one in this term. Newer than a read the shell made before the write
    # landed (controller.core.producer_ids).
    producer_id_block: tuple[bytes, int] | None = None
    # topic_ids inverted (wire uuid -> name) for requests naming topics by id (AlterPartition
    # v2+, sent on every ISR change of a Kafka 3.3+ leader; DeleteTopics v6+): built on first
    # use and kept until a step changes an id, so a request costs O(its topics), not O(all
    # topics). Not content: derived from topic_ids.
    _names_by_id: dict | None = field(default=None, compare=False, repr=False)

    def topic_name_for_id(self, topic_id) -> str | None:
        """The topic whose znode carries ``topic_id`` (a ``uuid.UUID``), None for none."""
        names = self._names_by_id
        if names is None or len(names) != len(self.topic_ids):  # the size: a direct write to topic_ids (a load)
            names = self._names_by_id = {topic_uuid(text): name for name, text in self.topic_ids.items()}
        return names.get(topic_id)

    def apply(self, delta: Delta) -> None:
        """Make ``delta`` part of memory (after its ZooKeeper writes landed)."""
        self.generation += 1
        if delta.topic_ids:
            self._names_by_id = None
        if delta.brokers is not None:
            self.brokers = dict(delta.brokers)
        apply_changes(self.assignments, delta.assignments)
        apply_changes(self.topic_versions, delta.topic_versions)
        apply_changes(self.topic_partitions, delta.topic_partitions)
        apply_changes(self.topic_ids, delta.topic_ids)
        apply_changes(self.states, delta.states)
        apply_changes(self.requests, delta.requests)
        if delta.requests_version is not _MISSING:
            self.requests_version = delta.requests_version
        apply_changes(self.tasks, delta.tasks)
        apply_changes(self.pending, delta.pending)
        apply_changes(self.record_counts, delta.record_counts)
        if delta.deferred is not _MISSING:
            self.deferred = delta.deferred
        apply_changes(self.deleting, delta.deleting)
        apply_changes(self.unhosted, delta.unhosted)
        apply_changes(self.min_isr, delta.min_isr)
        apply_changes(self.unclean, delta.unclean)
        apply_changes(self.sizes, delta.sizes)
        apply_changes(self.offline_replicas, delta.offline_replicas)
        apply_changes(self.shutting_down, delta.shutting_down)
        if delta.controller_nodes is not _MISSING:
            self.controller_nodes = dict(delta.controller_nodes)
        if delta.producer_id_block is not _MISSING:
            self.producer_id_block = delta.producer_id_block

    def running(self) -> Iterator[Move]:
        return (t for t in self.tasks.values() if t.started)
