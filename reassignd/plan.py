"""`python -m spark_jobs.plan`: plan a reassignment from a snapshot on Spark (:mod:`spark_jobs.api`;
the files it writes: :mod:`spark_jobs.outputs`).

Usage::

    python -m spark_jobs.plan --snapshot cluster.json --rebalance --out plan.json \\
        --report report.json --batches batches.json --chart chart.png --throttle 10485760
    python -m spark_jobs.plan --snapshot cluster.msgpack --decommission-broker 3,4 --out plan.json
    python -m spark_jobs.plan --snapshot cluster.json --add-brokers 7,8 --out plan.json
    python -m spark_jobs.plan --snapshot cluster.json --replication-factor 3 --topics orders --out plan.json
    python -m spark_jobs.plan --snapshot cluster.json --rebalance --capacity capacity.json --disk-threshold 0.8 --out plan.json
    python -m spark_jobs.plan --snapshot clusters/ --rebalance --out plans/      # fleet mode
    python -m spark_jobs.plan --snapshot cluster.json --rebalance-disks --out plan.json --report report.json
    spark-submit spark_jobs/plan.py --snapshot cluster.json --rebalance --out plan.json --master local[2]

PLAN.json is Kafka's reassignment JSON and lists only partitions whose replica list changes
(order included). Fleet mode (``--snapshot DIR``) plans every .json/.msgpack/.mpk snapshot in
the directory in one Spark job and writes ``NAME.plan.json``, ``NAME.report.json`` and
``NAME.batches.json`` (and ``NAME.png`` with ``--chart DIR``) into ``--out DIR``.

``--rebalance-disks`` balances the log directories inside each broker instead (Cruise Control's
``rebalance_disk``, :mod:`spark_jobs.disks`): it asks every registered broker of the snapshot
(its host and port) for its directories through DescribeLogDirs and writes intra-broker moves,
replicas unchanged and ``log_dirs`` naming each moved replica's new directory, for
``kafka-reassign --execute``. No Spark; ``--broker-list`` limits the brokers,
``--disk-threshold`` is the share of a directory no move fills past, ``--disk-balance-band``
how far from its broker's mean a directory may stay.

Exit codes: 0 done, 1 bad snapshot or impossible plan, 2 bad arguments. Nothing is written
unless the whole plan succeeds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reassignd.args import USAGE_EXIT, Parser, UsageError
from spark_jobs import api, batching, capacity, chart, disks
from spark_jobs import snapshot as snapshots
from spark_jobs.errors import PlanError, SnapshotError
from spark_jobs.outputs import json_bytes, output_files, write_all

# The name it has always been run by (README, docker's planner image, the demo).
PROG = "python -m spark_jobs.plan"


def _ids(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated broker ids, got {text!r}") from None
    if not out or any(x < 0 for x in out):
        raise argparse.ArgumentTypeError(f"expected comma-separated non-negative broker ids, got {text!r}")
    return out


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _fraction(text: str) -> float:
    try:
        return capacity.check_threshold(float(text))
    except (ValueError, capacity.CapacityError):
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}") from None


def _band(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {text!r}")
    return v


def _topics(text: str) -> list[str]:
    out = [t.strip() for t in text.split(",") if t.strip()]
    if not out:
        raise argparse.ArgumentTypeError("expected comma-separated topic names")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Plan a KIP-6 reassignment (fair counts, fewest moves) on Spark.")
    p.add_argument("--snapshot", required=True, metavar="FILE|DIR")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--rebalance", action="store_true")
    mode.add_argument("--decommission-broker", type=_ids, metavar="IDS")
    mode.add_argument("--add-brokers", type=_ids, metavar="IDS")
    mode.add_argument("--replication-factor", type=_positive, metavar="N")
    mode.add_argument("--rebalance-disks", action="store_true",
                      help="balance the log directories inside each broker (intra-broker moves, log_dirs)")
    p.add_argument("--topics", type=_topics, metavar="T,...", help="only these topics (default: all)")
    p.add_argument("--broker-list", type=_ids, metavar="IDS", help="the broker set (default: every broker in the snapshot)")
    p.add_argument("--out", required=True, metavar="PLAN.json|DIR")
    p.add_argument("--batches", metavar="BATCHES.json")
    p.add_argument("--report", metavar="REPORT.json")
    p.add_argument("--chart", metavar="CHART.png|CHART.svg|DIR",
                   help="the before/after chart, PNG or SVG by the suffix (a directory in fleet mode: NAME.png each); "
                        "needs matplotlib (pip install 'reassignd[charts]')")
    p.add_argument("--master", default="local[*]", metavar="URL", help="Spark master (default local[*])")
    p.add_argument("--fix-racks", action="store_true", help="also repair existing rack violations")
    p.add_argument("--capacity", metavar="CAPACITY.json",
                   help="disk capacities, Cruise Control's capacity file (DISK in MiB, brokerId -1 the default)")
    p.add_argument("--disk-threshold", type=_fraction, default=capacity.DEFAULT_THRESHOLD, metavar="F",
                   help=f"no broker's disk above this share of its capacity (default {capacity.DEFAULT_THRESHOLD})")
    p.add_argument("--disk-balance-band", type=_band, default=disks.DEFAULT_BAND, metavar="F",
                   help=f"--rebalance-disks: a directory within F x its broker's mean use is balanced "
                        f"(default {disks.DEFAULT_BAND})")
    p.add_argument("--log-dirs-timeout", type=_positive, default=10, metavar="S",
                   help="--rebalance-disks: seconds to wait for each broker's DescribeLogDirs (default 10)")
    p.add_argument("--max-in", type=_positive, default=batching.DEFAULT_MAX_IN, metavar="N")
    p.add_argument("--max-out", type=_positive, default=batching.DEFAULT_MAX_OUT, metavar="N")
    p.add_argument("--throttle", type=_positive, metavar="BYTES_PER_S")
    return p


def _request(args) -> dict:
    if args.rebalance:
        mode, brokers = "rebalance", None
    elif args.decommission_broker:
        mode, brokers = "decommission", args.decommission_broker
    elif args.add_brokers:
        mode, brokers = "add-brokers", args.add_brokers
    else:
        mode, brokers = "replication-factor", None
    return {
        "mode": mode,
        "brokers": brokers,
        "broker_list": args.broker_list,
        "topics": args.topics,
        "replication_factor": args.replication_factor,
        "fix_racks": args.fix_racks,
        "capacity": capacity.load_file(args.capacity) if args.capacity else None,
        "disk_threshold": args.disk_threshold,
        "max_in": args.max_in,
        "max_out": args.max_out,
        "throttle": args.throttle,
    }


def main(argv: list[str] | None = None, *, spark=None) -> int:
    """Run the command; ``spark`` reuses a session (left running) instead of starting one."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE_EXIT
    src = Path(args.snapshot)
    fleet = src.is_dir()
    if args.rebalance_disks:
        return _rebalance_disks(args, src)
    try:
        req = _request(args)
        if args.chart:
            try:  # a chart that cannot be written is refused before Spark starts
                chart.check_chart_path(Path(args.chart) / "x.png" if fleet else args.chart)
            except chart.ChartError as e:
                raise UsageError(f"{PROG}: error: --chart: {e}") from None
        if fleet:
            out_dir = Path(args.out)
            if out_dir.exists() and not out_dir.is_dir():
                raise UsageError(f"{PROG}: error: --snapshot is a directory, so --out must be one too")
            if args.batches or args.report:
                raise UsageError(f"{PROG}: error: in fleet mode batches and reports go to --out DIR")
            files = sorted(f for f in src.iterdir() if f.is_file() and f.suffix.lower() in (".json", ".msgpack", ".mpk"))
            if not files:
                raise SnapshotError(str(src), "no .json, .msgpack or .mpk snapshots in this directory")
        else:
            snap = snapshots.load(src)
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE_EXIT
    except (SnapshotError, capacity.CapacityError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    owned = spark is None
    if owned:
        spark = api.get_spark(args.master)
    try:
        if fleet:
            return _fleet(spark, files, req, args)
        try:
            result = api.plan(snap, spark=spark, assume_valid=True, **req)
        except (PlanError, SnapshotError, ValueError) as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 1
        outs = output_files(
            result,
            Path(args.out),
            Path(args.batches) if args.batches else None,
            Path(args.report) if args.report else None,
            Path(args.chart) if args.chart else None,
        )
        try:
            write_all(outs)
        except OSError as e:
            print(f"{PROG}: cannot write output: {e}", file=sys.stderr)
            return 1
        r = result.report
        print(
            f"{r['mode']}: {r['partitions_changed']} partitions change, {r['moves']} moves "
            f"(lower bound {r['lower_bound']}), fair={r['fair']} leaders_fair={r['leaders_fair']}, "
            f"{len(result.batches['waves'])} waves -> {args.out}"
        )
        cap = r.get("capacity")
        if cap:
            print(
                f"disk: peak use {cap['peak_use_before']:.1%} before, {cap['peak_use_count_plan']:.1%} with counts only, "
                f"{cap['peak_use_after']:.1%} planned (threshold {cap['threshold']:.0%}); "
                f"{cap['extra_moves']} moves for the capacity goal"
            )
        return 0
    finally:
        if owned:
            spark.stop()


def _fleet(spark, files, req, args) -> int:
    results = api.plan_fleet(files, spark=spark, **req)
    out_dir = Path(args.out)
    chart_dir = Path(args.chart) if args.chart else None
    outs = []
    summary = []
    failed = 0
    for name, result, error in results:
        stem = Path(name).stem
        if error is not None:
            failed += 1
            summary.append({"snapshot": name, "error": error})
            print(f"{PROG}: {error}", file=sys.stderr)
            continue
        outs += output_files(
            result,
            out_dir / f"{stem}.plan.json",
            out_dir / f"{stem}.batches.json",
            out_dir / f"{stem}.report.json",
            chart_dir / f"{stem}.png" if chart_dir else None,
        )
        r = result.report
        summary.append({"snapshot": name, "moves": r["moves"], "lower_bound": r["lower_bound"], "fair": r["fair"]})
    out_dir.mkdir(parents=True, exist_ok=True)
    if chart_dir:
        chart_dir.mkdir(parents=True, exist_ok=True)
    outs.append((out_dir / "fleet.json", json_bytes({"version": 1, "clusters": summary})))
    write_all(outs)
    print(f"fleet: {len(results) - failed} planned, {failed} failed -> {out_dir}")
    return 1 if failed else 0


# What --rebalance-disks does not read: it plans no inter-broker move, so none of these apply.
NOT_FOR_DISKS = ("topics", "batches", "chart", "capacity", "fix_racks", "replication_factor", "throttle")


def _rebalance_disks(args, src: Path) -> int:
    """--rebalance-disks: the brokers' directories over DescribeLogDirs, the pure plan
    (spark_jobs.disks), then the plan and report files, all or none."""
    import asyncio

    from spark_jobs.logdirs import query_layouts
    from spark_jobs.outputs import plan_json

    given = [f"--{k.replace('_', '-')}" for k in NOT_FOR_DISKS if getattr(args, k, None) not in (None, False)]
    if given:
        print(f"{PROG}: error: --rebalance-disks moves replicas between directories only; "
              f"{', '.join(given)} do not apply", file=sys.stderr)
        return USAGE_EXIT
    if src.is_dir():
        print(f"{PROG}: error: --rebalance-disks reads one snapshot, not a directory", file=sys.stderr)
        return USAGE_EXIT
    try:
        snap = snapshots.load(src)
    except SnapshotError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    known = {b["id"] for b in snap["brokers"]}
    wanted = args.broker_list or sorted(known)
    unknown = sorted(set(wanted) - known)
    if unknown:
        print(f"{PROG}: --broker-list: broker(s) {', '.join(map(str, unknown))} not in the snapshot", file=sys.stderr)
        return 1
    endpoints = {b["id"]: (b["host"], b["port"]) if b.get("alive", True) and b["host"] and b["port"] else None
                 for b in snap["brokers"] if b["id"] in wanted}
    layouts = asyncio.run(query_layouts(endpoints, timeout=float(args.log_dirs_timeout)))
    assignments = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    try:
        plan = disks.plan_disks(layouts, assignments, band=args.disk_balance_band, threshold=args.disk_threshold)
    except PlanError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    report = plan.report()
    outs = [(Path(args.out), plan_json(plan.reassignment()))]
    if args.report:
        outs.append((Path(args.report), json_bytes(report)))
    try:
        write_all(outs)
    except OSError as e:
        print(f"{PROG}: cannot write output: {e}", file=sys.stderr)
        return 1
    for s in report["brokers_skipped"]:
        print(f"broker {s['broker']}: no move: {s['reason']}", file=sys.stderr)
    print(f"rebalance-disks: {report['moves']} intra-broker moves ({report['bytes_moved']} bytes) on "
          f"{len({m['broker'] for m in report['moves_listed']})} brokers, {report['unmovable_count']} replicas "
          f"unmovable -> {args.out}")
    return 0
