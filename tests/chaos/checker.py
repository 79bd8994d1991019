"""The chaos run's verdicts, from its history alone: records in, violations and figures out.

Pure: no I/O, no clock. The history is the run's JSON lines (tests/chaos/history.py writes
them; the controllers' write audits are appended as ``audit`` records, the final ZooKeeper
state as one ``final`` record). Usage::

    report = check(records, quiesce_bound_s=120)
    report.ok                 # no violation of any kind
    report.violations         # ["lost request: orders-3 ended on [1, 2, 3], expected one of ...", ...]
    report.figures()          # {"faults_injected": 31, ..., "quiesce_seconds_p99": 12.4}

The checks (DESIGN.md section 7, "The chaos suite"):

1. Requests. The workload never has two operations on one partition in flight, so per
   partition the accepted operations are in order. Walking them gives the replica lists the
   partition may end on: an accepted reassignment replaces them with its target (or adds its
   target if a controller log reported the entry dropped, a skip with its reason); a
   cancellation reported done (code 0) leaves the lists it held before the move (its original
   replicas are one of them); a cancel-all through the znode, or any operation in doubt (its
   answer lost to a fault), adds to the possibilities without replacing them; refusals and
   cancellations reported not done (nothing running, too late, skipped as unsafe) change
   nothing; a per-partition UNKNOWN_SERVER_ERROR or REQUEST_TIMED_OUT (the controller's
   ZooKeeper write broke off) is in doubt. The final topic znode must hold one of them, with nothing adding or removing.
2. ISR: every sampled partition state has a non-empty ISR and a leader in it (or no leader).
3. Zombie writes: every audited write's epoch must be the ``/controller_epoch`` value current
   at the zxid it landed at. The epoch history is the union of the observer's polls of
   ``/controller_epoch`` (value, zkVersion, mzxid) and the election lines of the audits. A
   write with its own zxid (a setData in the multi) is checked exactly; one without is
   bounded by the zxids its client saw before and after it and flagged if it certainly landed
   after the next epoch began. Its epoch must also be the one its zkVersion was won with.
   The audits also list writes made outside a fenced multi (``"fenced": false``): one of a
   znode only the controller writes fenced (:data:`FENCED_PREFIXES`) is a violation by itself,
   whenever it landed - a fence bypassed on one kind of write shows here even when no
   deposed controller happened to have such a write in flight. A history with no audited
   write at all fails: with the audits missing, no zombie and no unfenced write would show.
4. Throttles: the workload sets only auto-removed throttles, so the final configs hold no
   throttle key and the removal lists are empty. Nor is ``/admin/preferred_replica_election``
   left (the ``elect_znode`` door's: the controller deletes it once it elected).
5. Quiescence: after every fault, once healed, the cluster is quiescent within the bound.
6. No controller process exits on its own (``crash`` records).
7. Caps (issue 25 item 6b): in every ``moves`` sample the moves still copying stay within the
   caps the controllers ran with (``meta``'s ``caps``): partitions adding a replica out of the
   ISR to a broker (incoming), removing one from it (outgoing), moving at all (cluster). A move
   whose whole target is in its ISR copies nothing and is not counted (the stateful suite's
   rule). A history with no sampled move fails: the caps would have judged nothing.
8. Settled moments (item 6c-e; :func:`settled_problems`): after a broker's failure (the
   nemesis looks once its hold is over) and after every quiescence, a ``settled`` snapshot:
   every partition with a live in-sync replica has a live leader; at quiescence also every live
   broker hosts exactly the replicas assigned to it (a finished move's, rollback's or
   override's removed replicas gone, none missing) and each of them holds its state znode's
   leader epoch (the last LeaderAndIsr it applied). The run waits for these before recording
   the snapshot (a bound, not a margin: they are what settling means), so a snapshot that still
   shows one is a violation. A quiescence without its snapshot fails. The workload's own topics
   are in the snapshots too, but for those marked for deletion; a partition of one without its
   state znode is a creation under way while the workload runs, a violation at quiescence.
9. Leader epochs (item 6e): per partition, in zxid order, the sampled state znodes' leader
   epochs never go back, and a new leader always comes with a higher one.
10. Topics (KIP-4; :func:`_check_topics`): the workload's own topics, in the final state after
   the last quiescence. The workload never has two operations on one topic in flight, so per
   topic its operations are in order; walking them gives the shapes the topic may end in
   (absent, or a partition count with a replication factor and the replica lists given
   explicitly): an accepted create sets its shape, an accepted delete absence, an accepted
   CreatePartitions the grown count; one in doubt adds its result to the possibilities; a
   refused one changes nothing (so a refused create of a name never created must leave no
   topic). An accepted op the possibilities rule out (a create of a topic that exists, a
   growth of one absent) is a violation by itself. Then the final state must hold one of the
   shapes; a topic that exists has no partition moving, a state znode for each partition and
   none for others, a leader in its ISR among its replicas and live (or -1 only when no
   replica is live), exactly its replicas hosted by the live brokers at its state's leader
   epoch (:func:`settled_problems`), and every controller instance's Metadata answer lists
   it with the same partitions and replicas; a topic that does not leaves no config, no
   reassignment record, no replica on any broker and no Metadata entry; and no deletion
   marker is left at all. A topic no operation named is a violation too.

Item 6a (auto-removed throttles gone once no move involves them) is held where the chaos run
can see it settle: at each quiescence (no throttle and empty removal lists are part of it, so a
stranded one is a quiescence that never came, check 5) and in the final state (check 4).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

# Cancel results (Kafka's codes): 0 cancelled; anything else means the move was not rolled
# back (85 nothing running, 60 too late, 39/83 skipped as unsafe per KIP-236).
CANCELLED = 0
# Per-partition answers that leave the request in doubt: UNKNOWN_SERVER_ERROR is what the
# controller answers when its ZooKeeper write broke off (a connection loss: the write may have
# landed), REQUEST_TIMED_OUT when it gave up waiting.
IN_DOUBT_CODES = frozenset({-1, 7})


def tp_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


@dataclass
class Report:
    violations: list[str] = field(default_factory=list)
    faults_injected: int = 0
    faults_survived: int = 0
    requests: int = 0
    requests_lost: int = 0
    zombie_writes: int = 0
    unfenced_writes: int = 0  # controller-owned znodes written outside a fenced multi
    fenced_attempts: int = 0
    writes_audited: int = 0
    writes_exact: int = 0
    isr_samples: int = 0
    isr_violations: int = 0
    caps_samples: int = 0  # moves samples with a move in them
    caps_reached: int = 0  # of those, samples where some count stood at its cap
    caps_violations: int = 0
    settled_snapshots: int = 0
    settled_violations: int = 0
    epoch_violations: int = 0
    stranded_throttles: int = 0
    topic_ops: int = 0  # create_topic, delete_topic and create_partitions ops recorded
    topic_ops_accepted: int = 0
    topic_ops_in_doubt: int = 0
    topics_at_end: int = 0  # the workload's topics that exist in the final state
    topic_violations: int = 0
    quiesce_seconds: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def figures(self) -> dict[str, object]:
        """Supporting figures first, the six the chaos run is judged by last."""
        return {
            "zombie_writes_fenced": self.fenced_attempts,
            "writes_audited": self.writes_audited,
            "writes_audited_exact_zxid": self.writes_exact,
            "unfenced_writes": self.unfenced_writes,
            "isr_samples": self.isr_samples,
            "isr_violations": self.isr_violations,
            "caps_samples": self.caps_samples,
            "caps_reached": self.caps_reached,
            "caps_violations": self.caps_violations,
            "settled_snapshots": self.settled_snapshots,
            "settled_violations": self.settled_violations,
            "leader_epoch_violations": self.epoch_violations,
            "stranded_throttles": self.stranded_throttles,
            "topic_ops": self.topic_ops,
            "topic_ops_accepted": self.topic_ops_accepted,
            "topic_ops_in_doubt": self.topic_ops_in_doubt,
            "topics_at_end": self.topics_at_end,
            "topic_violations": self.topic_violations,
            "faults_injected": self.faults_injected,
            "faults_survived": self.faults_survived,
            "requests": self.requests,
            "requests_lost": self.requests_lost,
            "zombie_writes": self.zombie_writes,
            "quiesce_seconds_p99": round(p99(self.quiesce_seconds), 2),
        }


def p99(values: list[float]) -> float:
    """Nearest-rank 99th percentile (the maximum below 100 values); 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


