"""ListPartitionReassignments (46, KIP-455): the reassignments in progress, Kafka's way.

Controller-only (NOT_CONTROLLER on a standby). Answered from the active controller's memory,
which holds what it wrote to the topic znodes (ZooKeeper before memory), so no read is needed:

 1. ``topics`` null: every partition with a move, started (its topic znode carries RS,
    adding and removing) or accepted and waiting for a slot (Kafka has no such wait: it lists
    every accepted move at once, so this one is listed as Kafka's ``reassignTo(target)`` of
    the current replicas). Otherwise only the listed partitions; one that is not being
    reassigned, or does not exist, is simply absent (as in Kafka).
 2. Per partition: ``replicas`` = RS (target followed by the replicas being removed),
    ``adding_replicas`` = AR, ``removing_replicas`` = RR, as the topic znode has them; a
    move being cancelled (KIP-236) is a move back to ORS: RS = ORS + AR, removing AR. A move
    that adds and removes nothing (a new order of the same replicas, waiting for one of them to
    rejoin the ISR; or the rollback of one) is not listed: Kafka lists a partition only while
    its assignment ``isBeingReassigned`` (adding or removing non-empty), whatever its
    controller still waits for.
 3. Grouped by topic, topics and partitions in order.
 4. The answer to ``topics`` null (what monitoring polls) is kept encoded until the state
    changes (``ClusterState.generation``): polling costs no rebuild while nothing moves.
"""

from __future__ import annotations


import protocol
from controller.core.state import ClusterState
from controller.shell.admin.base import AdminContext, Api
from controller.shell.listener import EncodedBody
from protocol import ApiKey
from protocol.errors import ErrorCode


def ongoing(state: ClusterState, wanted: list[tuple[str, int]] | None) -> list[dict]:
    """Steps 1-3 over the active controller's state."""
    tasks, assignments = state.tasks, state.assignments
    if wanted is None:
        keys = sorted(tasks)
    else:
        keys = sorted({tp for tp in wanted if tp in tasks})
    topics: list[dict] = []
    current: dict | None = None
    for tp in keys:
        move = tasks[tp]
        a = assignments.get(tp)
        if a is not None and a.moving:
            replicas, adding, removing = a.replicas, a.adding, a.removing
        elif getattr(move, "cancelling", False):
            # A KIP-236 rollback is a move back to ORS (as Kafka's ZooKeeper controller lists a
            # revert): the added replicas are the ones being removed.
            replicas, adding, removing = move.rollback_replicas, (), move.added
        elif not move.started:
            # Accepted, waiting for a slot: Kafka starts every accepted move at once, so its
            # list shows it from the answer on, as ReplicaAssignment.reassignTo(target) of the
            # current replicas.
            if a is None:
                continue
            target = tuple(move.target)
            replicas = target + tuple(r for r in a.replicas if r not in target)
            adding = tuple(r for r in target if r not in a.replicas)
            removing = tuple(r for r in a.replicas if r not in target)
        else:
            replicas, adding, removing = move.replicas, move.adding, move.removing
        if not adding and not removing:
            continue  # step 2: nothing moving, as Kafka judges it
        if current is None or current["name"] != tp[0]:
            current = {"name": tp[0], "partitions": []}
            topics.append(current)
        current["partitions"].append(
            {
                "partition_index": tp[1],
                "replicas": list(replicas),
                "adding_replicas": list(adding),
                "removing_replicas": list(removing),
            }
        )
    return topics


async def handle_list(ctx: AdminContext, version: int, body: dict) -> dict | EncodedBody:
    active = ctx.require_active()
    state = active.state
    requested = body.get("topics")
    if requested is not None:
        wanted = [(t["name"], p) for t in requested for p in t.get("partition_indexes") or ()]
        return _answer(ongoing(state, wanted))
    # Step 4: the whole list is encoded once per state change and its bytes reused (the state
    # is read and the answer built without a suspension point, so it is one consistent view).
    memos = active.caches.setdefault("list_everything", {})  # version -> (state, generation, encoded)
    memo = memos.get(version)
    if memo is not None and memo[0] is state and memo[1] == state.generation:
        return memo[2]
    encoded = EncodedBody(protocol.encode_body(ApiKey.LIST_PARTITION_REASSIGNMENTS, version, "response", _answer(ongoing(state, None))))
    memos[version] = (state, state.generation, encoded)
    return encoded


def _answer(topics: list[dict]) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics}


def list_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "topics": []}


APIS = [
    Api(ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", 0, 0, controller_only=True,
        handle=handle_list, error_response=list_error),
]
