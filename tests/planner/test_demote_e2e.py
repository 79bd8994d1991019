"""Issue 24 item 5 end to end: demoting a broker moves every leadership off it and no data, on
simulated brokers (`reassignd sim`) with a controller process on a real ZooKeeper; the undo
(the printed rollback, executed with --elect-preferred) makes it lead again. Once through
kafka-reassign --demote-broker (planned here, from Metadata), once through the planner service's
POST /demote_broker (run in-process, no Spark), two brokers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from planner_service.service import Options, PlannerService
from tests.e2e.processes import Processes, kazoo_client, wait_for
from tests.planner.service_http import assignment, http

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

# Topics on brokers 1-4 (5 empty), small and fast: every ISR is full within a second.
SIM = ["--brokers", "5", "--topics", "orders:8:3:64KiB", "audit:4:2:64KiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "16MiB", "--produce-rate", "0"]


def _states(zk) -> dict:
    out = {}
    for t, p in assignment(zk):
        out[(t, p)] = json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
    return out


def _leaders(zk) -> dict:
    return {tp: s["leader"] for tp, s in _states(zk).items()}


def _all_in_sync(zk) -> bool:
    now = assignment(zk)
    return all(sorted(s["isr"]) == sorted(now[tp]) for tp, s in _states(zk).items())


def _preferred_lead(zk) -> bool:
    now, led = assignment(zk), _leaders(zk)
    return all(led[tp] == r[0] for tp, r in now.items())


@contextlib.asynccontextmanager
async def _cluster(zk_hosts, tmp_path):
    config = tmp_path / "controller.toml"
    config.write_text("zk_session_timeout_s = 2.0\nrequest_timeout_s = 5.0\n")
    with Processes(tmp_path) as procs, kazoo_client(zk_hosts) as zk:
        procs.start_sim(zk_hosts, SIM)
        procs.start_controller(zk_hosts, 101, config)
        wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's registration")
        ctl = json.loads(zk.get("/reassignd/controllers/101")[0])
        wait_for(lambda: len(assignment(zk)) == 12 and _all_in_sync(zk) and _preferred_lead(zk), 30,
                 "every partition in sync, led by its first replica")
        svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, wave_poll_s=0.2))
        await svc.start()
        try:
            deadline = time.monotonic() + 30
            while not (svc.feed.ready and svc.model.n_partitions == 12):
                assert time.monotonic() < deadline, "the service's model"
                await asyncio.sleep(0.2)
            yield {"zk": zk, "svc": svc, "base": f"http://{svc.address}", "bootstrap": f"{ctl['host']}:{ctl['port']}"}
        finally:
            await svc.stop()


async def _kr(*args: str) -> tuple[int, dict]:
    """kafka-reassign with --output json: (exit code, the JSON it printed)."""
    import io
    from contextlib import redirect_stdout

    from client import cli

    def run():
        out = io.StringIO()
        with redirect_stdout(out):
            code = cli.main([*args, "--output", "json"])
        return code, json.loads(out.getvalue())

    return await asyncio.to_thread(run)


async def _ended(base: str, ex_id: int, timeout: float = 60) -> dict:
    """The service's execution ``ex_id`` once it is no longer running."""
    deadline = time.monotonic() + timeout
    while True:
        ex = (await asyncio.to_thread(http, base, "GET", "/state"))[1]["execution"]
        if ex["id"] == ex_id and ex["state"] != "running":
            return ex
        assert time.monotonic() < deadline, ex
        await asyncio.sleep(0.3)


def _zk_view(zk) -> tuple[dict, dict]:
    """What a demotion is planned from, as ZooKeeper holds it: replica lists, (leader, ISR)."""
    return assignment(zk), {tp: (s["leader"], sorted(s["isr"])) for tp, s in _states(zk).items()}


def _model_view(model) -> tuple[dict, dict]:
    """The same from the planner service's model."""
    return ({(t, p): list(a.replicas) for t, parts in model.topics.items() for p, a in parts.items()},
            {(t, p): (s.leader, sorted(s.isr)) for t, parts in model.states.items() for p, s in parts.items()})


