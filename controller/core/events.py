"""The engine's input events: facts the shell read from ZooKeeper or learned from brokers.

Pure data. The shell turns ZooKeeper watches into reads and the reads into these events; the
engine (controller.core.engine.step) turns events into state changes, writes and requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from znodes.values import Assignment, Broker, LeaderIsr, Request, TopicPartition


@dataclass(frozen=True, slots=True)
class TopicsRead:
    """Topic znodes read: name -> (zkVersion, partition -> assignment[, topic_id]), or None if
    gone (znodes.cluster_reader.TopicRead). ``new_ids``: ids the shell drew for the new topics
    read without one (Kafka 2.8+'s processTopicIds on a topic change)."""

    topics: dict[str, tuple | None]
    new_ids: dict[str, str] = field(default_factory=dict)


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
    named them, which the engine deletes once processed. ``fresh``: read just after a
    conditional write of theirs met another zkVersion (controller.shell.state_conflicts), so
    what the znodes hold now, taken over any state held even of a higher version: a held state
    ahead of its znode came from a notification that claimed a version the znode never had."""

    states: dict[TopicPartition, LeaderIsr | None]
    notifications: tuple[str, ...] = ()
    fresh: bool = False
    # (partition, reason) for state znodes that do not decode (left out of ``states``): a
    # LOADING move of one is dropped, as Kafka drops a reassignment that failed.
    unreadable: tuple[tuple[TopicPartition, str], ...] = ()


@dataclass(frozen=True, slots=True)
class MetadataRead:
    """Partition states read for a full UpdateMetadata (controller.core.full_metadata): to every
    live broker (``brokers`` None: after an election, or for a new topic's partitions) or to
    the brokers named (each just registered or re-registered). None: no state znode."""

    states: dict[TopicPartition, LeaderIsr | None]
    brokers: tuple[int, ...] | None = None
    # Of the partitions without a state znode: which of their parents (``.../partitions``,
    # ``.../partitions/P``) are missing too (controller.core.topic_creation step 4 creates them).
    missing_parents: frozenset[str] = frozenset()
    # A chunk of a (re)load's full send: every live replica also gets LeaderAndIsr with the
    # state (controller.core.engine step 8b, Kafka's replicaStateMachine.startup).
    leader_and_isr: bool = False
    # The last chunk of a (re)load's full send: every live broker is asked what it hosts
    # (DescribeLogDirs, engine step 9), now that every partition's state is held.
    probe: bool = False


@dataclass(frozen=True, slots=True)
class StopReplicaSent:
    """The StopReplica requests of a step were sent (answered or failed) for these partitions."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ReplicasHosted:
    """What a broker answered to the DescribeLogDirs the controller sent it when it registered
    (or at the controller's election): the partitions it hosts a replica of. The engine deletes
    the strays among them (controller.core.engine step 9) and keeps their ``sizes`` in bytes
    (step 2c's smallest_first / largest_first, controller.core.move_order).

    ``complete`` False: a log directory of the broker could not be described (it failed), and
    ``partitions`` are those of the directories that answered. Strays among them are strays
    still (step 9), but what is absent may be on the failed directory: no replica is taken for
    missing (step 9b) and no deleted topic's replica for gone (step 11)."""

    broker_id: int
    partitions: frozenset[TopicPartition]
    sizes: Mapping[TopicPartition, int] = field(default_factory=dict)
    complete: bool = True


@dataclass(frozen=True, slots=True)
class ReplicaSizes:
    """A broker's sizes of some replicas it leads (DescribeLogDirs for the partitions named),
    asked for pending moves while a strategy orders them by size (controller.shell.copy_progress):
    step 2c's sizes, fresher than the registration's answer (controller.core.move_order)."""

    broker_id: int
    sizes: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class Resume:
    """First event after failover recovery rebuilt the state (controller.shell.recovery).

    ``create_records``: moves adopted from a topic znode's adding/removing without a KIP-240
    record. ``stale_records``: records of no running move (no such partition, or garbled and
    nothing moving). ``rewrite_records``: garbled records of a move the topic znode shows.
    """

    create_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    stale_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    rewrite_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    # Rollbacks (KIP-236) whose topic znode landed but whose record's "cancelling" flag did not.
    flag_records: frozenset[TopicPartition] = field(default_factory=frozenset)
    # Topic ids the shell drew for topic znodes read without one (Kafka 2.8+'s controller gives
    # every such topic an id at its election, ``processTopicIds``): name -> id.
    topic_ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CancelRequested:
    """KIP-236 cancellation: roll back the listed partitions' reassignments (None: every one).

    ``source`` says which door it came through: ``"znode"`` (creation of
    ``/admin/cancel_reassignment_in_progress``, whose version is ``znode_version``; the
    engine deletes the znode in the flush that records the cancellations) or ``"api"``
    (CancelReassignments, AlterPartitionReassignments with null replicas). ``token`` is
    opaque to the engine: it comes back with the per-partition results in
    ``Step.cancels`` so the shell can answer the request once the writes landed.
    """

    partitions: tuple[TopicPartition, ...] | None
    token: object = None
    source: str = "api"
    validate_only: bool = False
    znode_version: int | None = None
    # Withdraw pending entries even without original_replicas (KIP-236 skip 1 not applied):
    # AlterPartitionReassignments' cancels (Kafka rolls back to the replicas before the move,
    # which an unstarted move is on), and a retry after a conflict of partitions the first try
    # withdrew (the merged znode may have brought them back).
    withdraw_any: bool = False


@dataclass(frozen=True, slots=True)
class QueueRead:
    """``/admin/reassign_partitions_queue`` (KIP-236) read: like :class:`RequestsRead`; absent
    is (None, None)."""

    version: int | None
    requests: tuple[Request, ...] | None
    error: str | None = None
    rejected: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeletionsRead:
    """``/admin/delete_topics`` read: every topic marked for deletion (controller.core.topic_deletion)."""

    topics: frozenset[str]


@dataclass(frozen=True, slots=True)
class ElectionRequested:
    """ElectLeaders (KIP-460): elect leaders of ``partitions`` (None: every one), ``election_type``
    0 preferred, 1 unclean, from ``states`` the shell read for it (controller.core.elections).
    ``token`` comes back with the results in ``Step.elections``."""

    partitions: tuple[TopicPartition, ...] | None
    election_type: int
    states: dict[TopicPartition, LeaderIsr | None]
    token: object = None


@dataclass(frozen=True, slots=True)
class ShutdownRequested:
    """ControlledShutdown (API 7): broker ``broker_id``, registered at ``broker_epoch`` (-1:
    not said, versions 0-1), is about to stop; move its leaderships away, from ``states`` the
    shell read for its partitions (controller.core.controlled_shutdown). ``token`` comes back
    with (error code, message, the partitions it still leads) in ``Step.elections``."""

    broker_id: int
    broker_epoch: int
    states: dict[TopicPartition, LeaderIsr | None]
    token: object = None


@dataclass(frozen=True, slots=True)
class ProducerIdsRequested:
    """AllocateProducerIds (API 67, KIP-730): broker ``broker_id`` at ``broker_epoch`` asks for
    the next block of producer ids (controller.core.producer_ids), decided from
    ``/latest_producer_id_block`` as the shell read it: ``data`` and ``version`` (both None: no
    such znode). ``token`` comes back with (error code, block or None) in ``Step.elections``."""

    broker_id: int
    broker_epoch: int
    data: bytes | None
    version: int | None
    token: object = None


@dataclass(frozen=True, slots=True)
class ControllersRead:
    """The controller instances registered under ``/reassignd/controllers``, as nodes (every
    endpoint with its protocol): UpdateMetadata lists them among the live brokers (engine step 8)."""

    nodes: dict[int, Broker]


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """One partition of an AlterPartition request: the ISR its leader asks for, from the leader
    epoch and partition epoch (the state znode's zkVersion) it holds. ``member_epochs``: each
    member's broker epoch as the leader gave it (version 3; -1 not known), else empty."""

    tp: TopicPartition
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    recovery_state: int = 0
    member_epochs: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class IsrAlterRequested:
    """AlterPartition (API 56, KIP-497): broker ``broker_id`` at ``broker_epoch``, leader of
    the partitions proposed, asks for their new ISRs (controller.core.alter_partition), decided
    from ``states`` the shell read for them. ``token`` comes back with (top-level error code,
    {partition: (error code, state or None)}) in ``Step.elections``; ``version`` is the
    request's (ineligible members are answered by version)."""

    broker_id: int
    broker_epoch: int
    proposals: tuple[IsrProposal, ...]
    states: dict[TopicPartition, LeaderIsr | None]
    version: int = 0
    token: object = None


@dataclass(frozen=True, slots=True)
class PreferredElectionRead:
    """``/admin/preferred_replica_election`` read (Kafka's ZooKeeper door to preferred leader
    elections, controller.core.elections step 5): its partitions and version, with the states
    the shell read for them; ``error`` set: the znode exists but does not decode (logged, left
    in place, nothing elected)."""

    partitions: tuple[TopicPartition, ...]
    znode_version: int
    states: dict[TopicPartition, LeaderIsr | None]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class OfflineCheck:
    """Elect leaders of the partitions whose leader is not live and take dead brokers out of
    ISRs (controller.core.broker_failure): ``partitions`` None for every partition whose state
    the controller holds (a change of ``/brokers/ids``), else those named (a chunk of a
    full-metadata read). ``unclean_topics``: topics whose ``unclean.leader.election.enable``
    is true, of those ``broker_failure.unclean_candidates`` named. ``registered``: the brokers
    that registered or re-registered in the step (Kafka's ``onBrokerStartup``: each gets
    LeaderAndIsr for its replicas). Built with :func:`offline_check`. The engine takes it as it
    takes an ElectionRequested (step 12: held back while a failover's states are read)."""

    partitions: tuple[TopicPartition, ...] | None
    unclean_topics: frozenset[str] = frozenset()
    registered: frozenset[int] = frozenset()


def offline_check(partitions: tuple[TopicPartition, ...] | None, unclean_topics=frozenset(),
                  registered=frozenset()) -> OfflineCheck:
    return OfflineCheck(partitions, frozenset(unclean_topics), frozenset(registered))


@dataclass(frozen=True, slots=True)
class LogDirEventsRead:
    """``/log_dir_event_notification`` read (Kafka's ``processLogDirEventNotification``): the
    brokers its notifications name, each reporting a failed log directory, and every
    notification read (malformed ones too), which the engine deletes in the step's flush
    (controller.core.log_dir_failure steps 1-2)."""

    brokers: frozenset[int]
    notifications: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReplicasOffline:
    """A broker answered LeaderAndIsr with KAFKA_STORAGE_ERROR for these partitions: its replicas
    of them are on an offline log directory (Kafka's ``replicasOnOfflineDirs``; the dispatcher
    turns the answer into this). ``broker_epoch``: the registration the request was addressed
    to (an answer from before a restart is stale). ``online``: partitions the same answer said
    NONE for that the controller held offline on this broker (a replica deleted and created
    again in an online directory). ``unclean_topics``: of the topics only an unclean election
    can lead now, those whose ``unclean.leader.election.enable`` is true (the shell reads them;
    controller.core.log_dir_failure steps 3-5)."""

    broker_id: int
    broker_epoch: int
    partitions: frozenset[TopicPartition]
    unclean_topics: frozenset[str] = frozenset()
    online: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True, slots=True)
class TopicConfigsRead:
    """Topics' ``min.insync.replicas`` read from ``/config/topics/T`` (None: no override, the
    cluster default applies), for the topics entries of ``/admin/reassign_partitions`` or its
    queue name: step 2a (controller.core.isr_health) judges their moves' ISR against it.
    ``unclean``: the same topics' ``unclean.leader.election.enable`` (every topic read, true or
    false): step 12c (controller.core.ended_moves) elects an unclean leader for a move that
    ends with no online ISR member only where it is true."""

    min_isr: dict[str, int | None]
    unclean: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ZnodeRead:
    """One znode as the shell read it for an admin request: ``value`` decoded (a config's
    ``{key: value}``, a removal znode's members), ``version`` None when absent, ``error`` set
    when it exists but does not parse (never overwritten on a guess)."""

    value: object = None
    version: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ThrottlesRead:
    """What the throttle writes of an admin request start from, read in the step that takes it:
    the configs (``("topics", T)`` / ``("brokers", B)``) and the two removal znodes (by path)."""

    configs: Mapping[tuple[str, str | int], ZnodeRead] = field(default_factory=dict)
    listed: Mapping[str, ZnodeRead] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReassignRequested:
    """ReassignPartitions (KIP-179, v0 and v1) or AlterPartitionReassignments (KIP-455): start
    these moves (controller.core.admin_requests has the algorithm). ``targets``: (partition,
    replicas) in request order, each partition once (the shell refused repeats). ``throttle``
    None: unthrottled. ``token`` comes back with the per-partition results in
    ``Step.answers``; the shell answers once the step's writes landed."""

    targets: tuple[tuple[TopicPartition, tuple[int, ...]], ...]
    door: str = "ReassignPartitions"
    create_only: bool = False  # v0: refused while /admin/reassign_partitions exists
    keep_replication_factor: bool = False  # KIP-860: allow_replication_factor_change false
    skip_isr_check: bool = False
    movement_strategies: tuple[str, ...] = ()
    throttle: int | None = None  # bytes/s on the brokers involved
    remove_throttle: bool = False
    validate_only: bool = False
    read: ThrottlesRead | None = None  # filled in by the shell when ``throttle`` is set
    token: object = None


@dataclass(frozen=True, slots=True)
class ThrottleRequested:
    """AlterInterbrokerThrottledRates (``kind`` "brokers": ``entities`` broker -> (leader rate,
    follower rate)) or AlterInterbrokerThrottledReplicas (``kind`` "topics": ``entities``
    topic -> {partition: brokers}) (KIP-179; controller.core.admin_requests)."""

    kind: str
    entities: Mapping
    remove_throttle: bool = True
    validate_only: bool = False
    read: ThrottlesRead | None = None
    token: object = None


@dataclass(frozen=True, slots=True)
class TopicsSeen:
    """What a topic request needs beyond the engine's state, read in the step that takes it:
    every topic name in ZooKeeper (a tool's creation the controller has not read yet counts),
    the markers of ``/admin/delete_topics`` and whether that parent exists, which of the named
    topics have a ``/config/topics/T`` left over, and the cluster's replica and preferred-leader
    counts per broker (placement: controller.core.placement)."""

    names: frozenset[str] = frozenset()
    markers: frozenset[str] = frozenset()
    markers_parent: bool = False
    configs_existing: frozenset[str] = frozenset()
    replica_counts: Mapping[int, int] = field(default_factory=dict)
    leader_counts: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicsRequested:
    """CreateTopics (``kind`` "create": ``requests`` controller.core.topic_creation.TopicRequest),
    CreatePartitions ("partitions": PartitionsRequest) or DeleteTopics ("delete": topic names),
    after the shell's checks (names given twice, authorization). controller.core.topic_requests
    has the algorithm; ``policy`` is controller.core.topic_policy.TopicPolicy."""

    kind: str
    requests: tuple
    validate_only: bool = False
    policy: object = None
    read: TopicsSeen | None = None
    token: object = None


@dataclass(frozen=True, slots=True)
class ThrottleRemovalRead:
    """What a step's throttle check asked for (controller.core.throttle_removal): ``mode``
    "all" or "idle", the ``snapshot`` (controller.core.throttle_removal.Snapshot: the removal
    znodes and /admin/reassign_partitions as read), the configs of every listed entity, and the
    store's chroot (a write must fit one multi, measured as the store sends it)."""

    mode: str
    snapshot: object
    configs: Mapping[tuple[str, str | int], ZnodeRead] = field(default_factory=dict)
    chroot: str = ""


AdminRequest = ReassignRequested | ThrottleRequested | TopicsRequested


@dataclass(frozen=True, slots=True)
class ScheduleDue:
    """The partitions an admin request held back while its entries were written
    (``Step.held``): their entries landed, so their moves may start (step 2) and their new
    targets replace running ones (step 4b) now."""

    partitions: tuple[TopicPartition, ...] = ()

Event = (
    TopicsRead | BrokersRead | RequestsRead | StatesRead | StopReplicaSent | Resume | CancelRequested | QueueRead
    | MetadataRead | ReplicasHosted | DeletionsRead | ElectionRequested | OfflineCheck | TopicConfigsRead
    | ReplicaSizes | ReassignRequested | ThrottleRequested | TopicsRequested | ScheduleDue
    | ThrottleRemovalRead | LogDirEventsRead | ReplicasOffline | PreferredElectionRead | ShutdownRequested
    | IsrAlterRequested | ControllersRead | ProducerIdsRequested
)
