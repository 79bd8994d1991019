"""``--bootstrap-server`` mode: kafka-reassign's actions through the AdminClient (KIP-179).

Same methods and outcomes as :class:`client.zk_backend.ZkBackend`, so the CLI does not care
which way the cluster is reached. Differences an operator sees:

* throttles set with ``--execute --throttle`` are removed by the controller when the
  reassignment completes (KIP-179), so ``--verify`` has nothing to remove;
* ``--cancel`` may name partitions (a reassignment JSON file), not only "everything";
* ``--execute-queue`` cancels the named partitions that are already moving (KIP-236: first
  rolled back, then reassigned), then sends ReassignPartitions v1 (additional semantics): the
  controller starts their new target once the rollback ends - the wire form of KIP-236's
  queue, whose znode only ``--zookeeper`` can write. ``--verify-queue`` is then ``--verify``.

Usage::

    backend = await AdminBackend.open("127.0.0.1:9190")
    state = await backend.cluster_state()
    outcome = await backend.execute(plan.assignments, state, throttle=10_000_000)
    await backend.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from client.admin import AdminClient
from client.cluster import ClusterAssignment
from client.errors import ConflictError, UnsupportedVersionError
from client.outcomes import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    CancelOutcome,
    Described,
    ExecuteOutcome,
    Listed,
    VerifyOutcome,
)
from client.wire import UNTHROTTLED
from znodes.values import TopicPartition


class AdminBackend:
    name = "bootstrap"

    def __init__(self, admin: AdminClient):
        self.admin = admin

    @classmethod
    async def open(cls, servers: str, timeout_ms: int, security=None) -> "AdminBackend":
        admin = AdminClient(servers, request_timeout_ms=timeout_ms, security=security)
        await admin.start()
        return cls(admin)

    async def close(self) -> None:
        await self.admin.close()

    async def cluster_state(self, topics: Iterable[str] | None = None) -> ClusterAssignment:
        meta = await self.admin.describe_cluster(None if topics is None else sorted(set(topics)))
        # Metadata lists brokers and controller instances in one id space; the active
        # controller hosts no replicas, so it is no target for one.
        brokers = {n: node.rack for n, node in meta.nodes.items() if n != meta.controller_id}
        running = await self.admin.list_reassignments()
        return ClusterAssignment(
            brokers=brokers,
            topics=meta.assignment(),
            in_flight={tp: [] for tp in running},
            leaders=meta.leaders(),
        )

    async def execute(
        self,
        requested: dict[TopicPartition, list[int]],
        state: ClusterAssignment,
        *,
        throttle: int | None = None,
        additional: bool = False,
        dry_run: bool = False,
        queued: bool = False,
        skip_isr_check: bool = False,
        movement_strategies: tuple[str, ...] = (),
    ) -> ExecuteOutcome:
        current = state.current(requested)
        outcome = ExecuteOutcome(
            dict(requested), current, throttle=throttle, dry_run=dry_run,
            auto_remove_throttle=throttle is not None, queued=queued,
        )
        if state.in_flight and not (additional or queued):
            raise ConflictError(
                f"Cannot execute because there is an existing partition reassignment "
                f"({len(state.in_flight)} partition(s) moving). Use --additional to add to it, "
                "or --execute-queue to replace running ones."
            )
        result = await self.admin.reassign_partitions(
            requested, throttle=throttle, auto_remove_throttle=True,
            validate_only=dry_run, additional=additional or queued, skip_isr_check=skip_isr_check,
            movement_strategies=movement_strategies or None,
        )
        outcome.failed = result.errors
        if not dry_run:
            outcome.started = sorted(result.succeeded)
        if throttle is not None:
            brokers: set[int] = set()
            for tp, target in requested.items():
                if target != current.get(tp):
                    brokers.update(target)
                    brokers.update(current.get(tp, []))
            outcome.throttled_brokers = sorted(brokers)
        return outcome

    async def wait_finished(self, partitions, interval_s: float = 1.0) -> None:
        """Until none of ``partitions`` is being reassigned (KIP-240 list, polled)."""
        wanted = set(partitions)
        while wanted & set(await self.admin.list_reassignments()):
            await asyncio.sleep(interval_s)

    async def elect_preferred(self, partitions) -> dict:
        """ElectLeaders (preferred) for ``partitions``: per partition None or the error."""
        return await self.admin.elect_preferred_leaders(partitions)

    async def queue(self, requested, state, *, dry_run: bool = False) -> ExecuteOutcome:
        # KIP-236: a queued partition that is already moving is first rolled back, then
        # reassigned (the controller starts the new target once the rollback ends).
        running = sorted(tp for tp in requested if tp in state.in_flight)
        if running and not dry_run:
            await self.admin.cancel_reassignments(running)
        return await self.execute(requested, state, dry_run=dry_run, queued=True)

    async def verify(
        self, requested: dict[TopicPartition, list[int]], state: ClusterAssignment, *, dry_run: bool = False,
        preserve_throttles: bool = False,
    ) -> VerifyOutcome:
        """Each partition's status; this tool removes no inter-broker throttle here (the
        controller does, KIP-179), so ``preserve_throttles`` changes nothing on this side."""
        running = await self.admin.list_reassignments(sorted(k for k in requested if k[0] in state.topics))
        statuses: dict[TopicPartition, str] = {}
        current: dict[TopicPartition, list[int] | None] = {}
        for tp, target in requested.items():
            now = state.topics.get(tp[0], {}).get(tp[1])
            current[tp] = now
            statuses[tp] = IN_PROGRESS if tp in running else COMPLETE if now == target else FAILED
        return VerifyOutcome(
            statuses, current, dict(requested),
            throttle_note="Throttles set with --bootstrap-server are removed by the controller "
                          "when the reassignment completes (KIP-179).",
        )

    async def verify_queue(self, requested, state) -> VerifyOutcome:
        return await self.verify(requested, state, dry_run=True)

    async def cancel(self, partitions: list[TopicPartition] | None, *, dry_run: bool = False) -> CancelOutcome:
        result = await self.admin.cancel_reassignments(partitions, validate_only=dry_run)
        outcome = CancelOutcome(dry_run=dry_run)
        outcome.cancelled = sorted(result.succeeded)
        outcome.failed = result.errors
        outcome.submitted = not dry_run
        if partitions is None and not len(result):
            outcome.nothing_pending = True
        return outcome

    async def _replica_detail(self) -> dict:
        try:
            return await self.admin.list_partition_reassignments()
        except UnsupportedVersionError:
            return {}

    async def list_reassignments(self) -> list[Listed]:
        running = await self.admin.list_reassignments()
        detail = await self._replica_detail()
        out = []
        for tp, r in running.items():
            replicas, adding, removing = detail.get(tp, (None, None, None))
            target = None if replicas is None else [b for b in replicas if b not in (removing or [])]
            original = None if replicas is None else [b for b in replicas if b not in (adding or [])]
            out.append(Listed(tp[0], tp[1], r.reassignment_id, target, original, adding, removing))
        return out

    async def describe_reassignments(self) -> list[Described]:
        listed = {(i.topic, i.partition): i for i in await self.list_reassignments()}
        running = await self.admin.list_reassignments()
        described = await self.admin.describe_reassignments(running.values())
        out = []
        for d in described.values():
            if d is None:  # finished between list and describe
                continue
            r = d.reassignment
            item = listed.get(r.topic_partition) or Listed(r.topic, r.partition, r.reassignment_id)
            if item.replicas is None:
                item = Listed(r.topic, r.partition, r.reassignment_id, d.new_assigned_brokers)
            new = [b for b in d.new_assigned_brokers if b not in (item.original_replicas or [])]
            out.append(Described(
                item, d.start_time, d.current_leader,
                None if d.leader_throttle == UNTHROTTLED else d.leader_throttle,
                new if item.original_replicas is not None else list(d.new_assigned_brokers),
                {b: (None if t == UNTHROTTLED else t) for b, t in d.new_assigned_throttles.items()},
            ))
        return out
