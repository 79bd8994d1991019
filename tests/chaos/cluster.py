"""The chaos suite's cluster: a three-server ZooKeeper ensemble, simulated brokers and three
controller processes whose ZooKeeper links go through fault proxies, all real processes.

    with ChaosCluster(workdir, history) as cluster:
        cluster.start()                      # ensemble, proxies, sim, controllers; waits for a leader
        cluster.active_controller()          # 101
        cluster.kill_controller(101); cluster.start_controller(101)
        cluster.proxies[102].set_mode("blackhole")
        cluster.zk.kill_member(2); cluster.zk.restart_member(2)
        cluster.sim_command("stop 3")

The ensemble is started by the operator's command, ``reassignd zk start --ensemble 3`` (free
ports, data under ``workdir/zk``), and stopped on exit whatever happened. Every controller
appends its committed fenced writes to ``workdir/audit-<id>.jsonl`` (controller.shell.audit)
and its log to ``workdir/controller-<id>.log``; the sim logs to ``workdir/sim.log``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from controller.core.config import ControllerConfig, to_toml
from tests.chaos.history import History
from tests.chaos.proxy import ProxyGroup
from znodes.launcher import LocalZooKeeper, free_port

REPO = Path(__file__).resolve().parents[2]
CONTROLLER_IDS = (101, 102, 103)
BROKERS = 6
TOPICS = {"orders": 6, "clicks": 6, "logs": 4}  # 16 partitions, RF 3
REPLICATION = 3
PARTITION_SIZE = "3MiB"
# A short session makes a zombie (SIGSTOP) or a cut link depose the controller quickly.
SESSION_TIMEOUT_S = 4.0
CONTROLLER_SETTINGS = {
    "zk_session_timeout_s": SESSION_TIMEOUT_S,
    "request_timeout_s": 3.0,
    "max_incoming_per_broker": 4,
    "max_outgoing_per_broker": 4,
}
# The move caps the controllers run with (the settings above, the defaults for the rest): the
# checker holds every sampled moment to them (history ``meta``).
CAP_KEYS = ("max_incoming_per_broker", "max_outgoing_per_broker", "max_cluster_moves")
CAPS = {k: CONTROLLER_SETTINGS.get(k, getattr(ControllerConfig(), k)) for k in CAP_KEYS}
SIM_ARGS = ["--brokers", str(BROKERS), "--topics", *(f"{t}:{n}:{REPLICATION}:{PARTITION_SIZE}" for t, n in TOPICS.items()),
            "--bandwidth", "1MiB", "--produce-rate", "0", "--tick-ms", "100", "--replica-lag-time-max-ms", "3000"]
STARTUP_TIMEOUT_S = 60
STOP_GRACE_S = 10.0


NO_FENCE_DIR = Path(__file__).resolve().parent / "nofence"


def read_topics(zk: KazooClient, skip: set[str]) -> tuple[dict[str, dict], list[str]]:
    """Every topic not in ``skip`` (given the initial ones: the workload's own) and the topic
    deletion markers: ``({topic: {"partitions": {p: replicas}, "adding", "removing", "states":
    {p: {"leader", "isr", "leader_epoch"} or None}, "extra_states": [p, ...]}}, [marked topic,
    ...])``. A state None: its partition has no state znode; ``extra_states``: partitions under
    ``/brokers/topics/<t>/partitions`` that the topic znode does not have. A topic deleted
    while it is read is left out. Reads are pipelined (one round trip per level)."""
    marked = sorted(zk.get_children("/admin/delete_topics")) if zk.exists("/admin/delete_topics") else []
    names = sorted(t for t in zk.get_children("/brokers/topics") if t not in skip)
    docs = [(t, zk.get_async(f"/brokers/topics/{t}"), zk.get_children_async(f"/brokers/topics/{t}/partitions"))
            for t in names]
    topics: dict[str, dict] = {}
    pending = []
    for t, doc, children in docs:
        try:
            data = json.loads(doc.get(timeout=10)[0])
        except NoNodeError:
            continue
        try:
            listed = children.get(timeout=10)
        except NoNodeError:
            listed = []
        partitions = data.get("partitions") or {}
        topics[t] = {"partitions": partitions, "adding": data.get("adding_replicas") or {},
                     "removing": data.get("removing_replicas") or {}, "states": {},
                     "extra_states": sorted(p for p in listed if p not in partitions)}
        pending += [(t, p, zk.get_async(f"/brokers/topics/{t}/partitions/{p}/state")) for p in partitions]
    for t, p, result in pending:
        try:
            s = json.loads(result.get(timeout=10)[0])
            topics[t]["states"][p] = {"leader": s["leader"], "isr": s["isr"], "leader_epoch": s.get("leader_epoch")}
        except NoNodeError:
            topics[t]["states"][p] = None
    return topics, marked


def _reassignd(args: list[str], log: Path, env: dict | None = None, **kw) -> subprocess.Popen:
    with open(log, "ab") as out:  # appended: a restarted process keeps its predecessor's lines
        return subprocess.Popen([sys.executable, "-m", "reassignd", *args], cwd=REPO, stderr=out,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, **kw)


def _stop(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGCONT)  # a stopped process cannot handle SIGTERM
            proc.terminate()
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ChaosCluster:
    def __init__(self, workdir: Path, history: History, *, break_fence: bool = False, isr_via: str = "zookeeper"):
        self.workdir = Path(workdir)
        # How the simulated leaders change ISRs: writing ZooKeeper (pre-2.7 brokers) or sending
        # AlterPartition to the active controller (``reassignd sim --isr-via``).
        self.isr_via = isr_via
        # The checker's self-test: controllers that write without the epoch check.
        self.break_fence = break_fence
        self.history = history
        self.zk_dir = self.workdir / "zk"
        self.zk: LocalZooKeeper | None = None
        self.proxies: dict[int, ProxyGroup] = {}
        self.controllers: dict[int, subprocess.Popen] = {}
        self.stopped: set[int] = set()  # controllers SIGSTOPped right now
        self.listen_ports = {cid: free_port() for cid in CONTROLLER_IDS}
        self.sim: subprocess.Popen | None = None
        self.sim_ready: dict = {}
        self.kazoo: KazooClient | None = None
        self.brokers_down: set[int] = set()
        self.config = self.workdir / "controller.toml"

    # ---- start and stop --------------------------------------------------------------------------

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        started = subprocess.run(
            [sys.executable, "-m", "reassignd", "zk", "start", "--ensemble", "3", "--port", "0",
             "--data-dir", str(self.zk_dir)],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )
        if started.returncode != 0:
            raise RuntimeError(f"reassignd zk start --ensemble 3 failed: {started.stderr or started.stdout}")
        self.zk = LocalZooKeeper(data_dir=self.zk_dir)
        hosts = self.zk.connect_string  # loaded from the ensemble's state.json
        self.kazoo = KazooClient(hosts=hosts, timeout=15)
        self.kazoo.start(timeout=STARTUP_TIMEOUT_S)
        upstreams = [(self.zk.host, m.client_port) for m in self.zk.members]
        for cid in CONTROLLER_IDS:
            self.proxies[cid] = ProxyGroup(upstreams)
        self.config.write_text(to_toml(CONTROLLER_SETTINGS))
        self.sim = _reassignd(["sim", "--zookeeper", hosts, *SIM_ARGS, "--isr-via", self.isr_via],
                              self.workdir / "sim.log", stdout=subprocess.PIPE)
        line = self.sim.stdout.readline()
        if not line:
            raise RuntimeError("the sim did not start: " + (self.workdir / "sim.log").read_text()[-2000:])
        self.sim_ready = json.loads(line)
        for cid in CONTROLLER_IDS:
            self.start_controller(cid)
        self.wait_for(lambda: self.active_controller() is not None, STARTUP_TIMEOUT_S, "an active controller")
        self.wait_for(lambda: all(self.kazoo.exists(f"/reassignd/controllers/{c}") for c in CONTROLLER_IDS),
                      STARTUP_TIMEOUT_S, "3 registered controllers")

    def close(self) -> None:
        for proc in self.controllers.values():
            _stop(proc)
        if self.sim is not None:
            _stop(self.sim)
        for group in self.proxies.values():
            group.close()
        if self.kazoo is not None:
            try:
                self.kazoo.stop()
                self.kazoo.close()
            except Exception:
                pass
        if self.zk is not None:
            self.zk.stop()
        # Also through the operator's command, for servers a crashed run left behind.
        subprocess.run([sys.executable, "-m", "reassignd", "zk", "stop", "--data-dir", str(self.zk_dir)],
                       cwd=REPO, capture_output=True, timeout=60)

    def __enter__(self) -> "ChaosCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- controllers -----------------------------------------------------------------------------

    def start_controller(self, cid: int) -> None:
        self.controllers[cid] = _reassignd(
            ["controller", "--zookeeper", self.proxies[cid].connect_string, "--id", str(cid),
             "--listen", f"127.0.0.1:{self.listen_ports[cid]}", "--config", str(self.config),
             "--write-audit", str(self.audit_path(cid))],
            self.workdir / f"controller-{cid}.log",
            # The repository after nofence: its sitecustomize imports znodes while the interpreter
            # starts, before ``-m`` puts the working directory on the path, and must patch this
            # tree's, not the copy an editable install of the package may point to elsewhere.
            env={"PYTHONPATH": os.pathsep.join([str(NO_FENCE_DIR), str(REPO)])} if self.break_fence else None,
        )

    def audit_path(self, cid: int) -> Path:
        return self.workdir / f"audit-{cid}.jsonl"

    def kill_controller(self, cid: int) -> None:
        proc = self.controllers[cid]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.stopped.discard(cid)

    def pause_controller(self, cid: int) -> None:
        self.controllers[cid].send_signal(signal.SIGSTOP)
        self.stopped.add(cid)

    def resume_controller(self, cid: int) -> None:
        self.controllers[cid].send_signal(signal.SIGCONT)
        self.stopped.discard(cid)

    def controllers_running(self) -> bool:
        return all(p.poll() is None for p in self.controllers.values())

    @property
    def bootstrap(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.listen_ports.values()]

    def active_controller(self) -> int | None:
        try:
            return json.loads(self.kazoo.get("/controller")[0])["brokerid"]
        except (NoNodeError, ValueError, KeyError):
            return None

    def delete_controller_znode(self) -> None:
        """What an operator does to force a new election (Kafka's "controller move")."""
        try:
            self.kazoo.delete("/controller")
        except NoNodeError:
            pass

    # ---- brokers ---------------------------------------------------------------------------------

    def sim_command(self, command: str) -> str:
        host, port = self.sim_ready["control"].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(command.encode() + b"\n")
            with s.makefile("rb") as answer:
                reply = answer.readline().decode()
        if not reply.startswith("OK"):
            raise RuntimeError(f"sim {command!r}: {reply.strip()}")
        return reply

    def stop_broker(self, broker: int) -> None:
        self.sim_command(f"stop {broker}")
        self.brokers_down.add(broker)

    def controlled_stop_broker(self, broker: int) -> dict:
        """Kafka's controlled shutdown, then the stop (sim control ``controlled-stop``): the
        sim's answer, ``{"stopped", "controlled", "remaining", "tries"}``."""
        reply = self.sim_command(f"controlled-stop {broker}")
        self.brokers_down.add(broker)
        return json.loads(reply[3:])

    def start_broker(self, broker: int) -> None:
        self.sim_command(f"start {broker}")
        self.brokers_down.discard(broker)

    def hosted(self) -> dict[str, dict[str, int]]:
        """What each running simulated broker hosts, from the sim's ``status``: broker id ->
        {"topic/partition": the leader epoch its replica holds (-1: never told since it started)}."""
        status = json.loads(self.sim_command("status")[3:])
        return {b: {f"{r['topic']}/{r['partition']}": r.get("leader_epoch", -1) for r in info["replicas"]}
                for b, info in status["brokers"].items() if info["running"]}

    def snapshot(self, *, hosted: bool) -> dict:
        """The cluster as a settled moment shows it (checker.settled_problems judges it): the
        registered brokers, every partition's state and assignment, and with ``hosted`` what
        each running broker hosts. Raises on a ZooKeeper or sim error (the caller looks again).

        The workload's own topics are in it too (a partition without its state znode yet with
        state None), except those marked for deletion (``deleting``): the controller elects
        no leader for those, and their replicas go. The workload runs during a broker's
        failure, so they may be created or deleted while this reads them."""
        zk = self.kazoo
        live = sorted(int(b) for b in zk.get_children("/brokers/ids"))
        states = {}
        for tp in sorted(self.initial_assignments):
            topic, p = tp.split("/")
            s = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            states[tp] = {"leader": s["leader"], "isr": s["isr"], "leader_epoch": s.get("leader_epoch")}
        assignments = {}
        for topic in sorted(self.initial_topics):
            doc = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
            assignments.update({f"{topic}/{p}": r for p, r in doc["partitions"].items()})
        topics, deleting = read_topics(zk, self.initial_topics)
        for topic, info in topics.items():
            if topic in deleting:
                continue
            for p, replicas in info["partitions"].items():
                assignments[f"{topic}/{p}"] = replicas
                states[f"{topic}/{p}"] = info["states"][p]
        out = {"live": live, "states": states, "assignments": assignments, "deleting": deleting}
        if hosted:
            out["hosted"] = self.hosted()
        return out

    @property
    def broker_ids(self) -> list[int]:
        return sorted(int(b) for b in self.sim_ready["brokers"])

    @property
    def initial_assignments(self) -> dict[str, list[int]]:
        return {f"{t}/{p}": r for t, parts in self.sim_ready["topics"].items() for p, r in parts.items()}

    @property
    def initial_topics(self) -> set[str]:
        return set(self.sim_ready["topics"])

    # ---- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = predicate()
            except Exception:  # ZooKeeper between servers: look again
                value = None
            if value:
                return value
            time.sleep(interval)
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
