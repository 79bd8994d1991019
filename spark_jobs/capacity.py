"""Disk capacity: the capacity file, per-broker limits, and the two disk goals.

Capacities come from, per broker, in this order: its own entry in the capacity file (Cruise
Control's ``capacity.json`` / ``capacityJBOD.json`` shape), the ``disk_bytes`` a snapshot
records for it (DescribeLogDirs v4 ``total_bytes``, KIP-827), the file's default entry
(``brokerId`` "-1"). A broker with none of them has no disk limit.

The capacity file::

    {"brokerCapacities": [
      {"brokerId": "-1", "capacity": {"DISK": "500000"}, "doc": "default: 500,000 MiB"},
      {"brokerId": "3",  "capacity": {"DISK": {"/data1": "250000", "/data2": "250000"}}}
    ]}

DISK is in MiB, as Cruise Control reads it (its ``BYTES_IN_MB`` is 1024 * 1024); a JBOD entry
maps log directories to MiB and counts their sum. Other resources (CPU, NW_IN, NW_OUT) may be
present and are ignored.

Goals, in priority order (DESIGN.md 6): the rack rule and drained brokers (hard, core); the
capacity goal (hard: no target broker above ``threshold`` x capacity after the plan, or the plan
is refused); replica counts R/R+1; moves at the lower bound; disk use within a band around the
mean utilisation (``DiskUsageDistributionGoal``, met only by move-neutral swaps, reported);
per-topic evenness; leaders.

Usage::

    spec = capacity.load_file("capacity.json")          # CapacityError on a bad file
    api.plan(snap, "rebalance", capacity=spec, disk_threshold=0.8)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Cruise Control's disk.capacity.threshold default: a broker's disk may be at most 80% full.
DEFAULT_THRESHOLD = 0.8
# Cruise Control's disk.balance.threshold default: utilisation within 1.10x of the mean (and
# as far below it) counts as balanced.
DEFAULT_BAND = 1.10
MIB = 1024 * 1024  # Cruise Control's DISK unit
DEFAULT_BROKER = -1  # Cruise Control's id for the default entry
# Capacity moves one plan may add, at most: each is a scan of one broker's replicas; a cluster
# needing more is far outside what a threshold fix means and is refused with the count.
MAX_CAPACITY_MOVES = 100_000
# Largest replicas of an over-threshold broker tried per step, and receivers tried for each:
# largest-first means the answer is nearly always among the first few.
CANDIDATES = 64
RECEIVERS = 64


class CapacityError(ValueError):
    """A capacity file or threshold that cannot be used; the message names the element."""


@dataclass(frozen=True)
class CapacitySpec:
    """Disk capacity in bytes per broker id, and the default for brokers not listed."""

    brokers: dict = field(default_factory=dict)  # broker id -> bytes
    default: int | None = None
    source: str = "<capacity>"


def _mib(value, where: str) -> float:
    if isinstance(value, bool):
        raise CapacityError(f"{where}: expected a number of MiB, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CapacityError(f"{where}: expected a number of MiB, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise CapacityError(f"{where}: a disk capacity is a positive number of MiB, got {value!r}")
    return v


def parse(doc, source: str = "<capacity>") -> CapacitySpec:
    """A CapacitySpec from a decoded capacity file; CapacityError naming the bad element."""
    if not isinstance(doc, dict) or not isinstance(doc.get("brokerCapacities"), list):
        raise CapacityError(f"{source}: expected an object with a brokerCapacities list (Cruise Control's capacity file)")
    brokers: dict[int, int] = {}
    default = None
    for i, entry in enumerate(doc["brokerCapacities"]):
        where = f"{source}: brokerCapacities[{i}]"
        if not isinstance(entry, dict):
            raise CapacityError(f"{where}: expected an object")
        raw_id = entry.get("brokerId")
        try:
            bid = int(raw_id) if not isinstance(raw_id, bool) else None
        except (TypeError, ValueError):
            bid = None
        if bid is None or bid < DEFAULT_BROKER or str(raw_id).strip() != str(bid):
            raise CapacityError(f"{where}.brokerId: expected a broker id or \"-1\" (the default), got {raw_id!r}")
        cap = entry.get("capacity")
        if not isinstance(cap, dict) or "DISK" not in cap:
            raise CapacityError(f"{where}.capacity: expected an object with DISK")
        disk = cap["DISK"]
        if isinstance(disk, dict):  # capacityJBOD.json: log dir -> MiB
            if not disk:
                raise CapacityError(f"{where}.capacity.DISK: no log directories")
            mib = sum(_mib(v, f"{where}.capacity.DISK[{k!r}]") for k, v in disk.items())
        else:
            mib = _mib(disk, f"{where}.capacity.DISK")
        nbytes = int(mib * MIB)
        if bid == DEFAULT_BROKER:
            if default is not None:
                raise CapacityError(f"{where}: a second default entry (brokerId -1)")
            default = nbytes
        else:
            if bid in brokers:
                raise CapacityError(f"{where}: broker {bid} listed twice")
            brokers[bid] = nbytes
    return CapacitySpec(brokers=brokers, default=default, source=source)


def load_file(path) -> CapacitySpec:
    """Read and parse a capacity file; CapacityError when it cannot be read or is malformed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CapacityError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise CapacityError(f"{path}: not JSON: {e}") from None
    return parse(doc, str(path))


