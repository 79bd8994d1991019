"""The working set of one engine step: every field a step reads or writes, declared. Pure.

``controller.core.engine.step`` opens one over the state (:meth:`WorkingSet.open`), hands it to
the functions of each concern with the event they handle - controller.core.reassignment (steps
1-6, 4b, failover's Resume), controller.core.cancel and controller.core.queue (KIP-236),
controller.core.broker_failure and controller.core.elections (leaders and ISRs),
controller.core.replica_sync (steps 8-9b), controller.core.topic_creation (step 10),
controller.core.topic_deletion (step 11) - and turns it into a ``Step`` at the end.

The maps are :class:`controller.core.state.Overlay`\\ s over the state (the state itself is never
modified); the op lists are :class:`controller.core.flush.Writes`, which label each op with the
set's current ``kind``. The methods here are the primitives every concern shares, each touching
only the set's own fields: a task set or ended, an entry dropped, a topic znode or a KIP-240
record written, a state znode given a new leader epoch. The class has slots: a function cannot
set a field that is not declared here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from controller.core.commands import Outbox
from controller.core.config import ControllerConfig
from controller.core.flush import Kind, Writes
from controller.core.state import ClusterState, Overlay
from controller.core.task import Move, Phase
from controller.core.throttle_writes import Staged
from controller.core.validation import replicas_problem
from znodes import paths
from znodes.api import Create, Delete, Op, SetData
from znodes.payloads import encode_record, encode_state
from znodes.values import Assignment, Broker, LeaderIsr, Request, TopicPartition


@dataclass(eq=False, slots=True)
class WorkingSet:
    """One step's overlays over the state plus its effects so far."""

    base: ClusterState
    config: ControllerConfig
    # ---- the state, through overlays (their changes become the step's Delta) -----------------
    brokers: dict[int, Broker]
    assignments: Overlay
    topic_versions: Overlay
    topic_partitions: Overlay
    topic_ids: Overlay  # topics whose znode carries a topic_id (Kafka 2.8+)
    states: Overlay
    requests: Overlay
    requests_version: int | None
    tasks: Overlay
    pending: Overlay
    record_counts: Overlay  # records under each /admin/reassignments/T parent; a key: it exists
    deleting: Overlay  # step 11 (controller.core.topic_deletion)
    unhosted: Overlay  # step 9b
    min_isr: Overlay  # step 2a: topics' min.insync.replicas overrides
    unclean: Overlay  # step 12c: topics whose unclean.leader.election.enable is true
    sizes: Overlay  # step 2c: partitions' sizes as the brokers reported them
    offline_replicas: Overlay  # broker -> its replicas on offline log dirs (controller.core.log_dir_failure)
    shutting_down: Overlay  # broker -> its epoch when it asked (controller.core.controlled_shutdown)
    controller_nodes: dict  # the controller instances as UpdateMetadata's nodes (replica_sync.on_controllers)
    producer_id_block: tuple | None  # /latest_producer_id_block as last written (controller.core.producer_ids)
    deferred: list  # cancels, queued batches and elections waiting for a failover's states
    # What the writes are for now (controller.core.flush.writing): ``kind``, a cell the op
    # lists share (a list holding the working set itself would make a reference cycle).
    current: Kind = field(default_factory=Kind)
    brokers_changed: bool = False
    controller_nodes_changed: bool = False
    producer_id_block_changed: bool = False
    requests_version_changed: bool = False
    # ---- what the flush will write -----------------------------------------------------------
    record_parents: dict[str, bool] = field(default_factory=dict)  # topic -> a record was created this step
    dirty_topics: dict[str, set[str]] = field(default_factory=dict)  # topic -> kinds of flush rewriting it
    parent_kinds: dict[str, set[str]] = field(default_factory=dict)  # topic -> kinds creating/deleting records
    requests_kinds: set[str] = field(default_factory=set)  # kinds rewriting /admin/reassign_partitions
    early: Writes = None  # record creates, state writes (Writes need their owner: set in open)
    late: Writes = None  # record deletes
    # Record deletes that must not land before /admin/reassign_partitions drops the entry
    # (a rollback's: without its record, the entry would look like a new request).
    with_requests: Writes = None
    notifications: Writes = None
    cancel_znode_version: int | None = None  # delete the cancel znode (this version)
    preferred_znode_version: int | None = None  # delete /admin/preferred_replica_election (this version)
    queue_version: int | None = None  # delete the queue znode (this version)
    parents_created: set[str] = field(default_factory=set)  # step 10: partition parents this step creates
    # Admin requests' throttle configs and removal znodes (controller.core.admin_requests): first
    # in the flush.
    throttles: Staged = field(default_factory=Staged)
    # Other admin requests' writes, first in the flush after the throttles: topics created,
    # partitions added, deletion markers (controller.core.topic_requests).
    admin_first: Writes = None
    placement: tuple[dict, dict] | None = None  # replicas, leaders per broker (topic_requests)
    # Throttle removal's write (controller.core.throttle_removal): last in the flush, one multi;
    # removal_again: the mode of a next round, when the limit held entities back.
    removal: Writes = None
    removal_again: object = None
    # What a move or an entry involved may be idle now without a move ending (an entry
    # withdrawn or given another target, a failover that may have cut the last removal): the
    # step asks for throttle removal's IDLE check (controller.core.throttle_removal).
    idle_check: bool = False
    # ---- what the shell will send, read and answer -----------------------------------------
    outbox: Outbox | None = None
    reads: set[TopicPartition] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    # Input an operator must fix (a malformed /admin/reassign_partitions): logged at WARNING.
    warnings: list[str] = field(default_factory=list)
    completed: list[TopicPartition] = field(default_factory=list)
    cancelled: list[TopicPartition] = field(default_factory=list)
    cancels: list = field(default_factory=list)  # a controller.core.cancel.CancelOutcome per CancelRequested
    created: list[TopicPartition] = field(default_factory=list)  # partitions given their first state (step 10)
    elections: list = field(default_factory=list)  # step 12: (token, results) per ElectionRequested
    answers: list = field(default_factory=list)  # an admin_requests.Answer per admin request
    topics_deleted: list[str] = field(default_factory=list)
    markers_dropped: list[str] = field(default_factory=list)
    # ---- decisions the step takes after every event is in ---------------------------------
    schedule_needed: bool = False
    touched: bool = False  # a move ended or the znode changed: check for "finished"
    ended: set[TopicPartition] = field(default_factory=set)  # moves ended in this step (records still to delete)
    # Replicating moves given a new target in this step (step 4b, made after every event:
    # a failover's Resume must have created or rewritten the records first).
    overrides: dict[TopicPartition, None] = field(default_factory=dict)
    # Partitions an admin request named in this step (controller.core.admin_requests step 5):
    # no move of theirs starts or changes target before their entries landed (the next step).
    held: set[TopicPartition] = field(default_factory=set)
    hosted_answers: dict[int, frozenset[TopicPartition]] = field(default_factory=dict)  # step 9b: this step's answers
    partial_answers: set[int] = field(default_factory=set)  # of those, the ones with a failed log directory
    startup: list[TopicPartition] = field(default_factory=list)  # step 8b: partitions of a (re)load's chunks
    missing_key: tuple[int, int] | None = None  # states_missing's memo
    missing: bool = False
    # states_missing's answer for the base state alone: its started moves without a state. The
    # base does not change during a step, so it is found once per step.
    base_missing: list[TopicPartition] | None = None

    @classmethod
    def open(cls, state: ClusterState, config: ControllerConfig) -> WorkingSet:
        ws = cls(
            base=state,
            config=config,
            brokers=state.brokers,
            assignments=Overlay(state.assignments),
            topic_versions=Overlay(state.topic_versions),
            topic_partitions=Overlay(state.topic_partitions),
            topic_ids=Overlay(state.topic_ids),
            states=Overlay(state.states),
            requests=Overlay(state.requests),
            requests_version=state.requests_version,
            tasks=Overlay(state.tasks),
            pending=Overlay(state.pending),
            record_counts=Overlay(state.record_counts),
            deleting=Overlay(state.deleting),
            unhosted=Overlay(state.unhosted),
            min_isr=Overlay(state.min_isr),
            unclean=Overlay(state.unclean),
            sizes=Overlay(state.sizes),
            offline_replicas=Overlay(state.offline_replicas),
            shutting_down=Overlay(state.shutting_down),
            controller_nodes=state.controller_nodes,
            producer_id_block=state.producer_id_block,
            deferred=list(state.deferred),
        )
        current = ws.current
        ws.early, ws.late, ws.with_requests = Writes(current), Writes(current), Writes(current)
        ws.notifications, ws.admin_first, ws.removal = Writes(current), Writes(current), Writes(current)
        return ws

    @property
    def kind(self) -> str:
        return self.current.kind

    @kind.setter
    def kind(self, kind: str) -> None:
        self.current.kind = kind

    # ---- primitives ------------------------------------------------------------------------

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
            # Given the offline-replica and shutting-down maps, not this working set (no
            # reference cycle: see Kind).
            self.outbox = Outbox(self.base.controller_id, self.base.epoch, self.brokers,
                                 functools.partial(eligible_replicas, self.offline_replicas, self.shutting_down),
                                 self.topic_ids, nodes=self.controller_nodes)
        return self.outbox

    def set_task(self, move: Move) -> None:
        self.tasks[move.tp] = move

    def retarget_unstarted(self, move: Move, target) -> None:
        """A new target for a move not started yet. One LOADING holds the slots step 2 counted
        for its old target: it goes back to PENDING, so that step 2 counts the new target's
        against the caps (started as it was, it took slots nobody counted)."""
        if move.phase is Phase.LOADING:
            self.set_task(move.to(Phase.PENDING, target=tuple(target)))
            self.pending[move.tp] = None
        else:
            self.set_task(move.with_changes(target=tuple(target)))
        self.schedule_needed = True
        self.idle_check = True  # the old target's brokers may be involved no more (throttle removal)

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

    def record_original(self, move: Move) -> None:
        """``original_replicas`` into the move's entry when its writer left them out (KIP-236)."""
        request = self.requests.get(move.tp)
        if request is not None and request.original_replicas is None:
            self.requests[move.tp] = request.with_replicas(original_replicas=move.original)
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

    def new_epoch(self, tp: TopicPartition, state: LeaderIsr, leader: int | None = None, isr=None) -> LeaderIsr:
        """Write the state znode with leader epoch + 1 (and the leader and ISR given), as
        Kafka's updateLeaderEpoch does before every LeaderAndIsr with a new replica set or
        leader; conditional on its zkVersion, so it lands only on exactly the state this
        decision was made from (a stale cached state costs a failed write, then the step is taken
        again with the state read anew: controller.shell.state_conflicts)."""
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

    def new_isr(self, tp: TopicPartition, state: LeaderIsr, isr) -> LeaderIsr:
        """Write the state znode with the ISR a leader asked for (AlterPartition: the leader and
        its leader epoch stay, as a leader's own ISR write keeps them), conditional on its
        zkVersion like :meth:`new_epoch`."""
        new = LeaderIsr(state.leader, state.leader_epoch, self.base.epoch, tuple(isr), state.zk_version + 1)
        self.early.append(SetData(paths.partition_state(*tp), encode_state(new), state.zk_version))
        self.states[tp] = new
        return new

    def stop_replicas(self, tp: TopicPartition, replicas, state: LeaderIsr | None) -> bool:
        """StopReplica(delete) to the live brokers of ``replicas``; False if none is live."""
        to_stop = [b for b in replicas if b in self.brokers]
        epoch = state.leader_epoch if state is not None else -1
        for b in to_stop:
            self.box.stop_replica(b, tp, epoch)
        return bool(to_stop)

    def follow_up(self, move: Move, ended_on: tuple[int, ...]) -> None:
        """After ``move`` ended with the partition on ``ended_on`` (completed, or rolled back):
        a newer target the znode holds for the partition starts from there; otherwise its
        entry is dropped."""
        tp, next_target = move.tp, move.next_target
        if next_target is not None and next_target != ended_on:
            request = self.requests.get(tp)
            if request is not None:
                self.requests[tp] = request.with_replicas(next_target, ended_on)
                self.requests_dirty = True
                self.set_task(Move(tp, next_target))
                self.pending[tp] = None
                return
        self.drop_request(tp)

    def invalid_reason(self, r: Request) -> str | None:
        """Why an entry of /admin/reassign_partitions or the queue cannot be taken, or None."""
        if r.topic not in self.topic_partitions:
            return f"unknown topic {r.topic!r}"
        if r.topic in self.deleting:
            return f"topic {r.topic!r} is being deleted"
        if (r.topic, r.partition) not in self.assignments:
            return f"unknown partition {r.partition} of topic {r.topic!r}"
        return replicas_problem(r.replicas, self.brokers, self.assignments[(r.topic, r.partition)].original)

    def live_for(self, tp: TopicPartition):
        """The brokers whose replica of ``tp`` is online: registered, and not on a log directory
        its broker reported offline (Kafka's ``isReplicaOnline``). The live broker map itself
        when no broker reported ``tp`` offline (the common case: nothing is built)."""
        return online_replicas(self.offline_replicas, self.brokers, tp)

    def eligible_for(self, tp: TopicPartition):
        """The brokers that may be elected leader of ``tp``: online (:meth:`live_for`) and not
        shutting down (controller.core.controlled_shutdown; Kafka's ``isReplicaOnline``
        without ``includeShuttingDownBrokers``). :meth:`live_for`'s answer itself when no
        broker is shutting down (the common case: nothing is built)."""
        return eligible_replicas(self.offline_replicas, self.shutting_down, self.brokers, tp)

    def states_missing(self) -> bool:
        """A started move whose partition state is not known yet (just failed over). Asked for
        every election, cancel and queue event: after a failover's election every chunk of its
        full UpdateMetadata brings an offline check while up to 10,000 moves run, and a scan of
        them all through the overlays per check was about 2% of a run's CPU. So: the base state's
        answer once per step (a plain scan of its dicts), then per change of the moves or the
        states only the partitions this step changed in either map are looked at again."""
        key = (self.tasks.writes, self.states.writes)
        if key != self.missing_key:
            self.missing_key = key
            tasks, states = self.tasks, self.states
            if self.base_missing is None:
                base_states = self.base.states
                self.base_missing = [tp for tp, move in self.base.tasks.items() if move.started and tp not in base_states]
            moved, stated = tasks.changes, states.changes
            self.missing = any(tp not in moved and tp not in stated for tp in self.base_missing) or any(
                _lacks_state(tasks, states, tp) for changes in (moved, stated) for tp in changes
            )
        return self.missing


