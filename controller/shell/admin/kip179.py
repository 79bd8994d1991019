"""KIP-179's three write APIs: ReassignPartitions (10000), AlterInterbrokerThrottledRates
(10001), AlterInterbrokerThrottledReplicas (10002). Controller-only.

Every write is fenced by the controller epoch, and each step is its own write, in an order
that makes any prefix safe: whatever throttle a crash leaves behind is listed in a removal
znode, and the failover rule (KIP-179: ``/admin/reassign_partitions`` absent -> throttle
removal, controller.shell.throttles) removes it. The whole sequence runs under the throttle lock
(controller.shell.throttles.lock), so the controller's own removals never interleave with it.

ReassignPartitions (KIP-179's six steps, removal znodes first):

 1. Validate. ``throttle <= 0`` fails every partition with INVALID_THROTTLE (1001);
    ``throttle = Long.MAX_VALUE`` means unthrottled. Per partition: a topic or partition named
    twice -> INVALID_REQUEST; unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; empty,
    duplicate or unregistered brokers -> INVALID_REPLICA_ASSIGNMENT. v0 only: while
    ``/admin/reassign_partitions`` exists every valid partition gets REASSIGNMENT_IN_PROGRESS
    (60). ``validate_only`` stops here.
 2. With a throttle and ``remove_throttle``: add the request's topics to
    ``/admin/throttled_replicas_removal`` and the brokers involved (current replicas and
    targets of the partitions that move) to ``/admin/throttled_rates_removal``.
 3. Topic configs: ``leader.replication.throttled.replicas`` gains P:B for each current replica
    of a moving partition, ``follower.replication.throttled.replicas`` P:B for each new one
    (Kafka's ReassignPartitionsCommand), merged with the values already set.
 4. Broker configs: both ``*.replication.throttled.rate`` = throttle on the brokers involved.
 5. With a throttle and no ``remove_throttle``: drop those topics and brokers from the removal
    znodes (after the configs: a crash before it removes the throttles of a request that was
    never acknowledged, never keeps an auto-removable one for ever).
 6. ``/admin/reassign_partitions``, last: v0 creates it (a racing creator makes it
    REASSIGNMENT_IN_PROGRESS); v1 merges into it, conditional on its version, re-reading on a
    conflict (the controller rewrites it too). Entries carry ``original_replicas``. A
    partition already moving keeps its recorded original and takes the new target: in place
    while it replicates (KIP-455's override, controller.core.engine step 4b), after it otherwise.

If step 6 does not happen, throttles nothing needs are removed at once (early removal).

AlterInterbrokerThrottledRates / AlterInterbrokerThrottledReplicas (the KIP's five steps; the
entities are brokers, resp. topics):

 1. Validate: rates <= 0 -> INVALID_THROTTLE; unregistered broker -> UNKNOWN_MEMBER_ID (25)
    (KIP-179); unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; an entity named twice
    -> INVALID_REQUEST. ``validate_only`` stops here.
 With ``remove_throttle`` (the request replaces the auto-removable set):
 2. Add the request's entities to the removal znode.
 3. Remove the throttle configs of the entities listed before that the request leaves out.
 4. Set the request's configs (throttled replicas: for each partition named, its pairs are
    replaced by P:B for the brokers given - an empty list unthrottles the partition - in both
    the leader and the follower list).
 5. Rewrite the removal znode with exactly the request's entities.
 Without ``remove_throttle``: step 4, then drop the entities from the removal znode.
"""

from __future__ import annotations

import logging

from controller.core import move_order
from controller.shell import throttle_configs as tc
from controller.shell import throttles
from controller.shell.admin.base import AdminContext, Api, ApiError, session_failure
from controller.shell.journal import REASSIGN_PARTITIONS as REASSIGN_PARTITIONS_DOOR
from controller.shell.journal import count_refused, write_noted
from controller.shell.admin.submit import (
    OK,
    ClusterView,
    Result,
    add_entries,
    by_topic,
    check_configs,
    group_partitions,
    original_replicas,
    partition_error,
    read_view,
    running_now,
    target_error,
    update_both_listed,
    update_configs,
    update_listed,
)
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.throttled_replicas import ThrottledReplicasError
from znodes import paths
from znodes.api import ZkError
from znodes.batch import FlushError, RequestTooLargeError
from znodes.errors import ZnodeFormatError
from znodes.values import TopicPartition

log = logging.getLogger("reassignd.controller")