def check_threshold(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= 1):
        raise CapacityError(f"disk threshold must be in (0, 1], got {value!r}")
    return float(value)


def resolve(broker_ids, reported: dict, spec: CapacitySpec | None) -> tuple[np.ndarray, list]:
    """Per broker index: capacity in bytes (-1 when unknown) and where it came from."""
    caps = np.full(len(broker_ids), -1, dtype=np.int64)
    sources = [None] * len(broker_ids)
    for i, b in enumerate(int(x) for x in broker_ids):
        if spec is not None and b in spec.brokers:
            caps[i], sources[i] = spec.brokers[b], "file"
        elif reported.get(b) is not None:
            caps[i], sources[i] = int(reported[b]), "describe_log_dirs"
        elif spec is not None and spec.default is not None:
            caps[i], sources[i] = spec.default, "file_default"
    return caps, sources


# ---- the capacity goal ---------------------------------------------------------------------------


def enforce(p, limits: np.ndarray) -> list[dict]:
    """Bring every target broker of planner ``p`` to at most ``limits`` bytes (inf: no limit).

    Largest replicas first, from the broker furthest over; in order of preference:
    1. one move to a broker with room that keeps counts within R/R+1 (the donor holds R+1, the
       receiver R);
    2. a swap: the large replica goes to a broker with room and one of that broker's smaller
       replicas comes back (two moves, counts unchanged);
    3. one move that leaves R/R+1 (reason ``count_relaxed``).
    Returns the steps taken; raises PlanError (with the reason) when no assignment is found
    that meets every limit. ``p`` is the core planner: rep, cnt, move(), parts_of(), rule,
    target, c.size, broker_bytes(), keep (per row, a broker whose replica must stay)."""
    from spark_jobs.errors import PlanError

    sizes = np.maximum(p.c.size, 0)
    tgt = p.target
    ids = p.c.broker_ids
    bb = p.broker_bytes().astype(np.float64)
    total = float(bb[tgt].sum())
    room_total = float(np.where(np.isfinite(limits[tgt]), limits[tgt], np.inf).sum())
    if total > room_total:
        raise PlanError(
            f"disk capacity goal: the target brokers hold {int(total):,} bytes but their limits add up to "
            f"{int(room_total):,} bytes; no assignment keeps every broker under its threshold"
        )
    scoped = p.rows_idx
    if len(scoped):
        r = int(scoped[np.argmax(sizes[scoped])])
        if sizes[r] > limits[tgt].max():
            raise PlanError(
                f"disk capacity goal: {p.c.topics[p.c.part_topic[r]]}-{int(p.c.part_num[r])} holds {int(sizes[r]):,} bytes, "
                f"more than any target broker's limit (largest {int(limits[tgt].max()):,})"
            )
    n_t = int(tgt.sum())
    low = int(p.new_rf[p.rows_idx].sum()) // n_t
    held = _Held(p)
    steps: list[dict] = []

    def name(r):
        return f"{p.c.topics[p.c.part_topic[r]]}-{int(p.c.part_num[r])}"

    def record(r, src, dst, kind, reason):
        steps.append({"topic": p.c.topics[p.c.part_topic[r]], "partition": int(p.c.part_num[r]),
                      "from": int(ids[src]), "to": int(ids[dst]), "bytes": int(sizes[r]), "kind": kind,
                      "reason": reason})

    while True:
        over = np.nonzero(tgt & (bb > limits))[0]
        if len(over) == 0:
            return steps
        if len(steps) >= MAX_CAPACITY_MOVES:
            raise PlanError(f"disk capacity goal: still {len(over)} brokers over their threshold after "
                            f"{MAX_CAPACITY_MOVES} capacity moves")
        h = int(over[np.argmax(bb[over] - limits[over])])
        why = f"broker {int(ids[h])} at {int(bb[h]):,} bytes is over its limit {int(limits[h]):,}"
        rows = held.rows[h]
        # A leader the plan keeps through a lower replication factor (p.keep) never leaves.
        rows = rows[(sizes[rows] > 0) & (p.keep[rows] != h)]
        if len(rows) == 0:
            raise PlanError(f"disk capacity goal: {why} and holds no replica the plan may move")
        rows = rows[np.lexsort((rows, -sizes[rows]))][:CANDIDATES]
        room = limits - bb
        recv = np.nonzero(tgt & (room > 0))[0]
        recv = recv[recv != h]
        recv = recv[np.lexsort((recv, -room[recv]))][:RECEIVERS]
        done = False
        # 1. a single move that keeps R/R+1
        if p.cnt[h] == low + 1:
            for r in rows.tolist():
                s = sizes[r]
                row = p.rep[r]
                for c in recv.tolist():
                    if p.cnt[c] == low and room[c] >= s and c not in row and p.rule.allowed(row.tolist(), h, c):
                        held.move(r, h, c)
                        bb[h] -= s
                        bb[c] += s
                        record(r, h, c, "move", why)
                        done = True
                        break
                if done:
                    break
        others: dict = {}

        def on(c):
            """c's in-scope replicas of partitions h does not hold, by size: (rows, sizes)."""
            if c not in others:
                qs = held.rows[c]
                qs = qs[~(p.rep[qs] == h).any(axis=1) & (p.keep[qs] != c)]
                qs = qs[np.lexsort((qs, sizes[qs]))]
                others[c] = (qs, sizes[qs])
            return others[c]

        # 2. a swap: r goes h -> c, a smaller q comes c -> h
        if not done:
            best = None  # (reduction, r, c, q)
            for r in rows.tolist():
                s = sizes[r]
                row = p.rep[r]
                for c in recv.tolist():
                    if c in row or not p.rule.allowed(row.tolist(), h, c):
                        continue
                    qs, sq = on(c)
                    # c ends at bb[c] + s - sq <= limit: sq >= s - room[c]; and sq < s for h to gain
                    k = int(np.searchsorted(sq, s - room[c], "left"))
                    for k in range(k, min(len(qs), k + CANDIDATES)):
                        if sq[k] >= s:
                            break
                        q = int(qs[k])
                        if p.rule.allowed(p.rep[q].tolist(), c, h):
                            gain = s - sq[k]
                            if best is None or gain > best[0]:
                                best = (gain, r, c, q)
                            break
                if best is not None and best[0] >= bb[h] - limits[h]:
                    break  # this swap alone brings h under: largest-first, stop looking
            if best is not None:
                _, r, c, q = best
                held.move(r, h, c)
                held.move(q, c, h)
                d = float(sizes[r] - sizes[q])
                bb[h] -= d
                bb[c] += d
                record(r, h, c, "swap", why)
                record(q, c, h, "swap", why)
                done = True
        # 3. a chain: r goes h -> c once c has passed one of its replicas q on to d (counts:
        #    h -1, d +1), first where that keeps R/R+1, then anywhere
        if not done:
            done = _chain(p, held, h, rows, recv, room, bb, sizes, on, low, record, why)
        # 4. a single move that gives up R/R+1
        if not done:
            for r in rows.tolist():
                s = sizes[r]
                row = p.rep[r]
                for c in recv.tolist():
                    if room[c] >= s and c not in row and p.rule.allowed(row.tolist(), h, c):
                        held.move(r, h, c)
                        bb[h] -= s
                        bb[c] += s
                        record(r, h, c, "move", why + "; no move or swap within R/R+1 fits (count_relaxed)")
                        done = True
                        break
                if done:
                    break
        if not done:
            done = _chain(p, held, h, rows, recv, room, bb, sizes, on, None, record, why)
        if not done:
            largest = int(rows[0])
            raise PlanError(
                f"disk capacity goal: {why}, and none of its replicas (largest {name(largest)}, "
                f"{int(sizes[largest]):,} bytes) fits on another broker under its threshold, "
                "by a move, a swap or a two-step chain, within the rack rule"
            )


