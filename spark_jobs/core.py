"""The KIP-6 planner: fair replica counts with the fewest moves, then even topics, then leaders.

Objectives, in order:

1. Hard constraints: never two replicas of a partition on one broker; brokers outside the
   target set (decommissioned, or left out of ``--broker-list``) end empty; with racks, the
   rule of :mod:`spark_jobs.racks` for every placement (``fix_racks`` also repairs existing
   violations first; those moves are counted apart); a partition whose replication factor
   goes down keeps its current leader's replica where it is (followers only are dropped, and
   no later step moves it), so lowering makes the controller elect no new leader.
2. Fairness: N replicas over n target brokers, every broker ends with R = N // n or R + 1.
   Which brokers get the N % n extra slots is chosen to need the fewest moves (the fullest
   ones), within what the racks allow.
3. Minimal moves: a move is a replica added to a broker that did not hold it. The lower bound
   is the total shortfall of brokers below their target; every replica that leaves a broker
   above target goes straight to a broker below it, so the bound is met whenever direct moves
   exist. Small clusters the greedy cannot settle at the bound go to :mod:`spark_jobs.exact`.
4. Bytes: among plans with these counts and moves, the partitions that move are the ones whose
   sizes bring each donor and receiver closest to the mean bytes per broker (when sizes are
   known; the report gives the per-broker bytes spread before and after).
5. Per-topic evenness: among equally cheap moves, a donor gives a topic it holds more of than
   the receiver (strictly more first). Moves between target brokers inside one rack (all of a
   rebalance or expansion without racks) therefore never make a topic less even; replicas
   leaving drained brokers or crossing racks go where their topic is thinnest.
6. Preferred leaders R or R+1 per broker by reordering (:mod:`spark_jobs.leaders`).
7. Determinism: every choice is ordered by explicit keys; same snapshot, same plan.

Where the work runs: the global decisions (targets, rack totals, which broker gives how many
replicas of which topic to which broker, leaders) need the whole cluster and run here on the
driver, vectorised with numpy. Turning each topic's quotas into concrete partitions is
independent per topic and runs through ``mapper`` -- Spark tasks when a SparkSession is given
(:mod:`spark_jobs.api`), a plain loop otherwise. Fleet mode runs whole clusters as tasks.

Usage::

    out = plan_cluster(snapshot, PlanRequest("decommission", brokers=[3]))
    out.reassignment, out.report
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from spark_jobs import capacity as capacities
from spark_jobs import exact, leaders
from spark_jobs.cluster import ClusterArrays
from spark_jobs.errors import PlanError
from spark_jobs.racks import RackRule
from spark_jobs.realize import TopicTask, realize_chunk

MODES = ("rebalance", "decommission", "add-brokers", "replication-factor")
# The topic x broker count matrix is dense; above this many cells topics share rows by hash
# (evenness then holds per group of topics), which bounds memory at ~160 MB.
MAX_COUNT_CELLS = 40_000_000
# Receivers a donor considers at once when picking topics: bounds the per-donor matrix.
RECEIVER_WINDOW = 64
# Topic tasks handed to one Spark task: small topics would otherwise cost a task each.
TOPICS_PER_CHUNK = 64
# Moves the bytes pass (even_bytes) re-picks, at most: each costs a scan of its topic's rows.
BYTES_SWAP_BUDGET = 50_000
# Candidate hops one chain search after a replication change may examine: chains are short
# in practice and anything past this is left to the balancing moves.
SETTLE_BUDGET = 200_000


@dataclass
class PlanRequest:
    mode: str
    brokers: list | None = None  # decommission: ids to drain; add-brokers: ids to add; else the broker list
    broker_list: list | None = None  # restricts the base broker set for every mode
    topics: list | None = None
    replication_factor: int | None = None
    fix_racks: bool = False
    capacity: capacities.CapacitySpec | None = None  # disk capacities (else only what the snapshot reports)
    disk_threshold: float = capacities.DEFAULT_THRESHOLD
    # Brokers that may hold replicas but lead nothing the plan orders (Cruise Control's
    # recently demoted brokers): the preferred leaders are balanced over the other targets.
    leaders_excluded: list | None = None


@dataclass
class Outcome:
    reassignment: dict
    report: dict
    moves: list = field(default_factory=list)  # [(topic, partition, old replicas, new replicas, bytes)]


def local_mapper(fn, items):
    return [fn(x) for x in items]


def _targets(cnt: np.ndarray, target: np.ndarray, total: int, rule: RackRule, rack_bounds) -> tuple[np.ndarray, bool]:
    """Per-broker targets (R or R+1 on target brokers, 0 elsewhere) needing the fewest moves,
    and whether the racks let them be fair."""
    tb = np.nonzero(target)[0]
    n = len(tb)
    low, extra = divmod(total, n)
    t = np.zeros(len(cnt), dtype=np.int64)
    t[tb] = low
    order = tb[np.lexsort((tb, -cnt[tb]))]  # fullest first: their extra slot saves a move
    if rule.k == 0:
        t[order[:extra]] += 1
        return t, True
    k = rule.k
    members = [[b for b in order if rule.rack_of[b] == x] for x in range(k)]
    lo_r, hi_r = rack_bounds
    kmin = [max(0, lo_r[x] - len(members[x]) * low) for x in range(k)]
    kmax = [min(len(members[x]), hi_r[x] - len(members[x]) * low) for x in range(k)]
    if all(kmin[x] <= kmax[x] for x in range(k)) and sum(kmin) <= extra <= sum(kmax):
        given = [0] * k
        for x in range(k):
            for b in members[x][: kmin[x]]:
                t[b] += 1
            given[x] = kmin[x]
        left = extra - sum(kmin)
        for b in order:
            if left == 0:
                break
            x = rule.rack_of[b]
            if t[b] == low and given[x] < kmax[x]:
                t[b] += 1
                given[x] += 1
                left -= 1
        return t, True
    # Racks make R/R+1 impossible: give each rack the total closest to its share that its
    # partitions allow, then spread each rack's total evenly over its brokers.
    share = [total * len(members[x]) / n for x in range(k)]
    tot = [int(min(max(round(share[x]), lo_r[x]), hi_r[x])) for x in range(k)]
    diff = total - sum(tot)
    step = 1 if diff > 0 else -1
    while diff != 0:
        movable = [x for x in range(k) if (tot[x] < hi_r[x] if step > 0 else tot[x] > lo_r[x])]
        if not movable:
            break
        x = min(movable, key=lambda x: (step * (tot[x] - share[x]), x))
        tot[x] += step
        diff -= step
    for x in range(k):
        m = members[x]
        if not m:
            continue
        q, r = divmod(tot[x], len(m))
        for i, b in enumerate(m):
            t[b] = q + (1 if i < r else 0)
    return t, False


class _Planner:
    def __init__(self, snap: dict, req: PlanRequest, mapper):
        if req.mode not in MODES:
            raise PlanError(f"unknown mode {req.mode!r} (one of {', '.join(MODES)})")
        self.req = req
        self.mapper = mapper or local_mapper
        self.warnings: list[str] = []
        c = ClusterArrays.from_snapshot(snap)
        known = set(int(b) for b in c.broker_ids)

        def ids(values, what):
            out = []
            for v in values or []:
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise PlanError(f"{what}: broker ids are non-negative ints, got {v!r}")
                if v in out:
                    raise PlanError(f"{what}: broker {v} listed twice")
                out.append(v)
            return out

        mode_ids = ids(req.brokers, f"--{req.mode}" if req.mode != "rebalance" else "--broker-list")
        base_ids = ids(req.broker_list, "--broker-list")
        if req.mode == "add-brokers":
            if not mode_ids:
                raise PlanError("--add-brokers needs at least one broker id")
            c = c.with_brokers(mode_ids)
        elif req.mode in ("rebalance", "replication-factor") and mode_ids:
            base_ids = base_ids or mode_ids
        for b in base_ids + (mode_ids if req.mode == "decommission" else []):
            if b not in known:
                raise PlanError(f"broker {b} is not in the snapshot (known: {sorted(known)})")
        index = c.index_of()
        base = set(base_ids) if base_ids else set(int(b) for b in c.broker_ids if int(b) in known)
        if req.mode == "decommission":
            if not mode_ids:
                raise PlanError("--decommission-broker needs at least one broker id")
            target_ids = base - set(mode_ids)
        elif req.mode == "add-brokers":
            target_ids = base | set(mode_ids)
        else:
            target_ids = base
        # A broker that is not registered (the snapshot's ``alive: false``: down, or gone for
        # good) cannot take a replica: it is never a target, listed or not, and what it holds
        # moves off it like a drained broker's. Only --add-brokers names brokers that are not
        # registered yet on purpose.
        registered = {int(b) for b, up in zip(c.broker_ids, c.alive) if up}
        down = sorted(b for b in target_ids if b not in registered and not (req.mode == "add-brokers" and b in mode_ids))
        if down:
            target_ids = target_ids - set(down)
            self.warnings.append(
                f"brokers {down} are not registered (alive: false in the snapshot): they receive no replica "
                "and the replicas they hold move to registered brokers"
            )
        if not target_ids:
            raise PlanError("no broker would be left to hold replicas"
                            + (f" (brokers {down} are not registered)" if down else ""))
        self.down = down
        self.c = c
        self.B = c.n_brokers
        self.target = np.zeros(self.B, dtype=bool)
        self.target[[index[b] for b in target_ids]] = True
        with_rack = [int(c.broker_ids[i]) for i in np.nonzero(self.target)[0] if c.racks[i] is not None]
        without = [int(c.broker_ids[i]) for i in np.nonzero(self.target)[0] if c.racks[i] is None]
        if with_rack and without:
            # Kafka refuses to mix brokers with and without racks too (unless told to ignore
            # racks, which this planner has no option for: it would place replicas rack-blind).
            unknown = [b for b in without if b not in known]  # --add-brokers ids not registered yet
            if unknown:
                raise PlanError(
                    f"brokers {unknown} being added are not in the snapshot, so their racks are unknown, "
                    f"while brokers {with_rack[:10]} have racks: start them with broker.rack set, take a "
                    "new snapshot once they are registered and plan with --rebalance"
                )
            raise PlanError(
                f"brokers {without} have no rack while brokers {with_rack[:10]} do: "
                "give every target broker a rack, or none (racks are never ignored; "
                "--broker-list can leave the brokers without one out)"
            )
        self.rule = RackRule.build(c.racks, self.target)
        # Who may be a preferred leader: the targets, less the brokers excluded from leadership.
        self.leads = self.target.copy()
        for b in ids(req.leaders_excluded, "excluded from leadership"):
            if b in index:
                self.leads[index[b]] = False
        if not self.leads.any():
            raise PlanError("every broker that would hold replicas is excluded from leadership: "
                            "no partition could have a preferred leader")
        # Disk capacity per broker index (-1 unknown) and the limit the capacity goal holds.
        try:
            threshold = capacities.check_threshold(req.disk_threshold)
        except capacities.CapacityError as e:
            raise PlanError(str(e)) from None
        reported = {int(b["id"]): b.get("disk_bytes") for b in snap["brokers"]}
        self.disk_caps, self.disk_sources = capacities.resolve(c.broker_ids, reported, req.capacity)
        self.disk_threshold = threshold
        known_cap = self.disk_caps > 0
        self.limits = np.where(known_cap & self.target, np.floor(self.disk_caps * threshold), np.inf)
        self.capacity_on = bool((known_cap & self.target).any())
        self.capacity_steps: list = []

        # Scope: the partitions the plan may touch.
        if req.topics is not None:
            wanted = list(dict.fromkeys(req.topics))
            tindex = {t: i for i, t in enumerate(c.topics)}
            missing = [t for t in wanted if t not in tindex]
            if missing:
                raise PlanError(f"topics not in the snapshot: {', '.join(missing)}")
            tmask = np.zeros(len(c.topics), dtype=bool)
            tmask[[tindex[t] for t in wanted]] = True
            self.scope = tmask[c.part_topic] if c.n_partitions else np.zeros(0, dtype=bool)
        else:
            self.scope = np.ones(c.n_partitions, dtype=bool)
        self.rows_idx = np.nonzero(self.scope)[0]
        self.new_rf = c.rf.copy()
        if req.mode == "replication-factor":
            n = req.replication_factor
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise PlanError(f"--replication-factor must be a positive int, got {n!r}")
            self.new_rf[self.rows_idx] = n
        elif req.replication_factor is not None:
            raise PlanError("--replication-factor is a mode of its own; it does not combine with --" + req.mode)
        n_t = int(self.target.sum())
        if len(self.rows_idx):
            worst = int(self.rows_idx[np.argmax(self.new_rf[self.rows_idx])])
            if self.new_rf[worst] > n_t:
                raise PlanError(
                    f"{c.topics[c.part_topic[worst]]}-{c.part_num[worst]} needs {self.new_rf[worst]} replicas "
                    f"but only {n_t} brokers are in the target set"
                    + (f" (brokers {self.down} are not registered)" if self.down else "")
                )
        if c.reassigning[self.rows_idx].any():
            self.warnings.append(
                f"{int(c.reassigning[self.rows_idx].sum())} partitions are being reassigned; "
                "the plan starts from their target replicas"
            )
        width = max(c.rep.shape[1], int(self.new_rf.max()) if len(self.new_rf) else 1)
        self.rep = np.full((c.n_partitions, width), -1, dtype=np.int32)
        self.rep[:, : c.rep.shape[1]] = c.rep
        self.original = self.rep.copy()
        self.keep = self._leaders_kept()
        # Topic keys for the count matrix (topics, or hashed groups of them when too many).
        n_topics = max(len(c.topics), 1)
        self.n_keys = n_topics if n_topics * self.B <= MAX_COUNT_CELLS else max(1, MAX_COUNT_CELLS // self.B)
        self.tkey = (c.part_topic % self.n_keys).astype(np.int64)
        self._parts_of: dict[int, list] | None = None
        self.recount()

    def _leaders_kept(self) -> np.ndarray:
        """Per row, the broker index whose replica no step may take away (-1: none): the
        current leader of a partition whose replication factor goes down. Lowering drops
        followers only, as Cruise Control does, so it makes the controller elect no one. A
        partition without a live leader, or led from a broker outside the target set (which
        must be emptied anyway), keeps nothing: its first replica is only preferred."""
        c = self.c
        keep = np.full(c.n_partitions, -1, dtype=np.int32)
        if not c.n_partitions:
            return keep
        lead = c.leader.astype(np.int64)
        led = lead >= 0
        led[led] = self.target[lead[led]]
        lowered = self.scope & (self.new_rf < c.rf)
        keep[lowered & led] = lead[lowered & led]
        return keep

    def _keeps(self, r: int, b: int) -> bool:
        """Must broker b hold its replica of row r (b leads r, whose replication factor goes down)?"""
        return b >= 0 and int(self.keep[r]) == b

    # ---- bookkeeping -------------------------------------------------------------------------

    def recount(self):
        sub = self.rep[self.rows_idx]
        flat = sub.ravel()
        keys = np.repeat(self.tkey[self.rows_idx], sub.shape[1])
        ok = flat >= 0
        self.cnt = np.bincount(flat[ok], minlength=self.B).astype(np.int64)
        self.C = np.bincount(keys[ok] * self.B + flat[ok], minlength=self.n_keys * self.B).astype(np.int32)
        self.C = self.C.reshape(self.n_keys, self.B)

    def parts_of(self, b: int) -> list:
        if self._parts_of is None:
            sub = self.rep[self.rows_idx]
            flat = sub.ravel()
            owners = np.repeat(self.rows_idx, sub.shape[1])
            ok = flat >= 0
            flat, owners = flat[ok], owners[ok]
            order = np.argsort(flat, kind="stable")
            flat, owners = flat[order], owners[order]
            bounds = np.searchsorted(flat, np.arange(self.B + 1))
            self._parts_of = {i: owners[bounds[i] : bounds[i + 1]].tolist() for i in range(self.B)}
        rows = self._parts_of[b]
        live = [r for r in dict.fromkeys(rows) if b in self.rep[r]]
        self._parts_of[b] = live
        return live

    def move(self, r: int, src: int, dst: int) -> None:
        row = self.rep[r]
        j = int(np.nonzero(row == src)[0][0])
        row[j] = dst
        self.cnt[src] -= 1
        self.cnt[dst] += 1
        tk = self.tkey[r]
        self.C[tk, src] -= 1
        self.C[tk, dst] += 1
        if self._parts_of is not None:
            self._parts_of[dst].append(r)

    def deficit(self) -> np.ndarray:
        return np.where(self.target, self.t - self.cnt, 0)

    def excess(self) -> np.ndarray:
        return np.where(self.target, np.maximum(self.cnt - self.t, 0), self.cnt)

    def rack_bounds(self):
        """Per rack, the fewest and most replicas the scoped partitions allow it."""
        k = self.rule.k
        lo_r = [0] * k
        hi_r = [0] * k
        if k == 0:
            return lo_r, hi_r
        sub = self.rep[self.rows_idx]
        rack_of = np.array(self.rule.rack_of + [-1], dtype=np.int64)
        racks = rack_of[sub]  # -1 padding maps to the trailing -1
        rf = self.new_rf[self.rows_idx]
        lo = rf // k
        hi = -(-rf // k)
        per = np.stack([(racks == x).sum(axis=1) for x in range(k)], axis=1)
        cur_rf = (sub >= 0).sum(axis=1)
        valid = ((per >= (cur_rf // k)[:, None]) & (per <= (-(-cur_rf // k))[:, None])).all(axis=1)
        for x in range(k):
            f = per[:, x]
            lo_r[x] = int(np.where(valid, lo, 0).sum())
            hi_r[x] = int(np.where(valid, hi, np.maximum(f, hi)).sum())
        room = self.rule.n_in_rack
        for i in np.nonzero(~valid)[0].tolist():
            for x in range(k):
                lo_r[x] += _rack_floor(per[i].tolist(), x, room)
        return lo_r, hi_r

    def choose_target_counts(self):
        total = int(self.new_rf[self.rows_idx].sum())
        self.t, self.fair_possible = _targets(self.cnt, self.target, total, self.rule, self.rack_bounds())

    def lower_bound(self) -> int:
        # Every replica a broker below target lacks must be copied there; so must every
        # replica a partition gains. Either count bounds the moves from below.
        # The deficit is taken for the best +1 slots ignoring racks, so the bound holds for
        # every fair outcome, whatever the racks allow.
        tb = np.nonzero(self.target)[0]
        low, extra = divmod(int(self.new_rf[self.rows_idx].sum()), len(tb))
        best = np.full(len(tb), low, dtype=np.int64)
        best[np.lexsort((tb, -self.cnt[tb]))[:extra]] += 1
        deficit = int(np.maximum(best - self.cnt[tb], 0).sum())
        rows = self.rows_idx
        current = (self.rep[rows] >= 0).sum(axis=1)
        growth = int(np.maximum(self.new_rf[rows] - current, 0).sum())
        return max(deficit, growth)

    # ---- destinations ------------------------------------------------------------------------

    def best_destination(self, r: int, src: int, need_deficit: bool) -> int:
        """The target broker the replica of row r on src (or a new one, src=-1) should go to:
        allowed by the rules, below target (required when ``need_deficit``, else preferred),
        fewest of the topic, most below target, lowest id. -1 when none."""
        row = self.rep[r]
        cand = np.nonzero(self.target)[0]
        cand = cand[~np.isin(cand, row)]
        if self.rule.k:
            allowed = self.rule.allowed_racks(row.tolist(), src)
            rack_of = np.array(self.rule.rack_of, dtype=np.int64)
            cand = cand[np.isin(rack_of[cand], list(allowed))]
        if len(cand) == 0:
            return -1
        d = self.t[cand] - self.cnt[cand]
        if need_deficit:
            cand, d = cand[d > 0], d[d > 0]
            if len(cand) == 0:
                return -1
        tc = self.C[self.tkey[r], cand]
        # A broker below target takes the replica at no extra cost: those first.
        best = np.lexsort((cand, -d, tc, d <= 0))[0]
        return int(cand[best])

    # ---- steps -------------------------------------------------------------------------------

    def fix_racks(self) -> None:
        rule = self.rule
        for r in self.rows_idx.tolist():
            for _ in range(int(self.rep.shape[1])):
                row = self.rep[r].tolist()
                if rule.is_valid(row):
                    break
                counts = rule.counts(row)
                # A leader kept through a lower replication factor stays where it is: another
                # replica moves instead (or none, and the lowering evens the racks out).
                live = [b for b in row if b >= 0 and rule.rack_of[b] >= 0 and not self._keeps(r, b)]
                if not live:
                    break
                # Leave from the fullest rack, the broker most above its target first.
                src = max(live, key=lambda b: (counts[rule.rack_of[b]], self.cnt[b] - self.t[b], -b))
                dst = self.best_destination(r, src, need_deficit=False)
                if dst < 0 or rule.rack_of[dst] == rule.rack_of[src]:
                    break
                self.move(r, src, dst)

    def change_replication(self) -> None:
        rule = self.rule
        removed: dict[int, list[int]] = {}
        added: dict[int, list[int]] = {}
        lowered: dict[int, list[int]] = {}  # row -> its replicas before, in order
        for r in np.nonzero(self.new_rf != self.c.rf)[0].tolist():
            if not self.scope[r]:
                continue
            want = int(self.new_rf[r])
            while True:
                row = [b for b in self.rep[r].tolist() if b >= 0]
                if len(row) == want:
                    break
                if len(row) > want:
                    lowered.setdefault(r, list(row))
                    counts = rule.counts(row) if rule.k else None

                    def key(j):
                        b = row[j]
                        rack_n = counts[rule.rack_of[b]] if counts and rule.rack_of[b] >= 0 else 0
                        return (rack_n, self.cnt[b] - self.t[b], j != 0, j)

                    # Followers only when the partition has a live leader: the fullest rack
                    # still gives one (holding two or more, it has a follower), then the
                    # broker most above its target. Without one, the first replica (the
                    # preferred leader) goes only on a tie of both.
                    j = max((j for j in range(len(row)) if not self._keeps(r, row[j])), key=key)
                    b = row.pop(j)
                    self.rep[r] = -1
                    self.rep[r, : len(row)] = row
                    self.cnt[b] -= 1
                    self.C[self.tkey[r], b] -= 1
                    removed.setdefault(r, []).append(b)
                else:
                    dst = self.best_destination(r, -1, need_deficit=False)
                    if dst < 0:
                        raise PlanError(f"no broker can take another replica of row {r}")
                    self.rep[r, len(row)] = dst
                    self.cnt[dst] += 1
                    self.C[self.tkey[r], dst] += 1
                    added.setdefault(r, []).append(dst)
                    if self._parts_of is not None:
                        self._parts_of[dst].append(r)
        self._settle_replication(removed, added)
        self._keep_order(lowered)

    def _keep_order(self, lowered: dict) -> None:
        """Put each lowered row's replicas back in their order before: the settling swaps
        write a kept original replica into a removed one's slot, and a leader first (the
        preferred leader) stays first."""
        for r, before in lowered.items():
            now = [b for b in self.rep[r].tolist() if b >= 0]
            ordered = [b for b in before if b in now]
            if len(ordered) != len(now):
                continue  # an added broker: not a pure lowering, its order is the moves'
            self.rep[r, : len(ordered)] = ordered

    def _settle_replication(self, removed: dict, added: dict) -> None:
        """Free fixes after a replication change, along chains from brokers above target to
        brokers below it: keep a removed original replica instead of a kept one, or put an
        added replica on another broker. Neither copies any more data than before. A kept
        leader (``keep``) is never swapped out."""
        rows_of: dict[int, list[int]] = {}
        for r in sorted(set(removed) | set(added)):
            for b in self.rep[r].tolist():
                if b >= 0:
                    rows_of.setdefault(b, []).append(r)
        if not rows_of:
            return
        rule, target, cnt = self.rule, self.target, self.cnt

        tb = np.nonzero(target)[0].tolist()
        budget = [0]

        def edges(a):
            for r in rows_of.get(a, ()):
                row = self.rep[r].tolist()
                if a not in row or self._keeps(r, a):
                    continue  # a hop takes a's replica away: never a kept leader's
                if a in added.get(r, ()):
                    cands = [u for u in tb if u not in row]
                else:
                    cands = [u for u in removed.get(r, ()) if target[u] and u not in row]
                budget[0] += len(cands)
                if budget[0] > SETTLE_BUDGET:
                    return
                for u in cands:
                    if rule.allowed(row, a, u):
                        yield r, u

        low = int(self.new_rf[self.rows_idx].sum()) // len(tb)
        hi = low + 1
        for _ in range(int(np.abs(cnt[target] - low).sum()) + 1):
            # Which broker ends at R+1 is free: chains may end at a broker at R (taking a +1
            # slot) or start at one at R+1 (giving its slot up).
            over, under = target & (cnt > hi), target & (cnt < low)
            at_low, at_hi = target & (cnt == low), target & (cnt == hi)
            tries = [(over, under), (over, at_low), (at_hi, under)]
            path = None
            for sources, sinks in tries:
                if sources.any() and sinks.any():
                    path = self._settle_path(np.nonzero(sources)[0].tolist(), sinks, edges, budget)
                    if path:
                        break
            if not path:
                return
            for a, r, u in path:
                self.move(r, a, u)
                rows_of.setdefault(u, []).append(r)
                if a in added.get(r, ()):
                    added[r][added[r].index(a)] = u
                else:
                    removed[r][removed[r].index(u)] = a

    @staticmethod
    def _settle_path(sources: list, sinks: np.ndarray, edges, budget: list) -> list | None:
        budget[0] = 0
        parent: dict[int, tuple[int, int] | None] = {a: None for a in sources}
        queue = deque(sources)
        while queue:
            a = queue.popleft()
            for r, u in edges(a):
                if u in parent:
                    continue
                parent[u] = (a, r)
                if sinks[u]:
                    hops = []
                    while parent[u] is not None:
                        a2, r2 = parent[u]
                        hops.append((a2, r2, u))
                        u = a2
                    return hops[::-1]
                queue.append(u)
        return None

    def drain(self) -> None:
        drained = np.nonzero(~self.target & (self.cnt > 0))[0]
        if len(drained) == 0:
            return
        on_drained = np.isin(self.rep[self.rows_idx], drained).any(axis=1)
        placed: dict[int, list[int]] = {}
        for r in self.rows_idx[on_drained].tolist():
            for src in [b for b in self.rep[r].tolist() if b >= 0 and not self.target[b]]:
                dst = self.best_destination(r, src, need_deficit=True)
                if dst < 0:
                    dst = self._reroute_for(r, src, placed)
                if dst < 0:
                    dst = self.best_destination(r, src, need_deficit=False)
                if dst < 0:
                    raise PlanError(
                        f"{self.c.topics[self.c.part_topic[r]]}-{self.c.part_num[r]} has nowhere to go "
                        f"from broker {self.c.broker_ids[src]}"
                    )
                self.move(r, src, dst)
                placed.setdefault(dst, []).append(r)

    def _reroute_for(self, r: int, src: int, placed: dict) -> int:
        """Free a receiver slot for row r by re-routing a replica placed earlier in this step
        from a broker r may use to another broker below target. Returns that broker or -1."""
        row = self.rep[r].tolist()
        for u in sorted(placed):
            if u in row or not self.rule.allowed(row, src, u):
                continue
            for q in reversed(placed[u]):
                if u not in self.rep[q]:
                    continue
                alt = self.best_destination(q, u, need_deficit=True)
                if alt >= 0:
                    self.move(q, u, alt)
                    placed[u].remove(q)
                    placed.setdefault(alt, []).append(q)
                    return u
        return -1

    def cross_rack(self) -> None:
        """Move replicas between racks until each rack's total matches its targets."""
        rule = self.rule
        k = rule.k
        rack_of = np.array(rule.rack_of, dtype=np.int64)
        for _ in range(int(self.excess().sum()) + 1):
            tot = np.bincount(rack_of[self.target], weights=self.cnt[self.target], minlength=k)
            want = np.bincount(rack_of[self.target], weights=self.t[self.target], minlength=k)
            over = [x for x in np.argsort(want - tot, kind="stable") if tot[x] > want[x]]
            under = [x for x in np.argsort(tot - want, kind="stable") if tot[x] < want[x]]
            if not over or not under:
                return
            done = False
            for x in over:
                donors = [b for b in np.nonzero(self.target & (rack_of == x))[0] if self.cnt[b] > self.t[b]]
                donors.sort(key=lambda b: (self.t[b] - self.cnt[b], b))
                for y in under:
                    recv = [b for b in np.nonzero(self.target & (rack_of == y))[0] if self.cnt[b] < self.t[b]]
                    recv.sort(key=lambda b: (self.cnt[b] - self.t[b], b))
                    for d in donors:
                        for u in recv:
                            r = self._pick(d, u, allow_worse=True)
                            if r >= 0:
                                self.move(r, d, u)
                                done = True
                                break
                        if done:
                            break
                    if done:
                        break
                if done:
                    break
            if not done:
                return

    def _pick(self, d: int, u: int, allow_worse: bool) -> int:
        """A row with a replica on d that may move to u: best topic gain, smallest, first.
        Never a row d leads through a lower replication factor (``keep``)."""
        rows = np.array(self.parts_of(d), dtype=np.int64)
        if len(rows) == 0:
            return -1
        sub = self.rep[rows]
        rows = rows[~(sub == u).any(axis=1) & (self.keep[rows] != d)]
        if len(rows) == 0:
            return -1
        tk = self.tkey[rows]
        gain = self.C[tk, d].astype(np.int64) - self.C[tk, u]
        if not allow_worse:
            keep = gain >= 1
            rows, gain = rows[keep], gain[keep]
        size = np.maximum(self.c.size[rows], 0)
        for i in np.lexsort((rows, size, -gain)):
            r = int(rows[i])
            if self.rule.allowed(self.rep[r].tolist(), d, u):
                return r
        return -1

    def quotas(self) -> list:
        """Transfers (key, donor, receiver, count) inside each rack (or the whole cluster)."""
        rule = self.rule
        groups = [np.nonzero(self.target)[0]] if rule.k == 0 else [
            np.array([b for b in np.nonzero(self.target)[0] if rule.rack_of[b] == x], dtype=np.int64)
            for x in range(rule.k)
        ]
        C = self.C.copy()
        transfers = []
        for members in groups:
            e = self.cnt[members] - self.t[members]
            donors = members[e > 0]
            donors = donors[np.lexsort((donors, -(self.cnt[donors] - self.t[donors])))]
            recv = members[e < 0]
            gleft = (self.t[recv] - self.cnt[recv]).astype(np.int64)
            for d in donors.tolist():
                need = int(self.cnt[d] - self.t[d])
                for thr in (2, 1):
                    while need > 0:
                        active = np.nonzero(gleft > 0)[0]
                        if len(active) == 0:
                            break
                        if len(active) > RECEIVER_WINDOW:
                            active = np.sort(active[np.lexsort((recv[active], -gleft[active]))[:RECEIVER_WINDOW]])
                        keys = np.nonzero(C[:, d] > 0)[0]
                        if len(keys) == 0:
                            break
                        cu = C[np.ix_(keys, recv[active])].astype(np.int64)
                        gain = C[keys, d].astype(np.int64)[:, None] - cu
                        ti, ai = np.nonzero(gain >= thr)
                        if len(ti) == 0:
                            break
                        g = gain[ti, ai]
                        order = _first_by(max(4 * need, 64), -g, -gleft[active][ai], keys[ti], recv[active][ai])
                        progress = False
                        for o in order.tolist():
                            key = int(keys[ti[o]])
                            a = int(active[ai[o]])
                            u = int(recv[a])
                            cur = int(C[key, d]) - int(C[key, u])
                            if cur < thr or gleft[a] <= 0:
                                continue
                            n = cur // 2 if thr == 2 else (cur + 1) // 2
                            n = min(n, need, int(gleft[a]))
                            C[key, d] -= n
                            C[key, u] += n
                            gleft[a] -= n
                            need -= n
                            transfers.append((key, d, u, n))
                            progress = True
                            if need == 0:
                                break
                        if not progress:
                            break
        return transfers

    def realize(self, transfers: list) -> None:
        if not transfers:
            return
        by_key: dict[int, list] = {}
        for key, d, u, n in transfers:
            by_key.setdefault(key, []).append((d, u, n))
        keys = sorted(by_key)
        scope_rows = self.rows_idx
        order = np.argsort(self.tkey[scope_rows], kind="stable")
        sorted_keys = self.tkey[scope_rows][order]
        tasks = []
        row_ids_of = {}
        for key in keys:
            lo, hi = np.searchsorted(sorted_keys, [key, key + 1])
            row_ids = scope_rows[order[lo:hi]]
            row_ids_of[key] = row_ids
            tasks.append(
                TopicTask(
                    topic=key,
                    row_offset=0,  # moves come back as positions within row_ids
                    rows=self.rep[row_ids],
                    sizes=self.c.size[row_ids],
                    transfers=by_key[key],
                    rule=self.rule,
                    keep=self.keep[row_ids],
                )
            )
        chunks = [tasks[i : i + TOPICS_PER_CHUNK] for i in range(0, len(tasks), TOPICS_PER_CHUNK)]
        results = [res for chunk in self.mapper(realize_chunk, chunks) for res in chunk]
        for res in sorted(results, key=lambda x: x.topic):
            ids = row_ids_of[res.topic]
            for local, d, u in res.moves:
                self.move(int(ids[local]), d, u)

    def broker_bytes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Bytes per broker index (unknown sizes count 0) of every partition's replicas."""
        rows = self.rep if rows is None else rows
        flat = rows.ravel()
        w = np.repeat(np.maximum(self.c.size, 0), rows.shape[1])
        ok = flat >= 0
        return np.bincount(flat[ok], weights=w[ok], minlength=self.B)

    def even_bytes(self, fixed: np.ndarray) -> int:
        """Bytes, the objective after counts and moves: swap which partition of a topic makes
        a move (same topic, same donor, same receiver, so counts, moves and topic evenness stay)
        whenever another one brings donor and receiver closer to the mean bytes per target
        broker. Returns the swaps made."""
        sizes = np.maximum(self.c.size, 0)
        rows_idx = self.rows_idx
        if len(rows_idx) == 0 or not (sizes[rows_idx] > 0).any():
            return 0
        bb = self.broker_bytes()
        tgt = self.target
        # Each target broker's fair bytes: the mean, or its capacity's share when every
        # target broker's capacity is known (DiskUsageDistributionGoal: even utilisation).
        goal = np.full(self.B, bb[tgt].sum() / int(tgt.sum()))
        if self.capacity_on and (self.disk_caps[tgt] > 0).all():
            goal = np.where(tgt, bb[tgt].sum() * self.disk_caps / self.disk_caps[tgt].sum(), goal)
        w = max(self.rep.shape[1], fixed.shape[1])
        now, was = _pad(self.rep[rows_idx], w), _pad(fixed[rows_idx], w)
        in_now = (now[:, :, None] == was[:, None, :]).any(axis=2)
        in_was = (was[:, :, None] == now[:, None, :]).any(axis=2)
        single = (((now >= 0) & ~in_now).sum(axis=1) == 1) & (((was >= 0) & ~in_was).sum(axis=1) == 1)
        changed = np.zeros(len(self.rep), dtype=bool)
        changed[rows_idx[_set_changed(was, now)]] = True
        in_scope = np.zeros(len(self.rep), dtype=bool)
        in_scope[rows_idx] = True
        moves = []
        for i in np.nonzero(single)[0].tolist():
            u = int(now[i][(now[i] >= 0) & ~in_now[i]][0])
            d = int(was[i][(was[i] >= 0) & ~in_was[i]][0])
            moves.append((int(rows_idx[i]), d, u))
        starts = self.c.topic_start
        swaps = 0
        for r, d, u in moves[:BYTES_SWAP_BUDGET]:
            ideal = ((bb[d] - goal[d]) - (bb[u] - goal[u])) / 2  # bytes more to send from d to u
            if abs(ideal) < 1:
                continue
            t = int(self.c.part_topic[r])
            blk = np.arange(starts[t], starts[t + 1])
            sub = self.rep[blk]
            # (a row keeping its leader through a lower replication factor is a changed row,
            # so it never takes another row's move here)
            ok = (sub == d).any(axis=1) & ~(sub == u).any(axis=1) & ~changed[blk] & in_scope[blk]
            cand = blk[ok]
            if len(cand) == 0:
                continue
            delta = sizes[cand] - sizes[r]
            miss = np.abs(delta - ideal)
            for k in np.lexsort((cand, miss)).tolist():
                if miss[k] >= abs(ideal):
                    break  # no candidate beats leaving the move as it is
                q = int(cand[k])
                if self.rule.k and not self.rule.allowed(self.rep[q].tolist(), d, u):
                    continue
                self.rep[r] = -1
                self.rep[r, : fixed.shape[1]] = fixed[r]
                row = self.rep[q]
                row[int(np.nonzero(row == d)[0][0])] = u
                bb[d] -= delta[k]
                bb[u] += delta[k]
                changed[r], changed[q] = False, True
                swaps += 1
                break
        if swaps:
            self._parts_of = None
        return swaps

    def repair(self) -> None:
        """Direct moves for whatever is still above/below target, then two-step chains."""
        for _ in range(int(self.excess().sum()) + 1):
            ex = self.excess()
            df = self.deficit()
            donors = np.nonzero(ex > 0)[0]
            recv = np.nonzero(df > 0)[0]
            if len(donors) == 0:
                return
            donors = donors[np.lexsort((donors, -ex[donors]))]
            recv = recv[np.lexsort((recv, -df[recv]))]
            if not self._direct(donors, recv) and not self._chain(donors, recv):
                return

    def _direct(self, donors, recv) -> bool:
        for d in donors.tolist():
            for u in recv.tolist():
                r = self._pick(d, u, allow_worse=True)
                if r >= 0:
                    self.move(r, d, u)
                    return True
        return False

    def _chain(self, donors, recv) -> bool:
        """d -> x -> u: d gives a partition to x (at target) and x gives another to u."""
        if len(recv) == 0:
            # Nobody below target but a drained broker still holds replicas: place them on
            # the least loaded allowed broker (it goes above target; later rounds fix it).
            for d in donors.tolist():
                if self.target[d]:
                    continue
                for r in self.parts_of(d):
                    dst = self.best_destination(r, d, need_deficit=False)
                    if dst >= 0:
                        self.move(r, d, dst)
                        return True
            return False
        mids = np.nonzero(self.target)[0]
        for d in donors.tolist():
            for x in mids.tolist():
                if x in recv:
                    continue
                for u in recv.tolist():
                    q = self._pick(x, u, allow_worse=True)
                    if q < 0:
                        continue
                    r = self._pick_excluding(d, x, q)
                    if r >= 0:
                        self.move(q, x, u)
                        self.move(r, d, x)
                        return True
        return False

    def _pick_excluding(self, d: int, x: int, q: int) -> int:
        for r in self.parts_of(d):
            if r == q or x in self.rep[r] or self._keeps(r, d):
                continue
            if self.rule.allowed(self.rep[r].tolist(), d, x):
                return r
        return -1

    # ---- the whole plan ----------------------------------------------------------------------

    def run(self) -> Outcome:
        before_rows = self.original[self.rows_idx].copy()
        self.choose_target_counts()
        lb_initial = self.lower_bound()
        if self.req.fix_racks and self.rule.k:
            self.fix_racks()
            self.recount()
            self._parts_of = None
        fixed = self.rep.copy()
        self.choose_target_counts()
        lower_bound = self.lower_bound()
        if (self.new_rf[self.rows_idx] != self.c.rf[self.rows_idx]).any():
            self.change_replication()
            # Removals are free and fixed the counts of the kept replicas: give the +1 slots
            # to the brokers that now hold the most.
            self.choose_target_counts()
        if (~self.target & (self.cnt > 0)).any():
            self.drain()
            # Where the drained replicas could go decided some counts: re-pick the +1 slots.
            self.choose_target_counts()
        if self.rule.k:
            self.cross_rack()
        self.realize(self.quotas())
        self.repair()
        exact_used = False
        moves_greedy = _moves(fixed[self.rows_idx], self.rep[self.rows_idx])
        fair_greedy = self._fair(self.rep[self.rows_idx])
        if not fair_greedy or moves_greedy > lower_bound:
            units = int(self.excess().sum()) + lower_bound
            if exact.estimate_work(self.rows_idx, self.target, units) <= exact.MAX_WORK:
                sol = exact.solve(fixed[self.rows_idx], self.new_rf[self.rows_idx], self.target, self.rule,
                                  keep=self.keep[self.rows_idx])
                if sol is not None:
                    m = _moves(fixed[self.rows_idx], sol)
                    if (self._fair(sol) and not fair_greedy) or (self._fair(sol) == fair_greedy and m < moves_greedy):
                        width = max(self.rep.shape[1], sol.shape[1])
                        if width > self.rep.shape[1]:
                            wider = np.full((len(self.rep), width), -1, dtype=np.int32)
                            wider[:, : self.rep.shape[1]] = self.rep
                            self.rep = wider
                        self.rep[self.rows_idx] = -1
                        self.rep[self.rows_idx, : sol.shape[1]] = sol
                        self.recount()
                        exact_used = True
        self.bytes_swaps = self.even_bytes(fixed)
        self.count_plan_bytes = self.broker_bytes()
        self.count_plan_moves = _moves(fixed[self.rows_idx], self.rep[self.rows_idx])
        if self.capacity_on:
            # The hard capacity goal, checked before anything is emitted: PlanError when unmet.
            self.capacity_steps = capacities.enforce(self, self.limits)
            if self.capacity_steps:
                self._parts_of = None
        after = self.rep[self.rows_idx]
        moved = _set_changed(before_rows, after)
        leaders.balance_leaders(after, self.leads, prefer=moved)
        self.rep[self.rows_idx] = after
        return self._outcome(before_rows, fixed[self.rows_idx], after, lb_initial, lower_bound, exact_used)

    def _fair(self, rows: np.ndarray) -> bool:
        """R or R+1 replicas on every target broker, none elsewhere."""
        flat = rows.ravel()
        cnt = np.bincount(flat[flat >= 0], minlength=self.B)
        low = int(self.new_rf[self.rows_idx].sum()) // int(self.target.sum())
        on = cnt[self.target]
        return bool(((on == low) | (on == low + 1)).all() and (cnt[~self.target] == 0).all())

    def _outcome(self, before, fixed, after, lb_initial, lower_bound, exact_used) -> Outcome:
        c = self.c
        ids = c.broker_ids
        rows_idx = self.rows_idx
        rack_fix_moves = _moves(before, fixed)
        moves = _moves(fixed, after)
        total_moves = _moves(before, after)
        entries = []
        move_list = []
        adds = _adds(before, after)
        changed = np.nonzero(_changed(before, after))[0] if len(before) else np.zeros(0, dtype=np.int64)
        sizes = c.size[rows_idx]
        bytes_known = not bool(((adds > 0) & (sizes < 0)).any())
        bytes_total = int((adds * np.maximum(sizes, 0)).sum())
        id_list = ids.tolist()
        topics, part_topic, part_num, leader_of = c.topics, c.part_topic, c.part_num, c.leader
        for i in changed.tolist():
            r = int(rows_idx[i])
            b_row = [id_list[x] for x in before[i].tolist() if x >= 0]
            new_ids = [id_list[x] for x in after[i].tolist() if x >= 0]
            topic = topics[part_topic[r]]
            part = int(part_num[r])
            entries.append({"topic": topic, "partition": part, "replicas": new_ids})
            size = int(sizes[i])
            lead = int(leader_of[r])
            lead_id = id_list[lead] if lead >= 0 else -1
            move_list.append(
                {
                    "leader": lead_id if lead_id in b_row else b_row[0],
                    "topic": topic,
                    "partition": part,
                    "old": b_row,
                    "new": new_ids,
                    "adds": int(adds[i]),
                    "bytes": int(adds[i]) * max(size, 0),
                    "size": size,
                }
            )
        reassignment = {"version": 1, "partitions": entries}
        n_t = int(self.target.sum())
        total = int(self.new_rf[rows_idx].sum())
        low, _ = divmod(total, n_t)
        lead_low, _ = leaders.leader_targets(len(rows_idx), int(self.leads.sum()))

        def counts(rows):
            flat = rows.ravel()
            rc = np.bincount(flat[flat >= 0], minlength=self.B)
            lc = np.bincount(rows[:, 0][rows[:, 0] >= 0], minlength=self.B) if len(rows) else np.zeros(self.B, dtype=np.int64)
            return rc, lc

        rc_b, lc_b = counts(before)
        rc_a, lc_a = counts(after)
        sized = bool((c.size[rows_idx] >= 0).any())
        bb_b, bb_a = self.broker_bytes(self.original), self.broker_bytes(self.rep)  # all partitions, scoped or not
        per_broker = []
        caps = self.disk_caps
        for i in range(self.B):
            if not self.target[i] and rc_b[i] == 0 and rc_a[i] == 0:
                continue
            cap = int(caps[i]) if caps[i] > 0 else None
            per_broker.append(
                {
                    "disk_capacity": cap,
                    "disk_capacity_source": self.disk_sources[i],
                    "disk_limit": int(self.limits[i]) if np.isfinite(self.limits[i]) else None,
                    "disk_use_before": round(float(bb_b[i]) / cap, 4) if cap else None,
                    "disk_use_after": round(float(bb_a[i]) / cap, 4) if cap else None,
                    "broker": int(ids[i]),
                    "rack": c.racks[i],
                    "target": bool(self.target[i]),
                    "replicas_before": int(rc_b[i]),
                    "replicas_after": int(rc_a[i]),
                    "leaders_before": int(lc_b[i]),
                    "leaders_after": int(lc_a[i]),
                    "bytes_before": int(bb_b[i]),
                    "bytes_after": int(bb_a[i]),
                }
            )
        tgt = self.target
        fair = bool(((rc_a[tgt] == low) | (rc_a[tgt] == low + 1)).all() and (rc_a[~tgt] == 0).all())
        leads = self.leads
        leaders_fair = bool(((lc_a[leads] == lead_low) | (lc_a[leads] == lead_low + 1)).all())
        rule = self.rule
        broken_after = _invalid(rule, after)
        if not fair and self.fair_possible and broken_after and not self.capacity_steps:
            # fair_possible sums per-rack bounds: necessary, not sufficient, when partitions
            # already break the rack rule (each move of theirs must widen their spread).
            self.warnings.append(
                f"replica counts are not R/R+1 although the racks' totals allow it: {broken_after} partitions "
                "break the rack rule and their replicas may only move to widen their rack spread; no plan found "
                "reaches R/R+1 under that rule"
            )
        kept = int((self.keep[rows_idx] >= 0).sum())
        if not fair and kept:
            # The leaders are a hard rule, the counts are not: say what may have stood in the way.
            self.warnings.append(
                f"replica counts are not R/R+1: {kept} partitions whose replication factor goes down keep "
                "their current leader's replica (lowering drops followers only), which can leave a broker "
                "leading many of them above its target"
            )
        report = {
            "version": 1,
            "mode": self.req.mode,
            "target_brokers": [int(ids[i]) for i in np.nonzero(tgt)[0]],
            "drained_brokers": [int(ids[i]) for i in np.nonzero(~tgt & (rc_b > 0))[0]],
            "topics": len(set(c.part_topic[rows_idx].tolist())),
            "partitions": int(len(rows_idx)),
            "replicas_before": int(rc_b.sum()),
            "replicas_after": int(rc_a.sum()),
            "moves": moves,
            "lower_bound": lower_bound,
            "moves_at_lower_bound": moves == lower_bound,
            "rack_fix_moves": rack_fix_moves,
            "lower_bound_before_rack_fix": lb_initial,
            "total_moves": total_moves,
            "partitions_changed": len(entries),
            "partitions_reordered_only": sum(1 for m in move_list if m["adds"] == 0 and sorted(m["old"]) == sorted(m["new"])),
            "bytes_to_move": bytes_total if bytes_known else None,
            "bytes_to_move_known_part": bytes_total,
            "replica_target": [low, low + 1],
            "leader_target": [lead_low, lead_low + 1],
            "leaders_excluded": [int(ids[i]) for i in np.nonzero(tgt & ~leads)[0]],
            "fair": fair,
            "fairness_reachable": bool(self.fair_possible),
            "leaders_fair": leaders_fair,
            "exact_solver_used": exact_used,
            # max - min bytes over the target brokers (None when no size is known)
            "bytes_spread_before": int(np.ptp(bb_b[tgt])) if sized else None,
            "bytes_spread_after": int(np.ptp(bb_a[tgt])) if sized else None,
            "bytes_swaps": self.bytes_swaps,
            "racks": {
                "count": rule.k,
                "names": rule.names,
                "invalid_partitions_before": _invalid(rule, before),
                "invalid_partitions_after": broken_after,
            },
            "topic_evenness": self._evenness(before, after),
            "per_broker": per_broker,
            "capacity": self._capacity_report(bb_b, bb_a, moves, fair, lower_bound),
            "warnings": self.warnings,
        }
        return Outcome(reassignment, report, move_list)

    def _capacity_report(self, bb_b, bb_a, moves, fair, lower_bound) -> dict | None:
        """The disk goals: before, after the count plan, after the capacity goal (None when no
        target broker's capacity is known)."""
        if not self.capacity_on:
            return None
        tgt = self.target
        lim = self.limits
        known = tgt & (self.disk_caps > 0)
        caps = np.where(known, self.disk_caps, 1)

        def over(bb):
            return [int(self.c.broker_ids[i]) for i in np.nonzero(tgt & (bb > lim))[0]]

        def peak(bb):
            return round(float((bb[known] / caps[known]).max()), 4)

        def band(bb):
            b = capacities.band(bb, self.disk_caps, tgt)
            return {"low": round(b[0], 4), "high": round(b[1], 4), "brokers_outside": b[2]}

        extra = moves - self.count_plan_moves
        unsized = int((self.c.size < 0).sum())
        if unsized:
            # every replica counts at its partition's size: one with none counts 0, so the
            # limits can hold on paper and not on disk
            self.warnings.append(f"disk capacity goal: {unsized} partitions have no known size and count 0 bytes")
        relaxed = any("count_relaxed" in s["reason"] for s in self.capacity_steps)
        if relaxed:
            self.warnings.append("disk capacity goal: some replica counts leave R/R+1 to keep every broker under its threshold")
        return {
            "threshold": self.disk_threshold,
            "brokers_with_capacity": int(known.sum()),
            "target_brokers_without_capacity": [int(self.c.broker_ids[i]) for i in np.nonzero(tgt & ~known)[0]],
            "over_threshold_before": over(bb_b),
            "over_threshold_count_plan": over(self.count_plan_bytes),
            "over_threshold_after": over(bb_a),
            "peak_use_before": peak(bb_b),
            "peak_use_count_plan": peak(self.count_plan_bytes),
            "peak_use_after": peak(bb_a),
            "band_before": band(bb_b),
            "band_after": band(bb_a),
            "count_plan_moves": self.count_plan_moves,
            "extra_moves": extra,
            "count_goal_kept": bool(fair),
            "partitions_without_size": unsized,
            "steps": self.capacity_steps,
        }

    def _evenness(self, before, after) -> dict:
        """Per topic, max - min replicas over target brokers; how many topics are uneven."""
        tp = self.c.part_topic[self.rows_idx].astype(np.int64)
        tb = np.nonzero(self.target)[0]
        n_topics = len(self.c.topics)

        def spreads(rows):
            if len(rows) == 0:
                return np.zeros(0, dtype=np.int64)
            flat = rows.ravel()
            keys = np.repeat(tp, rows.shape[1])
            ok = flat >= 0
            m = np.bincount(keys[ok] * self.B + flat[ok], minlength=n_topics * self.B).reshape(n_topics, self.B)
            present = np.unique(tp)
            sub = m[np.ix_(present, tb)]
            return sub.max(axis=1) - sub.min(axis=1)

        sb, sa = spreads(before), spreads(after)
        return {
            "topics_uneven_before": int((sb > 1).sum()),
            "topics_uneven_after": int((sa > 1).sum()),
            "max_spread_before": int(sb.max()) if len(sb) else 0,
            "max_spread_after": int(sa.max()) if len(sa) else 0,
            "topics_less_even": int((sa > np.maximum(sb, 1)).sum()),
        }


