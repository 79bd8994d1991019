"""Topic creation (issue 14 items 1 and 6): placement (controller.core.placement), the request
checks (controller.core.topic_creation), the engine's step 10 and CreateTopics end to end on
the ZooKeeper twin with simulated brokers, including a controller that died half-way."""

from __future__ import annotations

import collections
import json

import pytest

from controller.core import engine, placement
from controller.core.config import ControllerConfig
from controller.core.events import MetadataRead
from controller.core.state import ClusterState
from controller.core.topic_creation import CreationView, Planned, Refused, TopicRequest, creation_ops, plan_topics
from controller.shell.admin.create_topics import handle_create
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.kafka_configs import TOPIC_CONFIGS
from tests.admin.test_kip179 import context
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from znodes import paths
from controller.shell.admin.base import ApiError
from znodes.api import SessionExpiredError
from znodes.payloads import encode_topic
from znodes.values import Assignment, Broker, LeaderIsr

# ---- placement ---------------------------------------------------------------------------------


def _spread(counter, brokers):
    values = [counter.get(b, 0) for b in brokers]
    return min(values), max(values)


@pytest.mark.parametrize("n,partitions,rf", [(n, p, r) for n in (3, 4, 5, 6, 7, 12) for p in (1, 5, 12, 30) for r in (1, 2, 3)])
def test_placement_keeps_every_broker_within_r_r1_and_spreads_leaders(n, partitions, rf):
    brokers = {b: None for b in range(1, n + 1)}
    # A cluster already at R/R+1 (the planner's rule): 7 replicas on some, 6 on the others.
    before = {b: 6 + (b % 2) for b in brokers}
    out = placement.place(brokers, partitions, rf, before, {})
    assert len(out) == partitions and all(len(set(rs)) == rf == len(rs) for rs in out)
    after = collections.Counter(before)
    after.update(b for rs in out for b in rs)
    low, high = _spread(after, brokers)
    assert high - low <= 1, (before, out)
    leaders = collections.Counter(rs[0] for rs in out)
    low, high = _spread(leaders, brokers)
    assert high - low <= 1, out


def test_placement_fills_the_least_loaded_brokers_first():
    out = placement.place({1: None, 2: None, 3: None, 4: None}, 2, 2, {1: 9, 2: 3, 3: 3, 4: 9}, {})
    assert sorted(b for rs in out for b in rs) == [2, 2, 3, 3]


def test_placement_is_rack_aware_and_deterministic():
    racks = {b: "abc"[b % 3] for b in range(1, 10)}
    out = placement.place(racks, 60, 3, {}, {})
    assert out == placement.place(racks, 60, 3, {}, {})
    for rs in out:
        assert len({racks[b] for b in rs}) == 3, rs
    counts = collections.Counter(b for rs in out for b in rs)
    assert _spread(counts, racks) == (20, 20)
    # Two racks, RF 3: every partition spans both, no rack holds more than 2 of its replicas.
    two = {b: "ab"[b % 2] for b in range(1, 7)}
    for rs in placement.place(two, 20, 3, {}, {}):
        held = collections.Counter(two[b] for b in rs)
        assert sorted(held.values()) == [1, 2], rs


def test_placement_refuses_more_replicas_than_brokers():
    with pytest.raises(placement.PlacementError):
        placement.place({1: None, 2: None}, 1, 3, {}, {})


# ---- the request checks (step 1) ---------------------------------------------------------------

VIEW = CreationView(
    topics=frozenset({"orders", "a.b"}),
    deleting=frozenset({"old"}),
    brokers={1: None, 2: None, 3: None},
)

