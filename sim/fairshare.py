"""Max-min fair sharing of capacity pools among flows (progressive filling). Pure.

Each flow wants up to ``demand`` units and draws on every pool it belongs to; each pool has a
capacity shared by its flows. Progressive filling raises every unfrozen flow at the same pace
and freezes a flow once it has its demand or one of its pools is exhausted. The result is the
max-min fair allocation: no flow can get more without taking from a flow that has no more.

    >>> allocate({"a": 10.0, "b": 1.0}, {"link": (6.0, ["a", "b"])})
    {'a': 5.0, 'b': 1.0}
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

# Leftovers below this many units are rounding noise, not capacity (units are bytes).
EPSILON = 1e-9


def allocate(
    demands: dict[Hashable, float],
    pools: dict[Hashable, tuple[float, Iterable[Hashable]]],
) -> dict[Hashable, float]:
    """Units granted per flow; a flow in no pool gets its whole demand."""
    granted = {flow: 0.0 for flow in demands}
    left = {pool: max(0.0, cap) for pool, (cap, _) in pools.items()}
    members: dict[Hashable, list[Hashable]] = {}
    pools_of: dict[Hashable, list[Hashable]] = {flow: [] for flow in demands}
    for pool, (_, flows) in pools.items():
        members[pool] = [f for f in flows if f in demands]
        for flow in members[pool]:
            pools_of[flow].append(pool)

    active = {f for f, d in demands.items() if d > EPSILON}
    for flow in list(active):
        if any(left[p] <= EPSILON for p in pools_of[flow]):
            active.discard(flow)
    while active:
        counts = {p: sum(1 for f in members[p] if f in active) for p in members}
        step = min(demands[f] - granted[f] for f in active)
        for pool, count in counts.items():
            if count:
                step = min(step, left[pool] / count)
        for flow in active:
            granted[flow] += step
        for pool, count in counts.items():
            left[pool] -= step * count
        for flow in list(active):
            if demands[flow] - granted[flow] <= EPSILON:
                granted[flow] = demands[flow]
                active.discard(flow)
            elif any(left[p] <= EPSILON for p in pools_of[flow]):
                active.discard(flow)
    return granted
