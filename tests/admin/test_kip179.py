"""KIP-179's write APIs called directly on an active controller in the deterministic twin:
validation and error codes, the znodes each writes, and throttle removal afterwards."""

from __future__ import annotations

import json

import pytest

from controller.shell.admin.base import AdminContext, ApiError, NotController
from controller.shell.admin.kip179 import UNTHROTTLED, handle_rates, handle_reassign, handle_replicas
from controller.shell.role import Role
from protocol.errors import ErrorCode
from tests.controller.harness import Harness
from znodes import paths

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


# ---- helpers (also used by test_kip179_crash) ---------------------------------------------------


async def cluster(topics=("t:4:3:64KiB",), controller_id=101) -> Harness:
    h = Harness(topics=topics)
    await h.start()
    await h.start_controller(controller_id, throttle_removal=("all", "idle"))
    return h


def context(h: Harness, handle=None) -> AdminContext:
    handle = handle or next(c for c in h.controllers if c.active is not None)
    role = Role(handle.id)
    role.active = handle.active
    role.store = handle.store
    return AdminContext(role, h.config)


def reassign_body(moves: dict, throttle=UNTHROTTLED, remove=True, validate_only=False) -> dict:
    by_topic: dict = {}
    for (t, p), replicas in moves.items():
        by_topic.setdefault(t, []).append({"partition_id": p, "broker": list(replicas)})
    return {
        "topic_reassignments": [{"topic": t, "partition_reassignments": ps} for t, ps in by_topic.items()],
        "timeout": 30000,
        "validate_only": validate_only,
        "throttle": throttle,
        "remove_throttle": remove,
    }


def rates_body(rates: dict, remove=True, validate_only=False) -> dict:
    return {
        "broker_throttles": [{"broker_id": b, "leader_rate": lr, "follower_rate": fr} for b, (lr, fr) in rates.items()],
        "remove_throttle": remove,
        "timeout": 30000,
        "validate_only": validate_only,
    }


def replicas_body(throttled: dict, remove=True, validate_only=False) -> dict:
    by_topic: dict = {}
    for (t, p), brokers in throttled.items():
        by_topic.setdefault(t, []).append({"partition_id": p, "broker_id": list(brokers)})
    return {
        "topic_throttles": [{"topic": t, "partition_throttles": ps} for t, ps in by_topic.items()],
        "remove_throttle": remove,
        "timeout": 30000,
        "validate_only": validate_only,
    }


def codes(answer: dict) -> dict:
    """{(topic, partition) or broker: error code} of any of the three responses."""
    out = {}
    for t in answer.get("reassign_partition_result") or answer.get("topic_errors") or []:
        for p in t.get("partition_error") or t.get("partition_errors"):
            out[(t["topic"], p["partition_id"])] = p["error_code"]
    for b in answer.get("broker_error") or []:
        out[b["broker_id"]] = b["error_code"]
    return out


def config(h: Harness, path: str) -> dict:
    if h.server.exists(path) is None:
        return {}
    return json.loads(h.server.read(path)[0])["config"]


def throttle_configs(h: Harness) -> dict:
    """Every throttle key set anywhere: {"topics/t": {...}, "brokers/1": {...}}."""
    out = {}
    for kind, keys in (("topics", (LEADER_REPLICAS, FOLLOWER_REPLICAS)), ("brokers", (LEADER_RATE, FOLLOWER_RATE))):
        parent = f"/config/{kind}"
        if h.server.exists(parent) is None:
            continue
        for name in h.server.children(parent):
            found = {k: v for k, v in config(h, f"{parent}/{name}").items() if k in keys}
            if found:
                out[f"{kind}/{name}"] = found
    return out


def listed(h: Harness, path: str):
    if h.server.exists(path) is None:
        return None
    doc = json.loads(h.server.read(path)[0])
    return sorted(doc.get("topics") or doc.get("brokers"))


def notified(h: Harness) -> set[str]:
    return {json.loads(h.server.read(f"/config/changes/{n}")[0])["entity_path"] for n in h.server.children("/config/changes")}


# ---- ReassignPartitions ---------------------------------------------------------------------------


