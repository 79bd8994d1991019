"""KIP-179's three algorithms with the controller crashing between every pair of their steps.

Each ZooKeeper op of a request is a step here (the twin's CrashingStore writes them one at a
time): for every k, the controller's session expires after the request's k-th op, a second
controller takes over (failover recovery, KIP-179 throttle removal), and once the cluster is
quiet:

* no auto-removable throttle is left (invariant 3), and the removal znodes are gone;
* the throttles the operator set without auto-removal are all still there;
* no reassignment is half-started: the partition is at its original replicas (the request's
  last op never landed) or at its target (it did, and the move completed after failover).

k = the request's whole length is the request acknowledged, then the controller killed.
"""

from __future__ import annotations

from controller.shell.admin.base import ApiError
from controller.shell.admin.kip179 import handle_rates, handle_reassign, handle_replicas
from tests.admin.test_kip179 import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    cluster,
    context,
    rates_body,
    reassign_body,
    replicas_body,
    throttle_configs,
)
from znodes import paths

TOPICS = ("t:2:1:64KiB", "keep:1:1:4KiB")


async def _prepared():
    """A cluster with an operator's throttles (kept for ever) and an auto-removable rate."""
    h = await cluster(topics=TOPICS)
    ctx = context(h)
    (b,) = h.assignments[("t", 0)]
    free = [x for x in range(1, 7) if x != b]
    plan = {"from": b, "to": free[0], "operator_broker": free[1], "auto_broker": free[2]}
    await handle_rates(ctx, 0, rates_body({plan["operator_broker"]: (111, 222)}, remove=False))
    await handle_replicas(ctx, 0, replicas_body({("keep", 0): [plan["operator_broker"]]}, remove=False))
    await handle_rates(ctx, 0, rates_body({plan["auto_broker"]: (5, 5)}))
    operator = {
        f"brokers/{plan['operator_broker']}": {LEADER_RATE: "111", FOLLOWER_RATE: "222"},
        "topics/keep": {LEADER_REPLICAS: f"0:{plan['operator_broker']}", FOLLOWER_REPLICAS: f"0:{plan['operator_broker']}"},
    }
    assert throttle_configs(h) == operator | {f"brokers/{plan['auto_broker']}": {LEADER_RATE: "5", FOLLOWER_RATE: "5"}}
    return h, plan, operator


async def _ops_of(request) -> int:
    """How many ops the request writes (the controller's own writes after it not counted)."""
    h, plan, _ = await _prepared()
    try:
        written: list = []

        async def record(op):
            written.append(op)

        store = h.controllers[0].store
        store.before_op = record
        await request(h, plan)
        store.before_op = None
        last = max((i for i, op in enumerate(written) if op.path == paths.REASSIGN_PARTITIONS), default=len(written) - 1)
        return last + 1
    finally:
        await h.close()


async def _crash_schedule(request, check):
    n = await _ops_of(request)
    assert n >= 3, n
    for k in range(n + 1):
        h, plan, operator = await _prepared()
        try:
            first = h.controllers[0]
            first.store.remaining = k
            try:
                await request(h, plan)
            except ApiError:
                assert k < n, f"failed although all {n} ops landed"
            if not first.store.crashed:
                h.server.expire_session(first.store.session_id)  # killed right after answering
            await h.start_controller(102, throttle_removal=("all", "idle"))
            await h.run_until_quiet(max_seconds=600)
            await h.tick()
            h.check_invariants(expected={})
            assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None, k
            assert h.server.exists(paths.THROTTLED_RATES_REMOVAL) is None, k
            check(h, plan, operator, k, n)
        finally:
            await h.close()


async def test_reassign_partitions_crash_between_every_pair_of_steps():
    async def request(h, plan):
        body = reassign_body({("t", 0): [plan["to"]]}, throttle=50_000)
        answer = await handle_reassign(context(h, h.controllers[0]), 0, body)
        assert answer["reassign_partition_result"][0]["partition_error"][0]["error_code"] == 0
        h.requested[("t", 0)] = [plan["to"]]

    def check(h, plan, operator, k, n):
        assert throttle_configs(h) == operator, (k, n)
        expected = [plan["to"]] if k == n else [plan["from"]]
        assert h.current()[("t", 0)] == expected, (k, n)
        assert h.current()[("t", 1)] == h.assignments[("t", 1)]

    await _crash_schedule(request, check)


