"""A disk-balance proposal (POST /rebalance_disk, :mod:`spark_jobs.disks`) executed: its
intra-broker moves are AlterReplicaLogDirs to each broker (the AdminClient's
``alter_replica_log_dirs``, KIP-113), not a reassignment at the controller, then watched through
DescribeLogDirs until each replica's current log is in its directory.

A move the broker refuses (LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR, REPLICA_NOT_AVAILABLE: not
hosted now) is ``unmoved`` with that error; one that stops copying into its directory without
getting there (someone moved it elsewhere, its directory went offline) is ``unmoved`` once
:data:`ENDED_CONFIRMATIONS` polls in a row see it so. A stop (POST /stop_proposal_execution)
lets the copies finish, there being nothing more to start; ``force_stop`` asks each broker to
keep every replica still copying in the directory it is in (AlterReplicaLogDirs to its current
directory drops the future log, as Kafka does), and those are ``unmoved`` as rolled back. At the
deadline what still copies is ``still_moving``.

Usage::

    ex = Execution(3, "rebalance_disk", "POST /rebalance_disk", "api", [wave], None, deadline_ms=...)
    await run_disk_moves("controller:9190", ex, moves, poll_s=1.0)   # moves: (topic, partition, broker) -> dir
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from client.logdirs import CANCELLED, COMPLETE, MISSING, NOT_STARTED, UNAVAILABLE, LogDirMove, ReplicaKey
from planner_service.clock import now_ms
from planner_service.execution import ENDED_CONFIRMATIONS, Execution

REASON_ENDED = "stopped copying into its directory without getting there: {state}"
REASON_FORCE_STOPPED = "kept in {dir} by POST /stop_proposal_execution?force_stop=true (its future log dropped)"
# the states in which a move is no longer heading for its directory
ENDED_STATES = (CANCELLED, NOT_STARTED, MISSING)


@dataclass
class MoveWatch:
    """The moves still copying, as successive DescribeLogDirs polls see them. Pure."""

    targets: dict  # ReplicaKey -> directory
    ended_polls: dict = field(default_factory=dict)

    def observe(self, states: list[LogDirMove], forced: bool) -> tuple[set, dict]:
        """(done, ended: key -> its LogDirMove) from one poll. A broker that could not be
        described (UNAVAILABLE) changes nothing; after a force stop an ended move ends at once."""
        done, ended = set(), {}
        for st in states:
            key = (st.topic, st.partition, st.broker)
            if st.state == COMPLETE:
                done.add(key)
                self.ended_polls.pop(key, None)
            elif st.state in ENDED_STATES:
                self.ended_polls[key] = self.ended_polls.get(key, 0) + 1
                if forced or self.ended_polls[key] >= ENDED_CONFIRMATIONS:
                    ended[key] = st
            elif st.state != UNAVAILABLE:
                self.ended_polls.pop(key, None)
        return done, ended


def _unmoved(key: ReplicaKey, target: str, reason: str) -> dict:
    return {"topic": key[0], "partition": key[1], "broker": key[2], "log_dir": target, "reason": reason}


async def run_disk_moves(bootstrap: str, ex: Execution, moves: dict[ReplicaKey, str], poll_s: float,
                         timeout_ms: int = 30_000, security=None) -> None:
    """Send ``moves`` to their brokers and watch them until each is done or ended, the
    deadline passes, or a force stop rolls them back; set ``ex.state`` to how it ended."""
    from client.admin import AdminClient
    from client.intra_broker import verify_moves

    partitions: dict = {}
    for t, p, b in moves:
        partitions.setdefault((t, p), set()).add((t, p, b))
    async with AdminClient(bootstrap, request_timeout_ms=timeout_ms, security=security) as admin:
        answer = await admin.alter_replica_log_dirs(dict(moves))
        for key, err in sorted(answer.items()):
            if err is not None:
                ex.unmoved.append(_unmoved(key, moves[key], f"refused by broker {key[2]}: {err}"))
        watch = MoveWatch({k: moves[k] for k, err in answer.items() if err is None})
        left = set(watch.targets)
        finished: set = set()
        forced = False
        while left:
            if ex.stop == "force" and not forced:
                forced = True
                states = await verify_moves(admin, {k: moves[k] for k in left})
                back = {(s.topic, s.partition, s.broker): s.current for s in states
                        if s.current is not None and s.state != COMPLETE}
                if back:
                    await admin.alter_replica_log_dirs(back)
            states = await verify_moves(admin, {k: moves[k] for k in left})
            done, ended = watch.observe(states, forced)
            finished |= done
            for key, st in sorted(ended.items()):
                reason = (REASON_FORCE_STOPPED.format(dir=st.current) if forced
                          else REASON_ENDED.format(state=st.describe()))
                ex.unmoved.append(_unmoved(key, moves[key], reason))
            left -= done | set(ended)
            ex.partitions_done = sum(1 for keys in partitions.values() if keys <= finished)
            if not left:
                break
            if ex.deadline_ms is not None and now_ms() >= ex.deadline_ms:
                ex.still_moving = [{**_unmoved(k, moves[k], ""), "reason": None} for k in sorted(left)]
                ex.state = "failed"
                ex.error = (f"deadline passed ({ex.deadline_ms} ms since the epoch) with {len(left)} replicas still "
                            "copying between directories; they go on at the brokers")
                return
            try:  # a force stop is acted on at once, not at the next poll
                await asyncio.wait_for(ex._force.wait(), poll_s) if not forced else await asyncio.sleep(poll_s)
            except asyncio.TimeoutError:
                pass
    ex.waves_done = 1
    ex.current = {}
    if forced:
        ex.state = "stopped"
    elif ex.unmoved:
        ex.state = "failed"
        ex.error = f"{len(ex.unmoved)} of {len(moves)} intra-broker moves did not reach their directory"
    else:
        ex.state = "done"