async def test_reassign_with_throttle_writes_removal_znodes_configs_then_the_request():
    h = await cluster()
    try:
        current = h.assignments[("t", 0)]
        target = [b for b in range(1, 7) if b not in current]
        answer = await handle_reassign(context(h), 0, reassign_body({("t", 0): target}, throttle=1000))
        assert codes(answer) == {("t", 0): 0}
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) == ["t"]
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) == list(range(1, 7))
        topic = config(h, paths.topic_config("t"))
        assert topic[LEADER_REPLICAS] == ",".join(f"0:{b}" for b in sorted(current))
        assert topic[FOLLOWER_REPLICAS] == ",".join(f"0:{b}" for b in sorted(target))
        for b in range(1, 7):
            assert config(h, paths.broker_config(b)) == {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"}
        assert {"topics/t"} | {f"brokers/{b}" for b in range(1, 7)} <= notified(h)
        entries = json.loads(h.server.read(paths.REASSIGN_PARTITIONS)[0])["partitions"]
        assert entries == [{"topic": "t", "partition": 0, "replicas": target, "original_replicas": current}]
        h.requested[("t", 0)] = target
        took = await h.run_until_quiet(max_seconds=600)
        # 64 KiB at 1000 B/s per follower: the throttle is what makes it take this long.
        assert took >= 64 * 1024 / 1000
        h.check_invariants()
        assert throttle_configs(h) == {}
        assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        assert h.server.exists(paths.THROTTLED_RATES_REMOVAL) is None
    finally:
        await h.close()


async def test_reassign_validation_codes_and_nothing_written_for_bad_partitions():
    h = await cluster()
    try:
        ctx = context(h)
        body = reassign_body(
            {
                ("nope", 0): [1, 2, 3],
                ("t", 9): [1, 2, 3],
                ("t", 0): [],
                ("t", 1): [1, 1, 2],
                ("t", 2): [1, 2, 77],
                ("t", 3): [-1, 2, 3],
            },
            throttle=5000,
        )
        answer = await handle_reassign(ctx, 0, body)
        assert codes(answer) == {
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 3): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        }
        messages = [p["error_message"] for t in answer["reassign_partition_result"] for p in t["partition_error"]]
        assert all(messages) and any("77" in m for m in messages)
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is None
        assert throttle_configs(h) == {} and listed(h, paths.THROTTLED_RATES_REMOVAL) is None
        # A topic named twice: INVALID_REQUEST for all of it.
        body = reassign_body({("t", 0): [4, 5, 6]})
        body["topic_reassignments"].append({"topic": "t", "partition_reassignments": [{"partition_id": 1, "broker": [4, 5, 6]}]})
        assert set(codes(await handle_reassign(ctx, 0, body)).values()) == {ErrorCode.INVALID_REQUEST}
        for bad in (0, -5):
            answer = await handle_reassign(ctx, 1, reassign_body({("t", 0): [4, 5, 6]}, throttle=bad))
            assert codes(answer) == {("t", 0): ErrorCode.INVALID_THROTTLE}
        # validate_only: a good request is accepted and nothing is written.
        answer = await handle_reassign(ctx, 0, reassign_body({("t", 0): [4, 5, 6]}, throttle=1000, validate_only=True))
        assert codes(answer) == {("t", 0): 0}
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is None and throttle_configs(h) == {}
    finally:
        await h.close()


async def test_v0_refuses_while_running_v1_adds_and_retargets():
    h = await cluster()
    try:
        ctx = context(h)
        t0 = [b for b in range(1, 7) if b not in h.assignments[("t", 0)]]
        t1 = [b for b in range(1, 7) if b not in h.assignments[("t", 1)]]
        assert codes(await handle_reassign(ctx, 0, reassign_body({("t", 0): t0}, throttle=1000))) == {("t", 0): 0}
        answer = await handle_reassign(ctx, 0, reassign_body({("t", 1): t1}))
        assert codes(answer) == {("t", 1): ErrorCode.REASSIGNMENT_IN_PROGRESS}
        # v1 merges into the running set, with original_replicas.
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 1): t1}))) == {("t", 1): 0}
        entries = {e["partition"]: e for e in json.loads(h.server.read(paths.REASSIGN_PARTITIONS)[0])["partitions"]}
        assert entries[1]["original_replicas"] == h.assignments[("t", 1)]
        assert entries[0]["replicas"] == t0
        # v1 with a new target for a partition already moving: the move takes it in place
        # (KIP-455's override) and ends there.
        original0 = list(h.assignments[("t", 0)])
        final0 = [t0[0], *original0[:2]]
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): final0}))) == {("t", 0): 0}
        h.requested.update({("t", 0): final0, ("t", 1): t1})
        await h.settle()
        move = ctx.role.active.state.tasks[("t", 0)]
        # The old target's other replicas, throttled to 1000 B/s, are far from the ISR: deleted at
        # once, as Kafka does (docs/DESIGN.md section 4.1), so nothing is left dropped.
        assert (list(move.target), list(move.original), move.dropped) == (final0, original0, ())
        assert not set(t0[1:]) & set(move.replicas)
        await h.run_until_quiet(max_seconds=600)
        h.check_invariants()
        assert throttle_configs(h) == {}
    finally:
        await h.close()


