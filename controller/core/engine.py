"""The reassignment engine: ``step(state, events, config) -> Step``. Pure: no I/O, no clock.

A step folds a batch of events (controller.core.events) into the state (controller.core.state) and
returns what the shell must do, in this order: write ``writes`` to ZooKeeper (one batched,
fenced flush), then apply ``delta`` to memory, then send ``commands`` to brokers and read the
partition states named in ``reads`` (fed back as a StatesRead event). Nothing is applied to
memory unless the writes landed; a step that fails to write is thrown away and the shell
re-runs failover recovery, which finishes every half-written move.

This module is the pipeline: :func:`step` opens the step's working set
(controller.core.working_set: every field a step works on, declared), hands each event to the
functions of its concern, runs the decisions taken once every event is in, in the order below,
and turns the set into a :class:`Step`. The algorithms are in one module per concern:

    steps 1-6, 4b, Resume    controller.core.reassignment
    steps 2a-2b              controller.core.isr_health (called from step 2)
    step 2c                  controller.core.move_order (called from step 2)
    step 7                   controller.core.cancel, controller.core.queue (KIP-236)
    steps 8, 8b, 9, 9b       controller.core.replica_sync (and broker_failure.on_brokers: 8's
                             live set)
    step 10                  controller.core.topic_creation
    step 11                  controller.core.topic_deletion
    step 12                  controller.core.elections, controller.core.broker_failure
    step 12a                 controller.core.alter_partition
    step 12b                 controller.core.log_dir_failure
    step 12c                 controller.core.ended_moves
    producer id blocks       controller.core.producer_ids (AllocateProducerIds, KIP-730)
    admin requests           controller.core.admin_requests (reassignments, throttles),
                             controller.core.topic_requests (topics): validated against the
                             working set, their writes first in the flush (docs/DESIGN.md 4.11)

Algorithm (docs/DESIGN.md section 4, Kafka 2.4's ``onPartitionReassignment``); terms: ORS original
replicas, TRS target replicas, RS = TRS followed by ORS - TRS, AR = TRS - ORS, RR = ORS - TRS.

 1. Accept. An entry of ``/admin/reassign_partitions`` naming an unknown topic or partition,
    adding a replica on an unregistered broker (one it keeps may be down: Kafka's
    ``validateReplicas``), a duplicate broker or no broker at all is dropped from the znode
    with a logged reason; an entry whose target is already the assignment is dropped as done;
    the others become PENDING moves, in znode order.
 2. Schedule. A pending move starts as soon as it fits the caps: concurrent moves per broker
    adding a replica (incoming) and removing one (outgoing), and cluster-wide. No batch
    barrier: a slot freed by one partition is taken by the next in the same step. A move
    taking a slot starts at once from the partition state the controller holds (read at
    its election for the full metadata, kept fresh by the ISR notifications and its own
    writes, as Kafka's controller cache is); without one it is LOADING while the state is read
    (a state znode absent or unreadable then drops the move and its entry, with a warning).
2a. ISR health (controller.core.isr_health, with its worked table): a pending move whose
    partition has every replica live, a short ISR and len(ISR) <= min.insync.replicas waits,
    holding no slot, with its reason, until an ISR change lets it start (unless its entry says
    ``skip_isr_check`` or ``isr_aware_moves`` is off); also when the state read for a LOADING
    move shows it (LOADING -> PENDING). 2b. While any partition is under its min ISR, the
    per-broker caps are at most ``isr_throttled_concurrency``. 2c. Pending moves are tried in
    the order of their strategies (controller.core.move_order, its worked table): the entry's
    ``movement_strategies`` or the ``replica_movement_strategies`` setting, e.g.
    ``smallest_first`` (sizes from the brokers' DescribeLogDirs answers), default the order given.
 3. Start (state known). In one fenced multi: create ``/admin/reassignments/T/P`` with TRS and
    ORS, write the state znode with leader epoch + 1 (conditional on its zkVersion), write the
    topic znode with RS, AR and RR, record ``original_replicas`` in
    ``/admin/reassign_partitions`` when the writer left them out (KIP-236). Then LeaderAndIsr
    (RS, AR, RR; ``is_new`` for AR; the new leader epoch) to every live replica in RS.
    -> REPLICATING
 4. Replicate. The brokers copy; the leader adds AR to the ISR and posts an ISR change
    notification; the controller reads the named states (one children watch for all), or
    takes them from the notification when the leader put them there with their zkVersion.
 4b. Override (KIP-455; docs/DESIGN.md 4.1). A new target for a replicating move (from
    ``/admin/reassign_partitions``, or a queued batch KIP-236 cannot roll back) replaces its
    target in place once every event of the step is in. ORS stays; replicas an earlier target
    added that the new one drops are deleted at once if outside the ISR, else kept as
    ``dropped`` at the end of RR until the new TRS is in sync (invariant 4): RS = TRS followed
    by ORS - TRS and the kept, AR = TRS - ORS, RR = ORS - TRS followed by the kept. One flush:
    the record's new TRS, the state znode (leader epoch + 1, conditional on the zkVersion the
    ISR was judged from), the topic znode's new RS; then LeaderAndIsr (``is_new`` for replicas
    not in the old RS) to the new RS, StopReplica(delete) to the deleted. The caps hold for its
    new copies and its newly leaving replicas (a kept one included): one that does not fit
    waits for a slot (step 2 takes it first) or follows the move. A new target equal to ORS is
    a cancel (step 7); a completing or rolling-back move takes it after it ends, a move whose
    state is being read after a failover when it arrives.
 5. Complete, once TRS is inside the ISR: keep the leader if it is in TRS and alive, else
    elect the first live TRS replica in the ISR; shrink the ISR to TRS; write the state znode
    (leader epoch + 1 always, as Kafka's completion does; conditional on its zkVersion, so the
    ISR really held TRS when it landed); LeaderAndIsr with RS = TRS to the TRS replicas;
    StopReplica(delete) to RR.
    -> STOPPING. (Invariant 4: RR is deleted only after every TRS replica is in the ISR.)
 6. Finish, once the StopReplica requests were sent: in one fenced multi write RS = TRS (no
    adding/removing), delete ``/admin/reassignments/T/P`` and drop the entry from
    ``/admin/reassign_partitions`` (deleting the znode when it empties); UpdateMetadata to
    every live broker. -> DONE. When nothing is left, ``Step.finished`` asks the shell to run
    KIP-179 throttle removal.
 7. Cancel (KIP-236, any door: controller.core.events.CancelRequested) rolls a move back to ORS;
    its algorithm, steps and worked table are in controller.core.cancel. A queued batch
    (``/admin/reassign_partitions_queue``) joins the running set as controller.core.queue says.
 8. Full metadata (Kafka's onControllerFailover and onBrokerStartup): partition states the
    shell read for it (controller.core.events.MetadataRead, planned by controller.core.full_metadata)
    become UpdateMetadata entries, to every live broker or to the brokers named, with the
    partition's replicas from its topic znode. When the live broker set changes, every live
    broker hears the new set, in an UpdateMetadata without partitions if the step sends none.
    The controller instances (``ControllersRead``) are nodes of that set too: a Kafka 3.x broker
    finds the controller there to send it AlterPartition and AllocateProducerIds.
 8b. Replica states (Kafka's ``replicaStateMachine.startup``; docs/DESIGN.md 4, failover): a
    (re)load's chunks (``MetadataRead.leader_and_isr``) also give every live replica
    LeaderAndIsr with the state held, leader epoch unchanged, nothing written - last in the
    step, only where the step sent that broker nothing of its own for the partition, never for
    a started move nor a topic being deleted. Brokers holding the epoch refuse it harmlessly.
    Brokers 1-4; 3 restarted with no controller (it holds no epoch); 4 is down:

    partition  RS (AR; RR)    held: leader [ISR] epoch  LeaderAndIsr in the chunk's step
    a          1,2,3          1 [1,2] 4                 1 [1,2] 4 to 1, 2 (refused: held) and 3
                                                        (takes it: follows 1, rejoins the ISR)
    b          3,1            3 [3,1] 2                 3 [3,1] 2 to 3 (leads again), 1 (refused)
    c          2,4            2 [2] 0                   2 [2] 0 to 2 (refused); 4 is down
    d          1,2,3 (2; 3)   1 [1,3] 5                 none: a resumed move (Resume: epoch 6)
 9. Strays (no Kafka counterpart in ZooKeeper mode). A broker that registers or re-registers,
    and every live broker at an election, is asked what it hosts (DescribeLogDirs, KIP-113),
    after this step's LeaderAndIsr to it. A replica of a known partition whose RS does not
    place it there, that no waiting move is about to add, and that is not in the ISR is a stray
    and gets StopReplica(delete) (controller.core.task.stray_partitions); nothing waits for it.
    Judged once the step's moves started (step 2): a start in the same step may place it again.
    An answer with a failed log directory lists the other directories' replicas: their strays
    are strays still.
 9b. Missing replicas, from the same answers (complete ones only: a replica absent from a
    partial answer may be on the failed directory): a replica RS places on the broker, of a partition
    no move runs for, that the broker does not host (a LeaderAndIsr a dead controller never
    sent) gets LeaderAndIsr (``is_new``) with the state held; a state not read yet, once it is.
10. New partitions (Kafka's ``onNewPartitionCreation``; algorithm and worked table in
    controller.core.topic_creation): a partition of a known topic without a state znode gets its
    missing parents and a state (leader the first live replica, ISR the live replicas, leader
    epoch 0), LeaderAndIsr (``is_new``) and UpdateMetadata; ``Step.created`` names it.
10a. One with a replica on a controller instance that is no registered broker (a Kafka broker's
    auto-creation places over UpdateMetadata's live brokers, which list the instances) is placed
    again over the registered brokers first, its topic znode rewritten ahead of the states.
11. Topic deletion (KIP-4 DeleteTopics; controller.core.topic_deletion): after the step's
    cancels and overrides, a marked topic's moves are withdrawn or rolled back, then its
    replicas deleted; ``Step.topics_deleted`` once every one is gone.
12. Elections (KIP-460 ElectLeaders, and Kafka's ZooKeeper door ``/admin/preferred_replica_election``,
    deleted in the step's flush: controller.core.elections), the controller's own after a
    broker failed or registered (controller.core.broker_failure), and a broker's controlled
    shutdown (ControlledShutdown: its leaderships moved to other ISR members, its followers
    stopped, nothing elected onto it any more: controller.core.controlled_shutdown); held
    back, as cancels and queued batches are, while a failover's resumed moves have no state yet.
12a. A leader's ISR change asked of the controller (AlterPartition, KIP-497; Kafka 2.7+ brokers
    send it instead of writing the state znode): the ISR written, fenced and conditional on the
    zkVersion the leader holds, every broker told, then what a notified ISR change starts
    (step 5 for a move): controller.core.alter_partition, with its worked table.
12b. Log directory failures (KIP-113; controller.core.log_dir_failure, with its worked table):
    a notification's broker is asked (LeaderAndIsr, state held) which replicas are offline;
    those it answers KAFKA_STORAGE_ERROR are taken offline through step 12's broker-failure
    check with a live set per partition; a move with an offline TRS replica does not complete
    (step 5).
12c. A move that ended in the step with its leader or an ISR member offline (a broker stopped
    or a directory failed while the move owned the partition): step 12's broker-failure check
    for it, unclean only for a topic the config view holds with unclean.leader.election.enable
    true (``TopicConfigsRead``), its state written after the record delete
    (controller.core.ended_moves).

Leader epochs and the flush's order and coalescing: docs/DESIGN.md section 4 ("Leader epochs",
4.8). Every LeaderAndIsr with a new replica set or leader carries leader epoch + 1, written
first; a resend of a state already written goes as it is.

Worked state table, ORS (1,2,3) -> TRS (4,5,6), leader 1 (the unit tests walk exactly this):

    step                                     RS            AR     RR     ISR           leader epoch
    0 initial                                1,2,3         -      -      1,2,3         1      0
    3 start: record, state (epoch+1),        4,5,6,1,2,3   4,5,6  1,2,3  1,2,3         1      1
      topic znode written;
      LeaderAndIsr to 1..6 (4,5,6 is_new)
    4 4,5,6 catch up; leader 1 expands ISR   4,5,6,1,2,3   4,5,6  1,2,3  1,2,3,4,5,6   1      1
    5 TRS in ISR: leader 4, ISR shrunk,      4,5,6,1,2,3   4,5,6  1,2,3  4,5,6         4      2
      epoch+1; LeaderAndIsr RS=TRS to 4,5,6;
      StopReplica(delete) to 1,2,3
    6 final multi: RS=TRS, record deleted    4,5,6         -      -      4,5,6         4      2

Override of that move to TRS (4,6,3) (step 4b), when only 4 has caught up (5 is out of the
ISR: deleted at once; were it in the ISR, it would stay at the end of RR until step 5):

    step                                     RS            AR     RR     ISR           leader epoch
    4 replicating                            4,5,6,1,2,3   4,5,6  1,2,3  1,2,3,4       1      1
    4b record: TRS 4,6,3; state (epoch+1);   4,6,3,1,2     4,6    1,2    1,2,3,4       1      2
       topic znode; LeaderAndIsr to 1,2,3,
       4,6 (none is_new); StopReplica(delete)
       to 5
    5 6 catches up: leader 4, ISR shrunk,    4,6,3,1,2     4,6    1,2    3,4,6         4      3
      StopReplica(delete) to 1,2
    6 final multi: RS=TRS, record deleted    4,6,3         -      -      3,4,6         4      3

Flush kinds (controller.core.flush): ``Step.kinds[i]`` says why ``writes[i]`` is written. For
one partition, in flush order (optional ops in brackets):

    start            [create /admin/reassignments/T], create record, [state znode: leader
                     epoch + 1], topic znode, [/admin/reassign_partitions: original_replicas]
    override         record (new TRS), [state znode: leader epoch + 1], topic znode
    complete         state znode (TRS leader and ISR)
    finish           topic znode (RS = TRS), delete record, [delete /admin/reassignments/T],
                     /admin/reassign_partitions (entry dropped; the znode deleted when empty)
    rollback         state znode (ORS leader and ISR), topic znode (rollback), record
                     (cancelling), [/admin/reassign_partitions: entries a cancel withdrew
                     before they started], [delete /admin/cancel_reassignment_in_progress]
    rollback-finish  topic znode (RS = ORS), /admin/reassign_partitions, delete record,
                     [delete /admin/reassignments/T]
    queue            the record of a move a queued target follows (next_replicas), then
                     /admin/reassign_partitions (the queued entries), delete the queue znode
    create           [create .../partitions], [create .../partitions/P], create state znode
                     (after a topic request's own writes; or where a full-metadata read - an
                     election, a new topic znode, a broker registering - finds no state)
    delete           (the shell's own flush, after the step's) [delete state znode], [delete
                     .../partitions/P], [delete .../partitions], [delete /config/topics/T],
                     [delete topic znode], [delete the marker] (a marker dropped alone: only it)
    elect            state znode (the elected leader, leader epoch + 1); for the ZooKeeper
                     door, last, delete /admin/preferred_replica_election (its version read)
    admin            (first in the flush) a reassignment or throttle request's removal znodes
                     (those gaining members), throttle configs (each with its notification),
                     removal znodes (their final contents); last, /admin/reassign_partitions
                     (its entries)
    topics           (first in the flush) a topic request's config and topic znodes, partitions
                     added to a topic znode, deletion markers; with the moves' topic znode
                     rewrites, a new topic's znode given a topic id (Kafka's processTopicIds)

Writes are coalesced: a step doing several of these for several partitions writes each znode
once, in the order of docs/DESIGN.md 4.8; an op written for several kinds carries them all. Throttle removal
is the shell's own flush (controller.shell.throttles, after ``Step.finished`` and steps that
ended moves); which throttles it removes is controller.core.throttle_removal's pure rule, and its
multi opens with a guard on /admin/reassign_partitions as the rule read it (docs/DESIGN.md 4.10).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.core import (
    admin_requests,
    alter_partition,
    broker_failure,
    cancel,
    elections,
    ended_moves,
    log_dir_failure,
    producer_ids,
    queue,
    reassignment,
    replica_sync,
    throttle_removal,
    topic_deletion,
    topic_requests,
)
from controller.core.cancel import CancelOutcome
from controller.core.commands import BrokerCommand
from controller.core.config import ControllerConfig
from controller.core.events import (
    BrokersRead,
    CancelRequested,
    ControllersRead,
    DeletionsRead,
    ElectionRequested,
    Event,
    IsrAlterRequested,
    LogDirEventsRead,
    MetadataRead,
    OfflineCheck,
    PreferredElectionRead,
    ProducerIdsRequested,
    QueueRead,
    ReassignRequested,
    ReplicaSizes,
    ReplicasHosted,
    ReplicasOffline,
    RequestsRead,
    Resume,
    ScheduleDue,
    ShutdownRequested,
    StatesRead,
    StopReplicaSent,
    ThrottleRemovalRead,
    ThrottleRequested,
    TopicConfigsRead,
    TopicsRead,
    TopicsRequested,
)
from controller.core.flush import ADMIN, ELECT, OTHER, QUEUE, ROLLBACK, THROTTLE_REMOVAL
from controller.core.state import ClusterState, Delta
from controller.core.task import Phase
from controller.core.working_set import WorkingSet
from znodes import paths
from znodes.api import Create, Delete, Op, SetData
from znodes.payloads import encode_requests, encode_topic
from znodes.values import TopicPartition


@dataclass
class Step:
    delta: Delta
    writes: list[Op]
    commands: list[BrokerCommand]
    reads: frozenset[TopicPartition]
    log: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # logged at WARNING: input to fix
    # Every reassignment is over and /admin/reassign_partitions is gone (KIP-179 "On
    # reassignment completion": the shell removes the auto-removable throttles).
    finished: bool = False
    completed: list[TopicPartition] = field(default_factory=list)  # moves finished (step 6)
    # Moves rolled back (controller.core.cancel step 7): the shell removes their throttles.
    cancelled: list[TopicPartition] = field(default_factory=list)
    # Per CancelRequested, its per-partition results: answered once ``writes`` landed.
    cancels: list[CancelOutcome] = field(default_factory=list)
    # writes[shared_from:] touch the znodes tools write too (/admin/reassign_partitions, the
    # cancel and queue znodes) and what must land with them: the shell flushes them last,
    # alone, and treats a version conflict there as "re-read", not as a failure.
    shared_from: int | None = None
    # kinds[i]: the kinds of flush writes[i] is part of (controller.core.flush; the module
    # docstring's "Flush kinds").
    kinds: list[frozenset[str]] = field(default_factory=list)
    # Partitions given their first state (step 10): leaders elected, LeaderAndIsr and
    # UpdateMetadata in ``commands`` (CreateTopics answers once its partitions are here).
    created: list[TopicPartition] = field(default_factory=list)
    # Step 11 (controller.core.topic_deletion step 5): topics whose every replica is gone, and
    # markers of unknown topics: the shell deletes their znodes before applying ``delta``.
    topics_deleted: list[str] = field(default_factory=list)
    markers_dropped: list[str] = field(default_factory=list)
    # Step 12: (token, {partition: (error code, message)}) per ElectionRequested, answered by
    # the shell once ``writes`` landed.
    elections: list = field(default_factory=list)
    # An admin_requests.Answer per admin request of the step: answered once ``writes`` landed.
    answers: list = field(default_factory=list)
    # Partitions held back until the step's entries landed: the shell queues a ScheduleDue then.
    held: tuple = ()
    # writes[removal_from:]: throttle removal's write, flushed last and alone, as one multi (a
    # conflict there is read and decided again); throttle_check: the removal the step asks the
    # shell to read for (controller.core.throttle_removal.check_due), or None.
    removal_from: int | None = None
    throttle_check: object = None


slot_usage = reassignment.slot_usage  # (moves holding a slot, incoming, outgoing): for tests and metrics


def step(state: ClusterState, events: Sequence[Event] | Event, config: ControllerConfig) -> Step:
    """Fold ``events`` into ``state``; see the module docstring. ``state`` is not modified."""
    if not isinstance(events, (list, tuple)):
        events = [events]
    ws = WorkingSet.open(state, config)
    for event in events:
        handle(ws, event)  # steps 1, 3-7, 8, 9, 10, 11, 12: each event to its concern
    take_deferred(ws)  # cancels, queued batches and elections that waited for a failover's states
    reassignment.take_overrides(ws)  # step 4b
    ended_moves.check_ended(ws)  # step 12c: a move that ended with a replica offline in its state
    if ws.deleting:
        topic_deletion.advance_deletions(ws)  # step 11: after the cancels and overrides of the step
    replica_sync.missing_replicas(ws)  # step 9b
    reassignment.schedule(ws)  # step 2 (and 3 for the moves it starts)
    replica_sync.delete_strays(ws)  # step 9: against where the moves left every partition
    replica_sync.replica_states(ws)  # step 8b: last, where the step decided nothing of its own
    return finish(ws)


def handle(ws: WorkingSet, event: Event) -> None:
    """One event, to the function of its concern."""
    if isinstance(event, StatesRead):
        reassignment.on_states(ws, event)
    elif isinstance(event, StopReplicaSent):
        reassignment.on_stop_replica_sent(ws, event)
    elif isinstance(event, RequestsRead):
        reassignment.on_requests(ws, event)
    elif isinstance(event, BrokersRead):
        broker_failure.on_brokers(ws, event)
    elif isinstance(event, TopicsRead):
        reassignment.on_topics(ws, event)
    elif isinstance(event, TopicConfigsRead):
        reassignment.on_topic_configs(ws, event)
    elif isinstance(event, Resume):
        reassignment.on_resume(ws, event)
    elif isinstance(event, MetadataRead):
        replica_sync.on_metadata(ws, event)
    elif isinstance(event, ControllersRead):
        replica_sync.on_controllers(ws, event)
    elif isinstance(event, ProducerIdsRequested):
        producer_ids.on_request(ws, event)
    elif isinstance(event, ReplicasHosted):
        replica_sync.on_hosted(ws, event)
        reassignment.on_sizes(ws, event)  # step 2c's sizes
    elif isinstance(event, ReplicaSizes):
        reassignment.on_sizes(ws, event)
    elif isinstance(event, DeletionsRead):
        topic_deletion.on_deletions(ws, event.topics)
    elif isinstance(event, ScheduleDue):
        reassignment.on_held_landed(ws, event)
    elif isinstance(event, ReassignRequested):
        admin_requests.on_reassign(ws, event)
    elif isinstance(event, ThrottleRequested):
        admin_requests.on_throttle(ws, event)
    elif isinstance(event, TopicsRequested):
        topic_requests.on_topics(ws, event)
    elif isinstance(event, ThrottleRemovalRead):
        throttle_removal.on_removal(ws, event)
    elif isinstance(event, (ElectionRequested, OfflineCheck, PreferredElectionRead, ShutdownRequested)):
        elections.elect(ws, event)
    elif isinstance(event, IsrAlterRequested):
        alter_partition.on_alter(ws, event)
    elif isinstance(event, LogDirEventsRead):
        log_dir_failure.on_log_dir_events(ws, event)
    elif isinstance(event, ReplicasOffline):
        log_dir_failure.on_replicas_offline(ws, event)
    elif isinstance(event, (CancelRequested, QueueRead)):
        if ws.states_missing():
            # Just failed over: a cancel needs the partition state of the moves it rolls
            # back (KIP-236 skip 2, the leader to keep). Taken when the states are in.
            ws.deferred.append(event)
        elif isinstance(event, CancelRequested):
            cancel.on_cancel(ws, event)
        else:
            queue.on_queue(ws, event)
    else:
        raise TypeError(f"not an engine event: {event!r}")


def take_deferred(ws: WorkingSet) -> None:
    """The events held back until a failover's resumed moves have their states."""
    if ws.deferred and not ws.states_missing():
        events, ws.deferred = ws.deferred, []
        for event in events:
            handle(ws, event)


