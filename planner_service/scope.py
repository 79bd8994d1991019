"""What a plan may move: Cruise Control's ``excluded_topics`` and
``excluded_brokers_for_replica_move`` applied to the planner's snapshot, and the plan put back
together afterwards. Pure: no I/O.

- ``excluded_topics`` (a regular expression, matched against the whole topic name as Java's
  ``matches`` does): those topics' partitions are left out of the plan and stay where they are,
  except a partition with a replica on a broker being drained (decommission) or gone (Cruise
  Control moves an excluded topic's replica off a dead or removed broker too).
- ``excluded_brokers_for_replica_move``: no replica moves onto these brokers. Their replicas
  are hidden from the planner (it sees each partition without them) and the brokers are left
  out of the target set, so nothing is placed there; the hidden replicas are put back at their
  places in every planned replica list. A broker being drained cannot be excluded.

The planner then balances what it sees: replica counts are R/R+1 over the partitions it may
move, on the brokers that may receive.

Usage::

    scope = Scope(re.compile("__.*"), frozenset({4}))
    r = restrict(snapshot, scope, "decommission", [3], None)     # ScopeError for a contradiction
    result = api.plan(r.snapshot, "decommission", brokers=[3], broker_list=r.broker_list, ...)
    result = restore(result, r, max_in=2, max_out=2, throttle=None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spark_jobs import batching
from spark_jobs.api import PlanResult


class ScopeError(ValueError):
    """Exclusions that contradict the request (a 400)."""


@dataclass(frozen=True)
class Scope:
    excluded_topics: re.Pattern | None = None
    excluded_brokers: frozenset = frozenset()

    @property
    def empty(self) -> bool:
        return self.excluded_topics is None and not self.excluded_brokers

    def view(self) -> dict:
        return {"excluded_topics": self.excluded_topics.pattern if self.excluded_topics is not None else None,
                "excluded_brokers_for_replica_move": sorted(self.excluded_brokers)}


@dataclass
class Restricted:
    snapshot: dict
    broker_list: list | None  # the base broker set to plan over (None: the request's own)
    topics: list | None  # the request's topics that are left to plan
    # partition -> (its replicas, its leader) where replicas were hidden from the planner
    hidden: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    racks: dict = field(default_factory=dict)  # broker -> rack, where brokers have racks


def restrict(snap: dict, scope: Scope, mode: str, mode_brokers: list | None, broker_list: list | None,
             topics: list | None = None) -> Restricted:
    """The snapshot the planner may see under ``scope``; ``mode_brokers`` is the mode's broker
    argument (drained for decommission, added for add-brokers)."""
    alive = {b["id"] for b in snap["brokers"] if b["alive"]}
    drained = set(mode_brokers or ()) if mode == "decommission" else set()
    leaving = drained | {b["id"] for b in snap["brokers"] if not b["alive"]}
    both = sorted(scope.excluded_brokers & drained)
    if both:
        raise ScopeError(f"broker {both[0]} is being removed and excluded from replica moves: its replicas must move")
    if mode == "add-brokers" and scope.excluded_brokers & set(mode_brokers or ()):
        added = sorted(scope.excluded_brokers & set(mode_brokers or ()))
        raise ScopeError(f"broker {added[0]} is being added and excluded from replica moves: it could receive nothing")
    hide = scope.excluded_brokers & alive  # a gone broker's replicas must leave, excluded or not
    pattern = scope.excluded_topics
    matched, kept_partitions, hidden_replicas = [], 0, 0
    hidden: dict = {}
    out_topics = []
    for t in snap["topics"]:
        excluded_topic = pattern is not None and pattern.fullmatch(t["name"]) is not None
        if excluded_topic:
            matched.append(t["name"])
        parts, changed = [], False
        for p in t["partitions"]:
            reps = p["replicas"]
            if excluded_topic and not any(r in leaving for r in reps):
                kept_partitions += 1
                changed = True
                continue
            gone = [r for r in reps if r in hide]
            if not gone:
                parts.append(p)
                continue
            changed = True
            visible = [i for i, r in enumerate(reps) if r not in hide]
            hidden[(t["name"], p["partition"])] = (list(reps), p["leader"])
            hidden_replicas += len(gone)
            if not visible:
                kept_partitions += 1  # every replica on excluded brokers: nothing may move
                continue
            parts.append({
                "partition": p["partition"],
                "replicas": [reps[i] for i in visible],
                "leader": p["leader"] if p["leader"] not in hide else -1,
                "isr": None if p["isr"] is None else [b for b in p["isr"] if b not in hide],
                "reassigning": p["reassigning"],
                "sizes": None if p["sizes"] is None else [p["sizes"][i] for i in visible],
            })
        if parts:  # an untouched topic keeps its (cached, shared) entry
            out_topics.append({"name": t["name"], "partitions": parts} if changed else t)
    left = {t["name"] for t in out_topics}
    if topics is not None:
        excluded_named = [x for x in topics if x in matched]
        if excluded_named:
            raise ScopeError(f"topic {excluded_named[0]!r} is both asked for (topics) and excluded (excluded_topics)")
        topics = [x for x in topics if x in left or x not in {t["name"] for t in snap["topics"]}]
        if not topics:
            raise ScopeError("every partition of the topics asked for is on brokers excluded from replica moves")
    base = None
    if scope.excluded_brokers:
        base = [b for b in (broker_list if broker_list is not None else [x["id"] for x in snap["brokers"]])
                if b not in scope.excluded_brokers]
        if not base:
            raise ScopeError("every broker is excluded from replica moves: nothing could receive a replica")
    restricted = dict(snap, topics=out_topics)
    report = scope.view() | {"topics_excluded": matched, "partitions_left_in_place": kept_partitions,
                             "replicas_hidden": hidden_replicas}
    racks = {b["id"]: b["rack"] for b in snap["brokers"] if b.get("rack") is not None}
    return Restricted(restricted, base if base is not None else broker_list, topics, hidden, report, racks)


def _put_back(new: list[int], original: list[int], hidden: set) -> list[int]:
    """``new`` (the planner's replicas) with the hidden replicas at their original places."""
    out = list(new)
    for i, b in enumerate(original):
        if b in hidden:
            out.insert(min(i, len(out)), b)
    return out


def _rack_repeats(replicas: list[int], racks: dict) -> bool:
    seen = [racks[b] for b in replicas if b in racks]
    return len(seen) != len(set(seen))


def restore(result: PlanResult, r: Restricted, *, max_in: int, max_out: int, throttle: int | None) -> PlanResult:
    """The plan over the whole cluster: hidden replicas back in every replica list, the waves
    cut again from the full moves, the exclusions in the report (``scope``)."""
    report = dict(result.report)
    report["scope"] = r.report
    if not r.hidden:
        return PlanResult(result.reassignment, report, result.batches, result.moves)
    moves = []
    for m in result.moves:
        key = (m["topic"], m["partition"])
        if key not in r.hidden:
            moves.append(m)
            continue
        original, leader = r.hidden[key]
        kept = {b for b in original if b not in m["old"]}
        moves.append(dict(m, old=list(original), new=_put_back(m["new"], original, kept),
                          leader=leader if leader in original else m["leader"]))
    # The planner placed replicas without seeing the hidden ones, so a hidden replica's rack can
    # repeat a placed one's: such partitions are named (a warning), not silently planned.
    conflicts = [f"{m['topic']}-{m['partition']}" for m in moves
                 if (m["topic"], m["partition"]) in r.hidden and _rack_repeats(m["new"], r.racks)
                 and not _rack_repeats(m["old"], r.racks)]
    if conflicts:
        report["scope"] = dict(r.report, rack_conflicts=conflicts)
        report["warnings"] = list(report.get("warnings") or []) + [
            f"{len(conflicts)} partitions put a replica in the rack of one kept on an excluded broker: "
            f"{', '.join(conflicts[:10])}"]
    full = {(m["topic"], m["partition"]): m["new"] for m in moves}
    entries = [dict(e, replicas=full.get((e["topic"], e["partition"]), e["replicas"]))
               for e in result.reassignment["partitions"]]
    batches = batching.make_batches(moves, max_in=max_in, max_out=max_out, throttle=throttle)
    report["waves"] = len(batches["waves"])
    report["estimated_seconds"] = batches["estimated_seconds"]
    report["lower_bound_seconds"] = batches["lower_bound_seconds"]
    return PlanResult(dict(result.reassignment, partitions=entries), report, batches, moves)
