"""Probes of the replication-throttle lifecycle (KIP-179) through the admin requests on an active
controller in the deterministic twin: what a Kafka operator expects of the throttles a
reassignment sets (gone when it completes or is cancelled, a new rate from an "additional"
execution included) and of the ones they set by hand (kept, with every other config key);
conditional config writes re-read, not overwritten; brokers stopped mid-move."""

from __future__ import annotations

import json

from controller.shell.admin.kip179 import handle_rates, handle_reassign, handle_replicas
from tests.admin.test_kip179 import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    cluster,
    codes,
    config,
    context,
    listed,
    notified,
    rates_body,
    reassign_body,
    replicas_body,
    throttle_configs,
)
from znodes import paths


async def _set_config(h, path: str, cfg: dict, raw: bytes | None = None) -> None:
    data = raw if raw is not None else json.dumps({"version": 1, "config": cfg}).encode()
    if h.server.exists(path) is None:
        await h.admin.create(path, data, makepath=True)
    else:
        await h.admin.set(path, data)


def _others(h, tp) -> list[int]:
    return [b for b in range(1, 7) if b not in h.assignments[tp]]


async def test_additional_execute_changes_the_rate_and_the_new_rate_goes_too():
    h = await cluster()
    try:
        ctx, target = await _start_move(h, throttle=1000)
        h.requested[("t", 0)] = target
        for _ in range(8):
            await h.tick()
        assert h.busy()
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=50_000))) == {("t", 0): 0}
        for b in range(1, 7):
            assert config(h, paths.broker_config(b)) == {LEADER_RATE: "50000", FOLLOWER_RATE: "50000"}, b
        await h.run_until_quiet(max_seconds=600)
        h.check_invariants()
        assert throttle_configs(h) == {}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) is None
    finally:
        await h.close()


async def test_other_keys_kept_byte_for_byte_and_untouched_operator_throttles_survive():
    h = await cluster(topics=("t:2:2:64KiB", "u:1:2:64KiB"))
    try:
        ctx = context(h)
        tp = ("t", 0)
        current = h.assignments[tp]
        target = _others(h, tp)[:2]
        involved = set(current) | set(target)
        untouched = [b for b in range(1, 7) if b not in involved]
        topic_cfg = {"retention.ms": "604800000", "cleanup.policy": "compact"}
        await _set_config(h, paths.topic_config("t"), topic_cfg)
        broker_cfg = {"log.cleaner.threads": "2"}
        for b in involved:
            await _set_config(h, paths.broker_config(b), broker_cfg)
        operator_topic = {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "*", "retention.ms": "1"}
        await _set_config(h, paths.topic_config("u"), operator_topic)
        operator_rate = {LEADER_RATE: "777", FOLLOWER_RATE: "888"}
        for b in untouched:
            await _set_config(h, paths.broker_config(b), operator_rate)
        before_t = h.server.read(paths.topic_config("t"))[0]
        answer = await handle_reassign(ctx, 1, reassign_body({tp: target}, throttle=100_000))
        assert codes(answer) == {tp: 0}
        assert config(h, paths.topic_config("t"))["retention.ms"] == "604800000"
        h.requested[tp] = target
        await h.run_until_quiet(max_seconds=600)
        h.check_invariants()
        assert config(h, paths.topic_config("t")) == topic_cfg
        assert json.loads(h.server.read(paths.topic_config("t"))[0]) == json.loads(before_t)
        for b in involved:
            assert config(h, paths.broker_config(b)) == broker_cfg, b
        assert config(h, paths.topic_config("u")) == operator_topic
        for b in untouched:
            assert config(h, paths.broker_config(b)) == operator_rate, b
        assert {"topics/t"} | {f"brokers/{b}" for b in involved} <= notified(h)
    finally:
        await h.close()


async def test_cancel_removes_the_throttles():
    h = await cluster()
    try:
        ctx, target = await _start_move(h, throttle=1000)
        for _ in range(8):
            await h.tick()
        assert throttle_configs(h)
        await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")
        await h.run_until_quiet(max_seconds=600)
        assert throttle_configs(h) == {}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) is None and listed(h, paths.THROTTLED_REPLICAS_REMOVAL) is None
    finally:
        await h.close()


async def test_operator_replica_list_on_a_reassigned_topic_gets_its_own_entries_back():
    h = await cluster()
    try:
        ctx = context(h)
        operator = {LEADER_REPLICAS: "3:1", FOLLOWER_REPLICAS: "3:2", "retention.ms": "5"}
        await _set_config(h, paths.topic_config("t"), operator)
        target = _others(h, ("t", 0))
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=100_000))) == {("t", 0): 0}
        # While it moves, the topic is listed with what it had before, in ZooKeeper: a controller
        # that takes over restores the same.
        doc = json.loads(h.server.read(paths.THROTTLED_REPLICAS_REMOVAL)[0])
        assert doc["restore"] == {"t": {FOLLOWER_REPLICAS: "3:2", LEADER_REPLICAS: "3:1"}}
        assert "0:" in config(h, paths.topic_config("t"))[FOLLOWER_REPLICAS]
        h.requested[("t", 0)] = target
        await h.run_until_quiet(max_seconds=600)
        assert config(h, paths.topic_config("t")) == operator
        assert listed(h, paths.THROTTLED_REPLICAS_REMOVAL) is None
    finally:
        await h.close()


