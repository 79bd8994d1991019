"""CreateTopics, CreatePartitions and DeleteTopics as engine events (one writer).

The shell (controller.shell.admin.create_topics, create_partitions, delete_topics) decodes a
request, refuses names given twice and what the principal may not do, and hands the rest to
the active controller as a controller.core.events.TopicsRequested; its loop reads what the
engine cannot know (TopicsSeen: ZooKeeper's topic names and deletion markers, leftover configs,
the placement counts) in the step that takes it. Each request is answered (``Step.answers``)
once the flush carrying its writes landed. Pure.

CreateTopics (controller.core.topic_creation has the checks, placement and the worked table):

 1. ``plan_topics`` against the topics ZooKeeper and the engine know, those marked for
    deletion, the live brokers and the replicas per broker (topics accepted earlier in the step
    included). ``validate_only``: answer here.
 2. Per accepted topic, first in the flush: ``/config/topics/T`` and ``/brokers/topics/T``
    (creation_ops) - the request, durable. The topic znode is version 3 with the topic id the
    shell drew for the request (``TopicRequest.topic_id``, KIP-516; the engine draws nothing),
    which the engine keeps (``topic_ids``) for every later rewrite of the znode.
 3. In the same step and flush, after them, engine step 10 for each partition: its parents and
    state znode (leader the first live replica, epoch 0), then LeaderAndIsr and UpdateMetadata.
    A partition with no live replica waits for one (step 10 when it registers).
 4. Answer per topic: NONE with its plan (its topic id included), and the partitions still
    without a leader.

CreatePartitions (``plan_partitions``: Kafka's AdminZkClient.addPartitions checks):

 1. The topic's assignment as the engine holds it; refused while a partition of it moves.
 2. First in the flush: ``/brokers/topics/T`` with the new partitions, conditional on the
    zkVersion the engine holds (a tool's write in between fails the flush: the controller
    reloads and the request is taken again on what it read).
 3. Step 10 for the new partitions in the same flush; answer as CreateTopics.

DeleteTopics (controller.core.topic_deletion has the protocol and its table):

 1. A topic neither ZooKeeper nor the engine knows, or whose deletion the engine started
    (Kafka's brokers drop it at the controller's leader -2, as our Metadata does) ->
    UNKNOWN_TOPIC_OR_PARTITION.
 2. First in the flush: ``/admin/delete_topics`` if missing, the topic's marker if missing (a
    marker the engine has not taken yet - a tool's - is a deletion under way: success, as
    Kafka swallows TopicAlreadyMarkedForDeletionException).
 3. The topic is marked in the engine at once (topic_deletion.on_deletions): its moves are
    withdrawn or rolled back and its replicas deleted from this step on. Answer NONE, with
    the number of moves it cancels.

Worked example: CreateTopics [a (2 partitions, RF 2), a again], brokers 1-3 live; then
CreatePartitions a -> 3 in the next step:

    step  request            flush (in order)                          answer
    1     CreateTopics a     /config/topics/a, /brokers/topics/a       a: INVALID_REQUEST twice
          (named twice)      - nothing: refused by the shell           (never reaches here)
    1'    CreateTopics a     /config/topics/a, /brokers/topics/a;      a: NONE, 2 partitions,
                             .../partitions, .../0, .../0/state,       no partition waiting
                             .../1, .../1/state
    2     CreatePartitions   /brokers/topics/a (v0 -> v1, 3 parts);    a: NONE
          a -> 3             .../2, .../2/state
"""

from __future__ import annotations

from controller.core import topic_deletion
from controller.core.admin_requests import Answer
from controller.core.events import TopicsRequested, TopicsSeen
from controller.core.flush import TOPICS, writing
from controller.core.topic_creation import (
    CreationView,
    Refused,
    create_partition,
    creation_ops,
    plan_partitions,
    plan_topics,
)
from controller.core.topic_policy import NO_POLICY
from controller.core.working_set import WorkingSet
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import Create, SetData
from znodes.payloads import encode_topic
from znodes.values import Assignment


def on_topics(ws: WorkingSet, event: TopicsRequested) -> None:
    read = event.read or TopicsSeen()
    if event.kind == "create":
        results = _create_topics(ws, event, read)
    elif event.kind == "partitions":
        results = _create_partitions(ws, event, read)
    else:
        results = _delete_topics(ws, event, read)
    ws.answers.append(Answer(event.token, results))


def _view(ws: WorkingSet, event: TopicsRequested, read: TopicsSeen, topics=frozenset()) -> CreationView:
    if ws.placement is None:
        ws.placement = (dict(read.replica_counts), dict(read.leader_counts))
    replicas, leaders = ws.placement
    return CreationView(
        topics=frozenset(topics),
        deleting=read.markers | frozenset(ws.deleting.keys()),
        brokers={b.id: b.rack for b in ws.brokers.values()},
        replica_counts=replicas,
        leader_counts=leaders,
        policy=event.policy or NO_POLICY,
    )


