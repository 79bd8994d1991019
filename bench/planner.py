"""Benchmark: the KIP-6 planner against Yelp's kafka-cluster-manager (kafka-utils 4.1.0).

Usage::

    .venv/bin/python bench/planner.py            # the full run (a few minutes on 2 cores)
    .venv/bin/python bench/planner.py --quick    # smaller clusters, to check the harness

Both tools plan the same clusters, loaded into one real local ZooKeeper (Kafka's znode
formats): decommission 1 of 100 brokers (~77,000 replicas, RF 3), then expand 30 -> 32
brokers. Each reads the cluster from ZooKeeper itself and writes a reassignment file; wall
time covers read + plan + write (ours through the in-process API that kafka-reassign uses,
and again on a warm Spark session). Moves are counted the same way for both (replicas added
to brokers that did not hold them) and set against our lower bound. kafka-utils runs from its
own venv (bench/.venv-kafka-utils/, created here) with ``--write-to-file`` and no ``--apply``,
its movement caps lifted so it plans the whole job.

Then the 1,000-broker / 1,000,000-partition RF 3 rebalance after adding 50 brokers, planned on
Spark ``local[2]`` from a msgpack snapshot (load + plan + write; the Spark start-up is shown
apart).

Then the planner service (``reassignd planner serve``, one process, Spark ``local[2]``) on the
same ZooKeeper, warm: ``warm_expand_seconds`` is a fresh expansion proposal for the 32-broker
cluster requested over HTTP from the warm model and written to a file, set against
kafka-cluster-manager's read + plan + write (``warm_expand_speedup_vs_kafka_utils``);
``warm_proposal_seconds`` the same for 1,000 brokers (50 of them empty) and 1,000,000
partitions, loaded into ZooKeeper as broker registrations and topic znodes (no partition state
znodes: a million of them would take longer to write than the whole benchmark runs; the plan
reads no leader or ISR); ``model_refresh_seconds`` the time from one more broker registering
on that cluster until ``GET /state`` lists it (``proposal_refresh_seconds``: until
``GET /proposals`` includes it).

Then disk capacity on a skewed cluster (a few topics of ~40 GiB partitions among many of ~1 GiB,
two brokers just added, a disk per broker at which the mean broker sits at 75%): peak disk use
before, with our count-only plan, with our capacity-aware plan (threshold 80%), and with
kafka-cluster-manager's plans on the same cluster in ZooKeeper - its default partition-count
balancer, and its genetic balancer given the partition sizes through a partition measurer (its
defaults: 100 generations, at most one partition moved per generation).
``--skewed-only`` runs this section alone. The last lines are the figures, ``name=value``, the
skewed section's last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kazoo.client import KazooClient  # noqa: E402

from spark_jobs import api, snapshot  # noqa: E402
from spark_jobs.legacy import assign_unaware  # noqa: E402
from spark_jobs.outputs import plan_json  # noqa: E402
from znodes.launcher import LocalZooKeeper  # noqa: E402

from bench import results  # noqa: E402

KU_VENV = ROOT / "bench" / ".venv-kafka-utils"
PEER = "Yelp's kafka-cluster-manager (kafka-utils 4.1.0), a fresh process per plan"
WARM_NOTE = ("cold against cold: *_cold_* figures run kafka-reassign --zookeeper as a fresh process, as the peer runs; "
             "warm_* figures are the planner service's warm model (JVM, Spark and the cluster model already loaded) "
             "against the same cold peer: what a running service answers, not a like-for-like plan")
KU_VERSION = "4.1.0"
NO_CAP = "100000000"  # kafka-cluster-manager caps moves at 1 by default; lift it


# ---- clusters ---------------------------------------------------------------------------------


def kafka_like(n_brokers: int, topics: list[tuple[str, int]], rf: int, seed: int, used: int | None = None) -> dict:
    """Topics laid out by Kafka's own round-robin over the first ``used`` brokers."""
    rng = random.Random(seed)
    used_ids = list(range(used or n_brokers))
    out = []
    for name, parts in topics:
        layout = assign_unaware(parts, rf, used_ids, rng)
        out.append({"name": name, "partitions": [
            {"partition": p, "replicas": r, "leader": r[0], "isr": r} for p, r in enumerate(layout)
        ]})
    brokers = [{"id": b, "host": "127.0.0.1", "port": 19092 + b, "rack": None} for b in range(n_brokers)]
    return snapshot.validate({"version": 1, "brokers": brokers, "topics": out})


