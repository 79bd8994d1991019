"""planner_service.execution's pure parts: when a wave is over (WaveWatch), how waves are cut to
the cluster cap, and the wave loop's endings against a scripted controller (refused partitions,
a cancel, the deadline) - the cases the process tests in test_execution_controls.py cannot
provoke at will."""

from __future__ import annotations

from client.errors import ReassignmentInProgressError
from client.results import KeyedResult
from planner_service import execution
from planner_service.execution import (
    REASON_CANCELLED,
    REASON_NOT_STARTED,
    Execution,
    WaveWatch,
    cap_waves,
    run_waves,
)

A, B = ("t", 0), ("t", 1)


def test_a_wave_is_over_when_each_partition_is_done_or_ended_twice():
    w = WaveWatch({A: [2, 3], B: [3, 4]}, {"t": 0})
    # Sent, nothing seen yet (the model lags the request): going, not ended.
    assert w.observe(set(), {A: ([1, 2], False), B: ([1, 3], False)}, False, {"t": 0}) == (set(), {A, B}, set())
    # The request is pending, then A moves while B waits in /admin/reassign_partitions.
    assert w.observe(set(), {A: ([1, 2], False), B: ([1, 3], False)}, True, {"t": 0}) == (set(), {A, B}, set())
    assert w.observe({A}, {A: ([2, 3, 1], True), B: ([1, 3], False)}, True, {"t": 1})[1] == {A, B}
    # A done; B cancelled before it started (the request gone): ended only on the second poll.
    assert w.observe(set(), {A: ([2, 3], False), B: ([1, 3], False)}, False, {"t": 2}) == ({A}, {B}, set())
    assert w.observe(set(), {B: ([1, 3], False)}, False, {"t": 2}) == (set(), set(), {B})


def test_a_move_started_and_rolled_back_between_polls_is_seen_through_its_topic():
    w = WaveWatch({A: [2, 3]}, {"t": 5})
    quiet = {A: ([1, 2], False)}
    assert w.observe(set(), quiet, False, {"t": 5}) == (set(), {A}, set())  # unseen: could still start
    assert w.observe(set(), quiet, False, {"t": 7}) == (set(), {A}, set())  # the topic changed twice
    assert w.observe(set(), quiet, False, {"t": 7}) == (set(), set(), {A})


def test_listed_or_moving_is_never_ended():
    w = WaveWatch({A: [2, 3]}, {}, seen=True)
    for _ in range(3):
        assert w.observe({A}, {A: ([2, 3], False)}, False)[1] == {A}  # listed: not done, even at its target
        assert w.observe(set(), {A: ([1, 2, 3], True)}, False)[1] == {A}


def test_cap_waves():
    waves = [{"wave": 0, "kind": "data", "partitions": [{"p": i} for i in range(5)]},
             {"wave": 1, "kind": "metadata", "partitions": [{"p": 9}]}]
    assert cap_waves(waves, None) is waves
    cut = cap_waves(waves, 2)
    assert [len(w["partitions"]) for w in cut] == [2, 2, 1, 1]
    assert [w.get("piece") for w in cut] == [0, 1, 2, None] and cut[0]["pieces"] == 3
    assert [p for w in cut for p in w["partitions"]] == waves[0]["partitions"] + waves[1]["partitions"]


class ScriptedAdmin:
    """The AdminClient calls run_waves makes, answered from a script of the controller."""

    def __init__(self, refuse=(), listed=()):
        self.refuse, self.listed, self.sent, self.cancelled = set(refuse), set(listed), [], []

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def reassign_partitions(self, targets, throttle=None, additional=False, movement_strategies=None):
        self.sent.append(dict(targets))
        return KeyedResult({tp: ReassignmentInProgressError("busy") if tp in self.refuse else None for tp in targets})

    async def list_reassignments(self, partitions):
        return {tp: None for tp in partitions if tp in self.listed}

    async def cancel_reassignments(self, partitions):
        self.cancelled.append(list(partitions))
        return KeyedResult({tp: None for tp in partitions})


class Model:
    def __init__(self, replicas):
        self.replicas, self.request_pending, self.topic_changes = dict(replicas), False, {"t": 1}

    def replicas_of(self, tp):
        return self.replicas[tp], False


def _run(monkeypatch, admin, model, ex):
    import asyncio

    import client.admin

    monkeypatch.setattr(client.admin, "AdminClient", lambda *a, **k: admin)
    asyncio.run(run_waves("x:1", ex, 0.01, model))


def _ex(deadline_ms=None):
    waves = [{"wave": 0, "kind": "data", "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]},
                                                        {"topic": "t", "partition": 1, "replicas": [3, 4]}]},
             {"wave": 1, "kind": "data", "partitions": [{"topic": "t", "partition": 2, "replicas": [4, 1]}]}]
    return Execution(1, "rebalance", "test", "api", waves, None, deadline_ms=deadline_ms)


def test_refused_partitions_fail_the_execution_after_their_wave(monkeypatch):
    admin, model = ScriptedAdmin(refuse={B}), Model({A: [2, 3], B: [1, 3]})
    ex = _ex()
    _run(monkeypatch, admin, model, ex)
    assert ex.state == "failed" and "refused 1" in ex.error and len(admin.sent) == 1, ex  # wave 1 never sent
    reasons = {(u["topic"], u["partition"]): u["reason"] for u in ex.unmoved}
    assert reasons[B].startswith("refused: ") and reasons[("t", 2)] == REASON_NOT_STARTED and A not in reasons
    assert ex.partitions_done == 1 and ex.waves_done == 1


def test_a_cancelled_wave_stops_the_execution(monkeypatch):
    admin, model = ScriptedAdmin(), Model({A: [1, 2], B: [1, 3]})  # both back where they were
    ex = _ex()
    real = admin.reassign_partitions

    async def send(targets, **kw):  # the topic changes once the wave is sent: a move, rolled back
        out = await real(targets, **kw)
        model.topic_changes = {"t": 3}
        return out

    admin.reassign_partitions = send
    _run(monkeypatch, admin, model, ex)
    assert ex.state == "stopped" and ex.error is None
    assert [u["reason"] for u in ex.unmoved] == [REASON_CANCELLED, REASON_CANCELLED, REASON_NOT_STARTED]


def test_the_deadline_ends_the_execution_with_what_still_moves(monkeypatch):
    admin, model = ScriptedAdmin(listed={A, B}), Model({A: [1, 2], B: [1, 3]})
    ex = _ex(deadline_ms=execution.now_ms() + 50)
    _run(monkeypatch, admin, model, ex)
    assert ex.state == "failed" and "deadline" in ex.error
    assert [(m["topic"], m["partition"], m["running_at_controller"]) for m in ex.still_moving] == [
        ("t", 0, True), ("t", 1, True)]
    assert [u["reason"] for u in ex.unmoved] == [REASON_NOT_STARTED]
