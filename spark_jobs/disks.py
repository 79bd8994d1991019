"""Disk balance inside each broker (Cruise Control's ``rebalance_disk``: its
IntraBrokerDiskCapacityGoal and IntraBrokerDiskUsageDistributionGoal). Pure: no I/O.

Input: each broker's log directories as its DescribeLogDirs answer gives them
(:func:`dirs_from_answer`: online or not, total bytes, the current and future logs with their
sizes) and each partition's replica list. Output: intra-broker moves, a replica into another
directory of the same broker, that bring every online directory's used fraction (bytes held /
``total_bytes``) within ``band`` of the broker's mean, with few moves; as Kafka's reassignment
JSON with ``log_dirs`` (replicas unchanged), the format ``kafka-reassign --execute`` reads.

How (per broker, brokers independent):

- the mean is the bytes of all online directories over their capacity; a directory is in balance
  when its fraction is within ``band`` x mean of it (Cruise Control's disk balance threshold);
- while some directory is out of balance, the one move (a replica from a directory above the
  mean to one below it) that lowers the sum of squared deviations the most is made; a move must
  leave its destination at or under ``threshold`` x total (the capacity goal: never fill a disk
  past it); a replica may move again, and one that ends where it began is no move;
- it stops when every directory is in balance or no move helps. The state it stops at is one
  it would stop at again: planning the planned layout proposes nothing (idempotent).

The largest helpful move wins each step, so a few large replicas do the work of many small ones.

What is never moved, each with its reason in ``unmovable`` / ``brokers_skipped``:

- a broker with an offline directory: Kafka's LogManager creates no future log while any
  directory of the broker is offline, so AlterReplicaLogDirs answers KAFKA_STORAGE_ERROR for
  every move on it (sim/ does the same); its replicas in the offline directory are also unknown
  to DescribeLogDirs (listed from the assignment as not found in an online directory);
- a replica already moving (a future log copying): the move owns it; its bytes count where
  they are going;
- a replica with no partition assignment (a stray the controller will delete).

Directories with an unknown ``total_bytes`` (-1, an answer older than v4) make the broker
balanced by bytes instead (every online directory weighs the same), said in the report.

Usage::

    layouts = {1: dirs_from_answer(describe_log_dirs_answer_of_broker_1), ...}
    plan = plan_disks(layouts, {("orders", 0): [1, 2], ...})
    plan.moves            # [DiskMove(topic, partition, broker, source, target, size)]
    plan.reassignment()   # {"version": 1, "partitions": [{"topic", "partition", "replicas", "log_dirs"}]}
    plan.report()         # per broker: directories before/after, mean, skipped; unmovable
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spark_jobs.errors import PlanError
from znodes.values import TopicPartition

# Cruise Control's disk balance threshold (1.10): a directory within 10% of its broker's mean
# used fraction is balanced. Tighter costs moves that buy little.
DEFAULT_BAND = 0.10
# The capacity goal's share of a disk no move may fill past (Cruise Control's 0.8, as the
# inter-broker planner's --disk-threshold).
DEFAULT_THRESHOLD = 0.8
# A move must lower the squared-deviation sum by more than this share of it: float noise never
# counts as an improvement (and so never makes two plans of one layout differ).
MIN_GAIN = 1e-9
# Unmovable replicas listed in the report, at most (the count is exact).
LISTED_MAX = 200
ANY = "any"  # Kafka's "no directory asked for" in a reassignment JSON

SKIP_OFFLINE = ("log directory {dirs} is offline: Kafka creates no future log while a directory of the broker "
                "is offline (AlterReplicaLogDirs answers KAFKA_STORAGE_ERROR), so no replica of it can move")
SKIP_ONE_DIR = "one online log directory: nothing to balance"
SKIP_NO_ANSWER = "no DescribeLogDirs answer: {why}"
WHY_OFFLINE = ("not in any online log directory (its directory {dirs} is offline, or the replica does not exist "
               "yet): the broker cannot read it, so it cannot move")
WHY_MOVING = "already moving to {dir} (a future log copies): that move owns it"
WHY_STRAY = "no partition assignment lists broker {broker}: a stray replica, not the planner's to move"
WHY_UNKNOWN_SIZE = "size unknown"


@dataclass(frozen=True)
class LogDir:
    """One log directory as DescribeLogDirs reports it. ``replicas`` / ``futures``: partition ->
    bytes of its current / future log here. ``total_bytes`` -1: unknown."""

    path: str
    online: bool = True
    total_bytes: int = -1
    replicas: Mapping[TopicPartition, int] = field(default_factory=dict)
    futures: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class DiskMove:
    topic: str
    partition: int
    broker: int
    source: str
    target: str
    size: int


def dirs_from_answer(answer: dict) -> list[LogDir]:
    """One broker's directories from its DescribeLogDirs response body (any version), in the
    order it reports them. A directory with an error code (KAFKA_STORAGE_ERROR) is offline."""
    out = []
    for r in answer.get("results") or []:
        current, future = {}, {}
        for t in r.get("topics") or []:
            for p in t.get("partitions") or []:
                (future if p.get("is_future_key") else current)[(t["name"], p["partition_index"])] = \
                    max(0, int(p.get("partition_size", 0)))
        total = r.get("total_bytes", -1)
        out.append(LogDir(r.get("log_dir", ""), r.get("error_code", 0) == 0,
                          total if isinstance(total, int) and total > 0 else -1, current, future))
    return out


@dataclass
class _Broker:
    """One broker's working state: where each replica is (dir index), the bytes per dir."""

    id: int
    dirs: list[LogDir]
    online: list[int]  # indexes of the online dirs
    capacity: list[float]  # per dir: total bytes, or 1 when balancing by bytes
    by_bytes: bool
    used: list[int]
    place: dict  # partition -> dir index now (movable replicas only)
    start: dict  # partition -> dir index at the start
    size: dict  # partition -> bytes

    def fractions(self) -> list[float]:
        return [self.used[i] / self.capacity[i] for i in range(len(self.dirs))]

    def mean(self) -> float:
        return sum(self.used[i] for i in self.online) / sum(self.capacity[i] for i in self.online)

    def balanced(self, band: float) -> bool:
        m = self.mean()
        return all(abs(self.used[i] / self.capacity[i] - m) <= band * m for i in self.online)