async def test_remove_throttle_false_keeps_the_throttle_after_completion():
    h = await cluster()
    try:
        target = [b for b in range(1, 7) if b not in h.assignments[("t", 2)]]
        answer = await handle_reassign(context(h), 0, reassign_body({("t", 2): target}, throttle=900_000, remove=False))
        assert codes(answer) == {("t", 2): 0}
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) is None
        h.requested[("t", 2)] = target
        await h.run_until_quiet()
        h.check_invariants()
        kept = throttle_configs(h)
        assert kept["topics/t"][FOLLOWER_REPLICAS] == ",".join(f"2:{b}" for b in sorted(target))
        assert all(kept[f"brokers/{b}"] == {LEADER_RATE: "900000", FOLLOWER_RATE: "900000"} for b in range(1, 7))
    finally:
        await h.close()


async def test_a_brokers_rate_goes_as_soon_as_no_running_move_involves_it():
    h = await cluster(topics=("small:1:1:4KiB", "big:1:1:512KiB"))
    try:
        small, big = h.assignments[("small", 0)], h.assignments[("big", 0)]
        others = [b for b in range(1, 7) if b not in small + big]
        moves = {("small", 0): [others[0]], ("big", 0): [others[1]]}
        answer = await handle_reassign(context(h), 0, reassign_body(moves, throttle=20_000))
        assert set(codes(answer).values()) == {0}
        h.requested.update(moves)
        small_brokers = {small[0], others[0]} - {big[0], others[1]}
        while h.server.exists(paths.REASSIGNMENTS) is None or "small" in h.server.children(paths.REASSIGNMENTS) or (
            h.server.exists(paths.REASSIGN_PARTITIONS) is not None
            and "small" in h.server.read(paths.REASSIGN_PARTITIONS)[0].decode()
        ):
            await h.tick()
        await h.tick()
        # small finished, big still copying: small's brokers and topic lost their throttles ...
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is not None
        configs = throttle_configs(h)
        assert all(f"brokers/{b}" not in configs for b in small_brokers)
        assert "topics/small" not in configs
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) == ["big"]
        # ... big's stay while it runs.
        assert configs[f"brokers/{others[1]}"] == {LEADER_RATE: "20000", FOLLOWER_RATE: "20000"}
        assert LEADER_REPLICAS in configs["topics/big"]
        await h.run_until_quiet(max_seconds=600)
        h.check_invariants()
        assert throttle_configs(h) == {}
    finally:
        await h.close()


async def test_a_standby_answers_not_controller():
    h = await cluster()
    try:
        role = Role(999)
        ctx = AdminContext(role, h.config)
        for handler, body in (
            (handle_reassign, reassign_body({("t", 0): [4, 5, 6]})),
            (handle_rates, rates_body({1: (10, 10)})),
            (handle_replicas, replicas_body({("t", 0): [1]})),
        ):
            with pytest.raises(NotController):
                await handler(ctx, 0, body)
    finally:
        await h.close()


# ---- AlterInterbrokerThrottledRates -------------------------------------------------------------


async def test_rates_validation_and_kip_algorithm():
    h = await cluster()
    try:
        ctx = context(h)
        answer = await handle_rates(ctx, 0, rates_body({1: (0, 10), 2: (10, -1), 99: (10, 10), 3: (100, 200)}))
        assert codes(answer) == {1: ErrorCode.INVALID_THROTTLE, 2: ErrorCode.INVALID_THROTTLE, 99: ErrorCode.UNKNOWN_MEMBER_ID, 3: 0}
        assert config(h, paths.broker_config(3)) == {LEADER_RATE: "100", FOLLOWER_RATE: "200"}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) == [3]
        assert "brokers/3" in notified(h)
        # Auto-removable rates replace the auto-removable set: broker 3's go, 4 and 5 are set.
        answer = await handle_rates(ctx, 0, rates_body({4: (1, 2), 5: (3, 4)}))
        assert codes(answer) == {4: 0, 5: 0}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) == [4, 5]
        assert config(h, paths.broker_config(3)) == {}
        # Without auto-removal: set, and never listed.
        assert codes(await handle_rates(ctx, 0, rates_body({5: (7, 7), 6: (8, 8)}, remove=False))) == {5: 0, 6: 0}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) == [4]
        body = rates_body({1: (1, 1)}, validate_only=True)
        assert codes(await handle_rates(ctx, 0, body)) == {1: 0}
        assert config(h, paths.broker_config(1)) == {}
        body = rates_body({1: (1, 1)})
        body["broker_throttles"].append({"broker_id": 1, "leader_rate": 2, "follower_rate": 2})
        assert codes(await handle_rates(ctx, 0, body)) == {1: ErrorCode.INVALID_REQUEST}
        # A reassignment completing removes the listed rates only.
        target = [b for b in range(1, 7) if b not in h.assignments[("t", 0)]]
        await handle_reassign(ctx, 0, reassign_body({("t", 0): target}))
        h.requested[("t", 0)] = target
        await h.run_until_quiet()
        assert throttle_configs(h) == {
            "brokers/5": {LEADER_RATE: "7", FOLLOWER_RATE: "7"},
            "brokers/6": {LEADER_RATE: "8", FOLLOWER_RATE: "8"},
        }
    finally:
        await h.close()


