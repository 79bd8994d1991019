"""Kafka's replica assignment for new topics (AdminUtils), rack-unaware and rack-aware. Pure.

Rack-unaware: partition p's first replica is broker ``(p + start) % n`` of the sorted broker
list; further replicas follow at a shift that grows by one every ``n`` partitions, so
leaders and followers spread round-robin. Rack-aware (every broker has a rack): the same walk
over a broker list that alternates racks, skipping a broker whose rack (or itself) already
holds a replica while some rack (or broker) holds none. ``start`` and ``shift`` are random in
Kafka; here the caller passes them (seeded) so a simulation or a plan is reproducible.

The one copy of this algorithm: the simulated brokers' auto-creation (sim.topics) and the
planner's ``--generate`` (spark_jobs.legacy, with ``random_offsets``) both call it.

    >>> assign_replicas([1, 2, 3], partitions=3, replication_factor=2, start=0, shift=0)
    {0: [1, 2], 1: [2, 3], 2: [3, 1]}
"""

from __future__ import annotations

import random


class AssignmentError(ValueError):
    """The topic cannot be placed on these brokers."""


def random_offsets(n_brokers: int, rng: random.Random, fixed: int = -1) -> tuple[int, int]:
    """Kafka's ``(startIndex, nextReplicaShift)``: random in [0, n) unless ``fixed`` >= 0
    (Kafka's fixedStartIndex, which sets both)."""
    if fixed >= 0:
        return fixed, fixed
    start = rng.randrange(n_brokers)
    return start, rng.randrange(n_brokers)


def assign_replicas(
    brokers: list[int],
    partitions: int,
    replication_factor: int,
    *,
    start: int,
    shift: int,
    racks: dict[int, str] | None = None,
) -> dict[int, list[int]]:
    """Partition -> replicas (first = preferred leader)."""
    if partitions <= 0:
        raise AssignmentError(f"number of partitions must be larger than 0, got {partitions}")
    if replication_factor <= 0:
        raise AssignmentError(f"replication factor must be larger than 0, got {replication_factor}")
    if replication_factor > len(brokers):
        raise AssignmentError(
            f"replication factor {replication_factor} larger than available brokers {len(brokers)}"
        )
    if racks:
        missing = [b for b in brokers if b not in racks]
        if missing:
            raise AssignmentError(f"brokers {missing} have no rack while others do")
        return _rack_aware(racks, partitions, replication_factor, start, shift)
    return _rack_unaware(sorted(brokers), partitions, replication_factor, start, shift)


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_unaware(brokers: list[int], partitions: int, rf: int, start: int, shift: int) -> dict[int, list[int]]:
    n = len(brokers)
    start %= n
    out = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        out[p] = [brokers[first]] + [brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
    return out


def rack_alternated(racks: dict[int, str]) -> list[int]:
    """Brokers in rack order r0, r1, .., r0, r1, ..; within a rack by id."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    names = sorted(by_rack)
    out: list[int] = []
    position = {name: 0 for name in names}
    i = 0
    while len(out) < len(racks):
        name = names[i % len(names)]
        if position[name] < len(by_rack[name]):
            out.append(by_rack[name][position[name]])
            position[name] += 1
        i += 1
    return out


def _rack_aware(racks: dict[int, str], partitions: int, rf: int, start: int, shift: int) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n = len(arranged)
    num_racks = len(set(racks.values()))
    start %= n
    out = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        chosen = [leader]
        racks_used = {racks[leader]}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                rack = racks[broker]
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in chosen or len(chosen) == n
                ):
                    chosen.append(broker)
                    racks_used.add(rack)
                    break
        out[p] = chosen
    return out
