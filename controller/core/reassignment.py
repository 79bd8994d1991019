"""Reassignment (Kafka 2.4's ``onPartitionReassignment``, KIP-455's override): the engine's steps
1-6 and 4b, and failover's Resume, as functions of its working set (controller.core.working_set).
Pure. The numbered steps, their order and the worked tables are in controller.core.engine; the
lifecycle of a move in controller.core.task; KIP-236's cancel and queue in controller.core.cancel
and controller.core.queue.

    on_requests(ws, RequestsRead(...))   # step 1: entries become PENDING moves
    schedule(ws)                         # step 2: they start as slots allow (step 3)
    on_states(ws, StatesRead(...))       # step 4: ISR changes; step 5 once TRS is in sync
    on_stop_replica_sent(ws, ...)        # step 6
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.core import cancel, isr_health, move_order
from controller.core.cancel import rollback_assignment
from controller.core.config import ControllerConfig
from controller.core.events import (
    ReplicaSizes,
    ReplicasHosted,
    RequestsRead,
    Resume,
    ScheduleDue,
    StatesRead,
    StopReplicaSent,
    TopicConfigsRead,
    TopicsRead,
)
from controller.core.flush import ACCEPT, COMPLETE, FINISH, ISR_CHANGE, OVERRIDE, RESUME, START, TOPICS, writing
from controller.core.state import ClusterState
from controller.core.task import Move, Phase, dropped_replicas, reassigning_replicas
from controller.core.working_set import WorkingSet
from znodes import paths
from znodes.api import Delete, SetData
from znodes.payloads import encode_record
from znodes.values import Assignment, LeaderIsr, Request, TopicPartition


def on_topics(ws: WorkingSet, event: TopicsRead) -> None:
    """Topic znodes read: assignments and partitions as written (a read older than what this
    controller wrote is ignored; a partition gone drops its move if not started). A new topic
    read without a topic id gets the one the shell drew (Kafka 2.8+'s ``processTopicIds`` on a
    topic change), and a known one read without its id keeps the one held; either is written
    with its topic znode in this step's flush (version 3, conditional on the version read,
    fenced; flush kind ``topics``, as a topic request's topic znode)."""
    given: list[str] = []
    for name, read in event.topics.items():
        if read is None:
            for p in ws.topic_partitions.get(name, ()):
                partition_gone(ws, (name, p))
            ws.topic_partitions.pop(name)
            ws.topic_versions.pop(name)
            ws.topic_ids.pop(name)
            continue
        version, parts, *rest = read  # (version, partitions[, topic_id]): TopicRead
        topic_id = rest[0] if rest else None
        known = ws.topic_versions.get(name)
        if known is not None and known > version:
            continue  # an older read than what this controller wrote
        if topic_id is None:
            # A known topic a tool rewrote without its id (an older kafka-topics adding
            # partitions) keeps the one held, or the next election would give it a new one that
            # its brokers' partition.metadata contradicts; a new one gets the shell's. Written below.
            topic_id = ws.topic_ids.get(name) if known is not None else event.new_ids.get(name)
            if topic_id is not None:
                given.append(name)
        for p in ws.topic_partitions.get(name, ()):
            if p not in parts:
                partition_gone(ws, (name, p))
        for p, assignment in parts.items():
            ws.assignments[(name, p)] = assignment
        ws.topic_partitions[name] = tuple(parts)
        ws.topic_versions[name] = version
        if topic_id is not None:
            ws.topic_ids[name] = topic_id
        else:
            ws.topic_ids.pop(name)
    for name in given:
        if name not in ws.deleting:
            ws.dirty_topics.setdefault(name, set()).add(TOPICS)
        else:
            ws.topic_ids.pop(name)  # being deleted already: nothing to name by id


def partition_gone(ws: WorkingSet, tp: TopicPartition) -> None:
    """A partition deleted under a move: a move not started yet is dropped."""
    ws.assignments.pop(tp)
    ws.sizes.pop(tp)  # step 2c: a partition made again under the name starts unknown
    move = ws.tasks.get(tp)
    if move is None or not move.started:
        ws.states.pop(tp)
    if move is not None and not move.started:
        ws.log.append(f"dropping reassignment of {tp[0]}-{tp[1]}: the partition was deleted")
        ws.set_task(move.to(Phase.DROPPED))
        ws.end_task(tp)
        ws.drop_request(tp)