def load_into_zookeeper(hosts: str, snap: dict) -> float:
    """Write brokers, topic assignments and partition states in Kafka's formats."""
    t0 = time.time()
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=60)
    try:
        for path in ("/brokers/ids", "/brokers/topics", "/admin", "/config/topics"):
            zk.ensure_path(path)
        pending = []

        def create(path, data):
            pending.append(zk.create_async(path, data))
            if len(pending) >= 2000:
                for p in pending:
                    p.get()
                pending.clear()

        for b in snap["brokers"]:
            reg = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                   "endpoints": [f"PLAINTEXT://{b['host']}:{b['port']}"], "jmx_port": -1,
                   "host": b["host"], "timestamp": "1700000000000", "port": b["port"], "version": 4}
            create(f"/brokers/ids/{b['id']}", json.dumps(reg).encode())
        for t in snap["topics"]:
            parts = {str(p["partition"]): p["replicas"] for p in t["partitions"]}
            body = {"version": 2, "partitions": parts, "adding_replicas": {}, "removing_replicas": {}}
            create(f"/brokers/topics/{t['name']}", json.dumps(body).encode())
            create(f"/config/topics/{t['name']}", b'{"version":1,"config":{}}')
        for p in pending:
            p.get()
        pending.clear()
        for t in snap["topics"]:
            create(f"/brokers/topics/{t['name']}/partitions", b"")
        for p in pending:
            p.get()
        pending.clear()
        for t in snap["topics"]:
            for p in t["partitions"]:
                create(f"/brokers/topics/{t['name']}/partitions/{p['partition']}", b"")
        for p in pending:
            p.get()
        pending.clear()
        for t in snap["topics"]:
            for p in t["partitions"]:
                state = {"controller_epoch": 1, "leader": p["replicas"][0], "version": 1, "leader_epoch": 0,
                         "isr": p["replicas"]}
                create(f"/brokers/topics/{t['name']}/partitions/{p['partition']}/state", json.dumps(state).encode())
        for p in pending:
            p.get()
    finally:
        zk.stop()
        zk.close()
    return time.time() - t0


def count_moves(snap: dict, plan: dict) -> int:
    old = {(t["name"], p["partition"]): set(p["replicas"]) for t in snap["topics"] for p in t["partitions"]}
    return sum(len(set(e["replicas"]) - old[(e["topic"], e["partition"])]) for e in plan.get("partitions", []))


# ---- the two tools ------------------------------------------------------------------------------


def ours(hosts: str, mode: str, brokers, out: Path, spark=None) -> tuple[float, dict]:
    t0 = time.time()
    snap = asyncio.run(snapshot.read_cluster(hosts, sizes=False, timeout=30))
    result = api.plan(snap, mode, brokers=brokers, spark=spark, assume_valid=True)
    out.write_bytes(plan_json(result.reassignment))
    return time.time() - t0, result.report


def ours_cold(hosts: str, cli_args: list[str]) -> float:
    """The one-shot plan as an operator runs it, a fresh process like kafka-cluster-manager's:
    ``kafka-reassign --zookeeper`` (interpreter start, imports, ZooKeeper read, plan, output)."""
    exe = Path(sys.executable).with_name("kafka-reassign")
    t0 = time.time()
    proc = subprocess.run([str(exe), "--zookeeper", hosts, *cli_args], capture_output=True, text=True, timeout=3600,
                          cwd=ROOT)
    took = time.time() - t0
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"kafka-reassign {' '.join(cli_args)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}")
    return took


