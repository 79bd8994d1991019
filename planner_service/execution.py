"""A plan executed through the project's AdminClient, as an operator would run it: each wave
sent to the active controller's admin listener (the AdminClient's KIP-179 reassign_partitions,
with the throttle) and waited for, one after another.

A wave is over when each of its partitions has either reached its target or ended without it:
refused by the controller, or cancelled / rolled back there (KIP-236, by anyone). An execution
whose wave ended short of its targets starts no more waves and ends ``stopped`` (a stop asked
of the service, or a cancel at the controller) or ``failed`` (refused partitions), listing those
partitions with their reasons in ``unmoved``. Every execution has a deadline: past it the
execution ends ``failed`` and lists what the controller is still moving (``still_moving``)
instead of waiting silently; those moves go on at the controller, where a later execution
sees them as a running reassignment (409). An execution with partitions to ``elect`` (a
demotion's, spark_jobs.demote) sends ElectLeaders (preferred) for them once every wave is done:
an election that fails ends it ``failed``, listed in ``elections``.

Usage::

    ex = Execution(1, "decommission", "POST /remove_broker", "api", waves, throttle=10_485_760,
                   deadline_ms=now_ms() + 3_600_000)
    await run_waves("controller:9190", ex, poll_s=1.0, view=model_view, security=security)
    ex.request_stop(force=False)   # finish the running wave, start no more
    ex.view()        # what /state shows: state, waves and partitions done, unmoved, the error

``view`` is a :class:`ReassignmentProgress` over the service's model; ``security`` is the listener's
:class:`client.security.ClientSecurity` (``--command-config``); None is PLAINTEXT.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from planner_service.clock import now_ms
from znodes.values import TopicPartition

# A partition judged ended (not running, not pending, not at its target) must look so on this
# many polls in a row: the model's watches and the controller's answers arrive separately, and
# one poll can fall between a move's request leaving /admin/reassign_partitions and its topic
# znode showing it moving.
ENDED_CONFIRMATIONS = 2
# Entries of ``still_moving`` / ``unmoved`` listed in /state, at most (the counts are exact).
LISTED_MAX = 200

REASON_CANCELLED = "ended at the controller without reaching its target: cancelled or rolled back (KIP-236)"
REASON_FORCE_STOPPED = "rolled back by POST /stop_proposal_execution?force_stop=true (KIP-236)"
REASON_NOT_STARTED = "not started: the execution stopped before its wave"


class ReassignmentProgress(Protocol):
    """What the wave loop reads of the service's model (planner_service.model.ClusterModel): a
    pending request, each topic's change count, each partition's replicas and whether it moves."""

    request_pending: bool  # /admin/reassign_partitions exists
    topic_changes: dict  # topic -> how many times its znode changed

    def replicas_of(self, tp: TopicPartition) -> tuple[list[int] | None, bool]: ...  # (replicas, moving)


@dataclass
class Execution:
    id: int
    mode: str
    reason: str
    started_by: str  # "api" or "self-healing"
    waves: list
    throttle: int | None
    deadline_ms: int | None = None
    proposal_id: int | None = None
    caps: dict = field(default_factory=dict)  # what the waves were sized to: per broker, in the cluster
    # partitions whose preferred leader is elected once every wave is done (a demotion's)
    elect: list = field(default_factory=list)
    elections: dict | None = None  # {"elected": [...], "failed": [...]} once they ran
    # Cruise Control's replica_movement_strategies: sent with every wave (None: the controller's)
    movement_strategies: tuple[str, ...] | None = None
    started_ms: int = field(default_factory=now_ms)
    finished_ms: int | None = None
    state: str = "running"  # running, done, stopped, failed
    waves_done: int = 0
    partitions_done: int = 0
    error: str | None = None
    stop: str | None = None  # None, "graceful" (finish the wave, start no more) or "force" (roll it back)
    current: dict = field(default_factory=dict)  # the running wave: partition -> target replicas
    unmoved: list = field(default_factory=list)  # partitions that ended short of their targets, and why
    still_moving: list = field(default_factory=list)  # at the deadline: what the controller still moves
    _force: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _copy_first: tuple[int, int] | None = field(default=None, repr=False)  # (ms, bytes left) the ETA's rate starts at
    _copy_last: int = field(default=0, repr=False)  # bytes left at the last measure

    def __post_init__(self) -> None:
        if self.waves and not self.current:  # what /state shows as running until the first wave is sent
            self.current = {(p["topic"], p["partition"]): list(p["replicas"]) for p in self.waves[0]["partitions"]}

    @property
    def partitions_total(self) -> int:
        return sum(len(w["partitions"]) for w in self.waves)

    def remaining_targets(self) -> dict:
        """Partition -> target of what is left to do: the running wave and every wave after it."""
        if self.state != "running":
            return {}
        out = dict(self.current)
        for w in self.waves[self.waves_done + 1:]:
            out.update({(p["topic"], p["partition"]): list(p["replicas"]) for p in w["partitions"]})
        return out

    def note_copy(self, at_ms: int, remaining: int | None) -> float | None:
        """Record the bytes left to copy (the model's measure, at ``at_ms``) and return the ETA in
        seconds at the average rate since the first measure (a new window whenever the bytes left
        grow: a size poll saw more to copy): None until bytes have moved."""
        if remaining is None:
            return None
        if self._copy_first is None or remaining > self._copy_last:  # more work appeared: a new window
            self._copy_first = (at_ms, remaining)
        self._copy_last = remaining
        first_ms, first_left = self._copy_first
        elapsed_s = (at_ms - first_ms) / 1000
        done = first_left - remaining
        if remaining == 0:
            return 0.0
        if done <= 0 or elapsed_s <= 0:
            return None
        return remaining / (done / elapsed_s)

    def request_stop(self, force: bool) -> None:
        """Start no more waves; with ``force`` also roll the running wave back (KIP-236)."""
        if self.state != "running":
            return
        if force:
            self.stop = "force"
            self._force.set()
        elif self.stop is None:
            self.stop = "graceful"

    def view(self) -> dict:
        return {
            "id": self.id, "mode": self.mode, "reason": self.reason, "started_by": self.started_by,
            "state": self.state, "started_ms": self.started_ms, "finished_ms": self.finished_ms,
            "deadline_ms": self.deadline_ms, "proposal_id": self.proposal_id, "caps": self.caps,
            "waves_total": len(self.waves), "waves_done": self.waves_done,
            "partitions_total": self.partitions_total, "partitions_done": self.partitions_done,
            "throttle": self.throttle, "error": self.error, "stop": self.stop,
            "running_wave": _listed(self.current) if self.state == "running" else [],
            "unmoved_count": len(self.unmoved), "unmoved": self.unmoved[:LISTED_MAX],
            "still_moving_count": len(self.still_moving), "still_moving": self.still_moving[:LISTED_MAX],
            "elect_total": len(self.elect), "elections": self.elections,
            "movement_strategies": list(self.movement_strategies) if self.movement_strategies else None,
        }


def _listed(targets: dict) -> list[dict]:
    return [{"topic": t, "partition": p, "target": list(r)} for (t, p), r in sorted(targets.items())][:LISTED_MAX]


def cap_waves(waves: list[dict], cluster_cap: int | None) -> list[dict]:
    """The plan's waves cut so none holds more than ``cluster_cap`` partitions (Cruise
    Control's max_partition_movements_in_cluster, enforced by the service as CC's executor
    does): a wave's partitions in its order, consecutive pieces, each run and waited for on its
    own. Each piece keeps its wave's number and says which piece it is."""
    if cluster_cap is None:
        return waves
    out = []
    for w in waves:
        parts = w["partitions"]
        if len(parts) <= cluster_cap:
            out.append(w)
            continue
        pieces = -(-len(parts) // cluster_cap)
        for k in range(pieces):
            out.append({"wave": w["wave"], "kind": w["kind"], "piece": k, "pieces": pieces,
                        "partitions": parts[k * cluster_cap:(k + 1) * cluster_cap]})
    return out


# ---- the wave's state: pure -----------------------------------------------------------------


@dataclass
class WaveWatch:
    """One wave's partitions as successive polls see them.

    A partition is *done* when the model shows exactly its target, not moving; *going* while
    the controller lists it as running, the model shows it moving, or a request may still hold
    it (``/admin/reassign_partitions`` exists, or nothing of the wave has been seen yet);
    otherwise it *ended* short of its target, once :data:`ENDED_CONFIRMATIONS` polls in a row
    agree. Seen: a poll showed the request, a partition running, moving or done, or a topic
    of the wave changed since it was sent (a move started and rolled back between two polls
    shows only as that)."""

    targets: dict
    topic_marks: dict = field(default_factory=dict)  # topic -> its change count when the wave was sent
    seen: bool = False
    ended_polls: dict = field(default_factory=dict)  # partition -> polls in a row it looked ended

    def observe(self, running: set, replicas: dict, request_pending: bool,
                topic_changes: dict | None = None) -> tuple[set, set, set]:
        """(done, going, ended) of the partitions in ``replicas`` (partition -> current replicas
        or None, moving), from one poll: ``running`` the partitions the controller lists,
        ``request_pending`` whether /admin/reassign_partitions exists, ``topic_changes`` the
        model's change count per topic."""
        changes = topic_changes or {}
        if any(changes.get(t, 0) != n for t, n in self.topic_marks.items()):
            self.seen = True
        done, going, ended = set(), set(), set()
        for tp, (now, moving) in replicas.items():
            want = self.targets[tp]
            if tp in running or moving or request_pending:
                self.seen = True
            if now is not None and not moving and list(now) == list(want) and tp not in running:
                self.seen = True
                done.add(tp)
                self.ended_polls.pop(tp, None)
            elif tp in running or moving or request_pending or not self.seen:
                going.add(tp)
                self.ended_polls.pop(tp, None)
            else:
                self.ended_polls[tp] = self.ended_polls.get(tp, 0) + 1
                (ended if self.ended_polls[tp] >= ENDED_CONFIRMATIONS else going).add(tp)
        return done, going, ended


def unmoved_entry(tp: TopicPartition, target: list[int], now: list[int] | None, reason: str) -> dict:
    return {"topic": tp[0], "partition": tp[1], "target": list(target),
            "replicas": None if now is None else list(now), "reason": reason}


# ---- the I/O shell --------------------------------------------------------------------------


async def run_waves(bootstrap: str, ex: Execution, poll_s: float, view: ReassignmentProgress, timeout_ms: int = 30_000,
                    security=None) -> None:
    """Send each wave to the controller and wait until it is over (:class:`WaveWatch`); set
    ``ex.state`` to how the execution ended. ``security``: the listener's
    client.security.ClientSecurity (``--command-config``); None is PLAINTEXT."""
    from client.admin import AdminClient

    async with AdminClient(bootstrap, request_timeout_ms=timeout_ms, security=security) as admin:
        for i, wave in enumerate(ex.waves):
            if ex.stop is not None:
                _not_started(ex, i)
                ex.state = "stopped"
                return
            targets = {(p["topic"], p["partition"]): list(p["replicas"]) for p in wave["partitions"]}
            ex.current = targets
            # The first wave is refused if anything else is running; later ones join our own
            # (the controller may still be tidying the previous wave's request znode).
            marks = {t: view.topic_changes.get(t, 0) for t, _ in targets}  # before: the controller may act at once
            result = await admin.reassign_partitions(targets, throttle=ex.throttle, additional=i > 0,
                                                     movement_strategies=ex.movement_strategies)
            refused = result.errors
            for tp, err in sorted(refused.items()):
                ex.unmoved.append(unmoved_entry(tp, targets[tp], view.replicas_of(tp)[0], f"refused: {err}"))
            watch = WaveWatch({tp: r for tp, r in targets.items() if tp not in refused}, marks)
            outcome = await _wait_wave(admin, ex, watch, poll_s, view)
            ex.waves_done += 1
            if outcome == "deadline":
                ex.state = "failed"
                ex.error = (f"deadline passed ({ex.deadline_ms} ms since the epoch) with "
                            f"{len(ex.still_moving)} partitions still moving; they go on at the controller")
                _not_started(ex, i + 1)
                return
            if ex.unmoved:
                _not_started(ex, i + 1)
                if refused:
                    ex.state = "failed"
                    ex.error = f"the controller refused {len(refused)} partitions of wave {i}"
                else:
                    ex.state = "stopped"
                return
        ex.current = {}
        if ex.elect and ex.stop is not None:  # stopped after its last wave: no election either
            ex.state = "stopped"
            return
        if ex.elect:
            await _elect(admin, ex)
            if ex.elections["failed"]:
                ex.state = "failed"
                ex.error = f"the preferred election failed for {len(ex.elections['failed'])} partitions"
                return
        ex.state = "done"


async def _elect(admin, ex: Execution) -> None:
    """ElectLeaders (preferred) for ``ex.elect``, each partition's first replica now: elected,
    or already leading (ELECTION_NOT_NEEDED), is success; REASSIGNMENT_IN_PROGRESS is asked
    again (its reorder's last step still owns the partition); any other error fails it."""
    from client.elect import elect_until_settled

    results = await elect_until_settled(admin.elect_preferred_leaders, ex.elect)
    ex.elections = {
        "elected_count": sum(1 for e in results.values() if e is None),
        "elected": [{"topic": t, "partition": p} for (t, p), e in sorted(results.items()) if e is None][:LISTED_MAX],
        "failed": [{"topic": t, "partition": p, "error": str(e)} for (t, p), e in sorted(results.items())
                   if e is not None],
    }


async def _wait_wave(admin, ex: Execution, watch: WaveWatch, poll_s: float, view: ReassignmentProgress) -> str:
    """Poll until the wave is over ("over") or the deadline passes ("deadline"); a force stop
    cancels the wave's partitions at the controller (KIP-236) and goes on polling."""
    forced = False
    left = set(watch.targets)
    while left:
        if ex.stop == "force" and not forced:
            forced = True
            # Pending entries leave /admin/reassign_partitions, started moves roll back; a
            # partition already done answers NO_REASSIGNMENT_IN_PROGRESS, which changes nothing.
            await admin.cancel_reassignments(sorted(left))
        running = set(await admin.list_reassignments(sorted(left)))
        replicas = {tp: view.replicas_of(tp) for tp in left}
        done, going, ended = watch.observe(running, replicas, view.request_pending, view.topic_changes)
        ex.partitions_done += len(done)
        for tp in sorted(ended):
            reason = REASON_FORCE_STOPPED if forced else REASON_CANCELLED
            ex.unmoved.append(unmoved_entry(tp, watch.targets[tp], replicas[tp][0], reason))
        left -= done | ended
        if not left:
            break
        if ex.deadline_ms is not None and now_ms() >= ex.deadline_ms:
            ex.still_moving = [{"topic": tp[0], "partition": tp[1], "target": list(watch.targets[tp]),
                                "replicas": replicas[tp][0], "running_at_controller": tp in running}
                               for tp in sorted(left)]
            return "deadline"
        if forced:
            await asyncio.sleep(poll_s)
        else:
            try:  # a force stop is acted on at once, not at the next poll
                await asyncio.wait_for(ex._force.wait(), poll_s)
            except asyncio.TimeoutError:
                pass
    return "over"


def _not_started(ex: Execution, first_wave: int) -> None:
    for wave in ex.waves[first_wave:]:
        for p in wave["partitions"]:
            ex.unmoved.append(unmoved_entry((p["topic"], p["partition"]), p["replicas"], None, REASON_NOT_STARTED))
