"""Failover recovery: a newly elected controller rebuilds the running set from ZooKeeper.

Read against KIP-179 "On Controller Failover" and docs/DESIGN.md section 4. The previous
controller may have died anywhere, including between two multi-ops of one batched flush; what
it wrote is the truth and every half-finished move is finished, never restarted or lost.

 1. Read the cluster (:func:`load`): registered brokers, every topic znode,
    ``/admin/reassign_partitions``, every KIP-240 record ``/admin/reassignments/T/P``, and the
    state znode of every partition with a record or an adding/removing list. Watches on
    ``/brokers/ids``, ``/brokers/topics`` and ``/admin/reassign_partitions`` are set by these
    reads, so nothing that changes afterwards is missed.
 2. KIP-179: if ``/admin/reassign_partitions`` is absent (and no record says a move still
    runs), no reassignment is on-going: the engine reports ``Step.finished`` and the shell runs
    throttle removal.
 3. Otherwise rebuild the running set (:func:`rebuild`, pure). Per partition, from its record
    (TRS, ORS) and its topic znode entry (RS, AR, RR):

    record   topic znode               what the dead controller had done     resumed as
    -------  ------------------------  ------------------------------------  ---------------------------
    yes      RS with AR/RR             started (step 3 of controller.core.engine)  REPLICATING
    yes      plain, replicas != TRS    created the record, the topic write    REPLICATING; RS written now
                                       did not land
    yes      plain, replicas == TRS    wrote RS = TRS (step 6), the record    STOPPING: StopReplica to RR
                                       delete did not land                    again, then finish
    no       RS with AR/RR             a move started by another tool, or     REPLICATING (adopted); the
                                       record lost                            record is created
    yes      no such partition         stale                                  record deleted
    garbled  RS with AR/RR             -                                      adopted; record rewritten
    garbled  plain                     nothing runs                           record deleted
    yes      RS = ORS + AR, removing   began a rollback (controller.core.cancel    CANCELLING: leader and ISR
             AR (the rollback)         step 4); StopReplica(AR) may not have  into ORS if not yet,
                                       gone out                               StopReplica to AR, finish
    flagged  plain, replicas == ORS    wrote RS = ORS; the entry drop and     CANCELLING: StopReplica to
                                       record delete did not land             AR again, then finish
    flagged  plain, replicas == TRS    (a flag left on a completed move)      STOPPING: finish completing

    A move whose target was overridden (controller.core.engine step 4b) has a record with the new
    TRS while its topic znode may still show the old one: its RS then holds replicas in
    neither TRS nor ORS, which are the move's ``dropped`` (removed with RR on completion, with
    AR on rollback), whether or not the override's topic write landed.

    "flagged": the record says ``"cancelling": true``. The rollback shape of the topic znode
    (it moves to the record's ORS removing exactly its AR) is a second witness that only a
    rollback writes; a record found without the flag it should have gets it back. ORS keeps
    its order (the first replica is the preferred leader a rollback restores): from the record,
    or the request entry's ``original_replicas`` when the record was not read.
    A request entry whose partition already has its target and no record is one the dead
    controller finished but had not dropped yet: the engine drops it as done (step 1).
 4. Resume (:class:`controller.core.events.Resume`): the new controller epoch re-sends
    LeaderAndIsr for every running move, re-checks completion, re-sends StopReplica for moves
    in STOPPING and CANCELLING, and starts pending entries as the caps allow. A replicating
    move goes out with a new leader epoch, as Kafka's onPartitionReassignment bumps it for every
    move it resumes; so do STOPPING and CANCELLING moves: the dead controller may have died
    before the brokers heard of its RS at the state's epoch, and they would refuse that state
    resent as is - or, for a move that only reorders its replicas (RS = TRS from its first
    topic write, so resumed as STOPPING), hold one epoch with two orders. Dropped replicas that
    left the ISR are deleted then (engine step 4b). The shell then
    reads ``/admin/cancel_reassignment_in_progress`` and ``/admin/reassign_partitions_queue``
    (setting their watches): a cancel or queue the dead controller had not finished taking is
    taken now (both znodes are deleted only in the flush that took them). Then, as Kafka's
    ``onControllerFailover`` does, every partition's state goes to every live broker in
    UpdateMetadata (controller.core.full_metadata), after the resumed work, and as held to
    every live replica of a partition no resumed move owns in LeaderAndIsr (engine step 8b);
    with its last chunk every live broker is asked what it hosts, for its strays and missing
    replicas (engine step 9: not with Resume, whose moves its answers would hold up).

Usage::

    recovered = await recover(store, controller_id=101, epoch=4)
    step = engine.step(recovered.state, recovered.events, config)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from controller.core.events import Event, RequestsRead, Resume
from controller.core.state import ClusterState
from controller.core.task import Move, Phase, dropped_replicas
from controller.shell.zkread import (
    read_records,
    read_requests,
    read_states,
    read_topic_names,
    read_topics,
    topic_ids_to_give,
)
from znodes import paths
from znodes.api import Store
from znodes.payloads import LISTENER
from znodes.reads import read_brokers
from znodes.values import Assignment, Broker, LeaderIsr, TopicPartition


@dataclass
class Snapshot:
    """What a new controller reads before it acts (step 1)."""

    brokers: dict[int, Broker]
    topics: dict[str, tuple[int, dict[int, Assignment]]]
    requests: RequestsRead
    records: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]] | None]
    states: dict[TopicPartition, LeaderIsr | None]
    record_counts: dict[str, int] = field(default_factory=dict)  # records per parent znode
    log: list[str] = field(default_factory=list)
    cancelling: set[TopicPartition] = field(default_factory=set)  # records marked "cancelling"
    queued: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)  # records' next_replicas


@dataclass
class Recovered:
    state: ClusterState
    events: list[Event]
    log: list[str]


async def load(store: Store, *, watch: bool = True, states: bool = False, listener: str = LISTENER) -> Snapshot:
    """Step 1.

    Every KIP-240 record is read (one bulk read): it is the only witness of a move's newest
    target, since a KIP-455 override writes its record before its state and topic znode, so a
    flush cut in between leaves a topic znode that shows the older target. With ``states``,
    the partition states of the moves found (records and adding/removing lists) are read
    right after, in bulk, and Resume announces those moves at once; without (or for a state
    znode that is absent), the resumed moves ask for them (``Step.reads``) and carry on as
    they arrive. Either way the state is read after the topic znode it is judged with (and
    after its record, or while the records are read: they cannot change meanwhile), and every
    write made from it is conditional on its zkVersion.
    """
    log: list[str] = []
    found = await read_brokers(store, watch=watch, listener=listener)
    brokers = found.brokers
    log += found.lines

    async def topics_and_moving_states():
        topics_read, lines = await read_topics(store, await read_topic_names(store, watch=watch), watch=watch)
        topics = {name: read for name, read in topics_read.items() if read is not None}
        moving = [(t, p) for t, read in topics.items() for p, a in read[1].items() if a.adding or a.removing]
        # The moving partitions' states right after their topic znodes, while the records are
        # still being read.
        found, more_lines = await read_states(store, moving) if states and moving else ({}, [])
        return topics, moving, found, lines + more_lines

    async def requests_read():
        if watch:
            await store.exists(paths.REASSIGN_PARTITIONS, watch=True)
        return await read_requests(store)

    # The topic znodes (then the moving partitions' states), the requests and the records are
    # read together: a failover waits for the longest, not the sum. Read one after the other
    # they were never one snapshot either. Only a controller writes the records, and the
    # election fenced the last one, so they cannot change while this one reads: a state read
    # before its record is as good as one read after. What tools write meanwhile (entries,
    # topics) comes with the watches these reads set.
    (topics, moving, read, more), requests, (records, record_counts, cancelling, queued, more_records) = (
        await asyncio.gather(topics_and_moving_states(), requests_read(), read_records(store)))
    log += more + more_records
    # The states of moves only a record shows (its topic znode plain: RS = TRS written).
    rest = sorted(set(records) - set(moving)) if states else []
    if rest:
        found, more = await read_states(store, rest)
        read.update(found)
        log += more
    return Snapshot(brokers, topics, requests, records, read, record_counts, log, cancelling, queued)


def _split(assignment: Assignment) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(TRS, ORS) as a topic znode with adding/removing says them (Kafka 2.4's reading)."""
    target = tuple(b for b in assignment.replicas if b not in assignment.removing)
    original = tuple(b for b in assignment.replicas if b not in assignment.adding)
    return target, original