# A move sampled this long before a queued target was asked for may still have been running when
# the queue cancelled it (the observer samples moves every 0.5 s).
QUEUE_RUNNING_WINDOW_S = 1.0


def check(records: list[dict], quiesce_bound_s: float = 120.0) -> Report:
    report = Report()
    by_type: dict[str, list[dict]] = {}
    for r in records:
        by_type.setdefault(r.get("type", ""), []).append(r)
    _check_requests(by_type, report)
    _check_isr(by_type.get("state", []), report)
    _check_zombies(by_type.get("epoch", []), by_type.get("audit", []), by_type.get("state", []), report)
    _check_throttles(by_type.get("final", []), report)
    _check_quiescence(by_type, quiesce_bound_s, report)
    _check_caps((by_type.get("meta") or [{}])[0].get("caps"), by_type.get("moves", []), report)
    _check_settled(by_type.get("settled", []), by_type.get("quiesced", []), report)
    _check_epochs(by_type.get("state", []), report)
    _check_topics(by_type, report)
    for c in by_type.get("crash", []):
        report.violations.append(f"controller {c['controller']} exited on its own (code {c['returncode']})")
    return report


# ---- 1. requests -------------------------------------------------------------------------------


def _check_requests(by_type: dict[str, list[dict]], report: Report) -> None:
    initial = by_type.get("initial", [])
    finals = by_type.get("final", [])
    if not initial or not finals:
        report.violations.append("history has no initial or no final state: nothing can be checked")
        return
    start: dict[str, list[int]] = {k: list(v) for k, v in initial[0]["assignments"].items()}
    final: dict[str, dict] = finals[-1]["assignments"]
    skips: dict[tuple[str, tuple], list[float]] = {}
    for s in by_type.get("reported_skip", []):
        skips.setdefault((s["tp"], tuple(s["target"])), []).append(s.get("t", math.inf))
    ops = sorted(by_type.get("op", []), key=lambda o: (o["t0"], o["id"]))
    # tp -> (sample time, the target of the move it was seen making: RS without RR)
    seen_moving: dict[str, list[tuple[float, frozenset]]] = {}
    for sample in by_type.get("moves", []):
        for tp, move in (sample.get("moving") or {}).items():
            removing = set(move.get("removing") or ())
            seen_moving.setdefault(tp, []).append(
                (sample.get("t", 0.0), frozenset(b for b in move.get("replicas") or () if b not in removing)))
    # The reassignment doors' requests (check 10 counts the topic ops).
    report.requests = sum(1 for o in ops
                          if o["outcome"] == "accepted" and _any_accepted(o) and o["kind"] not in TOPIC_KINDS)

    for tp in sorted(start):
        expected = {tuple(start[tp])}
        stable = [tuple(start[tp])]  # every list the partition may have settled on
        before_target = expected  # what it could hold before the last target it was asked for
        last_target: tuple[float, tuple] | None = None  # (asked at, target) of that one
        last_op: dict | None = None
        for op in ops:
            effect = _effect(op, tp)
            if effect is None:
                continue
            kind, value = effect
            if kind == "target":
                target = tuple(value)
                reported = [t for t in skips.get((tp, target), ()) if t >= op["t0"]]
                if reported:
                    # The controller dropped the entry when it read it (a broker not registered
                    # then). The entry had taken the place of the last target: that one's move
                    # goes on if it had started (seen moving before the drop), else the
                    # partition holds what it held before that target was asked for.
                    expected = expected | {target}
                    if last_target is None or not any(
                            last_target[0] <= t <= max(reported) and moving == frozenset(last_target[1])
                            for t, moving in seen_moving.get(tp, ())):
                        expected = expected | before_target
                    elif op["door"] == "queue" and any(
                            op["t0"] - QUEUE_RUNNING_WINDOW_S <= t <= max(reported) and moving == frozenset(last_target[1])
                            for t, moving in seen_moving.get(tp, ())):
                        # KIP-236's queue cancels a running move before it reassigns: dropped
                        # after that cancel (a broker of its target gone meanwhile, chaos seed
                        # 142 once), it leaves the partition rolled back to before that move.
                        expected = expected | before_target
                else:
                    before_target, expected = expected, {target}
                    last_target = (op["t0"], target)
                stable.append(target)
                last_op = op
            elif kind == "maybe_target":
                expected = expected | {tuple(value)}
                stable.append(tuple(value))
            elif kind == "cancelled":
                # Back to the lists before the running move's target (its original replicas).
                expected = set(stable[:-1]) or {stable[0]}
                last_op = op
            elif kind == "maybe_cancelled":
                expected = expected | set(stable)
        end = final.get(tp)
        if end is None:
            report.violations.append(f"lost request: {tp} is missing from the final state")
            report.requests_lost += 1
            continue
        replicas = tuple(end["replicas"])
        if end.get("adding") or end.get("removing"):
            report.violations.append(
                f"lost request: {tp} ended half-moved (replicas {list(replicas)}, adding {end.get('adding')}, "
                f"removing {end.get('removing')})"
            )
            report.requests_lost += 1
        elif replicas not in expected:
            why = f" (last accepted: op {last_op['id']} {last_op['door']})" if last_op else ""
            report.violations.append(
                f"lost request: {tp} ended on {list(replicas)}, expected one of "
                f"{sorted(list(e) for e in expected)}{why}"
            )
            report.requests_lost += 1


