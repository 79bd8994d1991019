"""A snapshot as numpy arrays: the planner's working representation.

Brokers get dense indices 0..B-1 in id order (brokers named only by the request, such as ones
being added, come after). Partitions are rows sorted by (topic, partition), so each topic is a
contiguous block ``topic_start[t]:topic_start[t+1]``. Replicas live in an int32 matrix ``rep``
(one row per partition, broker indices in assignment order, -1 padding).

Usage::

    c = Cluster.from_snapshot(snapshot.load("cluster.json"))
    c.rep[c.topic_start[0]:c.topic_start[1]]      # the first topic's assignment
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Cluster:
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

    def with_brokers(self, extra_ids: list[int]) -> "Cluster":
        """A copy that also knows brokers ``extra_ids`` (no rack, not alive, no replicas)."""
        known = set(int(b) for b in self.broker_ids)
        new = [b for b in extra_ids if b not in known]
        if not new:
            return self
        return Cluster(
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
    def from_snapshot(cls, snap: dict) -> "Cluster":
        """Build from a validated snapshot (see spark_jobs.snapshot.validate)."""
        brokers = snap["brokers"]
        broker_ids = np.array([b["id"] for b in brokers], dtype=np.int64)
        index = {b["id"]: i for i, b in enumerate(brokers)}
        topics = [t["name"] for t in snap["topics"]]
        counts = [len(t["partitions"]) for t in snap["topics"]]
        n = sum(counts)
        width = max((len(p["replicas"]) for t in snap["topics"] for p in t["partitions"]), default=1)
        rep = np.full((n, width), -1, dtype=np.int32)
        rf = np.zeros(n, dtype=np.int32)
        size = np.full(n, -1, dtype=np.int64)
        part_num = np.zeros(n, dtype=np.int32)
        reassigning = np.zeros(n, dtype=bool)
        leaders = np.full(n, -1, dtype=np.int32)
        row = 0
        for t in snap["topics"]:
            for p in t["partitions"]:
                reps = p["replicas"]
                k = len(reps)
                rep[row, :k] = [index[r] for r in reps]
                rf[row] = k
                part_num[row] = p["partition"]
                reassigning[row] = p["reassigning"]
                if p["leader"] >= 0:
                    leaders[row] = index[p["leader"]]
                sizes = p["sizes"]
                if sizes is not None:
                    # The leader's log is what a new replica copies; fall back to the largest.
                    leader = p["leader"]
                    s = sizes[reps.index(leader)] if leader in reps else None
                    if s is None:
                        known = [x for x in sizes if x is not None]
                        s = max(known) if known else None
                    if s is not None:
                        size[row] = s
                row += 1
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