@dataclass
class DiskPlan:
    band: float
    threshold: float
    moves: list = field(default_factory=list)  # DiskMove, sorted
    assignments: dict = field(default_factory=dict)  # partition -> replicas (the moved ones)
    brokers: dict = field(default_factory=dict)  # broker -> its report entry
    unmovable: list = field(default_factory=list)  # {"topic","partition","broker","reason"}
    skipped: dict = field(default_factory=dict)  # broker -> why it gets no move

    def reassignment(self) -> dict:
        """Kafka's reassignment JSON: one entry per partition with a move, its replicas as they
        are and ``log_dirs`` naming the new directory of each moved replica (``"any"`` else)."""
        target: dict[TopicPartition, dict[int, str]] = {}
        for m in self.moves:
            target.setdefault((m.topic, m.partition), {})[m.broker] = m.target
        parts = []
        for (t, p), dirs in sorted(target.items()):
            replicas = list(self.assignments[(t, p)])
            parts.append({"topic": t, "partition": p, "replicas": replicas,
                          "log_dirs": [dirs.get(b, ANY) for b in replicas]})
        return {"version": 1, "partitions": parts}

    def report(self) -> dict:
        return {
            "mode": "rebalance-disks",
            "band": self.band,
            "threshold": self.threshold,
            "moves": len(self.moves),
            "bytes_moved": sum(m.size for m in self.moves),
            "partitions_changed": len({(m.topic, m.partition) for m in self.moves}),
            "moves_listed": [{"topic": m.topic, "partition": m.partition, "broker": m.broker, "from": m.source,
                              "to": m.target, "bytes": m.size} for m in self.moves],
            "brokers": [self.brokers[b] for b in sorted(self.brokers)],
            "brokers_skipped": [{"broker": b, "reason": r} for b, r in sorted(self.skipped.items())],
            "unmovable_count": len(self.unmovable),
            "unmovable": self.unmovable[:LISTED_MAX],
        }