def _any_accepted(op: dict) -> bool:
    results = op.get("results")
    if results is None:
        return True
    return any(code == 0 for code in results.values())


def _effect(op: dict, tp: str) -> tuple[str, object] | None:
    """What ``op`` does to partition ``tp``: ("target", T), ("maybe_target", T), ("cancelled",
    None), ("maybe_cancelled", None), or None (nothing)."""
    outcome = op["outcome"]
    if outcome == "refused" and not op.get("results"):
        return None  # refused as a whole (else the per-partition answers below decide)
    kind = op["kind"]
    if kind == "submit":
        target = op["targets"].get(tp)
        if target is None:
            return None
        if outcome == "in_doubt":
            return "maybe_target", target
        results = op.get("results")
        code = 0 if results is None else results.get(tp)
        if code in IN_DOUBT_CODES:
            return "maybe_target", target
        return ("target", target) if code == 0 else None
    if kind == "cancel":
        listed = op.get("partitions")  # None: every pending one
        if listed is not None and tp not in listed:
            return None
        if outcome == "in_doubt":
            return "maybe_cancelled", None
        results = op.get("results")
        if results is None:  # the znode door: which partitions it rolled back is not reported
            return "maybe_cancelled", None
        if tp not in results:
            return None  # cancel-all that found nothing running there
        if results[tp] in IN_DOUBT_CODES:
            return "maybe_cancelled", None
        return ("cancelled", None) if results[tp] == CANCELLED else None
    return None


