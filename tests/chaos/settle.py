"""Settled moments: snapshots of the chaos cluster taken once it has had time to settle, for the
checker's leader, hosting and broker-epoch checks (checker.settled_problems).

The run looks until the snapshot shows nothing left to settle or ``SETTLE_BOUND_S`` passes,
then records the last snapshot either way (``{"type": "settled", "fault", "why", "waited_s",
"live", "states", "assignments", "deleting"[, "hosted"]}``; the workload's topics included, see
``ChaosCluster.snapshot``): waiting on the condition itself keeps a loaded machine from failing
the check, and the bound keeps a cluster that never settles from passing.

    await record_settled(cluster, history, fault_id=3, why="quiescent", hosted=True)
"""

from __future__ import annotations

import asyncio
import time

from tests.chaos import checker
from tests.chaos.history import History

# How long a settled moment may take to come: the controller elects leaders and sends
# LeaderAndIsr and StopReplica within a step or two of what it reacts to; the bound is far
# above that on a loaded 2-core machine and well below the quiescence bound.
SETTLE_BOUND_S = 30.0
POLL_S = 0.25


async def record_settled(cluster, history: History, *, fault_id: int, why: str, hosted: bool) -> dict:
    """Look until settled (or the bound), record the snapshot and return the record."""
    began = time.monotonic()
    snapshot: dict = {}
    while True:
        try:
            snapshot = await asyncio.to_thread(cluster.snapshot, hosted=hosted)
            if not checker.settled_problems(snapshot):
                break
        except Exception as e:  # ZooKeeper reconnecting, the sim's control port busy: look again
            snapshot = {"error": repr(e)[:300]}
        if time.monotonic() - began > SETTLE_BOUND_S:
            break
        await asyncio.sleep(POLL_S)
    return history.add("settled", fault=fault_id, why=why, waited_s=round(time.monotonic() - began, 2), **snapshot)
