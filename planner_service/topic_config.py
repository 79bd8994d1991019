"""Cruise Control's ``topic_configuration`` (a topic's replication factor) for the planner
service: which topics a request names and which of them change, whether the alive brokers and
their racks can hold the new replication factor, and what the plan did to each topic. Pure: no
I/O. :mod:`planner_service.endpoints` asks it before and after planning with the planner's
"replication-factor" mode (:mod:`spark_jobs.core`) scoped to the topics that change.

- ``topic`` is a regular expression matched against whole topic names (Java's ``matches``, as
  Cruise Control matches it: ``ord`` does not match ``orders``, ``ord.*`` does). A pattern that
  matches no topic is refused. Topics whose every partition already has the replication factor
  asked for are left out of the plan and reported as unchanged (Cruise Control refuses a
  request whose topics are all at it; here it is an empty plan).
- Refused as Cruise Control refuses them (``RunnableUtils.populateRackInfoForReplicationFactorChange``):
  a replication factor above the number of alive brokers, and, unless
  ``skip_rack_awareness_check``, one above the number of racks among them (a broker without a
  rack counts as a rack of its own, as Cruise Control counts it). Skipping the check is all the
  flag does here: the planner never places replicas rack-blind, its rule
  (:mod:`spark_jobs.racks`) then gives each of the K racks floor(N/K) or ceil(N/K) of a
  partition's N replicas (a partition already breaking the rule is never made narrower), where
  Cruise Control would ignore racks for those partitions.

Usage::

    sel = select_topics({"orders": [3, 3], "audit": [2, 2]}, re.compile("orders|audit"), 2)
    sel.to_change, sel.unchanged          # ["orders"], ["audit"]
    check_brokers({1: "r1", 2: "r2", 3: "r1"}, 3, skip_rack_awareness_check=False)  # TopicConfigError
    summary(sel, result.moves, skip_rack_awareness_check=False)   # the report's topic_configuration
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Topics and brokers a refusal names, at most: a pattern like ".*" can match thousands.
NAMED_MAX = 10


class TopicConfigError(ValueError):
    """A request Cruise Control's topic_configuration would refuse (a 400)."""


@dataclass(frozen=True)
class Selection:
    pattern: str
    replication_factor: int
    to_change: list[str]  # matched topics with a partition at another replication factor
    unchanged: list[str]  # matched topics already at it
    before: dict[str, list[int]] = field(default_factory=dict)  # topic -> its distinct RFs now
    partitions: dict[str, int] = field(default_factory=dict)  # topic -> its partition count


def _named(items: list) -> str:
    shown = ", ".join(map(str, items[:NAMED_MAX]))
    return shown + (f" and {len(items) - NAMED_MAX} more" if len(items) > NAMED_MAX else "")


def select_topics(replication_factors: dict[str, list[int]], pattern: re.Pattern, replication_factor: int) -> Selection:
    """The topics ``pattern`` matches (whole names) out of ``replication_factors`` (topic ->
    each partition's replication factor), split into those that change and those already at
    ``replication_factor``; TopicConfigError when it matches none."""
    matched = sorted(t for t in replication_factors if pattern.fullmatch(t) is not None)
    if not matched:
        raise TopicConfigError(f"topic {pattern.pattern!r} matches no topic in the cluster (a regular expression "
                               f"matched against whole topic names: 'ord' does not match 'orders', 'ord.*' does)")
    change = [t for t in matched if any(rf != replication_factor for rf in replication_factors[t])]
    return Selection(pattern.pattern, replication_factor, change, [t for t in matched if t not in change],
                     {t: sorted(set(replication_factors[t])) for t in matched},
                     {t: len(replication_factors[t]) for t in matched})


def check_brokers(racks: dict[int, str | None], replication_factor: int, *, skip_rack_awareness_check: bool,
                  topics: list[str] | None = None) -> None:
    """TopicConfigError when the alive brokers (``racks``: broker -> its rack or None) cannot
    hold ``replication_factor`` replicas of a partition, or, unless
    ``skip_rack_awareness_check``, their racks cannot each hold at most one."""
    what = f"the replication factor of {_named(topics)}" if topics else "a replication factor"
    if replication_factor > len(racks):
        raise TopicConfigError(
            f"cannot change {what} to {replication_factor}: only {len(racks)} brokers are alive "
            f"({_named(sorted(racks))}); a replication factor cannot be more than the alive brokers")
    # Cruise Control's count: a broker with no rack is a rack of its own.
    named = {rack if rack else f"broker {b}" for b, rack in racks.items()}
    if replication_factor > len(named) and not skip_rack_awareness_check:
        raise TopicConfigError(
            f"cannot change {what} to {replication_factor}: the alive brokers are in only {len(named)} racks "
            f"({_named(sorted(named))}), so some rack would hold two replicas of a partition; to allow that, set "
            "skip_rack_awareness_check=true (the planner then gives each rack floor or ceil of "
            f"{replication_factor}/{len(named)} of each partition's replicas)")


def summary(sel: Selection, moves: list[dict], *, skip_rack_awareness_check: bool) -> dict:
    """What the plan does to the replication factors (the report's ``topic_configuration``):
    per topic changed its replication factors before and after; the topics left unchanged;
    replicas added and removed by the change, replicas relocated besides (the mode also evens
    the changed topics' replicas out over the brokers, see :mod:`spark_jobs.core`), and the
    partitions whose current leader leaves the replica list (the controller elects another).
    A partition lowered keeps its live leader (the mode drops followers only), so those are
    partitions without one (their first replica stands in, as in the moves) or partitions not
    lowered whose leader's replica the evening out relocates."""
    added = removed = relocated = 0
    leaders_leaving = []
    for m in moves:
        # Replica lists hold no broker twice, so gained - lost = net: what is gained beyond the
        # net change is one replica relocated (gained on one broker, lost on another).
        gained = len(set(m["new"]) - set(m["old"]))
        net = len(m["new"]) - len(m["old"])
        added += max(net, 0)
        removed += max(-net, 0)
        relocated += gained - max(net, 0)
        if m["leader"] not in m["new"]:
            leaders_leaving.append(f"{m['topic']}-{m['partition']}")
    return {
        "topic": sel.pattern,
        "replication_factor": sel.replication_factor,
        "skip_rack_awareness_check": skip_rack_awareness_check,
        "topics_changed": {t: {"partitions": sel.partitions[t], "replication_factors_before": sel.before[t],
                               "replication_factor_after": sel.replication_factor} for t in sel.to_change},
        "topics_unchanged": sel.unchanged,
        "replicas_added": added,
        "replicas_removed": removed,
        "replicas_relocated": relocated,
        "leaders_leaving": len(leaders_leaving),
        "leaders_leaving_partitions": leaders_leaving[:NAMED_MAX],
    }
