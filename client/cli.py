"""kafka-reassign: move partition replicas between brokers, shaped like Kafka's
kafka-reassign-partitions.sh, with the options of KIP-179 (admin API, --progress, auto-removed
throttles), KIP-236 (--cancel, queued batches), KIP-240 (--list, --describe) and KIP-6
(--rebalance, --decommission-broker).

Examples::

    # propose a layout for two topics over brokers 1-4 (Kafka's old algorithm)
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2,3,4
    # start it with a 10 MB/s throttle the controller removes when done, then watch it
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --execute \\
        --reassignment-json-file plan.json --throttle 10000000
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --progress --watch \\
        --reassignment-json-file plan.json
    # the same as a chart of each broker's bytes remaining over time (the active controller's
    # samples, from its operations port)
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --progress --reassignment-json-file plan.json \\
        --chart progress.png --chart-data progress.csv --ops http://127.0.0.1:9191
    # a JSON whose log_dirs name directories also moves replicas between a broker's disks
    # (KIP-113), throttled; --verify removes that throttle once every move is done
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --execute \\
        --reassignment-json-file plan.json --replica-alter-log-dirs-throttle 50000000
    # drain broker 3 (KIP-6: planned with the fewest moves and started at once)
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --decommission-broker 3 --throttle 10000000
    # move every leadership off broker 3, no data moved (Cruise Control's demote_broker)
    kafka-reassign --bootstrap-server 127.0.0.1:9190 --demote-broker 3
    # the same against ZooKeeper directly (deprecated; --verify removes the throttle)
    kafka-reassign --zookeeper 127.0.0.1:2181/kafka --execute --reassignment-json-file plan.json
    kafka-reassign --zookeeper 127.0.0.1:2181/kafka --verify --reassignment-json-file plan.json

Every input is validated before anything is sent or written; a bad input changes nothing.

Exit codes (also in ``--help``)::

{exit_table}
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import re
import sys
import urllib.parse

from client import commands, exit_codes, planner
from client.errors import InputError, ReassignError
from client.inputs import (
    INT32_MAX,
    parse_broker_id,
    parse_broker_list,
    parse_reassignment,
    parse_throttle,
    parse_topics_to_move,
    read_json_file,
)
from znodes import strategies as strategy_names

__doc__ = __doc__.replace("{exit_table}", exit_codes.table_text("    "))

PROG = "kafka-reassign"
DEFAULT_TIMEOUT_MS = 30_000
# --progress: seconds between the two samples a rate is measured from; --watch: between redraws.
DEFAULT_SAMPLE_INTERVAL_S = 1.0
DEFAULT_WATCH_INTERVAL_S = 2.0
# A day between two progress samples is already no watch at all: anything longer is a typo
# (1e308 would sleep for ever after the first sample).
MAX_INTERVAL_S = 86_400.0

DEPRECATION_WARNING = (
    "Warning: --zookeeper is deprecated and will be removed in a future version of "
    f"{PROG}. Use --bootstrap-server instead."
)

# action dest -> (its flag, options it accepts, options it requires)
ACTIONS: dict[str, tuple[str, set[str], set[str]]] = {
    "execute": ("--execute", {"reassignment_json_file", "throttle", "additional", "dry_run", "elect_preferred",
                              "skip_isr_check", "replica_alter_log_dirs_throttle", "movement_strategy"},
                {"reassignment_json_file"}),
    "verify": ("--verify", {"reassignment_json_file", "dry_run", "preserve_throttles"}, {"reassignment_json_file"}),
    "progress": ("--progress", {"reassignment_json_file", "watch", "interval", "chart", "chart_data", "ops"},
                 {"reassignment_json_file"}),
    "cancel": ("--cancel", {"reassignment_json_file", "dry_run", "preserve_throttles"}, set()),
    "list": ("--list", set(), set()),
    "describe": ("--describe", set(), set()),
    "generate": ("--generate", {"topics_to_move_json_file", "broker_list", "disable_rack_aware"},
                 {"topics_to_move_json_file", "broker_list"}),
    "execute_queue": ("--execute-queue", {"reassignment_json_file", "dry_run"}, {"reassignment_json_file"}),
    "verify_queue": ("--verify-queue", {"reassignment_json_file"}, {"reassignment_json_file"}),
    "generate_queue": ("--generate-queue", {"topics_to_move_json_file", "broker_list", "disable_rack_aware"},
                       {"topics_to_move_json_file", "broker_list"}),
    "rebalance": ("--rebalance", {"topics_to_move_json_file", "broker_list", "spark_master", "planner",
                                  "excluded_topics", "excluded_brokers_for_replica_move",
                                  "concurrent_partition_movements_per_broker", "max_partition_movements_in_cluster"},
                  set()),
    "decommission_broker": ("--decommission-broker", {"throttle", "additional", "dry_run", "spark_master", "planner",
                                                      "excluded_topics", "excluded_brokers_for_replica_move",
                                                      "concurrent_partition_movements_per_broker",
                                                      "max_partition_movements_in_cluster"},
                            set()),
    "demote_broker": ("--demote-broker", {"dry_run", "planner"}, set()),
}

# Cruise Control's request options, which only the planner service (--planner) takes.
SERVICE_OPTIONS = ("excluded_topics", "excluded_brokers_for_replica_move", "concurrent_partition_movements_per_broker",
                   "max_partition_movements_in_cluster")

OPTION_FLAGS = {
    "reassignment_json_file": "--reassignment-json-file",
    "topics_to_move_json_file": "--topics-to-move-json-file",
    "broker_list": "--broker-list",
    "throttle": "--throttle",
    "replica_alter_log_dirs_throttle": "--replica-alter-log-dirs-throttle",
    "additional": "--additional",
    "preserve_throttles": "--preserve-throttles",
    "dry_run": "--dry-run",
    "elect_preferred": "--elect-preferred",
    "skip_isr_check": "--skip-isr-check",
    "movement_strategy": "--movement-strategy",
    "watch": "--watch",
    "interval": "--interval",
    "disable_rack_aware": "--disable-rack-aware",
    "spark_master": "--spark-master",
    "planner": "--planner",
    "excluded_topics": "--excluded-topics",
    "excluded_brokers_for_replica_move": "--excluded-brokers-for-replica-move",
    "concurrent_partition_movements_per_broker": "--concurrent-partition-movements-per-broker",
    "max_partition_movements_in_cluster": "--max-partition-movements-in-cluster",
    "chart": "--chart",
    "chart_data": "--chart-data",
    "ops": "--ops",
}


class UsageError(InputError):
    """A command-line problem (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and sys.exit(2)
        raise UsageError(message)


def installed_version() -> str:
    """reassignd's version as installed (pyproject.toml's), or "unknown" run from a bare tree."""
    try:
        return importlib.metadata.version("reassignd")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Move partition replicas between brokers (kafka-reassign-partitions.sh with KIP-179, "
            "KIP-236, KIP-240 and KIP-6).\nGive exactly one of --bootstrap-server or --zookeeper, "
            "and exactly one action."
        ),
        epilog=(
            "examples:\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --generate \\\n"
            "      --topics-to-move-json-file topics.json --broker-list 1,2,3,4\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --execute \\\n"
            "      --reassignment-json-file plan.json --throttle 10000000\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --progress --watch --reassignment-json-file plan.json\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --progress --reassignment-json-file plan.json \\\n"
            "      --chart progress.png --ops http://127.0.0.1:9191   # bytes remaining per broker over time\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --verify --reassignment-json-file plan.json\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --cancel            # roll back every pending move\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --describe --output json\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --rebalance --broker-list 1,2,3,4,5,6\n"
            f"  {PROG} --bootstrap-server 127.0.0.1:9190 --decommission-broker 3 --throttle 10000000\n"
            f"  {PROG} --zookeeper 127.0.0.1:2181/kafka --execute-queue --reassignment-json-file next.json\n"
            "\n"
            "file formats:\n"
            '  --reassignment-json-file  {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}\n'
            '      optional per entry: "log_dirs":["/data/d1","any"] (one per replica; a directory is an intra-broker move)\n'
            '  --topics-to-move-json-file  {"version":1,"topics":[{"topic":"t"}]}\n'
            "\n"
            "exit codes:\n" + exit_codes.table_text()
        ),
    )
    p.add_argument("--version", action="version", version=f"{PROG} {installed_version()}",
                   help="print the version and exit (as Kafka's tools do)")
    conn = p.add_argument_group("connection (exactly one)")
    conn.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]",
                      help="the reassignd controller's admin listener (any instance)")
    conn.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                      help="DEPRECATED: write the znodes directly (no --progress, no automatic throttle removal)")
    conn.add_argument("--command-config", metavar="FILE",
                      help="Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.* "
                           "for the listener; zookeeper.auth.digest, zookeeper.ssl.* for --zookeeper")
    acts = p.add_argument_group("actions (exactly one)")
    acts.add_argument("--execute", action="store_true", help="start the reassignment in --reassignment-json-file")
    acts.add_argument("--verify", action="store_true",
                      help="check each partition of --reassignment-json-file; with --zookeeper also removes the throttle once none is in progress")
    acts.add_argument("--progress", action="store_true",
                      help="KIP-179 per-replica status (In sync / Behind), bytes remaining and ETA (--bootstrap-server only)")
    acts.add_argument("--cancel", action="store_true",
                      help="KIP-236: roll pending reassignments back to their original replicas (all, or those in --reassignment-json-file)")
    acts.add_argument("--list", action="store_true", help="KIP-240: list the running reassignments")
    acts.add_argument("--describe", action="store_true", help="KIP-240: describe the running reassignments")
    acts.add_argument("--generate", action="store_true",
                      help="propose a layout for --topics-to-move-json-file over --broker-list (Kafka's old algorithm)")
    acts.add_argument("--execute-queue", action="store_true",
                      help="KIP-236: queue --reassignment-json-file behind the running reassignments")
    acts.add_argument("--verify-queue", action="store_true", help="KIP-236: check a queued batch")
    acts.add_argument("--generate-queue", action="store_true",
                      help="like --generate, from the layout the running reassignments will leave")
    acts.add_argument("--rebalance", action="store_true",
                      help="KIP-6: propose fair replica counts with the fewest moves (of --topics-to-move-json-file, "
                           "default every topic; over --broker-list, default every broker)")
    acts.add_argument("--decommission-broker", metavar="ID",
                      help="KIP-6: move every replica off broker ID, fairly and with the fewest moves; executes at once")
    acts.add_argument("--demote-broker", metavar="ID[,ID...]",
                      help="move every leadership off these brokers without moving data (their replicas go last "
                           "in each replica list, then a preferred election); executes at once; --bootstrap-server "
                           "only; prints the rollback for --execute --elect-preferred")
    ins = p.add_argument_group("inputs")
    ins.add_argument("--reassignment-json-file", metavar="FILE")
    ins.add_argument("--topics-to-move-json-file", metavar="FILE")
    ins.add_argument("--broker-list", metavar="ID[,ID...]")
    opts = p.add_argument_group("options")
    opts.add_argument("--throttle", metavar="BYTES_PER_S",
                      help="inter-broker replication throttle for the moves (with --bootstrap-server removed automatically when done)")
    opts.add_argument("--replica-alter-log-dirs-throttle", metavar="BYTES_PER_S",
                      help="--execute: cap each broker's copies between its own log dirs (KIP-113: "
                           "replica.alter.log.dirs.io.max.bytes.per.second on the brokers with a log_dirs move; "
                           "--verify removes it when every move is done; --bootstrap-server only)")
    opts.add_argument("--additional", action="store_true",
                      help="--execute while other reassignments run (partitions not already moving)")
    opts.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    opts.add_argument("--preserve-throttles", action="store_true",
                      help="Kafka's: with --verify or --cancel, remove no throttle (--verify's removals with "
                           "--zookeeper, the log-dir throttle); throttles the controller removes by itself "
                           "(KIP-179, set by --execute --throttle) still go when their moves end")
    opts.add_argument("--elect-preferred", action="store_true",
                      help="--execute: wait until the reassignment finishes, then elect the moved partitions' "
                           "preferred leaders (ElectLeaders; --bootstrap-server only)")
    opts.add_argument("--skip-isr-check", action="store_true",
                      help="--execute: start the moves even while a partition's ISR is at or under its "
                           "min.insync.replicas (reassignd's controller holds them until it recovers)")
    opts.add_argument("--movement-strategy", metavar="STRATEGY[,STRATEGY...]",
                      help="--execute: the order these moves start in, the first strategy deciding and the next "
                           f"breaking its ties ({', '.join(strategy_names.STRATEGIES)}; Cruise Control's "
                           "replica_movement_strategies); default: the controller's replica_movement_strategies")
    opts.add_argument("--watch", action="store_true", help="--progress: redraw until the reassignment is done")
    opts.add_argument("--interval", metavar="SECONDS",
                      help=f"--progress: seconds between samples (default {DEFAULT_SAMPLE_INTERVAL_S:g}; "
                           f"{DEFAULT_WATCH_INTERVAL_S:g} with --watch)")
    opts.add_argument("--chart", metavar="FILE.png|FILE.svg",
                      help="--progress: also draw each broker's bytes remaining over time, with its throttle and ETA "
                           "(the active controller's history of the latest reassignment, running or finished; needs "
                           "--ops and matplotlib: pip install 'reassignd[charts]'); PNG or SVG by the suffix")
    opts.add_argument("--chart-data", metavar="FILE.csv",
                      help="--progress: also write that history as CSV (seconds, then bytes remaining per broker; needs --ops)")
    opts.add_argument("--ops", metavar="URL",
                      help="--chart/--chart-data: the active controller's operations port (--ops-listen), "
                           "e.g. http://127.0.0.1:9191")
    opts.add_argument("--disable-rack-aware", action="store_true", help="ignore broker racks when generating")
    opts.add_argument("--spark-master", metavar="URL",
                      help="--rebalance/--decommission-broker: plan on this Spark master (default: in-process, same plan)")
    opts.add_argument("--planner", metavar="URL",
                      help="--rebalance/--decommission-broker/--demote-broker: ask a running planner service "
                           "(reassignd planner serve, e.g. http://127.0.0.1:9300) instead of planning here")
    opts.add_argument("--excluded-topics", metavar="REGEX",
                      help="--planner: topics (whole names matching REGEX) whose replicas stay where they are, "
                           "except off a broker being removed")
    opts.add_argument("--excluded-brokers-for-replica-move", metavar="ID[,ID...]",
                      help="--planner: brokers no replica moves onto (their own replicas stay)")
    opts.add_argument("--concurrent-partition-movements-per-broker", metavar="N",
                      help="--planner: at most N moves into and N out of any broker at once; with "
                           "--decommission-broker the service executes the reviewed plan in waves that keep it")
    opts.add_argument("--max-partition-movements-in-cluster", metavar="N",
                      help="--planner: at most N partitions moving in the cluster at once (executed by the service, "
                           "as above)")
    opts.add_argument("--output", choices=("text", "json"), default="text", help="output format (default text)")
    opts.add_argument("--timeout", metavar="MS", default=None,
                      help=f"request / ZooKeeper timeout in ms, how long --execute keeps asking brokers to "
                           f"move the replicas the reassignment is creating into their log_dirs "
                           f"(default {DEFAULT_TIMEOUT_MS}), and how long --planner waits for each whole answer "
                           f"of the service (default {planner.SERVICE_TIMEOUT_S:.0f} s, as a plan on a cold Spark "
                           f"takes a while; a --timeout given is the wait, a shorter one too)")
    return p