def kafka_utils_ready() -> str | None:
    """Create the peer's venv if needed; None when ready, else why it cannot run."""
    exe = KU_VENV / "bin" / "kafka-cluster-manager"
    if exe.exists():
        return None
    py = shutil.which("python3.11") or sys.executable
    try:
        subprocess.run([py, "-m", "venv", str(KU_VENV)], check=True, capture_output=True, timeout=300)
        subprocess.run([str(KU_VENV / "bin" / "pip"), "install", "-q", f"kafka-utils=={KU_VERSION}"],
                       check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as e:
        return f"installing kafka-utils {KU_VERSION} failed: {(e.stderr or e.stdout or '')[-500:]}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"installing kafka-utils {KU_VERSION} failed: {e}"
    return None if exe.exists() else "kafka-cluster-manager missing after install"


def theirs(hosts: str, args: list[str], out: Path, workdir: Path) -> tuple[float | None, str | None]:
    """Run kafka-cluster-manager; (seconds, None) or (None, why it failed)."""
    conf = workdir / "discovery"
    conf.mkdir(exist_ok=True)
    (conf / "bench.yaml").write_text(
        "---\nclusters:\n  bench:\n    broker_list:\n      - \"127.0.0.1:19092\"\n"
        f"    zookeeper: \"{hosts}\"\nlocal_config:\n  cluster: bench\n"
    )
    cmd = [str(KU_VENV / "bin" / "kafka-cluster-manager"), "--cluster-type", "bench", "--cluster-name", "bench",
           "--discovery-base-path", str(conf), "--write-to-file", str(out), *args]
    env = dict(os.environ, KAFKA_DISCOVERY_DIR=str(conf))
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env, cwd=workdir)
    except subprocess.TimeoutExpired:
        return None, "kafka-cluster-manager ran over an hour"
    took = time.time() - t0
    if proc.returncode != 0 or not out.exists():
        return None, f"kafka-cluster-manager exited {proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}"
    return took, None


# ---- the large rebalance ------------------------------------------------------------------------


def large_snapshot(path: Path, n_brokers: int, n_topics: int, parts: int, added: int) -> None:
    rng = random.Random(11)
    ids = list(range(n_brokers))
    topics = []
    for t in range(n_topics):
        layout = assign_unaware(parts, 3, ids, rng)
        topics.append({"name": f"topic-{t:05d}", "partitions": [
            {"partition": p, "replicas": r, "leader": r[0], "isr": None, "reassigning": False,
             "sizes": [(p % 97 + 1) * 1_000_000] * 3} for p, r in enumerate(layout)
        ]})
    brokers = [{"id": b, "host": "127.0.0.1", "port": 9092, "rack": None, "alive": True} for b in range(n_brokers + added)]
    snap = {"version": 1, "cluster": {"source": None, "taken_at_ms": None, "warnings": []}, "brokers": brokers, "topics": topics}
    path.write_bytes(snapshot.dumps(snap, "msgpack"))


# ---- the planner service ------------------------------------------------------------------------


