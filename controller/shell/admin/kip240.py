"""KIP-240: ListReassignments (10003) and DescribeReassignments (10004).

Both are controller-only (NOT_CONTROLLER on a standby). A reassignment is identified by the
czxid of its KIP-240 record ``/admin/reassignments/T/P`` (``reassignment_id``); the record's
ctime is its ``start_time``. Two successive reassignments of one partition have two records,
so two ids: a client holding an old id is told nothing about the new one.

ListReassignments, step by step:

 1. Which partitions: ``topic_partition`` null means every running one (a move that has
    started: its record exists). Otherwise the listed ones; a listed partition that does not
    exist makes the whole answer UNKNOWN_TOPIC_OR_PARTITION (the KIP's error, naming it); one
    that exists but is not being reassigned is absent.
 2. The running set comes from the active controller's memory. Each record's czxid comes from
    ZooKeeper, read once per move and cached on the record path together with the move it was
    read for: a new move of the partition (a new record) is a different move, so it is re-read.
    Records read missing (the move just ended) are left out.

DescribeReassignments, step by step (the KIP's "Proposed Changes"):

 1. Read each requested record (one bulk read). A record that is gone, or whose czxid is not
    the ``reassignment_id`` asked about, is omitted: not an error.
 2. Read the partition states (current leader), the topics' configs (which replicas are
    throttled) and the configs of the brokers concerned and of the cluster-wide default entity
    (the rates), all in one bulk read.
 3. ``leader_throttle``: the leader's ``leader.replication.throttled.rate`` if the topic's
    ``leader.replication.throttled.replicas`` covers (P, leader); ``new_assigned``: each target
    broker with its ``follower.replication.throttled.rate`` if the topic's
    ``follower.replication.throttled.replicas`` covers (P, broker). Otherwise, or when no rate
    is set, Long.MAX_VALUE ("not throttled", as the KIP says). A broker without its own rate
    takes the default entity's (Kafka's dynamic default).
 4. Answer in request order, each description carrying its topic and partition (v1's tagged
    ``topic`` and ``partition_id``; the codec leaves them out of v0). Moves started in one step
    are created by one multi-op, one zxid, so they share a ``reassignment_id``: the id alone
    does not say which partition a description is for. Each partition asked about is
    described on its own, whichever ids it shares.
"""

from __future__ import annotations


from controller.shell import throttle_configs as tc
from controller.shell.admin.base import AdminContext, Api, ApiError
from controller.shell.admin.configs import UnreadableConfig, read_configs
from controller.shell.admin.metadata import read_states
from protocol import ApiKey, throttled_replicas
from protocol.errors import ErrorCode
from znodes import paths
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_record
from znodes.reads import get_many

UNTHROTTLED = 2**63 - 1  # Java's Long.MAX_VALUE: KIP-240's "not throttled"
NO_LEADER = -1

