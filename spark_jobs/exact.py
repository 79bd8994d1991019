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
Dijkstra and potentials settle the imbalances at minimum cost. A partition whose replication
factor goes down keeps its current leader (``keep``, spark_jobs.core): that replica's edge
starts full and has no residual arc back, so the optimum is over plans that keep it.

A partition that already breaks the rack rule (keeping its replication factor) cannot be held
to per-rack bounds alone: each of its moves must go to a rack holding the fewest of its other
replicas, so what it may end with depends on the order of its moves ([3, 1, 0] can end [2, 1, 1]
but not [2, 2, 0]), and whether a rack may take a new broker depends on where the others end
([2, 1, 0] may swap a broker in the first rack only when it ends [1, 1, 1]). ``_reach`` walks the
rule's own moves (RackRule.allowed_racks, on stand-in rows) to list every (per-rack count, new
brokers per rack) such a partition can end with. The flow gets its hull (each rack's fewest and
most replicas, and most new brokers); a solution whose partition lands outside what the walk
reached is split on that partition into exact pieces (one rack-count vector each, or a box of
them all reachable), best lower bound first, so the result is the true minimum over plans the
rule allows, or the best found within a budget of flow solves.

Usage::

    rows = solve(rows, new_rf, target_mask, rule)   # None when no fair assignment exists
"""

from __future__ import annotations

import heapq
import itertools

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

    def fix(self, e: int) -> None:
        """The flow edge ``e`` carries now can never be sent back (a lower bound equal to it)."""
        self.cap[e ^ 1] = 0

    @property
    def n_edges(self) -> int:
        return len(self.to) // 2


def estimate_work(rows: np.ndarray, target: np.ndarray, units: int) -> int:
    return int(len(rows) * int(target.sum()) * max(units, 1))


# Flow solves one call may spend splitting rack-breaking partitions, and the work they may add
# up to (edges x units, as MAX_WORK): past either, the best rule-abiding solution found is kept.
MAX_SOLVES = 200
MAX_SPLIT_WORK = 3 * MAX_WORK


def solve(rows: np.ndarray, new_rf: np.ndarray, target: np.ndarray, rule: RackRule,
          keep: np.ndarray | None = None) -> np.ndarray | None:
    """Rows (P x W') with minimum moves from ``rows`` reaching R/R+1 on the targets and the
    rack rule, or None when no such assignment exists (or none was found within the budget).
    ``keep`` gives per row a target broker of it that must stay in it (-1: none): the leader a
    lower replication factor keeps (spark_jobs.core)."""
    keep = np.full(len(rows), -1, dtype=np.int64) if keep is None else keep
    reach = _breaking(rows, new_rf, target, rule)
    if not reach:
        return _flow(rows, new_rf, target, rule, {}, keep)[0]
    if any(not states for states, _ in reach.values()):
        return None  # a partition the rule lets reach no placement on the targets at all
    hull = {p: _hull(states) for p, (states, _) in reach.items()}
    rows_l = rows.tolist()
    # Best first on the flow's cost (a lower bound for every piece of its split); among equal
    # bounds the most settled first, so a tie dives to a solution instead of widening.
    heap: list = [(0, 0, 0, {})]
    seq = 1
    best, best_cost = None, None
    solves = work = 0
    while heap and solves < MAX_SOLVES and work < MAX_SPLIT_WORK:
        bound, _, _, fixed = heapq.heappop(heap)
        if best is not None and bound >= best_cost:
            break
        out, w = _flow(rows, new_rf, target, rule, {**hull, **fixed}, keep)
        solves += 1
        work += w
        if out is None:
            continue
        cost = sum(len(set(b for b in new if b >= 0) - set(old)) for new, old in zip(out.tolist(), rows_l))
        if best is not None and cost >= best_cost:
            continue
        wrong = next((p for p in sorted(reach) if _state(rule, rows_l[p], out[p].tolist()) not in reach[p][0]), None)
        if wrong is None:
            best, best_cost = out, cost
            continue
        c_now, _ = _state(rule, rows_l[wrong], out[wrong].tolist())
        # The pieces nearest the flow's choice first: the rest of the solution likely still fits.
        near = sorted(reach[wrong][1], key=lambda box: sum(max(lo - v, 0, v - hi) for v, (lo, hi, _, _) in zip(c_now, box)))
        for piece in near:
            heapq.heappush(heap, (cost, -len(fixed) - 1, seq, {**fixed, wrong: piece}))
            seq += 1
    return best


def _breaking(rows: np.ndarray, new_rf: np.ndarray, target: np.ndarray, rule: RackRule) -> dict:
    """For each partition that breaks the rack rule and keeps its replication factor: (the
    states it can reach, its split into exact boxes). Valid partitions are left to the bounds."""
    if not rule.k:
        return {}
    tb = [int(b) for b in np.nonzero(target)[0]]
    memo: dict = {}
    out = {}
    for p, row in enumerate(rows.tolist()):
        held = [b for b in row if b >= 0]
        if len(held) != int(new_rf[p]) or rule.is_valid(held):
            continue
        ot, od, fresh = _split(rule, held, tb)
        key = (tuple(len(x) for x in ot), tuple(len(x) for x in od))
        if key not in memo:
            states = _reach(rule, ot, od, fresh)
            memo[key] = (states, _pieces(states, [len(x) for x in ot], [len(x) for x in fresh], len(held)))
        out[p] = memo[key]
    return out


def _split(rule: RackRule, held: list, tb: list):
    """Per rack: the partition's brokers that are targets, those that are not (one more list for
    brokers without a target rack), and the targets it does not hold."""
    k = rule.k
    ot: list = [[] for _ in range(k)]
    od: list = [[] for _ in range(k + 1)]
    for b in held:
        x = rule.rack_of[b]
        if x >= 0 and rule.is_target[b]:
            ot[x].append(b)
        else:
            od[x if x >= 0 else k].append(b)
    fresh: list = [[] for _ in range(k)]
    for b in tb:
        if b not in held and rule.rack_of[b] >= 0:
            fresh[rule.rack_of[b]].append(b)
    return ot, od, fresh


def _reach(rule: RackRule, ot: list, od: list, fresh: list) -> frozenset:
    """Every (per-rack count, per-rack new brokers) the partition can end with by moving each
    replica that leaves straight to its new broker, one at a time, each move one RackRule allows.
    Brokers of a rack are alike to the rule, so a state is how many of each kind a rack keeps."""
    k = rule.k
    start = (tuple(len(x) for x in ot), tuple(len(x) for x in od), (0,) * k)
    seen = {start}
    stack = [start]
    finals = set()
    while stack:
        kt, kd, nw = stack.pop()
        if not any(kd):  # replicas on brokers that are not targets must all leave
            finals.add((tuple(kt[x] + nw[x] for x in range(k)), nw))
        row = [b for x in range(k) for b in ot[x][: kt[x]] + fresh[x][: nw[x]]]
        row += [b for x in range(k + 1) for b in od[x][: kd[x]]]
        leaving = [(0, x, ot[x][kt[x] - 1]) for x in range(k) if kt[x]]
        leaving += [(1, x, od[x][kd[x] - 1]) for x in range(k + 1) if kd[x]]
        for kind, x, src in leaving:
            for y in rule.allowed_racks(row, src):
                if nw[y] >= len(fresh[y]):
                    continue
                kt2, kd2, nw2 = list(kt), list(kd), list(nw)
                (kt2 if kind == 0 else kd2)[x] -= 1
                nw2[y] += 1
                state = (tuple(kt2), tuple(kd2), tuple(nw2))
                if state not in seen:
                    seen.add(state)
                    stack.append(state)
    return frozenset(finals)


def _state(rule: RackRule, old: list, new: list) -> tuple:
    k = rule.k
    c, nw = [0] * k, [0] * k
    for b in new:
        if b >= 0:
            x = rule.rack_of[b]
            c[x] += 1
            if b not in old:
                nw[x] += 1
    return tuple(c), tuple(nw)


def _hull(states: frozenset) -> tuple:
    """Per rack (fewest, most, fewest new, most new) over the states: the flow's relaxation."""
    k = len(next(iter(states))[0])
    return tuple(
        (min(c[x] for c, _ in states), max(c[x] for c, _ in states), min(n[x] for _, n in states), max(n[x] for _, n in states))
        for x in range(k)
    )


