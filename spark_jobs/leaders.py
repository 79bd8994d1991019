"""Preferred leaders: reorder replicas so every target broker is first in L or L+1 partitions.

Reordering moves no data, so this runs after the replicas are placed. Current first replicas
are kept wherever the counts allow; the ones that change are picked among partitions that are
being moved anyway first (their reassignment entry exists already), then by partition order.

Vectorised rounds hand leadership straight from brokers above L+1 (or at L+1, when no one is
above) to a follower below L (or at L) in the same partition; what remains is resolved by
augmenting chains (a -> p1 -> b -> p2 -> c: a gives p1 to b, b gives p2 to c), found by a
breadth-first search over brokers. If no chain exists the counts are as even as they can be.

Usage::

    rows = balance_leaders(rows, target_mask, prefer=moved_mask)
"""

from __future__ import annotations

from collections import deque

import numpy as np

# Chains found one by one cost a search each; past this many the counts are left as they are
# (only pathological clusters get here: the vectorised rounds settle ordinary ones).
MAX_CHAINS = 20000


def _caps(lc: np.ndarray, target: np.ndarray, low: int):
    """(source capacity, sink capacity) per broker for one round, flexible on the +1 slots."""
    hi = low + 1
    excess = np.where(target, np.maximum(lc - hi, 0), lc)  # non-targets must lead nothing
    deficit = np.where(target, np.maximum(low - lc, 0), 0)
    if excess.sum() > 0 and deficit.sum() > 0:
        return excess, deficit
    if excess.sum() > 0:
        return excess, (target & (lc == low)).astype(np.int64)
    if deficit.sum() > 0:
        return (target & (lc == hi)).astype(np.int64), deficit
    return None, None


def _swap_to_front(rows: np.ndarray, p: int, j: int) -> None:
    row = rows[p]
    b = row[j]
    row[1 : j + 1] = row[0:j].copy()
    row[0] = b


def leader_targets(n_partitions: int, n_targets: int) -> tuple[int, int]:
    return n_partitions // n_targets, n_partitions % n_targets


def balance_leaders(rows: np.ndarray, target: np.ndarray, prefer: np.ndarray | None = None) -> np.ndarray:
    """Reorder ``rows`` (P x W broker indices, -1 padded) in place and return it."""
    n_parts, width = rows.shape
    n_b = len(target)
    n_t = int(target.sum())
    if n_parts == 0 or n_t == 0:
        return rows
    low, _ = leader_targets(n_parts, n_t)
    prio = np.zeros(n_parts, dtype=np.int8) if prefer is None else (~prefer).astype(np.int8)
    for _ in range(4 * width + 64):
        lc = np.bincount(rows[:, 0], minlength=n_b).astype(np.int64)
        src_cap, sink_cap = _caps(lc, target, low)
        if src_cap is None:
            return rows
        lead = rows[:, 0]
        from_src = src_cap[lead] > 0
        choice = np.full(n_parts, -1, dtype=np.int64)
        for j in range(width - 1, 0, -1):  # the earliest follower wins: it is written last
            f = rows[:, j]
            ok = from_src & (f >= 0)
            ok[ok] = sink_cap[f[ok]] > 0
            choice[ok] = j
        cand = np.nonzero(choice >= 0)[0]
        if len(cand) == 0:
            break
        new = rows[cand, choice[cand]]
        old = lead[cand]
        # At most src_cap hand-offs per source and sink_cap per sink this round.
        keep = _within_caps(cand, old, src_cap, prio) & _within_caps(cand, new, sink_cap, prio)
        cand = cand[keep]
        if len(cand) == 0:
            break
        for p in cand:
            _swap_to_front(rows, int(p), int(choice[p]))
    _chains(rows, target, low)
    return rows


def _within_caps(cand: np.ndarray, key: np.ndarray, cap: np.ndarray, prio: np.ndarray) -> np.ndarray:
    order = np.lexsort((cand, prio[cand], key))
    sorted_key = key[order]
    starts = np.r_[0, np.nonzero(np.diff(sorted_key))[0] + 1]
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    ok_sorted = rank < cap[sorted_key]
    ok = np.zeros(len(cand), dtype=bool)
    ok[order] = ok_sorted
    return ok


def _bfs(rows: np.ndarray, led: list, target: np.ndarray, sources: list, is_sink) -> list | None:
    """Shortest chain source -> ... -> sink; each hop a -> b via a partition a leads and b
    follows. Returns [(from, partition, to), ...] or None."""
    parent: dict[int, tuple[int, int]] = {b: (-1, -1) for b in sources}
    queue = deque(sources)
    while queue:
        a = queue.popleft()
        for p in led[a]:
            for f in rows[p, 1:].tolist():
                if f < 0 or f in parent:
                    continue
                parent[f] = (a, p)
                if is_sink(f):
                    path = []
                    b = f
                    while parent[b][0] >= 0:
                        a2, p2 = parent[b]
                        path.append((a2, p2, b))
                        b = a2
                    return path[::-1]
                if target[f]:
                    queue.append(f)
    return None


def _chains(rows: np.ndarray, target: np.ndarray, low: int) -> None:
    """Settle what the rounds left. Brokers above L+1 hand one leadership along a chain to a
    broker below L, or else to one at L (taking a +1 slot); brokers below L get one from a
    broker at L+1 (freeing its slot). When neither exists the counts cannot be evened."""
    n_b = len(target)
    led: list[list[int]] = [[] for _ in range(n_b)]
    for p, b in enumerate(rows[:, 0].tolist()):
        led[b].append(p)
    lc = np.array([len(x) for x in led], dtype=np.int64)
    hi = low + 1
    stuck_excess = False
    for _ in range(MAX_CHAINS):
        over = [b for b in range(n_b) if lc[b] > (hi if target[b] else 0)]
        under = [b for b in range(n_b) if target[b] and lc[b] < low]
        path = None
        if over and not stuck_excess:
            path = _bfs(rows, led, target, over, lambda f: target[f] and lc[f] < low)
            if path is None:
                path = _bfs(rows, led, target, over, lambda f: target[f] and lc[f] == low)
            if path is None:
                stuck_excess = True
                continue
        elif under:
            sources = [b for b in range(n_b) if lc[b] >= hi or (lc[b] > 0 and not target[b])]
            path = _bfs(rows, led, target, sources, lambda f: target[f] and lc[f] < low)
            if path is None:
                return
        else:
            return
        for a, p, b in path:
            j = int(np.nonzero(rows[p] == b)[0][0])
            _swap_to_front(rows, p, j)
            led[a].remove(p)
            led[b].append(p)
        lc[path[0][0]] -= 1
        lc[path[-1][2]] += 1