def _check_http_url(url: str, flag: str) -> None:
    """A URL urllib can ask, or a usage error: a bad host or port found here is exit 2, not a
    service that looks unreachable (4) or an internal error (1) once the cluster has been read."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # a port that is not a number in 0-65535 raises
    except ValueError as e:
        raise UsageError(f"{flag}: not a URL ({e}): {url!r}") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{flag}: expected an http:// URL, got {url!r}")
    if not parts.hostname or port == 0:
        raise UsageError(f"{flag}: expected http://HOST[:PORT], got {url!r}")
    # http.client refuses spaces and control characters (a ValueError once the cluster was
    # read); a query or fragment would swallow the path the tool appends to the URL.
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c in "?#" for c in url):
        raise UsageError(f"{flag}: expected http://HOST[:PORT][/PATH] with no spaces, query or fragment, got {url!r}")


def check_options(args: argparse.Namespace) -> str:
    """The action; UsageError for any missing, conflicting or misplaced option."""
    if args.bootstrap_server and args.zookeeper:
        raise UsageError("give --bootstrap-server or --zookeeper, not both; nothing was done")
    if not args.bootstrap_server and not args.zookeeper:
        raise UsageError("one of --bootstrap-server or --zookeeper is required")
    chosen = [name for name in ACTIONS if getattr(args, name) not in (None, False)]
    if len(chosen) != 1:
        flags = ", ".join(ACTIONS[n][0] for n in chosen) if chosen else "none"
        raise UsageError(
            "exactly one action is required (--execute, --verify, --progress, --cancel, --list, --describe, "
            "--generate, --rebalance, --decommission-broker, --demote-broker, --execute-queue, --verify-queue, "
            "--generate-queue); "
            f"got {flags}"
        )
    action = chosen[0]
    flag, allowed, required = ACTIONS[action]
    for dest, opt in OPTION_FLAGS.items():
        value = getattr(args, dest)
        if value not in (None, False) and dest not in allowed:
            raise UsageError(f"{opt} cannot be used with {flag}")
    for dest in sorted(required):
        if getattr(args, dest) in (None, False):
            raise UsageError(f"{flag} needs {OPTION_FLAGS[dest]}")
    if args.demote_broker is not None and args.zookeeper:
        raise UsageError("--demote-broker elects through the controller's ElectLeaders: give --bootstrap-server")
    if args.elect_preferred and args.zookeeper:
        raise UsageError("--elect-preferred elects through the controller's ElectLeaders: give --bootstrap-server")
    if args.elect_preferred and args.dry_run:
        raise UsageError("--elect-preferred waits for the reassignment to finish: it cannot be used with --dry-run")
    if args.planner and args.spark_master:
        raise UsageError("--planner and --spark-master both choose where to plan: give one")
    if args.planner:
        _check_http_url(args.planner, "--planner")
    given = [OPTION_FLAGS[d] for d in SERVICE_OPTIONS if getattr(args, d) is not None]
    if given and not args.planner:
        raise UsageError(f"{given[0]} is an option of the planner service: give --planner URL")
    if (args.chart or args.chart_data) and not args.ops:
        raise UsageError("--chart and --chart-data read the controller's history: give --ops URL "
                         "(the active controller's operations port, --ops-listen)")
    if args.ops and not (args.chart or args.chart_data):
        raise UsageError("--ops is only read with --chart or --chart-data")
    if args.ops:
        _check_http_url(args.ops, "--ops")
    if args.chart:
        from spark_jobs.chart import ChartError, check_chart_path

        try:
            check_chart_path(args.chart)
        except ChartError as e:
            raise UsageError(f"--chart: {e}") from None
    if args.replica_alter_log_dirs_throttle is not None and args.zookeeper:
        raise UsageError("--replica-alter-log-dirs-throttle needs --bootstrap-server (the brokers move the replicas)")
    if action == "progress" and args.zookeeper:
        raise UsageError("--progress needs --bootstrap-server: it is not supported with --zookeeper (KIP-179)")
    return action


def _positive_number(text: str, option: str, *, integer: bool, at_most: tuple[float, str] | None = None) -> float:
    """``at_most``: (the bound, how the error names it), e.g. (INT32_MAX, "2147483647 ms")."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise UsageError(f"{option}: expected a {'whole ' if integer else ''}number, got {text!r}") from None
    if value == float("inf") and text.strip().lower().lstrip("+") not in ("inf", "infinity"):
        raise UsageError(f"{option}: too large, got {text[:40]!r}")  # a finite number past float's range
    if not value > 0 or value != value or value == float("inf"):
        raise UsageError(f"{option}: must be positive, got {text!r}")
    if at_most is not None and value > at_most[0]:
        raise UsageError(f"{option}: at most {at_most[1]}, got {text!r}")
    return value