def _box_states(box: tuple, kept_max: list, fresh_n: list, r: int) -> set:
    """Every state the flow may pick inside ``box`` (counts summing to r, a rack's new brokers
    within its box and the targets free there, its kept ones within what it holds)."""
    k = len(box)
    out = set()
    for c in itertools.product(*(range(lo, hi + 1) for lo, hi, _, _ in box)):
        if sum(c) != r:
            continue
        ranges = [range(max(box[x][2], c[x] - kept_max[x]), min(box[x][3], c[x], fresh_n[x]) + 1) for x in range(k)]
        for nw in itertools.product(*ranges):
            out.add((c, nw))
    return out


def _pieces(states: frozenset, kept_max: list, fresh_n: list, r: int) -> list:
    """Disjoint boxes whose flow-feasible states are exactly ``states``: per rack-count vector,
    a box allowing up to its most new brokers per rack when that is exact, else one box per
    state; vectors with the same new-broker caps are merged into their hull when it is exact."""
    by_c: dict = {}
    for c, nw in states:
        by_c.setdefault(c, set()).add(nw)
    boxes = []
    for c in sorted(by_c):
        cap = tuple(max(n[x] for n in by_c[c]) for x in range(len(c)))
        box = tuple((c[x], c[x], 0, cap[x]) for x in range(len(c)))
        if _box_states(box, kept_max, fresh_n, r) == {(c, n) for n in by_c[c]}:
            boxes.append(box)
        else:
            boxes += [tuple((c[x], c[x], n[x], n[x]) for x in range(len(c))) for n in sorted(by_c[c])]
    groups: dict = {}
    for box in boxes:
        groups.setdefault(tuple((a, b) for _, _, a, b in box), []).append(box)
    out = []
    for caps, members in sorted(groups.items()):
        merged = tuple((min(m[x][0] for m in members), max(m[x][1] for m in members)) + caps[x] for x in range(len(caps)))
        if len(members) > 1 and _box_states(merged, kept_max, fresh_n, r) <= states:
            out.append(merged)
        else:
            out += members
    return out


