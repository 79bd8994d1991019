"""Demoting brokers: every leadership moved off them without moving data. Pure.

What Cruise Control's ``demote_broker`` (its PreferredLeaderElectionGoal with demoted brokers)
and Yelp's revoke-leadership do, over a cluster snapshot (:mod:`spark_jobs.snapshot`'s schema):

1. Reorder. In every partition holding a replica on a demoted broker, those replicas go to the
   end of the replica list, in the order they had, the others keeping theirs (Cruise Control's
   ``moveReplicaToEnd`` for every replica of a demoted broker, followers too: Kafka's
   controller, and reassignd's (docs/DESIGN.md 4.7), elects the first live in-sync replica in
   list order when a leader dies, so a demoted follower last is chosen only when no other
   in-sync replica is alive). If the new first replica is not live or not in the ISR, the
   first non-demoted one that is goes before it (Cruise Control moves leadership to the first
   alive replica). The set is unchanged: a reassignment that adds and removes nothing, which
   the controller completes without copying (all of the set in the ISR: RS = TRS at once).
2. Elect. Every partition led by a demoted broker whose new first replica is a live, in-sync,
   non-demoted broker gets a preferred election (ElectLeaders PREFERRED) once its reorder is
   done; one whose first replica already is that needs the election only.

Left alone, and listed with the reason: a partition being reassigned (its move owns its list
and its leader), one without a leader state, and an under-replicated one (ISR smaller than its
replicas: the controller completes a reorder only once every replica is in the ISR, so it
would wait for the missing one; Cruise Control's ``skip_urp_demotion``). A partition led by a
demoted broker with no live in-sync replica elsewhere keeps its leader (``leader_stays``): a
demoted broker leads only when no other ISR member is alive.

Undo: :meth:`Demotion.rollback` is the reordered partitions' original lists (Kafka's
reassignment JSON); executing it with a preferred election puts the broker first, and leading,
again (``kafka-reassign --execute --elect-preferred --reassignment-json-file``).

Usage::

    d = plan_demotion(snapshot, [3])       # PlanError: no broker, a broker not registered
    d.reorders                             # {(topic, partition): new replica list}
    d.elect                                # [(topic, partition)] to elect once reordered
    d.reassignment(), d.rollback(), d.report(), d.batches()
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from spark_jobs import batching
from spark_jobs.errors import PlanError
from znodes.values import TopicPartition

SKIP_MOVING = "being reassigned: its move owns its replica list and its leader"
SKIP_NO_STATE = "no leader state known"
SKIP_UNDER_REPLICATED = ("under-replicated: a reorder completes only once every replica is in the ISR "
                         "(Cruise Control's skip_urp_demotion)")
STAYS_NO_OTHER = "no live in-sync replica on a broker not demoted"


@dataclass
class Demotion:
    brokers: list[int]
    reorders: dict = field(default_factory=dict)  # partition -> new replica list
    originals: dict = field(default_factory=dict)  # partition -> its list before (reordered ones)
    elect: list = field(default_factory=list)  # partitions to elect once reordered
    leaders_before: dict = field(default_factory=dict)  # elected partition -> its demoted leader now
    leaders_after: dict = field(default_factory=dict)  # elected partition -> the leader it will have
    leader_stays: list = field(default_factory=list)  # {"topic", "partition", "leader", "reason"}
    skipped: list = field(default_factory=list)  # {"topic", "partition", "replicas", "reason"}

    def reassignment(self) -> dict:
        """The reorders as Kafka's reassignment JSON."""
        return _doc(self.reorders)

    def rollback(self) -> dict:
        """The undo: the reordered partitions' original lists, as Kafka's reassignment JSON."""
        return _doc(self.originals)

    def moves(self) -> list[dict]:
        """The reorders in the planner's move shape (spark_jobs.batching): none adds a replica."""
        return [{"topic": t, "partition": p, "old": list(self.originals[(t, p)]), "new": list(r), "adds": 0,
                 "size": 0, "bytes": 0} for (t, p), r in sorted(self.reorders.items())]

    def batches(self, throttle: int | None = None) -> dict:
        """One metadata wave (nothing is copied), or none when nothing is reordered."""
        return batching.make_batches(self.moves(), throttle=throttle)

    def report(self) -> dict:
        n = len(self.reorders)
        return {
            "mode": "demote", "demoted_brokers": list(self.brokers),
            # the planner report's names, so a demotion reads like any other proposal
            "moves": 0, "lower_bound": 0, "bytes_to_move": 0, "partitions_changed": n,
            "partitions_reordered_only": n, "waves": 1 if n else 0,
            "leaderships_to_move": len(self.elect),
            "elect": [{"topic": t, "partition": p, "leader_now": self.leaders_before[(t, p)],
                       "leader_after": self.leaders_after[(t, p)]} for t, p in self.elect],
            "leader_stays": list(self.leader_stays), "skipped": list(self.skipped),
            "rollback": self.rollback(),
            "warnings": [f"{x['topic']}-{x['partition']}: stays led by demoted broker {x['leader']} ({x['reason']})"
                         for x in self.leader_stays]
                        + [f"{x['topic']}-{x['partition']}: not demoted ({x['reason']})" for x in self.skipped],
        }