class _Held:
    """The in-scope rows each broker holds, kept current through ``move`` (the planner's own
    index re-checks every row on each read, which a search of many brokers cannot afford)."""

    def __init__(self, p):
        self.p = p
        sub = p.rep[p.rows_idx]
        flat = sub.ravel()
        owners = np.repeat(p.rows_idx, sub.shape[1])
        ok = flat >= 0
        flat, owners = flat[ok], owners[ok]
        order = np.argsort(flat, kind="stable")
        flat, owners = flat[order], owners[order].astype(np.int64)
        bounds = np.searchsorted(flat, np.arange(p.B + 1))
        self.rows = [owners[bounds[b] : bounds[b + 1]] for b in range(p.B)]

    def move(self, r: int, src: int, dst: int) -> None:
        self.p.move(r, src, dst)
        self.rows[src] = self.rows[src][self.rows[src] != r]
        self.rows[dst] = np.append(self.rows[dst], r)


def _chain(p, held, h, rows, recv, room, bb, sizes, on, low, record, why) -> bool:
    """r: h -> c, made room for by q: c -> d. With ``low`` only where h holds R+1 and d R (the
    counts stay R/R+1); with None anywhere (reason count_relaxed). True when one was made."""
    if low is not None and p.cnt[h] != low + 1:
        return False
    for r in rows.tolist():
        s = sizes[r]
        row = p.rep[r]
        for c in recv.tolist():
            if c in row or not p.rule.allowed(row.tolist(), h, c):
                continue
            need = s - room[c]  # what q must take off c
            if need <= 0:
                continue  # a plain move would have done
            qs, sizes_q = on(c)
            first = int(np.searchsorted(sizes_q, need, "left"))
            for q in qs[first : first + CANDIDATES].tolist():
                sq = sizes[q]
                qrow = p.rep[q]
                for d in recv.tolist():
                    if d == c or d in qrow or room[d] < sq or (low is not None and p.cnt[d] != low):
                        continue
                    if not p.rule.allowed(qrow.tolist(), c, d):
                        continue
                    held.move(q, c, d)
                    held.move(r, h, c)
                    bb[c] += s - sq
                    bb[d] += sq
                    bb[h] -= s
                    tail = "" if low is not None else "; no move, swap or chain within R/R+1 fits (count_relaxed)"
                    record(q, c, d, "chain", why + tail)
                    record(r, h, c, "chain", why + tail)
                    return True
    return False


# ---- the report ---------------------------------------------------------------------------------


def band(bb: np.ndarray, caps: np.ndarray, tgt: np.ndarray, factor: float = DEFAULT_BAND):
    """Cruise Control's DiskUsageDistributionGoal band: utilisation within [mean x (2 - factor),
    mean x factor] over target brokers with a known capacity. (lo, hi, brokers outside) or None."""
    known = tgt & (caps > 0)
    if not known.any():
        return None
    util = bb[known] / caps[known]
    mean = float(bb[known].sum() / caps[known].sum())
    lo, hi = mean * (2 - factor), mean * factor
    outside = int(((util < lo - 1e-12) | (util > hi + 1e-12)).sum())
    return lo, hi, outside