def load_inputs(args: argparse.Namespace, action: str) -> commands.Inputs:
    """Parse and validate every option value and input file (nothing touches the cluster)."""
    inputs = commands.Inputs()
    if args.throttle is not None:
        inputs.throttle = parse_throttle(args.throttle)
    if args.replica_alter_log_dirs_throttle is not None:
        inputs.log_dirs_throttle = parse_throttle(args.replica_alter_log_dirs_throttle,
                                                  "--replica-alter-log-dirs-throttle")
    if args.movement_strategy is not None:
        try:
            inputs.movement_strategies = strategy_names.parse(args.movement_strategy)
        except strategy_names.StrategyError as e:
            raise UsageError(f"--movement-strategy: {e}") from None
    if args.broker_list is not None:
        inputs.brokers = parse_broker_list(args.broker_list)
    if args.reassignment_json_file is not None:
        path = args.reassignment_json_file
        inputs.plan = parse_reassignment(read_json_file(path), path, require_replicas=action != "cancel")
        if inputs.plan.log_dirs and args.zookeeper and action in ("execute", "verify"):
            raise UsageError(f"{path} names log directories: moving replicas between a broker's log dirs "
                             "needs --bootstrap-server (AlterReplicaLogDirs and DescribeLogDirs go to the brokers)")
        if inputs.plan.log_dirs and action in ("execute_queue", "verify_queue"):
            raise UsageError(f"{path} names log directories: only --execute moves replicas between log dirs")
    if args.decommission_broker is not None:
        inputs.broker_to_remove = parse_broker_id(args.decommission_broker, "--decommission-broker")
    if args.demote_broker is not None:
        inputs.brokers_to_demote = parse_broker_list(args.demote_broker, "--demote-broker")
    if inputs.log_dirs_throttle is not None and not (inputs.plan and inputs.plan.log_dirs):
        raise UsageError("--replica-alter-log-dirs-throttle: the reassignment JSON names no log directory to move to")
    if args.topics_to_move_json_file is not None:
        path = args.topics_to_move_json_file
        inputs.topics = parse_topics_to_move(read_json_file(path), path)
        inputs.topics_source = path
    if any(getattr(args, d) is not None for d in SERVICE_OPTIONS):
        inputs.service_options = _service_options(args)
    return inputs