@writing(ACCEPT)
def on_requests(ws: WorkingSet, event: RequestsRead) -> None:
    """Step 1: ``/admin/reassign_partitions`` read; its entries become, change or withdraw moves."""
    if event.error is not None:
        ws.warnings.append(f"ignoring /admin/reassign_partitions: {event.error}")
        # Its entries are ignored, but the znode exists: a v0 request is refused while it does
        # (REASSIGNMENT_IN_PROGRESS), and a write of it is conditional on this version, not a
        # create that fails and leaves the request's entries in memory only (they then started).
        if event.version != ws.requests_version:
            ws.requests_version = event.version
            ws.requests_version_changed = True
        return
    ws.requests_version = event.version
    ws.requests_version_changed = True
    ws.touched = True
    for reason in event.rejected:
        ws.warnings.append(reason)
        ws.requests_dirty = True
    entries = event.requests or ()
    # Entries this step already dropped with their move (a rollback or completion finished, a
    # cancel withdrew it) from a read of the znode as the step found it: that read is older
    # than the drop, and taking such an entry again would restart a cancelled move.
    stale = (
        {tp for tp in ws.ended if tp in ws.base.requests and tp not in ws.requests}
        if event.version is not None and event.version == ws.base.requests_version
        else set()
    )
    seen: dict[TopicPartition, Request] = {}
    for r in entries:
        tp = r.tp
        if tp in seen:
            ws.log.append(f"dropping duplicate entry for {r.topic}-{r.partition} in /admin/reassign_partitions")
            ws.requests_dirty = True
            continue
        move = ws.tasks.get(tp)
        reason = ws.invalid_reason(r)
        if reason is not None and not (move is not None and move.started and r.replicas == move.target):
            ws.log.append(f"dropping reassignment of {r.topic}-{r.partition} to {list(r.replicas)}: {reason}")
            ws.requests_dirty = True
            continue
        seen[tp] = r
    # Entries gone from the znode: a move not started yet is withdrawn; a started one runs on.
    # An entry gone or changed may leave what it involved idle: throttle removal checks.
    for tp, before in list(ws.requests.items()):
        if tp not in seen:
            ws.requests.pop(tp)
            ws.idle_check = True
        elif seen[tp] != before:
            ws.idle_check = True
    for tp, move in list(ws.tasks.items()):
        if tp in seen:
            continue
        if not move.started:
            ws.log.append(f"reassignment of {tp[0]}-{tp[1]} withdrawn from /admin/reassign_partitions before it started")
            ws.set_task(move.to(Phase.DROPPED))
            ws.end_task(tp)
        elif move.next_target is not None:
            ws.set_task(move.with_changes(next_target=None))
    for tp, r in seen.items():
        if tp in stale and r == ws.base.requests[tp]:
            ws.requests_dirty = True  # dropped in this step: the write leaves it out
            continue
        ws.requests[tp] = r
        move = ws.tasks.get(tp)
        if move is None:
            if ws.assignments[tp] == Assignment(r.replicas):
                ws.log.append(f"reassignment of {r.topic}-{r.partition} to {list(r.replicas)}: already assigned")
                ws.drop_request(tp)
                continue
            ws.set_task(Move(tp, r.replicas))
            ws.pending[tp] = None
            ws.schedule_needed = True
            if r.movement_strategies and (unknown := move_order.unknown(r.movement_strategies)):
                # Skipped (step 2c: advice, never a refusal), but said once: it may be a typo.
                ws.warnings.append(f"{r.topic}-{r.partition}: skipping movement strategies this controller does not "
                                   f"know: {', '.join(map(repr, unknown))} (known: {', '.join(move_order.STRATEGIES)})")
        elif not move.started:
            if move.target != r.replicas:
                ws.retarget_unstarted(move, r.replicas)
            if move.waiting is not None:
                ws.schedule_needed = True  # step 2a again: the entry may now say skip_isr_check
        elif r.replicas == move.target and not (move.phase is Phase.CANCELLING and move.next_target is not None):
            if r.original_replicas is None:
                ws.record_original(move)  # a rewrite of the znode lost what was recorded
            # A rollback keeps its entry until it ends, and a target queued behind it equal
            # to the cancelled one (controller.core.queue) reads the same: neither drops it.
            if move.next_target is not None and move.phase is not Phase.CANCELLING:
                ws.set_task(move.with_changes(next_target=None))
        elif move.phase is Phase.REPLICATING:
            if move.next_target != r.replicas:
                ws.set_task(move.with_changes(next_target=r.replicas))
            ws.overrides[tp] = None  # step 4b, once every event of the step is in
        elif move.next_target != r.replicas:
            what = "being rolled back" if move.phase is Phase.CANCELLING else "completing"
            ws.log.append(
                f"{r.topic}-{r.partition} is {what}; its new target {list(r.replicas)} is queued behind that"
            )
            move = move.with_changes(next_target=r.replicas)
            ws.set_task(move)
            # Kept in the record too (as controller.core.queue does): an entry asking for the
            # target being rolled back reads like a cancel's own, and a failover would lose it.
            ws.late.append(SetData(paths.reassignment(*tp), encode_record(
                move.target, move.original, cancelling=move.phase is Phase.CANCELLING, next_target=move.next_target)))


def isr_floor_crossed(ws: WorkingSet, tp: TopicPartition, before: LeaderIsr | None, after: LeaderIsr) -> bool:
    """The partition went under its min ISR or came back (step 2b's caps change)."""
    floor = isr_health.min_isr_of(tp[0], ws.min_isr, ws.config.min_insync_replicas)
    was = before is not None and len(before.isr) < floor
    return was != (len(after.isr) < floor)