def _add_boxed(g: _Graph, imbalance: list, p: int, row: list, box: tuple, node_of: int, tb: list, bnode: dict,
               rule: RackRule, out: list) -> None:
    """Partition p's edges under per-rack (fewest, most, fewest new, most new) bounds: the rack
    node carries its count above the fewest, and new brokers hang off a node of their own when
    their number is bounded (its lower bound, like the rack's, settled by the imbalances)."""
    held = {b for b in row if b >= 0}
    counts = rule.counts([b for b in held if rule.is_target[b]])
    for x, (lo, hi, nlo, nhi) in enumerate(box):
        node = node_of + x
        f = counts[x]
        clipped = min(max(f, lo), hi)
        g.add(p, node, hi - lo, 0, clipped - lo)
        imbalance[p] -= clipped
        imbalance[node] += clipped - f
        fresh = []
        for b in tb:
            if rule.rack_of[b] != x:
                continue
            if b in held:
                out.append((g.add(node, bnode[b], 1, 0, 1), b))
            else:
                fresh.append(b)
        if not fresh or nhi == 0:
            continue
        src = node
        if nlo > 0 or nhi < len(fresh):
            src = g.n
            g.n += 1
            g.head.append([])
            imbalance.append(nlo)
            imbalance[node] -= nlo
            g.add(node, src, nhi - nlo, 0)
        for b in fresh:
            out.append((g.add(src, bnode[b], 1, 1, 0), b))


def _held_edge(g: _Graph, u: int, v: int, kept: bool, kept_edges: set) -> int:
    """The edge of a replica the partition holds: it starts full (no move), and stays full when
    that replica is kept, so no augmenting path can take it away."""
    e = g.add(u, v, 1, 0, 1)
    if kept:
        g.fix(e)
        kept_edges.add(e)
    return e


def _flow(rows: np.ndarray, new_rf: np.ndarray, target: np.ndarray, rule: RackRule, boxes: dict,
          keep: np.ndarray):
    """The min-cost flow: (rows, or None when no fair assignment exists; the work it took, edges
    x units routed). ``boxes`` maps a rack-breaking partition to its per-rack (fewest, most,
    fewest new, most new) replicas; every other partition keeps the rule's bounds below.
    ``keep[p]`` (a broker p holds, or -1): its edge starts full and stays full."""
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
    kept_edges: set[int] = set()  # held edges that stay full (a kept leader's)
    rows_l = rows.tolist()
    bpos = {b: base_b + i for b, i in bnode.items()}
    for p in range(n_parts):
        held = {b for b in rows_l[p] if b >= 0}
        kept = int(keep[p])
        r = int(new_rf[p])
        imbalance[p] += r
        if k and p in boxes:
            _add_boxed(g, imbalance, p, rows_l[p], boxes[p], node_of=base_rack + p * k, tb=tb, bnode=bpos,
                       rule=rule, out=assign_edges[p])
        elif k:
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
                # Shrinking below its spread, it must end on r racks: one replica each (r < K,
                # so hi is 1); a rack keeping more would narrow it.
                ceil = max(f, hi) if spread <= r else hi
                a_lo, a_hi = (lo, hi) if valid else (min(f, floor), ceil)
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
                        assign_edges[p].append((_held_edge(g, node, base_b + bnode[b], b == kept, kept_edges), b))
                    elif not no_new:
                        assign_edges[p].append((g.add(node, base_b + bnode[b], 1, 1, 0), b))
        else:
            for b in tb:
                if b in held:
                    assign_edges[p].append((_held_edge(g, p, base_b + bnode[b], b == kept, kept_edges), b))
                    imbalance[p] -= 1
                else:
                    assign_edges[p].append((g.add(p, base_b + bnode[b], 1, 1, 0), b))
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
    # Super source and sink (after any nodes _add_boxed appended).
    s, t = g.n, g.n + 1
    g.n += 2
    g.head += [[], []]
    need = 0
    for v in range(len(imbalance)):
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
            return None, g.n_edges * max(sent, 1)
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
        chosen = {b for e, b in assign_edges[p] if cap[e ^ 1] > 0 or e in kept_edges}
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
    return out, g.n_edges * max(need, 1)