def _rack_floor(per: list, x: int, room: list) -> int:
    """The fewest replicas rack ``x`` can end with for a partition holding ``per[y]`` on each
    rack, under the rack rule's moves (spark_jobs.racks: a replica goes to a rack holding the
    fewest of the others, never more than its own would after it left). Rack x gives one to the
    emptiest rack with a broker to spare while that rack holds fewer than x would keep; other
    racks' moves only raise that minimum. A valid partition's floor is floor(r/K); an invalid
    one's can be lower than both that and what it holds now: [2, 1, 0] lets the middle rack
    reach 0 by giving its replica to the empty one."""
    c = list(per)
    while True:
        spare = [y for y in range(len(c)) if y != x and c[y] < room[y]]
        if not spare:
            return c[x]
        y = min(spare, key=lambda y: c[y])
        if c[y] > c[x] - 1:
            return c[x]
        c[x] -= 1
        c[y] += 1


def _first_by(k: int, *keys: np.ndarray) -> np.ndarray:
    """The first ``k`` indices of ``np.lexsort(keys[::-1])`` (``keys[0]`` the primary key),
    sorting only the entries whose primary key can reach the first ``k``."""
    primary = keys[0]
    if len(primary) > 4 * k:
        cut = np.partition(primary, k - 1)[k - 1]
        sel = np.nonzero(primary <= cut)[0]  # every tie at the cut, so the order is lexsort's
        return sel[np.lexsort(tuple(key[sel] for key in reversed(keys)))][:k]
    return np.lexsort(tuple(reversed(keys)))[:k]


