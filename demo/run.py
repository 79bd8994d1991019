"""The demo driver behind ``make demo`` (``python -m demo``).

Steps:

 1. Start a local ZooKeeper, six simulated brokers (topics on brokers 1-4 only; 5 and 6 are
    empty, as if just added) and two controller instances (demo.cluster).
 2. Snapshot the cluster (``reassignd snapshot``) and plan a KIP-6 rebalance on Spark
    (``python -m spark_jobs.plan --rebalance``): the plan moves replicas onto brokers 5 and 6.
 3. Start it with ``kafka-reassign --execute --throttle`` and watch it with
    ``kafka-reassign --progress --watch``.
 4. Part-way through, SIGKILL the active controller; report when the standby is elected and
    when it completes its first partition (the failover pause), and let it finish.
 5. Start a second, small, slowly throttled reassignment and cancel it with
    ``kafka-reassign --cancel``: the partition goes back to its original replicas and the new
    replica is deleted from its broker.
 6. Restart the broker that leads the most partitions as an operator's rolling restart does,
    with Kafka's controlled shutdown (the simulator's ``controlled-stop``: ControlledShutdown to
    the active controller): every partition it led has another leader before it stops, none
    goes leaderless; started again, it is back in every ISR.
 7. Print a summary (partitions moved, bytes copied, time, failover pause) and exit 0.

Whatever happens (an error, Ctrl-C, SIGTERM), every process the demo started is stopped
before it exits (demo.procs); the exit status is 0 only if every check held.

    python -m demo [--workdir DIR] [--keep-logs]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from demo.cluster import NEW_BROKERS, DemoError, LocalCluster, ids_text, reassignd, wait_for
from demo.procs import Child, Children, begin_cleanup, checkpoint, install_interrupt_handlers

REPO = Path(__file__).resolve().parents[1]

# The rebalance's throttle (bytes/s per broker): with 7 MiB replicas, 12 of them arriving on
# each new broker take about 20 s - long enough to watch and to kill a controller part-way.
THROTTLE = 4 * 1024 * 1024
# A restarted broker catches up what was produced while it was down: back in every ISR within this.
REJOIN_TIMEOUT_S = 60.0
CONTROLLED_STOP_TIMEOUT_S = 60.0  # up to 3 tries of the broker, 30 s each at most (sim.controlled_shutdown)
# The cancelled reassignment's throttle: slow enough (about 30 s for one replica) that the
# cancel certainly lands while it copies.
CANCEL_THROTTLE = 256 * 1024
# Kill the active controller once this share of the moving partitions has completed.
KILL_AT_FRACTION = 0.3
# The copy lasts about 20 s at THROTTLE; anything past these bounds is a failure, not a wait.
REASSIGN_TIMEOUT_S = 120.0
CANCEL_TIMEOUT_S = 60.0
THROTTLE_REMOVAL_TIMEOUT_S = 10.0
# How long the cancelled reassignment copies before the cancel, so that it is visibly running.
CANCEL_AFTER_S = 3.0
POLL_S = 0.05
PROGRESS_INTERVAL_S = 2.0
SNAPSHOT_TIMEOUT_S = 60.0
PLAN_TIMEOUT_S = 300.0  # the first Spark session on a cold, loaded machine
CLI_TIMEOUT_S = 60.0
LINE_WIDTH = 110


class Console:
    """Timestamped, thread-safe lines for the operator."""

    def __init__(self):
        self.t0 = time.monotonic()
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, text: str = "") -> None:
        checkpoint()
        with self._lock:
            for line in text.splitlines() or [""]:
                print(f"[{self.elapsed():5.1f}s] {line}" if line else "", flush=True)

    def section(self, title: str) -> None:
        self.say()
        self.say(f"== {title}")

    def command(self, argv: list[str]) -> None:
        self.say("$ " + " ".join(argv))  # in full: an operator may copy it


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class Outcome:
    partitions_moved: int = 0
    replicas_moved: int = 0
    bytes_copied: int = 0
    reassign_seconds: float = 0.0
    killed: int | None = None
    successor: int | None = None
    elected_after_s: float | None = None
    first_completion_after_s: float | None = None
    cancelled: list[str] = field(default_factory=list)
    restarted: str | None = None


class Demo:
    def __init__(self, cluster: LocalCluster, console: Console, workdir: Path):
        self.cluster = cluster
        self.console = console
        self.workdir = workdir
        self.outcome = Outcome()

    # ---- running the tools ------------------------------------------------------------------

    def run_tool(self, name: str, shown: list[str], argv: list[str],
                 timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run one command the way an operator would (logged to logs/NAME.log), show it, and
        fail the demo on a non-zero exit."""
        self.console.command(shown)
        proc = self.cluster.kids.run(name, argv, timeout=timeout, cwd=self.workdir)
        if proc.returncode != 0:
            raise DemoError(f"{shown[0]} exited {proc.returncode}:\n{proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    def kafka_reassign(self, *args: str) -> subprocess.CompletedProcess:
        shown = ["kafka-reassign", "--bootstrap-server", self.cluster.bootstrap, *args]
        return self.run_tool("kafka-reassign", shown, [sys.executable, "-m", "client.cli", *shown[1:]])

    def show(self, text: str, keep=lambda line: True, limit: int = 8) -> None:
        lines = [line for line in text.splitlines() if line.strip() and keep(line)]
        for line in lines[:limit]:
            self.console.say("  " + _shorten(line, LINE_WIDTH))
        if len(lines) > limit:
            self.console.say(f"  ... ({len(lines) - limit} more lines)")

    # ---- 2. plan ----------------------------------------------------------------------------

    def plan(self) -> dict[tuple[str, int], list[int]]:
        c = self.console
        c.section("Plan a rebalance onto the new brokers (KIP-6, on Spark)")
        self.run_tool("snapshot", ["reassignd", "snapshot", "--zookeeper", self.cluster.hosts, "--out", "cluster.json"],
                      reassignd("snapshot", "--zookeeper", self.cluster.hosts, "--out", "cluster.json"),
                      timeout=SNAPSHOT_TIMEOUT_S)
        args = ["--snapshot", "cluster.json", "--rebalance", "--out", "plan.json", "--report", "report.json",
                "--chart", "chart.png", "--throttle", str(THROTTLE)]
        self.run_tool("plan", ["python", "-m", "spark_jobs.plan", *args],
                      [sys.executable, "-m", "spark_jobs.plan", *args], timeout=PLAN_TIMEOUT_S)
        report = json.loads((self.workdir / "report.json").read_text())
        plan = json.loads((self.workdir / "plan.json").read_text())
        targets = {(e["topic"], e["partition"]): e["replicas"] for e in plan["partitions"]}
        current = self.cluster.all_assignments()
        moved = {tp for tp, r in targets.items() if set(r) != set(current[tp])}
        onto_new = sum(1 for tp in moved for b in set(targets[tp]) - set(current[tp]) if b in NEW_BROKERS)
        c.say(f"  {report['moves']} replica moves (the lower bound is {report['lower_bound']}), "
              f"{onto_new} of them onto brokers {','.join(map(str, NEW_BROKERS))}; "
              f"{len(moved)} partitions move, {len(targets) - len(moved)} only change their preferred leader")
        if report.get("bytes_to_move") is not None and report.get("estimated_seconds") is not None:
            c.say(f"  {_mib(report['bytes_to_move'])} to copy: about {report['estimated_seconds']:.0f}s at "
                  f"{THROTTLE // 1024 // 1024} MiB/s (lower bound {report['lower_bound_seconds']:.0f}s)")
        after = _counts(current | targets)
        c.say("  replicas per broker: " + ", ".join(
            f"{b}: {_counts(current).get(b, 0)}->{after.get(b, 0)}" for b in sorted(after)))
        c.say(f"  the before/after chart: {self.workdir / 'chart.png'}")
        if not moved or not onto_new:
            raise DemoError("the planner moved nothing onto the new brokers")
        return targets

    # ---- 3 and 4. execute, watch, fail over -----------------------------------------------------

    def execute_and_fail_over(self, targets: dict[tuple[str, int], list[int]]) -> None:
        c, cluster = self.console, self.cluster
        before = cluster.all_assignments()
        moving = {tp for tp, r in targets.items() if r != before[tp]}
        c.section(f"Execute it with a {THROTTLE // 1024 // 1024} MiB/s throttle, watch, and kill the active controller")
        started = time.monotonic()
        out = self.kafka_reassign("--execute", "--throttle", str(THROTTLE),
                                  "--reassignment-json-file", "plan.json")
        self.show(out.stdout, keep=lambda line: line.startswith(("Successfully", "The ")))
        watcher = self.watch_progress("plan.json")
        try:
            self.kill_active_part_way(moving)
            wait_for(cluster.idle, REASSIGN_TIMEOUT_S, "the reassignment to complete", POLL_S)
            self.outcome.reassign_seconds = time.monotonic() - started
            watcher.join(CLI_TIMEOUT_S)
        finally:
            watcher.stop()
        if watcher.returncode not in (0, None):
            raise DemoError(f"kafka-reassign --progress --watch exited {watcher.returncode}; see {watcher.log_path}")
        after = cluster.all_assignments()
        wrong = [f"{t}-{p}" for (t, p), r in targets.items() if after[(t, p)] != r]
        if wrong:
            raise DemoError(f"partitions not at their planned replicas: {', '.join(wrong)}")
        hosted = cluster.hosted()
        stray = [f"{t}-{p} on {b}" for (t, p), on in hosted.items() for b in on if b not in after[(t, p)]]
        if stray:
            raise DemoError(f"replicas left on brokers they were moved off: {', '.join(stray)}")
        added = [(tp, b) for tp in moving for b in set(targets[tp]) - set(before[tp])]
        self.outcome.partitions_moved = sum(1 for tp in moving if set(targets[tp]) != set(before[tp]))
        self.outcome.replicas_moved = len(added)
        self.outcome.bytes_copied = sum(hosted[tp][b] for tp, b in added)
        c.say(f"Done: every partition is on its planned replicas, {self.outcome.replicas_moved} replicas copied "
              f"in {self.outcome.reassign_seconds:.1f}s; controller {cluster.active_controller()} is active")
        # KIP-179: the controller removes the throttles --execute set once the moves are done.
        try:
            wait_for(lambda: not cluster.throttle_configs(), THROTTLE_REMOVAL_TIMEOUT_S, "throttle removal", POLL_S)
        except DemoError:
            raise DemoError(f"throttles left after the reassignment: {json.dumps(cluster.throttle_configs())}") from None
        c.say("Throttles left: none; the controller removed them (KIP-179)")
        # The active controller's bytes-remaining history of its term, charted (--progress --chart).
        active = cluster.controllers[cluster.active_controller()]
        out = self.kafka_reassign("--progress", "--reassignment-json-file", "plan.json", "--chart", "progress.png",
                                  "--ops", f"http://{active.host}:{active.ops_port}")
        self.show(out.stdout, keep=lambda line: line.startswith("Chart"))

    def kill_active_part_way(self, moving: set[tuple[str, int]]) -> None:
        c, cluster, o = self.console, self.cluster, self.outcome
        total = len(moving)
        wait_for(lambda: total - len(cluster.pending() & moving) >= KILL_AT_FRACTION * total or cluster.idle(),
                 REASSIGN_TIMEOUT_S, f"{KILL_AT_FRACTION:.0%} of the partitions to complete", POLL_S)
        o.killed = cluster.active_controller()
        done = total - len(cluster.pending() & moving)
        c.say(f">>> SIGKILL the active controller {o.killed} ({done}/{total} partitions done)")
        pending_at_kill = cluster.pending() & moving
        cluster.kids.kill(f"controller-{o.killed}")
        killed_at = time.monotonic()

        def successor():
            active = cluster.active_controller()
            return active if active not in (None, o.killed) else None

        o.successor = wait_for(successor, REASSIGN_TIMEOUT_S, "a standby to take over", POLL_S)
        o.elected_after_s = time.monotonic() - killed_at
        c.say(f">>> controller {o.successor} took over {o.elected_after_s:.1f}s after the kill "
              f"(/controller names {o.successor})")
        if pending_at_kill:
            wait_for(lambda: (cluster.pending() & moving) < pending_at_kill, REASSIGN_TIMEOUT_S,
                     f"controller {o.successor} to complete a partition", POLL_S)
            o.first_completion_after_s = time.monotonic() - killed_at
            c.say(f">>> controller {o.successor} completed its first partition "
                  f"{o.first_completion_after_s:.1f}s after the kill")
        # Start the killed instance again: it stands by behind the new active one.
        self.restart_controller(o.killed)

    def restart_controller(self, cid: int) -> None:
        ctl = self.cluster.controllers[cid]
        argv = list(ctl.child.proc.args)
        ctl.child = self.cluster.kids.spawn(f"controller-{cid}", argv)
        self.console.say(f">>> controller {cid} restarted; it stands by")

    def watch_progress(self, plan_file: str) -> "ProgressWatch":
        shown = ["kafka-reassign", "--bootstrap-server", self.cluster.bootstrap, "--progress", "--watch",
                 "--interval", str(PROGRESS_INTERVAL_S), "--reassignment-json-file", plan_file]
        self.console.command(shown)
        watch = ProgressWatch(self.cluster.kids, [sys.executable, "-m", "client.cli", *shown[1:]], self.workdir,
                              self.console, self.workdir / "logs" / "progress.log")
        watch.start()
        return watch

    # ---- 5. cancel ------------------------------------------------------------------------------

    def cancel(self) -> None:
        c, cluster = self.console, self.cluster
        c.section("Start a small slow reassignment, then cancel it (KIP-236)")
        topic, partition, original, target, newcomer = self.pick_cancel_target()
        (self.workdir / "cancel.json").write_text(json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": partition, "replicas": target}]}))
        c.say(f"  {topic}-{partition}: {original} -> {target} at {CANCEL_THROTTLE // 1024} KiB/s")
        out = self.kafka_reassign("--execute", "--throttle", str(CANCEL_THROTTLE),
                                  "--reassignment-json-file", "cancel.json")
        self.show(out.stdout, keep=lambda line: line.startswith("Successfully"))
        wait_for(lambda: f"{topic}-{partition}" in cluster.moving(), CANCEL_TIMEOUT_S, "the move to start", POLL_S)
        time.sleep(CANCEL_AFTER_S)
        copied = cluster.hosted().get((topic, partition), {}).get(newcomer, 0)
        c.say(f"  broker {newcomer} has copied {_mib(copied)} of it so far")
        out = self.kafka_reassign("--describe")
        self.show(out.stdout)
        out = self.kafka_reassign("--cancel")
        self.show(out.stdout)
        wait_for(cluster.idle, CANCEL_TIMEOUT_S, "the cancellation to finish", POLL_S)
        now = cluster.assignment(topic)[partition]
        if now != original:
            raise DemoError(f"{topic}-{partition} is on {now} after the cancel, not back on {original}")
        wait_for(lambda: newcomer not in cluster.hosted().get((topic, partition), {}), CANCEL_TIMEOUT_S,
                 f"broker {newcomer} to delete its replica", POLL_S)
        c.say(f"Cancelled: {topic}-{partition} is back on {original}; broker {newcomer} deleted its copy")
        self.outcome.cancelled.append(f"{topic}-{partition} back on {original}")

    def pick_cancel_target(self):
        """A partition and a target that adds one broker it does not use (and drops its last one)."""
        assignments = self.cluster.all_assignments()
        (topic, partition), original = min(assignments.items())
        newcomer = min(b for b in self.cluster.brokers if b not in original)
        return topic, partition, original, original[:-1] + [newcomer], newcomer

    # ---- 6. a rolling restart ------------------------------------------------------------------

    def controlled_restart(self) -> None:
        c, cluster = self.console, self.cluster
        c.section("Restart a broker for maintenance: its leaderships handed over first (controlled shutdown)")
        before = cluster.states()
        counts: dict[int, int] = {}
        for state in before.values():
            counts[state.get("leader", -1)] = counts.get(state.get("leader", -1), 0) + 1
        broker = max((b for b in counts if b >= 0), key=lambda b: (counts[b], -b))
        led = sorted(tp for tp, s in before.items() if s.get("leader") == broker)
        c.say(f"  broker {broker} leads {len(led)} partitions; it asks the active controller to move them "
              "(ControlledShutdown), then stops")
        answer = cluster.sim_command(f"controlled-stop {broker}", timeout=CONTROLLED_STOP_TIMEOUT_S)
        if not answer["controlled"]:
            raise DemoError(f"broker {broker}'s controlled shutdown left {answer['remaining']} after {answer['tries']} tries")
        after = cluster.states()
        leaders = {tp: after[tp].get("leader", -1) for tp in led}
        stuck = sorted(tp for tp, leader in leaders.items() if leader in (broker, -1))
        if stuck:
            raise DemoError(f"partitions without another leader after broker {broker}'s controlled shutdown: {stuck}")
        took = sorted(set(leaders.values()))
        c.say(f"  stopped after {answer['tries']} request(s): all {len(led)} leaderships moved to brokers "
              f"{ids_text(took)}, none went leaderless")
        cluster.sim_command(f"start {broker}")
        hosting = [tp for tp, replicas in cluster.all_assignments().items() if broker in replicas]
        wait_for(lambda: all(broker in cluster.states()[tp].get("isr", ()) for tp in hosting), REJOIN_TIMEOUT_S,
                 f"broker {broker} back in the ISR of its {len(hosting)} partitions", POLL_S * 10)
        c.say(f"  broker {broker} started again and is back in the ISR of all its {len(hosting)} partitions")
        self.outcome.restarted = f"broker {broker}: {len(led)} leaderships handed over, none leaderless, back in sync"

    # ---- 7. summary -----------------------------------------------------------------------------

    def summary(self) -> None:
        o, c = self.outcome, self.console
        c.section("Summary")
        rows = [
            ("partitions moved", f"{o.partitions_moved} ({o.replicas_moved} replicas onto new brokers)"),
            ("bytes copied", f"{o.bytes_copied} ({_mib(o.bytes_copied)})"),
            ("reassignment time", f"{o.reassign_seconds:.1f}s at {THROTTLE // 1024 // 1024} MiB/s per broker"),
        ]
        if o.killed is not None:
            text = f"{o.elected_after_s:.1f}s from the SIGKILL of controller {o.killed} to {o.successor}'s election"
            if o.first_completion_after_s is not None:
                text += f"; its first completion {o.first_completion_after_s:.1f}s after the kill"
            rows.append(("failover pause", text))
        for what in o.cancelled:
            rows.append(("cancelled", what))
        if o.restarted is not None:
            rows.append(("rolling restart", o.restarted))
        rows.append(("metrics (active)", self.metrics_row()))
        for key, value in rows:
            c.say(f"{key + ':':<19} {value}")


    def metrics_row(self) -> str:
        """What the active controller's /metrics counted (it took over part-way: its share)."""
        ctl = self.cluster.controllers[self.cluster.active_controller()]
        try:
            with urllib.request.urlopen(ctl.metrics_url, timeout=5) as r:
                text = r.read().decode()
        except OSError as e:
            return f"{ctl.metrics_url}: unreachable ({e})"
        values: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = sample.name + "".join(f"/{v}" for k, v in sorted(sample.labels.items()) if k == "outcome")
                values[key] = values.get(key, 0.0) + sample.value
        return (f"{ctl.metrics_url}: {values.get('reassignd_reassignments_total/completed', 0):.0f} completions, "
                f"{values.get('reassignd_reassignments_total/cancelled', 0):.0f} rollbacks, "
                f"{values.get('reassignd_admin_requests_total', 0):.0f} admin requests")


class ProgressWatch(threading.Thread):
    """``kafka-reassign --progress --watch`` in the background; its progress bar lines are
    shown as they come, everything it prints is kept in a log file."""

    def __init__(self, kids: Children, argv: list[str], cwd: Path, console: Console, log_path: Path):
        super().__init__(daemon=True)
        self.argv, self.cwd, self.console, self.log_path = argv, cwd, console, log_path
        # Started here, not in the thread: PR_SET_PDEATHSIG fires when the forking thread ends.
        self.proc = kids.popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        kids.children[f"progress#{self.proc.pid}"] = Child("progress", self.proc, log_path)
        self.returncode: int | None = None

    def run(self) -> None:
        with open(self.log_path, "w") as log:
            for line in self.proc.stdout:
                log.write(line)
                if line.startswith(("[", "Overall:", "kafka-reassign:")):
                    self.console.say("  | " + line.rstrip())
        self.returncode = self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.join(5)


def _counts(assignment: dict) -> dict[int, int]:
    out: dict[int, int] = {}
    for replicas in assignment.values():
        for b in replicas:
            out[b] = out.get(b, 0) + 1
    return out


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m demo", description="The reassignd demo (make demo).")
    p.add_argument("--workdir", type=Path, help="where files and logs go (default: a temporary directory)")
    p.add_argument("--keep-logs", action="store_true", help="keep the working directory after a successful run")
    args = p.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="reassignd-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)
    install_interrupt_handlers()  # Ctrl-C and SIGTERM: the same clean-up path
    console = Console()
    console.say(f"reassignd demo: working directory {workdir}")
    ok = False
    try:
        with Children(workdir / "logs", cwd=REPO) as kids:
            cluster = LocalCluster.start(kids, workdir, say=console.say)
            try:
                demo = Demo(cluster, console, workdir)
                targets = demo.plan()
                demo.execute_and_fail_over(targets)
                demo.cancel()
                demo.controlled_restart()
                demo.summary()
                ok = True
            finally:
                begin_cleanup()
                kids.stop_all()
                cluster.close()
    except KeyboardInterrupt:
        begin_cleanup()
        console.say("interrupted: everything the demo started has been stopped")
        return 130
    except (DemoError, subprocess.TimeoutExpired, OSError) as exc:
        console.say(f"demo FAILED: {exc}")
        console.say(f"logs: {workdir / 'logs'}")
        return 1
    except Exception as exc:  # a bug in the demo or a tool: say so plainly, after the clean-up
        console.say(f"demo FAILED with an unexpected error: {exc!r}")
        console.say(f"logs: {workdir / 'logs'}")
        raise
    finally:
        if ok and not args.keep_logs and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    console.say("Everything the demo started has been stopped.")
    return 0