async def _model_agrees(svc, zk, timeout: float = 20) -> tuple[int, dict]:
    """Once the service's model equals ZooKeeper (its feed's watches trail ZooKeeper a moment):
    the model version it was seen at and ZooKeeper's leaders then. Nothing in these tests moves a
    leader on its own (the controller's leader rebalance waits 300 s, and finds the preferred
    leaders leading; the sims' ISRs stay full without produce traffic), so a proposal computed
    at that version was planned from exactly this view."""
    deadline = time.monotonic() + timeout
    while True:
        zk_view = await asyncio.to_thread(_zk_view, zk)
        version, model_view = svc.model.version, _model_view(svc.model)  # one loop turn: consistent
        if model_view == zk_view:
            return version, {tp: leader for tp, (leader, _) in zk_view[1].items()}
        if time.monotonic() >= deadline:
            differ = {tp: (m.get(tp), z.get(tp)) for m, z in zip(model_view, zk_view)
                      for tp in m.keys() | z.keys() if m.get(tp) != z.get(tp)}
            raise AssertionError(f"the service's model never agreed with ZooKeeper (model, ZooKeeper): {differ}")
        await asyncio.sleep(0.05)


def _same_sets(before: dict, after: dict) -> bool:
    return before.keys() == after.keys() and all(sorted(before[tp]) == sorted(after[tp]) for tp in before)