# ---- 2. ISR ------------------------------------------------------------------------------------


def _check_isr(states: list[dict], report: Report) -> None:
    report.isr_samples = len(states)
    for s in states:
        isr, leader = s["isr"], s["leader"]
        if not isr:
            report.violations.append(f"no in-sync replica: {s['tp']} at t={s['t']:.2f} (mzxid {s.get('mzxid')}): {s}")
            report.isr_violations += 1
        elif leader != -1 and leader not in isr:
            report.violations.append(f"leader outside the ISR: {s['tp']} at t={s['t']:.2f}: leader {leader}, isr {isr}")
            report.isr_violations += 1


# ---- 3. zombie writes --------------------------------------------------------------------------


def _check_zombies(epochs: list[dict], audit: list[dict], states: list[dict], report: Report) -> None:
    # zkVersion -> (epoch, mzxid of the bump); the two sources must agree where both speak.
    history: dict[int, tuple[int, int | None]] = {}
    for source, version, epoch, mzxid in [
        *(("observer", e["version"], e["epoch"], e["mzxid"]) for e in epochs),
        *(("audit", a["epoch_zkversion"], a["epoch"], a.get("mzxid")) for a in audit if a.get("event") == "elected"),
    ]:
        known = history.get(version)
        if known is not None and known[0] != epoch:
            report.violations.append(
                f"epoch history disagrees: /controller_epoch version {version} is epoch {known[0]} and {epoch} ({source})"
            )
            continue
        if known is None or known[1] is None:
            history[version] = (epoch, mzxid)
    spans = sorted((mzxid, version, epoch) for version, (epoch, mzxid) in history.items() if mzxid is not None)
    starts = [s[0] for s in spans]

    # Partition states carry the controller_epoch of whoever wrote them: the controller's own,
    # or the one a broker last heard in a LeaderAndIsr. Either way never an epoch that did not
    # exist yet when the state landed (a zombie's stale epoch is legitimate for a broker, so
    # the audits, not these fields, are what catch zombie writes).
    for s in states:
        c, z = s.get("controller_epoch"), s.get("mzxid")
        if c is None or z is None or not spans:
            continue
        i = bisect_right(starts, z) - 1
        if i >= 0 and c > spans[i][2]:
            report.violations.append(
                f"state from a future epoch: {s['tp']} written at zxid {z:#x} with controller_epoch {c} "
                f"while epoch {spans[i][2]} was current"
            )

    for a in audit:
        event = a.get("event")
        if event == "fenced":
            report.fenced_attempts += 1
            continue
        if event != "write":
            continue
        who = f"controller {a['controller']} (epoch {a['epoch']}, session {a.get('session')})"
        version = a["epoch_zkversion"]
        if not a.get("fenced", True):
            # Outside a fenced multi: fine for what no epoch guards (the controller's
            # registration, admin config and ACL writes), a bypassed fence for the rest.
            owned = [op for op in a["ops"] if controller_owned(op[1])]
            if not owned:
                continue
            report.unfenced_writes += 1
            report.violations.append(f"unfenced write: {who} wrote {owned} without the epoch check")
            if version is None:
                continue
        report.writes_audited += 1
        won = history.get(version)
        if won is None or won[0] != a["epoch"]:
            report.violations.append(
                f"zombie write: {who} wrote with /controller_epoch version {version}, which is epoch "
                f"{won[0] if won else 'unknown'}: {a['ops']}"
            )
            report.zombie_writes += 1
            continue
        zxid = a.get("zxid")
        if zxid is not None:
            report.writes_exact += 1
            i = bisect_right(starts, zxid) - 1
            current = spans[i][2] if i >= 0 else None
            if current != a["epoch"]:
                report.violations.append(
                    f"zombie write: {who} landed at zxid {zxid:#x} while epoch {current} was current: {a['ops']}"
                )
                report.zombie_writes += 1
            continue
        after = a.get("after_zxid")
        if after is None or won[1] is None:
            continue
        # The write landed after ``after``; if the next epoch began at or before it, it landed late.
        later = [s for s in spans if s[0] > won[1]]
        if later and after >= later[0][0]:
            report.violations.append(
                f"zombie write: {who} landed after zxid {after:#x}, after epoch {later[0][2]} began at "
                f"{later[0][0]:#x}: {a['ops']}"
            )
            report.zombie_writes += 1

    if report.writes_audited == 0:
        # Every run writes (start, finish, the election's leader epochs): no audited write means
        # the audits went missing, and "zombie_writes=0" would then vouch for nothing.
        report.violations.append("no write was audited: the zombie and fence checks had nothing to judge")


def controller_owned(path: str) -> bool:
    """A znode only the active controller writes, and only fenced by its epoch (DESIGN.md 3)."""
    return path.startswith(FENCED_PREFIXES)


# What the active controller writes, each write fenced: topic and partition state znodes, the
# reassignment requests, records, cancel and queue znodes, the throttle removal lists, topic
# deletion markers and the ISR change notifications it consumes.
FENCED_PREFIXES = (
    "/brokers/topics/", "/admin/reassign_partitions", "/admin/reassignments",
    "/admin/cancel_reassignment_in_progress", "/admin/throttled_", "/admin/delete_topics",
    "/isr_change_notification",
)