def finish(ws: WorkingSet) -> Step:
    """The step's output: the flush in the order of "Writes are coalesced", the delta, the rest."""
    parents_before, parents_after = ws.parent_ops()
    middle: list[Op] = []
    labels: dict[str, frozenset[str]] = {  # coalesced znodes: the kinds that touched them
        paths.REASSIGN_PARTITIONS: frozenset(ws.requests_kinds),
        paths.CANCEL_REASSIGNMENT: frozenset({ROLLBACK}),
        paths.PREFERRED_REPLICA_ELECTION: frozenset({ELECT}),
        paths.REASSIGN_QUEUE: frozenset({QUEUE}),
        **{paths.topic(t): frozenset(k) for t, k in ws.dirty_topics.items()},
        **{paths.reassignment_topic(t): frozenset(k) for t, k in ws.parent_kinds.items()},
    }
    for topic in ws.dirty_topics:
        version = ws.topic_versions[topic]
        parts = {p: ws.assignments[(topic, p)] for p in ws.topic_partitions[topic]}
        middle.append(SetData(paths.topic(topic), encode_topic(parts, ws.topic_ids.get(topic)), version))
        ws.topic_versions[topic] = version + 1
    tail: list[Op] = []
    if ws.requests_dirty:
        entries = list(ws.requests.values())
        version = ws.requests_version
        path = paths.REASSIGN_PARTITIONS
        if version is None:
            if entries:
                tail.append(Create(path, encode_requests(entries)))
                ws.requests_version = 0
        elif not entries:
            tail.append(Delete(path, version))
            ws.requests_version = None
        else:
            tail.append(SetData(path, encode_requests(entries), version))
            ws.requests_version = version + 1
        ws.requests_version_changed = True
    if ws.with_requests:
        # After the entry drops, in its multi; the parents they empty go after them.
        tail += ws.with_requests.ops + parents_after
        parents_after = []
    if ws.cancel_znode_version is not None:
        tail.append(Delete(paths.CANCEL_REASSIGNMENT, ws.cancel_znode_version))
    if ws.preferred_znode_version is not None:  # step 12's ZooKeeper door, once its elections are written
        tail.append(Delete(paths.PREFERRED_REPLICA_ELECTION, ws.preferred_znode_version))
    if ws.queue_version is not None:
        tail.append(Delete(paths.REASSIGN_QUEUE, ws.queue_version))
    delta = Delta(
        brokers=ws.brokers if ws.brokers_changed else None,
        assignments=ws.assignments.changes,
        topic_versions=ws.topic_versions.changes,
        topic_partitions=ws.topic_partitions.changes,
        topic_ids=ws.topic_ids.changes,
        states=ws.states.changes,
        requests=ws.requests.changes,
        tasks=ws.tasks.changes,
        pending=ws.pending.changes,
        record_counts=ws.record_counts.changes,
        deleting=ws.deleting.changes,
        unhosted=ws.unhosted.changes,
        min_isr=ws.min_isr.changes,
        unclean=ws.unclean.changes,
        sizes=ws.sizes.changes,
        offline_replicas=ws.offline_replicas.changes,
        shutting_down=ws.shutting_down.changes,
    )
    if tuple(ws.deferred) != ws.base.deferred:
        delta.deferred = tuple(ws.deferred)
    if ws.controller_nodes_changed:
        delta.controller_nodes = ws.controller_nodes
    if ws.producer_id_block_changed:
        delta.producer_id_block = ws.producer_id_block
    if ws.requests_version_changed:
        delta.requests_version = ws.requests_version
    finished = ws.touched and ws.requests_version is None and len(ws.tasks) == 0
    throttles = ws.throttles.ops()  # before any move of the step starts (admin_requests step 4)
    own = throttles + ws.admin_first.ops + parents_before + ws.early.ops + middle + ws.late.ops + parents_after + ws.notifications.ops
    single: dict[str, frozenset[str]] = {}  # one label per kind, shared by its ops (100,000s a step)
    by_op = {
        id(op): single.get(kind) or single.setdefault(kind, frozenset({kind}))
        for part in (ws.admin_first, ws.early, ws.late, ws.with_requests, ws.notifications)
        for op, kind in zip(part.ops, part.kinds)
    }
    admin = frozenset({ADMIN})
    by_op.update((id(op), admin) for op in throttles)
    removal = ws.removal.ops
    removal_label = frozenset({THROTTLE_REMOVAL})
    by_op.update((id(op), removal_label) for op in removal)
    return Step(
        delta=delta,
        writes=own + tail + removal,
        # An op neither list nor table labels is "other": a label never fails a step.
        kinds=[by_op.get(id(op)) or labels.get(op.path, frozenset({OTHER})) for op in own + tail + removal],
        shared_from=len(own),
        removal_from=len(own) + len(tail),
        throttle_check=throttle_removal.check_due(finished, bool(ws.ended or ws.idle_check)) or ws.removal_again,
        commands=ws.outbox.commands() if ws.outbox is not None else [],
        reads=frozenset(
            tp for tp in ws.reads if (m := ws.tasks.get(tp)) is not None and (m.phase is Phase.LOADING or m.resend)
        ),
        log=ws.log,
        warnings=ws.warnings,
        finished=finished,
        completed=ws.completed,
        cancelled=ws.cancelled,
        cancels=ws.cancels,
        created=ws.created,
        topics_deleted=ws.topics_deleted,
        markers_dropped=ws.markers_dropped,
        elections=ws.elections,
        answers=ws.answers,
        held=tuple(ws.held),
    )