CASES = [
    (TopicRequest("n", 3, 2), None),
    (TopicRequest("n"), None),  # -1, -1: the defaults (KIP-464)
    (TopicRequest("n", assignments=((0, (1, 2)), (1, (2, 3)))), None),
    (TopicRequest("n", 3, 2, configs=(("leader.replication.throttled.replicas", "0:1,1:2"),)), None),
    (TopicRequest("n", 1, 1, assignments=((0, (1,)),)), ErrorCode.INVALID_REQUEST),
    (TopicRequest("n", 1, 1, configs=(("leader.replication.throttled.replicas", None),)), ErrorCode.INVALID_REQUEST),
    (TopicRequest("bad name!", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (TopicRequest("", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (TopicRequest("x" * 250, 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (TopicRequest("orders", 1, 1), ErrorCode.TOPIC_ALREADY_EXISTS),
    (TopicRequest("old", 1, 1), ErrorCode.TOPIC_ALREADY_EXISTS),
    (TopicRequest("a_b", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (TopicRequest("n", 0, 1), ErrorCode.INVALID_PARTITIONS),
    (TopicRequest("n", -5, 1), ErrorCode.INVALID_PARTITIONS),
    (TopicRequest("n", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (TopicRequest("n", 1, 4), ErrorCode.INVALID_REPLICATION_FACTOR),
    (TopicRequest("n", assignments=((0, (1, 2)), (2, (2, 3)))), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (TopicRequest("n", assignments=((0, (1, 2)), (1, (2,)))), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (TopicRequest("n", assignments=((0, (1, 1)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (TopicRequest("n", assignments=((0, (1, 9)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (TopicRequest("n", assignments=((0, ()),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (TopicRequest("n", 1, 1, configs=(("retention.mss", "1000"),)), ErrorCode.INVALID_CONFIG),
    (TopicRequest("n", 1, 1, configs=(("retention.ms", "1h"),)), ErrorCode.INVALID_CONFIG),
    (TopicRequest("n", 1, 1, configs=(("min.insync.replicas", "0"),)), ErrorCode.INVALID_CONFIG),
    (TopicRequest("n", 1, 1, configs=(("cleanup.policy", "compact,erase"),)), ErrorCode.INVALID_CONFIG),
    (TopicRequest("n", 1, 1, configs=(("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5"))),
     ErrorCode.INVALID_CONFIG),
    (TopicRequest("n", 1, 1, configs=(("retention.ms", "3600000"), ("cleanup.policy", "compact,delete"),
                                      ("min.insync.replicas", "2"), ("compression.type", "zstd"))), None),
    (TopicRequest("n", 1, 1, configs=(("follower.replication.throttled.replicas", "x:y"),)), ErrorCode.INVALID_CONFIG),
]


@pytest.mark.parametrize("request_, code", CASES, ids=[f"{i}-{c.name if c else 'ok'}" for i, (_, c) in enumerate(CASES)])
def test_each_bad_input_gets_kafkas_error(request_, code):
    [result] = plan_topics([request_], VIEW)
    if code is None:
        assert isinstance(result, Planned), result
    else:
        assert isinstance(result, Refused) and result.code == code, result


def test_a_batch_is_answered_per_topic_in_request_order():
    results = plan_topics(
        [TopicRequest("a", 3, 3), TopicRequest("dup", 1, 1), TopicRequest("b", 2, 2), TopicRequest("dup", 1, 1),
         TopicRequest("orders", 1, 1), TopicRequest("a_b", 1, 1)],
        VIEW,
    )
    assert [(r.name, r.code if isinstance(r, Refused) else None) for r in results] == [
        ("a", None), ("dup", ErrorCode.INVALID_REQUEST), ("b", None), ("dup", ErrorCode.INVALID_REQUEST),
        ("orders", ErrorCode.TOPIC_ALREADY_EXISTS), ("a_b", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ]


def test_later_topics_of_a_request_are_placed_around_earlier_ones():
    view = CreationView(topics=frozenset(), brokers={b: None for b in range(1, 5)})
    results = plan_topics([TopicRequest("a", 1, 2), TopicRequest("b", 1, 2)], view)
    assert set(results[0].assignment[0]).isdisjoint(results[1].assignment[0])


def test_creation_ops_write_config_then_topic_znode():
    [plan] = plan_topics([TopicRequest("n", assignments=((0, (1, 2)),))], VIEW)
    ops = creation_ops(plan)
    assert [op.path for op in ops] == [paths.topic_config("n"), paths.topic("n")]
    assert json.loads(ops[1].data)["partitions"] == {"0": [1, 2]}
    assert type(creation_ops(plan, config_exists=True)[0]).__name__ == "SetData"


# ---- engine step 10 ----------------------------------------------------------------------------


def _state(live=(1, 2, 3)) -> ClusterState:
    s = ClusterState(controller_id=101, epoch=4, brokers={b: Broker(b, "h", 9000 + b) for b in live})
    s.assignments[("n", 0)] = Assignment((3, 1))
    s.assignments[("n", 1)] = Assignment((2, 3))
    s.topic_partitions["n"], s.topic_versions["n"] = (0, 1), 0
    return s


def test_engine_gives_a_new_partition_its_parents_state_leader_and_metadata():
    missing = frozenset({paths.partitions("n"), paths.partition("n", 0), paths.partition("n", 1)})
    st = engine.step(_state(live=(1, 2)), MetadataRead({("n", 0): None, ("n", 1): None}, None, missing), ControllerConfig())
    assert [type(op).__name__ + " " + op.path for op in st.writes] == [
        "Create /brokers/topics/n/partitions",
        "Create /brokers/topics/n/partitions/0",
        "Create /brokers/topics/n/partitions/0/state",
        "Create /brokers/topics/n/partitions/1",
        "Create /brokers/topics/n/partitions/1/state",
    ]
    # Broker 3 is down: p0's leader is 1 (the first live replica), ISR the live replicas.
    assert json.loads(st.writes[2].data) == {"controller_epoch": 4, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1]}
    assert json.loads(st.writes[4].data)["leader"] == 2
    assert st.created == [("n", 0), ("n", 1)] and all(k == frozenset({"create"}) for k in st.kinds)
    lai = {c.broker_id for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR}
    assert lai == {1, 2}
    assert {c.broker_id for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA} == {1, 2}
    body = next(c.body for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR and c.broker_id == 1)
    assert body["topic_states"][0]["partition_states"][0]["is_new"] is True


def test_engine_waits_for_a_live_replica_and_leaves_known_states_alone():
    s = _state(live=(1,))
    st = engine.step(s, MetadataRead({("n", 1): None}, None, frozenset()), ControllerConfig())
    assert st.writes == [] and st.created == [] and "no live replica" in st.log[0]
    # A state the controller already holds (it created it in an earlier step) is not re-created.
    first = engine.step(s, MetadataRead({("n", 0): None}, None, frozenset()), ControllerConfig())
    s.apply(first.delta)
    again = engine.step(s, MetadataRead({("n", 0): None}, None, frozenset()), ControllerConfig())
    assert again.writes == [] and again.created == []


def _auto_created(live=(1, 2, 3), controllers=(101, 102)) -> ClusterState:
    """Topic "a" as a Kafka broker's auto-creation places it over UpdateMetadata's live
    brokers, which list the controller instances: replicas on 101 and 102, no states."""
    s = _state(live=live)
    s.controller_nodes = {c: Broker(c, "h", 9100 + c) for c in controllers}
    s.assignments[("a", 0)] = Assignment((101, 1))
    s.assignments[("a", 1)] = Assignment((2, 102))
    s.assignments[("a", 2)] = Assignment((3, 1))
    s.topic_partitions["a"], s.topic_versions["a"] = (0, 1, 2), 0
    return s


def test_step_10a_places_a_partition_off_the_controller_instances_before_its_state():
    s = _auto_created()
    missing = frozenset({paths.partitions("a"), *(paths.partition("a", p) for p in range(3))})
    st = engine.step(s, MetadataRead({("a", p): None for p in range(3)}, None, missing), ControllerConfig())
    # The topic znode first (conditional on the version read), then the parents and states.
    assert [type(op).__name__ + " " + op.path for op in st.writes][:2] == [
        "SetData /brokers/topics/a", "Create /brokers/topics/a/partitions"]
    assert st.writes[0].version == 0
    written = json.loads(st.writes[0].data)["partitions"]
    assert set(written) == {"0", "1", "2"} and written["2"] == [3, 1]  # a partition placed on brokers stays
    for p in ("0", "1"):
        assert len(written[p]) == 2 and set(written[p]) <= {1, 2, 3}, written
    s.apply(st.delta)
    assert all(set(s.assignments[("a", p)].replicas) <= {1, 2, 3} for p in range(3))
    assert s.topic_versions["a"] == 1
    states = {op.path: json.loads(op.data) for op in st.writes if op.path.endswith("/state")}
    assert set(states) == {paths.partition_state("a", p) for p in range(3)}
    assert all(set(v["isr"]) <= {1, 2, 3} for v in states.values())
    assert {c.broker_id for c in st.commands} <= {1, 2, 3}  # nothing addressed to an instance
    assert any("controller instance(s) [101, 102]" in w for w in st.warnings)


def test_step_10a_leaves_brokers_with_a_controllers_id_and_partitions_with_a_state_alone():
    # 101 is also a registered broker (ids are one space): its replica is a broker's.
    s = _auto_created(live=(1, 2, 3, 101), controllers=(101,))
    st = engine.step(s, MetadataRead({("a", 0): None}, None, frozenset()), ControllerConfig())
    assert not any(op.path == paths.topic("a") for op in st.writes)
    assert json.loads(next(op.data for op in st.writes if op.path.endswith("/state")))["isr"] == [101, 1]
    # A partition with a state keeps its replicas, even on an instance; no rewrite for it.
    s = _auto_created()
    s.states[("a", 1)] = LeaderIsr(2, 0, 4, (2,), 0)
    st = engine.step(s, MetadataRead({("a", 2): None}, None, frozenset()), ControllerConfig())
    assert not any(op.path == paths.topic("a") for op in st.writes)  # a-2 is on brokers: nothing to place


def test_step_10a_with_fewer_brokers_than_the_factor_places_as_many_as_there_are():
    s = _auto_created(live=(1,), controllers=(101, 102))
    st = engine.step(s, MetadataRead({("a", 0): None}, None, frozenset()), ControllerConfig())
    written = json.loads(st.writes[0].data)["partitions"]
    assert written["0"] == [1] and written["1"] == [1]
    assert json.loads(next(op.data for op in st.writes if op.path.endswith("/state")))["isr"] == [1]


# ---- end to end on the twin --------------------------------------------------------------------


def create_body(*topics, timeout_ms=10_000, validate_only=False) -> dict:
    return {"topics": list(topics), "timeout_ms": timeout_ms, "validate_only": validate_only}


def topic(name, partitions=-1, rf=-1, assignments=(), configs=()) -> dict:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [{"partition_index": p, "broker_ids": list(b)} for p, b in assignments],
            "configs": [{"name": k, "value": v} for k, v in configs]}


def hosted(h: Harness, name: str) -> dict[int, set[int]]:
    """partition -> brokers whose simulated disk holds a replica of it."""
    out: dict[int, set[int]] = {}
    for b, broker in h.cluster.brokers.items():
        for r in broker.core.replicas():
            if r.topic == name:
                out.setdefault(r.partition, set()).add(b)
    return out


async def assert_created(h: Harness, name: str, partitions: int) -> dict:
    """Every partition with its state; its replicas on their brokers once the loop delivered the
    LeaderAndIsr that went out with the answer."""
    await h.settle()
    znode = h.json(paths.topic(name))["partitions"]
    assert sorted(int(p) for p in znode) == list(range(partitions))
    on_disk = hosted(h, name)
    for p, replicas in znode.items():
        state = h.json(paths.partition_state(name, int(p)))
        assert state["leader"] == replicas[0] and state["isr"] == replicas and state["leader_epoch"] == 0
        assert on_disk[int(p)] == set(replicas)
        leader = h.cluster.broker(replicas[0]).core.model.get(name, int(p), replicas[0])
        assert leader is not None and leader.leader == replicas[0]
        for b in h.cluster.brokers:  # every broker's metadata cache knows the partition
            assert (name, int(p)) in _cache(h, b), (b, name, p)
    return znode


def _cache(h: Harness, b: int) -> set:
    cache = h.cluster.broker(b).core.metadata
    return {(t, p) for t, parts in cache.partitions.items() for p in parts}


h = harness_fixture("t:4:3:64KiB")


async def test_create_topics_blocks_until_every_partition_has_a_leader_and_metadata(h):
    await h.start_controller(101)
    await h.tick()
    await h.admin.create(paths.broker_config(paths.BROKER_DEFAULT_CONFIG), json.dumps(
        {"version": 1, "config": {"min.insync.replicas": "2"}}).encode(), makepath=True)
    answer = await handle_create(context(h), 7, create_body(topic("orders", 6, 3, configs=[("retention.ms", "3600000")])))
    [result] = answer["topics"]
    assert (result["error_code"], result["num_partitions"], result["replication_factor"]) == (0, 6, 3)
    # Every Kafka topic config: the one given as the topic's (1), min.insync.replicas the broker
    # default entity's (3), the rest at Kafka's defaults (5).
    given = {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}
    assert set(given) == set(TOPIC_CONFIGS)
    assert given["retention.ms"] == ("3600000", 1) and given["min.insync.replicas"] == ("2", 3)
    assert given["segment.bytes"] == ("1073741824", 5)
    assert given["follower.replication.throttled.replicas"] == ("", 5) and given["cleanup.policy"] == ("delete", 5)
    assert json.loads(h.server.read(paths.topic_config("orders"))[0])["config"] == {"retention.ms": "3600000"}
    # Answered once every partition has its state (a leader) and its LeaderAndIsr and
    # UpdateMetadata went out; the brokers act on them as the loop runs.
    for tp in [("orders", p) for p in range(6)]:
        assert h.server.exists(paths.partition_state(*tp)) is not None, tp
    znode = await assert_created(h, "orders", 6)
    # Placement: with "t" (4 x 3 on 6 brokers: 12 replicas) the cluster ends at 30 = 5 each.
    counts = collections.Counter(b for rs in h.json(paths.topic("t"))["partitions"].values() for b in rs)
    counts.update(b for rs in znode.values() for b in rs)
    assert max(counts.values()) - min(counts.values()) <= 1, counts


async def test_validate_only_and_errors_write_nothing(h):
    await h.start_controller(101)
    await h.tick()
    before = h.server.dump()
    answer = await handle_create(context(h), 5, create_body(
        topic("v", 3, 2), topic("t", 1, 1), topic("bad/name", 1, 1), topic("big", 1, 7),
        topic("cfg", 1, 1, configs=[("retention.ms", "-2")]), validate_only=True))
    assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
        ("v", 0), ("t", 36), ("bad/name", 17), ("big", 38), ("cfg", 40),
    ]
    assert answer["topics"][0]["num_partitions"] == 3 and answer["topics"][1]["configs"] is None
    assert h.server.dump() == before
    answer = await handle_create(context(h), 4, create_body(
        topic("x", 2, 1, assignments=[(0, [1])]), topic("y", assignments=[(0, [1, 9])]), topic("z", 0, 1)))
    assert [t["error_code"] for t in answer["topics"]] == [42, 39, 37]
    assert h.server.dump() == before


async def test_explicit_assignment_and_configs_are_written_as_given(h):
    await h.start_controller(101)
    await h.tick()
    configs = [("leader.replication.throttled.replicas", "0:5")]
    answer = await handle_create(context(h), 7, create_body(
        topic("e", assignments=[(0, [5, 6]), (1, [6, 4])], configs=configs)))
    assert answer["topics"][0]["error_code"] == 0
    assert await assert_created(h, "e", 2) == {"0": [5, 6], "1": [6, 4]}
    assert json.loads(h.server.read(paths.topic_config("e"))[0])["config"] == dict(configs)
    again = await handle_create(context(h), 7, create_body(topic("e", 1, 1)))
    assert again["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS


async def test_timeout_zero_returns_after_the_write_and_creation_completes(h):
    await h.start_controller(101)
    await h.tick()
    answer = await handle_create(context(h), 2, create_body(topic("q", 3, 2), timeout_ms=0))
    # Kafka's ZooKeeper-mode answer to a request that asks for no wait: under way, not waited for.
    assert answer["topics"][0]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    # validate_only is answered as checked, and a refusal keeps its own code.
    answer = await handle_create(context(h), 2, create_body(topic("v", 1, 1), timeout_ms=0, validate_only=True))
    assert answer["topics"][0]["error_code"] == 0
    answer = await handle_create(context(h), 2, create_body(topic("q", 1, 1), timeout_ms=-1))
    assert answer["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    await h.tick()
    await assert_created(h, "q", 3)


async def test_a_creation_left_half_done_is_finished_by_the_next_controller(h):
    """A controller that wrote the topic znode (step 3) and died before any state: the next
    one creates the parents and states at its election. A topic znode written alone, as
    Kafka's own tools write it, is taken the same way."""
    c1 = await h.start_controller(101)
    await h.tick()
    await c1.stop()
    await h.settle()
    await h.admin.create(paths.topic("half"), encode_topic({0: Assignment((1, 2)), 1: Assignment((3, 4))}))
    await h.admin.create(paths.partitions("half"))  # one parent landed, nothing else
    await h.settle()
    assert h.server.exists(paths.partition_state("half", 0)) is None
    await h.start_controller(102)
    await h.tick()
    await assert_created(h, "half", 2)


async def test_a_partition_with_no_live_replica_gets_its_leader_when_one_registers(h):
    await h.start_controller(101)
    await h.tick()
    await h.cluster.stop_broker(5)
    await h.cluster.stop_broker(6)
    await h.tick()
    # CreateTopics refuses unregistered brokers (INVALID_REPLICA_ASSIGNMENT); a tool writing
    # the topic znode (or brokers failing just after the request) leaves no replica live.
    answer = await handle_create(context(h), 7, create_body(topic("late", assignments=[(0, [5, 6])])))
    assert answer["topics"][0]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    await h.admin.create(paths.topic("late"), encode_topic({0: Assignment((5, 6))}))
    await h.tick()
    assert h.server.exists(paths.partition_state("late", 0)) is None
    await h.cluster.start_broker(6)
    await h.tick()
    await h.tick()
    state = h.json(paths.partition_state("late", 0))
    assert state["leader"] == 6 and state["isr"] == [6]
    assert hosted(h, "late") == {0: {6}}


class TopicGrants:
    """An authorizer granting ``operation`` on the named topics only (no cluster grant)."""

    def __init__(self, operation: int, topics: set[str]):
        self.operation, self.topics = operation, topics

    async def allows(self, session, operation, resource_type, name) -> bool:
        from controller.core import acl

        return operation == self.operation and resource_type == acl.TOPIC and name in self.topics


async def test_create_needs_create_on_the_cluster_or_the_topic(h):
    from controller.core import acl
    from controller.shell.authorizer import API_OPERATIONS, PER_RESOURCE_APIS

    assert not set(PER_RESOURCE_APIS) & set(API_OPERATIONS)  # no request-wide gate for them
    await h.start_controller(101)
    await h.tick()
    ctx = context(h)
    ctx.authorizer = TopicGrants(acl.CREATE, {"mine"})
    answer = await handle_create(ctx, 7, create_body(topic("mine", 1, 1), topic("theirs", 1, 1)))
    assert [t["error_code"] for t in answer["topics"]] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert h.server.exists(paths.topic("theirs")) is None


@pytest.mark.parametrize("k", range(0, 9))
async def test_a_controller_dying_between_a_new_state_and_its_leader_and_isr(h, k):
    """Found by tests/controller/test_stateful_topics.py: the state znodes landed, the controller
    died before sending LeaderAndIsr; the next one finds the replicas missing from the brokers'
    DescribeLogDirs answers at its election and sends it (engine step 9b)."""
    c1 = await h.start_controller(101)
    await h.tick()
    c1.store.remaining = k  # crash after k more ZooKeeper ops
    try:
        await handle_create(context(h), 7, create_body(topic("n0", 2, 1), timeout_ms=0))
    except (SessionExpiredError, ApiError):
        pass  # the crash cut the request's own write (NOT_CONTROLLER): it may or may not have landed
    await h.settle()
    if h.server.exists(paths.topic("n0")) is None:
        return  # nothing to finish
    if c1.alive:
        await c1.stop()
    await h.start_controller(102)
    for _ in range(3):
        await h.tick()
    await assert_created(h, "n0", 2)
