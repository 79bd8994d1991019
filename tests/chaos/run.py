"""One chaos run: rounds of workload and one fault each, quiescence after every fault, then the
final state and the verdicts.

A round: the workload runs for 6-12 s; at a random moment in it the nemesis injects a fault,
holds it and heals it; the workload stops; the run then waits (at most ``quiesce_bound_s``)
until the cluster is quiescent - nothing requested or running, no queue or cancel znode, no
throttle left, no partition half-moved, every broker registered, a controller active - and
records how long that took after the fault healed and the last request ended (quiescent also
means no topic deletion under way and every partition of the workload's topics with its state
znode). Rounds repeat until ``duration_s`` is spent. Then the final state is read - the initial
topics' assignments and the throttles, and the workload's topics as ZooKeeper, the brokers and
every controller instance's Metadata show them (``_final_topics``, ``_metadata_answers``) -
the controllers' logs (entries they reported dropping) and write audits are added to the
history, and the checker judges it.

    result = run_chaos(duration_s=300, seed=7, workdir=Path("/tmp/chaos-7"))
    result.report.ok, result.report.figures(), result.history_path

Everything random comes from ``random.Random(seed)`` (one stream each for the rounds, the
nemesis and the workload): the schedule of faults is the seed's, and so are the requests'
choices; their timing against the processes is not (real processes, real time).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from client.admin import AdminClient
from client.errors import ReassignError
from tests.chaos import checker
from tests.chaos.cluster import BROKERS, CAPS, CONTROLLER_IDS, ChaosCluster, read_topics
from tests.chaos.history import History, read
from tests.chaos.nemesis import Nemesis
from tests.chaos.observer import Observer
from tests.chaos.settle import record_settled
from tests.chaos.workload import NO_THROTTLE_DOORS, Workload

QUIESCE_BOUND_S = 120.0
ROUND_S = (6.0, 12.0)
THROTTLE_KEYS = {
    "topics": ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"),
    "brokers": ("leader.replication.throttled.rate", "follower.replication.throttled.rate"),
}
REMOVAL_LISTS = {"/admin/throttled_replicas_removal": "topics", "/admin/throttled_rates_removal": "brokers"}
REQUEST_ZNODES = ("/admin/reassign_partitions", "/admin/reassign_partitions_queue", "/admin/cancel_reassignment_in_progress")
# The engine's log line for an entry of /admin/reassign_partitions it will not start: the
# znode door's "skipped, with its reason".
DROPPED = re.compile(r"^(\S+ \S+) INFO .*dropping reassignment of (\S+)-(\d+) to \[([\d, ]*)\]: (.*)$")


@dataclass
class ChaosResult:
    seed: int
    duration_s: float
    workdir: Path
    history_path: Path
    report: checker.Report
    doors: dict
    faults: dict


BREAK_FENCE_MIN_FAULTS = 2  # forced controller moves the self-test needs (tests/chaos/test_break_fence.py)


def run_chaos(duration_s: float, seed: int, workdir: Path, quiesce_bound_s: float = QUIESCE_BOUND_S, *,
              break_fence: bool = False, isr_via: str = "zookeeper") -> ChaosResult:
    """``break_fence``: the zombie check's self-test - controllers write without the epoch check
    and the nemesis only forces controller moves, each sending the deposed controller a request
    before it hears it was deposed, so its writes land and the checker must report them.
    ``isr_via``: how the simulated leaders change ISRs (``reassignd sim --isr-via``)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    history_path = workdir / "history.jsonl"
    history = History(history_path)
    history.add("meta", seed=seed, duration_s=duration_s, break_fence=break_fence, caps=CAPS, isr_via=isr_via)
    # One seed; each actor draws from its own stream of it, so the schedule of faults (kinds,
    # holds, round lengths) is the seed's whatever the workload's timing makes it draw.
    master = random.Random(seed)
    rng, nemesis_rng, workload_rng = (random.Random(master.getrandbits(64)) for _ in range(3))
    with ChaosCluster(workdir, history, break_fence=break_fence, isr_via=isr_via) as cluster:
        cluster.start()
        history.add("initial", assignments=cluster.initial_assignments)
        observer_zk = KazooClient(hosts=cluster.zk.connect_string, timeout=15)
        observer_zk.start(timeout=60)
        observer = Observer(observer_zk, history, sorted(cluster.initial_assignments)).start()
        workload = Workload(cluster, history, workload_rng, NO_THROTTLE_DOORS if break_fence else None)
        nemesis = Nemesis(cluster, history, nemesis_rng, faults={"controller_moved": 1} if break_fence else None,
                          deposed_write=workload.to_controller if break_fence else None)
        try:
            # The self-test needs two controller moves whatever the machine's speed: its rounds go
            # on past the duration until two faults were injected (a quiescence on a loaded
            # machine once left room for only one in 30 s).
            asyncio.run(_rounds(cluster, history, rng, workload, nemesis, duration_s, quiesce_bound_s,
                                min_rounds=BREAK_FENCE_MIN_FAULTS if break_fence else 0))
            history.add("final", **_final_state(cluster.kazoo, cluster.initial_assignments),
                        **_final_topics(cluster), metadata=asyncio.run(_metadata_answers(cluster)))
        finally:
            observer.stop()
            observer_zk.stop()
            observer_zk.close()
    for cid in CONTROLLER_IDS:
        for record in _dropped_entries(workdir / f"controller-{cid}.log"):
            history.add("reported_skip", **record)
    history.close()
    records = read(history_path)
    for cid in CONTROLLER_IDS:
        path = workdir / f"audit-{cid}.jsonl"
        if path.exists():
            records.extend({"type": "audit", **a} for a in read(path))
    report = checker.check(records, quiesce_bound_s=quiesce_bound_s)
    return ChaosResult(seed, duration_s, workdir, history_path, report, dict(workload.counts), dict(nemesis.counts))


