"""Replicas and preferred leaders per broker over a cluster state, kept up to date cheaply:
what CreateTopics and CreatePartitions place new replicas against (controller.core.placement).

The counts are kept per topic, keyed by the topic's zkVersion and partition tuple in the state
(every change of a topic's assignment in memory comes with a new version: the engine's write or
a read), so a request recounts only the topics that changed since the last one instead of every
partition of the cluster (bench/rpc.py's ``create_topics_per_second``). Pure: a memo over the
state it is given, owned by the active controller.

    counts = PlacementCounts()
    replicas, leaders = counts.counts(state)     # {broker: n}, {broker: n}
"""

from __future__ import annotations

from controller.core.placement import cluster_counts


class PlacementCounts:
    def __init__(self):
        self.memo_state = None
        self.memo_generation = -1
        # topic -> (version, partitions tuple, replicas per broker, leaders per broker, partitions counted)
        self.per_topic: dict[str, tuple[int, tuple, dict, dict, int]] = {}
        self.replicas: dict[int, int] = {}
        self.leaders: dict[int, int] = {}
        self.partitions = 0

    def _add(self, replicas: dict, leaders: dict, sign: int) -> None:
        for b, n in replicas.items():
            self.replicas[b] = self.replicas.get(b, 0) + sign * n
        for b, n in leaders.items():
            self.leaders[b] = self.leaders.get(b, 0) + sign * n

    def _refresh(self, state) -> None:
        if self.memo_state is not state:
            self.memo_state, self.per_topic, self.replicas, self.leaders, self.partitions = state, {}, {}, {}, 0
        versions, parts, assignments = state.topic_versions, state.topic_partitions, state.assignments
        for name in [n for n in self.per_topic if n not in versions]:
            _, _, r, l, n = self.per_topic.pop(name)
            self._add(r, l, -1)
            self.partitions -= n
        for name, version in versions.items():
            ps = parts.get(name, ())
            known = self.per_topic.get(name)
            if known is not None and known[0] == version and known[1] is ps:
                continue
            if known is not None:
                self._add(known[2], known[3], -1)
                self.partitions -= known[4]
            held = [assignments[(name, p)].replicas for p in ps if (name, p) in assignments]
            r, l = cluster_counts(held)
            self.per_topic[name] = (version, ps, r, l, len(held))
            self._add(r, l, 1)
            self.partitions += len(held)
        if self.partitions != len(assignments):
            # Assignments without a topic version (a state built by hand): count them all.
            self.per_topic, self.partitions = {}, len(assignments)
            self.replicas, self.leaders = (dict(c) for c in cluster_counts(a.replicas for a in assignments.values()))
            self.memo_state = None
        self.memo_generation = state.generation

    def counts(self, state) -> tuple[dict[int, int], dict[int, int]]:
        if self.memo_state is not state or self.memo_generation != state.generation:
            self._refresh(state)
        return ({b: n for b, n in self.replicas.items() if n}, {b: n for b, n in self.leaders.items() if n})
