"""Movement strategies (issue 24 item 4, Cruise Control's replica_movement_strategies):
controller.core.move_order's worked table, its parsing and sizes, the setting, and the engine's
step 2c - pending moves start in the strategies' order under a cap of one move, by the setting
or by an entry's own list, with sizes from the brokers' DescribeLogDirs answers."""

from __future__ import annotations

import copy

import pytest

from controller.core import engine, move_order
from controller.core.config import ConfigError, ControllerConfig, render_toml, resolve
from controller.core.events import ReplicasHosted, RequestsRead, StatesRead, StopReplicaSent
from controller.core.move_order import Facts
from controller.core.task import Phase
from tests.controller.helpers import cluster, req, state
from znodes.api import Create
from znodes.payloads import decode_requests, encode_requests
from znodes.values import Request

GB = 10**9
# The docstring's table: (size, replicas added, ISR length) of a-0..d-0, 3 replicas each.
TABLE = {"a": (10 * GB, 1, 3), "b": (1 * GB, 2, 2), "c": (None, 1, 3), "d": (5 * GB, 0, 3)}


def table_facts(name: str) -> Facts:
    size, adding, isr = TABLE[name]
    return move_order.facts(size, adding, isr, 3)


@pytest.mark.parametrize(
    "strategies, expected",
    [
        ("order_given", "abcd"),
        ("smallest_first", "dbac"),
        ("largest_first", "abdc"),
        ("under_replicated_last", "acdb"),
        ("leader_moves_first", "dabc"),
        ("leader_moves_first,largest_first", "dabc"),
        ("under_replicated_last,largest_first", "adcb"),
        ("under_replicated_last,smallest_first", "dacb"),
        ("order_given,smallest_first", "abcd"),
    ],
)
def test_worked_table(strategies, expected):
    chosen = move_order.parse(strategies)
    got = move_order.ordered("abcd", lambda _: chosen, table_facts)
    assert "".join(got) == expected


def test_runs_of_different_lists_keep_their_places():
    lists = {"a": ("smallest_first",), "b": ("smallest_first",), "c": ("order_given",), "d": ("order_given",)}
    assert "".join(move_order.ordered("abcd", lists.__getitem__, table_facts)) == "bacd"
    # A later request's small moves do not overtake an earlier request's large ones.
    lists = {"a": ("order_given",), "b": ("smallest_first",), "c": ("smallest_first",), "d": ("smallest_first",)}
    assert "".join(move_order.ordered("abcd", lists.__getitem__, table_facts)) == "adbc"


def test_facts_copy_nothing_without_added_replicas_and_unknown_sizes_sort_last():
    assert move_order.facts(None, 0, 3, 3) == Facts(0, False, False)
    assert move_order.facts(7, 2, 2, 3) == Facts(14, True, True)
    assert move_order.facts(None, 1, None, 3) == Facts(None, False, True)  # no state held: not under-replicated
    known, unknown = move_order.facts(10**15, 1, 3, 3), move_order.facts(None, 1, 3, 3)
    for s in ("smallest_first", "largest_first"):
        assert move_order.sort_key((s,), known) < move_order.sort_key((s,), unknown)


def test_parse_and_known():
    assert move_order.parse(" smallest_first , under_replicated_last") == ("smallest_first", "under_replicated_last")
    assert move_order.parse(["largest_first"]) == ("largest_first",)
    with pytest.raises(move_order.StrategyError, match="unknown movement strategy 'fastest'; known: order_given"):
        move_order.parse("smallest_first,fastest")
    with pytest.raises(move_order.StrategyError, match="smallest_first listed twice"):
        move_order.parse("smallest_first,smallest_first")
    for empty in ("", "a,,b", []):
        with pytest.raises(move_order.StrategyError):
            move_order.parse(empty)
    assert move_order.known(("newer_tools_strategy", "largest_first")) == ("largest_first",)


def test_size_after():
    assert move_order.size_after(None, 5, False) == 5  # nothing known yet: taken
    assert move_order.size_after(100, 5, True) == 5  # an in-sync replica holds the whole log
    assert move_order.size_after(100, 5, False) == 100  # a copy under way only raises it
    assert move_order.size_after(100, 500, False) == 500


