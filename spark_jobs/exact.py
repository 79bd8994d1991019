"""An exact solver for small clusters: minimum replica moves by min-cost flow.

The greedy planner reaches the lower bound whenever direct moves from brokers above target to
brokers below it exist; in corner cases (tight racks, a drained broker whose partitions every
receiver already holds, ...) only a cleverer pairing or a chain reaches the optimum. For
clusters small enough, this module finds the true minimum and the planner keeps whichever
result is fairer, then cheaper.

Network: partition p supplies its replication factor; p -> (p, rack) carries the partition's
replicas in that rack within the rack rule's bounds; (p, rack) -> broker b has capacity 1 and
costs 1 unless b held p already; every target broker absorbs R, and up to one more through a
shared slot node that absorbs k = N mod |brokers|. Starting from the current assignment (all
costs non-negative, so it is optimal for its own imbalances) successive shortest paths with
Dijkstra and potentials settle the imbalances at minimum cost.

Usage::

    rows = solve(rows, new_rf, target_mask, rule)   # None when no fair assignment exists
"""

from __future__ import annotations

import heapq

import numpy as np

from spark_jobs.racks import RackRule

# The solver runs when (edges x units to route) stays under this: a few seconds of Python.
MAX_WORK = 30_000_000


class _Graph:
    def __init__(self, n: int):
        self.n = n
        self.head: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []
        self.cost: list[int] = []

    def add(self, u: int, v: int, cap: int, cost: int, flow: int = 0) -> int:
        e = len(self.to)
        self.to += [v, u]
        self.cap += [cap - flow, flow]
        self.cost += [cost, -cost]
        self.head[u].append(e)
        self.head[v].append(e + 1)
        return e

    @property
    def n_edges(self) -> int:
        return len(self.to) // 2


def estimate_work(rows: np.ndarray, target: np.ndarray, units: int) -> int:
    return int(len(rows) * int(target.sum()) * max(units, 1))


def solve(rows: np.ndarray, new_rf: np.ndarray, target: np.ndarray, rule: RackRule) -> np.ndarray | None:
    """Rows (P x W') with minimum moves from ``rows`` reaching R/R+1 on the targets and the
    rack rule, or None when no such assignment exists."""
    n_parts = len(rows)
    tb = [int(b) for b in np.nonzero(target)[0]]
    n_t = len(tb)
    total = int(new_rf.sum())
    low, slots = divmod(total, n_t)
    k = rule.k
    bnode = {b: i for i, b in enumerate(tb)}
    # Node numbering: partitions, then (partition, rack), then brokers, then the slot node.
    base_rack = n_parts
    base_b = base_rack + n_parts * k
    z = base_b + n_t
    g = _Graph(z + 1)
    imbalance = [0] * (z + 1)
    assign_edges: list[list[tuple[int, int]]] = [[] for _ in range(n_parts)]
    rows_l = rows.tolist()
    for p in range(n_parts):
        held = {b for b in rows_l[p] if b >= 0}
        r = int(new_rf[p])
        imbalance[p] += r
        if k:
            lo, hi = rule.bounds(r)
            counts = rule.counts([b for b in held if rule.is_target[b]])
            # Valid partitions stay valid (for the new replication factor); invalid ones may
            # keep their shape but never narrow.
            valid = rule.is_valid(list(held))
            spread = sum(1 for c in rule.counts(list(held)) if c)
            for x in range(k):
                f = counts[x]
                # An invalid partition keeps a replica in every rack it spans (unless it
                # shrinks below that many replicas), so its spread never narrows.
                floor = max(lo, 1) if spread <= r else lo
                a_lo, a_hi = (lo, hi) if valid else (min(f, floor), max(f, hi))
                node = base_rack + p * k + x
                # The edge carries the flow above the lower bound a_lo; the clipped start
                # leaves imbalances that the shortest paths then settle.
                clipped = min(max(f, a_lo), a_hi)
                g.add(p, node, a_hi - a_lo, 0, clipped - a_lo)
                imbalance[p] -= clipped
                imbalance[node] += clipped - f
                no_new = (not valid) and f >= hi  # an over-full rack of an invalid partition takes nothing new
                for b in tb:
                    if rule.rack_of[b] != x:
                        continue
                    if b in held:
                        assign_edges[p].append((g.add(node, base_b + bnode[b], 1, 0, 1), b))
                    elif not no_new:
                        assign_edges[p].append((g.add(node, base_b + bnode[b], 1, 1, 0), b))
        else:
            for b in tb:
                flow = 1 if b in held else 0
                assign_edges[p].append((g.add(p, base_b + bnode[b], 1, 0 if b in held else 1, flow), b))
                imbalance[p] -= flow
    counts = [0] * n_t
    for p in range(n_parts):
        for b in rows_l[p]:
            if b >= 0 and b in bnode:
                counts[bnode[b]] += 1
    order = sorted(range(n_t), key=lambda i: (-counts[i], tb[i]))
    z_used = set(i for i in order if counts[i] > low)
    z_used = set(sorted(z_used, key=lambda i: (-counts[i], tb[i]))[:slots])
    for i in range(n_t):
        used = 1 if i in z_used else 0
        g.add(base_b + i, z, 1, 0, used)
        imbalance[base_b + i] += counts[i] - low - used
    imbalance[z] += len(z_used) - slots
    # Super source and sink.
    s, t = g.n, g.n + 1
    g.n += 2
    g.head += [[], []]
    need = 0
    for v in range(z + 1):
        if imbalance[v] > 0:
            g.add(s, v, imbalance[v], 0)
            need += imbalance[v]
        elif imbalance[v] < 0:
            g.add(v, t, -imbalance[v], 0)
    pot = [0] * g.n
    sent = 0
    to, cap, cost, head = g.to, g.cap, g.cost, g.head
    inf = float("inf")
    while sent < need:
        dist = [inf] * g.n
        prev = [-1] * g.n
        dist[s] = 0
        heap = [(0, s)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            pu = pot[u]
            for e in head[u]:
                if cap[e] > 0:
                    v = to[e]
                    nd = d + cost[e] + pu - pot[v]
                    if nd < dist[v]:
                        dist[v] = nd
                        prev[v] = e
                        heapq.heappush(heap, (nd, v))
        if dist[t] == inf:
            return None
        for v in range(g.n):
            if dist[v] < inf:
                pot[v] += dist[v]
        push = need - sent
        v = t
        while v != s:
            e = prev[v]
            push = min(push, cap[e])
            v = to[e ^ 1]
        v = t
        while v != s:
            e = prev[v]
            cap[e] -= push
            cap[e ^ 1] += push
            v = to[e ^ 1]
        sent += push
    width = max(rows.shape[1], int(new_rf.max()) if n_parts else 1)
    out = np.full((n_parts, width), -1, dtype=np.int32)
    for p in range(n_parts):
        chosen = {b for e, b in assign_edges[p] if cap[e ^ 1] > 0}
        old = [b for b in rows_l[p] if b >= 0]
        added = sorted(chosen - set(old))
        new_row = []
        for b in old:
            if b in chosen:
                new_row.append(b)
            elif added:
                new_row.append(added.pop(0))
        new_row += added
        out[p, : len(new_row)] = new_row
    return out