# ---- AlterInterbrokerThrottledReplicas ----------------------------------------------------------


async def test_replicas_validation_and_kip_algorithm():
    h = await cluster(topics=("t:4:3:64KiB", "u:2:3:64KiB"))
    try:
        ctx = context(h)
        answer = await handle_replicas(
            ctx, 0, replicas_body({("t", 0): [1, 2], ("t", 9): [1], ("nope", 0): [1], ("t", 1): [77], ("t", 2): [3, 3]})
        )
        assert codes(answer) == {
            ("t", 0): 0,
            ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 1): ErrorCode.UNKNOWN_MEMBER_ID,
            ("t", 2): ErrorCode.INVALID_REQUEST,
        }
        assert config(h, paths.topic_config("t"))[LEADER_REPLICAS] == "0:1,0:2"
        assert config(h, paths.topic_config("t"))[FOLLOWER_REPLICAS] == "0:1,0:2"
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) == ["t"]
        # Naming partition 0 again replaces its pairs; partition 3 is added.
        await handle_replicas(ctx, 0, replicas_body({("t", 0): [5], ("t", 3): [4]}))
        assert config(h, paths.topic_config("t"))[LEADER_REPLICAS] == "0:5,3:4"
        # An empty broker list unthrottles the partition.
        assert codes(await handle_replicas(ctx, 0, replicas_body({("t", 0): []}))) == {("t", 0): 0}
        assert config(h, paths.topic_config("t"))[FOLLOWER_REPLICAS] == "3:4"
        # Another topic with auto-removal replaces the listed set: t's throttles go.
        await handle_replicas(ctx, 0, replicas_body({("u", 1): [2]}))
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) == ["u"]
        assert LEADER_REPLICAS not in config(h, paths.topic_config("t"))
        # Without auto-removal: kept after a reassignment completes.
        await handle_replicas(ctx, 0, replicas_body({("t", 1): [1]}, remove=False))
        target = [b for b in range(1, 7) if b not in h.assignments[("u", 0)]]
        await handle_reassign(ctx, 0, reassign_body({("u", 0): target}))
        h.requested[("u", 0)] = target
        await h.run_until_quiet()
        assert throttle_configs(h) == {"topics/t": {LEADER_REPLICAS: "1:1", FOLLOWER_REPLICAS: "1:1"}}
        assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
    finally:
        await h.close()


async def test_a_malformed_config_fails_the_request_before_anything_is_written():
    h = await cluster()
    try:
        ctx = context(h)
        bad = {LEADER_REPLICAS: "0:1,oops", "retention.ms": "5"}
        await h.admin.set(paths.topic_config("t"), json.dumps({"version": 1, "config": bad}).encode())
        target = [b for b in range(1, 7) if b not in h.assignments[("t", 0)]]
        for call in (
            lambda: handle_reassign(ctx, 0, reassign_body({("t", 0): target}, throttle=1000)),
            lambda: handle_replicas(ctx, 0, replicas_body({("t", 0): [1]})),
        ):
            with pytest.raises(ApiError) as caught:
                await call()
            assert caught.value.code == ErrorCode.INVALID_CONFIG and "oops" in caught.value.message
            assert config(h, paths.topic_config("t")) == bad
            assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
            assert h.server.exists(paths.THROTTLED_RATES_REMOVAL) is None
            assert h.server.exists(paths.REASSIGN_PARTITIONS) is None
            assert all(config(h, paths.broker_config(b)) == {} for b in range(1, 7))
    finally:
        await h.close()


async def test_v0_over_a_junk_reassign_znode_is_refused_and_nothing_moves():
    """An outside probe: with junk in /admin/reassign_partitions a v0 request was answered
    REASSIGNMENT_IN_PROGRESS and its move then ran all the same. The znode exists, so v0 is
    refused (Kafka's tool refuses while it exists) and nothing of the request is applied."""
    h = await cluster()
    try:
        ctx = context(h)
        await h.admin.create(paths.REASSIGN_PARTITIONS, b"this is not json")
        await h.settle()
        before = list(h.assignments[("t", 0)])
        target = [b for b in range(1, 7) if b not in before]
        answer = await handle_reassign(ctx, 0, reassign_body({("t", 0): target}))
        assert codes(answer) == {("t", 0): ErrorCode.REASSIGNMENT_IN_PROGRESS}
        for _ in range(20):
            await h.tick()
        assert h.json(paths.topic("t"))["partitions"]["0"] == before
        assert h.server.read(paths.REASSIGN_PARTITIONS)[0] == b"this is not json"
        assert ("t", 0) not in ctx.role.active.state.tasks
    finally:
        await h.close()
