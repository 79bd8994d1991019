"""Kafka's checks of a target replica list, shared by the engine (entries of
``/admin/reassign_partitions`` written by anyone) and the admin API (requests answered with
INVALID_REPLICA_ASSIGNMENT), so both refuse exactly the same lists with the same words.

    replicas_problem((4, 4, 5), brokers={4, 5})   # "duplicate broker in replicas [4, 4, 5]"
"""

from __future__ import annotations

from collections.abc import Container, Sequence


def replicas_problem(replicas: Sequence[int], brokers: Container[int]) -> str | None:
    """Why ``replicas`` cannot be a partition's target with ``brokers`` registered, or None."""
    if not replicas:
        return "empty replica list"
    if len(set(replicas)) != len(replicas):
        return f"duplicate broker in replicas {list(replicas)}"
    unknown = sorted({b for b in replicas if b not in brokers})
    if unknown:
        return f"unknown broker(s) {unknown} (not registered in /brokers/ids)"
    return None
