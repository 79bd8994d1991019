"""What the brokers are told of partitions no move owns, and what they host: the engine's steps 8,
8b, 9 and 9b (controller.core.engine has them numbered, in order, with their worked table) as
functions of its working set (controller.core.working_set). Pure.

* step 8, :func:`on_metadata`: a full-metadata chunk's states become UpdateMetadata (Kafka's
  ``onControllerFailover`` and ``onBrokerStartup``); a partition without a state is created
  (step 10, controller.core.topic_creation); :func:`on_controllers`: the controller instances
  listed with the live brokers (where Kafka 3.x brokers find the controller), every live broker
  told when they change;
* step 8b, :func:`replica_states`: LeaderAndIsr with the state held to every live replica of a
  (re)load's chunks (Kafka's ``replicaStateMachine.startup``), last in the step;
* step 9, :func:`on_hosted`: a broker's DescribeLogDirs answer (asked when it registers, and of
  every live broker with the last chunk of a (re)load's full send); :func:`delete_strays`, after
  the step's moves started: its strays get StopReplica(delete) (controller.core.task.stray_partitions);
* step 9b, :func:`missing_replicas`: replicas assigned to a broker that it does not host get
  LeaderAndIsr (``is_new``); :func:`tell_unhosted` once a state not read yet is.
"""

from __future__ import annotations

from controller.core import topic_creation, topic_deletion
from controller.core.events import ControllersRead, MetadataRead, ReplicasHosted
from controller.core.task import stray_partitions
from controller.core.working_set import WorkingSet
from znodes.values import Assignment, LeaderIsr, TopicPartition


def on_controllers(ws: WorkingSet, event: ControllersRead) -> None:
    """Step 8: the controller instances (``/reassignd/controllers``) are nodes of every
    UpdateMetadata's live brokers, as Kafka's controller is one of its brokers: a Kafka 3.x
    broker sends AlterPartition and AllocateProducerIds (its broker-to-controller channel) to
    the live node ``controller_id`` names, on its inter-broker listener. A change tells every
    live broker."""
    if event.nodes == ws.controller_nodes:
        return
    ws.controller_nodes = dict(event.nodes)
    ws.controller_nodes_changed = True
    ws.box.nodes = ws.controller_nodes
    ws.box.live_brokers_changed()


def on_metadata(ws: WorkingSet, event: MetadataRead) -> None:
    """Step 8: partition states read for a full UpdateMetadata go out as they are, with
    the replicas this controller knows (a newer state it holds for a move wins)."""
    to = event.brokers
    for tp, state in event.states.items():
        assignment = ws.assignments.get(tp)
        if assignment is None:
            continue  # the partition went meanwhile: nothing to say
        known = ws.states.get(tp)
        if tp[0] in ws.deleting and ws.deleting[tp[0]].started:
            topic_deletion.metadata_gone(ws, tp, to)  # step 11: being deleted, not to be served
            continue
        if state is None:
            if known is None:
                topic_creation.create_partition(ws, tp, assignment, event.missing_parents)  # step 10
            continue
        if known is not None and known.zk_version > state.zk_version:
            state = known
        elif state != known:
            ws.states[tp] = state  # kept: a move of the partition starts without a read
        if tp in ws.unhosted:
            tell_unhosted(ws, tp, state, assignment)
        ws.box.update_metadata(tp, state, assignment.replicas, to)
        if event.leader_and_isr:
            ws.startup.append(tp)  # step 8b, at the end of the step
    if event.probe:
        # Step 9 after a (re)load: asked once the full send has read every partition's state,
        # not at Resume - an election's answers name every replica of the cluster, and judging
        # them (strays, missing replicas, sizes) in the steps that complete the resumed moves
        # held those up (docs/DESIGN.md section 4, failover). The outbox sends it after the
        # step's LeaderAndIsr (step 8b's included), so the answer reflects them.
        for b in sorted(ws.brokers):
            ws.box.describe_log_dirs(b)