async def test_operator_rates_on_moving_brokers_come_back_after_two_executions_and_a_failover():
    h = await cluster()
    try:
        ctx = context(h)
        tp = ("t", 0)
        involved = set(h.assignments[tp]) | set(_others(h, tp))
        mine = min(involved)
        operator = {LEADER_RATE: "777", "log.cleaner.threads": "2"}
        await _set_config(h, paths.broker_config(mine), operator)
        target = _others(h, tp)
        assert codes(await handle_reassign(ctx, 1, reassign_body({tp: target}, throttle=1000))) == {tp: 0}
        for _ in range(4):
            await h.tick()
        # An "additional" execution: the broker is listed already, its restore entry stays the
        # operator's rate, not the first execution's.
        assert codes(await handle_reassign(ctx, 1, reassign_body({tp: target}, throttle=2000))) == {tp: 0}
        assert config(h, paths.broker_config(mine))[LEADER_RATE] == "2000"
        doc = json.loads(h.server.read(paths.THROTTLED_RATES_REMOVAL)[0])
        assert doc["restore"] == {str(mine): {LEADER_RATE: "777"}}
        # The controller goes; the next one restores from the znode.
        first = next(c for c in h.controllers if c.active is not None)
        await h.start_controller(102, throttle_removal=("all", "idle"))
        await first.stop()
        h.requested[tp] = target
        await h.run_until_quiet(max_seconds=600)
        h.check_invariants()
        assert config(h, paths.broker_config(mine)) == operator
        assert {k: v for k, v in throttle_configs(h).items() if k != f"brokers/{mine}"} == {}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) is None
    finally:
        await h.close()


async def test_cancel_gives_the_operator_rate_back():
    h = await cluster()
    try:
        ctx = context(h)
        tp = ("t", 0)
        broker = h.assignments[tp][0]
        await _set_config(h, paths.broker_config(broker), {LEADER_RATE: "5", FOLLOWER_RATE: "6"})
        assert codes(await handle_reassign(ctx, 1, reassign_body({tp: _others(h, tp)}, throttle=1000))) == {tp: 0}
        for _ in range(4):
            await h.tick()
        await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")
        await h.run_until_quiet(max_seconds=600)
        assert throttle_configs(h) == {f"brokers/{broker}": {LEADER_RATE: "5", FOLLOWER_RATE: "6"}}
    finally:
        await h.close()


async def test_rates_request_replacing_the_listed_set_gives_the_left_out_their_own_back():
    h = await cluster()
    try:
        ctx = context(h)
        await _set_config(h, paths.broker_config(1), {FOLLOWER_RATE: "42"})
        assert codes(await handle_rates(ctx, 0, rates_body({1: (100, 100), 2: (100, 100)}))) == {1: 0, 2: 0}
        assert config(h, paths.broker_config(1)) == {LEADER_RATE: "100", FOLLOWER_RATE: "100"}
        # Broker 1 left out of the auto-removable set: its rates go, its own comes back.
        assert codes(await handle_rates(ctx, 0, rates_body({2: (100, 100)}))) == {2: 0}
        assert config(h, paths.broker_config(1)) == {FOLLOWER_RATE: "42"}
        # Without remove_throttle the rates become the operator's: unlisted, no restore kept.
        await _set_config(h, paths.broker_config(3), {LEADER_RATE: "9"})
        assert codes(await handle_rates(ctx, 0, rates_body({3: (300, 300)}))) == {3: 0}
        assert codes(await handle_rates(ctx, 0, rates_body({3: (400, 400)}, remove=False))) == {3: 0}
        doc = json.loads(h.server.read(paths.THROTTLED_RATES_REMOVAL)[0]) if listed(h, paths.THROTTLED_RATES_REMOVAL) else {}
        assert 3 not in doc.get("brokers", []) and "3" not in doc.get("restore", {})
        await h.run_until_quiet(max_seconds=60)
        assert config(h, paths.broker_config(3)) == {LEADER_RATE: "400", FOLLOWER_RATE: "400"}
        assert config(h, paths.broker_config(1)) == {FOLLOWER_RATE: "42"}
    finally:
        await h.close()


async def test_broker_stopped_mid_move_leaves_no_throttle_when_it_returns():
    h = await cluster()
    try:
        ctx = context(h)
        current = h.assignments[("t", 0)]
        target = _others(h, ("t", 0))
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=1000))) == {("t", 0): 0}
        for _ in range(4):
            await h.tick()
        gone = target[0]
        await h.cluster.stop_broker(gone)
        for _ in range(4):
            await h.tick()
        new_target = [target[1], target[2], current[0]]
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): new_target}, throttle=1000))) == {("t", 0): 0}
        h.requested[("t", 0)] = new_target
        await h.run_until_quiet(max_seconds=600)
        assert throttle_configs(h) == {}, throttle_configs(h)
        await h.cluster.start_broker(gone)
        for _ in range(8):
            await h.tick()
        assert throttle_configs(h) == {}
        assert h.cluster.throttles.leader_rate(gone) is None and h.cluster.throttles.follower_rate(gone) is None
    finally:
        await h.close()


