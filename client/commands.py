"""kafka-reassign's actions, over either backend (:mod:`client.zk_backend` or
:mod:`client.admin_backend`). Each returns a :class:`Report`: the text for a person, the
JSON-able data for ``--output json``, and the exit code.

The inputs are parsed and validated before any of these run (:mod:`client.cli`); each action
then reads what it needs from the cluster, checks the input against it (unknown topics,
partitions, brokers) and only then changes anything.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field

from client import exit_codes, intra_broker, logdirs, planner, progress, render
from client.cluster import ClusterAssignment, check_brokers, check_plan, check_topics
from client.elect import elect_until_settled
from client.errors import (
    ClusterMismatchError,
    ConflictError,
    ConnectionFailedError,
    InputError,
    KafkaApiError,
    ProtocolViolationError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from client.inputs import Reassignment
from client.outcomes import COMPLETE, FAILED, IN_PROGRESS, QUEUED, ExecuteOutcome
from znodes.values import TopicPartition


@dataclass
class Report:
    text: str
    data: dict = field(default_factory=dict)
    code: int = exit_codes.OK


@dataclass
class Inputs:
    plan: Reassignment | None = None
    topics: list[str] | None = None
    topics_source: str | None = None
    brokers: list[int] | None = None
    throttle: int | None = None
    movement_strategies: tuple[str, ...] = ()  # --movement-strategy (znodes.strategies); (): the controller's setting
    broker_to_remove: int | None = None
    brokers_to_demote: list[int] | None = None  # --demote-broker (client.demotion)
    # --planner's Cruise Control options (scope and concurrency caps); None: none given
    service_options: planner.ServiceOptions | None = None
    # KIP-113: --replica-alter-log-dirs-throttle, and how long --execute asks again for the
    # log-dir moves of replicas the reassignment is still creating (Kafka's --timeout)
    log_dirs_throttle: int | None = None
    log_dir_timeout_s: float = 30.0
    # --planner: how long to wait for the service (--timeout when given, else its own default)
    service_timeout_s: float = planner.SERVICE_TIMEOUT_S


async def _changing(request, happened: str, check: str, *, dry_run: bool = False):
    """Await a request that changes the cluster. A timeout, a connection lost once it was sent,
    or an answer that cannot be read is no sign that nothing happened: the controller
    (ZooKeeper, the planner service) may have applied it, so the error says so and how to look
    rather than inviting a blind re-run."""
    try:
        return await request
    except (RequestTimedOutError, ConnectionFailedError, ProtocolViolationError) as exc:
        if dry_run or (not isinstance(exc, RequestTimedOutError) and not exc.request_sent):
            raise  # nothing was sent, or nothing asked to change
        raise type(exc)(f"{exc}\nThe request was sent before that, so {happened} all the same: check with "
                        f"{check} before running this again.") from None


# ---- --execute, --execute-queue ---------------------------------------------------------------


def _execute_code(o: ExecuteOutcome) -> int:
    if not o.failed:
        return exit_codes.OK
    if all(isinstance(e, ReassignmentInProgressError) for e in o.failed.values()):
        return exit_codes.CONFLICT
    return exit_codes.REJECTED


async def execute(backend, inputs: Inputs, *, additional: bool, dry_run: bool, elect_preferred: bool = False,
                  skip_isr_check: bool = False) -> Report:
    report, started = await _execute(backend, inputs, additional=additional, dry_run=dry_run,
                                     skip_isr_check=skip_isr_check)
    if not elect_preferred or dry_run or report.code != exit_codes.OK or not started:
        return report
    return await _elect_preferred(backend, report, started)


async def _elect_preferred(backend, report: Report, moved: list[TopicPartition]) -> Report:
    """--execute --elect-preferred (issue 14 item 5): once the moves finished, their preferred
    replicas (the new assignment's first) are elected leaders through ElectLeaders (KIP-460),
    as kafka-leader-election.sh --election-type PREFERRED would. A partition whose preferred
    replica already leads is fine (ELECTION_NOT_NEEDED); any other error fails the command."""
    await backend.wait_finished(moved)
    results = await elect_until_settled(backend.elect_preferred, moved)
    failed = {tp: e for tp, e in results.items() if e is not None}
    lines = [f"Preferred leaders elected for {len(results) - len(failed)} moved partition(s) once the reassignment finished."]
    lines += [f"  {t}-{p}: {e}" for (t, p), e in sorted(failed.items())]
    report.text = report.text.rstrip("\n") + "\n" + "\n".join(lines)
    report.data["preferred_election"] = {
        "elected": [{"topic": t, "partition": p} for (t, p) in sorted(results) if results[(t, p)] is None],
        "failed": [{"topic": t, "partition": p, "error": str(e)} for (t, p), e in sorted(failed.items())],
    }
    if failed:
        report.code = exit_codes.REJECTED
    return report


async def _execute(backend, inputs: Inputs, *, additional: bool, dry_run: bool,
                   skip_isr_check: bool = False) -> tuple[Report, list[TopicPartition]]:
    """The report, and the partitions whose moves started (a target equal to the current
    replicas moves nothing)."""
    plan = inputs.plan
    state = await backend.cluster_state(plan.topics)
    check_plan(plan, state)
    moves = plan.log_dirs
    dirs: intra_broker.MovesOutcome | None = None
    pending: dict = {}
    if moves:
        if backend.name == "zookeeper":
            raise InputError("log_dirs naming directories need --bootstrap-server (AlterReplicaLogDirs goes to the "
                             "brokers)", plan.source)
        await intra_broker.check_dirs(backend.admin, moves, plan.source)
        dirs = intra_broker.MovesOutcome(dict(moves), throttle=inputs.log_dirs_throttle, dry_run=dry_run)
        if dry_run:
            dirs.throttled_brokers = sorted({b for _, _, b in moves}) if inputs.log_dirs_throttle else []
        elif additional or not state.in_flight:  # else backend.execute refuses: nothing may start
            # Before the reassignment: replicas already on their broker start moving; the broker
            # remembers the directory of the others for when the reassignment creates them.
            if inputs.log_dirs_throttle is not None:
                dirs.throttled_brokers = await intra_broker.set_throttle(backend.admin, moves, inputs.log_dirs_throttle)
            pending = await intra_broker.request_moves(backend.admin, moves, dirs)
    try:
        outcome = await _changing(backend.execute(
            plan.assignments, state, throttle=inputs.throttle, additional=additional, dry_run=dry_run,
            skip_isr_check=skip_isr_check, movement_strategies=inputs.movement_strategies,
        ), "the reassignment may have started", f"--list, or --verify --reassignment-json-file {plan.source}",
           dry_run=dry_run)
    except ConflictError as exc:
        if inputs.throttle is None or backend.name != "zookeeper" or additional:
            raise
        # Kafka's tool: re-running --execute with a new --throttle while a reassignment runs
        # changes the rate of the running one.
        current = state.current(plan.assignments)
        brokers = {b for tp, r in plan.assignments.items() if r != current.get(tp) for b in r + current.get(tp, [])}
        writes = await backend.update_throttle_rate(brokers, inputs.throttle, dry_run=dry_run)
        verb = "would be updated" if dry_run else "was updated"
        text = (
            f"{exc}\nThe reassignment in {plan.source} was NOT started. "
            f"The inter-broker throttle limit {verb} to {inputs.throttle} B/s on brokers "
            + ",".join(map(str, sorted(brokers)))
        )
        return Report(text, {"error": str(exc), "started": [], "throttle_updated": bool(writes) and not dry_run,
                             "writes": {p: json.loads(d) for p, d in writes.items()}}, exit_codes.CONFLICT), []
    report = Report(render.execute_text(outcome, backend.name), render.execute_json(outcome, backend.name),
                    _execute_code(outcome))
    if dirs is not None:
        if not dry_run:
            dirs.skipped = sorted(k for k in pending if (k[0], k[1]) in outcome.failed)
            pending = {k: d for k, d in pending.items() if (k[0], k[1]) not in outcome.failed}
            # After it: asked again until the reassignment has created each replica.
            await intra_broker.finish_moves(backend.admin, pending, dirs, inputs.log_dir_timeout_s)
        report.text += "\n" + dirs.text()
        report.data["log_dirs"] = dirs.as_json()
        if not dirs.ok and report.code == exit_codes.OK:
            report.code = exit_codes.REJECTED
    return report, [tp for tp in outcome.started if outcome.requested.get(tp) != outcome.current.get(tp)]


async def execute_queue(backend, inputs: Inputs, *, dry_run: bool) -> Report:
    plan = inputs.plan
    state = await backend.cluster_state(plan.topics)
    check_plan(plan, state)
    outcome = await _changing(backend.queue(plan.assignments, state, dry_run=dry_run),
                              "the batch may have been queued or started",
                              f"--list, or --verify-queue --reassignment-json-file {plan.source}", dry_run=dry_run)
    return Report(render.execute_text(outcome, backend.name), render.execute_json(outcome, backend.name),
                  _execute_code(outcome))


# ---- --verify, --verify-queue -----------------------------------------------------------------


def _verify_code(statuses: dict) -> int:
    values = set(statuses.values())
    if FAILED in values:
        return exit_codes.VERIFY_FAILED
    if IN_PROGRESS in values or QUEUED in values:
        return exit_codes.IN_PROGRESS
    return exit_codes.OK


async def verify(backend, inputs: Inputs, *, dry_run: bool, preserve_throttles: bool = False) -> Report:
    plan = inputs.plan
    state = await backend.cluster_state(plan.topics)
    check_plan(plan, state, check_brokers=False)
    outcome = await backend.verify(plan.assignments, state, dry_run=dry_run, preserve_throttles=preserve_throttles)
    report = Report(render.verify_text(outcome), render.verify_json(outcome), _verify_code(outcome.statuses))
    if plan.log_dirs:
        if backend.name == "zookeeper":
            raise InputError("log_dirs naming directories need --bootstrap-server (DescribeLogDirs goes to the "
                             "brokers)", plan.source)
        states = await intra_broker.verify_moves(backend.admin, plan.log_dirs)
        removed = None
        if (not dry_run and not preserve_throttles and all(s == COMPLETE for s in outcome.statuses.values())
                and all(m.done for m in states)):
            # Kafka's --verify: with every move done, the log-dir throttle goes from every broker.
            removed = await intra_broker.remove_throttle(backend.admin, state.brokers)
        report.text += "\n" + intra_broker.verify_text(states, removed)
        report.data["log_dirs"] = {"moves": [m.as_json() for m in states], "throttle_removed": removed}
        report.code = _verify_code(outcome.statuses | {(m.topic, m.partition, m.broker): _move_status(m, outcome.statuses)
                                                       for m in states})
    return report


def _move_status(move: logdirs.LogDirMove, statuses: dict) -> str:
    """A log-dir move as a --verify status: waiting is in progress (a replica the reassignment
    is still creating, a broker that did not answer), a move that nothing carries out failed."""
    if move.done:
        return COMPLETE
    if move.state in (logdirs.IN_PROGRESS, logdirs.UNAVAILABLE):
        return IN_PROGRESS
    if move.state == logdirs.MISSING and statuses.get((move.topic, move.partition)) == IN_PROGRESS:
        return IN_PROGRESS
    return FAILED


async def verify_queue(backend, inputs: Inputs) -> Report:
    plan = inputs.plan
    state = await backend.cluster_state(plan.topics)
    check_plan(plan, state, check_brokers=False)
    outcome = await backend.verify_queue(plan.assignments, state)
    return Report(render.verify_text(outcome), render.verify_json(outcome), _verify_code(outcome.statuses))


# ---- --cancel, --list, --describe -----------------------------------------------------------


async def cancel(backend, inputs: Inputs, *, dry_run: bool) -> Report:
    partitions = None if inputs.plan is None else list(inputs.plan.assignments)
    outcome = await _changing(backend.cancel(partitions, dry_run=dry_run),
                              "the cancellation may have begun", "--list", dry_run=dry_run)
    code = exit_codes.REJECTED if outcome.failed else exit_codes.OK
    return Report(render.cancel_text(outcome, backend.name), render.cancel_json(outcome), code)


async def list_reassignments(backend) -> Report:
    items = await backend.list_reassignments()
    return Report(render.list_text(items), {"reassignments": [render.listed_json(i) for i in items]})


async def describe_reassignments(backend) -> Report:
    items = await backend.describe_reassignments()
    return Report(render.describe_text(items), {"reassignments": [render.described_json(d) for d in items]})


# ---- --generate, --generate-queue -------------------------------------------------------------


def _flatten(assignment: dict[str, dict[int, list[int]]]) -> dict[TopicPartition, list[int]]:
    return {(t, p): list(r) for t, ps in assignment.items() for p, r in ps.items()}


async def generate(backend, inputs: Inputs, *, rack_aware: bool, queue: bool = False) -> Report:
    state = await backend.cluster_state(inputs.topics)
    check_topics(inputs.topics, state, inputs.topics_source)
    check_brokers(inputs.brokers, state, "--broker-list")
    base = state.assignment_of(inputs.topics)
    note = None
    if queue:
        # Queued moves start once the running ones finish: plan from their targets.
        for (t, p), target in state.in_flight.items():
            if t in base and p in base[t] and target:
                base[t][p] = list(target)
        note = "(based on the assignment the running reassignments will leave)"
    queued_state = ClusterAssignment(state.brokers, base, state.in_flight, state.leaders)
    proposed = planner.legacy_generate(queued_state, inputs.topics, inputs.brokers, rack_aware)
    current = _flatten(base)
    racks_used = rack_aware and bool(state.racks(inputs.brokers))
    return Report(
        render.generate_text(current, proposed, note),
        render.generate_json(current, proposed, brokers=inputs.brokers, rack_aware=racks_used),
    )


# ---- --progress (and --watch) -----------------------------------------------------------------


async def _sample(admin, plan: Reassignment) -> progress.Sample:
    meta = await admin.describe_cluster(plan.topics)
    logs = await admin.describe_log_dirs(broker_ids=None, partitions=list(plan.assignments))
    # Every Metadata node but the active controller and the standby ones (no log directory).
    brokers = {n for n in meta.nodes if n != meta.controller_id and not logs.hosts_nothing(n)}
    throttles: dict[int, int] = {}
    try:
        rates = await admin.describe_broker_throttles(sorted(brokers))
        throttles = {b: f for b, (_, f) in rates.items() if f}
    except (UnsupportedVersionError, KafkaApiError):
        pass  # no throttle information: ETAs come from measured rates only
    try:
        waiting = await admin.waiting_reassignments(list(plan.assignments))
    except (UnsupportedVersionError, KafkaApiError):
        waiting = {}  # a controller without ISR-aware execution holds nothing back
    return progress.Sample(
        time=time.monotonic(),
        brokers=brokers,
        topics={t: {p: (m.leader, list(m.replicas)) for p, m in ps.items()} for t, ps in meta.topics.items()},
        logs={
            b: {tp: progress.ReplicaLog(r.size, r.offset_lag) for tp, r in rs.items()}
            for b, rs in logs.replicas.items()
            if b not in logs.errors
        },
        follower_throttles=throttles,
        waiting=waiting,
        log_dir_moves=logdirs.move_states(plan.log_dirs, logs) if plan.log_dirs else [],
    )


async def show_progress(backend, inputs: Inputs, *, interval: float, watch: bool, json_out: bool, stream=None) -> Report:
    """KIP-179's --progress: one report (rate measured over ``interval`` seconds), or with
    ``watch`` a report every ``interval`` seconds until the reassignment is done."""
    stream = stream or sys.stdout
    plan = inputs.plan
    admin = backend.admin
    previous = await _sample(admin, plan)
    first = progress.compute(plan.assignments, previous)
    baseline = first.total_remaining
    if not watch:
        if interval > 0 and not first.done:
            await asyncio.sleep(interval)
            current = await _sample(admin, plan)
            report = progress.compute(plan.assignments, current, previous)
        else:
            report = first
        return Report(progress.render_table(report), report.as_json(),
                      exit_codes.CLUSTER_MISMATCH if report.hopeless else exit_codes.OK)
    tty = hasattr(stream, "isatty") and stream.isatty() and not json_out
    report = first
    window = progress.RateWindow(previous)
    while True:
        if json_out:
            print(json.dumps({"action": "progress", **report.as_json()}), file=stream, flush=True)
        elif tty:
            stream.write("\x1b[H\x1b[2J" + progress.render_table(report) + "\n\n"
                         + progress.render_bar(report, baseline) + "\n")
            stream.flush()
        else:
            print(progress.render_bar(report, baseline), file=stream, flush=True)
        if report.done or report.hopeless:
            break
        await asyncio.sleep(interval)
        current = await _sample(admin, plan)
        report = progress.compute(plan.assignments, current, window.push(current))
    code = exit_codes.CLUSTER_MISMATCH if report.hopeless else exit_codes.OK
    text = progress.render_table(report) if not tty and not json_out else ""
    return Report(text, report.as_json(), code)


# ---- --rebalance, --decommission-broker (KIP-6, through the planner) ---------------------------


async def _snapshot(backend, timeout_ms: int) -> dict:
    if backend.name == "zookeeper":
        return await planner.snapshot_from_zookeeper(backend.hosts, timeout_ms / 1000)
    return await planner.snapshot_from_admin(backend.admin)


def _plan_summary(report: dict) -> str:
    text = (f"Planner: {report['moves']} replica move(s) (lower bound {report['lower_bound']}), "
            f"{report['partitions_changed']} partition(s) changed, {report['waves']} wave(s)")
    if report.get("estimated_seconds") is not None:
        text += f", estimated {progress.human_eta(report['estimated_seconds'])}"
    return text


def _plan_json(result) -> dict:
    keys = ("moves", "lower_bound", "moves_at_lower_bound", "partitions_changed", "fair", "leaders_fair",
            "bytes_to_move", "waves", "estimated_seconds", "lower_bound_seconds", "warnings")
    return {k: result.report.get(k) for k in keys}


async def _plan(backend, mode: str, timeout_ms: int, spark_master: str | None, planner_url: str | None,
                options: planner.ServiceOptions | None = None, service_timeout_s: float = planner.SERVICE_TIMEOUT_S,
                **kw):
    """The planner service's plan when ``planner_url`` is given, else the one-shot planner's."""
    if planner_url:
        return await planner.plan_from_service(planner_url, mode, timeout_s=service_timeout_s, options=options, **kw)
    return planner.make_plan(await _snapshot(backend, timeout_ms), mode, spark_master=spark_master, **kw)


async def rebalance(backend, inputs: Inputs, *, timeout_ms: int, spark_master: str | None,
                    planner_url: str | None = None) -> Report:
    """KIP-6 --rebalance: propose fair counts with the fewest moves (printed, not executed)."""
    state = await backend.cluster_state(inputs.topics)
    if inputs.topics is not None:
        check_topics(inputs.topics, state, inputs.topics_source)
    if inputs.brokers is not None:
        check_brokers(inputs.brokers, state, "--broker-list")
    result = await _plan(backend, "rebalance", timeout_ms, spark_master, planner_url, inputs.service_options,
                         inputs.service_timeout_s,
                         broker_list=inputs.brokers, topics=inputs.topics)
    proposed = {(e["topic"], e["partition"]): list(e["replicas"]) for e in result.reassignment["partitions"]}
    current = {tp: r for tp, r in _flatten({t: state.topics[t] for t in state.topics}).items() if tp in proposed}
    text = render.generate_text(current, proposed) + "\n" + _plan_summary(result.report)
    return Report(text, render.generate_json(current, proposed, plan=_plan_json(result)))


async def decommission(backend, inputs: Inputs, *, timeout_ms: int, spark_master: str | None,
                       additional: bool, dry_run: bool, planner_url: str | None = None) -> Report:
    """KIP-6 --decommission-broker: move every replica off the broker, executed at once."""
    broker = inputs.broker_to_remove
    state = await backend.cluster_state()
    hosts_replicas = any(broker in r for ps in state.topics.values() for r in ps.values())
    if broker not in state.brokers and not hosts_replicas:
        raise ClusterMismatchError(f"--decommission-broker: broker {broker} is not in the cluster and holds no replicas")
    if not hosts_replicas:
        return Report(f"Broker {broker} holds no replicas: nothing to move.", {"started": [], "plan": None})
    options = inputs.service_options
    result = await _plan(backend, "decommission", timeout_ms, spark_master, planner_url, options,
                         inputs.service_timeout_s, brokers=[broker],
                         throttle=inputs.throttle)
    assignments = {(e["topic"], e["partition"]): list(e["replicas"]) for e in result.reassignment["partitions"]}
    plan = Reassignment(assignments, f"--decommission-broker {broker}")
    check_plan(plan, state)
    if options is not None and options.caps and not dry_run:
        # The caps hold only in the service's own waves: it executes the proposal just
        # reviewed (dryrun=false&proposal_id=N), or refuses (409) if the cluster changed since.
        ex = await _changing(planner.execute_on_service(planner_url, result, timeout_s=inputs.service_timeout_s),
                             "the planner service may have started executing the plan",
                             f"GET {planner_url.rstrip('/')}/state, or --list")
        text = (_plan_summary(result.report) + f"\nExecuting on the planner service as execution {ex['id']} "
                f"(proposal {ex['proposal_id']}): {ex['partitions_total']} partition(s) in {ex['waves_total']} wave(s), "
                f"caps {ex['caps']}; follow it with GET {planner_url.rstrip('/')}/state")
        return Report(text, {"plan": _plan_json(result), "executed_by": "planner service", "execution": ex})
    outcome = await _changing(backend.execute(assignments, state, throttle=inputs.throttle, additional=additional,
                                              dry_run=dry_run),
                              "the reassignment may have started", "--list", dry_run=dry_run)
    text = _plan_summary(result.report) + "\n" + render.execute_text(outcome, backend.name)
    data = render.execute_json(outcome, backend.name) | {"plan": _plan_json(result)}
    return Report(text, data, _execute_code(outcome))