def note_isr_change(ws: WorkingSet, tp: TopicPartition, before: LeaderIsr | None, after: LeaderIsr) -> None:
    """Steps 2a/2b after a partition's ISR changed: a move waiting for it may start, the caps
    change when the partition crossed its min ISR."""
    if tp in ws.pending or (len(ws.pending) and isr_floor_crossed(ws, tp, before, after)):
        ws.schedule_needed = True


@writing(ISR_CHANGE)
def on_states(ws: WorkingSet, event: StatesRead) -> None:
    """Step 4: partition states read (ISR changes, a LOADING move's state): start, resume or complete."""
    for tp, reason in event.unreadable:
        move = ws.tasks.get(tp)
        if move is not None and move.phase is Phase.LOADING:
            # Nothing can start it (no leader, ISR or epoch to go on) and no watch would see a
            # repaired znode: kept, it would hold its slots for ever. A started move waits.
            ws.warnings.append(f"dropping reassignment of {tp[0]}-{tp[1]}: its partition state is unreadable: {reason}")
            ws.set_task(move.to(Phase.DROPPED))
            ws.end_task(tp)
            ws.drop_request(tp)
        else:
            ws.warnings.append(f"unreadable partition state {paths.partition_state(*tp)}: {reason}")
    for tp, state in event.states.items():
        move = ws.tasks.get(tp)
        if state is None:
            if move is not None and move.phase is Phase.LOADING:
                ws.log.append(f"dropping reassignment of {tp[0]}-{tp[1]}: the partition has no state znode")
                ws.set_task(move.to(Phase.DROPPED))
                ws.end_task(tp)
                ws.drop_request(tp)
            elif move is not None and move.resend and move.phase is Phase.STOPPING:
                stop_removed(ws, move.with_changes(resend=False), None)  # only cleanup was left
            elif move is not None and move.resend and move.phase is Phase.CANCELLING:
                cancel.stop_added(ws, move.with_changes(resend=False), None)
            elif move is not None and move.resend:
                ws.log.append(f"{tp[0]}-{tp[1]} is being moved but has no state znode: waiting for one")
            continue
        known = ws.states.get(tp)
        if known is not None and known.zk_version > state.zk_version and not event.fresh:
            # This controller wrote a newer one since the read; a fresh read (after a write
            # of it met another version) is what the znode holds, whatever was held.
            state = known
        assignment = ws.assignments.get(tp)
        if assignment is not None and event.notifications and (move is None or move.phase is not Phase.LOADING):
            ws.box.update_metadata(tp, state, assignment.replicas)
        if (assignment is not None or move is not None) and state is not known:
            ws.states[tp] = state
            note_isr_change(ws, tp, known, state)
        if move is None:
            continue
        if move.phase is Phase.LOADING:
            reason = isr_wait(ws, move)  # step 2a on the state just read
            if reason is not None:
                ws.log.append(f"reassignment of {tp[0]}-{tp[1]} waits: {reason}")
                ws.set_task(move.to(Phase.PENDING, waiting=reason))
                ws.pending[tp] = None
                ws.schedule_needed = True
            else:
                start(ws, move, state)
        elif move.resend:
            announce(ws, move, state)
        elif move.phase is Phase.REPLICATING:
            check_complete(ws, move)
    for path in event.notifications:
        ws.notifications.append(Delete(path))


def on_stop_replica_sent(ws: WorkingSet, event: StopReplicaSent) -> None:
    """Step 6 (and cancel step 7) once a move's StopReplica requests were sent."""
    for tp in event.partitions:
        move = ws.tasks.get(tp)
        if move is not None and move.phase is Phase.STOPPING:
            finish_move(ws, move)
        elif move is not None and move.phase is Phase.CANCELLING:
            cancel.finish_cancel(ws, move)


def give_topic_ids(ws: WorkingSet, ids: dict[str, str]) -> None:
    """Kafka 2.8+'s ``processTopicIds`` at an election: a topic read without an id gets the one
    the shell drew, written with its topic znode in this step (version 3, conditional on the
    version read, fenced; a topic being deleted gets none). Every later rewrite keeps it."""
    given = 0
    for name, topic_id in sorted(ids.items()):
        if name in ws.topic_versions and name not in ws.deleting and ws.topic_ids.get(name) is None:
            ws.topic_ids[name] = topic_id
            ws.dirty_topics.setdefault(name, set()).add(ws.kind)
            given += 1
    if given:
        ws.log.append(f"gave {given} topic(s) without one a topic id (Kafka 2.8+'s topic znode version 3)")


