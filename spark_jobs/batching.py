"""Waves: a plan cut into batches no broker can be overwhelmed by, with time estimates.

A partition whose replica set changes copies its log from its leader to each added broker.
Within one wave no broker receives more than ``max_in`` of those copies, and no broker loses
more than ``max_out`` replicas. Partitions are taken largest first and each goes to the
first wave with room on all its brokers (first-fit decreasing), so partitions of similar size
end up together. Entries that only reorder or drop replicas copy nothing; they form a last
"metadata" wave.

At a throttle of X bytes/s per broker (Kafka applies the rate to a leader's outgoing and a
follower's incoming replication), a wave lasts as long as its busiest broker needs:
max(bytes in, bytes out) / X. The plan's estimate is the sum over waves; its lower bound is the
busiest broker over the whole plan, whatever the batching.

BATCHES.json::

    {"version": 1, "max_in": 2, "max_out": 2, "throttle_bytes_per_s": 10485760 | null,
     "sizes_known": true, "moves": 12, "bytes": 123456,
     "estimated_seconds": 42.0 | null, "lower_bound_seconds": 30.5 | null,
     "waves": [{"wave": 0, "kind": "data", "moves": 4, "bytes": 4096,
                "smallest_partition_bytes": 1000, "largest_partition_bytes": 1100,
                "busiest_broker_bytes": 2048, "estimated_seconds": 0.2 | null,
                "partitions": [{"topic": "t", "partition": 0, "replicas": [4, 2, 3]}]}]}

Each wave's ``partitions`` is itself a valid Kafka reassignment list:
``{"version": 1, "partitions": wave["partitions"]}`` can be executed on its own.

Usage::

    batches = make_batches(outcome.moves, max_in=2, max_out=2, throttle=10 * 2**20)
"""

from __future__ import annotations

DEFAULT_MAX_IN = 2  # Kafka operators' usual cap: two concurrent copies into a broker
DEFAULT_MAX_OUT = 2


def make_batches(moves: list, *, max_in: int = DEFAULT_MAX_IN, max_out: int = DEFAULT_MAX_OUT, throttle: int | None = None) -> dict:
    if max_in < 1 or max_out < 1:
        raise ValueError("--max-in and --max-out must be at least 1")
    if throttle is not None and throttle <= 0:
        raise ValueError("--throttle must be a positive number of bytes per second")
    data = [m for m in moves if m["adds"] > 0]
    meta = [m for m in moves if m["adds"] == 0]
    data.sort(key=lambda m: (-max(m["size"], 0), m["topic"], m["partition"]))
    waves_in: list[dict] = []
    waves_out: list[dict] = []
    members: list[list] = []
    first_free_in: dict = {}
    first_free_out: dict = {}
    for m in data:
        ins = [b for b in m["new"] if b not in m["old"]]
        outs = [b for b in m["old"] if b not in m["new"]]
        if len(ins) > max_in or len(outs) > max_out:
            # One partition adding more replicas than a wave allows still needs a wave.
            w = len(members)
        else:
            w = max([first_free_in.get(b, 0) for b in ins] + [first_free_out.get(b, 0) for b in outs] + [0])
        while True:
            if w == len(members):
                members.append([])
                waves_in.append({})
                waves_out.append({})
            if all(waves_in[w].get(b, 0) < max_in for b in ins) and all(waves_out[w].get(b, 0) < max_out for b in outs):
                break
            if len(ins) > max_in or len(outs) > max_out:
                if not members[w]:
                    break
            w += 1
        members[w].append(m)
        for b in ins:
            waves_in[w][b] = waves_in[w].get(b, 0) + 1
            if waves_in[w][b] >= max_in:
                f = first_free_in.get(b, 0)
                while f < len(members) and waves_in[f].get(b, 0) >= max_in:
                    f += 1
                first_free_in[b] = f
        for b in outs:
            waves_out[w][b] = waves_out[w].get(b, 0) + 1
            if waves_out[w][b] >= max_out:
                f = first_free_out.get(b, 0)
                while f < len(members) and waves_out[f].get(b, 0) >= max_out:
                    f += 1
                first_free_out[b] = f

    sizes_known = all(m["size"] >= 0 for m in data)
    total_in: dict = {}
    total_out: dict = {}
    waves = []
    est_total = 0.0
    for i, ms in enumerate(members):
        b_in: dict = {}
        b_out: dict = {}
        for m in ms:
            size = max(m["size"], 0)
            src = m.get("leader", m["old"][0])
            for b in m["new"]:
                if b not in m["old"]:
                    b_in[b] = b_in.get(b, 0) + size
                    b_out[src] = b_out.get(src, 0) + size
        for d, tot in ((b_in, total_in), (b_out, total_out)):
            for b, v in d.items():
                tot[b] = tot.get(b, 0) + v
        busiest = max(list(b_in.values()) + list(b_out.values()) + [0])
        secs = None if throttle is None else busiest / throttle
        if secs is not None:
            est_total += secs
        sizes = [max(m["size"], 0) for m in ms]
        waves.append(
            {
                "wave": i,
                "kind": "data",
                "moves": sum(m["adds"] for m in ms),
                "bytes": sum(m["bytes"] for m in ms),
                "smallest_partition_bytes": min(sizes),
                "largest_partition_bytes": max(sizes),
                "busiest_broker_bytes": busiest,
                "estimated_seconds": secs,
                "partitions": [_entry(m) for m in sorted(ms, key=lambda m: (m["topic"], m["partition"]))],
            }
        )
    if meta:
        waves.append(
            {
                "wave": len(waves),
                "kind": "metadata",
                "moves": 0,
                "bytes": 0,
                "smallest_partition_bytes": 0,
                "largest_partition_bytes": 0,
                "busiest_broker_bytes": 0,
                "estimated_seconds": None if throttle is None else 0.0,
                "partitions": [_entry(m) for m in sorted(meta, key=lambda m: (m["topic"], m["partition"]))],
            }
        )
    busiest_total = max(list(total_in.values()) + list(total_out.values()) + [0])
    return {
        "version": 1,
        "max_in": max_in,
        "max_out": max_out,
        "throttle_bytes_per_s": throttle,
        "sizes_known": sizes_known,
        "moves": sum(m["adds"] for m in data),
        "bytes": sum(m["bytes"] for m in data),
        "estimated_seconds": None if throttle is None else est_total,
        "lower_bound_seconds": None if throttle is None else busiest_total / throttle,
        "waves": waves,
    }


def _entry(m: dict) -> dict:
    return {"topic": m["topic"], "partition": m["partition"], "replicas": m["new"]}
