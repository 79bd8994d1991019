"""Preferred-leader elections right after a move or a reorder, asked again while the controller
still owns the partition. A move stops being listed a moment before the controller lets go of its
partition (its last step's writes land), so ElectLeaders answers REASSIGNMENT_IN_PROGRESS for it
then; such partitions are asked again, every ``RETRY_S``, at most ``RETRIES`` times (10 s).

    results = await elect_until_settled(admin.elect_preferred_leaders, [("t", 0)])
    # {("t", 0): None} elected or already leading; else the KafkaApiError of the last answer
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from client.errors import ReassignmentInProgressError

RETRIES, RETRY_S = 50, 0.2


async def elect_until_settled(elect: Callable[[list], Awaitable[dict]], partitions: list,
                              retries: int = RETRIES, retry_s: float = RETRY_S) -> dict:
    """``elect(partitions)`` (partition -> None or its error), with REASSIGNMENT_IN_PROGRESS
    asked again until none is left or the retries run out."""
    if not partitions:
        return {}
    results = await elect(partitions)
    for _ in range(retries):
        busy = [tp for tp, e in results.items() if isinstance(e, ReassignmentInProgressError)]
        if not busy:
            break
        await asyncio.sleep(retry_s)
        results.update(await elect(busy))
    return results