def _is_rollback(assignment: Assignment, target, original) -> bool:
    """The topic znode moves to ORS removing exactly what the move added (AR and any
    replicas an earlier target added): only a rollback writes this."""
    adding = {b for b in target if b not in original} | set(dropped_replicas(assignment.replicas, target, original))
    return (
        bool(assignment.removing)
        and not assignment.adding
        and set(assignment.removing) == adding
        and _split(assignment)[0] == tuple(original)
    )


def rebuild(snapshot: Snapshot, controller_id: int, epoch: int, topic_ids: dict[str, str] | None = None) -> Recovered:
    """Step 3: the state and the events that resume it (pure). ``topic_ids``: ids drawn for the
    topics read without one (:func:`missing_topic_ids`), given to them by the Resume step."""
    state = ClusterState(controller_id=controller_id, epoch=epoch, brokers=dict(snapshot.brokers))
    state.record_counts = dict(snapshot.record_counts)
    for topic, _ in snapshot.records:
        state.record_counts.setdefault(topic, 1)
    assignments = state.assignments
    moving: list[TopicPartition] = []  # of every partition (100,000 on a large cluster), once
    for name, (version, parts, *topic_id) in sorted(snapshot.topics.items()):  # TopicRead
        state.topic_versions[name] = version
        if topic_id and topic_id[0] is not None:
            state.topic_ids[name] = topic_id[0]
        state.topic_partitions[name] = tuple(parts)
        assignments.update({(name, p): assignment for p, assignment in parts.items()})
        moving += [(name, p) for p, a in parts.items() if a.adding or a.removing]
    log = list(snapshot.log)
    create_records: set[TopicPartition] = set()
    rewrite_records: set[TopicPartition] = set()
    stale_records: set[TopicPartition] = set()
    flag_records: set[TopicPartition] = set()

    for tp, record in sorted(snapshot.records.items()):
        assignment = state.assignments.get(tp)
        if assignment is None:
            stale_records.add(tp)
            continue
        if record is None:
            if assignment.moving:
                target, original = _split(assignment)
                state.tasks[tp] = Move.resumed(tp, target, original, Phase.REPLICATING)
                rewrite_records.add(tp)
                log.append(f"{tp[0]}-{tp[1]}: garbled record; resuming the move its topic znode shows")
            else:
                stale_records.add(tp)
            continue
        target, original = record
        if target != original and (tp in snapshot.cancelling or _is_rollback(assignment, target, original)):
            if not assignment.moving and assignment.replicas == target:
                # A completion landed; a cancel is never marked after one (STOPPING is not
                # cancellable), so the record is the stale one: finish the completion.
                log.append(f"{tp[0]}-{tp[1]}: record marked cancelling but the move completed; finishing it")
                state.tasks[tp] = Move.resumed(tp, target, original, Phase.STOPPING)
            else:
                dropped = dropped_replicas(assignment.replicas, target, original)
                state.tasks[tp] = Move.resumed(tp, target, original, Phase.CANCELLING, dropped)
                if tp not in snapshot.cancelling:
                    flag_records.add(tp)  # the flush stopped between the topic znode and the flag
            continue
        if assignment.moving:
            znode_target, znode_original = _split(assignment)
            if znode_target != target:
                log.append(
                    f"{tp[0]}-{tp[1]}: record says target {list(target)}, topic znode {list(znode_target)}; "
                    "following the record"
                )
            # The topic znode's RS - AR is ORS plus whatever an overridden target added and
            # dropped (some of which the record's newer target may add again), so it can only
            # confirm that it holds the record's ORS; the record gives ORS and its order.
            if not set(original) <= set(znode_original):
                original = znode_original
            dropped = dropped_replicas(assignment.replicas, target, original)
            move = Move.resumed(tp, target, original, Phase.REPLICATING, dropped)
        elif assignment.replicas == target:
            move = Move.resumed(tp, target, original, Phase.STOPPING)
        else:
            move = Move.resumed(tp, target, assignment.replicas, Phase.REPLICATING)
        state.tasks[tp] = move

    for tp in moving:
        if tp not in state.tasks:
            target, original = _split(state.assignments[tp])
            state.tasks[tp] = Move.resumed(tp, target, original, Phase.REPLICATING)
            create_records.add(tp)
            log.append(f"{tp[0]}-{tp[1]}: adopting the move its topic znode shows (no record)")

    # A topic znode's RS (TRS then ORS - TRS) loses the order of ORS, which a rollback must
    # restore (the preferred leader is the first replica): take it from the request entry's
    # original_replicas when they name the same brokers.
    entries = {r.tp: r for r in snapshot.requests.requests or ()}
    for tp, move in list(state.tasks.items()):
        entry = entries.get(tp)
        if entry is not None and entry.original_replicas is not None and move.original != entry.original_replicas:
            if sorted(entry.original_replicas) == sorted(move.original):
                state.tasks[tp] = replace(move, original=tuple(entry.original_replicas))

    # A target queued behind a move (controller.core.queue) that its record keeps: the request
    # entry cannot say it when it equals the target being rolled back.
    for tp, queued in snapshot.queued.items():
        move = state.tasks.get(tp)
        if move is not None and move.phase in (Phase.CANCELLING, Phase.STOPPING):
            state.tasks[tp] = replace(move, next_target=queued)  # follow_up starts it once the move ends

    for tp in state.tasks:
        read = snapshot.states.get(tp)
        if read is not None:
            state.states[tp] = read

    events: list[Event] = [
        snapshot.requests,
        Resume(frozenset(create_records), frozenset(stale_records), frozenset(rewrite_records), frozenset(flag_records),
               dict(topic_ids or {})),
    ]
    return Recovered(state, events, log)


async def recover(store: Store, controller_id: int, epoch: int, *, watch: bool = True, states: bool = False,
                  listener: str = LISTENER) -> Recovered:
    """Steps 1-3; the caller feeds ``events`` to the engine (step 4). ``states``: read the
    resumed moves' partition states with the records (the active controller does), so that
    Resume announces them in its own step instead of a step later. ``listener``: the brokers'
    listener the controller reaches them on (setting ``broker_listener``)."""
    snapshot = await load(store, watch=watch, states=states, listener=listener)
    return rebuild(snapshot, controller_id, epoch, missing_topic_ids(snapshot))


def missing_topic_ids(snapshot: Snapshot) -> dict[str, str]:
    """A new id for each topic read without one (Kafka 2.8+'s controller gives them at its
    election, ``processTopicIds``), so that every topic can be named by id (Metadata v12+,
    DeleteTopics v6)."""
    return topic_ids_to_give(snapshot.topics)


def running_summary(state: ClusterState) -> dict[str, int]:
    """Moves per phase, for the recovery log line."""
    out: dict[str, int] = {}
    for move in state.tasks.values():
        out[move.phase.value] = out.get(move.phase.value, 0) + 1
    return out