# ---- 4. throttles ------------------------------------------------------------------------------


def _check_throttles(finals: list[dict], report: Report) -> None:
    if not finals:
        return
    final = finals[-1]
    for entity, keys in sorted(final.get("throttles", {}).items()):
        report.violations.append(f"stranded throttle: {entity} still has {keys}")
        report.stranded_throttles += 1
    for name, listed in sorted(final.get("removal_lists", {}).items()):
        if listed:
            report.violations.append(f"stranded throttle: {name} still lists {listed}")
            report.stranded_throttles += 1
    if final.get("preferred_election_left"):
        # The ZooKeeper door's znode is the controller's to delete once it elected (DESIGN 4.6).
        report.violations.append("/admin/preferred_replica_election left at the end: never taken")


# ---- 5. quiescence -----------------------------------------------------------------------------


def _check_quiescence(by_type: dict[str, list[dict]], bound_s: float, report: Report) -> None:
    faults = by_type.get("fault", [])
    report.faults_injected = len(faults)
    quiesced = {q["fault"]: q for q in by_type.get("quiesced", [])}
    for f in faults:
        q = quiesced.get(f["id"])
        if q is None:
            report.violations.append(f"no quiescence after fault {f['id']} ({f['kind']}): never recorded")
        elif q["seconds"] > bound_s or not q.get("ok", True):
            report.violations.append(
                f"no quiescence after fault {f['id']} ({f['kind']}) within {bound_s:.0f}s: {q.get('left')}"
            )
        else:
            report.faults_survived += 1
            report.quiesce_seconds.append(q["seconds"])


# ---- 7. caps -----------------------------------------------------------------------------------


def caps_usage(moving: dict[str, dict], copied: set | None = None
               ) -> tuple[list[str], dict[int, list[str]], dict[int, list[str]]]:
    """The moves one sample shows still copying, and per broker the partitions adding a replica
    to it out of the ISR (incoming) and removing one from it while they copy (outgoing).

    A move copies in Kafka's sense, as the stateful suite counts it (tests/controller/
    test_stateful.py ``caps``): while a replica it adds is not yet in the ISR. A rollback adds
    nothing and copies nothing, even while a stopped broker keeps one of its original replicas
    out of the ISR; a move whose added replicas are all in the ISR only has its finish left.
    ``copied`` (kept across the samples of one history): (partition, RS, broker) seen in the
    ISR; a replica that falls out again while the move's RS stays is a failure's, not a copy the
    controller started, and does not count again."""
    copied = set() if copied is None else copied
    adding: dict[str, list[int]] = {}
    for tp, m in moving.items():
        shape = tuple(m["replicas"])
        copied |= {(tp, shape, b) for b in m["adding"] if b in m["isr"]}
        adding[tp] = [b for b in m["adding"] if (tp, shape, b) not in copied]
    copying = sorted(tp for tp, a in adding.items() if a)
    incoming: dict[int, list[str]] = {}
    outgoing: dict[int, list[str]] = {}
    for tp in copying:
        for b in adding[tp]:
            incoming.setdefault(b, []).append(tp)
        for b in moving[tp]["removing"]:
            outgoing.setdefault(b, []).append(tp)
    return copying, incoming, outgoing


def caps_problems(moving: dict[str, dict], caps: dict[str, int], copied: set | None = None) -> tuple[list[str], bool]:
    """What in one ``moves`` sample exceeds ``caps``, and whether some count stood at its cap
    (``copied``: caps_usage's memory of the history's samples before)."""
    copying, incoming, outgoing = caps_usage(moving, copied)
    problems, reached = [], len(copying) >= caps["max_cluster_moves"]
    if len(copying) > caps["max_cluster_moves"]:
        problems.append(f"cluster cap {caps['max_cluster_moves']}: {len(copying)} moves copying {copying}")
    for what, per_broker, cap in (("incoming", incoming, caps["max_incoming_per_broker"]),
                                  ("outgoing", outgoing, caps["max_outgoing_per_broker"])):
        for b, tps in sorted(per_broker.items()):
            reached = reached or len(tps) >= cap
            if len(tps) > cap:
                problems.append(f"{what} cap {cap} of broker {b}: {len(tps)} moves {tps}")
    return problems, reached


def _check_caps(caps: dict | None, samples: list[dict], report: Report) -> None:
    if caps is None:
        report.violations.append("history has no caps (meta): the caps check cannot run")
        return
    copied: set = set()
    for s in samples:
        if not s["moving"]:
            continue
        report.caps_samples += 1
        problems, reached = caps_problems(s["moving"], caps, copied)
        report.caps_reached += reached
        for problem in problems:
            report.caps_violations += 1
            report.violations.append(f"caps exceeded at t={s['t']:.2f}: {problem}")
    if report.caps_samples == 0:
        report.violations.append("no move was sampled: the caps check had nothing to judge")


# ---- 8. settled moments ------------------------------------------------------------------------


