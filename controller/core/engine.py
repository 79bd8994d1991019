"""The reassignment engine: ``step(state, events, config) -> Step``. Pure: no I/O, no clock.

A step folds a batch of events (controller.core.events) into the state (controller.core.state) and
returns what the shell must do, in this order: write ``writes`` to ZooKeeper (one batched,
fenced flush), then apply ``delta`` to memory, then send ``commands`` to brokers and read the
partition states named in ``reads`` (fed back as a StatesRead event). Nothing is applied to
memory unless the writes landed; a step that fails to write is thrown away and the shell
re-runs failover recovery, which finishes every half-written move.

Algorithm (docs/DESIGN.md section 4, Kafka 2.4's ``onPartitionReassignment``); terms: ORS original
replicas, TRS target replicas, RS = TRS followed by ORS - TRS, AR = TRS - ORS, RR = ORS - TRS.

 1. Accept. An entry of ``/admin/reassign_partitions`` naming an unknown topic or partition,
    an unregistered broker, a duplicate broker or no broker at all is dropped from the znode
    with a logged reason; an entry whose target is already the assignment is dropped as done;
    the others become PENDING moves, in znode order.
 2. Schedule. A pending move starts as soon as it fits the caps: concurrent moves per broker
    adding a replica (incoming) and removing one (outgoing), and cluster-wide. No batch
    barrier: a slot freed by one partition is taken by the next in the same step. A move
    taking a slot starts at once from the partition state the controller holds (read at
    its election for the full metadata, kept fresh by the ISR notifications and its own
    writes, as Kafka's controller cache is); without one it is LOADING while the state is read.
 3. Start (state known). In one fenced multi: create ``/admin/reassignments/T/P`` with TRS and
    ORS, write the state znode with leader epoch + 1 (conditional on its zkVersion), write the
    topic znode with RS, AR and RR, record ``original_replicas`` in
    ``/admin/reassign_partitions`` when the writer left them out (KIP-236). Then LeaderAndIsr
    (RS, AR, RR; ``is_new`` for AR; the new leader epoch) to every live replica in RS.
    -> REPLICATING
 4. Replicate. The brokers copy; the leader adds AR to the ISR and posts an ISR change
    notification; the controller reads the named states (one children watch for all), or
    takes them from the notification when the leader put them there with their zkVersion.
 4b. Override (KIP-455). A new target for a replicating move - from
    ``/admin/reassign_partitions`` (AlterPartitionReassignments, ReassignPartitions v1, a
    tool's rewrite) or from a queued batch KIP-236 cannot roll back - replaces its target in
    place, once every event of the step is in (a failover's Resume writes records first). ORS
    stays; the replicas an earlier target added that the new one does not keep are dropped.
    Kafka deletes them at once, and so does this step for those outside the ISR: they hold no
    in-sync copy. A dropped replica in the ISR (the leader, say) is kept as ``dropped``, at the
    end of RR, until the new TRS is in sync (invariant 4): RS = TRS followed by ORS - TRS and
    the kept, AR = TRS - ORS, RR = ORS - TRS followed by the kept. In one flush the record gets
    the new TRS, the state znode leader epoch + 1 (conditional on the zkVersion the ISR was
    judged from) and the topic znode the new RS; then LeaderAndIsr (``is_new`` for replicas not
    in the old RS) to every live replica of the new RS and StopReplica(delete) to the deleted
    (a broker that is down gets it as a stray, step 9). The per-broker caps hold for the copies
    an override adds: one that does not fit waits, the old target copying on, until a slot
    frees (step 2 takes it first), or follows the move if that completes first. A new target
    equal to ORS is a cancel (step 7). A move completing or being rolled back takes the new
    target after it ends (its "next target"); one whose state is being read after a failover,
    when it arrives.
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
    partition's replicas from its topic znode. When the live broker set changes (a broker
    registered, re-registered or went), every live broker hears the new set, in an
    UpdateMetadata without partitions if the step sends none with them (onBrokerFailure too).
 8b. Replica states (Kafka's ``replicaStateMachine.startup``, part of ``onControllerFailover``):
    the chunks of a (re)load's full send (``MetadataRead.leader_and_isr``) also give every
    live replica LeaderAndIsr with the state held, leader epoch unchanged, nothing written. A
    broker that restarted while no controller was active registered before this one read the
    brokers: no registration (controller.core.broker_failure step 7) ever tells it its role,
    and it would neither lead nor follow, so never rejoin an ISR. Brokers holding the epoch
    refuse it (STALE_CONTROLLER_EPOCH for the partition: not logged, not retried). Made last
    in the step and only where the step sent that broker nothing of its own for the
    partition (a new epoch, 9b's ``is_new``, a start), so each replica hears one state; never
    for a started move (Resume announces it, a REPLICATING one with a new epoch) nor a topic
    being deleted. Brokers 1-4; 3 restarted with no controller (it holds no epoch); 4 is down:

    partition  RS (AR; RR)    held: leader [ISR] epoch  LeaderAndIsr in the chunk's step
    a          1,2,3          1 [1,2] 4                 1 [1,2] 4 to 1, 2 (refused: held) and 3
                                                        (takes it: follows 1, rejoins the ISR)
    b          3,1            3 [3,1] 2                 3 [3,1] 2 to 3 (leads again), 1 (refused)
    c          2,4            2 [2] 0                   2 [2] 0 to 2 (refused); 4 is down
    d          1,2,3 (2; 3)   1 [1,3] 5                 none: a resumed move (Resume: epoch 6)
 9. Strays (no Kafka counterpart in ZooKeeper mode). A broker that registers or re-registers,
    and every live broker when a controller is elected (some may have registered while none
    was active), is asked what it hosts: DescribeLogDirs (KIP-113), after this step's
    LeaderAndIsr to it. Its answer (controller.core.events.ReplicasHosted) is compared with the
    assignment: a replica of a known partition whose RS does not place it on that broker, that
    no waiting move is about to add, and that is not in the ISR is a stray - a deletion missed
    while the broker was down (RR of a completion, AR of a rollback, an override's dropped) -
    and gets StopReplica(delete) (controller.core.task.stray_partitions). Nothing waits for
    those, nor for an override's deletions: they are not in ``StopReplicaSent``.
 9b. Missing replicas, from the same answers: a replica RS places on the broker, of a partition
    no move runs for, that the broker does not host - a LeaderAndIsr a controller never sent
    because it died between writing a new partition's state and sending it - gets LeaderAndIsr
    (``is_new``) with the state held (Kafka's controller sends every replica its LeaderAndIsr
    after an election and at a broker's start-up); a state not read yet, once it is.
10. New partitions (Kafka's ``onNewPartitionCreation``; the algorithm and its worked table
    are in controller.core.topic_creation). A partition of a known topic whose state znode the
    full-metadata read (step 8) found missing - a topic created by CreateTopics or any tool, or
    one whose creation a failed controller left half-done - gets, in this step's flush, its
    missing ``partitions`` parents and a state: leader the first live replica, ISR the live
    replicas, leader epoch 0; LeaderAndIsr (``is_new``) to the live replicas, UpdateMetadata to
    every live broker; ``Step.created`` names it. No replica live: nothing until one registers.

Leader epochs (Kafka's ``updateLeaderEpochAndSendRequest``): every LeaderAndIsr that gives a
partition a new replica set or leader - start, override, completion, rollback, and a resumed
move resumed as REPLICATING after failover (its RS may never have reached the brokers at the
state's epoch) - carries a leader epoch one above the last one written, written to the state
znode first (conditional on its zkVersion) in the same flush. Brokers refuse a partition state
whose leader epoch is not newer than theirs (docs/DESIGN.md section 5), so a resend of a state
already written - a broker registering again (on_brokers), every partition after an election
(step 8b), a STOPPING or CANCELLING move resumed - goes as it is: brokers holding it answer STALE_CONTROLLER_EPOCH for it, harmlessly (the dispatcher
neither retries nor fails on that), and replicas without local state (new, or restarted)
take it. UpdateMetadata carries states as they are and bumps nothing.

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

Writes are coalesced per step: a topic znode or ``/admin/reassign_partitions`` touched by
10,000 partitions in one step is written once. Their order inside the flush keeps every prefix
recoverable (a flush split into several multis can stop between any two): record creates and
state writes, then topic znodes, then record deletes, then processed ISR notifications, and
``/admin/reassign_partitions`` last - the one znode others write too: if a third party
changed it meanwhile, only that last write fails, and the shell re-reads and merges it. In
that same last part (``Step.shared_from``): the record deletes of rolled-back moves (a record
must outlive the entry it rolled back, else the entry would look like a new request), then
the deletes of ``/admin/cancel_reassignment_in_progress`` and
``/admin/reassign_partitions_queue`` when a step took them, so neither is gone before what it
asked for is recorded.

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

A step doing several of these for several partitions writes each znode once, in the order
above ("Writes are coalesced"); an op written for several kinds carries them all. Throttle
removal (controller.shell.throttles) is the shell's own flush: configs with their change
notifications, then the removal znodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from controller.core import topic_creation
from controller.core.cancel import CancelOutcome, CancelSteps, rollback_assignment
from controller.core.commands import BrokerCommand, Outbox
from controller.core.config import ControllerConfig
from controller.core.events import (
    BrokersRead,
    CancelRequested,
    DeletionsRead,
    ElectionRequested,
    Event,
    MetadataRead,
    QueueRead,
    ReplicasHosted,
    RequestsRead,
    Resume,
    StatesRead,
    StopReplicaSent,
    TopicsRead,
)
from controller.core.flush import (
    ACCEPT,
    BROKERS,
    COMPLETE,
    CREATE,
    ELECT,
    FINISH,
    ISR_CHANGE,
    OTHER,
    OVERRIDE,
    QUEUE,
    RESUME,
    ROLLBACK,
    START,
    Writes,
    writing,
)
from controller.core.queue import QueueSteps
from controller.core.state import ClusterState, Delta, Overlay
from controller.core.task import Move, Phase, dropped_replicas, reassigning_replicas, stray_partitions
from controller.core.elections import ElectionSteps
from controller.core.topic_deletion import DeletionSteps
from controller.core.validation import replicas_problem
from znodes import paths
from znodes.api import Create, Delete, Op, SetData
from znodes.payloads import encode_record, encode_requests, encode_state, encode_topic
from znodes.values import Assignment, LeaderIsr, Request, TopicPartition


@dataclass
class Step:
    delta: Delta
    writes: list[Op]
    commands: list[BrokerCommand]
    reads: frozenset[TopicPartition]
    log: list[str] = field(default_factory=list)
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


def step(state: ClusterState, events: Sequence[Event] | Event, config: ControllerConfig) -> Step:
    """Fold ``events`` into ``state``; see the module docstring. ``state`` is not modified."""
    if not isinstance(events, (list, tuple)):
        events = [events]
    s = _Step(state, config)
    for event in events:
        s.handle(event)
    s.take_deferred()
    s.take_overrides()
    if s.deleting:
        s.advance_deletions()  # step 11: after the cancels and overrides of the step
    s.missing_replicas()  # step 9b
    s.schedule()
    s.replica_states()  # step 8b: last, where the step decided nothing of its own
    return s.finish()


class _Step(CancelSteps, QueueSteps, DeletionSteps, ElectionSteps):
    """The working set of one step: overlays over the state plus the effects so far
    (cancellation and the queue are in controller.core.cancel and controller.core.queue)."""

    def __init__(self, state: ClusterState, config: ControllerConfig):
        self.kind = OTHER  # what the writes are for now (controller.core.flush.writing)
        self.base = state
        self.config = config
        self.brokers = state.brokers
        self.brokers_changed = False
        self.assignments = Overlay(state.assignments)
        self.topic_versions = Overlay(state.topic_versions)
        self.topic_partitions = Overlay(state.topic_partitions)
        self.states = Overlay(state.states)
        self.requests = Overlay(state.requests)
        self.requests_version = state.requests_version
        self.requests_version_changed = False
        self.tasks = Overlay(state.tasks)
        self.pending = Overlay(state.pending)
        # Records under each /admin/reassignments/T parent; a key means the parent exists.
        self.record_counts = Overlay(state.record_counts)
        self.record_parents: dict[str, bool] = {}  # topic -> a record was created this step
        self.dirty_topics: dict[str, set[str]] = {}  # topic -> kinds of flush rewriting it
        self.parent_kinds: dict[str, set[str]] = {}  # topic -> kinds creating/deleting records
        self.requests_kinds: set[str] = set()  # kinds rewriting /admin/reassign_partitions
        self.schedule_needed = False
        self.touched = False  # a move ended or the znode changed: check for "finished"
        self.early: list[Op] = Writes(self)  # record creates, state writes
        self.late: list[Op] = Writes(self)  # record deletes
        # Record deletes that must not land before /admin/reassign_partitions drops the entry
        # (a rollback's: without its record, the entry would look like a new request).
        self.with_requests: list[Op] = Writes(self)
        self.notifications: list[Op] = Writes(self)
        self.reads: set[TopicPartition] = set()
        self.ended: set[TopicPartition] = set()  # moves ended in this step (records still to delete)
        self.log: list[str] = []
        self.completed: list[TopicPartition] = []
        self.cancelled: list[TopicPartition] = []
        self.cancels: list[CancelOutcome] = []
        self.cancel_znode_version: int | None = None  # delete the cancel znode (this version)
        self.queue_version: int | None = None  # delete the queue znode (this version)
        self.deferred: list = list(state.deferred)
        # Replicating moves given a new target in this step (step 4b, made after every event:
        # a failover's Resume must have created or rewritten the records first).
        self.overrides: dict[TopicPartition, None] = {}
        self.outbox: Outbox | None = None
        self.created: list[TopicPartition] = []  # partitions given their first state (step 10)
        self.deleting = Overlay(state.deleting)  # step 11
        self.unhosted = Overlay(state.unhosted)  # step 9b
        self.hosted_answers: dict[int, frozenset[TopicPartition]] = {}  # step 9b: this step's answers
        self.startup: list[TopicPartition] = []  # step 8b: partitions of a (re)load's chunks
        self.elections: list = []  # step 12: (token, results) per ElectionRequested
        self.topics_deleted: list[str] = []
        self.markers_dropped: list[str] = []
        self.parents_created: set[str] = set()
        self._missing_key: tuple[int, int] | None = None  # states_missing's memo
        self._missing = False

    # ---- helpers -------------------------------------------------------------------------

    @property
    def requests_dirty(self) -> bool:
        """/admin/reassign_partitions must be rewritten (setting it records the current kind)."""
        return bool(self.requests_kinds)

    @requests_dirty.setter
    def requests_dirty(self, dirty: bool) -> None:
        if dirty:
            self.requests_kinds.add(self.kind)
        else:
            self.requests_kinds.clear()

    @property
    def box(self) -> Outbox:
        if self.outbox is None:
            self.outbox = Outbox(self.base.controller_id, self.base.epoch, self.brokers)
        return self.outbox

    def set_task(self, move: Move) -> None:
        self.tasks[move.tp] = move

    def end_task(self, tp: TopicPartition) -> None:
        # The partition's state stays: it is as fresh as this controller's writes and the ISR
        # notifications keep it, and a later move of the partition starts from it.
        self.tasks.pop(tp)
        self.pending.pop(tp)
        self.ended.add(tp)
        self.schedule_needed = True
        self.touched = True

    def drop_request(self, tp: TopicPartition) -> None:
        if tp in self.requests:
            self.requests.pop(tp)
            self.requests_dirty = True

    def create_record(self, tp: TopicPartition, target, original) -> None:
        self.early.append(Create(paths.reassignment(*tp), encode_record(target, original)))
        self.record_counts[tp[0]] = self.record_counts.get(tp[0], 0) + 1
        self.record_parents[tp[0]] = True
        self.parent_kinds.setdefault(tp[0], set()).add(self.kind)

    def delete_record(self, tp: TopicPartition, *, early: bool = False, with_requests: bool = False) -> None:
        where = self.early if early else self.with_requests if with_requests else self.late
        where.append(Delete(paths.reassignment(*tp)))
        self.record_counts[tp[0]] = self.record_counts.get(tp[0], 0) - 1
        self.record_parents.setdefault(tp[0], False)
        self.parent_kinds.setdefault(tp[0], set()).add(self.kind)

    def parent_ops(self) -> tuple[list[Op], list[Op]]:
        """/admin/reassignments/T parents: created before a topic's first record, deleted
        after its last (ZooKeeper's multi does not create parents)."""
        before: list[Op] = []
        after: list[Op] = []
        for topic, created in self.record_parents.items():
            existed = topic in self.base.record_counts
            if created and not existed:
                before.append(Create(paths.reassignment_topic(topic)))
            if (existed or created) and self.record_counts.get(topic, 0) <= 0:
                after.append(Delete(paths.reassignment_topic(topic)))
                self.record_counts.pop(topic)
        return before, after

    def set_assignment(self, tp: TopicPartition, assignment: Assignment) -> None:
        if self.assignments.get(tp) != assignment:
            self.assignments[tp] = assignment
            self.dirty_topics.setdefault(tp[0], set()).add(self.kind)

    def invalid_reason(self, r: Request) -> str | None:
        if r.topic not in self.topic_partitions:
            return f"unknown topic {r.topic!r}"
        if r.topic in self.deleting:
            return f"topic {r.topic!r} is being deleted"
        if (r.topic, r.partition) not in self.assignments:
            return f"unknown partition {r.partition} of topic {r.topic!r}"
        return replicas_problem(r.replicas, self.brokers)

    def states_missing(self) -> bool:
        """A started move whose partition state is not known yet (just failed over). Asked for
        every election, cancel and queue event: one scan of the moves per change of the moves
        or the states, not one per event (10,000 moves and an election check every step)."""
        key = (self.tasks.writes, self.states.writes)
        if key != self._missing_key:
            self._missing_key = key
            self._missing = any(move.started and move.tp not in self.states for move in self.tasks.values())
        return self._missing

    def take_deferred(self) -> None:
        if self.deferred and not self.states_missing():
            events, self.deferred = self.deferred, []
            for event in events:
                self.handle(event)

    def take_overrides(self) -> None:
        usage = None  # slots in use, counted once for all of them
        for tp in self.overrides:
            move = self.tasks.get(tp)
            if move is not None and move.phase is Phase.REPLICATING and move.next_target is not None and not move.resend:
                usage = usage if usage is not None else self.slot_usage()
                self.override(move, move.next_target, usage)

    # ---- events --------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if isinstance(event, StatesRead):
            self.on_states(event)
        elif isinstance(event, StopReplicaSent):
            self.on_stop_replica_sent(event)
        elif isinstance(event, RequestsRead):
            self.on_requests(event)
        elif isinstance(event, BrokersRead):
            self.on_brokers(event)
        elif isinstance(event, TopicsRead):
            self.on_topics(event)
        elif isinstance(event, Resume):
            self.on_resume(event)
        elif isinstance(event, MetadataRead):
            self.on_metadata(event)
        elif isinstance(event, ReplicasHosted):
            self.on_hosted(event)
        elif isinstance(event, DeletionsRead):
            self.on_deletions(event.topics)
        elif isinstance(event, ElectionRequested):
            self.elect(event)
        elif isinstance(event, (CancelRequested, QueueRead)):
            if self.states_missing():
                # Just failed over: a cancel needs the partition state of the moves it rolls
                # back (KIP-236 skip 2, the leader to keep). Taken when the states are in.
                self.deferred.append(event)
            elif isinstance(event, CancelRequested):
                self.on_cancel(event)
            else:
                self.on_queue(event)
        else:
            raise TypeError(f"not an engine event: {event!r}")

    def on_topics(self, event: TopicsRead) -> None:
        for name, read in event.topics.items():
            if read is None:
                for p in self.topic_partitions.get(name, ()):
                    self.partition_gone((name, p))
                self.topic_partitions.pop(name)
                self.topic_versions.pop(name)
                continue
            version, parts = read
            known = self.topic_versions.get(name)
            if known is not None and known > version:
                continue  # an older read than what this controller wrote
            for p in self.topic_partitions.get(name, ()):
                if p not in parts:
                    self.partition_gone((name, p))
            for p, assignment in parts.items():
                self.assignments[(name, p)] = assignment
            self.topic_partitions[name] = tuple(parts)
            self.topic_versions[name] = version

    def partition_gone(self, tp: TopicPartition) -> None:
        """A partition deleted under a move: a move not started yet is dropped."""
        self.assignments.pop(tp)
        move = self.tasks.get(tp)
        if move is None or not move.started:
            self.states.pop(tp)
        if move is not None and not move.started:
            self.log.append(f"dropping reassignment of {tp[0]}-{tp[1]}: the partition was deleted")
            self.set_task(move.to(Phase.DROPPED))
            self.end_task(tp)
            self.drop_request(tp)

    @writing(BROKERS)
    def on_brokers(self, event: BrokersRead) -> None:
        old = self.brokers
        self.brokers = dict(event.brokers)
        self.brokers_changed = True
        if self.outbox is not None:
            self.outbox.brokers = self.brokers
        back = {b for b, info in self.brokers.items() if b not in old or old[b].epoch != info.epoch}
        if back or set(old) - set(self.brokers):
            self.box.live_brokers_changed()
        for b in sorted(back):
            self.box.describe_log_dirs(b)  # step 9: what it hosts, for its strays
        for move in list(self.tasks.values()):
            if not move.started:
                continue
            state = self.states.get(move.tp)
            if state is None:
                continue
            if move.phase is Phase.REPLICATING:
                # A (re)started replica learns the move; a new leader may now be electable.
                for b in back.intersection(move.replicas):
                    self.box.leader_and_isr(
                        b, move.tp, state, replicas=move.replicas, adding=move.adding, removing=move.removing,
                        is_new=b in move.adding,
                    )
                self.check_complete(move)
            elif move.phase is Phase.STOPPING:
                for b in back.intersection(move.target):
                    self.box.leader_and_isr(b, move.tp, state, replicas=move.target, adding=(), removing=(), is_new=False)
            elif move.phase is Phase.CANCELLING:
                for b in back.intersection(move.original):
                    self.box.leader_and_isr(b, move.tp, state, replicas=move.original, adding=(), removing=(), is_new=False)
        if back:
            self.schedule_needed = True

    @writing(ACCEPT)
    def on_requests(self, event: RequestsRead) -> None:
        if event.error is not None:
            self.log.append(f"ignoring /admin/reassign_partitions: {event.error}")
            return
        self.requests_version = event.version
        self.requests_version_changed = True
        self.touched = True
        for reason in event.rejected:
            self.log.append(reason)
            self.requests_dirty = True
        entries = event.requests or ()
        seen: dict[TopicPartition, Request] = {}
        for r in entries:
            tp = r.tp
            if tp in seen:
                self.log.append(f"dropping duplicate entry for {r.topic}-{r.partition} in /admin/reassign_partitions")
                self.requests_dirty = True
                continue
            move = self.tasks.get(tp)
            reason = self.invalid_reason(r)
            if reason is not None and not (move is not None and move.started and r.replicas == move.target):
                self.log.append(f"dropping reassignment of {r.topic}-{r.partition} to {list(r.replicas)}: {reason}")
                self.requests_dirty = True
                continue
            seen[tp] = r
        # Entries gone from the znode: a move not started yet is withdrawn; a started one runs on.
        for tp in list(self.requests.keys()):
            if tp not in seen:
                self.requests.pop(tp)
        for tp, move in list(self.tasks.items()):
            if tp in seen:
                continue
            if not move.started:
                self.log.append(f"reassignment of {tp[0]}-{tp[1]} withdrawn from /admin/reassign_partitions before it started")
                self.set_task(move.to(Phase.DROPPED))
                self.end_task(tp)
            elif move.next_target is not None:
                self.set_task(move.with_changes(next_target=None))
        for tp, r in seen.items():
            self.requests[tp] = r
            move = self.tasks.get(tp)
            if move is None:
                if self.assignments[tp] == Assignment(r.replicas):
                    self.log.append(f"reassignment of {r.topic}-{r.partition} to {list(r.replicas)}: already assigned")
                    self.drop_request(tp)
                    continue
                self.set_task(Move(tp, r.replicas))
                self.pending[tp] = None
                self.schedule_needed = True
            elif not move.started:
                if move.target != r.replicas:
                    self.set_task(move.with_changes(target=r.replicas))
            elif r.replicas == move.target:
                if r.original_replicas is None:
                    self.record_original(move)  # a rewrite of the znode lost what was recorded
                # A rollback keeps its entry until it ends, and a target queued behind it equal
                # to the cancelled one (controller.core.queue) reads the same: neither drops it.
                if move.next_target is not None and move.phase is not Phase.CANCELLING:
                    self.set_task(move.with_changes(next_target=None))
            elif move.phase is Phase.REPLICATING:
                if move.next_target != r.replicas:
                    self.set_task(move.with_changes(next_target=r.replicas))
                self.overrides[tp] = None  # step 4b, once every event of the step is in
            elif move.next_target != r.replicas:
                what = "being rolled back" if move.phase is Phase.CANCELLING else "completing"
                self.log.append(
                    f"{r.topic}-{r.partition} is {what}; its new target {list(r.replicas)} is queued behind that"
                )
                self.set_task(move.with_changes(next_target=r.replicas))

    @writing(ISR_CHANGE)
    def on_states(self, event: StatesRead) -> None:
        for tp, state in event.states.items():
            move = self.tasks.get(tp)
            if state is None:
                if move is not None and move.phase is Phase.LOADING:
                    self.log.append(f"dropping reassignment of {tp[0]}-{tp[1]}: the partition has no state znode")
                    self.set_task(move.to(Phase.DROPPED))
                    self.end_task(tp)
                    self.drop_request(tp)
                elif move is not None and move.resend and move.phase is Phase.STOPPING:
                    self.stop_removed(move.with_changes(resend=False), None)  # only cleanup was left
                elif move is not None and move.resend and move.phase is Phase.CANCELLING:
                    self.stop_added(move.with_changes(resend=False), None)
                elif move is not None and move.resend:
                    self.log.append(f"{tp[0]}-{tp[1]} is being moved but has no state znode: waiting for one")
                continue
            known = self.states.get(tp)
            if known is not None and known.zk_version > state.zk_version:
                state = known  # this controller wrote a newer one since the read
            assignment = self.assignments.get(tp)
            if assignment is not None and event.notifications and (move is None or move.phase is not Phase.LOADING):
                self.box.update_metadata(tp, state, assignment.replicas)
            if (assignment is not None or move is not None) and state is not known:
                self.states[tp] = state
            if move is None:
                continue
            if move.phase is Phase.LOADING:
                self.start(move, state)
            elif move.resend:
                self.announce(move, state)
            elif move.phase is Phase.REPLICATING:
                self.check_complete(move)
        for path in event.notifications:
            self.notifications.append(Delete(path))

    def on_metadata(self, event: MetadataRead) -> None:
        """Step 8: partition states read for a full UpdateMetadata go out as they are, with
        the replicas this controller knows (a newer state it holds for a move wins)."""
        to = event.brokers
        for tp, state in event.states.items():
            assignment = self.assignments.get(tp)
            if assignment is None:
                continue  # the partition went meanwhile: nothing to say
            known = self.states.get(tp)
            if tp[0] in self.deleting and self.deleting[tp[0]].started:
                self.metadata_gone(tp, to)  # step 11: being deleted, not to be served
                continue
            if state is None:
                if known is None:
                    self.create_partition(tp, assignment, event.missing_parents)  # step 10
                continue
            if known is not None and known.zk_version > state.zk_version:
                state = known
            elif state != known:
                self.states[tp] = state  # kept: a move of the partition starts without a read
            if tp in self.unhosted:
                self.tell_unhosted(tp, state, assignment)
            self.box.update_metadata(tp, state, assignment.replicas, to)
            if event.leader_and_isr:
                self.startup.append(tp)  # step 8b, at the end of the step

    def replica_states(self) -> None:
        """Step 8b: LeaderAndIsr with the state held to every live replica of a (re)load's
        chunk, where this step sent that broker nothing of its own for the partition; not for
        a started move nor a topic being deleted."""
        if not self.startup:
            return
        tasks, assignments, states, box = self.tasks, self.assignments, self.states, self.box
        deleting = set(self.deleting.keys())
        for tp in self.startup:
            move = tasks.get(tp)
            if (move is not None and move.started) or tp[0] in deleting:
                continue
            assignment, state = assignments.get(tp), states.get(tp)
            if assignment is not None and state is not None:
                box.leader_and_isr_held(tp, state, assignment.replicas)

    @writing(CREATE)
    def create_partition(self, tp: TopicPartition, assignment: Assignment, missing_parents: frozenset[str]) -> None:
        """Step 10 (controller.core.topic_creation step 4): a partition without a state znode
        gets one - leader the first live replica, ISR the live replicas, leader epoch 0 - with
        its missing parents; LeaderAndIsr (is_new) to the live replicas, UpdateMetadata to
        every live broker. With no replica live it waits (asked again when one registers)."""
        if tp[0] in self.deleting:
            return  # being deleted (a deletion cut short may have removed its state already)
        state = topic_creation.new_partition_state(assignment.replicas, self.brokers, self.base.epoch)
        if state is None:
            self.log.append(f"new partition {tp[0]}-{tp[1]} has no live replica in {list(assignment.replicas)}: "
                            "it gets a leader when one registers")
            return
        for op in topic_creation.state_ops(tp, state, missing_parents - self.parents_created):
            self.early.append(op)
            if op.path != paths.partition_state(*tp):
                self.parents_created.add(op.path)
        self.states[tp] = state
        self.unhosted.pop(tp)  # told below with every live replica
        self.created.append(tp)
        for b in assignment.replicas:
            if b in self.brokers:
                self.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)
        self.box.update_metadata(tp, state, assignment.replicas)

    def on_hosted(self, event: ReplicasHosted) -> None:
        """Step 9: delete the strays a (re)registered broker hosts."""
        b = event.broker_id
        if b not in self.brokers:
            return  # gone again: asked once more when it registers
        if self.deleting:
            self.deletion_hosted(b, event.partitions)  # step 11
        self.hosted_answers[b] = event.partitions  # step 9b, for all answers at once (finish)
        for tp in stray_partitions(b, event.partitions, self.assignments, self.tasks, self.states):
            state = self.states.get(tp)
            self.log.append(f"broker {b} hosts a replica of {tp[0]}-{tp[1]}, which is not assigned to it: deleting it")
            self.box.stop_replica(b, tp, state.leader_epoch if state is not None else -1, wait=False)

    @writing(ELECT)
    def elect(self, event: ElectionRequested) -> None:
        """Step 12 (controller.core.elections)."""
        if self.states_missing():
            self.deferred.append(event)  # just failed over: after the resumed moves' states
        else:
            self.on_election(event)

    def missing_replicas(self) -> None:
        """Step 9b: replicas assigned to a broker that answered (RS, no move running) that it
        does not host - a LeaderAndIsr lost with a controller that wrote the state and died
        before sending it (a new partition's, say) - get LeaderAndIsr (``is_new``) with the state
        held; a state not read yet: once it is (``unhosted``, on_metadata). One pass over the
        assignments for every answer of the step (an election brings one per broker)."""
        answers = {b: hosted for b, hosted in self.hosted_answers.items() if b in self.brokers}
        if not answers:
            return
        for tp, assignment in self.assignments.items():
            for b in assignment.replicas:
                hosted = answers.get(b)
                if hosted is None or tp in hosted or tp in self.tasks or tp[0] in self.deleting:
                    continue
                state = self.states.get(tp)
                if state is None:
                    self.unhosted[tp] = self.unhosted.get(tp, frozenset()) | {b}
                    continue
                self.log.append(f"broker {b} does not host its replica of {tp[0]}-{tp[1]}: sending it LeaderAndIsr")
                self.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)

    def tell_unhosted(self, tp: TopicPartition, state: LeaderIsr, assignment: Assignment) -> None:
        """Step 9b, once ``tp``'s state is known."""
        for b in sorted(self.unhosted.get(tp, ())):
            if b in self.brokers and b in assignment.replicas and tp not in self.tasks:
                self.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)
        self.unhosted.pop(tp)

    def on_stop_replica_sent(self, event: StopReplicaSent) -> None:
        for tp in event.partitions:
            move = self.tasks.get(tp)
            if move is not None and move.phase is Phase.STOPPING:
                self.finish_move(move)
            elif move is not None and move.phase is Phase.CANCELLING:
                self.finish_cancel(move)

    @writing(RESUME)
    def on_resume(self, event: Resume) -> None:
        """Carry on with the moves recovery rebuilt (new controller epoch: re-send everything)."""
        for b in sorted(self.brokers):
            # Step 9: brokers that registered while no controller was active are asked too.
            self.box.describe_log_dirs(b)
        for tp in sorted(event.stale_records):
            # Before any create: a new move of the same partition may start in this flush.
            self.log.append(f"deleting stale reassignment record of {tp[0]}-{tp[1]}: no move of it is running")
            self.delete_record(tp, early=True)
        for topic, count in list(self.record_counts.items()):
            if count == 0:  # a parent whose last record went in a flush cut short
                self.record_parents.setdefault(topic, False)
                self.parent_kinds.setdefault(topic, set()).add(self.kind)
        for move in list(self.tasks.values()):
            if not move.started:
                continue
            tp = move.tp
            if tp in event.create_records:
                self.create_record(tp, move.target, move.original)
            elif tp in event.rewrite_records or tp in event.flag_records:
                self.early.append(
                    SetData(paths.reassignment(*tp), encode_record(
                        move.target, move.original, cancelling=move.cancelling, next_target=move.next_target))
                )
            if move.phase is Phase.CANCELLING:
                current = self.assignments[tp]
                if current.moving and current != rollback_assignment(move):
                    # The cancel was marked but its topic znode write did not land.
                    self.set_assignment(tp, rollback_assignment(move))
            if move.phase is Phase.REPLICATING:
                # Recorded but the topic znode not yet written: write RS now. Whether or not
                # it was written, the brokers may never have heard of this RS at the state's
                # leader epoch (the previous controller can have died between its topic write
                # and its state write or its LeaderAndIsr), and a broker holding that epoch
                # refuses it resent as is: so it goes out with a new leader epoch, as Kafka's
                # onPartitionReassignment bumps it for every move it resumes.
                assignment = Assignment(move.replicas, move.adding, move.removing)
                move = move.with_changes(new_epoch=True)
                self.set_task(move)
                self.set_assignment(tp, assignment)
                self.record_original(move)
            state = self.states.get(tp)
            if state is None:
                self.set_task(move.with_changes(resend=True))
                self.reads.add(tp)
            else:
                self.announce(move, state)

    def announce(self, move: Move, state: LeaderIsr) -> None:
        """Tell the brokers about a move again (new controller epoch) and carry on with it: the
        state as it is, which brokers holding its leader epoch refuse harmlessly and replicas
        without local state take; a new leader epoch when the RS is new (``new_epoch``) or
        dropped replicas left the ISR (deleted now, as step 4b does)."""
        if move.resend:
            move = move.with_changes(resend=False)
            self.set_task(move)
        if move.phase is Phase.REPLICATING:
            # A dropped replica a target that came meanwhile keeps again is not deleted: the
            # override below takes it back (deleting it first would race its LeaderAndIsr).
            keep = move.next_target or ()
            gone = tuple(b for b in move.dropped if b not in state.isr and b not in keep)
            if move.new_epoch or gone:
                move = move.shed(gone).with_changes(new_epoch=False)
                self.set_task(move)
                self.set_assignment(move.tp, Assignment(move.replicas, move.adding, move.removing))
                state = self.new_epoch(move.tp, state)
                self.delete_dropped(move.tp, gone, state)
            for b in move.replicas:
                if b in self.brokers:
                    self.box.leader_and_isr(
                        b, move.tp, state, replicas=move.replicas, adding=move.adding, removing=move.removing,
                        is_new=b in move.adding,
                    )
            if move.next_target is not None:
                self.override(move, move.next_target)  # a new target came while its state was read
            else:
                self.check_complete(move)
        elif move.phase is Phase.CANCELLING:  # leader and ISR into ORS if not yet; delete AR again
            self.roll_back(move, state)
        else:  # STOPPING: RS = TRS already written; delete RR again and finish
            self.stop_removed(move, state)

    # ---- the algorithm -------------------------------------------------------------------

    def record_original(self, move: Move) -> None:
        request = self.requests.get(move.tp)
        if request is not None and request.original_replicas is None:
            self.requests[move.tp] = replace(request, original_replicas=move.original)
            self.requests_dirty = True

    def schedule(self) -> None:
        """Step 2: start pending moves while they fit the caps (no batch barrier); overrides
        waiting for a slot (step 4b) go first, their moves being under way."""
        if not self.schedule_needed:
            return
        self.take_waiting_overrides()
        if len(self.pending) == 0:
            return
        cfg = self.config
        running = 0
        incoming: dict[int, int] = {}
        outgoing: dict[int, int] = {}
        for move in self.tasks.values():
            if not move.holds_slot:
                continue
            running += 1
            adding, removing = self.slot_brokers(move)
            for b in adding:
                incoming[b] = incoming.get(b, 0) + 1
            for b in removing:
                outgoing[b] = outgoing.get(b, 0) + 1
        if running >= cfg.max_cluster_moves:
            return
        for tp in list(self.pending.keys()):
            move = self.tasks[tp]
            adding, removing = self.slot_brokers(move)
            if any(incoming.get(b, 0) >= cfg.max_incoming_per_broker for b in adding):
                continue
            if any(outgoing.get(b, 0) >= cfg.max_outgoing_per_broker for b in removing):
                continue
            for b in adding:
                incoming[b] = incoming.get(b, 0) + 1
            for b in removing:
                outgoing[b] = outgoing.get(b, 0) + 1
            self.pending.pop(tp)
            move = move.to(Phase.LOADING)
            self.set_task(move)
            state = self.states.get(tp)
            if state is None or tp in self.ended:
                # Unknown, or a move of it ended in this step: its record's delete lands late
                # in this flush, after which the read lets the new move create its own.
                self.reads.add(tp)
            else:
                self.start(move, state)  # known from the election's read or kept fresh since
            running += 1
            if running >= cfg.max_cluster_moves:
                break

    def slot_brokers(self, move: Move) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if move.started:
            return move.adding, move.removing
        current = self.assignments[move.tp].replicas
        return (
            tuple(b for b in move.target if b not in current),
            tuple(b for b in current if b not in move.target),
        )

    @writing(START)
    def start(self, move: Move, state: LeaderIsr) -> None:
        """Step 3."""
        tp = move.tp
        assignment = self.assignments[tp]
        original = tuple(b for b in assignment.replicas if b not in assignment.adding)
        if move.target == original:
            self.log.append(f"reassignment of {tp[0]}-{tp[1]} to {list(move.target)}: already assigned")
            self.set_task(move.to(Phase.DONE))
            self.end_task(tp)
            self.drop_request(tp)
            return
        replicas, adding, removing = reassigning_replicas(move.target, original)
        move = move.to(Phase.REPLICATING, original=original)
        self.set_task(move)
        self.create_record(tp, move.target, original)
        self.set_assignment(tp, Assignment(replicas, adding, removing))
        self.record_original(move)
        state = self.new_epoch(tp, state)  # a new RS: a new leader epoch, written first
        for b in replicas:
            if b in self.brokers:
                self.box.leader_and_isr(b, tp, state, replicas=replicas, adding=adding, removing=removing, is_new=b in adding)
        self.box.update_metadata(tp, state, replicas)
        self.check_complete(move)

    @writing(OVERRIDE)
    def override(self, move: Move, target: tuple[int, ...], usage: _Usage | None = None, *, retry: bool = False) -> None:
        """Step 4b (KIP-455): a new target for a replicating move replaces the old one in place."""
        tp, name = move.tp, f"{move.tp[0]}-{move.tp[1]}"
        state = self.states.get(tp)
        if state is None:  # just failed over: made once its state is read (announce)
            self.set_task(move.with_changes(next_target=target))
            return
        if target == move.original:
            unsafe = self.rollback_unsafe(move, state)
            if unsafe is not None:
                self.log.append(f"{name}: cannot go back to {list(target)} now ({unsafe}); it will once its move ends")
                self.set_task(move.with_changes(next_target=target))
                return
            self.log.append(f"{name}: its new target is its original replicas: cancelling its move to {list(move.target)}")
            self.begin_cancel(move.with_changes(next_target=None), state)
            return
        dropped = dropped_replicas(move.replicas, target, move.original)  # recovery's rule too
        # Kafka deletes them at once. One in the ISR holds an in-sync copy: it stays, at the
        # end of RR, until the new target is in sync (invariant 4); the others hold none.
        kept = tuple(b for b in dropped if b in state.isr)
        gone = tuple(b for b in dropped if b not in state.isr)
        new = move.to(Phase.REPLICATING, target=tuple(target), dropped=kept, next_target=None)
        usage = usage if usage is not None else self.slot_usage()
        full = usage.blocked(move, new, self.config)
        if full:
            # The caps hold for an override's new copies as for a start: it waits for a slot
            # (schedule), or follows the move if that completes first (follow_up).
            if not retry:
                self.log.append(
                    f"{name}: new target {list(target)} waits for a free slot on broker(s) {full} (concurrency caps)"
                )
            self.set_task(move.with_changes(next_target=tuple(target)))
            return
        usage.replace(move, new)
        self.set_task(new)
        self.log.append(
            f"{name}: target {list(move.target)} replaced by {list(target)}"
            + (f"; {list(gone)} deleted now" if gone else "")
            + (f"; {list(kept)} (in sync) go when it completes" if kept else "")
        )
        self.early.append(SetData(paths.reassignment(*tp), encode_record(new.target, new.original)))
        self.set_assignment(tp, Assignment(new.replicas, new.adding, new.removing))
        state = self.new_epoch(tp, state)  # a new RS: a new leader epoch, written first
        for b in new.replicas:
            if b in self.brokers:
                self.box.leader_and_isr(
                    b, tp, state, replicas=new.replicas, adding=new.adding, removing=new.removing,
                    is_new=b not in move.replicas,
                )
        self.delete_dropped(tp, gone, state)
        self.box.update_metadata(tp, state, new.replicas)
        self.check_complete(new)

    def take_waiting_overrides(self) -> None:
        """Overrides that waited for a slot (step 4b's caps), now that one may have freed."""
        usage = None
        for move in list(self.tasks.values()):
            if (
                move.phase is Phase.REPLICATING
                and move.next_target is not None
                and move.next_target != move.original
                and not move.resend
                and move.tp in self.states
            ):
                usage = usage if usage is not None else self.slot_usage()
                self.override(move, move.next_target, usage, retry=True)

    def delete_dropped(self, tp: TopicPartition, replicas, state: LeaderIsr) -> None:
        """StopReplica(delete) to dropped replicas outside the ISR (step 4b). No move waits
        for it; a broker that is down gets it as a stray when it registers (step 9)."""
        for b in replicas:
            if b in self.brokers:
                self.box.stop_replica(b, tp, state.leader_epoch, wait=False)

    def slot_usage(self) -> _Usage:
        usage = _Usage()
        for move in self.tasks.values():
            if move.holds_slot:
                usage.add(*self.slot_brokers(move), 1)
        return usage

    def new_epoch(self, tp: TopicPartition, state: LeaderIsr, leader: int | None = None, isr=None) -> LeaderIsr:
        """Write the state znode with leader epoch + 1 (and the leader and ISR given), as
        Kafka's updateLeaderEpoch does before every LeaderAndIsr with a new replica set or
        leader; conditional on its zkVersion, so it lands only on exactly the state this
        decision was made from (a stale cached state costs a failed write and a reload)."""
        new = LeaderIsr(
            state.leader if leader is None else leader,
            state.leader_epoch + 1,
            self.base.epoch,
            state.isr if isr is None else tuple(isr),
            state.zk_version + 1,
        )
        self.early.append(SetData(paths.partition_state(*tp), encode_state(new), state.zk_version))
        self.states[tp] = new
        return new

    @writing(COMPLETE)
    def check_complete(self, move: Move) -> None:
        """Step 5, if TRS is inside the ISR and a TRS leader can be had."""
        state = self.states.get(move.tp)
        if state is None or not set(move.target).issubset(state.isr):
            return
        live = self.brokers
        if state.leader in move.target and state.leader in live:
            leader = state.leader
        else:
            leader = next((b for b in move.target if b in state.isr and b in live), None)
            if leader is None:
                return  # no live TRS replica to lead: wait for a broker to come back
        isr = tuple(b for b in state.isr if b in move.target)
        # Always a new leader epoch (RS = TRS, and Kafka's completion always bumps it);
        # conditional on the zkVersion: the write only lands if the ISR still held TRS.
        state = self.new_epoch(move.tp, state, leader, isr)
        move = move.to(Phase.STOPPING)
        self.set_task(move)
        self.stop_removed(move, state)

    def stop_removed(self, move: Move, state: LeaderIsr | None) -> None:
        """LeaderAndIsr with RS = TRS to TRS, StopReplica(delete) to RR; finish if nothing to stop."""
        tp = move.tp
        if state is not None:
            for b in move.target:
                if b in self.brokers:
                    self.box.leader_and_isr(b, tp, state, replicas=move.target, adding=(), removing=(), is_new=False)
        if not self.stop_replicas(tp, move.removing, state):
            self.finish_move(move)

    def stop_replicas(self, tp: TopicPartition, replicas, state: LeaderIsr | None) -> bool:
        """StopReplica(delete) to the live brokers of ``replicas``; False if none is live."""
        to_stop = [b for b in replicas if b in self.brokers]
        epoch = state.leader_epoch if state is not None else -1
        for b in to_stop:
            self.box.stop_replica(b, tp, epoch)
        return bool(to_stop)

    @writing(FINISH)
    def finish_move(self, move: Move) -> None:
        """Step 6."""
        tp = move.tp
        self.set_assignment(tp, Assignment(move.target))
        self.delete_record(tp)
        state = self.states.get(tp)
        if state is not None:
            self.box.update_metadata(tp, state, move.target)
        self.completed.append(tp)
        self.set_task(move.to(Phase.DONE))
        self.end_task(tp)
        self.follow_up(move, ended_on=move.target)

    def follow_up(self, move: Move, ended_on: tuple[int, ...]) -> None:
        """After ``move`` ended with the partition on ``ended_on`` (completed, or rolled back):
        a newer target the znode holds for the partition starts from there; otherwise its
        entry is dropped."""
        tp, next_target = move.tp, move.next_target
        if next_target is not None and next_target != ended_on:
            request = self.requests.get(tp)
            if request is not None:
                self.requests[tp] = replace(request, replicas=next_target, original_replicas=ended_on)
                self.requests_dirty = True
                self.set_task(Move(tp, next_target))
                self.pending[tp] = None
                return
        self.drop_request(tp)

    # ---- output --------------------------------------------------------------------------

    def finish(self) -> Step:
        parents_before, parents_after = self.parent_ops()
        middle: list[Op] = []
        labels: dict[str, frozenset[str]] = {  # coalesced znodes: the kinds that touched them
            paths.REASSIGN_PARTITIONS: frozenset(self.requests_kinds),
            paths.CANCEL_REASSIGNMENT: frozenset({ROLLBACK}),
            paths.REASSIGN_QUEUE: frozenset({QUEUE}),
            **{paths.topic(t): frozenset(k) for t, k in self.dirty_topics.items()},
            **{paths.reassignment_topic(t): frozenset(k) for t, k in self.parent_kinds.items()},
        }
        for topic in self.dirty_topics:
            version = self.topic_versions[topic]
            parts = {p: self.assignments[(topic, p)] for p in self.topic_partitions[topic]}
            middle.append(SetData(paths.topic(topic), encode_topic(parts), version))
            self.topic_versions[topic] = version + 1
        tail: list[Op] = []
        if self.requests_dirty:
            entries = list(self.requests.values())
            version = self.requests_version
            path = paths.REASSIGN_PARTITIONS
            if version is None:
                if entries:
                    tail.append(Create(path, encode_requests(entries)))
                    self.requests_version = 0
            elif not entries:
                tail.append(Delete(path, version))
                self.requests_version = None
            else:
                tail.append(SetData(path, encode_requests(entries), version))
                self.requests_version = version + 1
            self.requests_version_changed = True
        if self.with_requests:
            # After the entry drops, in its multi; the parents they empty go after them.
            tail += self.with_requests + parents_after
            parents_after = []
        if self.cancel_znode_version is not None:
            tail.append(Delete(paths.CANCEL_REASSIGNMENT, self.cancel_znode_version))
        if self.queue_version is not None:
            tail.append(Delete(paths.REASSIGN_QUEUE, self.queue_version))
        delta = Delta(
            brokers=self.brokers if self.brokers_changed else None,
            assignments=self.assignments.changes,
            topic_versions=self.topic_versions.changes,
            topic_partitions=self.topic_partitions.changes,
            states=self.states.changes,
            requests=self.requests.changes,
            tasks=self.tasks.changes,
            pending=self.pending.changes,
            record_counts=self.record_counts.changes,
            deleting=self.deleting.changes,
            unhosted=self.unhosted.changes,
        )
        if tuple(self.deferred) != self.base.deferred:
            delta.deferred = tuple(self.deferred)
        if self.requests_version_changed:
            delta.requests_version = self.requests_version
        finished = self.touched and self.requests_version is None and len(self.tasks) == 0
        own = parents_before + self.early + middle + self.late + parents_after + self.notifications
        by_op = {
            id(op): frozenset({kind})
            for part in (self.early, self.late, self.with_requests, self.notifications)
            for op, kind in zip(part, part.kinds)
        }
        return Step(
            delta=delta,
            writes=own + tail,
            # An op neither list nor table labels is "other": a label never fails a step.
            kinds=[by_op.get(id(op)) or labels.get(op.path, frozenset({OTHER})) for op in own + tail],
            shared_from=len(own),
            commands=self.outbox.commands() if self.outbox is not None else [],
            reads=frozenset(
                tp for tp in self.reads if (m := self.tasks.get(tp)) is not None and (m.phase is Phase.LOADING or m.resend)
            ),
            log=self.log,
            finished=finished,
            completed=self.completed,
            cancelled=self.cancelled,
            cancels=self.cancels,
            created=self.created,
            topics_deleted=self.topics_deleted,
            markers_dropped=self.markers_dropped,
            elections=self.elections,
        )