async def running_ids(ctx: AdminContext, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Step 2 of ListReassignments: the record czxid of each running partition in ``tps``."""
    active = ctx.require_active()
    tasks = active.state.tasks
    cache = active.caches.setdefault("record_ids", {})  # tp -> (the Move it was read for, czxid, ctime)
    out: dict[tuple[str, int], int] = {}
    missing: list[tuple[str, int]] = []
    for tp in tps:
        hit = cache.get(tp)
        if hit is not None and hit[0] is tasks.get(tp):
            out[tp] = hit[1]
        else:
            missing.append(tp)
    if missing:
        moves = {tp: tasks.get(tp) for tp in missing}  # the moves the reads are for
        reads = await get_many(active.store, [paths.reassignment(*tp) for tp in missing])
        for tp, read in zip(missing, reads):
            if read is None:
                cache.pop(tp, None)
                continue
            stat = read[1]
            cache[tp] = (moves[tp], stat.czxid, stat.ctime)
            out[tp] = stat.czxid
    if len(cache) > 2 * len(tasks) + 64:  # forget partitions no longer moving
        for tp in [tp for tp in cache if tp not in tasks]:
            del cache[tp]
    return {tp: out[tp] for tp in tps if tp in out}


async def handle_list(ctx: AdminContext, version: int, body: dict) -> dict:
    state = ctx.require_active().state
    requested = body.get("topic_partition")
    if requested is None:
        looked = None
        tps = [tp for tp, move in state.tasks.items() if move.started]
    else:
        asked = [(t.get("topic"), p) for t in requested for p in t.get("partition_id") or ()]
        unknown = [tp for tp in asked if tp not in state.assignments]
        if unknown:
            names = ", ".join(f"{t}-{p}" for t, p in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no such partition: {names}")
        looked = list(dict.fromkeys(asked))
        tps = [tp for tp in looked if tp in state.tasks and state.tasks[tp].started]
    ids = await running_ids(ctx, sorted(tps))
    topics: list[dict] = []
    for (topic, partition), rid in ids.items():
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "topic_reassignments": []})
        topics[-1]["topic_reassignments"].append({"partition_id": partition, "reassignment_id": rid})
    # v1's tagged Waiting: moves held back by ISR-aware execution (controller.core.isr_health).
    held = state.pending if looked is None else [tp for tp in looked if tp in state.pending]
    waiting = [
        {"topic": tp[0], "partition_id": tp[1], "reason": move.waiting}
        for tp in held if (move := state.tasks.get(tp)) is not None and move.waiting is not None
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "reassignment": topics, "waiting": waiting}


def _valid(topic, partition) -> bool:
    try:
        paths.reassignment(topic, partition)
        return True
    except (ValueError, TypeError):
        return False


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = active.store
    # Request order, duplicates once: a v0 client (no tags) tells descriptions that share a
    # czxid apart by the order of the entries it asked about.
    asked: list[tuple[str, int, int]] = []
    seen: set[tuple[str, int, int]] = set()
    for entry in body.get("topic_reassignment") or []:
        ref = entry.get("reassignment") or {}
        key = (entry.get("topic"), ref.get("partition_id"), ref.get("reassignment_id"))
        if _valid(key[0], key[1]) and key not in seen:
            seen.add(key)
            asked.append(key)
    # Step 1: the records, kept only when the id still matches.
    reads = await get_many(store, [paths.reassignment(t, p) for t, p, _ in asked])
    live: list[tuple[str, int, int, int, tuple[int, ...]]] = []  # topic, partition, id, ctime, target
    for (topic, partition, rid), read in zip(asked, reads):
        if read is None or read[1].czxid != rid:
            continue
        try:
            target, _ = decode_record(paths.reassignment(topic, partition), read[0])
        except ZnodeFormatError:
            continue  # a record the controller cannot read describes nothing it runs
        live.append((topic, partition, rid, read[1].ctime, target))
    if not live:
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "description": []}
    # Step 2: states, topic configs, broker configs - one bulk read each.
    states = await read_states(store, [(t, p) for t, p, *_ in live])
    leaders = [NO_LEADER if state is None else state.leader for state in states]
    topics = sorted({t for t, *_ in live})
    brokers = sorted({b for _, _, _, _, target in live for b in target} | {b for b in leaders if b >= 0})
    configs = await read_configs(
        store,
        [paths.topic_config(t) for t in topics]
        + [paths.broker_config(b) for b in brokers]
        + [paths.broker_config(paths.BROKER_DEFAULT_CONFIG)],
    )
    topic_configs = {t: _config(c) for t, c in zip(topics, configs)}
    default = _config(configs[-1])
    broker_configs = {b: {**default, **_config(c)} for b, c in zip(brokers, configs[len(topics):-1])}
    # Step 3.
    descriptions = []
    for (topic, partition, rid, ctime, target), leader in zip(live, leaders):
        config = topic_configs[topic]
        leader_replicas = _covered(config.get(tc.LEADER_REPLICAS))
        follower_replicas = _covered(config.get(tc.FOLLOWER_REPLICAS))
        leader_throttle = UNTHROTTLED
        if leader >= 0 and (partition, leader) in leader_replicas:
            leader_throttle = _rate(broker_configs.get(leader, {}).get(tc.LEADER_RATE))
        descriptions.append({
            "reassignment_id": rid,
            "topic": topic,
            "partition_id": partition,
            "start_time": ctime,
            "leader_id": leader,
            "leader_throttle": leader_throttle,
            "new_assigned": [
                {
                    "broker_id": b,
                    "follower_throttle": (
                        _rate(broker_configs[b].get(tc.FOLLOWER_RATE))
                        if (partition, b) in follower_replicas else UNTHROTTLED
                    ),
                }
                for b in target
            ],
        })
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "description": descriptions}


def _config(read: dict | UnreadableConfig) -> dict[str, str]:
    return {} if isinstance(read, UnreadableConfig) else read


def _covered(value: str | None) -> throttled_replicas.ThrottledReplicas:
    """The (partition, broker) pairs a throttled-replicas value names."""
    try:
        return throttled_replicas.parse(value)
    except throttled_replicas.ThrottledReplicasError:
        return throttled_replicas.NONE  # a broker would not apply a value it cannot parse either


def _rate(value: str | None) -> int:
    if value is None or not value.strip().isdigit():
        return UNTHROTTLED
    return min(int(value), UNTHROTTLED)


def list_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "reassignment": []}


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "description": []}


APIS = [
    Api(ApiKey.LIST_REASSIGNMENTS, "ListReassignments", 0, 1, controller_only=True,
        handle=handle_list, error_response=list_error),
    Api(ApiKey.DESCRIBE_REASSIGNMENTS, "DescribeReassignments", 0, 1, controller_only=True,
        handle=handle_describe, error_response=describe_error),
]
