"""Issue 24: the planner service's executions end, stop and keep to their scope. The service runs
in-process (no Spark: plans in-process), its REST API driven with a real HTTP client, against a
real ZooKeeper, simulated brokers (`reassignd sim`, slow replication so moves last) and a
controller process; cancels come from kafka-reassign --cancel (KIP-236), as an operator's would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from planner_service.execution import REASON_CANCELLED, REASON_FORCE_STOPPED, REASON_NOT_STARTED
from planner_service.service import Options, PlannerService
from tests.e2e.processes import Processes, kazoo_client, wait_for
from tests.planner.service_http import assignment, http
from znodes.launcher import free_port as _free_port

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

# 8 MiB partitions copied at 1 MiB/s: a move lasts ~8 s, long enough to cancel or stop it.
SLOW = ["--brokers", "5", "--topics", "orders:8:2:8MiB", "--topic-brokers", "1,2,3,4",
        "--bandwidth", "1MiB", "--produce-rate", "0"]


async def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _moving(zk) -> set:
    out = set()
    for t in zk.get_children("/brokers/topics"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        for p in list(doc.get("adding_replicas", {})) + list(doc.get("removing_replicas", {})):
            out.add((t, int(p)))
    return out


@contextlib.asynccontextmanager
async def _cluster(zk_hosts, tmp_path, sim_args=SLOW, controller_config: str = "", ops: bool = False, **opts):
    config = tmp_path / "controller.toml"
    config.write_text("zk_session_timeout_s = 2.0\nrequest_timeout_s = 5.0\n" + controller_config)
    with Processes(tmp_path) as procs, kazoo_client(zk_hosts) as zk:
        sim = procs.start_sim(zk_hosts, sim_args)
        if ops:  # the controller's operations port, read by the service for its move caps
            port = _free_port()
            procs.spawn("controller-101", ["controller", "--zookeeper", zk_hosts, "--id", "101", "--listen",
                                           "127.0.0.1:0", "--config", str(config), "--ops-listen", f"127.0.0.1:{port}"])
            opts["controller_ops"] = f"http://127.0.0.1:{port}"
        else:
            procs.start_controller(zk_hosts, 101, config)
        wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's registration")
        ctl = json.loads(zk.get("/reassignd/controllers/101")[0])
        svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, wave_poll_s=0.2, **opts))
        await svc.start()
        try:
            await _until(lambda: svc.feed.ready and svc.model.n_partitions > 0, 30, "the service's model")
            base = f"http://{svc.address}"

            async def call(method: str, path: str):
                return await asyncio.to_thread(http, base, method, path)

            call.svc = svc
            yield {"svc": svc, "call": call, "zk": zk, "sim": sim, "bootstrap": f"{ctl['host']}:{ctl['port']}"}
        finally:
            await svc.stop()


async def _ended(call, ex_id: int, timeout: float) -> dict:
    async def state():
        return (await call("GET", "/state"))[1]["execution"]

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ex = await state()
        if ex["id"] == ex_id and ex["state"] != "running":
            return ex
        await asyncio.sleep(0.3)
    m = call.svc.model
    raise AssertionError(f"execution {ex_id} still running after {timeout}s: {await state()}; the model: request "
                         f"pending {m.request_pending}, records {m.records}, moving {m.moving_partitions()}")


async def _kafka_reassign(*args: str) -> int:
    from client import cli

    return await asyncio.to_thread(cli.main, list(args))


async def test_a_wave_cancelled_at_the_controller_ends_the_execution_and_blocks_nothing(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path) as c:
        call, zk, svc = c["call"], c["zk"], c["svc"]
        before = assignment(zk)
        code, body = await call("POST", "/remove_broker?brokerid=4&dryrun=false")
        assert code == 200 and body["execution"]["state"] == "running", body
        ex_id = body["execution"]["id"]
        await _until(lambda: _moving(zk), 30, "the first wave moving")
        # An operator cancels every running reassignment: KIP-236 rolls the wave back.
        assert await _kafka_reassign("--bootstrap-server", c["bootstrap"], "--cancel") == 0
        ex = await _ended(call, ex_id, 30)
        assert ex["state"] == "stopped" and ex["stop"] is None, ex
        cancelled = [u for u in ex["unmoved"] if u["reason"] == REASON_CANCELLED]
        assert cancelled and ex["unmoved_count"] == ex["partitions_total"] - ex["partitions_done"]
        for u in cancelled:  # rolled back: the replicas it had before, not its target
            assert u["replicas"] == before[(u["topic"], u["partition"])] != u["target"], u
        assert all(u["reason"] == REASON_NOT_STARTED for u in ex["unmoved"] if u not in cancelled)
        assert (await call("GET", "/state"))[1]["executions"][0]["state"] == "stopped"
        # The next execution is accepted once the rollback is over (never 409 for ever).
        await _until(lambda: not svc.model.reassignment_running(), 30, "the rollback to finish")
        code, again = await call("POST", "/remove_broker?brokerid=4&dryrun=false")
        assert code == 200 and again["execution"]["state"] == "running", again
        # ... and POST /stop_proposal_execution?force_stop=true rolls its running wave back.
        await _until(lambda: _moving(zk), 30, "the second execution's first wave moving")
        code, stop = await call("POST", "/stop_proposal_execution?force_stop=true")
        assert code == 200 and stop["force_stop"] is True and stop["execution"]["stop"] == "force", stop
        ex = await _ended(call, again["execution"]["id"], 30)
        assert ex["state"] == "stopped" and ex["stop"] == "force", ex
        forced = [u for u in ex["unmoved"] if u["reason"] == REASON_FORCE_STOPPED]
        assert forced, ex
        await _until(lambda: not _moving(zk) and not zk.exists("/admin/reassign_partitions"), 30, "a quiet cluster")
        after = assignment(zk)
        for u in forced:
            assert after[(u["topic"], u["partition"])] == before[(u["topic"], u["partition"])]
        # Nothing runs: a stop is answered, and changes nothing.
        code, idle = await call("POST", "/stop_proposal_execution")
        assert code == 200 and idle["execution"] is None and idle["force_stop"] is False


async def test_a_graceful_stop_finishes_the_running_wave_and_starts_no_more(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path) as c:
        call, zk = c["call"], c["zk"]
        before = assignment(zk)
        # One move into and out of each broker per wave, at most two partitions per piece,
        # and this request's own throttle.
        # Cruise Control's replica_movement_strategies go with every wave's reassignment.
        code, body = await call("POST", "/rebalance?dryrun=false&concurrent_partition_movements_per_broker=1"
                                        "&max_partition_movements_in_cluster=2&replication_throttle=3000000"
                                        "&replica_movement_strategies=smallest_first,leader_moves_first")
        assert code == 200, body
        ex = body["execution"]
        assert ex["throttle"] == 3_000_000 and ex["caps"] == {"per_broker_in": 1, "per_broker_out": 1, "cluster": 2}
        assert ex["movement_strategies"] == ["smallest_first", "leader_moves_first"], ex
        entries = await _until(lambda: zk.exists("/admin/reassign_partitions") and json.loads(
            zk.get("/admin/reassign_partitions")[0])["partitions"] or None, 30, "the first wave's entries")
        assert all(e.get("movement_strategies") == ["smallest_first", "leader_moves_first"] for e in entries), entries
        assert ex["waves_total"] >= 2 and 0 < len(ex["running_wave"]) <= 2, ex
        current = {(t, int(p)): r for (t, p), r in before.items()}
        for w in c["svc"].execution.waves:  # what the service sends, wave by wave
            assert len(w["partitions"]) <= 2, w
            ins = [b for p in w["partitions"] for b in p["replicas"] if b not in current[(p["topic"], p["partition"])]]
            outs = [b for p in w["partitions"] for b in current[(p["topic"], p["partition"])] if b not in p["replicas"]]
            assert len(ins) == len(set(ins)) and len(outs) == len(set(outs)), w
        # The throttle reached the brokers the controller throttles (KIP-179 rates).
        rates = await _until(lambda: [json.loads(zk.get(f"/config/brokers/{b}")[0])["config"].get(
            "leader.replication.throttled.rate") for b in zk.get_children("/config/brokers")
            if b != "<default>"] or None, 30, "throttle rates")
        assert "3000000" in rates, rates
        first = {(p["topic"], p["partition"]): p["target"] for p in ex["running_wave"]}
        assert 0 < len(first) <= 2
        code, stop = await call("POST", "/stop_proposal_execution")  # Cruise Control's default: not forced
        assert code == 200 and stop["force_stop"] is False and stop["execution"]["stop"] == "graceful", stop
        ex = await _ended(call, ex["id"], 60)
        assert ex["state"] == "stopped" and ex["stop"] == "graceful", ex
        assert ex["waves_done"] == 1 and ex["partitions_done"] == len(first), ex
        assert all(u["reason"] == REASON_NOT_STARTED for u in ex["unmoved"]) and ex["unmoved_count"] > 0
        after = assignment(zk)
        for tp, target in first.items():
            assert after[tp] == target  # the running wave finished
        for u in ex["unmoved"]:
            assert after[(u["topic"], u["partition"])] == before[(u["topic"], u["partition"])]


async def test_an_execution_past_its_deadline_reports_what_still_moves(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path) as c:
        call, zk = c["call"], c["zk"]
        code, body = await call("POST", "/remove_broker?brokerid=4&dryrun=false&deadline_s=2")
        assert code == 200, body
        ex = await _ended(call, body["execution"]["id"], 30)
        assert ex["state"] == "failed" and "deadline" in ex["error"], ex
        assert ex["still_moving_count"] > 0 and all(m["running_at_controller"] or m["replicas"] != m["target"]
                                                    for m in ex["still_moving"]), ex
        assert ex["deadline_ms"] - ex["started_ms"] == 2000
        # The moves go on at the controller: a new execution is refused while they run.
        code, busy = await call("POST", "/rebalance?dryrun=false")
        assert code == 409 and "reassignment is running" in busy["error"]["message"], busy
        assert await _kafka_reassign("--bootstrap-server", c["bootstrap"], "--cancel") == 0


FAST = ["--brokers", "5", "--topics", "orders:8:2:256KiB", "audit:4:2:256KiB", "--topic-brokers", "1,2,3,4",
        "--bandwidth", "16MiB", "--produce-rate", "0"]


async def test_a_reviewed_proposal_executes_as_reviewed_or_409_when_the_cluster_changed(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path, FAST) as c:
        call, zk, svc = c["call"], c["zk"], c["svc"]
        before = assignment(zk)
        # Scope on a dry run: audit stays, nothing lands on broker 3, broker 4 is drained.
        code, dry = await call("POST", "/remove_broker?brokerid=4&excluded_topics=aud.*"
                                       "&excluded_brokers_for_replica_move=3")
        assert code == 200 and dry["dryrun"] is True, dry
        prop = dry["proposal"]
        pid = prop["proposal_id"]
        planned = {(e["topic"], e["partition"]): e["replicas"] for e in prop["reassignment"]["partitions"]}
        assert prop["report"]["scope"]["topics_excluded"] == ["audit"]
        for tp, r in planned.items():
            assert 4 not in r and (3 in r) == (3 in before[tp]), (tp, before[tp], r)
            assert tp[0] == "audit" and 4 in before[tp] or tp[0] == "orders", tp
        # The same scope on GET /proposals.
        code, view = await call("GET", "/proposals?excluded_brokers_for_replica_move=5")
        assert code == 200 and view["report"]["scope"]["excluded_brokers_for_replica_move"] == [5]
        assert not any(5 in e["replicas"] for e in view["reassignment"]["partitions"])
        # Refusals: unknown id, another endpoint's proposal, planning parameters given again.
        for path in ["/remove_broker?dryrun=false&proposal_id=999", f"/rebalance?dryrun=false&proposal_id={pid}",
                     f"/remove_broker?dryrun=false&proposal_id={pid}&brokerid=4",
                     f"/remove_broker?dryrun=false&proposal_id={pid}&excluded_topics=x",
                     "/rebalance?excluded_topics=(", "/rebalance?excluded_brokers_for_replica_move=a",
                     "/remove_broker?brokerid=4&excluded_brokers_for_replica_move=4",
                     "/rebalance?concurrent_partition_movements_per_broker=0",
                     "/rebalance?throttle=5&replication_throttle=5",
                     "/rebalance?replica_movement_strategies=fastest",
                     "/rebalance?replica_movement_strategies=smallest_first,smallest_first"]:
            code, body = await call("POST", path)
            assert code == 400, (path, body)
        assert assignment(zk) == before
        # Approved: exactly the reviewed proposal runs.
        code, run = await call("POST", f"/remove_broker?dryrun=false&proposal_id={pid}")
        assert code == 200 and run["execution"]["proposal_id"] == pid, run
        assert run["proposal"]["reassignment"] == prop["reassignment"]
        ex = await _ended(call, run["execution"]["id"], 60)
        assert ex["state"] == "done", ex
        await _until(lambda: not svc.model.reassignment_running(), 30, "a quiet cluster")
        wanted = dict(before)
        wanted.update(planned)
        assert assignment(zk) == wanted
        # A proposal reviewed before the cluster changed is refused with 409, and nothing runs.
        code, dry = await call("POST", "/rebalance")
        stale = dry["proposal"]["proposal_id"]
        layout = svc.model.layout_version
        zk.create("/brokers/topics/fresh", json.dumps({"version": 2, "partitions": {"0": [1, 2]},
                                                        "adding_replicas": {}, "removing_replicas": {}}).encode())
        await _until(lambda: svc.model.layout_version > layout, 10, "the new topic in the model")
        code, refused = await call("POST", f"/rebalance?dryrun=false&proposal_id={stale}")
        assert code == 409 and "changed since" in refused["error"]["message"], refused
        assert (await call("GET", "/state"))[1]["execution"]["id"] == ex["id"]
        # Sizes and leaders are not the layout: a fresh proposal executes by its id.
        code, dry = await call("POST", "/rebalance")
        code, run = await call("POST", f"/rebalance?dryrun=false&proposal_id={dry['proposal']['proposal_id']}")
        assert code == 200, run


async def test_kafka_reassign_passes_the_options_and_the_service_executes_with_its_caps(zk_hosts, tmp_path, capsys):
    async with _cluster(zk_hosts, tmp_path, FAST) as c:
        call, zk, svc = c["call"], c["zk"], c["svc"]
        base = f"http://{svc.address}"
        capsys.readouterr()
        code = await _kafka_reassign("--bootstrap-server", c["bootstrap"], "--rebalance", "--planner", base,
                                     "--excluded-topics", "aud.*", "--excluded-brokers-for-replica-move", "5",
                                     "--output", "json")
        out = json.loads(capsys.readouterr().out)
        assert code == 0, out
        # Broker 5 is empty and excluded, audit is excluded: only orders moves, among 1-4.
        assert all(p["topic"] == "orders" and 5 not in p["replicas"] for p in out["proposed"]["partitions"]), out
        before = assignment(zk)
        code = await _kafka_reassign("--bootstrap-server", c["bootstrap"], "--decommission-broker", "4",
                                     "--planner", base, "--concurrent-partition-movements-per-broker", "1",
                                     "--max-partition-movements-in-cluster", "2", "--throttle", "20000000",
                                     "--output", "json")
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["executed_by"] == "planner service", out
        ex = out["execution"]
        assert ex["caps"] == {"per_broker_in": 1, "per_broker_out": 1, "cluster": 2} and ex["throttle"] == 20_000_000
        held = sum(1 for r in before.values() if 4 in r)
        assert ex["partitions_total"] == held and ex["waves_total"] >= -(-held // 2), ex
        done = await _ended(call, ex["id"], 90)
        assert done["state"] == "done", done
        await _until(lambda: not svc.model.reassignment_running(), 30, "a quiet cluster")
        assert not any(4 in r for r in assignment(zk).values())


async def test_the_per_broker_cap_is_clamped_to_the_active_controllers(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path, FAST, controller_config="max_incoming_per_broker = 1\n", ops=True) as c:
        call = c["call"]
        body = await _until_answer(call, "/rebalance?concurrent_partition_movements_per_broker=3")
        assert body["concurrency"]["asked"] == 3 and body["concurrency"]["used"] == 1, body
        assert body["concurrency"]["controller"]["incoming"] == 1 and body["concurrency"]["controller"]["outgoing"] == 10
        code, run = await call("POST", f"/rebalance?dryrun=false&proposal_id={body['proposal']['proposal_id']}")
        assert code == 200 and run["execution"]["caps"]["per_broker_in"] == 1, run
        # Under the controller's caps the request's own value is used.
        code, low = await call("POST", "/rebalance?concurrent_partition_movements_per_broker=1")
        assert code == 200 and low["concurrency"]["used"] == 1


async def _until_answer(call, path: str) -> dict:
    """The dry run's answer once the controller is active (its /metrics carry the caps then)."""
    deadline = time.monotonic() + 30
    while True:
        code, body = await call("POST", path)
        assert code == 200, body
        if "error" not in body["concurrency"]["controller"] or time.monotonic() > deadline:
            return body
        await asyncio.sleep(0.5)


async def test_an_approved_proposal_keeps_the_cluster_cap_it_was_reviewed_with(zk_hosts, tmp_path):
    async with _cluster(zk_hosts, tmp_path, FAST) as c:
        call = c["call"]
        code, dry = await call("POST", "/rebalance?max_partition_movements_in_cluster=1")
        assert code == 200, dry
        pid = dry["proposal"]["proposal_id"]
        code, run = await call("POST", f"/rebalance?dryrun=false&proposal_id={pid}")
        assert code == 200 and run["execution"]["caps"]["cluster"] == 1, run
        assert run["execution"]["waves_total"] == run["execution"]["partitions_total"]  # one partition at a time