@writing(RESUME)
def on_resume(ws: WorkingSet, event: Resume) -> None:
    """Carry on with the moves recovery rebuilt (new controller epoch: re-send everything)."""
    # The previous controller may have died between a move's end and its throttle removal.
    # (Every live broker is asked what it hosts, step 9, with the last chunk of the full send
    # that follows: controller.core.replica_sync.on_metadata.)
    ws.idle_check = True
    give_topic_ids(ws, event.topic_ids)
    for tp in sorted(event.stale_records):
        # Before any create: a new move of the same partition may start in this flush.
        ws.log.append(f"deleting stale reassignment record of {tp[0]}-{tp[1]}: no move of it is running")
        ws.delete_record(tp, early=True)
    for topic, count in list(ws.record_counts.items()):
        if count == 0:  # a parent whose last record went in a flush cut short
            ws.record_parents.setdefault(topic, False)
            ws.parent_kinds.setdefault(topic, set()).add(ws.kind)
    for move in list(ws.tasks.values()):
        if not move.started:
            continue
        tp = move.tp
        if tp in event.create_records:
            ws.create_record(tp, move.target, move.original)
        elif tp in event.rewrite_records or tp in event.flag_records:
            ws.early.append(
                SetData(paths.reassignment(*tp), encode_record(
                    move.target, move.original, cancelling=move.cancelling, next_target=move.next_target))
            )
        if move.phase is Phase.CANCELLING:
            current = ws.assignments[tp]
            if current.moving and current != rollback_assignment(move):
                # The cancel was marked but its topic znode write did not land.
                ws.set_assignment(tp, rollback_assignment(move))
        if move.phase is Phase.REPLICATING:
            # Recorded but the topic znode not yet written: write RS now. Whether or not
            # it was written, the brokers may never have heard of this RS at the state's
            # leader epoch (the previous controller can have died between its topic write
            # and its state write or its LeaderAndIsr), and a broker holding that epoch
            # refuses it resent as is: so it goes out with a new leader epoch, as Kafka's
            # onPartitionReassignment bumps it for every move it resumes.
            assignment = Assignment(move.replicas, move.adding, move.removing)
            move = move.with_changes(new_epoch=True)
            ws.set_task(move)
            ws.set_assignment(tp, assignment)
            ws.record_original(move)
        state = ws.states.get(tp)
        if state is None:
            ws.set_task(move.with_changes(resend=True))
            ws.reads.add(tp)
        else:
            announce(ws, move, state)


def announce(ws: WorkingSet, move: Move, state: LeaderIsr) -> None:
    """Tell the brokers about a move again (new controller epoch) and carry on with it: the
    state as it is, which brokers holding its leader epoch refuse harmlessly and replicas
    without local state take; a new leader epoch when the RS is new (``new_epoch``) or
    dropped replicas left the ISR (deleted now, as step 4b does)."""
    if move.resend:
        move = move.with_changes(resend=False)
        ws.set_task(move)
    if move.phase is Phase.REPLICATING:
        # A dropped replica a target that came meanwhile keeps again is not deleted: the
        # override below takes it back (deleting it first would race its LeaderAndIsr).
        keep = move.next_target or ()
        gone = tuple(b for b in move.dropped if b not in state.isr and b not in keep)
        if move.new_epoch or gone:
            move = move.shed(gone).with_changes(new_epoch=False)
            ws.set_task(move)
            ws.set_assignment(move.tp, Assignment(move.replicas, move.adding, move.removing))
            state = ws.new_epoch(move.tp, state)
            delete_dropped(ws, move.tp, gone, state)
            if gone:
                ws.idle_check = True  # a shed replica's broker may be involved no more (throttle removal)
        # RS, AR and RR once (each a property computed anew): a failover announces thousands.
        replicas, adding, removing = move.replicas, move.adding, move.removing
        for b in replicas:
            if b in ws.brokers:
                ws.box.leader_and_isr(
                    b, move.tp, state, replicas=replicas, adding=adding, removing=removing, is_new=b in adding,
                )
        if move.next_target is not None and move.next_target != move.original:
            # A new target (the entry read with the Resume, or one that came while the state
            # was read): a move whose target is in sync finishes first, as under the controller
            # that died (section 4.1) - only its finish was left, cut short, maybe beside a
            # move started in the slot that finish freed, and taken in place the new target
            # would copy again past the cluster cap (seed 1600000019 shard 3, tight caps).
            # It follows the move then (follow_up), a pending move held to the caps.
            check_complete(ws, move)
            move = ws.tasks.get(move.tp)
            if move is not None and move.phase is Phase.REPLICATING and move.next_target is not None:
                override(ws, move, move.next_target)
        elif move.next_target is not None:
            override(ws, move, move.next_target)  # back to ORS: a rollback, which copies nothing
        else:
            check_complete(ws, move)
    elif move.phase is Phase.CANCELLING:  # leader and ISR into ORS if not yet; delete AR again
        cancel.roll_back(ws, move, state)
    else:  # STOPPING: RS = TRS already written; delete RR again and finish
        # With a new leader epoch, as Kafka's completion of a resumed move always has: a
        # move that only reorders its replicas is "RS = TRS" from its first topic write, so
        # the dead controller may have died before the brokers (or its state znode) heard
        # of that order, and the same epoch with another order would be refused or, worse,
        # taken by some replicas and not others.
        stop_removed(ws, move, ws.new_epoch(move.tp, state))


