"""`reassignd planner serve` driven through its REST API with a real HTTP client (urllib),
against a real ZooKeeper, simulated brokers (`reassignd sim`) and a controller instance.

One module-scoped cluster and ONE service process (its own Spark session on ``local[1]``, every
plan's per-topic tasks on Spark: ``--spark-min-partitions 0``). The tests run in file order:
read-only checks first, then model freshness, then an executed rebalance, then self-healing on
a broker that is killed and does not come back.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections import Counter

import pytest
from kazoo.exceptions import NodeExistsError

from spark_jobs import api
from tests.e2e.processes import wait_for
from tests.planner.service_http import assignment, http, served_cluster, sim_command

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

SIM = ["--brokers", "5", "--topics", "orders:12:3:2MiB", "audit:6:2:1MiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "4MiB", "--produce-rate", "0"]
GRACE_S = 6.0


@pytest.fixture(scope="module")
def cluster(zk_server, _zk_admin, tmp_path_factory):
    with served_cluster(zk_server, _zk_admin, tmp_path_factory.mktemp("planner-service"), SIM, [
        "--insecure-no-auth",  # kafka-reassign --planner speaks plain HTTP without credentials
        "--spark-min-partitions", "0", "--sizes-interval", "1", "--self-healing", "broker-failure",
        "--broker-failure-grace", str(GRACE_S), "--healing-min-interval", "5", "--throttle", "50000000",
        "--session-timeout", "4",
    ], prefix="svc") as c:
        yield c


def test_state_and_load_describe_the_cluster(cluster):
    base, zk = cluster["base"], cluster["zk"]
    status, state = http(base, "GET", "/state")
    assert status == 200
    assert state["model"]["brokers"] == [1, 2, 3, 4, 5]
    assert state["model"]["topics"] == 2 and state["model"]["partitions"] == 18
    assert state["model"]["reassignment_running"] is False
    # Sizes arrive with the first DescribeLogDirs poll.
    load = wait_for(lambda: (lambda s, b: b if all(x["bytes"] > 0 for x in b["brokers"][:4]) else None)(
        *http(base, "GET", "/load")), 20, "replica sizes in /load")
    counts = Counter(b for r in assignment(zk).values() for b in r)
    assert {x["broker"]: x["replicas"] for x in load["brokers"]} == {b: counts.get(b, 0) for b in range(1, 6)}
    # the simulated brokers report a 1 TiB disk (DescribeLogDirs total_bytes); bytes_planned and
    # disk_use_planned follow whichever proposal was made last
    planned = {k: load["brokers"][4].pop(k) for k in ("bytes_planned", "disk_use_planned")}
    assert load["brokers"][4] == {"broker": 5, "alive": True, "rack": None, "replicas": 0, "leaders": 0,
                                  "bytes": 0, "bytes_unknown": 0, "disk_capacity": 2**40,
                                  "disk_capacity_source": "describe_log_dirs", "disk_limit": int(2**40 * 0.8),
                                  "disk_use": 0.0}
    assert planned["bytes_planned"] is None or planned["disk_use_planned"] == round(planned["bytes_planned"] / 2**40, 4)
    leaders = Counter(json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])["leader"]
                      for t, p in assignment(zk))
    assert {x["broker"]: x["leaders"] for x in load["brokers"]} == {b: leaders.get(b, 0) for b in range(1, 6)}


def test_proposal_is_fair_minimal_deterministic_and_the_one_shot_plan(cluster):
    base, zk = cluster["base"], cluster["zk"]
    status, prop = http(base, "GET", "/proposals")
    assert status == 200
    rep = prop["report"]
    assert rep["fair"] and rep["moves"] == rep["lower_bound"] > 0
    # Planned again now (a broker list is never served from the cache), on the session's
    # Spark tasks: the same plan as the cached one, whichever way its tasks ran.
    code, fresh = http(base, "POST", "/rebalance?brokerid=1,2,3,4,5")
    assert code == 200 and fresh["proposal"]["tasks_ran"] == "spark"
    assert fresh["proposal"]["reassignment"] == prop["reassignment"]
    before = assignment(zk)
    after = dict(before)
    after.update({(e["topic"], e["partition"]): e["replicas"] for e in prop["reassignment"]["partitions"]})
    counts = Counter(b for r in after.values() for b in r)
    low = sum(counts.values()) // 5
    assert set(counts) == {1, 2, 3, 4, 5} and all(c in (low, low + 1) for c in counts.values())
    moves = sum(len(set(after[k]) - set(before[k])) for k in before)
    assert moves == rep["moves"]
    again = http(base, "GET", "/proposals")[1]
    assert again["reassignment"] == prop["reassignment"] and again["model_version"] == prop["model_version"]
    # The same model through the one-shot planner's API gives the same plan.
    import asyncio

    from spark_jobs.snapshot import read_cluster

    snap = asyncio.run(read_cluster(cluster["hosts"], sizes=True, timeout=10))
    assert api.plan(snap, "rebalance").reassignment == prop["reassignment"]


def test_error_statuses(cluster):
    base = cluster["base"]
    for path, status in [
        ("/remove_broker", 400),                      # brokerid missing
        ("/remove_broker?brokerid=x", 400),
        ("/remove_broker?brokerid=1,1", 400),
        ("/remove_broker?brokerid=42", 400),          # not in the cluster (the planner says so)
        ("/add_broker?brokerid=-3", 400),
        ("/rebalance?dryrun=maybe", 400),
        ("/rebalance?throttle=0", 400),
        # an outside probe's: Unicode digits and numbers past int64 were 500s or failed later
        ("/remove_broker?brokerid=%C2%B2", 400),
        ("/remove_broker?brokerid=2147483648", 400),
        ("/rebalance?deadline_s=%C2%B2", 400),
        ("/rebalance?deadline_s=" + "9" * 5000, 400),
        ("/remove_broker?brokerid=4&dryrun=false&throttle=99999999999999999999999", 400),
        ("/rebalance?colour=blue", 400),
    ]:
        code, body = http(base, "POST", path)
        assert (code, body["error"]["status"]) == (status, status), (path, body)
        assert body["error"]["message"]
    assert http(base, "GET", "/nowhere")[0] == 404
    assert http(base, "GET", "/rebalance")[0] == 405
    assert http(base, "POST", "/state")[0] == 405


async def test_model_not_ready_is_503():
    """A service whose ZooKeeper never answers: every model endpoint is 503, /state says why."""
    from planner_service.service import Options, PlannerService

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # nothing listens here once the socket closes
    svc = PlannerService(Options(zookeeper=f"127.0.0.1:{dead}", port=0, sizes=False, session_timeout_s=0.5))
    await svc.start()
    try:
        import asyncio

        base = "http://" + svc.address
        for method, path in [("GET", "/load"), ("GET", "/proposals"), ("POST", "/rebalance"),
                             ("POST", "/remove_broker?brokerid=1")]:
            code, body = await asyncio.to_thread(http, base, method, path)
            assert code == 503 and body["error"]["status"] == 503, (path, body)
        code, state = await asyncio.to_thread(http, base, "GET", "/state")
        assert code == 200 and state["model"]["ready"] is False
    finally:
        await svc.stop()


def test_model_follows_brokers_and_topics(cluster):
    base, zk, control = cluster["base"], cluster["zk"], cluster["sim"]["control"]
    v0 = http(base, "GET", "/state")[1]["model"]["version"]
    sim_command(control, "stop 5")
    wait_for(lambda: http(base, "GET", "/state")[1]["model"]["brokers"] == [1, 2, 3, 4], 10, "broker 5 gone")
    prop = http(base, "GET", "/proposals")[1]
    assert prop["model_version"] > v0
    assert 5 not in prop["report"]["target_brokers"]
    sim_command(control, "start 5")
    wait_for(lambda: http(base, "GET", "/state")[1]["model"]["brokers"] == [1, 2, 3, 4, 5], 10, "broker 5 back")
    assert 5 in http(base, "GET", "/proposals")[1]["report"]["target_brokers"]
    # A topic created as Kafka's tools do (topic znode, then the controller's partition states).
    zk.create("/brokers/topics/fresh", json.dumps({"version": 2, "partitions": {"0": [1, 2], "1": [2, 3]},
                                                    "adding_replicas": {}, "removing_replicas": {}}).encode())
    wait_for(lambda: http(base, "GET", "/state")[1]["model"]["partitions"] == 20, 10, "the new topic in the model")
    for p, r in ((0, [1, 2]), (1, [2, 3])):
        # Unless the controller wrote it (engine step 10 creates the states of a new topic
        # znode): its write may land at any moment, also between a check and this create, so
        # the create itself is the check.
        with contextlib.suppress(NodeExistsError):
            zk.create(f"/brokers/topics/fresh/partitions/{p}/state", json.dumps(
                {"controller_epoch": 1, "leader": r[0], "version": 1, "leader_epoch": 0, "isr": r}).encode(),
                makepath=True)

    def zk_leaders():
        return Counter(json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])["leader"]
                       for t, p in assignment(zk))

    load = wait_for(lambda: (lambda s, b: b if {x["broker"]: x["leaders"] for x in b["brokers"]} == {
        k: zk_leaders().get(k, 0) for k in range(1, 6)} and sum(x["leaders"] for x in b["brokers"]) == 20 else None)(
        *http(base, "GET", "/load")), 10, "the new partition states in /load")
    assert sum(x["replicas"] for x in load["brokers"]) == 12 * 3 + 6 * 2 + 4
    prop = http(base, "GET", "/proposals")[1]
    assert prop["report"]["partitions"] == 20 and prop["report"]["fair"]
    zk.delete("/brokers/topics/fresh", recursive=True)
    wait_for(lambda: http(base, "GET", "/state")[1]["model"]["partitions"] == 18, 10, "the topic deleted")


def test_kafka_reassign_plans_through_the_service(cluster, capsys):
    from client import cli

    base, zk = cluster["base"], cluster["zk"]
    ctl = json.loads(zk.get("/reassignd/controllers/101")[0])
    bootstrap = f"{ctl['host']}:{ctl['port']}"
    proposal = http(base, "GET", "/proposals")[1]
    capsys.readouterr()
    assert cli.main(["--bootstrap-server", bootstrap, "--rebalance", "--planner", base, "--output", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["moves"] == proposal["report"]["moves"] == out["plan"]["lower_bound"]
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in proposal["reassignment"]["partitions"]}
    assert json.dumps(out, sort_keys=True).count('"partition"') >= len(proposed)
    before = assignment(zk)
    code = cli.main(["--bootstrap-server", bootstrap, "--decommission-broker", "1", "--dry-run", "--planner", base,
                     "--output", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["plan"]["moves"] == out["plan"]["lower_bound"] >= sum(1 for r in before.values() if 1 in r)
    assert assignment(zk) == before  # a dry run
    # The one-shot planner (no --planner) proposes the same moves.
    assert cli.main(["--bootstrap-server", bootstrap, "--decommission-broker", "1", "--dry-run", "--output", "json"]) == 0
    one_shot = json.loads(capsys.readouterr().out)
    same = ("moves", "lower_bound", "partitions_changed", "fair", "leaders_fair", "waves")
    assert {k: v for k, v in one_shot.items() if k != "plan"} == {k: v for k, v in out.items() if k != "plan"}
    assert {k: one_shot["plan"][k] for k in same} == {k: out["plan"][k] for k in same}
    # The service's refusals keep the CLI's exit codes: an unknown broker is a refused plan.
    assert cli.main(["--bootstrap-server", bootstrap, "--rebalance", "--broker-list", "1,2,77", "--planner", base]) != 0
    assert cli.main(["--bootstrap-server", bootstrap, "--rebalance", "--planner", "http://127.0.0.1:1"]) == 4
    capsys.readouterr()


def test_dry_run_changes_nothing_and_execute_runs_the_plan(cluster):
    base, zk = cluster["base"], cluster["zk"]
    before = assignment(zk)
    code, dry = http(base, "POST", "/rebalance")
    assert code == 200 and dry["dryrun"] is True and "execution" not in dry
    time.sleep(0.5)
    assert assignment(zk) == before and not zk.exists("/admin/reassign_partitions")
    code, run = http(base, "POST", "/rebalance?dryrun=false&throttle=40000000")
    assert code == 200 and run["execution"]["state"] == "running", run
    assert run["proposal"]["reassignment"] == dry["proposal"]["reassignment"]
    code, again = http(base, "POST", "/remove_broker?brokerid=4&dryrun=false")
    assert code == 409 and again["error"]["status"] == 409
    done = wait_for(lambda: (lambda e: e if e and e["state"] != "running" else None)(
        http(base, "GET", "/state")[1]["execution"]), 120, "the execution to finish")
    assert done["state"] == "done", done
    assert done["waves_done"] == done["waves_total"] and done["partitions_done"] == done["partitions_total"]
    wanted = dict(before)
    wanted.update({(e["topic"], e["partition"]): e["replicas"] for e in dry["proposal"]["reassignment"]["partitions"]})
    assert assignment(zk) == wanted
    prop = wait_for(lambda: (lambda p: p if p["report"]["moves"] == 0 else None)(
        http(base, "GET", "/proposals")[1]), 10, "a settled proposal")
    assert prop["report"]["fair"]


def test_self_healing_drains_a_broker_that_does_not_come_back(cluster):
    base, zk, control = cluster["base"], cluster["zk"], cluster["sim"]["control"]
    wait_for(lambda: not http(base, "GET", "/state")[1]["model"]["reassignment_running"], 30, "a quiet cluster")
    before = assignment(zk)
    victim = max(b for r in before.values() for b in r)
    sim_command(control, f"stop {victim}")
    t_stop = time.monotonic()
    action = wait_for(lambda: (lambda a: a[0] if a else None)(
        http(base, "GET", "/state")[1]["self_healing"]["actions"]), 60, "a self-healing action")
    assert time.monotonic() - t_stop >= GRACE_S - 0.5  # not before the grace period
    assert action["kind"] == "broker-failure" and f"{victim} (" in action["reason"] and action["execution"], action
    ex = http(base, "GET", "/state")[1]["execution"]
    assert ex["id"] == action["execution"] and ex["started_by"] == "self-healing"
    held = [k for k, r in before.items() if victim in r]
    assert ex["partitions_total"] >= len(held) == action["moves"]

    def targets():
        out = {}
        for t in zk.get_children("/brokers/topics"):
            doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
            for p, r in doc["partitions"].items():
                out[(t, int(p))] = [b for b in r if b not in doc["removing_replicas"].get(p, [])]
        return out

    # The controller took the plan's first wave: those partitions' targets leave the victim
    # (later waves wait for it; moves of partitions the victim leads cannot finish, since this
    # controller elects leaders only for moves, so the execution does not complete here).
    wait_for(lambda: any(victim not in targets()[k] for k in held), 60, f"moves off broker {victim} started")
    assert not any(victim in r for k, r in targets().items() if k not in held)
    # Rate-limited, and its own execution runs: nothing more starts.
    time.sleep(2)
    assert len(http(base, "GET", "/state")[1]["self_healing"]["actions"]) == 1
