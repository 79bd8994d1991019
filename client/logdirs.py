"""Intra-broker moves (KIP-113) for kafka-reassign: AlterReplicaLogDirs bodies and answers, and
where each requested move stands according to DescribeLogDirs. Pure.

A move is one replica, ``(topic, partition, broker)``, and the absolute directory it should live
in on that broker (a reassignment JSON's ``log_dirs`` entry other than ``"any"``). Its state, as
Kafka's ReassignPartitionsCommand names them:

=============  ============================================================================
complete       the replica's current log is in the directory
in progress    a future log in the directory is copying (``remaining``: bytes it lacks)
cancelled      a future log is copying into another directory
not started    the replica is elsewhere and nothing copies it into the directory
missing        the broker reports no such replica (not created yet, or its directory is offline)
=============  ============================================================================

    bodies = requests_by_broker({("t", 0, 2): "/data/d2"})   # {2: {"dirs": [...]}}
    move_state(("t", 0, 2), "/data/d2", logs)                # LogDirMove(..., state="in progress")
"""

from __future__ import annotations

from dataclasses import dataclass

from client.errors import KafkaApiError, error_for_code
from client.metadata import LogDirsResult
from protocol.errors import ErrorCode

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)

ANY = "any"  # Kafka's "no directory asked for" in a reassignment JSON
COMPLETE = "complete"
IN_PROGRESS = "in progress"
CANCELLED = "cancelled"
NOT_STARTED = "not started"
MISSING = "missing"
UNAVAILABLE = "broker unavailable"



@dataclass(frozen=True, order=True)
class LogDirMove:
    topic: str
    partition: int
    broker: int
    target: str
    state: str
    current: str | None = None  # the directory of the current log, where reported
    future: str | None = None  # the directory of a future log, where one copies
    remaining: int | None = None  # bytes the future log in ``target`` still lacks

    @property
    def done(self) -> bool:
        return self.state == COMPLETE

    def describe(self) -> str:
        if self.state == COMPLETE:
            return f"Done: in {self.target}"
        if self.state == IN_PROGRESS:
            return f"In progress: {self.current} -> {self.target}, {self.remaining} bytes left"
        if self.state == CANCELLED:
            return f"Cancelled: copying into {self.future} instead of {self.target}"
        if self.state == NOT_STARTED:
            return f"Not started: in {self.current}, nothing copies it into {self.target}"
        if self.state == UNAVAILABLE:
            return "Broker unavailable: its log dirs could not be described"
        return "Missing: the broker reports no such replica (not created yet, or its log dir is offline)"

    def as_json(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "broker": self.broker, "log_dir": self.target,
                "state": self.state, "current_log_dir": self.current, "future_log_dir": self.future,
                "bytes_remaining": self.remaining}


def requests_by_broker(moves: dict[ReplicaKey, str]) -> dict[int, dict]:
    """One AlterReplicaLogDirs body per broker, directories and topics in a stable order."""
    grouped: dict[int, dict[str, dict[str, list[int]]]] = {}
    for (topic, partition, broker), path in moves.items():
        grouped.setdefault(broker, {}).setdefault(path, {}).setdefault(topic, []).append(partition)
    return {
        broker: {"dirs": [
            {"path": path, "topics": [{"name": t, "partitions": sorted(ps)} for t, ps in sorted(topics.items())]}
            for path, topics in sorted(dirs.items())
        ]}
        for broker, dirs in sorted(grouped.items())
    }


def results(broker: int, answer: dict, asked: list[ReplicaKey]) -> dict[ReplicaKey, KafkaApiError | None]:
    """Each replica asked of ``broker``: None or its error; one the answer leaves out is an error."""
    codes = {(r["topic_name"], p["partition_index"]): p["error_code"]
             for r in answer.get("results") or [] for p in r.get("partitions") or []}
    out: dict[ReplicaKey, KafkaApiError | None] = {}
    for key in asked:
        topic, partition, _ = key
        code = codes.get((topic, partition))
        if code is None:
            out[key] = error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"broker {broker}'s answer left this replica out",
                                      topic=topic, partition=partition, broker_id=broker)
        else:
            out[key] = None if code == 0 else error_for_code(code, topic=topic, partition=partition, broker_id=broker)
    return out


def move_state(key: ReplicaKey, target: str, logs: LogDirsResult) -> LogDirMove:
    """Where the move of ``key`` into ``target`` stands in a DescribeLogDirs result."""
    topic, partition, broker = key
    tp = (topic, partition)
    if broker in logs.errors or broker not in logs.replicas:
        return LogDirMove(topic, partition, broker, target, UNAVAILABLE)
    current = logs.replicas[broker].get(tp)
    future = logs.future.get(broker, {}).get(tp)
    if current is None:
        return LogDirMove(topic, partition, broker, target, MISSING)
    if current.log_dir == target:
        return LogDirMove(topic, partition, broker, target, COMPLETE, current.log_dir)
    if future is not None and future.log_dir == target:
        return LogDirMove(topic, partition, broker, target, IN_PROGRESS, current.log_dir, future.log_dir,
                          max(0, current.size - future.size))
    if future is not None:
        return LogDirMove(topic, partition, broker, target, CANCELLED, current.log_dir, future.log_dir)
    return LogDirMove(topic, partition, broker, target, NOT_STARTED, current.log_dir)


def move_states(moves: dict[ReplicaKey, str], logs: LogDirsResult) -> list[LogDirMove]:
    return sorted(move_state(key, target, logs) for key, target in moves.items())
