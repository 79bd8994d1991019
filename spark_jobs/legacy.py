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
from znodes.assignment import assign_replicas, random_offsets
from spark_jobs.snapshot import validate


def assign_unaware(n_parts: int, rf: int, brokers: list[int], rng: random.Random, fixed: int = -1) -> list[list[int]]:
    """Kafka's rack-unaware layout (znodes.assignment); ``fixed`` >= 0 plays Kafka's fixedStartIndex."""
    start, shift = random_offsets(len(brokers), rng, fixed)
    layout = assign_replicas(brokers, n_parts, rf, start=start, shift=shift)
    return [layout[p] for p in range(n_parts)]


def assign_aware(n_parts: int, rf: int, rack_of: dict[int, str], rng: random.Random, fixed: int = -1) -> list[list[int]]:
    """Kafka's rack-aware layout over the rack-alternated broker list (znodes.assignment)."""
    start, shift = random_offsets(len(rack_of), rng, fixed)
    layout = assign_replicas(sorted(rack_of), n_parts, rf, start=start, shift=shift, racks=rack_of)
    return [layout[p] for p in range(n_parts)]


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