def _service_options(args: argparse.Namespace):
    from client.planner import ServiceOptions

    pattern = args.excluded_topics
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise UsageError(f"--excluded-topics: not a regular expression: {e}") from None
        if not pattern:
            raise UsageError("--excluded-topics: an empty regular expression")
    excluded = args.excluded_brokers_for_replica_move
    per_broker, cluster = args.concurrent_partition_movements_per_broker, args.max_partition_movements_in_cluster
    return ServiceOptions(
        excluded_topics=pattern,
        excluded_brokers=(parse_broker_list(excluded, "--excluded-brokers-for-replica-move")
                          if excluded is not None else None),
        per_broker=None if per_broker is None else int(_positive_number(
            per_broker, "--concurrent-partition-movements-per-broker", integer=True)),
        cluster_cap=None if cluster is None else int(_positive_number(
            cluster, "--max-partition-movements-in-cluster", integer=True)),
    )


async def _open_backend(args: argparse.Namespace, timeout_ms: int):
    from client.security import ClientSecurity

    security = ClientSecurity.from_file(args.command_config)
    if args.zookeeper:
        from client.zk_backend import ZkBackend

        return await ZkBackend.open(args.zookeeper, timeout=timeout_ms / 1000, zk_security=security.zk_security())
    from client.admin_backend import AdminBackend

    return await AdminBackend.open(args.bootstrap_server, timeout_ms, security)