class Service:
    """``reassignd planner serve`` as a process, and an HTTP client for it."""

    def __init__(self, hosts: str, workdir: Path, name: str):
        self.log = workdir / f"{name}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "reassignd", "planner", "serve", "--zookeeper", hosts, "--listen",
                 "127.0.0.1:0", "--master", "local[2]", "--no-sizes", "--sizes-interval", "600", "--insecure-no-auth"],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"planner service did not start: {self.log.read_text()[-2000:]}")
        self.base = "http://" + json.loads(line)["listen"]

    def call(self, method: str, path: str) -> dict:
        import urllib.request

        req = urllib.request.Request(self.base + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def wait(self, predicate, timeout: float, what: str, interval: float = 0.05):
        deadline = time.time() + timeout
        while time.time() < deadline:
            state = self.call("GET", "/state")
            if predicate(state):
                return state
            time.sleep(interval)
        raise RuntimeError(f"planner service: timed out waiting for {what}; log: {self.log.read_text()[-2000:]}")

    def settled(self, timeout: float) -> dict:
        """Model read and Spark up, and the cached proposal current for the model."""
        return self.wait(lambda s: s["model"]["ready"] and s["spark"]["ready"] and s["proposal"]
                         and s["proposal"]["current"], timeout, "a settled model and proposal", 0.2)

    def fresh_plan(self, broker_ids: list[int], out: Path) -> tuple[float, dict]:
        """A proposal planned now (a broker list is never served from the cache), written out."""
        t0 = time.time()
        body = self.call("POST", "/rebalance?brokerid=" + ",".join(map(str, broker_ids)))
        out.write_bytes(plan_json(body["proposal"]["reassignment"]))
        return time.time() - t0, body["proposal"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def load_large_into_zookeeper(hosts: str, n_brokers: int, used: int, n_topics: int, parts: int) -> float:
    """Broker registrations and topic znodes of a Kafka-laid-out cluster, written in multi-ops."""
    rng = random.Random(13)
    ids = list(range(used))
    t0 = time.time()
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=60)
    try:
        zk.ensure_path("/brokers/ids")
        zk.ensure_path("/brokers/topics")
        pending = []
        for b in range(n_brokers):
            reg = {"version": 4, "host": "127.0.0.1", "port": 1, "jmx_port": -1, "timestamp": "1700000000000",
                   "endpoints": ["PLAINTEXT://127.0.0.1:1"]}
            pending.append(zk.create_async(f"/brokers/ids/{b}", json.dumps(reg).encode()))
        for t in range(n_topics):
            layout = assign_unaware(parts, 3, ids, rng)
            body = {"version": 2, "partitions": {str(p): r for p, r in enumerate(layout)},
                    "adding_replicas": {}, "removing_replicas": {}}
            pending.append(zk.create_async(f"/brokers/topics/t{t:05d}", json.dumps(body).encode()))
            if len(pending) > 500:
                for p in pending:
                    p.get()
                pending.clear()
        for p in pending:
            p.get()
    finally:
        zk.stop()
        zk.close()
    return time.time() - t0


def register_broker(hosts: str, broker_id: int) -> float:
    """Register one more broker; the wall-clock time at which it landed."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=60)
    try:
        reg = {"version": 4, "host": "127.0.0.1", "port": 1, "jmx_port": -1, "timestamp": "1700000000000",
               "endpoints": ["PLAINTEXT://127.0.0.1:1"]}
        zk.create(f"/brokers/ids/{broker_id}", json.dumps(reg).encode())
        return time.time()
    finally:
        zk.stop()
        zk.close()


# ---- the skewed cluster: disk capacity ---------------------------------------------------------

# The peer's partition measurer, written next to the run: kafka-cluster-manager's genetic
# balancer weighs and sizes partitions through one (its default gives every partition 1).
SIZES_MEASURER = """
import argparse, json
from kafka_utils.kafka_cluster_manager.cluster_info.partition_measurer import PartitionMeasurer


class SizesMeasurer(PartitionMeasurer):
    def parse_args(self, measurer_args):
        p = argparse.ArgumentParser()
        p.add_argument("--sizes", required=True)
        with open(p.parse_args(measurer_args).sizes) as f:
            self.sizes = {(t, int(n)): float(v) for t, parts in json.load(f).items() for n, v in parts.items()}

    def get_weight(self, partition_name):
        return self.sizes.get(partition_name, 1.0)

    def get_size(self, partition_name):
        return self.sizes.get(partition_name, 1.0)
"""
# Its genetic balancer needs every broker in a named replication group (the default parser
# leaves them unnamed, which it cannot index): one group, as the cluster has no racks.
ONE_GROUP_PARSER = """
from kafka_utils.kafka_cluster_manager.cluster_info.replication_group_parser import ReplicationGroupParser


class OneGroupParser(ReplicationGroupParser):
    def get_replication_group(self, broker):
        return "all"
"""
SKEW_MEAN_USE = 0.75  # the capacity given: the mean broker would sit at 75% of its disk
GIB = 2**30


def skewed_cluster(n_brokers: int, used: int, big: int, small: int, parts: int, seed: int) -> dict:
    """Kafka's round-robin over the first ``used`` brokers (the rest just added); ``big`` topics
    hold ~40 GiB per partition, the ``small`` ones ~1 GiB (sizes drawn +-50%)."""
    rng = random.Random(seed)
    topics = [(f"big-{t:02d}", parts) for t in range(big)] + [(f"small-{t:03d}", parts) for t in range(small)]
    snap = kafka_like(n_brokers, topics, 3, seed=seed, used=used)
    for t in snap["topics"]:
        mean = 40 * GIB if t["name"].startswith("big") else GIB
        for p in t["partitions"]:
            size = int(mean * rng.uniform(0.5, 1.5))
            p["sizes"] = [size] * len(p["replicas"])
    return snapshot.validate(snap)


def disk_use(snap: dict, plan: dict | None, capacity_bytes: int) -> tuple[float, int, int]:
    """(peak use, moves, bytes moved) of ``plan`` applied to ``snap`` (None: as it is)."""
    rows = {(t["name"], p["partition"]): (p["replicas"], p["sizes"][0]) for t in snap["topics"] for p in t["partitions"]}
    used = {b["id"]: 0 for b in snap["brokers"]}
    moves = moved = 0
    new = {(e["topic"], e["partition"]): e["replicas"] for e in (plan or {}).get("partitions", [])}
    for key, (reps, size) in rows.items():
        after = new.get(key, reps)
        added = len(set(after) - set(reps))
        moves += added
        moved += added * size
        for b in after:
            used[b] += size
    return max(used.values()) / capacity_bytes, moves, moved


def skewed_section(zk_connect: str, work: Path, quick: bool, ku_missing: str | None, notes: list) -> dict:
    """Peak disk use on a skewed cluster: before, our count-only plan, our capacity-aware plan,
    kafka-cluster-manager's partition-count balancer and its genetic balancer given the sizes."""
    from spark_jobs.capacity import MIB, CapacitySpec

    nb, used, big, small, parts = (12, 10, 3, 40, 12) if quick else (48, 45, 6, 300, 24)
    snap = skewed_cluster(nb, used, big, small, parts, seed=7)
    total = sum(p["sizes"][0] * len(p["replicas"]) for t in snap["topics"] for p in t["partitions"])
    cap = int(total / nb / SKEW_MEAN_USE) // MIB * MIB
    hosts = f"{zk_connect}/skewed"
    ensure_chroot(zk_connect, "/skewed")
    load_into_zookeeper(hosts, snap)
    print(f"skewed cluster: {nb} brokers ({nb - used} just added), {big} topics of ~40 GiB partitions and {small} of "
          f"~1 GiB, {parts} partitions each, RF 3; {total / 2**40:.1f} TiB; disk {cap / 2**40:.2f} TiB per broker "
          f"(mean use {SKEW_MEAN_USE:.0%}), threshold 80%")
    out: dict[str, object] = {}
    before, _, _ = disk_use(snap, None, cap)
    out["skewed_peak_use_before"] = round(before, 4)
    print(f"  before:                    peak use {before:7.1%}")
    t0 = time.time()
    count_only = api.plan(snap, "rebalance", assume_valid=True)
    count_s = time.time() - t0
    peak, moves, moved = disk_use(snap, count_only.reassignment, cap)
    print(f"  ours, counts only:         peak use {peak:7.1%}  moves={moves} bytes={moved / GIB:.0f} GiB  {count_s:.2f}s")
    out["skewed_count_plan_peak_use"] = round(peak, 4)
    out["skewed_count_plan_moves"] = moves
    t0 = time.time()
    aware = api.plan(snap, "rebalance", assume_valid=True, capacity=CapacitySpec(default=cap))
    aware_s = time.time() - t0
    peak, moves, moved = disk_use(snap, aware.reassignment, cap)
    c = aware.report["capacity"]
    print(f"  ours, capacity-aware:      peak use {peak:7.1%}  moves={moves} bytes={moved / GIB:.0f} GiB  {aware_s:.2f}s  "
          f"(lower bound {aware.report['lower_bound']}, {c['extra_moves']} for the capacity goal, fair={aware.report['fair']})")
    assert c["over_threshold_after"] == [] and peak <= 0.8, "the capacity goal let a broker above its threshold"
    out["skewed_capacity_plan_peak_use"] = round(peak, 4)
    out["skewed_capacity_plan_moves"] = moves
    out["skewed_capacity_extra_moves"] = c["extra_moves"]
    out["skewed_capacity_plan_seconds"] = round(aware_s, 3)
    if ku_missing:
        out["skewed_kafka_utils_peak_use"] = "unavailable"
        out["skewed_kafka_utils_genetic_peak_use"] = "unavailable"
        return out
    runs = [("partition-count balancer", "skewed_kafka_utils", [])]
    sizes_file = work / "skewed-sizes.json"
    sizes_file.write_text(json.dumps({t["name"]: {str(p["partition"]): p["sizes"][0] for p in t["partitions"]}
                                      for t in snap["topics"]}))
    (work / "ku_sizes_measurer.py").write_text(SIZES_MEASURER)
    (work / "ku_one_group.py").write_text(ONE_GROUP_PARSER)
    runs.append(("genetic balancer, sizes", "skewed_kafka_utils_genetic",
                 ["--partition-measurer", f"{work}:ku_sizes_measurer", "--measurer-args", f"--sizes {sizes_file}",
                  "--group-parser", f"{work}:ku_one_group", "--genetic-balancer"]))
    for label, key, extra in runs:
        target = work / f"{key}.json"
        ku_s, err = theirs(hosts, [*extra, "rebalance", "--brokers", "--leaders", "--max-partition-movements", NO_CAP,
                                   "--max-leader-changes", NO_CAP], target, work)
        if err:
            notes.append(f"kafka-utils {label} on the skewed cluster failed: {err}")
            out[f"{key}_peak_use"] = "unavailable"
            continue
        peak, moves, moved = disk_use(snap, json.loads(target.read_text()), cap)
        print(f"  kafka-utils, {label + ':':25s} peak use {peak:7.1%}  moves={moves} bytes={moved / GIB:.0f} GiB  {ku_s:.2f}s")
        out[f"{key}_peak_use"] = round(peak, 4)
        out[f"{key}_moves"] = moves
    return out


def skewed_only(quick: bool) -> int:
    """Only the skewed-cluster section, on a ZooKeeper of its own; its figures last."""
    started = results.begin()
    notes: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="bench-planner-skewed-"))
    zk = LocalZooKeeper(port=0, data_dir=work / "zk", fsync=False, stop_with_parent=True)
    zk.start(timeout=90)
    try:
        figures = skewed_section(zk.connect_string, work, quick, kafka_utils_ready(), notes)
    finally:
        zk.stop()
    for n in notes:
        print(f"note: {n}")
    shutil.rmtree(work, ignore_errors=True)
    results.finish("planner", figures, peer=PEER, sizes={"quick": quick, "sections": "skewed only"}, notes=notes,
                   started=started)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small clusters (harness check)")
    ap.add_argument("--skewed-only", action="store_true", help="only the skewed-cluster disk capacity section")
    args = ap.parse_args()
    quick = args.quick
    if args.skewed_only:
        return skewed_only(quick)
    started = results.begin()
    sizes = {"quick": quick, "decommission": "100 brokers" if not quick else "100 brokers (quick)",
             "service_cluster": "1000 brokers x 1,000,000 partitions" if not quick else "100 brokers x 10,000 partitions",
             "large_rebalance": "1000+50 brokers x 1,000,000 partitions" if not quick else "100+5 brokers x 10,000 partitions"}
    figures: dict[str, object] = {}
    notes: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="bench-planner-"))
    zk = LocalZooKeeper(port=0, data_dir=work / "zk", fsync=False, stop_with_parent=True, heap_mb=1024)
    zk.start(timeout=90)
    over_bound = 0
    try:
        why = kafka_utils_ready()
        if why:
            notes.append(f"kafka-utils cannot run here: {why}")

        # 1. Decommission 1 of 100 brokers, ~77,000 replicas.
        n_topics, parts = (40, 60) if quick else (257, 100)
        decom = kafka_like(100, [(f"decom-{t:03d}", parts) for t in range(n_topics)], 3, seed=1)
        replicas = sum(len(p["replicas"]) for t in decom["topics"] for p in t["partitions"])
        hosts_d = f"{zk.connect_string}/decommission"
        ensure_chroot(zk.connect_string, "/decommission")
        load_s = load_into_zookeeper(hosts_d, decom)
        print(f"decommission cluster: 100 brokers, {replicas} replicas, loaded into ZooKeeper in {load_s:.1f}s")
        our_s, rep = ours(hosts_d, "decommission", [99], work / "ours-decom.json")
        over_bound += rep["moves"] - rep["lower_bound"]
        print(f"  ours:        {our_s:8.2f}s  moves={rep['moves']} lower_bound={rep['lower_bound']} fair={rep['fair']}")
        ku_s = None
        if not why:
            ku_s, err = theirs(hosts_d, ["decommission", "99", "--max-partition-movements", NO_CAP,
                                         "--max-leader-changes", NO_CAP], work / "ku-decom.json", work)
            if err:
                notes.append(f"kafka-utils decommission failed: {err}")
            else:
                ku_moves = count_moves(decom, json.loads((work / "ku-decom.json").read_text()))
                print(f"  kafka-utils: {ku_s:8.2f}s  moves={ku_moves} (lower bound {rep['lower_bound']})")
                figures["kafka_utils_decommission_moves"] = ku_moves
                figures["kafka_utils_decommission_seconds"] = round(ku_s, 3)
        cold_d = ours_cold(hosts_d, ["--decommission-broker", "99", "--dry-run"])
        print(f"  ours, cold:  {cold_d:8.2f}s  (kafka-reassign --zookeeper --decommission-broker 99 --dry-run, a fresh process)")
        figures["decommission_cold_seconds"] = round(cold_d, 3)
        if ku_s is not None:
            figures["decommission_cold_speedup_vs_kafka_utils"] = round(ku_s / cold_d, 2)
        figures["decommission_moves"] = rep["moves"]
        figures["decommission_lower_bound"] = rep["lower_bound"]
        figures["decommission_seconds"] = round(our_s, 3)

        # 2. Expand 30 -> 32 brokers.
        e_topics, e_parts = (20, 30) if quick else (150, 60)
        expand = kafka_like(32, [(f"expand-{t:03d}", e_parts) for t in range(e_topics)], 3, seed=2, used=30)
        e_replicas = sum(len(p["replicas"]) for t in expand["topics"] for p in t["partitions"])
        hosts_e = f"{zk.connect_string}/expand"
        ensure_chroot(zk.connect_string, "/expand")
        load_into_zookeeper(hosts_e, expand)
        print(f"expansion cluster: 30 -> 32 brokers, {e_topics * e_parts} partitions, {e_replicas} replicas")
        our_e, rep_e = ours(hosts_e, "rebalance", None, work / "ours-expand.json")
        over_bound += rep_e["moves"] - rep_e["lower_bound"]
        print(f"  ours:        {our_e:8.2f}s  moves={rep_e['moves']} lower_bound={rep_e['lower_bound']} fair={rep_e['fair']} leaders_fair={rep_e['leaders_fair']}")
        if not why:
            ku_e, err = theirs(hosts_e, ["rebalance", "--brokers", "--leaders", "--max-partition-movements", NO_CAP,
                                         "--max-leader-changes", NO_CAP], work / "ku-expand.json", work)
            if err:
                notes.append(f"kafka-utils rebalance failed: {err}")
            else:
                ku_moves = count_moves(expand, json.loads((work / "ku-expand.json").read_text()))
                print(f"  kafka-utils: {ku_e:8.2f}s  moves={ku_moves} (lower bound {rep_e['lower_bound']})")
                figures["kafka_utils_expand_moves"] = ku_moves
                figures["kafka_utils_expand_seconds"] = round(ku_e, 3)
        cold_e = ours_cold(hosts_e, ["--rebalance"])
        print(f"  ours, cold:  {cold_e:8.2f}s  (kafka-reassign --zookeeper --rebalance, a fresh process)")
        figures["expand_cold_seconds"] = round(cold_e, 3)
        if "kafka_utils_expand_seconds" in figures:
            figures["expand_cold_speedup_vs_kafka_utils"] = round(figures["kafka_utils_expand_seconds"] / cold_e, 2)
        figures["expand_moves"] = rep_e["moves"]
        figures["expand_lower_bound"] = rep_e["lower_bound"]
        figures["expand_seconds"] = round(our_e, 3)

        # 2b. The same expansion from the planner service's warm model.
        svc = Service(hosts_e, work, "service-expand")
        try:
            t0 = time.time()
            svc.settled(300)
            print(f"  service: model + Spark + first proposal in {time.time() - t0:.1f}s")
            runs = [svc.fresh_plan(list(range(32)), work / "service-expand.json") for _ in range(3)]
        finally:
            svc.stop()
        warm_e = sorted(t for t, _ in runs)[1]
        prop = runs[0][1]
        assert all(r[1]["reassignment"] == prop["reassignment"] for r in runs), "warm plans differ"
        over_bound += prop["report"]["moves"] - prop["report"]["lower_bound"]
        print(f"  warm:        {warm_e:8.2f}s  moves={prop['report']['moves']} lower_bound={prop['report']['lower_bound']} "
              f"(median of 3; planned in {prop['seconds']:.2f}s, tasks {prop['tasks_ran']})")
        figures["warm_expand_seconds"] = round(warm_e, 3)

        # 4. The planner service on 1,000 brokers and 1,000,000 partitions.
        nb4, used4, nt4, np4 = (100, 95, 50, 200) if quick else (1000, 950, 1000, 1000)
        hosts_l = f"{zk.connect_string}/large"
        ensure_chroot(zk.connect_string, "/large")
        load_s = load_large_into_zookeeper(hosts_l, nb4, used4, nt4, np4)
        print(f"service cluster: {nb4} brokers ({nb4 - used4} empty), {nt4 * np4} partitions RF 3, "
              f"loaded into ZooKeeper in {load_s:.1f}s")
        svc = Service(hosts_l, work, "service-large")
        try:
            t0 = time.time()
            svc.wait(lambda s: s["model"]["ready"], 900, "the large model", 0.2)
            build_s = time.time() - t0
            first = svc.settled(900)["proposal"]
            print(f"  model built in {build_s:.1f}s; first proposal after {time.time() - t0:.1f}s "
                  f"(planned in {first['seconds']:.1f}s)")
            warm_l, prop_l = svc.fresh_plan(list(range(nb4)), work / "service-large.json")
            r_l = prop_l["report"]
            over_bound += r_l["moves"] - r_l["lower_bound"]
            print(f"  warm proposal {warm_l:.1f}s: moves={r_l['moves']} lower_bound={r_l['lower_bound']} "
                  f"fair={r_l['fair']} tasks {prop_l['tasks_ran']}")
            version = svc.call("GET", "/state")["model"]["version"]
            joined_at = register_broker(hosts_l, nb4)
            svc.wait(lambda s: nb4 in s["model"]["brokers"], 120, "the new broker in the model", 0.01)
            refresh_s = time.time() - joined_at
            svc.wait(lambda s: s["proposal"] and s["proposal"]["current"] and s["proposal"]["model_version"] > version,
                     900, "a proposal with the new broker", 0.2)
            proposal_refresh_s = time.time() - joined_at
            assert nb4 in svc.call("GET", "/proposals")["report"]["target_brokers"]
            print(f"  broker {nb4} joined: in the model after {refresh_s:.2f}s, in the proposal after "
                  f"{proposal_refresh_s:.1f}s")
        finally:
            svc.stop()
        figures["service_model_build_seconds"] = round(build_s, 3)
        figures["proposal_refresh_seconds"] = round(proposal_refresh_s, 3)

        # 5. Disk capacity on a skewed cluster; its figures print last.
        skewed = skewed_section(zk.connect_string, work, quick, why, notes)
    finally:
        zk.stop()

    # 3. The large rebalance on Spark local[2].
    nb, nt, np_, added = (100, 50, 200, 5) if quick else (1000, 1000, 1000, 50)
    big = work / "large.msgpack"
    t0 = time.time()
    large_snapshot(big, nb, nt, np_, added)
    print(f"large cluster: {nb} + {added} brokers, {nt * np_} partitions RF 3 (snapshot written in {time.time() - t0:.1f}s)")
    t0 = time.time()
    spark = api.get_spark("local[2]", app_name="bench-planner")
    start_s = time.time() - t0
    try:
        # Warm Spark's Python workers with the same decommission as above, for the warm figure.
        snap_d = decom
        t0 = time.time()
        api.plan(snap_d, "decommission", brokers=[99], spark=spark, assume_valid=True)
        figures["decommission_plan_on_spark_seconds"] = round(time.time() - t0, 3)
        t0 = time.time()
        snap = snapshot.load(big)
        load_big = time.time() - t0
        result = api.plan(snap, "rebalance", spark=spark, assume_valid=True, throttle=50 * 2**20)
        (work / "large-plan.json").write_bytes(plan_json(result.reassignment))
        (work / "large-report.json").write_text(json.dumps(result.report))
        large_s = time.time() - t0
    finally:
        spark.stop()
    r = result.report
    over_bound += r["moves"] - r["lower_bound"]
    print(f"  spark start {start_s:.1f}s; load {load_big:.1f}s; load+plan+write {large_s:.1f}s; moves={r['moves']} "
          f"lower_bound={r['lower_bound']} fair={r['fair']} leaders_fair={r['leaders_fair']} waves={r['waves']} "
          f"estimated {r['estimated_seconds']:.0f}s at 50 MiB/s (bound {r['lower_bound_seconds']:.0f}s)")
    figures["large_moves"] = r["moves"]
    figures["large_lower_bound"] = r["lower_bound"]
    figures["spark_start_seconds"] = round(start_s, 3)

    for n in notes:
        print(f"note: {n}")
    shutil.rmtree(work, ignore_errors=True)
    if "kafka_utils_decommission_seconds" in figures:
        speedup = figures["kafka_utils_decommission_seconds"] / figures["decommission_seconds"]
        # Ours in this process (imports and interpreter already paid): not cold against cold.
        figures["decommission_in_process_speedup_vs_kafka_utils"] = round(speedup, 2)
    figures["moves_over_lower_bound"] = over_bound
    figures["large_rebalance_seconds"] = round(large_s, 2)
    ku_e = figures.get("kafka_utils_expand_seconds")
    if ku_e:
        figures["warm_expand_speedup_vs_kafka_utils"] = round(ku_e / warm_e, 1)
    figures["warm_proposal_seconds"] = round(warm_l, 2)
    figures["model_refresh_seconds"] = round(refresh_s, 3)
    figures.update(skewed)
    results.finish("planner", figures, peer=PEER, sizes=sizes, notes=notes + [WARM_NOTE], started=started)
    return 0


def ensure_chroot(connect: str, path: str) -> None:
    zk = KazooClient(hosts=connect, timeout=30)
    zk.start(timeout=60)
    try:
        zk.ensure_path(path)
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    sys.exit(main())