def schedule(ws: WorkingSet) -> None:
    """Step 2: start pending moves while they fit the caps (no batch barrier); overrides
    waiting for a slot (step 4b) go first, their moves being under way."""
    if not ws.schedule_needed:
        return
    take_waiting_overrides(ws)
    if len(ws.pending) == 0:
        return
    cfg = ws.config
    running = 0
    incoming: dict[int, int] = {}
    outgoing: dict[int, int] = {}
    for move in ws.tasks.values():
        if not move.holds_slot:
            continue
        running += 1
        adding, removing = slot_brokers(ws.assignments, move)
        for b in adding:
            incoming[b] = incoming.get(b, 0) + 1
        for b in removing:
            outgoing[b] = outgoing.get(b, 0) + 1
    if running >= cfg.max_cluster_moves:
        return
    max_in, max_out = cfg.max_incoming_per_broker, cfg.max_outgoing_per_broker
    throttled = None  # step 2b's cap, when it is below the caps
    under = None  # partitions under their min ISR: counted (a scan of every state) only if the cap would bind
    if cfg.isr_aware_moves and min(max_in, max_out) > cfg.isr_throttled_concurrency:
        throttled = cfg.isr_throttled_concurrency
    order = start_order(ws, ws.pending.keys(), move_order.setting(cfg.replica_movement_strategies))  # step 2c
    for tp in list(order):
        if tp in ws.held:
            continue  # an admin request's new move: after its entry landed
        move = ws.tasks[tp]
        reason = isr_wait(ws, move)  # step 2a
        if reason != move.waiting:
            if reason is not None:
                ws.log.append(f"reassignment of {tp[0]}-{tp[1]} waits: {reason}")
            move = move.with_changes(waiting=reason)
            ws.set_task(move)
        if reason is not None:
            continue
        adding, removing = slot_brokers(ws.assignments, move)
        # The busiest broker each way against the caps (loops, not any() over generators: this
        # runs for every pending move of every scheduling step).
        most_in = max([incoming.get(b, 0) for b in adding], default=-1)  # -1: none, under any cap
        most_out = max([outgoing.get(b, 0) for b in removing], default=-1)
        if most_in >= max_in or most_out >= max_out:
            continue
        if throttled is not None and (most_in >= throttled or most_out >= throttled):
            if under is None:
                under = isr_health.under_min_isr(ws.states, ws.min_isr, cfg.min_insync_replicas)
            if under:
                continue  # step 2b: the caps are isr_throttled_concurrency while any is under
        for b in adding:
            incoming[b] = incoming.get(b, 0) + 1
        for b in removing:
            outgoing[b] = outgoing.get(b, 0) + 1
        ws.pending.pop(tp)
        move = move.to(Phase.LOADING)
        ws.set_task(move)
        state = ws.states.get(tp)
        if state is None or tp in ws.ended:
            # Unknown, or a move of it ended in this step: its record's delete lands late
            # in this flush, after which the read lets the new move create its own.
            ws.reads.add(tp)
        else:
            start(ws, move, state)  # known from the election's read or kept fresh since
            if tp not in ws.tasks:
                # Ended at its start (a reorder's RS = TRS, or already assigned): it holds no
                # slot, and no later event would give the slot it took back to the next move.
                for b in adding:
                    incoming[b] -= 1
                for b in removing:
                    outgoing[b] -= 1
                continue
        running += 1
        if running >= cfg.max_cluster_moves:
            break


def start_order(ws: WorkingSet, pending: Iterable[TopicPartition], setting: tuple[str, ...]) -> Iterable[TopicPartition]:
    """Step 2c (controller.core.move_order): ``pending`` in start order, not sorted when every
    pending move's list is the order given (one pass over the pending entries, as step 2's)."""
    requests = ws.requests
    pending = list(pending)
    if not move_order.reorders(setting):
        for tp in pending:
            r = requests.get(tp)
            if r is not None and r.movement_strategies and move_order.reorders(move_order.known(r.movement_strategies)):
                break
        else:
            return pending

    def strategies_of(tp: TopicPartition) -> tuple[str, ...]:
        request = requests.get(tp)
        own = move_order.known(request.movement_strategies) if request is not None else ()
        return own or setting

    def facts_of(tp: TopicPartition) -> move_order.Facts:
        # Called once per pending move of a reordered run in every scheduling step: the
        # replicas added counted as step 2's slot estimate does, without building its tuples.
        state = ws.states.get(tp)
        current = ws.assignments[tp].replicas
        adding = sum(1 for b in ws.tasks[tp].target if b not in current)
        return move_order.facts(ws.sizes.get(tp), adding, None if state is None else len(state.isr), len(current))

    return move_order.ordered(pending, strategies_of, facts_of)