async def run(args: argparse.Namespace, action: str, inputs: commands.Inputs, timeout_ms: int, interval: float | None) -> commands.Report:
    backend = await _open_backend(args, timeout_ms)
    try:
        if action == "execute":
            return await commands.execute(backend, inputs, additional=args.additional, dry_run=args.dry_run,
                                          elect_preferred=args.elect_preferred, skip_isr_check=args.skip_isr_check)
        if action == "execute_queue":
            return await commands.execute_queue(backend, inputs, dry_run=args.dry_run)
        if action == "verify":
            return await commands.verify(backend, inputs, dry_run=args.dry_run,
                                         preserve_throttles=args.preserve_throttles)
        if action == "verify_queue":
            return await commands.verify_queue(backend, inputs)
        if action == "cancel":
            return await commands.cancel(backend, inputs, dry_run=args.dry_run)
        if action == "list":
            return await commands.list_reassignments(backend)
        if action == "describe":
            return await commands.describe_reassignments(backend)
        if action in ("generate", "generate_queue"):
            return await commands.generate(backend, inputs, rack_aware=not args.disable_rack_aware,
                                           queue=action == "generate_queue")
        if action == "rebalance":
            return await commands.rebalance(backend, inputs, timeout_ms=timeout_ms, spark_master=args.spark_master,
                                            planner_url=args.planner)
        if action == "decommission_broker":
            return await commands.decommission(backend, inputs, timeout_ms=timeout_ms, spark_master=args.spark_master,
                                               additional=args.additional, dry_run=args.dry_run,
                                               planner_url=args.planner)
        if action == "demote_broker":
            from client.demotion import demote

            return await demote(backend, inputs, timeout_ms=timeout_ms, dry_run=args.dry_run, planner_url=args.planner)
        if action == "progress":
            if interval is None:
                interval = DEFAULT_WATCH_INTERVAL_S if args.watch else DEFAULT_SAMPLE_INTERVAL_S
            report = await commands.show_progress(backend, inputs, interval=interval, watch=args.watch,
                                                  json_out=args.output == "json")
            if args.chart or args.chart_data:
                _write_chart(args, timeout_ms, report)
            return report
        raise AssertionError(action)
    finally:
        await backend.close()