def plan_disks(layouts: Mapping[int, list[LogDir] | str], assignments: Mapping[TopicPartition, Iterable[int]], *,
               brokers: Iterable[int] | None = None, band: float = DEFAULT_BAND,
               threshold: float = DEFAULT_THRESHOLD) -> DiskPlan:
    """Intra-broker moves for every broker in ``layouts`` (or only ``brokers``). A layout given
    as a string is a broker that gave no answer (the string says why): skipped.
    ``assignments``: partition -> its replica list (which brokers hold it, in order).
    PlanError for a band or threshold out of range, or a broker asked for with no layout."""
    if not 0 < band < 1:
        raise PlanError(f"band must be a fraction in (0, 1), got {band!r}")
    if not 0 < threshold <= 1:
        raise PlanError(f"threshold must be a fraction in (0, 1], got {threshold!r}")
    wanted = sorted(layouts) if brokers is None else sorted(set(brokers))
    missing = [b for b in wanted if b not in layouts]
    if missing:
        raise PlanError(f"no log directories known for broker(s) {', '.join(map(str, missing))} "
                        f"(known: {', '.join(map(str, sorted(layouts))) or 'none'})")
    assigned = {tp: list(r) for tp, r in assignments.items()}
    hosted_by: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assigned.items():
        for b in replicas:
            hosted_by.setdefault(b, []).append(tp)
    plan = DiskPlan(band, threshold)
    for b in wanted:
        layout = layouts[b]
        if isinstance(layout, str):
            plan.skipped[b] = SKIP_NO_ANSWER.format(why=layout)
            continue
        _plan_broker(plan, b, layout, assigned, sorted(hosted_by.get(b, ())))
    plan.moves.sort()
    plan.assignments = {(m.topic, m.partition): assigned[(m.topic, m.partition)] for m in plan.moves}
    return plan


def moves_out_of_date(moves: Iterable[DiskMove], layouts: Mapping[int, list[LogDir] | str]) -> list[str]:
    """Why the reviewed ``moves`` no longer fit the brokers' directories as ``layouts`` give
    them now (one line per move that does not; empty: every move still stands as planned). A
    move stands while its broker answers with every directory online (else no future log can be
    made), its replica is still a current log in its source directory with no future log
    anywhere, and its target directory is still there. Executing a reviewed proposal checks this
    first, as the inter-broker planner's proposals check the layout version: a disk proposal
    depends on directories, which the model does not hold."""
    out = []
    for m in sorted(moves):
        layout = layouts.get(m.broker, "not asked")
        where = f"{m.topic}-{m.partition} on broker {m.broker}"
        if isinstance(layout, str):
            out.append(f"{where}: no DescribeLogDirs answer ({layout})")
            continue
        by_path = {d.path: d for d in layout}
        tp = (m.topic, m.partition)
        offline = [d.path for d in layout if not d.online]
        moving = [d.path for d in layout if tp in d.futures]
        if offline:
            out.append(f"{where}: log directory {', '.join(offline)} is offline now")
        elif m.source not in by_path or tp not in by_path[m.source].replicas:
            now = [d.path for d in layout if tp in d.replicas]
            out.append(f"{where}: no longer in {m.source} (now in {', '.join(now) or 'no directory'})")
        elif moving:
            out.append(f"{where}: already moving to {', '.join(moving)}")
        elif m.target not in by_path:
            out.append(f"{where}: target directory {m.target} is gone")
    return out


def _plan_broker(plan: DiskPlan, b: int, dirs: list[LogDir], assigned: dict, hosted: list[TopicPartition]) -> None:
    offline = [d.path for d in dirs if not d.online]
    where = {}
    for d in dirs:
        for tp in d.replicas:
            where[tp] = d.path
    for tp in hosted:
        if tp not in where:
            plan.unmovable.append(_entry(tp, b, WHY_OFFLINE.format(dirs=", ".join(offline) or "none")))
    if offline:
        plan.skipped[b] = SKIP_OFFLINE.format(dirs=", ".join(offline))
        plan.brokers[b] = _broker_entry(b, dirs, None, None, plan.band)
        return
    state = _state(plan, b, dirs, assigned)
    if len(state.online) < 2:
        plan.skipped[b] = SKIP_ONE_DIR
        plan.brokers[b] = _broker_entry(b, dirs, state, list(state.used), plan.band)
        return
    before = list(state.used)
    _balance(state, plan.band, plan.threshold)
    for tp in sorted(state.place):
        i, j = state.start[tp], state.place[tp]
        if i != j:
            plan.moves.append(DiskMove(tp[0], tp[1], b, dirs[i].path, dirs[j].path, state.size[tp]))
    plan.brokers[b] = _broker_entry(b, dirs, state, before, plan.band)


