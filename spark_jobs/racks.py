"""Rack rules: where a replica may go so that no move narrows a partition's rack spread.

With K racks among the target brokers and replication factor r, a partition is *rack-valid*
when every rack holds between floor(r/K) and ceil(r/K) of its replicas (so it spans
min(r, K) racks). A replica that moves (or is added) must land in a rack holding the fewest of
the partition's other replicas among the racks that still have a target broker without one
(and, when it leaves a broker that stays, no more than that broker's rack holds).
That single rule keeps valid partitions valid, never narrows an invalid one, and makes every
new placement spread the partition over as many racks as it can.

Usage::

    rule = RackRule.build(racks, target_mask)        # racks: name or None per broker index
    rule.allowed(row, src=3, dst=7)                   # move the replica on broker 3 to 7?
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RackRule:
    k: int  # racks among target brokers; 0 when brokers have no racks
    rack_of: list  # rack index per broker index, -1 for no rack or a rack without targets
    is_target: list  # bool per broker index
    n_in_rack: list  # target brokers per rack
    names: list  # rack names by index

    @classmethod
    def build(cls, racks: list, target_mask: np.ndarray) -> "RackRule":
        names = sorted({racks[i] for i in np.nonzero(target_mask)[0] if racks[i] is not None})
        index = {n: i for i, n in enumerate(names)}
        rack_of = [index.get(r, -1) if r is not None else -1 for r in racks]
        n_in = [0] * len(names)
        for i in np.nonzero(target_mask)[0]:
            if rack_of[i] >= 0:
                n_in[rack_of[i]] += 1
        return cls(len(names), rack_of, [bool(x) for x in target_mask], n_in, names)

    def bounds(self, r: int) -> tuple[int, int]:
        """(floor, ceil) of replicas per rack for replication factor r."""
        return r // self.k, -(-r // self.k)

    def counts(self, row, skip: int = -1) -> list:
        c = [0] * self.k
        rack_of = self.rack_of
        for b in row:
            if b >= 0 and b != skip:
                x = rack_of[b]
                if x >= 0:
                    c[x] += 1
        return c

    def is_valid(self, row) -> bool:
        if self.k == 0:
            return True
        r = sum(1 for b in row if b >= 0)
        lo, hi = self.bounds(r)
        c = self.counts(row)
        return all(lo <= x <= hi for x in c)

    def allowed_racks(self, row, src: int = -1) -> set:
        """Racks a replica of this partition may go to when the one on ``src`` leaves."""
        k = self.k
        counts = [0] * k
        held = [0] * k
        rack_of, is_target = self.rack_of, self.is_target
        for b in row:
            if b < 0:
                continue
            x = rack_of[b]
            if x < 0:
                continue
            if b != src:
                counts[x] += 1
            if is_target[b]:
                held[x] += 1  # src stays "held": the replica leaving it cannot land on it again
        free = [x for x in range(k) if self.n_in_rack[x] > held[x]]
        if not free:
            return set()
        # Staying put is an option when src remains a target: a move must do at least as well.
        considered = list(free)
        if src >= 0 and is_target[src] and rack_of[src] >= 0:
            considered.append(rack_of[src])
        low = min(counts[x] for x in considered)
        return {x for x in free if counts[x] == low}

    def allowed(self, row, src: int, dst: int) -> bool:
        """May the replica on ``src`` (or a new one, src=-1) go to target broker ``dst``?"""
        if self.k == 0:
            return True
        x = self.rack_of[dst]
        return x >= 0 and x in self.allowed_racks(row, src)