def on_sizes(ws: WorkingSet, event: ReplicasHosted | ReplicaSizes) -> None:
    """Step 2c's sizes from a broker's DescribeLogDirs answer: those of the partitions assigned
    to it (a stray's size says nothing of its partition)."""
    b = event.broker_id
    # Locals bound once: an election brings one answer per broker, each naming every replica.
    assignments, states, sizes, size_after = ws.assignments.get, ws.states.get, ws.sizes, move_order.size_after
    known = sizes.get
    for tp, reported in event.sizes.items():
        assignment = assignments(tp)
        if assignment is None or b not in assignment.replicas:
            continue
        state = states(tp)
        old = known(tp)
        new = size_after(old, reported, state is None or b in state.isr)
        if new != old:
            sizes[tp] = new


def isr_wait(ws: WorkingSet, move: Move) -> str | None:
    """Step 2a (controller.core.isr_health) for a move about to start: why it waits, or None."""
    cfg = ws.config
    if not cfg.isr_aware_moves:
        return None
    request = ws.requests.get(move.tp)
    if request is not None and request.skip_isr_check:
        return None
    assignment = ws.assignments.get(move.tp)
    if assignment is None:
        return None
    floor = isr_health.min_isr_of(move.tp[0], ws.min_isr, cfg.min_insync_replicas)
    return isr_health.waiting_reason(
        assignment.replicas, ws.states.get(move.tp), ws.brokers, floor, wait_offline=cfg.isr_wait_offline_replicas
    )


def on_topic_configs(ws: WorkingSet, event: TopicConfigsRead) -> None:
    """Topics' min.insync.replicas overrides (step 2a's floor) and unclean settings (step 12c)
    read with the entries naming them or their moves."""
    for topic, value in event.min_isr.items():
        if value is None:
            ws.min_isr.pop(topic)
        elif ws.min_isr.get(topic) != value:
            ws.min_isr[topic] = value
    for topic, enabled in event.unclean.items():
        if not enabled:
            ws.unclean.pop(topic)  # held only where true: the view stays as small as its use
        elif topic not in ws.unclean:
            ws.unclean[topic] = True
    if len(ws.pending):
        ws.schedule_needed = True


def slot_brokers(assignments: Mapping[TopicPartition, Assignment], move: Move) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The brokers ``move`` takes an incoming and an outgoing slot on (step 2): once started,
    AR and RR; before (LOADING, its state being read), the brokers its target adds to and
    drops from the partition's assignment, as step 2 counted them when it gave the slots."""
    if move.started:
        return move.adding, move.removing
    current = assignments[move.tp].replicas
    return (
        tuple(b for b in move.target if b not in current),
        tuple(b for b in current if b not in move.target),
    )


@writing(START)
def start(ws: WorkingSet, move: Move, state: LeaderIsr) -> None:
    """Step 3."""
    tp = move.tp
    assignment = ws.assignments[tp]
    original = tuple(b for b in assignment.replicas if b not in assignment.adding)
    if move.target == original:
        ws.log.append(f"reassignment of {tp[0]}-{tp[1]} to {list(move.target)}: already assigned")
        ws.set_task(move.to(Phase.DONE))
        ws.end_task(tp)
        ws.drop_request(tp)
        return
    replicas, adding, removing = reassigning_replicas(move.target, original)
    move = move.to(Phase.REPLICATING, original=original)
    ws.set_task(move)
    ws.create_record(tp, move.target, original)
    ws.set_assignment(tp, Assignment(replicas, adding, removing))
    ws.record_original(move)
    state = ws.new_epoch(tp, state)  # a new RS: a new leader epoch, written first
    box = ws.box
    box.leader_and_isr_replicas(tp, state, replicas=replicas, adding=adding, removing=removing, new=adding)
    box.update_metadata(tp, state, replicas)
    check_complete(ws, move)