def _state(plan: DiskPlan, b: int, dirs: list[LogDir], assigned: dict) -> _Broker:
    online = [i for i, d in enumerate(dirs) if d.online]
    by_bytes = any(dirs[i].total_bytes <= 0 for i in online)
    capacity = [1.0 if by_bytes or d.total_bytes <= 0 else float(d.total_bytes) for d in dirs]
    used = [0] * len(dirs)
    moving = {}
    for i, d in enumerate(dirs):
        for tp, size in d.futures.items():
            moving[tp] = i
    place, size = {}, {}
    for i, d in enumerate(dirs):
        for tp, s in sorted(d.replicas.items()):
            if tp in moving:  # its bytes count where they are going
                used[moving[tp]] += s
                plan.unmovable.append(_entry(tp, b, WHY_MOVING.format(dir=dirs[moving[tp]].path)))
                continue
            used[i] += s
            if b not in assigned.get(tp, ()):
                plan.unmovable.append(_entry(tp, b, WHY_STRAY.format(broker=b)))
                continue
            place[tp], size[tp] = i, s
    return _Broker(b, dirs, online, capacity, by_bytes, used, place, dict(place), size)


def _balance(s: _Broker, band: float, threshold: float) -> None:
    """The greedy loop (module docstring): the best move while a directory is out of balance."""
    mean = s.mean()
    if mean == 0:
        return
    limit = [threshold * s.dirs[i].total_bytes if not s.by_bytes else float("inf") for i in range(len(s.dirs))]

    def dev(i: int, used: int) -> float:
        return used / s.capacity[i] - mean

    # every move strictly lowers the sum of squares, so the loop ends; this bounds it anyway
    for _ in range(len(s.place) * len(s.online) + 1):
        if s.balanced(band):
            return
        total = sum(dev(i, s.used[i]) ** 2 for i in s.online)
        above = [i for i in s.online if dev(i, s.used[i]) > 0]
        below = [i for i in s.online if dev(i, s.used[i]) < 0]
        best = None  # (key, partition, source, target): the largest gain, then the larger replica, then names
        for tp, i in sorted(s.place.items()):
            if i not in above:
                continue
            size = s.size[tp]
            if size == 0:
                continue
            old_i = dev(i, s.used[i]) ** 2
            for j in below:
                if s.used[j] + size > limit[j]:
                    continue
                gain = (old_i + dev(j, s.used[j]) ** 2
                        - dev(i, s.used[i] - size) ** 2 - dev(j, s.used[j] + size) ** 2)
                if gain <= MIN_GAIN * total:
                    continue
                key = (-gain, -size, tp, i, j)
                if best is None or key < best[0]:
                    best = (key, tp, i, j)
        if best is None:
            return
        _, tp, i, j = best
        s.used[i] -= s.size[tp]
        s.used[j] += s.size[tp]
        s.place[tp] = j


def _entry(tp: TopicPartition, b: int, reason: str) -> dict:
    return {"topic": tp[0], "partition": tp[1], "broker": b, "reason": reason}


def _broker_entry(b: int, dirs: list[LogDir], state: _Broker | None, before: list[int] | None,
                  band: float) -> dict:
    """A broker's report: each directory's bytes (and used fraction, when capacities are
    known) before and after, the mean, and whether it is balanced before and after."""
    dir_rows = []
    for i, d in enumerate(dirs):
        row = {"path": d.path, "online": d.online, "total_bytes": d.total_bytes}
        if state is not None:
            row["bytes_before"] = before[i]
            row["bytes_after"] = state.used[i]
            known = not state.by_bytes
            row["use_before"] = round(before[i] / state.capacity[i], 6) if known else None
            row["use_after"] = round(state.used[i] / state.capacity[i], 6) if known else None
        dir_rows.append(row)
    out = {"broker": b, "dirs": dir_rows}
    if state is not None and state.online:
        after = list(state.used)
        state.used = list(before)
        out["balanced_before"] = state.balanced(band)
        state.used = after
        out["balanced_after"] = state.balanced(band)
        out["balanced_by"] = "bytes (a directory's total_bytes is unknown)" if state.by_bytes else "used fraction"
        out["mean"] = round(state.mean(), 6)
    return out