# KIP-179: a throttle of Long.MAX_VALUE means "not throttled".
UNTHROTTLED = 2**63 - 1


# ---- shared -----------------------------------------------------------------------------------

# What can stop a request between its steps (the state it leaves is safe by construction).
_WRITE_FAILURES = (ZkError, FlushError, ZnodeFormatError, ThrottledReplicasError, RequestTooLargeError)


def _failure(e: Exception) -> ApiError:
    """A store failure in the middle of a request, as the error the whole request gets."""
    lost = session_failure(e)
    if lost is not None:
        return lost
    if isinstance(e, (ZnodeFormatError, ThrottledReplicasError)):
        # A config or removal znode already in ZooKeeper is malformed: never overwritten on a guess.
        return ApiError(ErrorCode.INVALID_CONFIG, f"cannot apply the request: {e}")
    if isinstance(e, RequestTooLargeError):
        return ApiError(ErrorCode.INVALID_REQUEST, f"the request is too large for one ZooKeeper write: {e}")
    return ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"ZooKeeper write failed ({e}); some throttle configs may be set")


def _partition_results(order, results, topic_key, parts_key, error_key_fields) -> list[dict]:
    pid, code, msg = error_key_fields
    return [
        {topic_key: topic, parts_key: [{pid: p, code: int(r[0]), msg: r[1]} for p, r in parts]}
        for topic, parts in by_topic(order, results)
    ]


async def _cleanup(store, epoch_zkversion, state) -> None:
    """After a request that set throttles but started nothing: remove what nothing needs."""
    try:
        await throttles.remove_idle_unlocked(store, epoch_zkversion, state)
    except Exception as e:  # best effort: failover removal catches what this misses
        log.warning("throttle clean-up after a failed request: %r", e)


# ---- ReassignPartitions ----------------------------------------------------------------------


def _reassign_order(body: dict) -> tuple[list[TopicPartition], dict, dict[TopicPartition, Result]]:
    return group_partitions(body["topic_reassignments"] or [], "topic", "partition_reassignments", "partition_id", "broker")


def _reassign_response(order, results) -> dict:
    return {
        "throttle_time_ms": 0,
        "reassign_partition_result": _partition_results(
            order, results, "topic", "partition_error", ("partition_id", "error_code", "error_message")
        ),
    }


def reassign_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order, _, _ = _reassign_order(body)
    return _reassign_response(order, {tp: (code, message) for tp in order})


def throttle_plan(view: ClusterView, targets: dict[TopicPartition, tuple[int, ...]]):
    """(leader pairs per topic, follower pairs per topic, brokers involved) for the moves.

    Kafka's ReassignPartitionsCommand: the existing replicas (ORS) are leader-throttled, the
    replicas that must copy (the target's new ones, and those of a move in flight) are
    follower-throttled; the rates go on every broker that hosts or will host a replica."""
    leaders: dict[str, set] = {}
    followers: dict[str, set] = {}
    brokers: set[int] = set()
    for (topic, p), target in targets.items():
        assignment = view.topics[topic][p]
        existing = original_replicas(assignment)  # a move in flight: its ORS still leads
        lead = leaders.get(topic)
        if lead is None:
            lead = leaders[topic] = set()
            followers[topic] = set()
        follow = followers[topic]
        for b in existing:
            lead.add((p, b))
        for b in target:
            if b not in existing:
                follow.add((p, b))
        for b in assignment.adding:
            follow.add((p, b))
        brokers.update(assignment.replicas)
        brokers.update(target)
    return leaders, followers, brokers