def settled_problems(snapshot: dict) -> list[str]:
    """What keeps one snapshot (``live`` brokers, partition ``states``, ``assignments``, and at
    quiescence what each running broker ``hosted``: {broker: {tp: leader epoch}}) from being
    settled. Also what the run waits on before it records the snapshot."""
    live = set(snapshot["live"])
    states = snapshot["states"]
    hosted = snapshot.get("hosted")
    problems = []
    for tp, s in sorted(states.items()):
        if s is None:
            # A created partition not given its state yet: under way while the workload runs,
            # left half-done once the cluster is quiet (the snapshots with ``hosted``).
            if hosted is not None:
                problems.append(f"no state znode: {tp} (a created partition never given its leader)")
            continue
        in_sync_live = sorted(set(s["isr"]) & live)
        if in_sync_live and s["leader"] not in live:
            problems.append(f"no live leader: {tp} has live in-sync replicas {in_sync_live} and leader {s['leader']} "
                            f"(live brokers {sorted(live)})")
    if hosted is None:
        return problems
    for broker, held in sorted(hosted.items(), key=lambda kv: int(kv[0])):
        b = int(broker)
        if b not in live:
            continue
        assigned = {tp for tp, replicas in snapshot["assignments"].items() if b in replicas}
        extra, missing = sorted(set(held) - assigned), sorted(assigned - set(held))
        if extra:
            problems.append(f"broker {b} hosts replicas not assigned to it (a finished move's, rollback's or "
                            f"override's removed replicas): {extra}")
        if missing:
            problems.append(f"broker {b} lacks replicas assigned to it: {missing}")
        for tp in sorted(set(held) & assigned):
            if states.get(tp) is not None and held[tp] != states[tp]["leader_epoch"]:
                problems.append(f"leader epoch at broker {b}: {tp} holds epoch {held[tp]}, its state znode "
                                f"{states[tp]['leader_epoch']}")
    return problems


def _check_settled(snapshots: list[dict], quiesced: list[dict], report: Report) -> None:
    report.settled_snapshots = len(snapshots)
    for snap in snapshots:
        where = f"after fault {snap.get('fault')} ({snap.get('why')}, looked for {snap.get('waited_s')}s)"
        if "states" not in snap:
            report.settled_violations += 1
            report.violations.append(f"not settled {where}: no snapshot could be read: {snap.get('error')}")
            continue
        for problem in settled_problems(snap):
            report.settled_violations += 1
            report.violations.append(f"not settled {where}: {problem}")
    taken = {s.get("fault") for s in snapshots if s.get("why") == "quiescent"}
    for q in quiesced:
        if q.get("ok", True) and q["fault"] not in taken:
            report.violations.append(f"no settled snapshot at the quiescence after fault {q['fault']}: "
                                     "leaders, hosting and the brokers' epochs went unchecked")


# ---- 9. leader epochs --------------------------------------------------------------------------


def _check_epochs(states: list[dict], report: Report) -> None:
    by_tp: dict[str, list[dict]] = {}
    for s in states:
        if s.get("leader_epoch") is not None and s.get("mzxid") is not None:
            by_tp.setdefault(s["tp"], []).append(s)
    for tp, samples in sorted(by_tp.items()):
        samples.sort(key=lambda s: s["mzxid"])
        for a, b in zip(samples, samples[1:]):
            went_back = b["leader_epoch"] < a["leader_epoch"]
            same = b["leader"] != a["leader"] and b["leader_epoch"] == a["leader_epoch"]
            if went_back or same:
                report.epoch_violations += 1
                what = "went back" if went_back else "stayed the same for a new leader"
                report.violations.append(
                    f"leader epoch {what}: {tp} leader {a['leader']} epoch {a['leader_epoch']} (zxid {a['mzxid']:#x}) "
                    f"then leader {b['leader']} epoch {b['leader_epoch']} (zxid {b['mzxid']:#x})"
                )


# ---- 10. topics --------------------------------------------------------------------------------

# The workload's topic op kinds (tests/chaos/workload.py's topic doors).
TOPIC_KINDS = ("create_topic", "delete_topic", "create_partitions")
# The ZooKeeper doors: a tool's write says nothing of whether the topic existed (a marker of a
# topic that does not exist is dropped by the controller), so no acceptance of theirs is ruled out.
TOPIC_ZNODE_DOORS = ("create_topic_znode", "delete_topic_znode")


def topic_outcome(op: dict) -> str:
    """A topic op's outcome: its recorded one, except that its topic's code in IN_DOUBT_CODES
    (REQUEST_TIMED_OUT: the change may go on; UNKNOWN_SERVER_ERROR: the write broke off) makes
    it in doubt whatever it was recorded as."""
    code = (op.get("results") or {}).get(op["topic"])
    if op["outcome"] == "in_doubt" or code in IN_DOUBT_CODES:
        return "in_doubt"
    return "accepted" if op["outcome"] == "accepted" and code in (None, 0) else "refused"


def _shape_text(shape) -> str:
    if shape is None:
        return "absent"
    count, rf, given = shape
    return f"{count} partition(s) of RF {rf}" + (f" with {dict(given)} given" if given else "")