def test_the_setting_and_its_print_config_line():
    flags = {"zookeeper": "zk:2181", "id": "1", "listen": "127.0.0.1:0"}
    resolved = resolve(flags=flags)
    assert resolved.settings.replica_movement_strategies == "order_given"
    resolved = resolve(flags=flags, env={"REASSIGND_REPLICA_MOVEMENT_STRATEGIES": "smallest_first, under_replicated_last"})
    assert resolved.settings.replica_movement_strategies == "smallest_first,under_replicated_last"
    assert 'replica_movement_strategies = "smallest_first,under_replicated_last"' in render_toml(resolved)
    with pytest.raises(ConfigError, match=r"replica_movement_strategies \(flag --replica-movement-strategies\): "
                                          r"unknown movement strategy 'urp_last'"):
        resolve(flags={**flags, "replica_movement_strategies": "urp_last"})
    with pytest.raises(ConfigError, match="replica_movement_strategies"):
        resolve(file={"replica_movement_strategies": "largest_first,largest_first"}, file_name="c.toml", flags=flags)
    with pytest.raises(ValueError):
        ControllerConfig(replica_movement_strategies="biggest")


def test_an_entry_carries_its_strategies_through_the_znode():
    data = (b'{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],'
            b'"movement_strategies":["smallest_first","under_replicated_last"]},{"topic":"b","partition":0,"replicas":[3]}]}')
    good, bad = decode_requests("/admin/reassign_partitions", data)
    assert not bad and [r.movement_strategies for r in good] == [("smallest_first", "under_replicated_last"), ()]
    again, _ = decode_requests("/admin/reassign_partitions", encode_requests(good))
    assert again == good
    assert b"movement_strategies" not in encode_requests(good[1:])  # only written when set
    _, bad = decode_requests("/admin/reassign_partitions", data.replace(b'["smallest_first","under_replicated_last"]', b'"x"'))
    assert bad and "movement_strategies" in bad[0]


# ---- the engine: step 2c under a cap of one move ---------------------------------------------

TARGETS = {"a": (1, 2, 4), "b": (1, 4, 5), "c": (1, 2, 6), "d": (3, 2, 1)}  # adds 1, 2, 1, 0 replicas
SIZES = {"a": 10 * GB, "b": 1 * GB, "d": 5 * GB}  # c's is not reported


def run(s, events, config):
    before = copy.deepcopy(s)
    step = engine.step(s, events, config)
    assert s == before, "engine.step mutated its input state"
    s.apply(step.delta)
    return step


def table_cluster():
    s = cluster(topics={t: {0: (1, 2, 3)} for t in TABLE})
    for t, (_, _, isr) in TABLE.items():
        s.states[(t, 0)] = state(1, (1, 2, 3)[:isr])
    return s


def start_order(s, entries, config) -> str:
    """Hand the entries to the engine, then finish each move it starts (its new replicas in
    sync, its StopReplica sent) until none is left: the order the moves started in."""
    started: list[str] = []

    def note(step):
        # A move starts with its KIP-240 record (a reorder may also end in the same step).
        for op in step.writes:
            if isinstance(op, Create) and op.path.count("/") == 4 and op.path.startswith("/admin/reassignments/"):
                started.append(op.path.split("/")[3])

    note(run(s, RequestsRead(0, tuple(entries)), config))
    assert sum(1 for m in s.tasks.values() if m.started) <= 1
    for _ in range(40):
        running = [m for m in s.tasks.values() if m.started]
        if not running:
            break
        move = running[0]
        tp = move.tp
        if move.phase is Phase.REPLICATING:
            st = s.states[tp]
            step = run(s, StatesRead({tp: state(st.leader, s.assignments[tp].replicas, zk_version=st.zk_version,
                                                leader_epoch=st.leader_epoch)}), config)
        else:
            assert move.phase is Phase.STOPPING
            step = run(s, StopReplicaSent((tp,)), config)
        assert sum(1 for m in s.tasks.values() if m.started) <= 1, "the cap of one move"
        note(step)
    assert not s.tasks
    return "".join(started)


def sized(s, config):
    """Broker 1 (a replica of every partition, in every ISR) answers DescribeLogDirs."""
    run(s, ReplicasHosted(1, frozenset((t, 0) for t in TABLE), {(t, 0): n for t, n in SIZES.items()}), config)


@pytest.mark.parametrize("strategies, expected", [
    ("order_given", "abcd"),
    ("smallest_first", "dbac"),
    ("largest_first", "abdc"),
    ("under_replicated_last", "acdb"),
    ("leader_moves_first,largest_first", "dabc"),
])
def test_pending_moves_start_in_the_setting_s_order_under_a_cap_of_one(strategies, expected):
    config = ControllerConfig(max_cluster_moves=1, replica_movement_strategies=strategies)
    s = table_cluster()
    sized(s, config)
    assert s.sizes == {(t, 0): n for t, n in SIZES.items()}
    assert start_order(s, [req(t, 0, TARGETS[t]) for t in "abcd"], config) == expected


