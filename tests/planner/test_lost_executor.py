"""`reassignd planner serve` survives a lost Spark executor, for real: the service runs on
``--master local-cluster[2,1,512]``, where Spark's standalone Master and two Workers live in the
driver's JVM and each Worker runs its executor as a separate JVM (CoarseGrainedExecutorBackend)
that it launches again when it dies. Against a real ZooKeeper and simulated brokers
(`reassignd sim`), with every plan's per-topic tasks on Spark (``--spark-min-partitions 0``):
once a proposal is ready, one executor JVM is SIGKILLed; the proposals planned after it (a dry
run now, and the cached proposal after the model changes) still run on Spark, are fair (R/R+1)
and minimal, equal the proposal before the kill for the same model, and /state says so; the
Worker starts a new executor for the application, and the service never exits.

What the service does when a Spark job fails all the same (its tasks failed too often, or the
JVM stopped the context) runs in-process on stand-ins for the session: the plan is made
in-process, and a session is started again only when its context is stopped.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from planner_service import service
from spark_jobs import api
from tests.e2e.processes import Processes, kazoo_client, wait_for
from tests.fixtures.zk import _delete_tree
from tests.planner.service_http import assignment, http, sim_command
from tests.planner.test_service_model import _model, _service

SIM = ["--brokers", "5", "--topics", "orders:12:3:256KiB", "audit:6:2:256KiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "8MiB", "--produce-rate", "0"]
# Two workers of one core: one executor can die while the other takes its tasks. 512 MiB per
# worker: Spark refuses an executor under 450 MiB (1.5 x its 300 MiB reserved memory), and the
# service gives the executor the worker's memory (spark_jobs.api.LOCAL_CLUSTER).
MASTER = "local-cluster[2,1,512]"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
# Starting the driver and two executor JVMs on a busy 2-core machine.
SPARK_START_S = 150


def executors(app_id: str) -> dict[str, int]:
    """executor id -> pid of the application's live executor JVMs (from /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if EXECUTOR_CLASS in args and "--app-id" in args and args[args.index("--app-id") + 1] == app_id \
                and state != "Z":
            out[args[args.index("--executor-id") + 1]] = int(entry.name)
    return out


def check_fair(zk, prop: dict, brokers: set[int]) -> None:
    """The proposal applied to ZooKeeper's assignment: R/R+1 over ``brokers``, as many moves as
    the report says, and that is the lower bound."""
    rep = prop["report"]
    assert rep["fair"] and rep["moves"] == rep["lower_bound"] > 0, rep
    before = assignment(zk)
    after = dict(before)
    after.update({(e["topic"], e["partition"]): e["replicas"] for e in prop["reassignment"]["partitions"]})
    counts = Counter(b for r in after.values() for b in r)
    low = sum(counts.values()) // len(brokers)
    assert set(counts) == brokers and all(c in (low, low + 1) for c in counts.values()), counts
    assert sum(len(set(after[k]) - set(before[k])) for k in before) == rep["moves"]


@pytest.fixture
def chroot_hosts(zk_server, _zk_admin):
    chroot = f"/lost_{uuid.uuid4().hex[:10]}"
    _zk_admin.create(chroot)
    try:
        yield f"{zk_server.connect_string}{chroot}"
    finally:
        _delete_tree(_zk_admin, chroot)


