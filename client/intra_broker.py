"""kafka-reassign's moves between a broker's log directories (KIP-113), as Kafka's
ReassignPartitionsCommand makes them, through the AdminClient (``--bootstrap-server`` only).

``--execute`` with a reassignment JSON whose ``log_dirs`` name directories:

1. ``--replica-alter-log-dirs-throttle R`` sets ``replica.alter.log.dirs.io.max.bytes.per.second``
   to R on every broker with such a move (:func:`set_throttle`);
2. AlterReplicaLogDirs goes to each broker before the inter-broker reassignment
   (:func:`request_moves`): replicas the broker hosts start moving, the others answer
   REPLICA_NOT_AVAILABLE and the broker remembers the directory, so the replica the
   reassignment creates there starts in it;
3. after the reassignment is accepted, the replicas not yet moving are asked again every
   ``RETRY_INTERVAL_S`` until each is accepted or ``timeout_s`` passes (:func:`finish_moves`):
   REPLICA_NOT_AVAILABLE is retried, any other error is final.

``--verify`` describes the directories (:func:`client.logdirs.move_states`); once every partition
is reassigned and every replica is in its directory, the log-dir throttle is removed from every
broker that has one of its own (:func:`remove_throttle`), as Kafka's tool clears it at --verify.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from client import logdirs
from client.errors import ClusterMismatchError, KafkaApiError
from client.logdirs import LogDirMove, ReplicaKey
from client.wire import DYNAMIC_BROKER_CONFIG
from protocol.errors import ErrorCode

ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
# Kafka's tool asks again this often while the reassignment creates the replicas.
RETRY_INTERVAL_S = 0.1


@dataclass
class MovesOutcome:
    """What --execute did about the ``log_dirs`` of its reassignment JSON."""

    requested: dict[ReplicaKey, str]
    accepted: list[ReplicaKey] = field(default_factory=list)
    failed: dict[ReplicaKey, KafkaApiError] = field(default_factory=dict)
    timed_out: list[ReplicaKey] = field(default_factory=list)
    # replicas of partitions whose reassignment was refused: never asked after it
    skipped: list[ReplicaKey] = field(default_factory=list)
    throttle: int | None = None
    throttled_brokers: list[int] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not (self.failed or self.timed_out)

    def text(self) -> str:
        n = len(self.requested)
        if self.dry_run:
            lines = [f"Dry run: would move {n} replica(s) between log directories:"]
            lines += [f"  {t}-{p} on broker {b} -> {d}" for (t, p, b), d in sorted(self.requested.items())]
        else:
            lines = [f"Successfully started moving {len(self.accepted)} of {n} replica(s) between log directories"
                     + (": " + ",".join(f"{t}-{p}@{b}" for t, p, b in sorted(self.accepted)) if self.accepted else "")]
        for (t, p, b), err in sorted(self.failed.items()):
            lines.append(f"Failed to move {t}-{p} on broker {b} to {self.requested[(t, p, b)]}: {err.name} ({err.code})"
                         + (f": {err.message}" if err.message else ""))
        if self.timed_out:
            lines.append("Timed out before these replicas existed on their brokers, so they were not moved: "
                         + ",".join(f"{t}-{p}@{b}" for t, p, b in sorted(self.timed_out)))
        if self.skipped:
            lines.append("Not moved, their partition's reassignment was refused: "
                         + ",".join(f"{t}-{p}@{b}" for t, p, b in sorted(self.skipped)))
        if self.throttle is not None:
            lines.append(f"The replica-alter-log-dirs throttle limit {'would be' if self.dry_run else 'was'} set to "
                         f"{self.throttle} B/s on brokers {','.join(map(str, self.throttled_brokers))}")
            lines.append("Run --verify once the moves are done to remove it.")
        return "\n".join(lines)

    def as_json(self) -> dict:
        def key(k: ReplicaKey) -> dict:
            return {"topic": k[0], "partition": k[1], "broker": k[2], "log_dir": self.requested[k]}

        return {
            "requested": [key(k) for k in sorted(self.requested)],
            "started": [key(k) for k in sorted(self.accepted)],
            "failed": [key(k) | {"error": e.name, "code": e.code, "message": e.message}
                       for k, e in sorted(self.failed.items())],
            "timed_out": [key(k) for k in sorted(self.timed_out)],
            "skipped": [key(k) for k in sorted(self.skipped)],
            "throttle": self.throttle,
            "throttled_brokers": self.throttled_brokers,
        }


def _brokers(moves: Iterable[ReplicaKey]) -> list[int]:
    return sorted({b for _, _, b in moves})


async def check_dirs(admin, moves: dict[ReplicaKey, str], source: str) -> None:
    """Before anything changes: every named directory exists and is online on its broker
    (DescribeLogDirs for no partition: the directories only). A broker that does not answer is
    not judged here; its moves fail with its error later. ClusterMismatchError lists the rest."""
    logs = await admin.describe_log_dirs(broker_ids=_brokers(moves), partitions=[])
    problems = []
    for (topic, partition, broker), path in sorted(moves.items()):
        if broker not in logs.dirs:
            continue
        found = {d.path: d for d in logs.dirs[broker]}
        if path not in found:
            problems.append(f"{topic}-{partition}: broker {broker} has no log dir {path} "
                            f"(it has {', '.join(found) or 'none'})")
        elif found[path].error_code:
            problems.append(f"{topic}-{partition}: log dir {path} of broker {broker} is offline")
    if problems:
        raise ClusterMismatchError(f"{source}: " + "; ".join(problems) + "; nothing was changed")


async def set_throttle(admin, moves: dict[ReplicaKey, str], rate: int) -> list[int]:
    """The log-dir throttle on every broker with a move; returns those brokers."""
    brokers = _brokers(moves)
    for broker in brokers:
        await admin.alter_broker_config(broker, ALTER_LOG_DIRS_RATE, str(rate))
    return brokers


async def request_moves(admin, moves: dict[ReplicaKey, str], outcome: MovesOutcome) -> dict[ReplicaKey, str]:
    """One AlterReplicaLogDirs round: accepted and failed replicas go into ``outcome``; returns
    the moves still waiting for their replica (REPLICA_NOT_AVAILABLE)."""
    pending: dict[ReplicaKey, str] = {}
    result = await admin.alter_replica_log_dirs(moves)
    for key, err in result.items():
        if err is None:
            outcome.accepted.append(key)
        elif err.code == ErrorCode.REPLICA_NOT_AVAILABLE:
            pending[key] = moves[key]
        else:
            outcome.failed[key] = err
    return pending


async def finish_moves(admin, pending: dict[ReplicaKey, str], outcome: MovesOutcome, timeout_s: float,
                       clock: Callable[[], float] = time.monotonic, sleep=asyncio.sleep) -> None:
    """Ask again for ``pending`` until each is accepted or failed, or ``timeout_s`` passed."""
    deadline = clock() + timeout_s
    while pending:
        pending = await request_moves(admin, pending, outcome)
        if not pending or clock() >= deadline:
            break
        await sleep(min(RETRY_INTERVAL_S, max(0.0, deadline - clock())))
    outcome.timed_out = sorted(pending)


async def verify_moves(admin, moves: dict[ReplicaKey, str]) -> list[LogDirMove]:
    logs = await admin.describe_log_dirs(broker_ids=_brokers(moves),
                                         partitions=sorted({(t, p) for t, p, _ in moves}))
    return logdirs.move_states(moves, logs)


async def remove_throttle(admin, brokers: Iterable[int]) -> list[int]:
    """Delete the log-dir throttle from each broker that has its own value; returns those."""
    values = await admin.describe_broker_config(sorted(set(brokers)), ALTER_LOG_DIRS_RATE)
    removed = []
    for broker, (value, source) in sorted(values.items()):
        if value is not None and source == DYNAMIC_BROKER_CONFIG:
            await admin.alter_broker_config(broker, ALTER_LOG_DIRS_RATE, None)
            removed.append(broker)
    return removed


def verify_text(states: list[LogDirMove], removed: list[int] | None) -> str:
    lines = ["Status of replica log directory moves:"]
    lines += [f"Replica {m.topic}-{m.partition} on broker {m.broker}: {m.describe()}" for m in states]
    if removed is not None:
        lines.append(("The replica-alter-log-dirs throttle was removed from brokers " + ",".join(map(str, removed)) + ".")
                     if removed else "No replica-alter-log-dirs throttle to remove.")
    return "\n".join(lines)
