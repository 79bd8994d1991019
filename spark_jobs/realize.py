"""Per-topic work, run as Spark tasks: turn a topic's quotas into concrete replica moves.

The global step (spark_jobs.core) decides *how many* replicas of each topic go from which
broker to which (transfers ``(donor, receiver, count)``, in the order it decided them). This
module picks *which* partitions: for each transfer, partitions of the topic that have a replica
on the donor and none on the receiver, smallest log first, then lowest partition number, and
only where the rack rule allows (and never a replica the core keeps: ``TopicTask.keep``).
Topics are independent, so tasks run in parallel; the result is the same whichever executor
runs them.

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
    # Per row, the broker whose replica must stay (-1 none): a leader kept through a lower
    # replication factor (spark_jobs.core). None: every replica may move.
    keep: np.ndarray | None = None


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
    rank = np.empty(len(rows), dtype=np.int64)
    rank[scan] = np.arange(len(rows))
    rank_of = rank.tolist().__getitem__
    # Which of the topic's rows hold each broker, kept as moves are made: a transfer's
    # candidates are a set difference, not a scan of every row (a topic has few rows per broker).
    holders: dict[int, set] = {}
    for i, row in enumerate(rows.tolist()):
        for b in row:
            if b >= 0:
                holders.setdefault(b, set()).add(i)
    rule = task.rule
    keep = task.keep.tolist() if task.keep is not None else [-1] * len(rows)
    moves: list = []
    leftover: list = []
    for donor, receiver, count in task.transfers:
        donor, receiver = int(donor), int(receiver)
        at_r = holders.setdefault(receiver, set())
        at_d = holders.setdefault(donor, set())
        done = 0
        for i in sorted(at_d - at_r, key=rank_of):
            if done == count:
                break
            row = rows[i]
            if keep[i] == donor or (rule.k and not rule.allowed(row.tolist(), donor, receiver)):
                continue
            j = int(np.nonzero(row == donor)[0][0])
            rows[i, j] = receiver
            at_d.discard(i)
            at_r.add(i)
            moves.append((task.row_offset + int(i), donor, receiver))
            done += 1
        if done < count:
            leftover.append((donor, receiver, int(count - done)))
    return TopicResult(task.topic, moves, leftover)


def realize_chunk(tasks: list) -> list:
    """Several topics in one Spark task (small topics would otherwise cost a task each)."""
    return [realize_topic(t) for t in tasks]
