"""Self-healing drains a dead broker that LEADS partitions, to the end: the planner service
(in-process, its REST API driven with a real HTTP client) against a real ZooKeeper, simulated
brokers (`reassignd sim`) and a controller process. The victim leads partitions when it is
killed and never comes back; the controller gives those partitions leaders from their ISRs
(controller.core.broker_failure) before the grace period ends, so the service's decommission
moves copy from live leaders and finish: no replica is left on the victim, no move runs, and
every partition has a live leader in its ISR.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from planner_service.service import Options, PlannerService
from tests.e2e.processes import Processes, kazoo_client, wait_for
from tests.planner.service_http import http, sim_command

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

SIM = ["--brokers", "5", "--topics", "orders:12:3:256KiB", "audit:6:2:256KiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "8MiB", "--produce-rate", "0"]
# The self-healing grace period: the controller's own election must come first. Long enough
# that a loaded machine's election (a session expiry, a step, a flush) stays well inside it.
GRACE_S = 8.0


def _cluster(zk) -> dict[tuple[str, int], tuple[list[int], list[int], dict]]:
    """partition -> (replicas, adding + removing, state)."""
    out = {}
    for t in zk.get_children("/brokers/topics"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        for p, r in doc["partitions"].items():
            moving = doc.get("adding_replicas", {}).get(p, []) + doc.get("removing_replicas", {}).get(p, [])
            state = json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
            out[(t, int(p))] = (r, moving, state)
    return out


async def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def test_self_healing_drain_of_a_dead_leader_finishes(zk_hosts, tmp_path, caplog):
    loop = asyncio.get_running_loop()
    caplog.set_level(logging.INFO, logger="reassignd.planner.audit")
    config = tmp_path / "controller.toml"
    config.write_text("zk_session_timeout_s = 2.0\nrequest_timeout_s = 5.0\n")
    with Processes(tmp_path) as procs, kazoo_client(zk_hosts) as zk:
        sim = procs.start_sim(zk_hosts, SIM)
        procs.start_controller(zk_hosts, 101, config)
        wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's registration")
        svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, self_healing=("broker-failure",),
                                     broker_failure_grace_s=GRACE_S, healing_min_interval_s=3600.0,
                                     wave_poll_s=0.3, session_timeout_s=10.0))
        await svc.start()
        base = f"http://{svc.address}"
        state = lambda: loop.run_in_executor(None, lambda: http(base, "GET", "/state")[1])  # noqa: E731
        try:
            await _until(lambda: svc.feed.ready and svc.model.n_partitions == 18, 30, "the service's model")
            before = await _until(lambda: (lambda c: c if all(
                sorted(s["isr"]) == sorted(r) for r, _, s in c.values()) else None)(_cluster(zk)), 60,
                "every replica in its ISR")
            led: dict[int, list] = {}
            for tp, (_, _, s) in before.items():
                led.setdefault(s["leader"], []).append(tp)
            victim = max(led, key=lambda b: (len(led[b]), b))
            held = [tp for tp, (r, _, _) in before.items() if victim in r]
            assert led[victim] and len(held) > len(led[victim])  # it leads some, follows in others

            sim_command(sim["control"], f"stop {victim}")
            t_stop = time.monotonic()
            # Before the grace period ends, the controller gave the victim's partitions new
            # leaders from their ISRs (leader epoch + 1) and took it out of every ISR.
            elected = await _until(lambda: (lambda c: c if all(
                c[tp][2]["leader"] not in (victim, -1) and victim not in c[tp][2]["isr"] for tp in held) else None)(
                _cluster(zk)), 30, f"leaders and ISRs without broker {victim}")
            # The election was the controller's: no self-healing had started when it was seen.
            assert svc.last_healing_at is None and zk.exists("/admin/reassign_partitions") is None, (
                f"self-healing started before the controller's election ({time.monotonic() - t_stop:.1f}s after the stop)")
            for tp in led[victim]:
                b, a = before[tp][2], elected[tp][2]
                assert a["leader"] in b["isr"] and a["leader_epoch"] == b["leader_epoch"] + 1, (tp, b, a)

            action = await _until(lambda: (svc.healing or [None])[0], 60, "a self-healing action")
            assert action["kind"] == "broker-failure" and action["execution"] and action["moves"] == len(held), action
            # audited like an API execution, the service itself its principal
            audits = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
            assert len(audits) == 1 and audits[0].startswith("principal=self-healing ") and \
                audits[0].endswith(f"status=200 outcome=execution {action['execution']}"), audits

            def drained():
                c = _cluster(zk)
                return c if (
                    not any(victim in r or moving for r, moving, _ in c.values())
                    and zk.exists("/admin/reassign_partitions") is None
                ) else None
            after = await _until(drained, 120, f"the drain of broker {victim} to finish")
            await _until(lambda: svc.execution.state != "running", 30, "the execution to end")
            ex = (await state())["execution"]
            assert ex["id"] == action["execution"] and ex["state"] == "done" and ex["started_by"] == "self-healing", ex
            live = {int(b) for b in zk.get_children("/brokers/ids")}
            assert victim not in live
            for tp, (replicas, _, st) in after.items():
                assert st["leader"] in live and st["leader"] in replicas and st["leader"] in st["isr"], (tp, st)
                assert set(st["isr"]) <= set(replicas), (tp, st, replicas)
            # every replica of the drained partitions copied in: their ISRs are whole again
            await _until(lambda: all(sorted(st["isr"]) == sorted(r) for r, _, st in _cluster(zk).values()), 60,
                         "full ISRs")
        finally:
            await svc.stop()