@writing(OVERRIDE)
def override(ws: WorkingSet, move: Move, target: tuple[int, ...], usage: _Usage | None = None, *, retry: bool = False) -> None:
    """Step 4b (KIP-455): a new target for a replicating move replaces the old one in place."""
    tp, name = move.tp, f"{move.tp[0]}-{move.tp[1]}"
    state = ws.states.get(tp)
    if state is None:  # just failed over: made once its state is read (announce)
        ws.set_task(move.with_changes(next_target=target))
        return
    if target == move.original:
        unsafe = cancel.rollback_unsafe(ws, move, state)
        if unsafe is not None:
            ws.log.append(f"{name}: cannot go back to {list(target)} now ({unsafe}); it will once its move ends")
            ws.set_task(move.with_changes(next_target=target))
            return
        ws.log.append(f"{name}: its new target is its original replicas: cancelling its move to {list(move.target)}")
        # The rollback keeps ORS as the target its entry asks for (``next_target``), and the
        # record says so first, before the topic znode's rollback: a later entry asking for
        # TRS again is then a new target queued behind the rollback, not the rollback's own
        # entry (a cancel's, which asks for TRS), also after a failover anywhere in this flush.
        move = move.with_changes(next_target=tuple(target))
        ws.early.append(SetData(paths.reassignment(*tp), encode_record(move.target, move.original, next_target=target)))
        cancel.begin_cancel(ws, move, state)
        return
    dropped = dropped_replicas(move.replicas, target, move.original)  # recovery's rule too
    # Kafka deletes them at once. One in the ISR holds an in-sync copy: it stays, at the
    # end of RR, until the new target is in sync (invariant 4); the others hold none.
    kept = tuple(b for b in dropped if b in state.isr)
    gone = tuple(b for b in dropped if b not in state.isr)
    new = move.to(Phase.REPLICATING, target=tuple(target), dropped=kept, next_target=None)
    usage = usage if usage is not None else slots_in_use(ws)
    full = usage.blocked(move, new, ws.config)
    if full or usage.past_cluster_cap(move, new, state.isr, ws.config):
        # The caps hold for an override's new copies as for a start: it waits for a slot
        # (schedule), or follows the move if that completes first (follow_up).
        if not retry:
            where = f"on broker(s) {full}" if full else "in the cluster (moves resumed past its cap)"
            ws.log.append(f"{name}: new target {list(target)} waits for a free slot {where} (concurrency caps)")
        ws.set_task(move.with_changes(next_target=tuple(target)))
        return
    usage.replace(move, new)
    ws.set_task(new)
    ws.idle_check = True  # the old target's brokers may be involved no more (throttle removal)
    ws.log.append(
        f"{name}: target {list(move.target)} replaced by {list(target)}"
        + (f"; {list(gone)} deleted now" if gone else "")
        + (f"; {list(kept)} (in sync) go when it completes" if kept else "")
    )
    ws.early.append(SetData(paths.reassignment(*tp), encode_record(new.target, new.original)))
    ws.set_assignment(tp, Assignment(new.replicas, new.adding, new.removing))
    state = ws.new_epoch(tp, state)  # a new RS: a new leader epoch, written first
    replicas = new.replicas
    ws.box.leader_and_isr_replicas(tp, state, replicas=replicas, adding=new.adding, removing=new.removing,
                                   new=tuple(b for b in replicas if b not in move.replicas))
    delete_dropped(ws, tp, gone, state)
    ws.box.update_metadata(tp, state, new.replicas)
    check_complete(ws, new)


def on_held_landed(ws: WorkingSet, event: ScheduleDue) -> None:
    """An admin request's entries landed (controller.core.admin_requests step 5): its new moves
    may start (step 2) and its new targets for replicating moves are taken in place (step 4b,
    a target equal to the original replicas as a cancel) in this step."""
    ws.schedule_needed = True
    for tp in event.partitions:
        move = ws.tasks.get(tp)
        if move is not None and move.phase is Phase.REPLICATING and move.next_target is not None:
            ws.overrides[tp] = None


def take_overrides(ws: WorkingSet) -> None:
    """Step 4b for the moves given a new target in this step, once every event is in."""
    usage = None  # slots in use, counted once for all of them
    for tp in ws.overrides:
        move = ws.tasks.get(tp)
        if tp in ws.held:
            continue  # an admin request's: after its entry landed (take_waiting_overrides)
        if move is not None and move.phase is Phase.REPLICATING and move.next_target is not None and not move.resend:
            usage = usage if usage is not None else slots_in_use(ws)
            override(ws, move, move.next_target, usage)


def take_waiting_overrides(ws: WorkingSet) -> None:
    """Overrides that waited for a slot (step 4b's caps), now that one may have freed."""
    usage = None
    for move in list(ws.tasks.values()):
        if (
            move.phase is Phase.REPLICATING
            and move.next_target is not None
            and move.next_target != move.original
            and not move.resend
            and move.tp in ws.states
            and move.tp not in ws.held
        ):
            usage = usage if usage is not None else slots_in_use(ws)
            override(ws, move, move.next_target, usage, retry=True)


def delete_dropped(ws: WorkingSet, tp: TopicPartition, replicas, state: LeaderIsr) -> None:
    """StopReplica(delete) to dropped replicas outside the ISR (step 4b). No move waits
    for it; a broker that is down gets it as a stray when it registers (step 9)."""
    for b in replicas:
        if b in ws.brokers:
            ws.box.stop_replica(b, tp, state.leader_epoch, wait=False)


def slots_in_use(ws: WorkingSet) -> _Usage:
    """Slots the moves holding one use now, per broker (step 4b's caps)."""
    usage = _Usage()
    for move in ws.tasks.values():
        if move.holds_slot:
            usage.add(*slot_brokers(ws.assignments, move), 1)
            usage.moves += 1
    return usage


def check_complete(ws: WorkingSet, move: Move) -> None:
    """Step 5, if TRS is inside the ISR and a TRS leader can be had. Asked at every start and
    ISR change of a move: it decides unwrapped, and only a completion pays for writing()."""
    state = ws.states.get(move.tp)
    if state is None or not set(move.target).issubset(state.isr):
        return
    live = ws.live_for(move.tp)
    if live is not ws.brokers and any(b in ws.brokers and b not in live for b in move.target):
        # A TRS replica on an offline log directory serves nobody: not done until it is back,
        # and RR's in-sync copies stay (controller.core.log_dir_failure step 5).
        return
    # Not onto a broker shutting down while another TRS replica can lead (controller.core.
    # controlled_shutdown step 2); one that already leads keeps it rather than the move wait.
    eligible = ws.eligible_for(move.tp)
    if state.leader in move.target and state.leader in eligible:
        leader = state.leader
    else:
        leader = next((b for b in move.target if b in state.isr and b in eligible), None)
        if leader is None:
            if state.leader not in move.target or state.leader not in live:
                return  # no live TRS replica to lead: wait for a broker to come back
            leader = state.leader
    complete(ws, move, state, leader, tuple(b for b in state.isr if b in move.target))


