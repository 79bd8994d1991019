"""POST /topic_configuration (Cruise Control's replication-factor change) on `reassignd planner
serve`, driven with a real HTTP client against a real ZooKeeper, simulated brokers in racks
(`reassignd sim --racks`) and a controller that executes.

One module-scoped cluster and ONE service process (its Spark session on ``local[1]``, every
plan's per-topic tasks on Spark: ``--spark-min-partitions 0``). The tests run in file order:
refusals and dry runs first (nothing changes in the cluster), then executions (the topic znodes'
replica counts change), then the pure part (:mod:`planner_service.topic_config`, and what the
planner's replication-factor mode does to leaders when lowering), then the roles, on a service of
their own in this process over the same cluster (Basic credentials, no Spark).

Brokers 1-5 in three racks (the sim's broker i is in rack-((i-1) mod 3)): rack-0 {1, 4},
rack-1 {2, 5}, rack-2 {3}.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.parse
from collections import Counter

import pytest

from planner_service import api_auth
from planner_service.api_auth import ApiAuth, StoredHash, required_role
from planner_service.http_server import ApiSecurity
from planner_service.service import Options, PlannerService
from tests.e2e.processes import wait_for
from tests.planner.service_http import ahttp, assignment, http, served_cluster

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

# Small partitions copied fast: an execution is over in seconds. "orders-dlq" is there for the
# whole-name match: topic=orders must leave it alone.
SIM = ["--brokers", "5", "--racks", "3", "--topics", "orders:6:2:256KiB", "orders-dlq:2:2:256KiB",
       "audit:4:3:256KiB", "logs:4:2:256KiB", "--bandwidth", "16MiB", "--produce-rate", "0"]
RACKS = 3
EXECUTION_TIMEOUT_S = 90


def rack(broker: int) -> str:
    return f"rack-{(broker - 1) % RACKS}"


def path(**params) -> str:
    return "/topic_configuration?" + urllib.parse.urlencode(params)


@pytest.fixture(scope="module")
def cluster(zk_server, _zk_admin, tmp_path_factory):
    with served_cluster(zk_server, _zk_admin, tmp_path_factory.mktemp("topic-configuration"), SIM, [
        "--insecure-no-auth", "--spark-min-partitions", "0", "--no-sizes", "--session-timeout", "4",
    ], prefix="tcfg") as c:
        yield c


def planned(body: dict) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in body["proposal"]["reassignment"]["partitions"]}


def quiet(base: str) -> None:
    wait_for(lambda: not http(base, "GET", "/state")[1]["model"]["reassignment_running"], 30, "a quiet cluster")


def executed(base: str, ex_id: int) -> dict:
    return wait_for(lambda: (lambda e: e if e and e["id"] == ex_id and e["state"] != "running" else None)(
        http(base, "GET", "/state")[1]["execution"]), EXECUTION_TIMEOUT_S, f"execution {ex_id} to end")


def test_refusals_are_400s_that_name_what_is_wrong(cluster):
    base, zk = cluster["base"], cluster["zk"]
    before = assignment(zk)
    for query, message in [
        ({"replication_factor": "3"}, "topic is missing"),
        ({"topic": "orders"}, "replication_factor is missing"),
        ({"topic": "", "replication_factor": "3"}, "topic must be a regular expression, got an empty one"),
        ({"topic": "orders(", "replication_factor": "3"}, "topic is not a regular expression: 'orders('"),
        # whole names, as Cruise Control's (Java's) matches: a prefix is no match
        ({"topic": "ord", "replication_factor": "3"}, "topic 'ord' matches no topic"),
        ({"topic": "nosuch.*", "replication_factor": "3"}, "topic 'nosuch.*' matches no topic"),
        ({"topic": "orders", "replication_factor": "x"}, "replication_factor must be a positive integer"),
        ({"topic": "orders", "replication_factor": "2.5"}, "replication_factor must be a positive integer"),
        ({"topic": "orders", "replication_factor": "0"}, "replication_factor must be a positive integer"),
        ({"topic": "orders", "replication_factor": "-1"}, "replication_factor must be a positive integer"),
        # Cruise Control's refusals: more than the alive brokers; more than the racks unless
        # skip_rack_awareness_check
        ({"topic": "orders", "replication_factor": "6"}, "only 5 brokers are alive (1, 2, 3, 4, 5)"),
        ({"topic": "orders", "replication_factor": "6", "skip_rack_awareness_check": "true"},
         "only 5 brokers are alive"),
        ({"topic": "orders", "replication_factor": "4"},
         "in only 3 racks (rack-0, rack-1, rack-2), so some rack would hold two replicas of a partition; to "
         "allow that, set skip_rack_awareness_check=true"),
        ({"topic": "orders", "replication_factor": "4", "skip_rack_awareness_check": "maybe"},
         "skip_rack_awareness_check must be true or false"),
        ({"topic": "orders", "replication_factor": "3", "excluded_topics": "ord.*"},
         "topic 'orders' matches both topic ('orders') and excluded_topics ('ord.*')"),
        ({"topic": "orders", "replication_factor": "3", "excluded_brokers_for_replica_move": "3"},
         "takes no excluded_brokers_for_replica_move"),
        ({"topic": "orders", "replication_factor": "3", "brokerid": "1"}, "unknown parameter 'brokerid'"),
        # refused before anything is planned or executed
        ({"topic": "orders", "replication_factor": "9", "dryrun": "false"}, "only 5 brokers are alive"),
    ]:
        code, body = http(base, "POST", path(**query))
        assert code == 400 and body["error"]["status"] == 400, (query, body)
        assert message in body["error"]["message"], (query, body["error"]["message"])
    assert http(base, "GET", path(topic="orders", replication_factor="3"))[0] == 405
    code, body = http(base, "POST", "/nowhere")  # a 404 lists the endpoints, this one among them
    assert code == 404 and "/topic_configuration" in body["error"]["message"], body
    state = http(base, "GET", "/state")[1]
    assert state["executions"] == [] and state["execution"] is None
    assert assignment(zk) == before


def test_raising_adds_replicas_to_the_matching_topics_only(cluster):
    base, zk = cluster["base"], cluster["zk"]
    before = assignment(zk)
    code, body = http(base, "POST", path(topic="orders", replication_factor="3"))
    assert code == 200 and body["dryrun"] is True and "execution" not in body, body
    prop = body["proposal"]
    assert prop["mode"] == "replication-factor" and prop["tasks_ran"] == "spark"
    assert isinstance(prop["proposal_id"], int)
    plan = planned(body)
    # every partition of orders, and nothing else (orders-dlq is not "orders" as a whole name)
    assert set(plan) == {k for k in before if k[0] == "orders"} and len(plan) == 6
    for k, replicas in plan.items():
        assert len(replicas) == len(set(replicas)) == 3, (k, replicas)
        assert set(before[k]) <= set(replicas), (k, before[k], replicas)  # only added: nothing relocated here
        assert len({rack(b) for b in replicas}) == 3, (k, replicas)  # one replica in each rack
    tc = prop["report"]["topic_configuration"]
    assert tc["topics_changed"] == {"orders": {"partitions": 6, "replication_factors_before": [2],
                                               "replication_factor_after": 3}}
    assert tc["topics_unchanged"] == [] and tc["skip_rack_awareness_check"] is False
    counts = ("replicas_added", "replicas_removed", "replicas_relocated", "leaders_leaving")
    assert [tc[k] for k in counts] == [6, 0, 0, 0], tc
    assert prop["report"]["moves"] == 6 and prop["waves"]
    # a topic already at the replication factor asked for is reported unchanged, not moved
    code, both = http(base, "POST", path(topic="orders|audit", replication_factor="3"))
    assert code == 200, both
    assert both["proposal"]["report"]["topic_configuration"]["topics_unchanged"] == ["audit"]
    assert {k[0] for k in planned(both)} == {"orders"}
    assert both["proposal"]["proposal_id"] > prop["proposal_id"]  # every plan is kept under its own id
    assert assignment(zk) == before  # dry runs


def test_skip_rack_awareness_check_lets_a_rack_hold_two_replicas(cluster):
    base = cluster["base"]
    code, body = http(base, "POST", path(topic="logs", replication_factor="4", skip_rack_awareness_check="true"))
    assert code == 200, body
    plan = planned(body)
    assert {k[0] for k in plan} == {"logs"} and len(plan) == 4
    for k, replicas in plan.items():
        per_rack = Counter(rack(b) for b in replicas)
        # never rack-blind: 4 replicas over 3 racks is 1 or 2 in each (floor and ceil of 4/3)
        assert len(set(replicas)) == 4 and sorted(per_rack.values()) == [1, 1, 2], (k, replicas)
    assert body["proposal"]["report"]["topic_configuration"]["skip_rack_awareness_check"] is True
    assert body["proposal"]["report"]["racks"]["invalid_partitions_after"] == 0


def test_lowering_removes_replicas_and_reports_leaders_leaving(cluster):
    base, zk = cluster["base"], cluster["zk"]
    before = assignment(zk)
    code, body = http(base, "POST", path(topic="audit", replication_factor="2"))
    assert code == 200, body
    plan = planned(body)
    assert set(plan) == {k for k in before if k[0] == "audit"}
    for k, replicas in plan.items():
        assert len(set(replicas)) == 2 and len({rack(b) for b in replicas}) == 2, (k, replicas)
    tc = body["proposal"]["report"]["topic_configuration"]
    assert tc["replicas_removed"] == 4 and tc["replicas_added"] == 0
    kept = sum(len(set(before[k]) & set(r)) for k, r in plan.items())
    assert kept == 4 * 3 - tc["replicas_removed"] - tc["replicas_relocated"]
    # The mode drops followers only: every partition has a live leader here, and each keeps
    # it (the report would name any partition whose current leader left).
    leaders = {k: json.loads(zk.get(f"/brokers/topics/{k[0]}/partitions/{k[1]}/state")[0])["leader"] for k in plan}
    assert all(leaders[k] in r for k, r in plan.items()), (leaders, plan)
    assert tc["leaders_leaving"] == 0 and tc["leaders_leaving_partitions"] == []
    assert assignment(zk) == before


def test_executions_reach_the_topic_znodes(cluster):
    base, zk = cluster["base"], cluster["zk"]
    quiet(base)
    before = assignment(zk)
    # Executed at once (dryrun=false): orders goes to three replicas.
    code, run = http(base, "POST", path(topic="orders", replication_factor="3", dryrun="false"))
    assert code == 200 and run["execution"]["state"] == "running", run
    assert run["execution"]["mode"] == "replication-factor"
    done = executed(base, run["execution"]["id"])
    assert done["state"] == "done" and done["partitions_done"] == 6, done
    wanted = dict(before)
    wanted.update(planned(run))
    wait_for(lambda: assignment(zk) == wanted, 10, "the planned replicas in the topic znodes")
    after = assignment(zk)
    assert Counter(len(r) for k, r in after.items() if k[0] == "orders") == {3: 6}
    assert {k: r for k, r in after.items() if k[0] != "orders"} == {k: r for k, r in before.items() if k[0] != "orders"}
    # Reviewed, then approved by its id: audit goes down to two replicas, exactly as reviewed.
    quiet(base)
    code, dry = http(base, "POST", path(topic="audit", replication_factor="2"))
    assert code == 200, dry
    pid = dry["proposal"]["proposal_id"]
    assert http(base, "POST", f"/rebalance?dryrun=false&proposal_id={pid}")[0] == 400  # another endpoint's
    code, run = http(base, "POST", f"/topic_configuration?dryrun=false&proposal_id={pid}")
    assert code == 200 and run["execution"]["proposal_id"] == pid, run
    assert run["proposal"]["reassignment"] == dry["proposal"]["reassignment"]
    assert run["proposal"]["report"]["topic_configuration"] == dry["proposal"]["report"]["topic_configuration"]
    assert executed(base, run["execution"]["id"])["state"] == "done"
    wanted.update(planned(dry))
    wait_for(lambda: assignment(zk) == wanted, 10, "the reviewed replicas in the topic znodes")
    assert Counter(len(r) for k, r in assignment(zk).items() if k[0] == "audit") == {2: 4}
    # Asked again: every topic is at it, nothing to do, and that is no error.
    quiet(base)
    code, again = http(base, "POST", path(topic="orders|audit", replication_factor="3", dryrun="false"))
    assert code == 200, again
    tc = again["proposal"]["report"]["topic_configuration"]
    assert tc["topics_changed"] == {"audit": {"partitions": 4, "replication_factors_before": [2],
                                              "replication_factor_after": 3}}
    assert tc["topics_unchanged"] == ["orders"]
    assert not any(k[0] == "orders" for k in planned(again))
    assert executed(base, again["execution"]["id"])["state"] == "done"
    quiet(base)
    code, noop = http(base, "POST", path(topic="orders", replication_factor="3", dryrun="false"))
    assert code == 200 and noop["proposal"]["report"]["moves"] == 0, noop
    assert noop["execution"]["state"] == "done" and noop["execution"]["partitions_total"] == 0


def test_selection_and_the_broker_checks_are_cruise_controls():
    """The pure part (planner_service.topic_config), imported here so that the rest of this
    file fails on its own assertions where the module is missing."""
    from planner_service.topic_config import TopicConfigError, check_brokers, select_topics

    rfs = {"orders": [2, 2, 3], "orders-dlq": [2], "audit": [3, 3], "__consumer_offsets": [3]}
    sel = select_topics(rfs, re.compile("orders|audit"), 3)
    # whole names: orders-dlq is not matched; audit is at 3 already; orders has one partition at 3
    assert (sel.to_change, sel.unchanged, sel.before["orders"]) == (["orders"], ["audit"], [2, 3])
    assert select_topics(rfs, re.compile(".*"), 3).unchanged == ["__consumer_offsets", "audit"]
    with pytest.raises(TopicConfigError, match="'order' matches no topic"):
        select_topics(rfs, re.compile("order"), 3)
    racks = {1: "a", 2: "b", 3: "a", 4: "b"}
    check_brokers(racks, 2, skip_rack_awareness_check=False)
    with pytest.raises(TopicConfigError, match=r"in only 2 racks \(a, b\)"):
        check_brokers(racks, 3, skip_rack_awareness_check=False, topics=["orders"])
    check_brokers(racks, 4, skip_rack_awareness_check=True)
    with pytest.raises(TopicConfigError, match="only 4 brokers are alive"):
        check_brokers(racks, 5, skip_rack_awareness_check=True)
    # Cruise Control's count: a broker without a rack is a rack of its own
    check_brokers({1: None, 2: None, 3: None}, 3, skip_rack_awareness_check=False)
    with pytest.raises(TopicConfigError, match=r"in only 2 racks \(a, broker 3\)"):
        check_brokers({1: "a", 2: "a", 3: None}, 3, skip_rack_awareness_check=False)


def test_lowering_keeps_every_leader_and_the_report_names_none_leaving():
    """What the replication-factor mode does when lowering (spark_jobs.core.change_replication):
    it drops followers only, so the current leader keeps its replica and no leader leaves.
    Here broker 1 leads every partition: it stays in all four, although that leaves it four of
    the eight replicas (R/R+1 is 2 or 3: the counts give way to the leaders, and the report
    says so). Before, evening the counts out removed it from two partitions it leads, where
    Cruise Control drops followers only."""
    from planner_service.topic_config import select_topics, summary
    from spark_jobs import api

    rows = [[1, 2, 3], [1, 3, 4], [1, 4, 2], [1, 2, 3]]
    snap = {"version": 1, "cluster": {"source": None, "taken_at_ms": None, "warnings": []},
            "brokers": [{"id": b, "host": "h", "port": 1, "rack": None, "alive": True} for b in range(1, 5)],
            "topics": [{"name": "t", "partitions": [{"partition": p, "replicas": r, "leader": r[0], "isr": r,
                                                     "reassigning": False, "sizes": None}
                                                    for p, r in enumerate(rows)]}]}
    result = api.plan(snap, "replication-factor", topics=["t"], replication_factor=2)
    new = {e["partition"]: e["replicas"] for e in result.reassignment["partitions"]}
    assert all(len(r) == 2 and 1 in r and set(r) < set(rows[p]) for p, r in new.items()) and len(new) == 4
    assert not result.report["fair"] and any("keep their current leader" in w for w in result.report["warnings"])
    tc = summary(select_topics({"t": [3, 3, 3, 3]}, re.compile("t"), 2), result.moves, skip_rack_awareness_check=False)
    assert tc["leaders_leaving"] == 0 and tc["leaders_leaving_partitions"] == []
    assert (tc["replicas_removed"], tc["replicas_added"], tc["replicas_relocated"]) == (4, 0, 0)


def test_roles_dry_run_is_users_execution_admins():
    q = {"topic": "orders", "replication_factor": "3"}
    assert required_role("POST", "/topic_configuration", q) == "USER"
    assert required_role("POST", "/topic_configuration", {**q, "dryrun": "true"}) == "USER"
    for dryrun in ("false", "0", "no", "maybe"):
        assert required_role("POST", "/topic_configuration", {**q, "dryrun": dryrun}) == "ADMIN"
    assert required_role("POST", "/topic_configuration", {"proposal_id": "3", "dryrun": "false"}) == "ADMIN"


USERS = {"alice": ("ADMIN", "alice-pw"), "bob": ("USER", "bob-pw"), "carol": ("VIEWER", "carol-pw")}


async def test_roles_and_the_audit_on_a_service(cluster, caplog):
    """A service of its own (in this process, no Spark) over the same cluster, with Basic
    credentials: a USER's dry run is answered, a USER's or VIEWER's execution is 403 and nothing
    runs, an ADMIN's executes and is audited with its principal."""
    users = {u: (role, StoredHash.parse(api_auth.hash_password(pw, iterations=api_auth.MIN_ITERATIONS)))
             for u, (role, pw) in USERS.items()}
    svc = PlannerService(Options(zookeeper=cluster["hosts"], port=0, sizes=False, session_timeout_s=4.0,
                                 api_security=ApiSecurity(ApiAuth(users), None)))
    caplog.set_level(logging.INFO, logger="reassignd.planner.audit")
    await svc.start()
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while not (svc.feed.ready and svc.model.n_partitions and not svc.model.reassignment_running()):
            assert asyncio.get_running_loop().time() < deadline, "the second service's model"
            await asyncio.sleep(0.2)
        base = f"http://{svc.address}"

        async def call(p: str, who: str):
            status, body, _ = await ahttp(base, "POST", p, auth=(who, USERS[who][1]))
            return status, body

        # logs keeps two replicas whatever ran before: ADMIN's execution is a no-op on the cluster
        dry, run = path(topic="logs", replication_factor="2"), path(topic="logs", replication_factor="2",
                                                                    dryrun="false")
        status, body = await call(dry, "bob")
        assert status == 200 and body["dryrun"] is True, body
        assert body["proposal"]["report"]["topic_configuration"]["topics_unchanged"] == ["logs"]
        caplog.clear()
        for who in ("bob", "carol"):
            status, body = await call(run, who)
            assert status == 403 and "needs ADMIN" in body["error"]["message"], body
        status, body = await call(dry, "carol")
        assert status == 403 and "needs USER" in body["error"]["message"], body
        assert svc.executions == []
        status, body = await call(run, "alice")
        assert status == 200 and body["execution"]["state"] == "done", body
        lines = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
        assert len(lines) == 3, lines  # the two refused executions and the executed one
        assert all("request=POST /topic_configuration?topic=logs&replication_factor=2&dryrun=false" in x for x in lines)
        assert "principal=User:bob role=USER" in lines[0] and "status=403" in lines[0]
        assert lines[2].startswith("principal=User:alice role=ADMIN ") and \
            f"status=200 outcome=execution {body['execution']['id']} (done)" in lines[2], lines
    finally:
        await svc.stop()