async def _rounds(cluster: ChaosCluster, history: History, rng: random.Random, workload: Workload, nemesis: Nemesis,
                  duration_s: float, bound_s: float, min_rounds: int = 0) -> None:
    """Rounds until ``duration_s`` has passed and at least ``min_rounds`` faults were injected."""
    deadline = time.monotonic() + duration_s
    rounds = 0
    while time.monotonic() < deadline or rounds < min_rounds:
        rounds += 1
        began = time.monotonic()
        window = rng.uniform(*ROUND_S)
        stop = asyncio.Event()
        requests = asyncio.create_task(workload.run(stop))
        await asyncio.sleep(rng.uniform(0.5, window - 1.0))
        fault = await nemesis.strike()
        await asyncio.sleep(max(0.0, window - (time.monotonic() - began)))
        stop.set()
        await requests
        _restart_crashed(cluster, history)
        calm_since = max(fault["t_heal"], workload.last_op_end)
        ok, left = await _wait_quiescent(cluster, calm_since + bound_s)
        history.add("quiesced", fault=fault["id"], seconds=round(time.time() - calm_since, 3), ok=ok, left=left)
        if not ok:
            return  # stuck: later rounds would judge nothing new
        # Quiet in ZooKeeper; the brokers hear of it a moment later (StopReplica, LeaderAndIsr).
        await record_settled(cluster, history, fault_id=fault["id"], why="quiescent", hosted=True)


def _restart_crashed(cluster: ChaosCluster, history: History) -> None:
    """A controller that exited without being killed crashed: recorded (a violation), restarted."""
    for cid, proc in cluster.controllers.items():
        if proc.poll() is not None:
            history.add("crash", controller=cid, returncode=proc.returncode)
            cluster.start_controller(cid)


async def _wait_quiescent(cluster: ChaosCluster, until: float) -> tuple[bool, dict]:
    left: dict = {}
    while True:
        try:
            left = await asyncio.to_thread(_leftovers, cluster.kazoo, cluster)
        except Exception as e:  # ZooKeeper still reconnecting
            left = {"error": repr(e)[:200]}
        if not left:
            return True, {}
        if time.time() > until:
            return False, left
        await asyncio.sleep(0.25)


def _leftovers(zk: KazooClient, cluster: ChaosCluster) -> dict:
    """What keeps the cluster from being quiescent (empty when it is)."""
    left: dict = {}
    for path in REQUEST_ZNODES:
        if zk.exists(path):
            left[path] = True
    records = []
    if zk.exists("/admin/reassignments"):
        for topic in zk.get_children("/admin/reassignments"):
            records += [f"{topic}/{p}" for p in zk.get_children(f"/admin/reassignments/{topic}")]
    if records:
        left["records"] = records
    throttles, removal = _throttles(zk)
    if throttles:
        left["throttles"] = throttles
    if any(removal.values()):
        left["removal_lists"] = removal
    moving = {tp: a for tp, a in _assignments(zk, cluster.initial_assignments).items() if a["adding"] or a["removing"]}
    if moving:
        left["moving"] = moving
    # The workload's topics: a deletion or a creation is the controller's to finish.
    topics, deleting = read_topics(zk, cluster.initial_topics)
    if deleting:
        left["deleting"] = deleting
    stateless = [f"{t}/{p}" for t, info in topics.items() if t not in deleting
                 for p, state in info["states"].items() if state is None]
    if stateless:
        left["stateless"] = stateless
    registered = {int(b) for b in zk.get_children("/brokers/ids")}
    if len(registered) < BROKERS:
        left["brokers_registered"] = sorted(registered)
    if not zk.exists("/controller") or cluster.stopped:
        left["controller"] = None
    return left