def test_without_sizes_the_size_strategies_keep_the_order_given_except_for_moves_copying_nothing():
    config = ControllerConfig(max_cluster_moves=1, replica_movement_strategies="smallest_first")
    # Nothing reported: a, b, c copy unknown bytes (last, in the order given); d copies none.
    assert start_order(table_cluster(), [req(t, 0, TARGETS[t]) for t in "abcd"], config) == "dabc"


def test_an_entry_s_own_strategies_order_its_moves():
    config = ControllerConfig(max_cluster_moves=1)  # the setting: order_given
    s = table_cluster()
    sized(s, config)
    own = [Request(t, 0, TARGETS[t], movement_strategies=("largest_first",)) for t in "bcd"]
    # a (order_given, asked first) keeps its place; b, c, d by their own list: b 2 GB, d 0, c unknown.
    assert start_order(s, [req("a", 0, TARGETS["a"]), *own], config) == "abdc"
    s = table_cluster()
    sized(s, config)
    unknown_names = [Request(t, 0, TARGETS[t], movement_strategies=("from_a_newer_tool", "smallest_first"))
                     for t in "abcd"]
    assert start_order(s, unknown_names, config) == "dbac"  # the unknown name skipped, not the move


def test_sizes_come_from_assigned_replicas_and_go_with_the_partition():
    config = ControllerConfig()
    s = table_cluster()
    run(s, ReplicasHosted(4, frozenset({("a", 0)}), {("a", 0): 99}), config)  # a stray on 4: not a's size
    assert s.sizes == {}
    sized(s, config)
    run(s, ReplicasHosted(2, frozenset({("b", 0)}), {("b", 0): 7}), config)  # 2 is in b's ISR: replaces
    assert s.sizes[("b", 0)] == 7
    run(s, ReplicasHosted(3, frozenset({("b", 0)}), {("b", 0): 5}), config)  # 3 is not (a copy behind)
    assert s.sizes[("b", 0)] == 7
    from controller.core.events import TopicsRead

    run(s, TopicsRead({"a": None}), config)
    assert ("a", 0) not in s.sizes


# ---- fresher sizes: the sampler asks pending moves' leaders while a strategy needs them ---------


def test_needs_sizes_only_while_a_list_in_force_orders_by_size():
    assert not move_order.needs_sizes(("order_given",), [(), ("under_replicated_last",)])
    assert move_order.needs_sizes(("under_replicated_last", "largest_first"), [])
    assert not move_order.needs_sizes(("order_given", "smallest_first"), [])  # nothing after order_given decides
    assert move_order.needs_sizes(("order_given",), [(), ("newer_name", "smallest_first")])


async def test_the_sampler_asks_pending_moves_leaders_for_sizes_and_queues_them():
    import asyncio
    from types import SimpleNamespace

    from controller.shell.copy_progress import CopyProgress, sizes_wanted

    s = table_cluster()
    s.states[("b", 0)] = state(2, (1, 2))
    run(s, RequestsRead(0, tuple(req(t, 0, TARGETS[t]) for t in "abcd")), ControllerConfig(max_cluster_moves=1))
    assert set(s.pending) == {("b", 0), ("c", 0), ("d", 0)}  # a started
    s.sizes[("d", 0)] = 5
    assert sizes_wanted(s, ("order_given",)) == {}
    assert sizes_wanted(s, ("smallest_first",)) == {1: {("c", 0), ("d", 0)}, 2: {("b", 0)}}
    assert sizes_wanted(s, ("smallest_first",), limit=2) == {1: {("c", 0)}, 2: {("b", 0)}}  # unknown sizes first

    class Brokers:
        async def request(self, broker, api_key, version, body):
            asked = [(t["topic"], p) for t in body["topics"] for p in t["partitions"]]
            return {"results": [{"error_code": 0, "topics": [
                {"name": t, "partitions": [{"partition_index": p, "partition_size": 100 * broker + p,
                                            "is_future_key": False}]} for t, p in asked]}]}

    active = SimpleNamespace(state=s, config=ControllerConfig(replica_movement_strategies="largest_first"),
                             inbox=SimpleNamespace(queue=asyncio.Queue()))
    await CopyProgress(metrics=None, interval=10.0).sample_sizes(active, Brokers())
    events = [active.inbox.queue.get_nowait() for _ in range(active.inbox.queue.qsize())]
    assert sorted((e.broker_id, dict(e.sizes)) for e in events) == [
        (1, {("c", 0): 100, ("d", 0): 100}), (2, {("b", 0): 200})]
    for e in events:  # the engine takes them as it takes the registration's answer
        run(s, e, active.config)
    assert {tp: s.sizes[tp] for tp in (("b", 0), ("c", 0), ("d", 0))} == {("b", 0): 200, ("c", 0): 100, ("d", 0): 100}
