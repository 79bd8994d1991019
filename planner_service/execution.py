"""A plan executed through the project's AdminClient, as an operator would run it: each wave
sent to the active controller's admin listener (the AdminClient's KIP-179 reassign_partitions,
with the throttle) and waited for, one after another.

Usage::

    ex = Execution(1, "decommission", "POST /remove_broker", "api", waves, throttle=10_485_760)
    await run_waves("controller:9190", ex, poll_s=1.0, reached=model.reached, security=security)
    ex.view()        # what /state shows: state, waves and partitions done, the error

``security`` is the listener's :class:`client.security.ClientSecurity` (``--command-config``);
None is PLAINTEXT.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from planner_service.clock import now_ms


@dataclass
class Execution:
    id: int
    mode: str
    reason: str
    started_by: str  # "api" or "self-healing"
    waves: list
    throttle: int | None
    started_ms: int = field(default_factory=now_ms)
    finished_ms: int | None = None
    state: str = "running"  # running, done, failed
    waves_done: int = 0
    partitions_done: int = 0
    error: str | None = None

    @property
    def partitions_total(self) -> int:
        return sum(len(w["partitions"]) for w in self.waves)

    def view(self) -> dict:
        return {
            "id": self.id, "mode": self.mode, "reason": self.reason, "started_by": self.started_by,
            "state": self.state, "started_ms": self.started_ms, "finished_ms": self.finished_ms,
            "waves_total": len(self.waves), "waves_done": self.waves_done,
            "partitions_total": self.partitions_total, "partitions_done": self.partitions_done,
            "throttle": self.throttle, "error": self.error,
        }


async def run_waves(bootstrap: str, ex: Execution, poll_s: float, reached, timeout_ms: int = 30_000,
                    security=None) -> None:
    """Send each wave to the controller and wait until it is done: the controller lists none of
    its partitions as running and ``reached(targets)`` (the model shows every target in place;
    a request the controller has not started yet is not listed as running either).
    ``security``: the listener's client.security.ClientSecurity (``--command-config``); None is
    PLAINTEXT."""
    from client.admin import AdminClient

    async with AdminClient(bootstrap, request_timeout_ms=timeout_ms, security=security) as admin:
        for i, wave in enumerate(ex.waves):
            targets = {(p["topic"], p["partition"]): list(p["replicas"]) for p in wave["partitions"]}
            # The first wave is refused if anything else is running; later ones join our own
            # (the controller may still be tidying the previous wave's request znode).
            result = await admin.reassign_partitions(targets, throttle=ex.throttle, additional=i > 0)
            result.all()
            while True:
                running = await admin.list_reassignments(list(targets))
                if not running and reached(targets):
                    break
                await asyncio.sleep(poll_s)
            ex.waves_done += 1
            ex.partitions_done += len(targets)