def _assignments(zk: KazooClient, partitions) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for topic in sorted({tp.split("/")[0] for tp in partitions}):
        doc = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
        for p, replicas in doc["partitions"].items():
            out[f"{topic}/{p}"] = {
                "replicas": replicas,
                "adding": (doc.get("adding_replicas") or {}).get(p, []),
                "removing": (doc.get("removing_replicas") or {}).get(p, []),
            }
    return out


def _throttles(zk: KazooClient) -> tuple[dict, dict]:
    throttles: dict = {}
    for kind, keys in THROTTLE_KEYS.items():
        parent = f"/config/{kind}"
        for name in zk.get_children(parent) if zk.exists(parent) else []:
            try:
                config = json.loads(zk.get(f"{parent}/{name}")[0]).get("config", {})
            except NoNodeError:
                continue
            found = {k: v for k, v in config.items() if k in keys}
            if found:
                throttles[f"{kind}/{name}"] = found
    removal: dict = {}
    for path, field in REMOVAL_LISTS.items():
        try:
            removal[path] = json.loads(zk.get(path)[0]).get(field, [])
        except NoNodeError:
            removal[path] = []
    return throttles, removal


def _final_state(zk: KazooClient, partitions) -> dict:
    throttles, removal = _throttles(zk)
    return {"assignments": _assignments(zk, partitions), "throttles": throttles, "removal_lists": removal,
            "preferred_election_left": zk.exists("/admin/preferred_replica_election") is not None}


def _final_topics(cluster: ChaosCluster) -> dict:
    """The final state of the workload's topics (checker check 10): every topic but the initial
    ones with its partitions' states, the deletion markers, the topic configs and reassignment
    records by topic, the registered brokers and what each running broker hosts."""
    zk = cluster.kazoo
    topics, markers = read_topics(zk, cluster.initial_topics)
    return {
        "topics": topics, "delete_markers": markers,
        "topic_configs": sorted(zk.get_children("/config/topics")) if zk.exists("/config/topics") else [],
        "reassignment_topics": sorted(zk.get_children("/admin/reassignments")) if zk.exists("/admin/reassignments") else [],
        "live": sorted(int(b) for b in zk.get_children("/brokers/ids")),
        "hosted": cluster.hosted(),
    }


METADATA_WAIT_S = 20.0  # a controller restarted by the last fault may still be opening its listener


async def _metadata_answers(cluster: ChaosCluster) -> dict:
    """Each controller instance's Metadata answer for every topic (null: all), asked of that
    instance alone through the AdminClient: {controller id: {"topics": {topic: {p: replicas}}}},
    or {"error": ...} for one that did not answer within METADATA_WAIT_S. Every instance
    answers Metadata, a standby too. The initial topics are left out: check 10 judges the workload's."""
    out: dict = {}
    for cid, port in sorted(cluster.listen_ports.items()):
        addr = ("127.0.0.1", port)
        deadline = time.monotonic() + METADATA_WAIT_S
        while True:
            admin = AdminClient([f"{addr[0]}:{port}"], client_id="chaos-final", request_timeout_ms=8000)
            try:
                await admin.start()
                meta = await admin._fetch_metadata(addr, None)  # this instance, not the active one
                out[str(cid)] = {"topics": {t: {str(p): m.replicas for p, m in ps.items()}
                                            for t, ps in meta.topics.items() if t not in cluster.initial_topics}}
                break
            except (ReassignError, OSError, asyncio.TimeoutError) as e:
                if time.monotonic() > deadline:
                    out[str(cid)] = {"error": repr(e)[:300]}
                    break
                await asyncio.sleep(0.5)
            finally:
                await admin.close()
    return out


def _dropped_entries(log: Path) -> list[dict]:
    out = []
    if not log.exists():
        return out
    for line in log.read_text(errors="replace").splitlines():
        m = DROPPED.match(line)
        if m:
            when = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            target = [int(x) for x in m.group(4).split(",") if x.strip()]
            out.append({"t": when, "tp": f"{m.group(2)}/{m.group(3)}", "target": target, "reason": m.group(5)})
    return out


def figure_lines(result: ChaosResult) -> list[str]:
    """The figures as ``name=value`` lines, the six the issue names last."""
    return [f"{name}={value}" for name, value in result.report.figures().items()]
