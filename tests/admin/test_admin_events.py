"""Admin requests as engine events (issue 20 item 1; controller.core.admin_requests).

* A request whose controller is deposed between the engine's decision and its flush is answered
  NOT_CONTROLLER, and of its writes only a prefix of the documented order landed: every
  auto-removable throttle it wrote is listed for removal, and no entry of
  /admin/reassign_partitions landed.
* Two requests for the same partitions, in flight together, are answered in the order they were
  taken, and the final state is the later one's.
* No module under controller/shell/admin/ writes ZooKeeper except the unfenced config paths.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from controller.shell.admin.base import ApiError
from controller.shell.admin.kip179 import handle_rates, handle_reassign, handle_replicas
from controller.shell.admin.kip455_alter import handle_alter
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import cluster, codes, context, listed, rates_body, reassign_body, replicas_body, throttle_configs
from znodes import paths

ROOT = Path(__file__).resolve().parents[2]


def alter_body(moves: dict) -> dict:
    topics: dict = {}
    for (t, p), replicas in moves.items():
        topics.setdefault(t, []).append({"partition_index": p, "replicas": list(replicas)})
    return {"timeout_ms": 10000, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def _away(h, tp) -> list[int]:
    return [b for b in range(1, 7) if b not in h.assignments[tp]][: len(h.assignments[tp])]


REQUESTS = {
    "ReassignPartitions v0, throttled": lambda h: handle_reassign(
        context(h), 0, reassign_body({("t", 0): _away(h, ("t", 0))}, throttle=50_000)),
    "ReassignPartitions v1, throttle kept": lambda h: handle_reassign(
        context(h), 1, reassign_body({("t", 0): _away(h, ("t", 0))}, throttle=50_000, remove=False)),
    "AlterPartitionReassignments": lambda h: handle_alter(context(h), 0, alter_body({("t", 0): _away(h, ("t", 0))})),
    "AlterInterbrokerThrottledRates": lambda h: handle_rates(context(h), 0, rates_body({1: (300, 400), 2: (5, 6)})),
    "AlterInterbrokerThrottledReplicas": lambda h: handle_replicas(context(h), 0, replicas_body({("t", 0): [1, 2]})),
}


async def _ops_of(name) -> int:
    """How many ops the request's step writes (its moves start in a later step: not counted)."""
    h = await cluster()
    try:
        written: list = []

        async def record(op):
            written.append(op)

        store = h.controllers[0].store
        store.before_op = record
        await REQUESTS[name](h)
        store.before_op = None
        last = max((i for i, op in enumerate(written) if op.path == paths.REASSIGN_PARTITIONS), default=len(written) - 1)
        return last + 1
    finally:
        await h.close()


def _unlisted_throttles(h) -> list[str]:
    """Throttle configs of entities no removal znode lists (an operator's throttles: none here)."""
    topics = set(listed(h, paths.THROTTLED_REPLICAS_REMOVAL) or ())
    brokers = set(listed(h, paths.THROTTLED_RATES_REMOVAL) or ())
    out = []
    for key in throttle_configs(h):
        kind, name = key.split("/")
        if (kind == "topics" and name not in topics) or (kind == "brokers" and int(name) not in brokers):
            out.append(key)
    return out


@pytest.mark.parametrize("name", sorted(REQUESTS))
async def test_a_request_deposed_before_its_flush_landed_is_answered_not_controller(name):
    n = await _ops_of(name)
    assert n >= 1, n
    for k in range(n):
        h = await cluster()
        try:
            first = h.controllers[0]
            first.store.depose_after = k
            with pytest.raises(ApiError) as raised:
                await REQUESTS[name](h)
            assert raised.value.code == ErrorCode.NOT_CONTROLLER, (name, k, raised.value)
            # Nothing beyond the documented prefix: no entry, no move started, no throttle left
            # that no removal znode lists (the rates/replicas requests without auto-removal
            # would keep theirs only once acknowledged; these all ask for it, or write none).
            assert h.server.exists(paths.REASSIGN_PARTITIONS) is None, (name, k)
            assert not h.server.exists(paths.REASSIGNMENTS) or not h.server.children(paths.REASSIGNMENTS), (name, k)
            if "kept" not in name:
                assert _unlisted_throttles(h) == [], (name, k)
            else:  # its configs go before its removal-znode drop: both or neither landed in a prefix
                assert all(v == {"leader.replication.throttled.rate": "50000", "follower.replication.throttled.rate": "50000"}
                           for key, v in throttle_configs(h).items() if key.startswith("brokers/")), (name, k)
        finally:
            await h.close()


