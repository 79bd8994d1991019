"""Hypothesis strategies: small clusters, with or without racks, skewed or even, and requests."""

from __future__ import annotations

from hypothesis import strategies as st


def _rack_valid_row(rng, rf: int, members: dict) -> list | None:
    """A replica list spread like a rack-aware assignment (floor/ceil of rf over racks)."""
    racks = sorted(members)
    k = len(racks)
    lo, extra = divmod(rf, k)
    heavy = set(rng.sample(racks, extra))
    row = []
    for x in racks:
        want = lo + (1 if x in heavy else 0)
        if want > len(members[x]):
            return None
        row += rng.sample(members[x], want)
    rng.shuffle(row)
    return row


@st.composite
def clusters(draw, racks: bool = False, rack_valid: bool = True, min_brokers: int = 2):
    """A validated-shape snapshot dict and its rack map (None without racks)."""
    rng = draw(st.randoms(use_true_random=False))
    n = draw(st.integers(min_brokers, 7))
    rack_of = None
    if racks:
        k = draw(st.integers(2, min(3, n)))
        even = draw(st.booleans())
        names = [f"r{i}" for i in range(k)]
        if even:
            rack_of = {b: names[b % k] for b in range(n)}
        else:
            rack_of = {b: names[b % k] if b < k else rng.choice(names) for b in range(n)}
    brokers = [{"id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": rack_of[b] if rack_of else None} for b in range(n)]
    skew = draw(st.booleans())
    pool = list(range(n))
    if skew:
        pool = pool[: max(1, draw(st.integers(1, n)))]
    members: dict = {}
    if rack_of:
        for b in range(n):
            members.setdefault(rack_of[b], []).append(b)
    topics = []
    for t in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(3, n)))
        parts = []
        for p in range(draw(st.integers(1, 6))):
            row = None
            if rack_of and rack_valid:
                row = _rack_valid_row(rng, rf, members)
            if row is None:
                src = pool if len(pool) >= rf else list(range(n))
                row = rng.sample(src, rf)
            sizes = [draw(st.integers(0, 10**9))] * len(row) if draw(st.booleans()) else None
            parts.append({"partition": p, "replicas": row, "leader": row[0], "sizes": sizes})
        topics.append({"name": f"topic-{t}", "partitions": parts})
    return {"version": 1, "brokers": brokers, "topics": topics}, rack_of


@st.composite
def requests(draw, snap: dict, rack_of):
    """A plan request that is possible for ``snap``: (mode, kwargs)."""
    n = len(snap["brokers"])
    max_rf = max(len(p["replicas"]) for t in snap["topics"] for p in t["partitions"])
    modes = ["rebalance", "replication-factor"]
    if n - 1 >= max_rf:
        modes.append("decommission")
    if rack_of is None:
        modes.append("add-brokers")
    mode = draw(st.sampled_from(modes))
    if mode == "decommission":
        return mode, {"brokers": [draw(st.integers(0, n - 1))]}
    if mode == "add-brokers":
        return mode, {"brokers": list(range(100, 100 + draw(st.integers(1, 2))))}
    if mode == "replication-factor":
        return mode, {"replication_factor": draw(st.integers(1, min(3, n)))}
    return mode, {}
