"""Automatic replica placement for new partitions (CreateTopics, CreatePartitions): the
planner's objectives (docs/DESIGN.md section 6) for partitions that do not exist yet. Pure.

The controller image has no Spark or numpy, so this does not import ``spark_jobs``; it keeps
the same rules for the one case it covers (adding replicas, never moving any):

 1. Rack-aware. With K racks among the live brokers, each new partition's replicas go to the
    racks holding the fewest of its replicas so far, so every rack holds floor(r/K) or
    ceil(r/K) of them (the planner's rack-valid partition, spark_jobs.racks). Without racks on
    every broker, racks are ignored (Kafka refuses a mixed cluster; the planner ignores it).
 2. Counts. Each replica goes to an allowed broker with the fewest replicas in the whole
    cluster (what it hosts now, plus what this placement gave it), then the fewest of this
    topic, then the fewest preferred leaders, then the lowest id. Starting from a cluster whose
    brokers hold R or R+1 replicas, every broker still holds R' or R'+1 after the placement
    (R' from the new total): the fill always raises a least-loaded broker.
 3. Leaders. Within a partition's chosen brokers, the one with the fewest preferred leaders
    (then the fewest replicas, then the lowest id) goes first: the preferred leader.
 4. Deterministic: same brokers, counts and request, same placement.

    place(brokers={1: "a", 2: "a", 3: "b", 4: "b"}, partitions=2, replication_factor=2,
          replica_counts={1: 5, 2: 4, 3: 4, 4: 4}, leader_counts={})
    # -> [(2, 3), (4, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping


class PlacementError(ValueError):
    """The request cannot be placed (more replicas than live brokers)."""


def place(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    replica_counts: Mapping[int, int],
    leader_counts: Mapping[int, int],
) -> list[tuple[int, ...]]:
    """Replicas (preferred leader first) for ``partitions`` new partitions; see the module
    docstring. ``replica_counts``/``leader_counts``: what each broker hosts / leads now."""
    ids = sorted(brokers)
    if replication_factor > len(ids):
        raise PlacementError(f"replication factor {replication_factor} larger than available brokers: {len(ids)}")
    racked = all(brokers[b] is not None for b in ids)
    rack_of = {b: brokers[b] if racked else None for b in ids}
    counts = {b: replica_counts.get(b, 0) for b in ids}
    leaders = {b: leader_counts.get(b, 0) for b in ids}
    topic = dict.fromkeys(ids, 0)
    out: list[tuple[int, ...]] = []
    for _ in range(partitions):
        chosen: list[int] = []
        in_rack: dict[str | None, int] = {}
        for _ in range(replication_factor):
            free = [b for b in ids if b not in chosen]
            if racked:
                # Step 1: only racks holding the fewest of this partition's replicas so far
                # (among racks with a broker still free).
                low = min(in_rack.get(rack_of[b], 0) for b in free)
                free = [b for b in free if in_rack.get(rack_of[b], 0) == low]
            best = min(free, key=lambda b: (counts[b], topic[b], leaders[b], b))  # step 2
            chosen.append(best)
            in_rack[rack_of[best]] = in_rack.get(rack_of[best], 0) + 1
            counts[best] += 1
            topic[best] += 1
        first = min(chosen, key=lambda b: (leaders[b], counts[b], b))  # step 3
        leaders[first] += 1
        out.append((first, *(b for b in chosen if b != first)))
    _even_leaders(out, leaders)
    return out


def _even_leaders(out: list[tuple[int, ...]], leaders: dict[int, int]) -> None:
    """Step 3, second pass: replica sets (hence counts) stay; preferred leaders shift along a
    chain of new partitions - A leads one holding B, B leads one holding C, ... - from a broker
    with the most leaders to one with at least two fewer (each hop's broker keeps its count,
    the ends narrow the spread, so this ends)."""
    while True:
        top = max(leaders[b] for rs in out for b in rs) if out else 0
        led: dict[int, list[int]] = {}
        for i, rs in enumerate(out):
            led.setdefault(rs[0], []).append(i)
        # Breadth first from every broker at the top, over "leads a partition holding".
        starts = sorted(b for b in led if leaders[b] == top)
        via: dict[int, tuple[int, int] | None] = {b: None for b in starts}
        queue, end = list(starts), None
        for b in queue:
            for i in led.get(b, ()):
                for c in sorted(out[i][1:]):
                    if c in via:
                        continue
                    via[c] = (b, i)
                    if leaders[c] + 2 <= top:
                        end = c
                        break
                    queue.append(c)
                if end is not None:
                    break
            if end is not None:
                break
        if end is None:
            return
        leaders[end] += 1
        c = end
        while via[c] is not None:
            b, i = via[c]
            out[i] = (c, *(x for x in out[i] if x != c))
            c = b
        leaders[c] -= 1


def cluster_counts(assignments) -> tuple[dict[int, int], dict[int, int]]:
    """(replicas per broker, preferred leaders per broker) of ``assignments``: an iterable of
    replica tuples, preferred leader first."""
    replicas: dict[int, int] = {}
    leaders: dict[int, int] = {}
    for rs in assignments:
        for b in rs:
            replicas[b] = replicas.get(b, 0) + 1
        if rs:
            leaders[rs[0]] = leaders.get(rs[0], 0) + 1
    return replicas, leaders
