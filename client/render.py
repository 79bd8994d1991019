"""Text and JSON renderings of kafka-reassign's outcomes. Pure.

Text follows the wording of Kafka's kafka-reassign-partitions.sh where Kafka has an
equivalent; JSON (``--output json``) holds the same facts with stable keys, for scripts.
"""

from __future__ import annotations

import datetime as _dt
import json

from client.errors import KafkaApiError
from client.inputs import reassignment_json
from client.outcomes import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    QUEUED,
    CancelOutcome,
    Described,
    ExecuteOutcome,
    Listed,
    VerifyOutcome,
    tp_name,
)
from znodes.values import TopicPartition


def plan_doc(assignments: dict[TopicPartition, list[int]]) -> dict:
    return json.loads(reassignment_json(assignments))


def error_json(tp: TopicPartition, err: KafkaApiError) -> dict:
    return {"topic": tp[0], "partition": tp[1], "error_code": err.code, "error": err.name, "message": err.message}


def _ms_to_iso(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat(timespec="seconds")


# ---- --generate / --rebalance ---------------------------------------------------------------


def generate_text(current: dict, proposed: dict, note: str | None = None) -> str:
    lines = ["Current partition replica assignment", reassignment_json(current), ""]
    if note:
        lines.append(note)
    lines += ["Proposed partition reassignment configuration", reassignment_json(proposed)]
    return "\n".join(lines)


def generate_json(current: dict, proposed: dict, **extra) -> dict:
    return {"current": plan_doc(current), "proposed": plan_doc(proposed), **extra}


# ---- --execute ------------------------------------------------------------------------------


def execute_text(o: ExecuteOutcome, mode: str) -> str:
    lines: list[str] = []
    if not o.queued:
        lines += [
            "Current partition replica assignment",
            "",
            reassignment_json(o.current),
            "",
            "Save this to use as the --reassignment-json-file option during rollback",
        ]
    if o.dry_run:
        what = "queue" if o.queued else "start a reassignment of"
        if mode == "zookeeper":
            lines.append(f"Dry run: would {what} {len(o.requested)} partition(s); nothing was written. Would write:")
            lines += [f"  {path} = {data}" for path, data in o.writes.items()]
        else:
            ok = len(o.requested) - len(o.failed)
            lines.append(
                f"Dry run: the controller validated {ok} of {len(o.requested)} partition(s); nothing was started."
            )
    else:
        if o.started:
            if o.queued:
                lines.append(
                    "Successfully queued partition reassignments for " + ",".join(tp_name(tp) for tp in o.started)
                    + " (KIP-236: the controller starts them as the running ones finish)"
                )
            else:
                lines.append("Successfully started partition reassignments for " + ",".join(tp_name(tp) for tp in o.started))
    for tp, err in sorted(o.failed.items()):
        lines.append(f"Failed to reassign partition {tp_name(tp)}: {err.name} ({err.code})" + (f": {err.message}" if err.message else ""))
    if o.throttle is not None and (o.started or o.dry_run):
        brokers = ",".join(map(str, o.throttled_brokers))
        lines.append(f"The inter-broker throttle limit was set to {o.throttle} B/s" + (f" on brokers {brokers}" if brokers else ""))
        if o.auto_remove_throttle:
            lines.append("The throttle is removed automatically when the reassignment completes (KIP-179).")
        else:
            lines.append(
                "Warning: You must run --verify periodically, until the reassignment completes, "
                "to ensure the throttle is removed."
            )
    return "\n".join(lines)


def execute_json(o: ExecuteOutcome, mode: str) -> dict:
    out = {
        "current": plan_doc(o.current),
        "proposed": plan_doc(o.requested),
        "dry_run": o.dry_run,
        "queued": o.queued,
        "started": [tp_name(tp) for tp in o.started],
        "failed": [error_json(tp, e) for tp, e in sorted(o.failed.items())],
        "throttle": o.throttle,
        "throttled_brokers": o.throttled_brokers,
        "auto_remove_throttle": o.auto_remove_throttle,
    }
    if mode == "zookeeper":
        out["writes"] = {path: json.loads(data) for path, data in o.writes.items()}
    return out


# ---- --verify / --verify-queue --------------------------------------------------------------

_VERIFY_TEXT = {
    COMPLETE: "Reassignment of partition {tp} is complete.",
    IN_PROGRESS: "Reassignment of partition {tp} is still in progress.",
    QUEUED: "Reassignment of partition {tp} is queued (waiting in the KIP-236 queue).",
}


def verify_text(o: VerifyOutcome) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in sorted(o.statuses):
        status = o.statuses[tp]
        if status == FAILED:
            now = o.current.get(tp)
            lines.append(
                f"Reassignment of partition {tp_name(tp)} failed: its replicas are {now}, "
                f"not the requested {o.requested[tp]}."
            )
        else:
            lines.append(_VERIFY_TEXT[status].format(tp=tp_name(tp)))
    if o.throttle_removed is not None:
        t, b = o.throttle_removed.get("topics", []), o.throttle_removed.get("brokers", [])
        if t or b:
            parts = []
            if t:
                parts.append("topics " + ",".join(t))
            if b:
                parts.append("brokers " + ",".join(map(str, b)))
            lines.append("Throttle was removed from " + " and ".join(parts) + ".")
        else:
            lines.append("No throttle to remove.")
    if o.throttle_note:
        lines.append(o.throttle_note)
    return "\n".join(lines)


def verify_json(o: VerifyOutcome) -> dict:
    return {
        "partitions": [
            {
                "topic": tp[0],
                "partition": tp[1],
                "status": o.statuses[tp],
                "replicas": o.current.get(tp),
                "requested": o.requested[tp],
            }
            for tp in sorted(o.statuses)
        ],
        "throttle_removed": o.throttle_removed,
        "note": o.throttle_note,
    }


# ---- --cancel -------------------------------------------------------------------------------


def cancel_text(o: CancelOutcome, mode: str) -> str:
    lines: list[str] = []
    if o.nothing_pending:
        return "No partition reassignment is in progress: nothing to cancel."
    if mode == "zookeeper":
        lines.append("Rolling back the current pending reassignments:")
        for tp, (replicas, original) in sorted(o.pending.items()):
            if original is None:
                lines.append(f"  {tp_name(tp)}: {replicas} has no original_replicas - the controller cannot roll it back and will skip it")
            else:
                lines.append(f"  {tp_name(tp)}: {replicas} -> {original}")
        if o.dry_run:
            lines.append("Dry run: the cancellation was not submitted.")
        elif o.submitted:
            lines.append("Successfully submitted cancellation of reassignments.")
            lines.append("The throttles of the cancelled reassignments are removed when the controller finishes.")
    else:
        verb = "Would cancel" if o.dry_run else "Cancelled"
        if o.cancelled:
            lines.append(f"{verb} the reassignment of " + ",".join(tp_name(tp) for tp in o.cancelled))
        for tp, err in sorted(o.failed.items()):
            lines.append(f"Could not cancel {tp_name(tp)}: {err.name} ({err.code})" + (f": {err.message}" if err.message else ""))
    return "\n".join(lines)


def cancel_json(o: CancelOutcome) -> dict:
    return {
        "dry_run": o.dry_run,
        "nothing_pending": o.nothing_pending,
        "submitted": o.submitted,
        "cancelled": [tp_name(tp) for tp in o.cancelled],
        "failed": [error_json(tp, e) for tp, e in sorted(o.failed.items())],
        "pending": [
            {"topic": tp[0], "partition": tp[1], "replicas": r, "original_replicas": orig}
            for tp, (r, orig) in sorted(o.pending.items())
        ],
        "cannot_roll_back": [tp_name(tp) for tp in o.unsafe],
    }


# ---- --list / --describe --------------------------------------------------------------------


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def _ids(values) -> str:
    return "-" if values is None else ",".join(map(str, values))


def list_text(items: list[Listed]) -> str:
    if not items:
        return "No partition reassignments in progress."
    rows = [("Topic", "Partition", "ReassignmentId", "State", "Replicas", "OriginalReplicas")]
    for i in items:
        rows.append((i.topic, str(i.partition), "-" if i.reassignment_id is None else str(i.reassignment_id),
                     i.state, _ids(i.replicas), _ids(i.original_replicas)))
    return "\n".join(_table(rows))


def listed_json(i: Listed) -> dict:
    return {
        "topic": i.topic,
        "partition": i.partition,
        "reassignment_id": i.reassignment_id,
        "state": i.state,
        "replicas": i.replicas,
        "original_replicas": i.original_replicas,
        "adding_replicas": i.adding,
        "removing_replicas": i.removing,
    }


def _rate(value: int | None) -> str:
    return "none" if value is None else f"{value} B/s"


def describe_text(items: list[Described]) -> str:
    if not items:
        return "No partition reassignments in progress."
    lines: list[str] = []
    for d in items:
        i = d.listed
        lines.append(f"Reassignment of {i.topic}-{i.partition} (id {i.reassignment_id})")
        lines.append(f"  started:          {_ms_to_iso(d.start_time)}")
        lines.append(f"  leader:           {d.leader} (throttle {_rate(d.leader_throttle)})")
        if i.replicas is not None:
            lines.append(f"  replicas:         {_ids(i.replicas)}")
        if i.original_replicas is not None:
            lines.append(f"  original:         {_ids(i.original_replicas)}")
        lines.append(
            "  new brokers:      "
            + (", ".join(f"{b} (throttle {_rate(d.follower_throttles.get(b))})" for b in d.new_brokers) or "none")
        )
    return "\n".join(lines)


def described_json(d: Described) -> dict:
    return {
        **listed_json(d.listed),
        "start_time_ms": d.start_time,
        "leader": d.leader,
        "leader_throttle": d.leader_throttle,
        "new_assigned_brokers": d.new_brokers,
        "follower_throttles": {str(b): t for b, t in d.follower_throttles.items()},
    }