async def test_config_changed_between_read_and_write_is_reread_not_overwritten():
    h = await cluster()
    try:
        ctx = context(h)
        await _set_config(h, paths.topic_config("t"), {"retention.ms": "1"})
        store = h.controllers[0].store
        fired = []

        async def before(op):
            if getattr(op, "path", None) == paths.topic_config("t") and not fired:
                fired.append(op)
                await h.admin.set(paths.topic_config("t"), json.dumps({"version": 1, "config": {"retention.ms": "2", "x.y": "z"}}).encode())

        store.before_op = before
        target = _others(h, ("t", 0))
        answer = await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=100_000))
        store.before_op = None
        assert fired
        assert codes(answer) == {("t", 0): 0}
        cfg = config(h, paths.topic_config("t"))
        assert cfg["retention.ms"] == "2" and cfg["x.y"] == "z" and LEADER_REPLICAS in cfg, cfg
        h.requested[("t", 0)] = target
        await h.run_until_quiet(max_seconds=600)
        assert config(h, paths.topic_config("t")) == {"retention.ms": "2", "x.y": "z"}
    finally:
        await h.close()


async def test_removal_rereads_a_config_changed_under_it():
    h = await cluster()
    try:
        ctx, target = await _start_move(h, throttle=100_000)
        h.requested[("t", 0)] = target
        store = h.controllers[0].store
        fired = []
        victim = paths.broker_config(target[0])

        async def before(op):
            if getattr(op, "path", None) == victim and not fired and h.server.exists(paths.REASSIGN_PARTITIONS) is None:
                fired.append(op)
                cfg = config(h, victim)
                cfg["num.io.threads"] = "9"
                await h.admin.set(victim, json.dumps({"version": 1, "config": cfg}).encode())

        store.before_op = before
        await h.run_until_quiet(max_seconds=600)
        for _ in range(8):
            await h.tick()
        assert fired
        assert config(h, victim) == {"num.io.threads": "9"}
        assert throttle_configs(h) == {}
        assert listed(h, paths.THROTTLED_RATES_REMOVAL) is None
    finally:
        await h.close()


async def test_broker_stopped_mid_move_then_cancelled_leaves_no_throttle():
    h = await cluster()
    try:
        ctx, target = await _start_move(h, throttle=1000)
        for _ in range(4):
            await h.tick()
        gone = target[0]
        await h.cluster.stop_broker(gone)
        for _ in range(4):
            await h.tick()
        await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")
        await _quiet_then_back_without_throttles(h, gone)
    finally:
        await h.close()


async def test_original_replica_stopped_mid_move_leaves_no_throttle():
    h = await cluster()
    try:
        ctx = context(h)
        current = h.assignments[("t", 0)]
        target = _others(h, ("t", 0))
        assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=50_000))) == {("t", 0): 0}
        h.requested[("t", 0)] = target
        for _ in range(2):
            await h.tick()
        gone = current[-1]
        await h.cluster.stop_broker(gone)
        await _quiet_then_back_without_throttles(h, gone)
    finally:
        await h.close()


async def test_rates_changed_through_the_rates_api_mid_move_also_go_at_the_end():
    h = await cluster()
    try:
        ctx, target = await _start_move(h, throttle=1000)
        h.requested[("t", 0)] = target
        for _ in range(4):
            await h.tick()
        answer = await handle_rates(ctx, 0, rates_body({b: (60_000, 60_000) for b in range(1, 7)}))
        assert set(codes(answer).values()) == {0}
        assert config(h, paths.broker_config(4)) == {LEADER_RATE: "60000", FOLLOWER_RATE: "60000"}
        await h.run_until_quiet(max_seconds=600)
        assert throttle_configs(h) == {}
    finally:
        await h.close()


async def _quiet_then_back_without_throttles(h, gone: int) -> None:
    """Once the cluster is quiet no throttle is left, and none comes back with broker ``gone``."""
    await h.run_until_quiet(max_seconds=600)
    assert throttle_configs(h) == {}, throttle_configs(h)
    await h.cluster.start_broker(gone)
    for _ in range(8):
        await h.tick()
    assert throttle_configs(h) == {}
    assert h.cluster.throttles.snapshot()["brokers"] == {}


async def _start_move(h, throttle: int):
    """t-0 moved to three other brokers with ``throttle`` and automatic removal, accepted."""
    ctx = context(h)
    target = _others(h, ("t", 0))
    assert codes(await handle_reassign(ctx, 1, reassign_body({("t", 0): target}, throttle=throttle))) == {("t", 0): 0}
    return ctx, target
