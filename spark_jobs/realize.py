"""Per-topic work, run as Spark tasks: turn a topic's quotas into concrete replica moves.

The global step (spark_jobs.core) decides *how many* replicas of each topic go from which
broker to which (transfers ``(donor, receiver, count)``, in the order it decided them). This
module picks *which* partitions: for each transfer, partitions of the topic that have a replica
on the donor and none on the receiver, smallest log first, then lowest partition number, and
only where the rack rule allows. Topics are independent, so tasks run in parallel; the result
is the same whichever executor runs them.

Usage::

    result = realize_topic(TopicTask(...))
    result.moves        # [(row, donor, receiver)], rows as in the cluster's ``rep`` matrix
    result.leftover     # [(donor, receiver, count)] that could not be placed
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_jobs.racks import RackRule


@dataclass
class TopicTask:
    topic: int
    row_offset: int  # global row of this topic's first partition
    rows: np.ndarray  # int32 (m, W), the topic's current assignment
    sizes: np.ndarray  # int64 (m,), -1 unknown
    transfers: list  # [(donor, receiver, count)]
    rule: RackRule


@dataclass
class TopicResult:
    topic: int
    moves: list  # [(global row, donor, receiver)]
    leftover: list  # [(donor, receiver, count)]


def realize_topic(task: TopicTask) -> TopicResult:
    rows = task.rows.copy()
    order_key = np.where(task.sizes < 0, 0, task.sizes)
    # Candidates are scanned smallest first: fewer bytes to copy for the same move count.
    scan = np.lexsort((np.arange(len(rows)), order_key))
    rule = task.rule
    moves: list = []
    leftover: list = []
    for donor, receiver, count in task.transfers:
        has_d = (rows == donor).any(axis=1)
        has_r = (rows == receiver).any(axis=1)
        cand = scan[(has_d & ~has_r)[scan]]
        done = 0
        for i in cand:
            if done == count:
                break
            row = rows[i]
            if rule.k and not rule.allowed(row.tolist(), donor, receiver):
                continue
            j = int(np.nonzero(row == donor)[0][0])
            rows[i, j] = receiver
            moves.append((task.row_offset + int(i), int(donor), int(receiver)))
            done += 1
        if done < count:
            leftover.append((int(donor), int(receiver), int(count - done)))
    return TopicResult(task.topic, moves, leftover)


def realize_chunk(tasks: list) -> list:
    """Several topics in one Spark task (small topics would otherwise cost a task each)."""
    return [realize_topic(t) for t in tasks]