def _lacks_state(tasks: Overlay, states: Overlay, tp: TopicPartition) -> bool:
    move = tasks.get(tp)
    return move is not None and move.started and tp not in states


class LiveReplicas:
    """``b in live``: broker ``b`` is registered and its replica of one partition is not on an
    offline log directory (:meth:`WorkingSet.live_for`)."""

    __slots__ = ("brokers", "offline")

    def __init__(self, brokers, offline: frozenset[int]):
        self.brokers = brokers
        self.offline = offline

    def __contains__(self, broker_id: object) -> bool:
        return broker_id in self.brokers and broker_id not in self.offline


def eligible_replicas(offline, shutting_down, brokers, tp: TopicPartition):
    """:meth:`WorkingSet.eligible_for` over the offline-replica map, the shutting-down map and the
    live ``brokers``: what UpdateMetadata calls online too (Kafka's ``isReplicaOnline``, which
    lists a shutting-down broker's replicas among a partition's offline ones)."""
    live = online_replicas(offline, brokers, tp)
    if not shutting_down.base and not shutting_down.changes:
        return live
    return LiveReplicas(live, frozenset(shutting_down.keys()))


def online_replicas(offline, brokers, tp: TopicPartition):
    """:meth:`WorkingSet.live_for` over the offline-replica map ``offline`` and the live
    ``brokers``: ``brokers`` itself when no broker reported a replica offline (nothing built)."""
    if not offline.base and not offline.changes:
        return brokers
    return live_replicas(brokers, offline, tp)


def live_replicas(brokers, offline, tp: TopicPartition):
    """``brokers`` less those whose replica of ``tp`` ``offline`` (broker -> its partitions on
    offline log directories) names; ``brokers`` itself when none does."""
    out = frozenset(b for b, tps in offline.items() if tp in tps)
    return LiveReplicas(brokers, out) if out else brokers
