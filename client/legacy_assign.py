"""Kafka's old ``--generate`` algorithm (AdminUtils.assignReplicasToBrokers), kept for
compatibility as KIP-6 asks. Pure.

It lays every topic out from scratch over the given brokers, ignoring where replicas are now
(that is what ``--rebalance`` fixes). Rack-unaware: replica 0 of partition p goes on broker
``(p + start) % n`` and the followers follow at a shift that grows every n partitions.
Rack-aware (every broker has a rack): brokers are interleaved rack by rack and a follower skips
racks and brokers that already hold a replica while others have none.

Kafka picks ``start`` and the initial shift at random per topic; here they come from a CRC32
of the topic name, so the output spreads leaders like Kafka's but is the same on every run.

Usage::

    generate({"orders": {0: [1, 2], 1: [2, 3]}}, brokers=[1, 2, 3, 4], racks={})
    # -> {("orders", 0): [...], ("orders", 1): [...]}
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from client.errors import InputError


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(brokers: list[int], racks: Mapping[int, str]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers):
        by_rack.setdefault(racks[b], []).append(b)
    names = sorted(by_rack)
    iters = {r: iter(by_rack[r]) for r in names}
    out: list[int] = []
    i = 0
    while len(out) < len(brokers):
        nxt = next(iters[names[i]], None)
        if nxt is not None:
            out.append(nxt)
        i = (i + 1) % len(names)
    return out


def assign_replicas(
    n_partitions: int,
    replication_factor: int,
    brokers: list[int],
    racks: Mapping[int, str] | None = None,
    start_index: int = 0,
    start_shift: int = 0,
) -> dict[int, list[int]]:
    """Kafka's assignReplicasToBrokers with a fixed start index and shift."""
    racks = dict(racks or {})
    if n_partitions <= 0:
        raise InputError("number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise InputError("replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise InputError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} available brokers",
            "--broker-list",
        )
    with_rack = [b for b in brokers if b in racks]
    if with_rack and len(with_rack) != len(brokers):
        missing = sorted(set(brokers) - set(with_rack))
        raise InputError(
            f"not all brokers have rack information (no rack: {missing}); "
            "use --disable-rack-aware to ignore racks",
            "--broker-list",
        )
    out: dict[int, list[int]] = {}
    if not with_rack:
        arranged = list(brokers)
        n = len(arranged)
        shift = start_shift
        for p in range(n_partitions):
            if p > 0 and p % n == 0:
                shift += 1
            first = (p + start_index) % n
            replicas = [arranged[first]]
            for j in range(replication_factor - 1):
                replicas.append(arranged[_replica_index(first, shift, j, n)])
            out[p] = replicas
        return out

    arranged = _rack_alternated(brokers, racks)
    n = len(arranged)
    n_racks = len(set(racks[b] for b in arranged))
    shift = start_shift
    for p in range(n_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                b = arranged[_replica_index(first, shift * n_racks, k, n)]
                k += 1
                rack = racks[b]
                if (rack not in racks_used or len(racks_used) == n_racks) and (
                    b not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(b)
                    racks_used.add(rack)
                    brokers_used.add(b)
                    break
        out[p] = replicas
    return out


def topic_seed(topic: str, n_brokers: int) -> int:
    """Stable stand-in for Kafka's random start index: CRC32 of the name, mod n."""
    return zlib.crc32(topic.encode("utf-8")) % n_brokers


def generate(
    current: Mapping[str, Mapping[int, list[int]]],
    brokers: list[int],
    racks: Mapping[int, str] | None = None,
) -> dict[tuple[str, int], list[int]]:
    """Proposed assignment of every partition of every topic in ``current``.

    ``current`` maps topic -> partition -> replicas (only the count of partitions and the
    replication factor of partition 0's list are used, as in Kafka).
    """
    if not brokers:
        raise InputError("no brokers to assign to", "--broker-list")
    proposed: dict[tuple[str, int], list[int]] = {}
    for topic in sorted(current):
        parts = current[topic]
        if not parts:
            continue
        rf = len(parts[min(parts)])
        seed = topic_seed(topic, len(brokers))
        layout = assign_replicas(len(parts), rf, sorted(brokers), racks, seed, seed)
        for i, p in enumerate(sorted(parts)):
            proposed[(topic, p)] = layout[i]
    return proposed