@writing(COMPLETE)
def complete(ws: WorkingSet, move: Move, state: LeaderIsr, leader: int, isr: tuple[int, ...]) -> None:
    """Step 5's writes: the state znode with TRS as ISR, then RS = TRS to the brokers."""
    # Always a new leader epoch (RS = TRS, and Kafka's completion always bumps it);
    # conditional on the zkVersion: the write only lands if the ISR still held TRS.
    state = ws.new_epoch(move.tp, state, leader, isr)
    move = move.to(Phase.STOPPING)
    ws.set_task(move)
    stop_removed(ws, move, state)


def stop_removed(ws: WorkingSet, move: Move, state: LeaderIsr | None) -> None:
    """LeaderAndIsr with RS = TRS to TRS, StopReplica(delete) to RR; finish if nothing to stop."""
    tp = move.tp
    if state is not None:
        ws.box.leader_and_isr_replicas(tp, state, replicas=move.target, adding=(), removing=())
    if not ws.stop_replicas(tp, move.removing, state):
        finish_move(ws, move)


@writing(FINISH)
def finish_move(ws: WorkingSet, move: Move) -> None:
    """Step 6."""
    tp = move.tp
    ws.set_assignment(tp, Assignment(move.target))
    ws.delete_record(tp)
    state = ws.states.get(tp)
    if state is not None:
        ws.box.update_metadata(tp, state, move.target)
    ws.completed.append(tp)
    ws.set_task(move.to(Phase.DONE))
    ws.end_task(tp)
    ws.follow_up(move, ended_on=move.target)


def slot_usage(state: ClusterState) -> tuple[int, dict[int, int], dict[int, int]]:
    """(moves holding a slot, incoming per broker, outgoing per broker) - for tests and metrics."""
    running, incoming, outgoing = 0, {}, {}
    assignments = state.assignments
    for move in state.tasks.values():
        if not move.holds_slot:
            continue
        running += 1
        if not move.started and move.tp not in assignments:
            continue  # no assignment to count a LOADING move's slots against (a scrape must not fail)
        adding, removing = slot_brokers(assignments, move)
        for b in adding:
            incoming[b] = incoming.get(b, 0) + 1
        for b in removing:
            outgoing[b] = outgoing.get(b, 0) + 1
    return running, incoming, outgoing


class _Usage:
    """Concurrency slots in use per broker: incoming (adding a replica) and outgoing (removing
    one), as step 2 counts them; step 4b checks an override's new copies against the caps."""

    def __init__(self):
        self.incoming: dict[int, int] = {}
        self.outgoing: dict[int, int] = {}
        self.moves = 0  # moves holding a slot (an override keeps their count)

    def add(self, adding, removing, n: int) -> None:
        for b in adding:
            self.incoming[b] = self.incoming.get(b, 0) + n
        for b in removing:
            self.outgoing[b] = self.outgoing.get(b, 0) + n

    def blocked(self, old: Move, new: Move, config: ControllerConfig) -> list[int]:
        """Brokers the override ``old`` -> ``new`` adds a copy to, or a replica newly leaving
        from, that are at their cap. A leaving replica is an original one the new target drops,
        or one the old target added that the new one drops while it is in the ISR: it stays
        until the new target is in sync and goes with RR (``Move.dropped``), one more outgoing
        move of its broker, as step 2 and the caps' invariant count it."""
        into = [b for b in new.adding if b not in old.adding]
        out_of = [b for b in new.removing if b not in old.removing]
        return sorted(
            {b for b in into if self.incoming.get(b, 0) >= config.max_incoming_per_broker}
            | {b for b in out_of if self.outgoing.get(b, 0) >= config.max_outgoing_per_broker}
        )

    @staticmethod
    def _copies(move: Move, isr) -> bool:
        return any(b not in isr for b in move.adding)

    def past_cluster_cap(self, old: Move, new: Move, isr, config: ControllerConfig) -> bool:
        """Whether the override ``old`` -> ``new`` would start a copy past the cluster cap. In
        place it keeps the moves' count, which is within the cap but after a failover: the
        resumed moves can hold more slots than it (a finish cut short beside the move started in
        the slot it freed), and a move copying nothing (its added replicas in the ISR, a kept
        original out of it) would then copy again past the cap. It waits until they fit."""
        return self.moves > config.max_cluster_moves and not self._copies(old, isr) and self._copies(new, isr)

    def replace(self, old: Move, new: Move) -> None:
        self.add(old.adding, old.removing, -1)
        self.add(new.adding, new.removing, 1)
