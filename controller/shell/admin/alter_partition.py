"""AlterPartition (56), v0-3: a partition leader asks the active controller to write its new
ISR (controller.core.alter_partition has the algorithm and its worked table); Kafka brokers of
inter.broker.protocol.version 2.7+ send it (AlterIsr, KIP-497) instead of writing the state znode.

 1. Active controller only (a standby: NOT_CONTROLLER, the leader finds the new one); CLUSTER_ACTION
    on the cluster (controller.shell.authorizer: only brokers hold it).
 2. Topics by name (v0-1) or by id (v2+: an id no topic has -> UNKNOWN_TOPIC_ID for its
    partitions, answered here); v3's ISR comes with each member's broker epoch.
 3. The named partitions' states are read from ZooKeeper (the zkVersion the leader holds is
    judged against the znode, not only against what this controller heard), and an
    IsrAlterRequested goes into the controller's queue; the answer goes out once the step's
    writes landed. A step whose writes fail (a state changed under it) -> UNKNOWN_SERVER_ERROR,
    the controller resigned with it queued -> NOT_CONTROLLER, no decision within MAX_WAIT_S ->
    REQUEST_TIMED_OUT: top-level errors, on which a Kafka leader sends its changes again.

    # broker 1, leader of logs-3 at leader epoch 4 and zkVersion 7, drops broker 3 (v1):
    {"broker_id": 1, "broker_epoch": 4294967340, "topics": [{"topic_name": "logs", "partitions": [
        {"partition_index": 3, "leader_epoch": 4, "new_isr": [1, 2], "leader_recovery_state": 0,
         "partition_epoch": 7}]}]}
    -> {"throttle_time_ms": 0, "error_code": 0, "topics": [{"topic_name": "logs", "partitions": [
        {"partition_index": 3, "error_code": 0, "leader_id": 1, "leader_epoch": 4, "isr": [1, 2],
         "leader_recovery_state": 0, "partition_epoch": 8}]}]}
"""

from __future__ import annotations

from controller.core.events import IsrAlterRequested, IsrProposal
from controller.shell.admin.base import AdminContext, Api, decided
from controller.shell.zkread import read_states
from protocol import ApiKey
from protocol.errors import ErrorCode

# A leader waits request.timeout.ms (30 s) for the answer, then sends again; the handler gives
# up before that, so that a wedged queue does not hold its connection for ever.
MAX_WAIT_S = 25.0
BY_ID_FROM_VERSION = 2  # KIP-841: topics by id
EPOCHS_FROM_VERSION = 3  # KIP-903: each ISR member with its broker epoch


def _partition(index: int, code: ErrorCode, state=None) -> dict:
    if state is None:  # Kafka sets only the error on a refused partition; the rest are defaults
        return {"partition_index": index, "error_code": int(code), "leader_id": 0, "leader_epoch": 0, "isr": [],
                "leader_recovery_state": 0, "partition_epoch": 0}
    return {"partition_index": index, "error_code": int(code), "leader_id": state.leader,
            "leader_epoch": state.leader_epoch, "isr": list(state.isr), "leader_recovery_state": 0,
            "partition_epoch": state.zk_version}


def _top(code: ErrorCode, topics=()) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "topics": list(topics)}


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    by_id = version >= BY_ID_FROM_VERSION
    proposals: list[IsrProposal] = []
    # Per topic of the request, in its order: its key (name or id) and per partition either the
    # proposal's partition or an answer decided here.
    layout: list[tuple[object, list[tuple[int, object]]]] = []
    for topic in body["topics"]:
        key = topic["topic_id"] if by_id else topic["topic_name"]
        name = active.state.topic_name_for_id(key) if by_id else key
        rows: list[tuple[int, object]] = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            if name is None:
                rows.append((index, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            if version >= EPOCHS_FROM_VERSION:
                members = p["new_isr_with_epochs"]
                isr, epochs = tuple(m["broker_id"] for m in members), tuple(m["broker_epoch"] for m in members)
            else:
                isr, epochs = tuple(p["new_isr"]), ()
            proposals.append(IsrProposal((name, index), p["leader_epoch"], isr, p["partition_epoch"],
                                         p.get("leader_recovery_state", 0), epochs))
            rows.append((index, (name, index)))
        layout.append((key, rows))
    top, results = ErrorCode.NONE, {}
    if proposals:
        states, _ = await read_states(ctx.store, [p.tp for p in proposals if p.tp in active.state.assignments])
        top, results = await decided(ctx, lambda future: IsrAlterRequested(
            body["broker_id"], body["broker_epoch"], tuple(proposals), states, version, future), MAX_WAIT_S)
        if top is not ErrorCode.NONE:
            return _top(top)
    topics = []
    for key, rows in layout:
        partitions = []
        for index, row in rows:
            if isinstance(row, ErrorCode):
                partitions.append(_partition(index, row))
            else:
                code, state = results[row]
                partitions.append(_partition(index, code, state))
        topics.append({("topic_id" if by_id else "topic_name"): key, "partitions": partitions})
    return _top(ErrorCode.NONE, topics)


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _top(code)


APIS = [
    Api(ApiKey.ALTER_PARTITION, "AlterPartition", 0, 3, controller_only=True, handle=handle_alter,
        error_response=alter_error),
]