def slot_usage(state: ClusterState) -> tuple[int, dict[int, int], dict[int, int]]:
    """(moves holding a slot, incoming per broker, outgoing per broker) - for tests and metrics."""
    running, incoming, outgoing = 0, {}, {}
    for move in state.tasks.values():
        if not move.holds_slot:
            continue
        running += 1
        adding, removing = (move.adding, move.removing) if move.started else _estimate(state, move)
        for b in adding:
            incoming[b] = incoming.get(b, 0) + 1
        for b in removing:
            outgoing[b] = outgoing.get(b, 0) + 1
    return running, incoming, outgoing


def _estimate(state: ClusterState, move: Move) -> tuple[Iterable[int], Iterable[int]]:
    current = state.assignments[move.tp].replicas
    return [b for b in move.target if b not in current], [b for b in current if b not in move.target]


class _Usage:
    """Concurrency slots in use per broker: incoming (adding a replica) and outgoing (removing
    one), as step 2 counts them; step 4b checks an override's new copies against the caps."""

    def __init__(self):
        self.incoming: dict[int, int] = {}
        self.outgoing: dict[int, int] = {}

    def add(self, adding, removing, n: int) -> None:
        for b in adding:
            self.incoming[b] = self.incoming.get(b, 0) + n
        for b in removing:
            self.outgoing[b] = self.outgoing.get(b, 0) + n

    def blocked(self, old: Move, new: Move, config: ControllerConfig) -> list[int]:
        """Brokers the override ``old`` -> ``new`` adds a copy to (or an original replica
        leaving from) that are at their cap."""
        into = [b for b in new.adding if b not in old.adding]
        out_of = [b for b in new.removing if b not in old.removing and b in (old.original or ())]
        return sorted(
            {b for b in into if self.incoming.get(b, 0) >= config.max_incoming_per_broker}
            | {b for b in out_of if self.outgoing.get(b, 0) >= config.max_outgoing_per_broker}
        )

    def replace(self, old: Move, new: Move) -> None:
        self.add(old.adding, old.removing, -1)
        self.add(new.adding, new.removing, 1)
