"""kafka-reassign --demote-broker ID[,ID...]: every leadership moved off those brokers without
moving data (Cruise Control's demote_broker), through the controller's admin listener.

1. The plan: spark_jobs.demote over a Metadata-only snapshot (no Spark, no DescribeLogDirs),
   or with ``--planner URL`` the planner service's ``POST /demote_broker`` dry run.
2. The reorders (replica sets unchanged) go to the controller as one reassignment (KIP-179;
   refused while another runs, as --execute without --additional is); the command waits until
   Metadata shows each at its new order and the controller lists none of them.
3. ElectLeaders (preferred) for the partitions the brokers led: ELECTION_NOT_NEEDED is success,
   REASSIGNMENT_IN_PROGRESS is retried (client.commands' --elect-preferred does the same).
4. Metadata is read again: the report names any partition a demoted broker still leads.

``--dry-run`` stops after 1. The output carries the rollback (the reordered partitions'
original lists, Kafka's reassignment JSON): once the broker is back, ``kafka-reassign
--execute --elect-preferred --reassignment-json-file`` with it makes the broker first, and the
leader, again.
"""

from __future__ import annotations

import asyncio
import json
import time

from client import exit_codes, planner
from client.commands import Inputs, Report
from client.elect import elect_until_settled
from client.errors import ClusterDataError, PlanRefusedError, ProtocolViolationError
from client.inputs import Reassignment
from client.cluster import check_plan

# How long the reorders may take to show in Metadata: the controller completes a reorder in the
# step that starts it when every replica is in the ISR (the plan leaves out the others), so
# this is a bound on the controller's flush and UpdateMetadata, not on any copy.
REORDER_WAIT_S = 60.0
REORDER_POLL_S = 0.2


async def demote(backend, inputs: Inputs, *, timeout_ms: int, dry_run: bool, planner_url: str | None = None) -> Report:
    brokers = inputs.brokers_to_demote
    state = await backend.cluster_state()
    reorders, elect, report = await _plan(backend, brokers, timeout_ms, planner_url, inputs.service_timeout_s)
    check_plan(Reassignment(reorders, f"--demote-broker {_ids(brokers)}"), state)
    data = {"demoted_brokers": sorted(brokers), "plan": {k: report.get(k) for k in (
        "partitions_reordered_only", "leaderships_to_move", "leader_stays", "skipped", "warnings")},
            "reorders": _doc(reorders)["partitions"], "elect": [{"topic": t, "partition": p} for t, p in elect],
            "rollback": report["rollback"], "dry_run": dry_run}
    lines = [f"Demoting broker(s) {_ids(brokers)}: {len(reorders)} replica list(s) reordered (nothing copied), "
             f"{len(elect)} leadership(s) to move."]
    before = {(e["topic"], e["partition"]): e["replicas"] for e in report["rollback"]["partitions"]}
    lines += [f"  {t}-{p}: {before.get((t, p))} -> {r}" for (t, p), r in sorted(reorders.items())]
    lines += [f"Warning: {w}" for w in report.get("warnings", [])]
    if dry_run:
        lines.append("Dry run: nothing was changed.")
        return Report("\n".join(lines), data)
    if reorders:
        outcome = await backend.execute(reorders, state)
        if outcome.failed:
            data["failed"] = [{"topic": t, "partition": p, "error": str(e)} for (t, p), e in sorted(outcome.failed.items())]
            lines += [f"  refused {t}-{p}: {e}" for (t, p), e in sorted(outcome.failed.items())]
            lines.append("Nothing was elected: the reorders were refused.")
            return Report("\n".join(lines), data, exit_codes.REJECTED)
        await _wait_reordered(backend.admin, reorders)
    results = await _elect(backend.admin, elect)
    failed = {tp: e for tp, e in results.items() if e is not None}
    still = await _led_by(backend.admin, set(brokers))
    data["preferred_election"] = {
        "elected": [{"topic": t, "partition": p} for (t, p) in sorted(results) if results[(t, p)] is None],
        "failed": [{"topic": t, "partition": p, "error": str(e)} for (t, p), e in sorted(failed.items())]}
    data["still_led_by_demoted"] = [{"topic": t, "partition": p, "leader": b} for (t, p), b in sorted(still.items())]
    lines.append(f"Preferred leaders elected for {len(results) - len(failed)} partition(s).")
    lines += [f"  {t}-{p}: {e}" for (t, p), e in sorted(failed.items())]
    lines.append(f"Partitions still led by a demoted broker: {len(still)}"
                 + (" (" + ", ".join(f"{t}-{p} by {b}" for (t, p), b in sorted(still.items())) + ")" if still else ""))
    if reorders:
        lines += ["", "Replica lists before the demotion (to undo it once the broker is back, save this to a file "
                      "and run --execute --elect-preferred --reassignment-json-file FILE):", "",
                  json.dumps(report["rollback"])]
    return Report("\n".join(lines), data, exit_codes.REJECTED if failed else exit_codes.OK)


