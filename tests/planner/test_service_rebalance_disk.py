"""The planner service's POST /rebalance_disk (Cruise Control's rebalance_disk; issue 23 item 4):
a dry run proposes intra-broker moves from the brokers' DescribeLogDirs and changes nothing;
dryrun=false sends them as AlterReplicaLogDirs and the execution ends done with each broker's
directories balanced; asked again, it proposes nothing. Simulated brokers with two log
directories each and a controller process on a real ZooKeeper; the service in-process, no
Spark. Also the execution's pure watch (planner_service.disk_execution.MoveWatch)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from client.admin import AdminClient
from client.logdirs import CANCELLED, COMPLETE, IN_PROGRESS, NOT_STARTED, UNAVAILABLE, LogDirMove
from planner_service.disk_execution import MoveWatch
from planner_service.service import Options, PlannerService
from spark_jobs import disks
from tests.e2e.processes import Processes, kazoo_client, sim_status, wait_for
from tests.planner.service_http import http

D1, D2 = "/data/d1", "/data/d2"
SIM = ["--brokers", "2", "--topics", "big:4:2:2MiB", "small:4:2:256KiB", "--log-dirs", f"{D1},{D2}",
       "--disk-bytes", str(64 * 1024 * 1024), "--bandwidth", "100MiB", "--produce-rate", "0", "--tick-ms", "50"]


def _placement(port: int) -> dict:
    return {(r["topic"], r["partition"], int(b)): (r["log_dir"], r["future"], r["size"])
            for b, info in sim_status(port)["brokers"].items() for r in info["replicas"]}


def _balanced(port: int) -> bool:
    per: dict = {}
    for (_, _, b), (d, _, size) in _placement(port).items():
        per.setdefault(b, {D1: 0, D2: 0})[d] += size
    return all(abs(v - sum(x.values()) / 2) <= disks.DEFAULT_BAND * sum(x.values()) / 2
               for x in per.values() for v in x.values())


@pytest.mark.zk
@pytest.mark.e2e
async def test_rebalance_disk_proposes_then_executes_intra_broker_moves(zk_hosts, tmp_path):
    config = tmp_path / "controller.toml"
    config.write_text("zk_session_timeout_s = 2.0\nrequest_timeout_s = 5.0\n")
    with Processes(tmp_path) as procs, kazoo_client(zk_hosts) as zk:
        sim = procs.start_sim(zk_hosts, SIM)
        port = int(sim["control"].rsplit(":", 1)[1])
        procs.start_controller(zk_hosts, 101, config)
        wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's registration")
        ctl = json.loads(zk.get("/reassignd/controllers/101")[0])
        async with AdminClient(f"{ctl['host']}:{ctl['port']}") as admin:
            assert not any((await admin.alter_replica_log_dirs({k: D1 for k in _placement(port)})).values())
        await asyncio.to_thread(wait_for, lambda: all(d == D1 and f is None for d, f, _ in _placement(port).values()),
                                60, "every replica in /data/d1")
        svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, wave_poll_s=0.2))
        await svc.start()
        try:
            base = f"http://{svc.address}"
            deadline = time.monotonic() + 30
            while not (svc.feed.ready and svc.model.n_partitions == 8):
                assert time.monotonic() < deadline, "the service's model"
                await asyncio.sleep(0.2)

            before = _placement(port)
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk")
            assert status == 200 and body["dryrun"] is True, body
            proposal = body["proposal"]
            assert proposal["mode"] == "rebalance_disk" and proposal["report"]["moves"] > 0
            for e in proposal["reassignment"]["partitions"]:
                assert sorted(e["replicas"]) == [1, 2] and set(e["log_dirs"]) <= {D2, "any"}
            assert all(b["balanced_after"] for b in proposal["report"]["brokers"])
            await asyncio.sleep(0.5)
            assert _placement(port) == before  # a dry run moves nothing

            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk?brokerid=9")
            assert status == 400 and "9" in body["error"]["message"]
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk?throttle=5")
            assert status == 400 and "throttle" in body["error"]["message"]

            # Only broker 2, executed: broker 1 stays as it is.
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk?brokerid=2&dryrun=false")
            assert status == 200 and body["execution"]["mode"] == "rebalance_disk", body
            ex_id = body["execution"]["id"]
            assert {m["broker"] for m in body["proposal"]["report"]["moves_listed"]} == {2}
            deadline = time.monotonic() + 60
            while True:
                ex = (await asyncio.to_thread(http, base, "GET", "/state"))[1]["execution"]
                if ex["id"] == ex_id and ex["state"] != "running":
                    break
                assert time.monotonic() < deadline, ex
                await asyncio.sleep(0.3)
            assert ex["state"] == "done" and not ex["unmoved"], ex
            assert ex["partitions_done"] == ex["partitions_total"] == body["proposal"]["report"]["partitions_changed"]
            now = _placement(port)
            for m in body["proposal"]["report"]["moves_listed"]:
                assert now[(m["topic"], m["partition"], 2)][0] == m["to"]
            assert all(now[k][0] == D1 for k in now if k[2] == 1)

            # A reviewed proposal whose replica moved to another directory since: 409 naming it,
            # nothing sent (the layout version covers replicas, not directories).
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk")
            stale_pid, first = body["proposal"]["proposal_id"], body["proposal"]["report"]["moves_listed"][0]
            key = (first["topic"], first["partition"], first["broker"])
            async with AdminClient(f"{ctl['host']}:{ctl['port']}") as admin:
                assert not any((await admin.alter_replica_log_dirs({key: first["to"]})).values())
            await asyncio.to_thread(wait_for, lambda: _placement(port)[key][:2] == (first["to"], None), 60,
                                    "the replica moved by hand")
            moved_by_hand = _placement(port)
            status, body = await asyncio.to_thread(http, base, "POST",
                                                   f"/rebalance_disk?dryrun=false&proposal_id={stale_pid}")
            assert status == 409 and "log directories changed" in body["error"]["message"], body
            assert f"{first['topic']}-{first['partition']} on broker {first['broker']}: no longer in {first['from']}" \
                in body["error"]["message"], body
            await asyncio.sleep(0.5)
            assert _placement(port) == moved_by_hand and svc.execution.id == ex_id

            # The reviewed proposal of all brokers, executed by its id: both balanced.
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk")
            pid = body["proposal"]["proposal_id"]
            assert {m["broker"] for m in body["proposal"]["report"]["moves_listed"]} == {1}
            status, body = await asyncio.to_thread(http, base, "POST", f"/rebalance_disk?dryrun=false&proposal_id={pid}")
            assert status == 200, body
            await asyncio.to_thread(wait_for, lambda: _balanced(port) and all(
                f is None for _, f, _ in _placement(port).values()), 60, "both brokers balanced")
            status, body = await asyncio.to_thread(http, base, "POST", "/rebalance_disk")
            assert status == 200 and body["proposal"]["report"]["moves"] == 0
            assert body["proposal"]["reassignment"]["partitions"] == []
        finally:
            await svc.stop()


def _st(state: str, current: str | None = D1) -> LogDirMove:
    return LogDirMove("t", 0, 1, D2, state, current)


def test_the_watch_ends_a_move_only_when_two_polls_agree_and_at_once_after_a_force_stop():
    w = MoveWatch({("t", 0, 1): D2})
    assert w.observe([_st(IN_PROGRESS)], False) == (set(), {})
    assert w.observe([_st(NOT_STARTED)], False) == (set(), {})  # one poll is not enough
    assert w.observe([_st(UNAVAILABLE)], False) == (set(), {})  # an unanswered poll changes nothing
    done, ended = w.observe([_st(CANCELLED)], False)
    assert not done and list(ended) == [("t", 0, 1)]
    w = MoveWatch({("t", 0, 1): D2})
    assert list(w.observe([_st(NOT_STARTED)], True)[1]) == [("t", 0, 1)]
    w = MoveWatch({("t", 0, 1): D2})
    w.observe([_st(NOT_STARTED)], False)
    assert w.observe([_st(COMPLETE, D2)], False) == ({("t", 0, 1)}, {})
