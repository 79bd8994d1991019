"""The planner's Python API (what ``kafka-reassign --rebalance`` / ``--decommission-broker``
and ``python -m spark_jobs.plan`` call).

Usage::

    from spark_jobs import api, snapshot

    snap = snapshot.load("cluster.json")
    result = api.plan(snap, "decommission", brokers=[3])            # in-process, no JVM
    spark = api.get_spark("local[2]")
    result = api.plan(snap, "rebalance", spark=spark)                # per-topic work on Spark
    result.reassignment    # {"version": 1, "partitions": [...]}, Kafka's reassignment JSON
    result.report          # moves, lower bound, bytes, per-broker counts before/after, ...
    result.batches         # waves, see spark_jobs.batching

``mode`` is one of "rebalance", "decommission", "add-brokers", "replication-factor".
``brokers`` is the mode's broker argument: the brokers to drain (decommission), to add
(add-brokers), or the broker list (rebalance, replication-factor). ``broker_list`` restricts the
base broker set in any mode. The same input gives the same plan with or without Spark.

Where the work runs: targets, rack totals, the topic-by-broker quotas and the leaders are
global and run on the driver (numpy); each topic's quotas become concrete partition moves in
Spark tasks (:mod:`spark_jobs.realize`); fleet mode runs one task per cluster.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from spark_jobs import batching, core, snapshot as snapshots
from spark_jobs import capacity as capacities


# ``local-cluster[N,cores,memMB]``: N standalone workers in the driver's JVM, each running its
# executor as a separate JVM (CoarseGrainedExecutorBackend) that the worker relaunches when it
# dies; a worker refuses an executor larger than its memMB, and Spark's default executor memory
# (1g) is larger than the small workers tests use, so the executor gets the worker's memory.
LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*(\d+)\s*\]")


@dataclass
class PlanResult:
    reassignment: dict
    report: dict
    batches: dict
    moves: list


def get_spark(master: str = "local[*]", app_name: str = "reassignd-planner"):
    """A SparkSession for the planner (reuses an active one). Workers run this Python."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if master.startswith("local"):
        # A local session talks to itself over loopback only.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    cluster = LOCAL_CLUSTER.fullmatch(master)
    if cluster:
        builder = builder.config("spark.executor.memory", f"{cluster.group(1)}m")
    spark = (
        builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", os.environ.get("REASSIGND_SPARK_DRIVER_MEMORY", "4g"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        _ship_package(spark)
    return spark


def _ship_package(spark) -> None:
    """Send spark_jobs to remote executors (local masters import it from this install)."""
    root = Path(__file__).resolve().parent
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(root.glob("*.py")):
            z.write(f, f"spark_jobs/{f.name}")
    path = Path(tempfile.mkdtemp(prefix="reassignd-")) / "spark_jobs.zip"
    path.write_bytes(buf.getvalue())
    spark.sparkContext.addPyFile(str(path))


def spark_mapper(spark):
    sc = spark.sparkContext

    def run(fn, items):
        if not items:
            return []
        slices = max(1, min(len(items), 4 * sc.defaultParallelism))
        return sc.parallelize(items, slices).map(fn).collect()

    return run


def plan(
    snapshot: dict,
    mode: str,
    *,
    brokers=None,
    broker_list=None,
    topics=None,
    replication_factor=None,
    fix_racks: bool = False,
    capacity: capacities.CapacitySpec | None = None,
    disk_threshold: float = capacities.DEFAULT_THRESHOLD,
    spark=None,
    max_in: int = batching.DEFAULT_MAX_IN,
    max_out: int = batching.DEFAULT_MAX_OUT,
    throttle: int | None = None,
    assume_valid: bool = False,
    leaders_excluded=None,
) -> PlanResult:
    """Plan one cluster. SnapshotError for a bad snapshot, PlanError for an impossible request.

    ``capacity`` (:func:`spark_jobs.capacity.load_file`) gives disk capacities; with it, or
    with capacities the snapshot reports, no target broker ends above ``disk_threshold`` of its
    disk (PlanError saying why when no plan can). ``assume_valid`` skips re-validating a snapshot that came from ``snapshot.load`` or
    ``snapshot.validate`` (seconds saved on millions of partitions). ``leaders_excluded``:
    brokers that lead nothing the plan orders (Cruise Control's recently demoted brokers); the
    preferred leaders are balanced over the other target brokers.
    """
    snap = snapshot if assume_valid else snapshots.validate(snapshot)
    req = core.PlanRequest(
        mode=mode,
        brokers=list(brokers) if brokers is not None else None,
        broker_list=list(broker_list) if broker_list is not None else None,
        topics=list(topics) if topics is not None else None,
        replication_factor=replication_factor,
        fix_racks=fix_racks,
        capacity=capacity,
        disk_threshold=disk_threshold,
        leaders_excluded=list(leaders_excluded) if leaders_excluded is not None else None,
    )
    mapper = spark_mapper(spark) if spark is not None else None
    out = core.plan_cluster(snap, req, mapper)
    batches = batching.make_batches(out.moves, max_in=max_in, max_out=max_out, throttle=throttle)
    report = dict(out.report)
    report["estimated_seconds"] = batches["estimated_seconds"]
    report["lower_bound_seconds"] = batches["lower_bound_seconds"]
    report["waves"] = len(batches["waves"])
    return PlanResult(out.reassignment, report, batches, out.moves)


def _plan_one(item):
    """Fleet task: (name, format, bytes, request kwargs) -> (name, result or error text)."""
    name, fmt, data, kwargs = item
    try:
        snap = snapshots.loads(data, fmt, name)
        return name, plan(snap, assume_valid=True, **kwargs), None
    except ValueError as e:  # SnapshotError, PlanError: reported per cluster
        return name, None, str(e)


def plan_fleet(files: list, *, spark=None, **kwargs) -> list:
    """Plan many snapshot files in one Spark job (one task per cluster).

    Returns [(file name, PlanResult or None, error or None)] in file-name order.
    """
    items = []
    for f in sorted(files, key=lambda p: Path(p).name):
        fmt = snapshots.format_for(f)
        try:
            data = Path(f).read_bytes()
        except OSError as e:
            raise snapshots.SnapshotError(str(f), f"cannot read: {e.strerror or e}") from None
        items.append((Path(f).name, fmt, data, kwargs))
    if spark is None:
        return [_plan_one(i) for i in items]
    sc = spark.sparkContext
    return sc.parallelize(items, max(1, len(items))).map(_plan_one).collect()