async def handle_reassign(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = active.store
    order, values, results = _reassign_order(body)
    throttle = body["throttle"]
    if throttle <= 0:
        message = f"throttle must be > 0 bytes/s (Long.MAX_VALUE for none), got {throttle}"
        return _reassign_response(order, {tp: (ErrorCode.INVALID_THROTTLE, message) for tp in order})
    throttled = throttle != UNTHROTTLED
    try:
        # Checked here, not only by the tool: the order is the operator's choice, so a name the
        # controller does not know is refused, not silently dropped.
        strategies = move_order.parse(body["movement_strategies"]) if body.get("movement_strategies") else ()
    except move_order.StrategyError as e:
        return _reassign_response(order, {tp: (ErrorCode.INVALID_REQUEST, str(e)) for tp in order})
    try:
        view = await read_view(store, {tp[0] for tp in values}, active.state)
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, replicas in values.items():
            problem = target_error(view, tp[0], tp[1], replicas)
            if problem is not None:
                results[tp] = problem
            else:
                targets[tp] = tuple(replicas)
        if version == 0 and targets and await running_now(store):
            for tp in targets:
                results[tp] = (
                    ErrorCode.REASSIGNMENT_IN_PROGRESS,
                    "a reassignment is running (/admin/reassign_partitions exists); use version 1 to add to it",
                )
            targets = {}
        if body["validate_only"] or not targets:
            if not body["validate_only"]:
                count_refused(active, REASSIGN_PARTITIONS_DOOR, results, values)
            return _reassign_response(order, results)
        moving = {tp: r for tp, r in targets.items() if view.assignment(tp).replicas != r}
        async with throttles.lock(store):
            wrote_throttles = False
            started = False
            try:
                if throttled and moving:
                    leaders, followers, brokers = throttle_plan(view, moving)
                    topics = sorted(leaders)
                    topic_updates = {("topics", t): tc.add_replicas(leaders[t], followers.get(t, ())) for t in topics}
                    rate = str(throttle)
                    rates = {tc.LEADER_RATE: rate, tc.FOLLOWER_RATE: rate}
                    broker_updates = {("brokers", b): tc.set_keys(rates) for b in brokers}
                    await check_configs(store, topic_updates | broker_updates)  # bad configs: nothing written
                    wrote_throttles = True
                    if body["remove_throttle"]:
                        await update_both_listed(store, active.epoch_zkversion, topics_add=topics, brokers_add=brokers)
                    await update_configs(store, active.epoch_zkversion, topic_updates)
                    await update_configs(store, active.epoch_zkversion, broker_updates)
                    if not body["remove_throttle"]:
                        await update_both_listed(store, active.epoch_zkversion, topics_drop=topics, brokers_drop=brokers)
                outcome = await write_noted(
                    active, REASSIGN_PARTITIONS_DOOR, targets,
                    lambda: add_entries(store, active.epoch_zkversion, targets, view, create_only=version == 0,
                                        skip_isr_check=bool(body.get("skip_isr_check")),
                                        movement_strategies=strategies),
                )
                started = any(r[0] == ErrorCode.NONE for r in outcome.values())
                results.update(outcome)
            except _WRITE_FAILURES as e:
                raise _failure(e) from e
            finally:
                if wrote_throttles and not started:
                    await _cleanup(store, active.epoch_zkversion, active.state)
    except (ZkError, ZnodeFormatError) as e:  # a read failed before anything was written
        raise _failure(e) from e
    count_refused(active, REASSIGN_PARTITIONS_DOOR, results, values)
    return _reassign_response(order, results)


# ---- AlterInterbrokerThrottledRates -----------------------------------------------------------


def _rates_response(order: list[int], results: dict[int, Result]) -> dict:
    seen: set[int] = set()
    out = []
    for b in order:
        if b in seen:
            continue
        seen.add(b)
        code, message = results.get(b, OK)
        out.append({"broker_id": b, "error_code": int(code), "error_message": message})
    return {"broker_error": out}


def rates_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order = [t["broker_id"] for t in body["broker_throttles"] or []]
    return _rates_response(order, {b: (code, message) for b in order})


async def handle_rates(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = active.store
    entries = body["broker_throttles"] or []
    order = [e["broker_id"] for e in entries]
    results: dict[int, Result] = {}
    counts: dict[int, int] = {}
    for b in order:
        counts[b] = counts.get(b, 0) + 1
    try:
        view = await read_view(store, ())
    except ZkError as e:
        raise _failure(e) from e
    rates: dict[int, tuple[int, int]] = {}
    for e in entries:
        b, leader, follower = e["broker_id"], e["leader_rate"], e["follower_rate"]
        if counts[b] > 1:
            results[b] = (ErrorCode.INVALID_REQUEST, f"broker {b} appears more than once in the request")
        elif leader <= 0 or follower <= 0:
            results[b] = (ErrorCode.INVALID_THROTTLE, f"rates must be > 0 bytes/s, got leader {leader}, follower {follower}")
        elif b not in view.brokers:
            results[b] = (ErrorCode.UNKNOWN_MEMBER_ID, f"broker {b} is not registered in /brokers/ids")
        else:
            rates[b] = (leader, follower)
    if body["validate_only"] or not rates:
        return _rates_response(order, results)
    epoch = active.epoch_zkversion
    path = paths.THROTTLED_RATES_REMOVAL
    configs = {
        ("brokers", b): tc.set_keys({tc.LEADER_RATE: str(leader), tc.FOLLOWER_RATE: str(follower)})
        for b, (leader, follower) in rates.items()
    }
    await _write_throttles(store, epoch, path, "brokers", tc.RATE_KEYS, rates, configs, body["remove_throttle"])
    return _rates_response(order, results)


async def _write_throttles(store, epoch: int, removal_path: str, kind: str, keys, entities: dict,
                           configs: dict, remove_throttle: bool) -> None:
    """The write half of AlterInterbrokerThrottledRates and ...Replicas (``kind`` "brokers" or
    "topics"), under the throttle lock so no removal lands in the middle:

    with ``remove_throttle``: list ``entities`` in the removal znode first (a crash from here
    on leaves them for removal), strip the throttles of entities listed before and not named
    now (the request replaces the auto-removable set), write the new configs, then make the
    removal znode list exactly ``entities``; without it: write the configs, then take
    ``entities`` off the removal znode (these throttles are the operator's to keep).
    """
    async with throttles.lock(store):
        try:
            await check_configs(store, configs)
            if remove_throttle:
                before = (await throttles.read_listed(store, removal_path)).members
                await update_listed(store, epoch, removal_path, add=entities)
                await update_configs(store, epoch, {(kind, e): tc.drop_keys(keys) for e in before - set(entities)})
                await update_configs(store, epoch, configs)
                await update_listed(store, epoch, removal_path, replace=entities)
            else:
                await update_configs(store, epoch, configs)
                await update_listed(store, epoch, removal_path, drop=entities)
        except _WRITE_FAILURES as e:
            raise _failure(e) from e


# ---- AlterInterbrokerThrottledReplicas --------------------------------------------------------


def _replicas_order(body: dict):
    return group_partitions(body["topic_throttles"] or [], "topic", "partition_throttles", "partition_id", "broker_id")


def _replicas_response(order, results) -> dict:
    return {
        "topic_errors": _partition_results(
            order, results, "topic", "partition_errors", ("partition_id", "error_code", "error_message")
        )
    }


def replicas_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    order, _, _ = _replicas_order(body)
    return _replicas_response(order, {tp: (code, message) for tp in order})


async def handle_replicas(ctx: AdminContext, version: int, body: dict) -> dict:
    active = ctx.require_active()
    store = active.store
    order, values, results = _replicas_order(body)
    try:
        view = await read_view(store, {tp[0] for tp in values})
    except ZkError as e:
        raise _failure(e) from e
    wanted: dict[str, dict[int, tuple[int, ...]]] = {}
    for tp, brokers in values.items():
        problem = partition_error(view, *tp)
        unknown = sorted(b for b in set(brokers) if b not in view.brokers)
        if problem is not None:
            results[tp] = problem
        elif len(set(brokers)) != len(brokers):
            results[tp] = (ErrorCode.INVALID_REQUEST, f"duplicate broker in {list(brokers)}")
        elif unknown:
            results[tp] = (ErrorCode.UNKNOWN_MEMBER_ID, f"broker(s) {unknown} not registered in /brokers/ids")
        else:
            wanted.setdefault(tp[0], {})[tp[1]] = tuple(brokers)
    if body["validate_only"] or not wanted:
        return _replicas_response(order, results)
    epoch = active.epoch_zkversion
    path = paths.THROTTLED_REPLICAS_REMOVAL
    configs = {}
    for topic, parts in wanted.items():
        pairs = {(p, b) for p, brokers in parts.items() for b in brokers}
        configs[("topics", topic)] = tc.add_replicas(pairs, pairs, replace_partitions=set(parts))
    await _write_throttles(store, epoch, path, "topics", tc.REPLICA_KEYS, wanted, configs, body["remove_throttle"])
    return _replicas_response(order, results)


APIS = [
    Api(ApiKey.REASSIGN_PARTITIONS, "ReassignPartitions", 0, 1, controller_only=True, handle=handle_reassign, error_response=reassign_error),
    Api(ApiKey.ALTER_INTERBROKER_THROTTLED_RATES, "AlterInterbrokerThrottledRates", 0, 1, controller_only=True, handle=handle_rates, error_response=rates_error),
    Api(ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS, "AlterInterbrokerThrottledReplicas", 0, 1, controller_only=True, handle=handle_replicas, error_response=replicas_error),
]
