"""The planner service's pure parts: the cluster model (reads -> model -> planner input) and the
self-healing rules and their gating (a failing Spark job: tests/planner/test_lost_executor.py)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from planner_service.model import ClusterModel
from planner_service.service import Options, PlannerService
from spark_jobs.snapshot import validate
from znodes.values import Assignment, Broker, LeaderIsr


def _model(brokers=(1, 2, 3), topics=None) -> ClusterModel:
    m = ClusterModel()
    m.set_brokers({b: Broker(b, "127.0.0.1", 9000 + b, None) for b in brokers}, now=0.0)
    for name, parts in (topics or {"orders": {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 2)}}).items():
        m.set_topic(name, {p: Assignment(tuple(r)) for p, r in parts.items()})
        for p, r in parts.items():
            m.set_state(name, p, LeaderIsr(r[0], 0, 1, tuple(r), 0))
    return m


def test_snapshot_is_a_valid_planner_input_with_sizes_and_moving_partitions():
    m = _model()
    m.set_topic("audit", {0: Assignment((1, 2, 3), adding=(3,), removing=(4,)), 1: Assignment((2, 4))})
    m.set_sizes({1: {("orders", 0): 100}, 2: {("orders", 0): 90, ("audit", 1): 5}})
    snap = m.snapshot(taken_at_ms=1)
    assert validate(snap) == snap  # already in the validated shape: the planner may assume_valid
    audit = snap["topics"][0]["partitions"]
    assert audit[0]["replicas"] == [1, 2, 3] and audit[0]["reassigning"] is True
    assert snap["brokers"][-1] == {"id": 4, "host": None, "port": None, "rack": None, "alive": False}
    assert snap["topics"][1]["partitions"][0]["sizes"] == [100, 90]
    assert snap["topics"][1]["partitions"][1]["sizes"] is None
    assert m.reassignment_running() and m.moving_partitions() == [("audit", 0)]


def test_versions_bump_on_plan_inputs_only_and_entries_are_rebuilt_when_their_topic_changes():
    m = _model()
    v = m.version
    first = m.snapshot()
    assert not m.set_state("orders", 0, LeaderIsr(1, 0, 1, (1, 2), 7))  # only the zkVersion moved
    assert not m.set_sizes({}) and m.version == v
    assert m.snapshot()["topics"][0] is first["topics"][0]  # cached entry reused
    assert m.set_state("orders", 0, LeaderIsr(2, 1, 1, (2,), 8)) and m.version == v + 1
    assert m.snapshot()["topics"][0]["partitions"][0]["leader"] == 2
    assert m.set_request_pending(True) and m.version == v + 1 and m.reassignment_running()
    assert m.set_topic("orders", None) and m.snapshot()["topics"] == []


def test_load_counts_replicas_leaders_and_bytes_per_broker():
    m = _model(brokers=(1, 2, 3, 4))
    m.set_sizes({1: {("orders", 0): 10, ("orders", 3): 30}, 2: {("orders", 0): 10}})
    load = {x["broker"]: x for x in m.load()}
    assert load[1] == {"broker": 1, "alive": True, "rack": None, "replicas": 3, "leaders": 2, "bytes": 40,
                       "bytes_unknown": 1, "disk_capacity": None, "disk_capacity_source": None, "disk_limit": None,
                       "disk_use": None, "bytes_planned": None, "disk_use_planned": None}
    assert load[4]["replicas"] == 0 and load[2]["bytes_unknown"] == 2


def test_departures_are_timed_and_counts_checked_over_registered_brokers():
    m = _model()
    assert m.counts_fair()
    m.set_brokers({b: Broker(b, "h", 1) for b in (1, 3)}, now=50.0)
    assert m.departed == {2: 50.0} and m.gone_holders() == [2] and not m.counts_fair()
    m.set_brokers({b: Broker(b, "h", 1) for b in (1, 2, 3, 4)}, now=60.0)
    assert m.departed == {} and not m.counts_fair()  # broker 4 is empty: 0 is not R/R+1
    assert m.reached({("orders", 0): [1, 2]}) and not m.reached({("orders", 0): [2, 1]})


def _service(**opts) -> PlannerService:
    svc = PlannerService(Options(zookeeper="127.0.0.1:1", sizes=False, **opts))
    svc.feed.ready = svc.feed.connected = True
    return svc


async def _until(predicate, what: str, timeout: float = 60.0) -> None:
    """Poll ``predicate`` until it holds; fail with ``what`` after ``timeout`` (a loaded
    machine's margin: the loop passes once a second)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_broker_failure_waits_out_the_grace_period():
    svc = _service(self_healing=("broker-failure", "goal-violation"), broker_failure_grace_s=30)
    svc.model = _model()
    svc.model.set_brokers({b: Broker(b, "h", 1) for b in (1, 3)}, now=100.0)
    assert svc.healing_decision(120.0) is None  # gone 20 s: within grace, and no goal action meanwhile
    kind, reason, args = svc.healing_decision(131.0)
    assert kind == "broker-failure" and "2 (31s)" in reason and args == {"mode": "decommission", "brokers": [2]}
    svc.model.set_brokers({b: Broker(b, "h", 1) for b in (1, 2, 3, 4)}, now=140.0)
    kind, reason, args = svc.healing_decision(141.0)
    assert kind == "goal-violation" and args == {"mode": "rebalance"}
    only_failure = _service(self_healing=("broker-failure",))
    only_failure.model = svc.model
    assert only_failure.healing_decision(141.0) is None


async def test_self_healing_never_starts_over_someone_elses_reassignment_and_is_rate_limited():
    svc = _service(self_healing=("goal-violation",), healing_min_interval_s=3600)
    svc.model = _model(brokers=(1, 2, 3, 4))
    started = []

    class Ex:
        id = 1

    async def fake_execute(planned, reason, started_by, throttle):
        started.append((planned["mode"], started_by))
        return Ex()

    svc.execute = fake_execute
    # Each pass of the loop that found something to heal asks whether a reassignment runs:
    # the test waits for those passes themselves, not for fixed times.
    conflicts: list[bool] = []
    conflict = svc._conflict

    def counted():
        why = conflict()
        conflicts.append(why is not None)
        return why

    svc._conflict = counted
    svc.model.set_request_pending(True)  # another tool's reassignment
    task = asyncio.get_running_loop().create_task(svc._self_heal())
    try:
        await _until(lambda: conflicts.count(True) >= 2, "two passes that saw the other reassignment")
        assert started == [] and svc.healing == []
        svc.model.set_request_pending(False)
        await _until(lambda: svc.healing, "the healing to start")
        assert started == [("rebalance", "self-healing")]
        assert svc.healing[0]["kind"] == "goal-violation" and svc.healing[0]["moves"] > 0
        passes = conflicts.count(False)
        await _until(lambda: conflicts.count(False) >= passes + 2, "two more passes")
        assert len(started) == 1  # the cluster is still unfair, but the rate limit holds
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        svc.executor.shutdown()


async def test_a_refused_self_healing_is_audited_with_the_status_it_was_refused_with(caplog):
    """The audit line said 409 for any refusal: a 503 (ZooKeeper down just as it started) read
    as "a reassignment runs"."""
    import logging

    from planner_service.http_server import HttpError

    svc = _service(self_healing=("goal-violation",), healing_min_interval_s=3600)
    svc.model = _model(brokers=(1, 2, 3, 4))

    async def refused(planned, reason, started_by, throttle):
        raise HttpError(503, "ZooKeeper is not connected")

    svc.execute = refused
    with caplog.at_level(logging.INFO, logger="reassignd.planner.audit"):
        task = asyncio.get_running_loop().create_task(svc._self_heal())
        try:
            await _until(lambda: svc.healing, "the healing to be tried")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            svc.executor.shutdown()
    lines = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
    assert len(lines) == 1 and "status=503" in lines[0] and "ZooKeeper is not connected" in lines[0], lines
    assert svc.healing[0]["execution"] is None and "ZooKeeper" in svc.healing[0]["error"]


@pytest.mark.parametrize("query,status", [({"dryrun": "x"}, 400), ({"brokerid": "1"}, 400), ({"bogus": ""}, 400)])
async def test_parameter_errors_come_before_any_plan(query, status):
    from planner_service.http_server import HttpError

    svc = _service()
    svc.model = _model()
    with pytest.raises(HttpError) as e:
        await svc.handle("POST", "/rebalance" if "brokerid" not in query else "/fix_rack_violations", query)
    assert e.value.status == status and svc.proposal is None
    svc.executor.shutdown()


def test_tallies_follow_topic_changes_as_a_full_scan_would():
    import random

    rng = random.Random(5)
    m = ClusterModel()
    m.set_brokers({b: Broker(b, "h", 1) for b in range(1, 5)}, now=0.0)
    for step in range(300):
        name = f"t{rng.randint(0, 4)}"
        if rng.random() < 0.15:
            m.set_topic(name, None)
        else:
            parts = {}
            for p in range(rng.randint(1, 4)):
                reps = tuple(rng.sample(range(1, 7), rng.randint(1, 3)))
                removing = reps[-1:] if len(reps) > 1 and rng.random() < 0.3 else ()
                parts[p] = Assignment(reps, removing=removing)
            m.set_topic(name, parts)
        assign = [(t, p, a) for t, ps in m.topics.items() for p, a in ps.items()]
        holders = sorted({b for _, _, a in assign for b in a.replicas} - set(m.brokers))
        assert m.gone_holders() == holders, step
        assert m.n_partitions == len(assign)
        assert m.moving_partitions() == sorted((t, p) for t, p, a in assign if a.moving)
        counts = Counter(b for _, _, a in assign for b in a.replicas if b not in a.removing)
        low = sum(counts[b] for b in m.brokers) // 4
        fair = not any(b not in m.brokers for b in counts) and all(counts[b] in (low, low + 1) for b in m.brokers)
        assert m.counts_fair() == fair, step
