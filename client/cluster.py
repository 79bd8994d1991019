"""What the CLI knows about the cluster, whichever way it was read, and the checks of a plan
against it. Pure.

:class:`ClusterAssignment` (the brokers and their racks, each partition's replicas, the moves in
flight and the leaders) is filled either from ZooKeeper (``--zookeeper``) or from the
controller's Metadata answer (``--bootstrap-server``). :func:`check_plan` refuses a plan that
names a topic, partition or broker the cluster does not have, naming the file and the entry.

Usage::

    state = ClusterAssignment(brokers={1: None, 2: None}, topics={"t": {0: [1, 2]}})
    check_plan(plan, state)          # raises ClusterMismatchError
    state.current(plan.assignments)  # {("t", 0): [1, 2]}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client.errors import ClusterMismatchError
from client.inputs import Reassignment
from znodes.values import TopicPartition


@dataclass
class ClusterAssignment:
    # broker id -> rack (None when the broker has none)
    brokers: dict[int, str | None]
    # topic -> partition -> current replicas (Kafka's "AR": during a move, TRS then ORS - TRS)
    topics: dict[str, dict[int, list[int]]]
    # partitions being reassigned now -> their target replicas, where known
    in_flight: dict[TopicPartition, list[int]] = field(default_factory=dict)
    # topic -> partition -> leader, where known
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)

    def current(self, keys) -> dict[TopicPartition, list[int]]:
        return {tp: list(self.topics[tp[0]][tp[1]]) for tp in keys if tp[1] in self.topics.get(tp[0], {})}

    def assignment_of(self, topics) -> dict[str, dict[int, list[int]]]:
        return {t: {p: list(r) for p, r in self.topics[t].items()} for t in topics if t in self.topics}

    def racks(self, brokers=None) -> dict[int, str]:
        ids = self.brokers if brokers is None else brokers
        return {b: self.brokers[b] for b in ids if self.brokers.get(b) is not None}


def _ranges(ids: list[int]) -> str:
    """[0,1,2,5] -> "0-2,5" (for readable error messages)."""
    out: list[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out) or "none"


def check_plan(plan: Reassignment, state: ClusterAssignment, *, check_brokers: bool = True) -> None:
    """Every topic, partition and (unless ``check_brokers`` is False) broker the plan names
    must exist. The first problem found is raised, naming the entry."""
    problems: list[str] = []
    for i, (tp, replicas) in enumerate(plan.assignments.items()):
        topic, partition = tp
        where = f"partitions[{i}] ({topic}-{partition})"
        if topic not in state.topics:
            problems.append(f"{where}: topic {topic!r} does not exist")
            continue
        if partition not in state.topics[topic]:
            problems.append(
                f"{where}: topic {topic!r} has no partition {partition} "
                f"(partitions: {_ranges(list(state.topics[topic]))})"
            )
            continue
        if check_brokers:
            unknown = [b for b in replicas if b not in state.brokers]
            if unknown:
                problems.append(
                    f"{where}: broker(s) {unknown} not in the cluster (brokers: {_ranges(list(state.brokers))})"
                )
    if problems:
        text = f"{plan.source}: {problems[0]}"
        if len(problems) > 1:
            text += f" (and {len(problems) - 1} more)\n" + "\n".join(f"  {p}" for p in problems[1:])
        raise ClusterMismatchError(text)


def check_topics(topics: list[str], state: ClusterAssignment, source: str) -> None:
    missing = [t for t in topics if t not in state.topics]
    if missing:
        raise ClusterMismatchError(f"{source}: topic(s) {missing} do not exist")


def check_brokers(brokers: list[int], state: ClusterAssignment, source: str) -> None:
    unknown = [b for b in brokers if b not in state.brokers]
    if unknown:
        raise ClusterMismatchError(
            f"{source}: broker(s) {unknown} not in the cluster (brokers: {_ranges(list(state.brokers))})"
        )
