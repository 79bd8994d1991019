"""Kafka's old ``--generate`` algorithm, kept for ``kafka-reassign --generate`` (KIP-6 keeps it).

It ignores the current assignment: each topic is laid out from scratch round-robin over the
broker list, from a random start index, with followers shifted by a random amount that grows
by one every time the partitions wrap around the brokers (Kafka's
``AdminUtils.assignReplicasToBrokers``). When brokers have racks, the broker list is first
arranged to alternate racks and followers skip brokers whose rack (or broker) already holds
a replica while others do not. A seed makes the random choices repeatable.

Usage::

    from spark_jobs import legacy_generate
    plan = legacy_generate(snapshot, ["orders"], [1, 2, 3, 4], seed=7)
    # {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 4, 1]}, ...]}
"""

from __future__ import annotations

import random

from spark_jobs.errors import PlanError
from spark_jobs.snapshot import validate


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(rack_of: dict[int, str]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(rack_of):
        by_rack.setdefault(rack_of[b], []).append(b)
    racks = sorted(by_rack)
    iters = {r: iter(by_rack[r]) for r in racks}
    out: list[int] = []
    i = 0
    while len(out) < len(rack_of):
        b = next(iters[racks[i]], None)
        if b is not None:
            out.append(b)
        i = (i + 1) % len(racks)
    return out


def assign_unaware(n_parts: int, rf: int, brokers: list[int], rng: random.Random, fixed: int = -1) -> list[list[int]]:
    """Kafka's rack-unaware layout; ``fixed`` >= 0 plays Kafka's fixedStartIndex."""
    n = len(brokers)
    start = fixed if fixed >= 0 else rng.randrange(n)
    shift = fixed if fixed >= 0 else rng.randrange(n)
    out = []
    for p in range(n_parts):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        reps = [brokers[first]]
        for j in range(rf - 1):
            reps.append(brokers[_replica_index(first, shift, j, n)])
        out.append(reps)
    return out


def assign_aware(n_parts: int, rf: int, rack_of: dict[int, str], rng: random.Random, fixed: int = -1) -> list[list[int]]:
    """Kafka's rack-aware layout over the rack-alternated broker list."""
    arranged = _rack_alternated(rack_of)
    n = len(arranged)
    n_racks = len(set(rack_of.values()))
    start = fixed if fixed >= 0 else rng.randrange(n)
    shift = fixed if fixed >= 0 else rng.randrange(n)
    out = []
    for p in range(n_parts):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        reps = [leader]
        racks_used = {rack_of[leader]}
        used = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                b = arranged[_replica_index(first, shift * n_racks, k, n)]
                k += 1
                rack = rack_of[b]
                if (rack not in racks_used or len(racks_used) == n_racks) and (b not in used or len(used) == n):
                    reps.append(b)
                    racks_used.add(rack)
                    used.add(b)
                    break
        out.append(reps)
    return out


def legacy_generate(snapshot: dict, topics: list[str], broker_ids: list[int], *, seed: int = 0, rack_aware: bool = True) -> dict:
    """Kafka's ``--generate`` proposal for ``topics`` over ``broker_ids``, in Kafka's
    reassignment JSON. Every partition of the topics is listed, changed or not."""
    snap = validate(snapshot)
    brokers = {b["id"]: b for b in snap["brokers"]}
    ids = sorted(dict.fromkeys(broker_ids))
    if not ids:
        raise PlanError("--broker-list is empty")
    unknown = [b for b in ids if b not in brokers]
    if unknown:
        raise PlanError(f"brokers {unknown} are not in the snapshot")
    by_name = {t["name"]: t for t in snap["topics"]}
    missing = [t for t in topics if t not in by_name]
    if missing:
        raise PlanError(f"topics not in the snapshot: {', '.join(missing)}")
    racks = {b: brokers[b]["rack"] for b in ids}
    with_rack = [b for b in ids if racks[b] is not None]
    if rack_aware and with_rack and len(with_rack) != len(ids):
        raise PlanError(
            f"not all brokers have rack information (brokers {[b for b in ids if racks[b] is None]} have none); "
            "use rack_aware=False to ignore racks"
        )
    use_racks = rack_aware and bool(with_rack)
    rng = random.Random(seed)
    out = []
    for name in dict.fromkeys(topics):
        parts = by_name[name]["partitions"]
        if not parts:
            continue
        rf = len(parts[0]["replicas"])
        if rf > len(ids):
            raise PlanError(f"topic {name}: replication factor {rf} larger than {len(ids)} available brokers")
        if use_racks:
            layout = assign_aware(len(parts), rf, racks, rng)
        else:
            layout = assign_unaware(len(parts), rf, ids, rng)
        for p, reps in zip(parts, layout):
            out.append({"topic": name, "partition": p["partition"], "replicas": reps})
    return {"version": 1, "partitions": out}