def _ids(brokers) -> str:
    return ",".join(map(str, brokers))


def _doc(lists: dict) -> dict:
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                         for (t, p), r in sorted(lists.items())]}


async def _plan(backend, brokers: list[int], timeout_ms: int, planner_url: str | None,
                service_timeout_s: float = planner.SERVICE_TIMEOUT_S):
    """(reorders, partitions to elect, the plan's report), from the service or computed here."""
    if planner_url:
        result = await planner.plan_from_service(planner_url, "demote", brokers=brokers,
                                                 timeout_s=service_timeout_s)
        report = result.report
        try:
            reorders = {(e["topic"], e["partition"]): list(e["replicas"]) for e in result.reassignment["partitions"]}
            elect = [(e["topic"], e["partition"]) for e in report["elect"]]
            if not isinstance(report["rollback"]["partitions"], list):
                raise TypeError("rollback")
        except (KeyError, TypeError):
            # the service's answer in another shape: a peer this tool cannot use (exit 4), not cluster data
            raise ProtocolViolationError(f"the planner service's demotion has no reorders or elections: "
                                         f"{str(report)[:200]}") from None
        return reorders, elect, report
    from spark_jobs.demote import plan_demotion
    from spark_jobs.errors import PlanError

    snap = await planner.snapshot_from_admin(backend.admin, sizes=False)
    try:
        d = plan_demotion(snap, brokers)
    except PlanError as e:
        raise PlanRefusedError(str(e)) from None
    return d.reorders, d.elect, d.report()


async def _wait_reordered(admin, reorders: dict) -> None:
    """Until Metadata shows every reorder at its new list and the controller lists none of
    them: an election before that would find the demoted broker still preferred."""
    deadline = time.monotonic() + REORDER_WAIT_S
    topics = sorted({t for t, _ in reorders})
    while True:
        running = await admin.list_reassignments(sorted(reorders))
        now = (await admin.describe_cluster(topics)).assignment()
        left = [tp for tp, r in reorders.items() if tp in running or now.get(tp[0], {}).get(tp[1]) != r]
        if not left:
            return
        if time.monotonic() >= deadline:
            raise ClusterDataError(f"{len(left)} reorder(s) not done after {REORDER_WAIT_S:g}s "
                                   f"(first: {left[0][0]}-{left[0][1]}); nothing was elected")
        await asyncio.sleep(REORDER_POLL_S)


async def _elect(admin, partitions: list) -> dict:
    return await elect_until_settled(admin.elect_preferred_leaders, partitions)


async def _led_by(admin, brokers: set[int]) -> dict:
    """Partition -> its leader, for those a demoted broker leads now."""
    meta = await admin.describe_cluster(None)
    return {(t, p): m.leader for t, ps in meta.topics.items() for p, m in ps.items() if m.leader in brokers}