async def test_reassign_partitions_v1_without_auto_removal_crash_schedule():
    async def request(h, plan):
        body = reassign_body({("t", 0): [plan["to"]]}, throttle=70_000, remove=False)
        await handle_reassign(context(h, h.controllers[0]), 1, body)
        h.requested[("t", 0)] = [plan["to"]]

    def check(h, plan, operator, k, n):
        now = throttle_configs(h)
        if k == n:  # acknowledged: the throttles it set without auto-removal stay
            assert now[f"brokers/{plan['to']}"] == {LEADER_RATE: "70000", FOLLOWER_RATE: "70000"}
            assert now["topics/t"] == {LEADER_REPLICAS: f"0:{plan['from']}", FOLLOWER_REPLICAS: f"0:{plan['to']}"}
            assert h.current()[("t", 0)] == [plan["to"]]
        else:
            assert h.current()[("t", 0)] == [plan["from"]]
        for key, value in operator.items():
            assert now[key] == value, (k, n)
        assert f"brokers/{plan['auto_broker']}" not in now

    await _crash_schedule(request, check)


async def test_alter_throttled_rates_crash_between_every_pair_of_steps():
    async def request(h, plan):
        body = rates_body({plan["to"]: (300, 400), plan["from"]: (500, 600)})
        await handle_rates(context(h, h.controllers[0]), 0, body)

    def check(h, plan, operator, k, n):
        # Nothing runs after failover: every auto-removable rate goes, the operator's stay.
        assert throttle_configs(h) == operator, (k, n)

    await _crash_schedule(request, check)


async def test_alter_throttled_rates_without_auto_removal_crash_schedule():
    async def request(h, plan):
        # The auto-removable broker becomes an operator's throttle once acknowledged.
        await handle_rates(context(h, h.controllers[0]), 0, rates_body({plan["auto_broker"]: (9, 9)}, remove=False))

    def check(h, plan, operator, k, n):
        expected = dict(operator)
        if k == n:
            expected[f"brokers/{plan['auto_broker']}"] = {LEADER_RATE: "9", FOLLOWER_RATE: "9"}
        assert throttle_configs(h) == expected, (k, n)

    await _crash_schedule(request, check)


async def test_alter_throttled_replicas_crash_between_every_pair_of_steps():
    async def request(h, plan):
        await handle_replicas(context(h, h.controllers[0]), 0, replicas_body({("t", 0): [plan["to"]], ("t", 1): [1, 2]}))

    def check(h, plan, operator, k, n):
        assert throttle_configs(h) == operator, (k, n)

    await _crash_schedule(request, check)


async def test_reassign_onto_an_operator_throttled_broker_gives_its_rates_back_after_any_crash():
    # The target broker carries the operator's own rates (111/222, not auto-removable): the
    # request lists it with those as its restore entry before it writes its own rate, so
    # wherever the controller dies, the removal after failover sets them back.
    async def request(h, plan):
        body = reassign_body({("t", 0): [plan["operator_broker"]]}, throttle=50_000)
        answer = await handle_reassign(context(h, h.controllers[0]), 0, body)
        assert answer["reassign_partition_result"][0]["partition_error"][0]["error_code"] == 0
        h.requested[("t", 0)] = [plan["operator_broker"]]

    def check(h, plan, operator, k, n):
        assert throttle_configs(h) == operator, (k, n)
        assert h.current()[("t", 0)] == ([plan["operator_broker"]] if k == n else [plan["from"]]), (k, n)

    await _crash_schedule(request, check)


async def test_auto_removable_rates_over_an_operators_give_them_back_after_any_crash():
    async def request(h, plan):
        await handle_rates(context(h, h.controllers[0]), 0, rates_body({plan["operator_broker"]: (7, 8)}))

    def check(h, plan, operator, k, n):
        assert throttle_configs(h) == operator, (k, n)

    await _crash_schedule(request, check)
