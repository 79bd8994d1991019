"""An independent optimum for tiny clusters, to judge the planner's moves against.

A plain min-cost flow (Bellman-Ford successive shortest paths, written separately from
spark_jobs.exact, with large negative costs standing in for lower bounds) over:

    source -> partition (new RF, mandatory) -> [partition, rack] (rack bounds) -> broker
    (cost 1 unless it held the partition) -> sink (R mandatory, +1 through a slot node of k)

It answers: the fewest replica moves that reach R/R+1 on the target brokers with rack-valid
partitions, or None when no such assignment exists. Only meant for a few dozen replicas.
``keep`` names per partition a broker whose replica must stay (the leader a lower replication
factor keeps): its partition -> broker edge is mandatory.
"""

from __future__ import annotations

BIG = 10_000


class _Flow:
    def __init__(self):
        self.edges: list[list] = []  # [u, v, cap, cost]
        self.adj: dict = {}

    def add(self, u, v, cap, cost):
        if cap <= 0:
            return None
        i = len(self.edges)
        self.edges.append([u, v, cap, cost])
        self.edges.append([v, u, 0, -cost])
        self.adj.setdefault(u, []).append(i)
        self.adj.setdefault(v, []).append(i + 1)
        return i

    def run(self, s, t):
        """Min-cost flow, augmenting while the cheapest path has negative cost."""
        total = 0
        while True:
            dist = {s: 0}
            prev = {}
            changed = True
            nodes = list(self.adj)
            for _ in range(len(nodes)):
                if not changed:
                    break
                changed = False
                for u in nodes:
                    if u not in dist:
                        continue
                    for i in self.adj[u]:
                        _, v, cap, cost = self.edges[i]
                        if cap > 0 and dist[u] + cost < dist.get(v, float("inf")):
                            dist[v] = dist[u] + cost
                            prev[v] = i
                            changed = True
            if t not in dist or dist[t] >= 0:
                return total
            push, v = float("inf"), t
            while v != s:
                i = prev[v]
                push = min(push, self.edges[i][2])
                v = self.edges[i][0]
            v = t
            while v != s:
                i = prev[v]
                self.edges[i][2] -= push
                self.edges[i ^ 1][2] += push
                v = self.edges[i][0]
            total += push * dist[t]


def min_moves(rows: list, new_rf: list, targets: list, rack_of: dict | None, keep: list | None = None):
    """rows: replica lists (broker ids); new_rf per row; targets: broker ids; rack_of: broker ->
    rack (None without racks); keep: per row a broker that must stay in it, or None."""
    keep = keep or [None] * len(rows)

    def assign(u, p, b):
        if b == keep[p]:
            mandatory.append(f.add(u, ("b", b), 1, -BIG))
        else:
            f.add(u, ("b", b), 1, 0 if b in rows[p] else 1)
    n = len(targets)
    total = sum(new_rf)
    low, extra = divmod(total, n)
    racks = sorted({rack_of[b] for b in targets}) if rack_of else []
    k = len(racks)
    f = _Flow()
    mandatory = []
    for p, (row, r) in enumerate(zip(rows, new_rf)):
        mandatory.append(f.add("s", ("p", p), r, -BIG))
        if k:
            lo, hi = r // k, -(-r // k)
            have = {x: sum(1 for b in row if rack_of.get(b) == x) for x in racks}
            old_lo, old_hi = len(row) // k, -(-len(row) // k)
            valid = all(old_lo <= have[x] <= old_hi for x in racks)
            for x in racks:
                # A rack-invalid partition is only capped here (the planner's rule for such
                # partitions is sequential, not a bound per rack), so with any of them this
                # optimum is a bound from below.
                a_lo, a_hi = (lo, hi) if valid else (0, max(have[x], hi))
                mandatory.append(f.add(("p", p), ("px", p, x), a_lo, -BIG))
                f.add(("p", p), ("px", p, x), a_hi - a_lo, 0)
                for b in targets:
                    if rack_of[b] == x:
                        assign(("px", p, x), p, b)
        else:
            for b in targets:
                assign(("p", p), p, b)
    for b in targets:
        mandatory.append(f.add(("b", b), "t", low, -BIG))
        f.add(("b", b), "z", 1, 0)
    f.add("z", "t", extra, 0)
    cost = f.run("s", "t")
    forced = [i for i in mandatory if i is not None]
    if any(f.edges[i][2] != 0 for i in forced):
        return None
    return cost + BIG * sum(f.edges[i ^ 1][2] for i in forced)


def leaders_feasible(rows: list, targets: list) -> bool:
    """Can every target broker be first replica of L or L+1 partitions?"""
    n = len(targets)
    low, extra = divmod(len(rows), n)
    f = _Flow()
    mandatory = []
    for p, row in enumerate(rows):
        mandatory.append(f.add("s", ("p", p), 1, -BIG))
        for b in row:
            f.add(("p", p), ("b", b), 1, 0)
    for b in targets:
        mandatory.append(f.add(("b", b), "t", low, -BIG))
        f.add(("b", b), "z", 1, 0)
    f.add("z", "t", extra, 0)
    f.run("s", "t")
    return all(f.edges[i][2] == 0 for i in mandatory if i is not None)