def _doc(lists: dict) -> dict:
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                         for (t, p), r in sorted(lists.items())]}


def demoted_order(replicas: list[int], demoted: set[int], eligible: set[int]) -> list[int]:
    """Step 1's list: demoted replicas last in their order; then, if the first is not
    ``eligible`` (live and in the ISR), the first eligible non-demoted one before it."""
    keep = [b for b in replicas if b not in demoted]
    out = keep + [b for b in replicas if b in demoted]
    if keep and out[0] not in eligible:
        first = next((b for b in keep if b in eligible), None)
        if first is not None:
            out.remove(first)
            out.insert(0, first)
    return out


def check_brokers(snapshot: dict, brokers: Iterable[int]) -> list[int]:
    """The brokers to demote, each registered (a broker that is down leads nothing already,
    and its replicas are out of every ISR, so none of its partitions could be reordered)."""
    ids = list(brokers)
    if not ids:
        raise PlanError("demote: name at least one broker")
    if len(set(ids)) != len(ids):
        raise PlanError(f"demote: a broker is listed twice in {ids}")
    alive = {b["id"] for b in snapshot["brokers"] if b.get("alive")}
    down = [b for b in ids if b not in alive]
    if down:
        raise PlanError(f"demote: broker(s) {down} not registered (registered: {sorted(alive)}); "
                        "a broker that is down leads nothing: demote it once it is back")
    return sorted(ids)


def plan_demotion(snapshot: dict, brokers: Iterable[int]) -> Demotion:
    """Steps 1 and 2 for every partition of ``snapshot`` (validated) holding a demoted replica."""
    ids = check_brokers(snapshot, brokers)
    demoted = set(ids)
    alive = {b["id"] for b in snapshot["brokers"] if b.get("alive")}
    d = Demotion(ids)
    for topic in snapshot["topics"]:
        name = topic["name"]
        for part in topic["partitions"]:
            replicas = list(part["replicas"])
            if not demoted & set(replicas):
                continue
            tp, leader, isr = (name, part["partition"]), part.get("leader", -1), part.get("isr")
            reason = (SKIP_MOVING if part.get("reassigning") else SKIP_NO_STATE if isr is None
                      else SKIP_UNDER_REPLICATED if set(replicas) - set(isr) else None)
            eligible = alive & set(isr or ()) - demoted
            new = demoted_order(replicas, demoted, eligible)
            if reason is not None:
                if new != replicas or leader in demoted:  # only what a demotion would have changed
                    d.skipped.append({"topic": name, "partition": tp[1], "replicas": replicas, "reason": reason})
                continue
            if new != replicas:
                d.reorders[tp], d.originals[tp] = new, replicas
            if leader in demoted:
                if new[0] in eligible:
                    d.elect.append(tp)
                    d.leaders_before[tp], d.leaders_after[tp] = leader, new[0]
                else:
                    d.leader_stays.append({"topic": name, "partition": tp[1], "leader": leader,
                                           "reason": STAYS_NO_OTHER})
    d.elect.sort()
    return d