def _given(assignment, first: int = 0) -> tuple:
    return tuple((first + i, tuple(r)) for i, r in enumerate(assignment or ()))


def topic_shapes(ops: list[dict]) -> tuple[set, list[str], dict | None]:
    """The shapes one topic may end in after ``ops`` (its ops, in order), what an accepted op
    contradicts, and the last accepted op. A shape: None (no topic), or (partition count,
    replication factor, ((partition, replicas), ...) given explicitly by a create or a growth)."""
    shapes: set = {None}
    problems: list[str] = []
    last: dict | None = None
    for op in ops:
        outcome = topic_outcome(op)
        if outcome == "refused":
            continue
        accepted, kind = outcome == "accepted", op["kind"]
        what = f"op {op['id']} ({op['door']}, accepted at t={op['t0']:.2f})"
        if kind == "create_topic":
            made = (op["partitions"], op["replication_factor"], _given(op.get("assignment")))
            if accepted:
                if None not in shapes:  # TOPIC_ALREADY_EXISTS was the answer to give
                    problems.append(f"{what} created it although it existed "
                                    f"({sorted(_shape_text(s) for s in shapes)})")
                shapes, last = {made}, op
            elif None in shapes:
                shapes = shapes | {made}
        elif kind == "delete_topic":
            if accepted:
                if shapes == {None} and op["door"] not in TOPIC_ZNODE_DOORS:  # UNKNOWN_TOPIC_OR_PARTITION was
                    problems.append(f"{what} deleted it although it did not exist")
                shapes, last = {None}, op
            else:
                shapes = shapes | {None}
        elif kind == "create_partitions":
            total, assignment = op["count"], op.get("assignment")
            # Grown from each shape the request fits: an increase, as many lists as new
            # partitions, each of the topic's replication factor (else the controller refuses).
            grown = {(total, rf, given + _given(assignment, count)) for s in shapes if s is not None
                     for count, rf, given in [s]
                     if count < total and (assignment is None or (len(assignment) == total - count
                                                                   and all(len(r) == rf for r in assignment)))}
            if accepted:
                if not grown:
                    problems.append(f"{what} grew it to {total} partitions although it could only be "
                                    f"{sorted(_shape_text(s) for s in shapes)}")
                    grown = {(total, rf, given) for s in shapes if s is not None for _, rf, given in [s]}
                shapes, last = grown or shapes, op
            else:
                shapes = shapes | grown
    return shapes, problems, last


def topic_matches(shape, found: dict | None) -> bool:
    """Whether the final topic znode (``found``: read_topics' entry, None when absent) is ``shape``."""
    if shape is None or found is None:
        return shape is None and found is None
    count, rf, given = shape
    partitions = found["partitions"]
    if sorted(partitions) != sorted(str(p) for p in range(count)):
        return False
    if any(len(r) != rf or len(set(r)) != rf for r in partitions.values()):
        return False
    return all(partitions[str(p)] == list(r) for p, r in given)


def _check_topics(by_type: dict[str, list[dict]], report: Report) -> None:
    ops = sorted((o for o in by_type.get("op", []) if o.get("kind") in TOPIC_KINDS), key=lambda o: (o["t0"], o["id"]))
    finals = by_type.get("final", [])
    report.topic_ops = len(ops)
    report.topic_ops_accepted = sum(1 for o in ops if topic_outcome(o) == "accepted")
    report.topic_ops_in_doubt = sum(1 for o in ops if topic_outcome(o) == "in_doubt")
    final = finals[-1] if finals else {}
    if "topics" not in final:
        if ops:
            _topic_violation(report, "the final state has no topic observation: the topic ops went unchecked")
        return
    by_topic: dict[str, list[dict]] = {}
    for o in ops:
        by_topic.setdefault(o["topic"], []).append(o)
    topics: dict[str, dict] = final["topics"]
    markers = set(final.get("delete_markers") or ())
    configs = set(final.get("topic_configs") or ())
    records = set(final.get("reassignment_topics") or ())
    live = set(final.get("live") or ())
    hosted = final.get("hosted") or {}

    for marked in sorted(markers):
        _topic_violation(report, f"delete marker left after quiescence: /admin/delete_topics/{marked}")
    for t in sorted(set(topics) - set(by_topic)):
        _topic_violation(report, f"unexpected topic {t}: no operation of the workload named it "
                                 f"({len(topics[t]['partitions'])} partitions)")

    existing = {t for t in topics if t not in markers}
    report.topics_at_end = len(existing & set(by_topic))
    for t, topic_ops in sorted(by_topic.items()):
        shapes, problems, last = topic_shapes(topic_ops)
        for problem in problems:
            _topic_violation(report, f"topic {t}: {problem}")
        found = topics.get(t)
        if not any(topic_matches(shape, found) for shape in shapes):
            expected = sorted(_shape_text(shape) for shape in shapes)
            why = f" (last accepted: op {last['id']} {last['door']} {last['kind']})" if last else ""
            if found is None:
                _topic_violation(report, f"lost topic: {t} is gone, expected one of {expected}{why}")
            elif shapes == {None} and last is None:
                refused = ", ".join(f"op {o['id']} {o['door']} ({_answer_text(o)})" for o in topic_ops
                                    if o["kind"] == "create_topic")
                _topic_violation(report, f"refused create left topic {t} behind ({_found_text(found)}): "
                                         f"{refused or 'no create'}")
            else:
                _topic_violation(report, f"topic {t} ended {_found_text(found)}, expected one of {expected}{why}")
        if found is None:
            _check_gone(t, configs, records, hosted, report)
        else:
            _check_existing(t, found, live, records, report)

    # Hosting and leader epochs at the brokers, as at every quiescence (settled_problems):
    # exactly the replicas assigned, at their state's epoch. Deleted topics' replicas are
    # _check_gone's (named there as such).
    mine = existing & set(by_topic)
    snapshot = {
        "live": sorted(live),
        "states": {f"{t}/{p}": s for t in mine for p, s in topics[t]["states"].items()},
        "assignments": {f"{t}/{p}": r for t in mine for p, r in topics[t]["partitions"].items()},
        "hosted": {b: {tp: e for tp, e in held.items() if tp.rsplit("/", 1)[0] in mine} for b, held in hosted.items()},
    }
    for problem in settled_problems(snapshot):
        _topic_violation(report, f"topics at the end: {problem}")
    _check_metadata(final.get("metadata"), {t: topics[t] for t in existing}, set(by_topic), report)


