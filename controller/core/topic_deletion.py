"""Topic deletion (KIP-4 DeleteTopics), Kafka's ZooKeeper-mode protocol (``TopicDeletionManager``):
the engine's part: functions of its working set (controller.core.working_set; controller.core.engine
step 11). Pure.

A topic is marked for deletion by ``/admin/delete_topics/T`` (DeleteTopics writes it, as
Kafka's tools do). The controller reads the markers (children watch; after every election)
and, per marked topic:

 1. Unknown topic: its marker is deleted (Kafka drops markers of topics that do not exist).
    ``delete.topic.enable`` false (``delete_topic_enable``): every marker is deleted unread.
 2. Moves of the topic: a pending one is withdrawn, a replicating one rolled back (KIP-236,
    controller.core.cancel: the shell then removes the throttles no move needs, the
    auto-removed ones); one that cannot be rolled back (completing, or its original replicas
    out of sync) is waited for. New reassignments of the topic are refused meanwhile. Logged.
 3. Once no move of the topic is left: UpdateMetadata with leader -2 (LeaderDuringDelete) to
    every live broker (they drop it from their metadata), StopReplica(delete, leader epoch -2)
    to every live replica, then DescribeLogDirs to those brokers (after the StopReplica: a
    broker's requests go in order). Every replica is "to delete" until a broker's answer
    shows it gone.
 4. A broker's DescribeLogDirs answer (controller.core.events.ReplicasHosted, also the one
    every registering broker gives, step 9): replicas of a deleting topic it no longer hosts are
    gone (not when a log directory failed to answer: the replica may be on it); ones it still
    hosts get StopReplica(delete) and DescribeLogDirs again. A broker that
    is down answers when it registers again (Kafka: deletion resumes on broker start-up).
 5. Every replica gone: the topic leaves memory, and before that (ZooKeeper first) the shell
    deletes, in one fenced flush, whatever exists of the topic's subtree (states, partitions,
    ``partitions``), ``/config/topics/T``, the topic znode and last the marker (Kafka deletes
    the topic znode before its config; here the config goes first, so that a cut between them
    never leaves a config whose topic is gone) (:func:`deletion_ops` over what the shell read:
    kind "delete"). A cut flush leaves the topic znode or at least the marker: the next
    controller resumes at 1-3; partitions whose state went are not given one again (engine
    step 10 skips marked topics). A marker dropped at 1 goes the same way, alone.

Worked table, topic "t" = p0 [1,2], broker 2 down:

    step                              to delete          znodes
    1 marker read                     -                  topic, states, marker
    3 UM(-2) to 1,3; StopReplica +    (0,1) (0,2)        unchanged
      DescribeLogDirs to 1
    4 broker 1 answers: gone          (0,2)              unchanged
    4 broker 2 registers, answers     -                  -
      (hosts it: StopReplica, asked
      again; answers gone)
    5 flush                           -                  state, partition, partitions, config,
                                                         topic, marker deleted

    on_deletions(ws, frozenset({"t"}))   # engine: the DeletionsRead's topics
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.core import cancel
from controller.core.task import Phase
from controller.core.working_set import WorkingSet
from znodes import paths
from znodes.api import Delete, Op
from znodes.values import LeaderIsr, TopicPartition

LEADER_DURING_DELETE = -2  # Kafka's LeaderAndIsr.LeaderDuringDelete (UpdateMetadata)
EPOCH_DURING_DELETE = -2  # Kafka's LeaderAndIsr.EpochDuringDelete (StopReplica)


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """A topic marked for deletion: ``started`` once step 3 ran; ``left``: (partition, broker)
    replicas not yet seen gone."""

    started: bool = False
    left: frozenset[tuple[int, int]] = frozenset()


def on_deletions(ws: WorkingSet, topics: frozenset[str]) -> None:
    """The markers read (every child of /admin/delete_topics)."""
    for name in list(ws.deleting):
        if name not in topics:
            ws.deleting.pop(name)  # its marker was removed by someone: not deleted
    for name in sorted(topics):
        if not ws.config.delete_topic_enable:
            ws.log.append(f"topic deletion is disabled (delete_topic_enable): dropping the marker of {name!r}")
            drop_marker(ws, name)
        elif name not in ws.topic_partitions:
            ws.log.append(f"dropping the deletion marker of unknown topic {name!r}")
            drop_marker(ws, name)
        elif name not in ws.deleting:
            ws.deleting[name] = TopicDeletion()
            ws.log.append(f"topic {name!r} is marked for deletion")


def drop_marker(ws: WorkingSet, name: str) -> None:
    """Step 1: the marker goes (the shell deletes it: ``Step.markers_dropped``)."""
    ws.markers_dropped.append(name)


def advance_deletions(ws: WorkingSet) -> None:
    """Step 2 then 3, for every marked topic not started (after every event of a step)."""
    for name, deletion in list(ws.deleting.items()):
        if deletion.started:
            continue
        moving = [tp for tp in ws.tasks.keys() if tp[0] == name]
        waiting = []
        for tp in moving:
            move = ws.tasks[tp]
            if move.phase is Phase.CANCELLING:
                waiting.append(tp)
                continue
            code, _ = cancel.cancel_one(ws, tp, withdraw_any=True)
            if code == 0:
                ws.log.append(f"deleting topic {name!r}: reassignment of {tp[0]}-{tp[1]} cancelled")
                if tp in ws.tasks:
                    waiting.append(tp)
            else:
                waiting.append(tp)  # completing, or not safe to roll back: waited for
        if not waiting:
            start_deletion(ws, name)


def start_deletion(ws: WorkingSet, name: str) -> None:
    """Step 3."""
    left = set()
    for p in ws.topic_partitions.get(name, ()):
        tp = (name, p)
        replicas = ws.assignments[tp].replicas
        metadata_gone(ws, tp)
        for b in replicas:
            left.add((p, b))
            if b in ws.brokers:
                ws.box.stop_replica(b, tp, EPOCH_DURING_DELETE, wait=False)
    for b in sorted({b for _, b in left} & set(ws.brokers)):
        ws.box.describe_log_dirs(b)
    ws.deleting[name] = TopicDeletion(True, frozenset(left))
    ws.log.append(f"deleting topic {name!r}: StopReplica(delete) to its {len(left)} replica(s)")
    if not left:
        finish_deletion(ws, name)


def metadata_gone(ws: WorkingSet, tp: TopicPartition, to: tuple[int, ...] | None = None) -> None:
    """UpdateMetadata with leader -2: brokers drop the partition from their metadata (also
    what a broker registering during a deletion is told of it, and everyone at step 5)."""
    state = ws.states.get(tp) or LeaderIsr(LEADER_DURING_DELETE, EPOCH_DURING_DELETE, ws.base.epoch, (), -1)
    gone = LeaderIsr(LEADER_DURING_DELETE, state.leader_epoch, state.controller_epoch, state.isr, state.zk_version)
    ws.box.update_metadata(tp, gone, ws.assignments[tp].replicas, to)


def deletion_hosted(ws: WorkingSet, broker_id: int, hosted: frozenset[TopicPartition], *, complete: bool = True) -> None:
    """Step 4: what ``broker_id`` hosts, for the deletions under way. ``complete`` False: a log
    directory failed to answer, so a replica absent from ``hosted`` may be there: only those
    still hosted are told again, none is taken for gone."""
    for name, deletion in list(ws.deleting.items()):
        if not deletion.started:
            continue
        mine = {(p, b) for p, b in deletion.left if b == broker_id}
        if not mine:
            continue
        still = {(p, b) for p, b in mine if (name, p) in hosted}
        for p, _ in sorted(still):
            ws.box.stop_replica(broker_id, (name, p), EPOCH_DURING_DELETE, wait=False)
        if still:
            ws.box.describe_log_dirs(broker_id)
        left = ((deletion.left - mine) | still) if complete else deletion.left
        ws.deleting[name] = TopicDeletion(True, frozenset(left))
        if not left:
            finish_deletion(ws, name)


def finish_deletion(ws: WorkingSet, name: str) -> None:
    """Step 5: the topic leaves memory; the shell deletes its znodes first (``Step.topics_deleted``)."""
    for p in ws.topic_partitions.get(name, ()):
        metadata_gone(ws, (name, p))  # a broker back since step 3 may have been told of it
        ws.assignments.pop((name, p))
        ws.states.pop((name, p))
    ws.topic_partitions.pop(name)
    ws.topic_versions.pop(name)
    ws.topic_ids.pop(name)
    ws.deleting.pop(name)
    ws.topics_deleted.append(name)
    ws.log.append(f"topic {name!r} deleted: every replica is gone")


def deletion_ops(name: str, partitions: list[int], present: set[str], *, whole: bool) -> list[Op]:
    """Step 5's deletes for ``name``, bottom-up, of the znodes in ``present`` (read by the
    shell just before); ``whole`` False: the marker only (step 1)."""
    ops: list[Op] = []
    if whole:
        for p in sorted(partitions):
            ops += [Delete(x) for x in (paths.partition_state(name, p), paths.partition(name, p)) if x in present]
        # The config before the topic znode: a flush cut between them leaves the topic and its
        # marker, and the next controller finishes the deletion (a config outliving its topic
        # znode would be left behind, its marker then naming an unknown topic).
        ops += [Delete(x) for x in (paths.partitions(name), paths.topic_config(name), paths.topic(name)) if x in present]
    marker = paths.delete_topic_marker(name)  # any child name: a tool's illegal one goes too
    if marker in present:
        ops.append(Delete(marker))
    return ops