def _pad(rows: np.ndarray, width: int) -> np.ndarray:
    out = np.full((len(rows), width), -1, dtype=np.int64)
    out[:, : rows.shape[1]] = rows
    return out


def _adds(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per row, how many brokers in ``after`` were not in ``before``."""
    if len(before) == 0:
        return np.zeros(0, dtype=np.int64)
    w = max(before.shape[1], after.shape[1])
    a, b = _pad(after, w), _pad(before, w)
    present = (a[:, :, None] == b[:, None, :]).any(axis=2)
    return ((a >= 0) & ~present).sum(axis=1)


def _moves(before: np.ndarray, after: np.ndarray) -> int:
    """Replicas added: per row, brokers in ``after`` that were not in ``before``."""
    return int(_adds(before, after).sum())


def _changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Rows whose replica list differs (order included)."""
    w = max(before.shape[1], after.shape[1])
    return (_pad(before, w) != _pad(after, w)).any(axis=1)


def _set_changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Rows whose replica set differs (order ignored)."""
    w = max(before.shape[1], after.shape[1])
    return (np.sort(_pad(before, w), axis=1) != np.sort(_pad(after, w), axis=1)).any(axis=1)


def _invalid(rule: RackRule, rows: np.ndarray) -> int:
    if rule.k == 0:
        return 0
    return sum(1 for row in rows.tolist() if not rule.is_valid(row))


def plan_cluster(snap: dict, req: PlanRequest, mapper=None) -> Outcome:
    """Plan one cluster from a validated snapshot."""
    return _Planner(snap, req, mapper).run()