def _write_chart(args: argparse.Namespace, timeout_ms: int, report: commands.Report) -> None:
    """--chart/--chart-data: the controller's bytes-remaining history, after the progress report
    (with --watch, once the reassignment is done, so the chart shows it to the end)."""
    from client import chart

    doc = chart.fetch_history(args.ops, timeout_ms / 1000)
    if args.chart:
        chart.write_chart(doc, args.chart, progress=report.data)
    if args.chart_data:
        chart.write_csv(doc, args.chart_data)
    written = [p for p in (args.chart, args.chart_data) if p]
    report.data["chart"] = {"files": written, "run": doc["run"]["number"], "samples": len(doc["run"]["samples"]),
                            "finished": doc["run"]["finished"] is not None}
    if report.text:
        report.text += f"\nChart of run {doc['run']['number']} written to {', '.join(written)}"


def _fail(exc: BaseException, json_out: bool, code: int) -> int:
    message = str(exc) or type(exc).__name__
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if isinstance(exc, UsageError):
        print(f"Run '{PROG} --help' for the options.", file=sys.stderr)
    if json_out:
        print(json.dumps({"error": {"type": type(exc).__name__, "message": message, "exit_code": code}}))
    return code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    json_out = "--output=json" in argv or any(a == "--output" and b == "json" for a, b in zip(argv, argv[1:]))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except UsageError as exc:
        return _fail(exc, json_out, exit_codes.USAGE)
    json_out = args.output == "json"
    try:
        action = check_options(args)
        given = args.timeout is not None
        # The requests carry --timeout as int32 milliseconds.
        timeout_ms = int(_positive_number(args.timeout, "--timeout", integer=True,
                                          at_most=(INT32_MAX, f"{INT32_MAX} ms"))) if given else DEFAULT_TIMEOUT_MS
        interval = None if args.interval is None else _positive_number(
            args.interval, "--interval", integer=False, at_most=(MAX_INTERVAL_S, f"{MAX_INTERVAL_S:g} seconds (a day)"))
        inputs = load_inputs(args, action)
        if args.zookeeper:
            print(DEPRECATION_WARNING, file=sys.stderr)
        inputs.log_dir_timeout_s = timeout_ms / 1000
        if given:
            inputs.service_timeout_s = timeout_ms / 1000
        report = asyncio.run(run(args, action, inputs, timeout_ms, interval))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except ReassignError as exc:
        return _fail(exc, json_out, exit_codes.for_error(exc))
    if json_out:
        if not (action == "progress" and args.watch):  # --watch printed one object per refresh
            print(json.dumps({"action": action.replace("_", "-"), "mode": "zookeeper" if args.zookeeper else "bootstrap",
                              "exit_code": report.code, **report.data}))
    elif report.text:
        print(report.text)
    return report.code


if __name__ == "__main__":
    sys.exit(main())
