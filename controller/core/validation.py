"""Kafka's checks of a target replica list, shared by the engine (entries of
``/admin/reassign_partitions`` written by anyone) and the admin API (requests answered with
INVALID_REPLICA_ASSIGNMENT), so both refuse exactly the same lists with the same words.

The checks and their order are Kafka's (``KafkaController.validateReplicas``, 2.6+: empty,
duplicates, a negative id, then brokers that are not alive), and so are the words, lower-cased,
with the list printed as a Python list; the liveness check names only the brokers at fault
where Kafka prints every live broker (a large cluster's list would drown the message). As in
Kafka, only the replicas the target adds must be alive (``newAssignment.addingReplicas subsetOf
liveBrokerIds``): a target may keep a replica on a broker that is down, and its move waits for
that broker to come back and rejoin the ISR (the move completes when TRS is in the ISR).

    replicas_problem((4, 4, 5), brokers={4, 5}, current=(1, 2, 3))
    # "duplicate broker ids in partition reassignment replica list: [4, 4, 5]"
"""

from __future__ import annotations

from collections.abc import Container, Sequence


def replicas_problem(replicas: Sequence[int], brokers: Container[int], current: Sequence[int]) -> str | None:
    """Why ``replicas`` cannot be a partition's target with ``brokers`` registered, or None;
    ``current``: the partition's replicas before any move in progress (ORS), which may be down."""
    if not replicas:
        return "empty replica list specified in partition reassignment"
    if len(set(replicas)) != len(replicas):
        return f"duplicate broker ids in partition reassignment replica list: {list(replicas)}"
    if any(b < 0 for b in replicas):
        # Kafka refuses a negative id before asking whether it is alive: no broker can have it.
        return f"invalid broker id in replica list: {list(replicas)}"
    unknown = sorted({b for b in replicas if b not in brokers and b not in current})
    if unknown:
        return (f"unknown broker(s) {unknown} (not registered in /brokers/ids): "
                f"replica assignment has brokers that are not alive, replica list {list(replicas)}")
    return None
