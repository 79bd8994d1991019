"""A snapshot as numpy arrays: the planner's working representation.

Brokers get dense indices 0..B-1 in id order (brokers named only by the request, such as ones
being added, come after). Partitions are rows sorted by (topic, partition), so each topic is a
contiguous block ``topic_start[t]:topic_start[t+1]``. Replicas live in an int32 matrix ``rep``
(one row per partition, broker indices in assignment order, -1 padding).

Usage::

    c = ClusterArrays.from_snapshot(snapshot.load("cluster.json"))
    c.rep[c.topic_start[0]:c.topic_start[1]]      # the first topic's assignment
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass
class ClusterArrays:
    broker_ids: np.ndarray  # int64 (B,), increasing for snapshot brokers
    racks: list  # rack name or None, per broker index
    alive: np.ndarray  # bool (B,)
    topics: list  # topic names, sorted
    topic_start: np.ndarray  # int64 (T+1,)
    part_topic: np.ndarray  # int32 (P,)
    part_num: np.ndarray  # int32 (P,)
    rep: np.ndarray  # int32 (P, W), -1 padded
    rf: np.ndarray  # int32 (P,)
    size: np.ndarray  # int64 (P,), bytes of the partition's log, -1 when unknown
    reassigning: np.ndarray  # bool (P,)
    leader: np.ndarray  # int32 (P,), broker index of the current leader, -1 when none

    @property
    def n_brokers(self) -> int:
        return len(self.broker_ids)

    @property
    def n_partitions(self) -> int:
        return len(self.part_topic)

    def index_of(self) -> dict[int, int]:
        return {int(b): i for i, b in enumerate(self.broker_ids)}

    def with_brokers(self, extra_ids: list[int]) -> "ClusterArrays":
        """A copy that also knows brokers ``extra_ids`` (no rack, not alive, no replicas)."""
        known = set(int(b) for b in self.broker_ids)
        new = [b for b in extra_ids if b not in known]
        if not new:
            return self
        return ClusterArrays(
            broker_ids=np.concatenate([self.broker_ids, np.array(new, dtype=np.int64)]),
            racks=list(self.racks) + [None] * len(new),
            alive=np.concatenate([self.alive, np.zeros(len(new), dtype=bool)]),
            topics=self.topics,
            topic_start=self.topic_start,
            part_topic=self.part_topic,
            part_num=self.part_num,
            rep=self.rep,
            rf=self.rf,
            size=self.size,
            reassigning=self.reassigning,
            leader=self.leader,
        )

    @classmethod
    def from_snapshot(cls, snap: dict) -> "ClusterArrays":
        """Build from a validated snapshot (see spark_jobs.snapshot.validate)."""
        brokers = snap["brokers"]
        broker_ids = np.array([b["id"] for b in brokers], dtype=np.int64)  # sorted by validate()
        topics = [t["name"] for t in snap["topics"]]
        counts = [len(t["partitions"]) for t in snap["topics"]]
        parts = [p for t in snap["topics"] for p in t["partitions"]]
        n = len(parts)
        # Built column-wise from flat iterators: millions of partitions stay a few seconds.
        lens = np.fromiter((len(p["replicas"]) for p in parts), dtype=np.int64, count=n)
        width = int(lens.max()) if n else 1
        total = int(lens.sum())
        flat = np.fromiter(chain.from_iterable(p["replicas"] for p in parts), dtype=np.int64, count=total)
        row_of = np.repeat(np.arange(n), lens)
        col_of = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
        rep = np.full((n, width), -1, dtype=np.int32)
        rep[row_of, col_of] = np.searchsorted(broker_ids, flat)
        rf = lens.astype(np.int32)
        part_num = np.fromiter((p["partition"] for p in parts), dtype=np.int32, count=n)
        reassigning = np.fromiter((p["reassigning"] for p in parts), dtype=bool, count=n)
        lead_ids = np.fromiter((p["leader"] for p in parts), dtype=np.int64, count=n)
        leaders = np.where(lead_ids >= 0, np.searchsorted(broker_ids, np.maximum(lead_ids, 0)), -1).astype(np.int32)
        size = np.full(n, -1, dtype=np.int64)
        has = np.fromiter((p["sizes"] is not None for p in parts), dtype=bool, count=n)
        if has.any():
            idx = np.nonzero(has)[0]
            sized = [parts[i] for i in idx.tolist()]
            flat_s = np.fromiter(
                (-1 if x is None else x for p in sized for x in p["sizes"]), dtype=np.int64, count=int(lens[idx].sum())
            )
            S = np.full((len(idx), width), -1, dtype=np.int64)
            S[np.repeat(np.arange(len(idx)), lens[idx]), col_of[np.isin(row_of, idx)]] = flat_s
            # The leader's log is what a new replica copies; fall back to the largest.
            at_leader = rep[idx] == leaders[idx][:, None]
            lead_size = np.where(at_leader.any(axis=1), np.where(at_leader, S, -1).max(axis=1), -1)
            size[idx] = np.where(lead_size >= 0, lead_size, S.max(axis=1))
        topic_start = np.zeros(len(topics) + 1, dtype=np.int64)
        np.cumsum(counts, out=topic_start[1:])
        part_topic = np.repeat(np.arange(len(topics), dtype=np.int32), counts)
        return cls(
            broker_ids=broker_ids,
            racks=[b["rack"] for b in brokers],
            alive=np.array([b["alive"] for b in brokers], dtype=bool),
            topics=topics,
            topic_start=topic_start,
            part_topic=part_topic,
            part_num=part_num,
            rep=rep,
            rf=rf,
            size=size,
            reassigning=reassigning,
            leader=leaders,
        )