def _answer_text(op: dict) -> str:
    code = (op.get("results") or {}).get(op["topic"])
    return f"code {code}" if code is not None else op.get("error") or op["outcome"]


def _found_text(found: dict) -> str:
    partitions = found["partitions"]
    return f"with {len(partitions)} partition(s) {dict(sorted(partitions.items(), key=lambda kv: int(kv[0])))}"


def _check_gone(t: str, configs: set, records: set, hosted: dict, report: Report) -> None:
    """A topic that does not exist leaves nothing of itself anywhere."""
    if t in configs:
        _topic_violation(report, f"topic {t} is gone but /config/topics/{t} is left")
    if t in records:
        _topic_violation(report, f"topic {t} is gone but reassignment records under /admin/reassignments/{t} are left")
    for b, held in sorted(hosted.items(), key=lambda kv: int(kv[0])):
        left = sorted(tp for tp in held if tp.rsplit("/", 1)[0] == t)
        if left:
            _topic_violation(report, f"topic {t} is gone but broker {b} still hosts {left}")


def _check_existing(t: str, found: dict, live: set, records: set, report: Report) -> None:
    """A topic that exists is whole: nothing moving, a state znode per partition and for no
    other, each with a leader in its ISR among its replicas (-1 only with none live)."""
    if any(found.get("adding", {}).values()) or any(found.get("removing", {}).values()) or t in records:
        _topic_violation(report, f"topic {t} is moving at the end (adding {found.get('adding')}, removing "
                                 f"{found.get('removing')}, record {t in records}): no op asked for it")
    if found.get("extra_states"):
        _topic_violation(report, f"topic {t} has state znodes of partitions it does not have: {found['extra_states']}")
    for p, replicas in sorted(found["partitions"].items(), key=lambda kv: int(kv[0])):
        state = found["states"].get(p)
        if state is None:
            continue  # settled_problems names it ("no state znode")
        leader, isr = state["leader"], state["isr"]
        where = f"{t}/{p} (replicas {replicas}, leader {leader}, isr {isr}, live {sorted(live)})"
        if not isr or not set(isr) <= set(replicas):
            _topic_violation(report, f"bad ISR at the end: {where}")
        if leader == -1:
            if set(replicas) & live:  # every broker is registered once quiet
                _topic_violation(report, f"no leader at the end although a replica is live: {where}")
        elif leader not in isr or leader not in replicas or leader not in live:
            _topic_violation(report, f"bad leader at the end: {where}")


def _check_metadata(answers: dict | None, existing: dict[str, dict], mine: set[str], report: Report) -> None:
    """Every controller instance that answered Metadata agrees with ZooKeeper on the workload's
    topics: the same topics, partitions and replica lists."""
    answered = {cid: a["topics"] for cid, a in (answers or {}).items() if "topics" in a}
    if not answered:
        errors = {cid: a.get("error") for cid, a in (answers or {}).items()}
        _topic_violation(report, f"no controller instance answered Metadata at the end: {errors}")
        return
    for cid, listed in sorted(answered.items()):
        for t in sorted((set(existing) | set(listed)) & mine):
            zk, md = existing.get(t), listed.get(t)
            if md is None:
                _topic_violation(report, f"Metadata of controller {cid} does not list topic {t}, which ZooKeeper has")
            elif zk is None:
                _topic_violation(report, f"Metadata of controller {cid} lists topic {t}, which ZooKeeper does not have")
            elif {p: list(r) for p, r in md.items()} != zk["partitions"]:
                _topic_violation(report, f"Metadata of controller {cid} answers topic {t} with {md}, ZooKeeper has "
                                         f"{zk['partitions']}")


def _topic_violation(report: Report, message: str) -> None:
    report.topic_violations += 1
    report.violations.append(message)