async def test_two_requests_for_the_same_partition_answered_in_order_and_the_later_one_wins():
    h = await cluster()
    try:
        tp = ("t", 0)
        first_target = _away(h, tp)
        second_target = list(reversed(first_target))
        order: list[str] = []

        async def call(label, target):
            answer = await handle_alter(context(h), 0, alter_body({tp: target}))
            order.append(label)
            return answer

        a, b = await asyncio.gather(call("first", first_target), call("second", second_target))
        assert codes_of(a) == {tp: 0} and codes_of(b) == {tp: 0}
        assert order == ["first", "second"]
        h.requested[tp] = second_target
        await h.run_until_quiet()
        h.check_invariants()
        assert h.current()[tp] == second_target
    finally:
        await h.close()


async def test_a_throttled_request_and_a_rates_request_in_one_step_write_each_config_once():
    h = await cluster()
    try:
        tp = ("t", 0)
        target = _away(h, tp)
        a, b = await asyncio.gather(
            handle_reassign(context(h), 1, reassign_body({tp: target}, throttle=7000)),
            handle_rates(context(h), 0, rates_body({target[0]: (1_000_000, 2_000_000)})),
        )
        assert set(codes(a).values()) == {0} and set(codes(b).values()) == {0}
        # Taken in order: the rates request replaced the auto-removable rates set with its broker.
        configs = throttle_configs(h)
        assert configs[f"brokers/{target[0]}"] == {"leader.replication.throttled.rate": "1000000",
                                                   "follower.replication.throttled.rate": "2000000"}
        h.requested[tp] = target
        await h.run_until_quiet()
        h.check_invariants()
        assert throttle_configs(h) == {}
    finally:
        await h.close()


def codes_of(answer: dict) -> dict:
    return {(t["name"], p["partition_index"]): p["error_code"] for t in answer["responses"] for p in t["partitions"]}


# Modules that write ZooKeeper themselves, and why (docs/DESIGN.md 6): configs, ACLs and SCRAM
# credentials and client quotas are served unfenced by every instance, as Kafka's brokers serve them.
UNFENCED_CONFIG_PATHS = {"alter_configs.py", "acls.py", "scram_users.py", "client_quotas.py"}
WRITERS = {"create", "set", "delete", "multi", "fenced_multi", "write_with_retry", "flush", "ensure_path", "extend"}
WRITER_MODULES = {"znodes.batch", "controller.shell.throttle_configs"}


def test_no_admin_handler_writes_zookeeper():
    offenders = []
    for path in sorted((ROOT / "controller" / "shell" / "admin").glob("*.py")):
        if path.name in UNFENCED_CONFIG_PATHS:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in WRITER_MODULES:
                offenders.append(f"{path.name}: imports {node.module}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITERS:
                offenders.append(f"{path.name}:{node.lineno}: calls .{node.func.attr}()")
    assert offenders == []


async def test_a_new_target_equal_to_the_original_replicas_cancels_the_running_move():
    """KIP-455 through the engine: a replicating move given its original replicas as the new
    target is rolled back (step 4b's cancel) once the request's entry landed - not completed
    first and moved back."""
    from controller.core.task import Phase

    h = await cluster(topics=("t:2:3:8MiB",))  # copies take simulated seconds
    try:
        tp = ("t", 0)
        original = list(h.assignments[tp])
        answer = await handle_alter(context(h), 0, alter_body({tp: _away(h, tp)}))
        assert codes_of(answer) == {tp: 0}
        for _ in range(20):
            move = context(h).role.active.state.tasks.get(tp)
            if move is not None and move.phase is Phase.REPLICATING:
                break
            await h.tick(0.05)
        assert move is not None and move.phase is Phase.REPLICATING
        answer = await handle_alter(context(h), 0, alter_body({tp: original}))
        assert codes_of(answer) == {tp: 0}
        await h.settle()
        move = context(h).role.active.state.tasks.get(tp)
        assert move is None or move.phase is Phase.CANCELLING, move
        h.requested[tp] = original
        await h.run_until_quiet()
        h.check_invariants()
        assert h.current()[tp] == original
    finally:
        await h.close()