def _count(ws: WorkingSet, assignment) -> None:
    replicas, leaders = ws.placement
    for rs in assignment:
        for b in rs:
            replicas[b] = replicas.get(b, 0) + 1
        if rs:
            leaders[rs[0]] = leaders.get(rs[0], 0) + 1


@writing(TOPICS)
def _create_topics(ws: WorkingSet, event: TopicsRequested, read: TopicsSeen) -> dict:
    """Index in the request -> (code, message, Planned or None, partitions without a leader)."""
    known = read.names | frozenset(ws.topic_partitions.keys())
    view = _view(ws, event, read, known)
    results = {}
    for i, plan in enumerate(plan_topics(list(event.requests), view)):  # step 1
        if isinstance(plan, Refused):
            results[i] = (plan.code, plan.message, None, ())
            continue
        if event.validate_only:
            results[i] = (ErrorCode.NONE, None, plan, ())
            continue
        for op in creation_ops(plan, plan.name in read.configs_existing):  # step 2
            ws.admin_first.append(op)
        name = plan.name
        ws.topic_partitions[name] = tuple(sorted(plan.assignment))
        ws.topic_versions[name] = 0
        if plan.topic_id is not None:  # kept by every later rewrite (moves, CreatePartitions)
            ws.topic_ids[name] = plan.topic_id
        else:
            ws.topic_ids.pop(name)
        parents = frozenset({paths.partitions(name)})
        for p, rs in sorted(plan.assignment.items()):
            ws.assignments[(name, p)] = Assignment(rs)
        _count(ws, plan.assignment.values())
        waiting = _give_states(ws, name, sorted(plan.assignment), parents)  # step 3
        results[i] = (ErrorCode.NONE, None, plan, waiting)
    return results


def _give_states(ws: WorkingSet, name: str, partitions, parents: frozenset[str]) -> tuple[int, ...]:
    """Engine step 10 for the new partitions; those left without a state (no live replica)."""
    before = len(ws.created)
    for p in partitions:
        create_partition(ws, (name, p), ws.assignments[(name, p)], parents | {paths.partition(name, p)})
    done = {tp[1] for tp in ws.created[before:]}
    return tuple(p for p in partitions if p not in done)


@writing(TOPICS)
def _create_partitions(ws: WorkingSet, event: TopicsRequested, read: TopicsSeen) -> dict:
    """Topic name -> (code, message, new partitions or None, partitions without a leader)."""
    results = {}
    view = _view(ws, event, read)
    for r in event.requests:
        name = r.name
        current = None
        moving = False
        if name in ws.topic_partitions:
            current = {p: ws.assignments[(name, p)].replicas for p in ws.topic_partitions[name]}
            moving = any(ws.assignments[(name, p)].moving for p in current) or any(
                tp[0] == name for tp in ws.tasks.keys())
        plan = plan_partitions(r, current, view, moving=moving)  # step 1
        if isinstance(plan, Refused):
            results[name] = (plan.code, plan.message, None, ())
            continue
        if event.validate_only:
            results[name] = (ErrorCode.NONE, None, plan, ())
            continue
        for p, rs in plan.items():
            ws.assignments[(name, p)] = Assignment(rs)
        ws.topic_partitions[name] = tuple(sorted(current)) + tuple(sorted(plan))
        parts = {p: ws.assignments[(name, p)] for p in ws.topic_partitions[name]}
        version = ws.topic_versions[name]
        ws.admin_first.append(SetData(paths.topic(name), encode_topic(parts, ws.topic_ids.get(name)), version))  # step 2
        ws.topic_versions[name] = version + 1
        _count(ws, plan.values())
        results[name] = (ErrorCode.NONE, None, plan, _give_states(ws, name, sorted(plan), frozenset()))  # step 3
    return results


@writing(TOPICS)
def _delete_topics(ws: WorkingSet, event: TopicsRequested, read: TopicsSeen) -> dict:
    """Topic name -> (code, message)."""
    results = {}
    marked = []
    parent = read.markers_parent
    for name in event.requests:
        if name not in ws.topic_partitions:  # step 1 (a tool's topic was read before the step)
            results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            continue
        if name in ws.deleting:
            # Kafka: a deletion started is gone from every metadata cache (leader -2), ours too.
            results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} is being deleted")
            continue
        if name not in read.markers:  # step 2
            if not parent:
                ws.admin_first.append(Create(paths.DELETE_TOPICS))
                parent = True
            ws.admin_first.append(Create(paths.delete_topic(name)))
        moving = sum(1 for tp in ws.tasks.keys() if tp[0] == name)
        message = None
        if moving:
            message = f"deleting {name!r} cancels the reassignment of {moving} partition(s) and removes their throttles"
            ws.log.append(message)
        results[name] = (ErrorCode.NONE, message)
        marked.append(name)
    if marked:  # step 3
        topic_deletion.on_deletions(ws, frozenset(ws.deleting.keys()) | frozenset(marked))
    return results