def replica_states(ws: WorkingSet) -> None:
    """Step 8b: LeaderAndIsr with the state held to every live replica of a (re)load's
    chunk, where this step sent that broker nothing of its own for the partition; not for
    a started move nor a topic being deleted."""
    if not ws.startup:
        return
    tasks, assignments, states, box = ws.tasks, ws.assignments, ws.states, ws.box
    deleting = set(ws.deleting.keys())
    for tp in ws.startup:
        move = tasks.get(tp)
        if (move is not None and move.started) or tp[0] in deleting:
            continue
        assignment, state = assignments.get(tp), states.get(tp)
        if assignment is not None and state is not None:
            box.leader_and_isr_held(tp, state, assignment.replicas)


def on_hosted(ws: WorkingSet, event: ReplicasHosted) -> None:
    """Step 9: delete the strays a (re)registered broker hosts."""
    b = event.broker_id
    if b not in ws.brokers:
        return  # gone again: asked once more when it registers
    if ws.deleting:
        topic_deletion.deletion_hosted(ws, b, event.partitions, complete=event.complete)  # step 11
    ws.hosted_answers[b] = event.partitions  # steps 9 and 9b, for all answers at once
    if event.complete:
        ws.partial_answers.discard(b)
    else:
        ws.partial_answers.add(b)  # a failed directory's replicas are not missing (step 9b)
    # One line per answer (every broker at an election, one at a registration): from here on
    # step 2c orders by the sizes it gave.
    ws.log.append(f"broker {b} said what it hosts: {len(event.partitions)} replica(s), "
                  f"{len(event.sizes)} with a size" + ("" if event.complete else " (a log directory failed: the others')"))


def delete_strays(ws: WorkingSet) -> None:
    """Step 9, once the step's moves are decided (after step 2): a stray is judged against
    where the step left every partition, not where the answer found it - a queued target or
    a pending entry this step starts may place the replica there again, and a StopReplica
    decided before that start would go out after its LeaderAndIsr."""
    for b, hosted in ws.hosted_answers.items():
        if b not in ws.brokers:
            continue
        for tp in stray_partitions(b, hosted, ws.assignments, ws.tasks, ws.states):
            state = ws.states.get(tp)
            ws.log.append(f"broker {b} hosts a replica of {tp[0]}-{tp[1]}, which is not assigned to it: deleting it")
            ws.box.stop_replica(b, tp, state.leader_epoch if state is not None else -1, wait=False)


def missing_replicas(ws: WorkingSet) -> None:
    """Step 9b: replicas assigned to a broker that answered in full (RS, no move running) that it
    does not host - a LeaderAndIsr lost with a controller that wrote the state and died
    before sending it (a new partition's, say) - get LeaderAndIsr (``is_new``) with the state
    held; a state not read yet: once it is (``unhosted``, on_metadata). One pass over the
    assignments for every answer of the step (an election brings one per broker)."""
    # A partial answer (a log directory failed) says nothing of what is absent.
    answers = {b: hosted for b, hosted in ws.hosted_answers.items() if b in ws.brokers and b not in ws.partial_answers}
    if not answers:
        return
    for tp, assignment in ws.assignments.items():
        for b in assignment.replicas:
            hosted = answers.get(b)
            if hosted is None or tp in hosted or tp in ws.tasks or tp[0] in ws.deleting:
                continue
            state = ws.states.get(tp)
            if state is None:
                ws.unhosted[tp] = ws.unhosted.get(tp, frozenset()) | {b}
                continue
            ws.log.append(f"broker {b} does not host its replica of {tp[0]}-{tp[1]}: sending it LeaderAndIsr")
            ws.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)


def tell_unhosted(ws: WorkingSet, tp: TopicPartition, state: LeaderIsr, assignment: Assignment) -> None:
    """Step 9b, once ``tp``'s state is known."""
    for b in sorted(ws.unhosted.get(tp, ())):
        if b in ws.brokers and b in assignment.replicas and tp not in ws.tasks:
            ws.box.leader_and_isr(b, tp, state, replicas=assignment.replicas, adding=(), removing=(), is_new=True)
    ws.unhosted.pop(tp)