async def test_demote_moves_every_leadership_and_no_data_and_the_rollback_undoes_it(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path) as c:
        zk, bootstrap, base = c["zk"], c["bootstrap"], c["base"]
        before = assignment(zk)
        led_before = {tp for tp, b in _leaders(zk).items() if b == 2}
        assert led_before, "broker 2 leads nothing to begin with: the test shows nothing"

        # --dry-run: the plan, nothing changed.
        code, dry = await _kr("--bootstrap-server", bootstrap, "--demote-broker", "2", "--dry-run")
        assert code == 0 and dry["dry_run"] is True, dry
        assert {(e["topic"], e["partition"]) for e in dry["elect"]} == led_before
        assert all(e["replicas"][-1] == 2 for e in dry["reorders"]) and dry["reorders"]
        assert assignment(zk) == before and {tp for tp, b in _leaders(zk).items() if b == 2} == led_before

        # Demoted: broker 2 leads nothing, every partition keeps its replica set, 2 is last in each.
        code, done = await _kr("--bootstrap-server", bootstrap, "--demote-broker", "2")
        assert code == 0, done
        assert done["still_led_by_demoted"] == [] and done["preferred_election"]["failed"] == [], done
        assert 2 not in _leaders(zk).values()
        after = assignment(zk)
        assert _same_sets(before, after)
        assert all(r[-1] == 2 for r in after.values() if 2 in r)
        assert not zk.exists("/admin/reassign_partitions") and not c["svc"].model.moving_partitions()
        assert _all_in_sync(zk)  # nothing was copied: no replica ever left the ISR

        # The undo: the rollback, executed with a preferred election: 2 is first and leads again.
        rollback = tmp_path / "rollback.json"
        rollback.write_text(json.dumps(done["rollback"]))
        code, undo = await _kr("--bootstrap-server", bootstrap, "--execute", "--elect-preferred",
                               "--reassignment-json-file", str(rollback))
        assert code == 0 and undo["preferred_election"]["failed"] == [], undo
        assert assignment(zk) == before
        assert {tp for tp, b in _leaders(zk).items() if b == 2} == led_before

        # The planner service, two brokers at once: a dry run changes nothing ... planned once its
        # model has heard of the undo's elections and reorders and of every ISR (a demotion's plan
        # depends on all three), and from exactly that view: the proposal's model version is the
        # one the model agreed with ZooKeeper at.
        version, leaders = await _model_agrees(c["svc"], zk)
        led34 = {tp for tp, b in leaders.items() if b in (3, 4)}
        # A partition on 3 and 4 alone keeps its leader: no other ISR member to take it.
        stays = {tp for tp in led34 if set(before[tp]) <= {3, 4}}
        assert stays and led34 - stays, "the layout has no partition of each kind: the test shows less"
        status, body = await asyncio.to_thread(http, base, "POST", "/demote_broker?brokerid=3,4")
        assert status == 200 and body["dryrun"] is True, body
        assert body["proposal"]["model_version"] == version, "the model changed after it agreed with ZooKeeper"
        report = body["proposal"]["report"]
        assert all(leaders[(e["topic"], e["partition"])] == e["leader_now"] for e in report["elect"]), report
        assert report["demoted_brokers"] == [3, 4] and report["moves"] == 0
        assert {(e["topic"], e["partition"]) for e in report["elect"]} == led34 - stays
        assert {(e["topic"], e["partition"]) for e in report["leader_stays"]} == stays
        assert [w["kind"] for w in body["proposal"]["waves"]] == ["metadata"]
        assert assignment(zk) == before
        # ... kafka-reassign --planner plans the same there ...
        code, via = await _kr("--bootstrap-server", bootstrap, "--demote-broker", "3,4", "--dry-run",
                              "--planner", base)
        assert code == 0 and via["reorders"] == body["proposal"]["reassignment"]["partitions"], via
        # ... and executed, brokers 3 and 4 lead nothing, holding the same replicas.
        status, body = await asyncio.to_thread(http, base, "POST", "/demote_broker?brokerid=3,4&dryrun=false")
        assert status == 200 and body["execution"]["elect_total"] == len(led34 - stays), body
        ex = await _ended(base, body["execution"]["id"])
        assert ex["state"] == "done" and ex["elections"]["failed"] == [], ex
        assert ex["elections"]["elected_count"] == len(led34 - stays)
        assert {tp for tp, b in _leaders(zk).items() if b in (3, 4)} == stays
        assert _same_sets(before, assignment(zk))
        # The service's rollback undoes it the same way.
        rollback.write_text(json.dumps(report["rollback"]))
        code, undo = await _kr("--bootstrap-server", bootstrap, "--execute", "--elect-preferred",
                               "--reassignment-json-file", str(rollback))
        assert code == 0 and assignment(zk) == before, undo
        assert {tp for tp, b in _leaders(zk).items() if b in (3, 4)} == led34

        # A reviewed demotion is approved by its proposal_id (Strimzi's approve), as any plan is,
        # planned once the model has heard of the undo.
        version, leaders = await _model_agrees(c["svc"], zk)
        status, body = await asyncio.to_thread(http, base, "POST", "/demote_broker?brokerid=1")
        assert status == 200 and body["proposal"]["model_version"] == version, body
        assert {(e["topic"], e["partition"]) for e in body["proposal"]["report"]["elect"]} == \
            {tp for tp, b in leaders.items() if b == 1}, body
        pid = body["proposal"]["proposal_id"]
        status, body = await asyncio.to_thread(http, base, "POST", f"/demote_broker?dryrun=false&proposal_id={pid}")
        assert status == 200 and body["execution"]["proposal_id"] == pid, body
        ex = await _ended(base, body["execution"]["id"])
        assert ex["state"] == "done" and ex["elections"]["failed"] == [], ex
        assert 1 not in _leaders(zk).values() and _same_sets(before, assignment(zk))


async def test_demote_refuses_bad_brokers_and_changes_nothing(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path) as c:
        zk, bootstrap, base = c["zk"], c["bootstrap"], c["base"]
        before, leaders = assignment(zk), _leaders(zk)
        for query in ("/demote_broker", "/demote_broker?brokerid=9", "/demote_broker?brokerid=1,1",
                      "/demote_broker?brokerid=1&throttle=5"):
            status, body = await asyncio.to_thread(http, base, "POST", query)
            assert status == 400, (query, body)
        status, body = await asyncio.to_thread(http, base, "GET", "/demote_broker?brokerid=1")
        assert status == 405, body
        code, out = await _kr("--bootstrap-server", bootstrap, "--demote-broker", "9")
        assert code != 0 and "not registered" in out["error"]["message"], out
        # Broker 5 holds nothing: nothing to reorder, nothing to elect.
        code, out = await _kr("--bootstrap-server", bootstrap, "--demote-broker", "5")
        assert code == 0 and out["reorders"] == [] and out["elect"] == [], out
        assert assignment(zk) == before and _leaders(zk) == leaders