@pytest.mark.zk
@pytest.mark.e2e
@pytest.mark.timeout(SPARK_START_S + 120)
def test_service_survives_a_lost_executor(chroot_hosts, tmp_path):
    with Processes(tmp_path) as procs, kazoo_client(chroot_hosts) as zk:
        sim = procs.start_sim(chroot_hosts, SIM)
        svc = procs.spawn("planner", [
            "planner", "serve", "--zookeeper", chroot_hosts, "--listen", "127.0.0.1:0", "--insecure-no-auth", "--master", MASTER,
            "--spark-min-partitions", "0", "--no-sizes", "--session-timeout", "10",
        ])
        line = svc.stdout.readline()
        assert line, procs.log("planner").read_text()[-3000:]
        base = "http://" + json.loads(line)["listen"]

        def state() -> dict:
            return http(base, "GET", "/state")[1]

        wait_for(lambda: state()["spark"]["ready"], SPARK_START_S, "the service's Spark session on " + MASTER)
        app_id = state()["spark"]["app_id"]
        assert app_id and app_id.startswith("app-"), state()["spark"]  # a standalone application
        # The session's warm-up job ran on the executors, so both have registered.
        alive = wait_for(lambda: (lambda e: e if len(e) == 2 else None)(executors(app_id)), 30, "two executor JVMs")
        # The cached proposal (planned in-process if the model was read before the session was
        # up), and the same plan from the executors: a broker list is never served from the cache.
        prop = wait_for(lambda: (lambda c, b: b if c == 200 else None)(*http(base, "GET", "/proposals")), 30,
                        "the cached proposal")
        check_fair(zk, prop, {1, 2, 3, 4, 5})
        code, warm = http(base, "POST", "/rebalance?brokerid=1,2,3,4,5")
        assert code == 200 and warm["proposal"]["tasks_ran"] == "spark", warm
        assert warm["proposal"]["reassignment"] == prop["reassignment"]
        jobs = state()["spark"]["jobs"]

        victim_id, victim = sorted(alive.items())[0]
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: victim_id not in executors(app_id), 10, f"executor {victim_id} (pid {victim}) gone")

        # Planned again now: on Spark, the surviving executor taking the tasks, and the same plan
        # as before the kill.
        code, fresh = http(base, "POST", "/rebalance?brokerid=1,2,3,4,5")
        assert code == 200, fresh
        assert fresh["proposal"]["tasks_ran"] == "spark"
        assert fresh["proposal"]["reassignment"] == prop["reassignment"]
        check_fair(zk, fresh["proposal"], {1, 2, 3, 4, 5})

        # The model changes (broker 5 leaves, then comes back): the cached proposal is
        # recomputed on Spark each time, and the model that is back gets the plan it had.
        v0 = state()["model"]["version"]
        sim_command(sim["control"], "stop 5")
        gone = wait_for(lambda: (lambda c, b: b if c == 200 and b["model_version"] > v0 else None)(
            *http(base, "GET", "/proposals")), 30, "the proposal without broker 5")
        assert gone["tasks_ran"] == "spark" and 5 not in gone["report"]["target_brokers"]
        check_fair(zk, gone, {1, 2, 3, 4})
        sim_command(sim["control"], "start 5")
        back = wait_for(lambda: (lambda c, b: b if c == 200 and b["model_version"] > gone["model_version"]
                                 and 5 in b["report"]["target_brokers"] else None)(
            *http(base, "GET", "/proposals")), 30, "the proposal with broker 5 back")
        assert back["tasks_ran"] == "spark" and back["reassignment"] == prop["reassignment"]

        # /state: the session is the same application, its jobs ran and none failed, and the
        # last proposal is the current model's.
        st = state()
        assert st["spark"]["ready"] and st["spark"]["app_id"] == app_id, st["spark"]
        assert st["spark"]["jobs"] >= jobs + 3 and st["spark"]["failures"] == 0, st["spark"]
        assert st["spark"]["restarts"] == 0 and st["spark"]["last_error"] is None, st["spark"]
        assert st["proposal"]["model_version"] == st["model"]["version"] == back["model_version"]
        assert st["proposal"]["tasks_ran"] == "spark"

        # The Worker launched a new executor for the application in the lost one's place.
        wait_for(lambda: len(executors(app_id)) == 2 and victim not in executors(app_id).values(), 60,
                 "a new executor JVM for " + app_id)
        assert svc.poll() is None, procs.log("planner").read_text()[-3000:]


class _Rdd:
    def __init__(self, items):
        self.items = items

    def map(self, fn):
        return _Rdd([fn(x) for x in self.items])

    def collect(self):
        return self.items


class _Session:
    """Shaped like a SparkSession: its jobs run here, or fail with ``error``; ``stopped`` is
    what the JVM answers to SparkContext.isStopped()."""

    def __init__(self, app_id: str, error: str | None = None, stopped: bool = False):
        self.stops = 0
        outer = self

        class _Jsc:
            @staticmethod
            def sc():
                return type("Sc", (), {"isStopped": staticmethod(lambda: stopped)})

        class _Context:
            applicationId = app_id
            defaultParallelism = 1
            _jsc = _Jsc()

            @staticmethod
            def parallelize(items, slices):
                if error:
                    raise RuntimeError(error)
                return _Rdd(items)

        self.sparkContext = _Context()
        self.stop = lambda: setattr(outer, "stops", outer.stops + 1)


@pytest.mark.parametrize("stopped", [False, True], ids=["context-lives", "context-stopped-by-the-jvm"])
def test_a_failed_spark_job_is_planned_in_process_and_a_stopped_context_started_again(monkeypatch, stopped):
    error = ("Cannot call methods on a stopped SparkContext." if stopped else
             "Job aborted due to stage failure: Task 0 failed 4 times: ExecutorLostFailure (executor 1 exited)")
    dead = _Session("app-1", error=error, stopped=stopped)
    started = []
    monkeypatch.setattr(service.api, "get_spark", lambda master, app_name: started.append(master) or _Session("app-2"))
    svc = _service(master=MASTER, spark_min_partitions=0)
    svc.spark, svc.spark_state["ready"], svc.spark_state["app_id"] = dead, True, "app-1"
    snap = _model(brokers=(1, 2, 3, 4)).snapshot()
    try:
        result, where = svc._plan_sync(snap, {"mode": "rebalance"})
        assert where == "in-process" and result.reassignment == api.plan(snap, "rebalance").reassignment
        assert result.report["moves"] == result.report["lower_bound"] > 0
        st = svc.spark_state
        assert st["failures"] == 1 and error[:40] in st["last_error"] and st["ready"]
        if stopped:  # Python's side of the dead session stopped, and a new one started
            assert dead.stops == 1 and started == [MASTER] and st["restarts"] == 1 and st["app_id"] == "app-2"
        else:  # the context lives: the next plan tries it again
            assert dead.stops == 0 and started == [] and st["restarts"] == 0 and svc.spark is dead
            svc.spark = _Session("app-1")  # Spark replaced the executor
        again, where = svc._plan_sync(snap, {"mode": "rebalance"})
        assert where == "spark" and again.reassignment == result.reassignment
        assert st["jobs"] == 2 and st["failures"] == 1
    finally:
        svc.executor.shutdown()
