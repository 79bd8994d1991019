"""Topic deletion (issue 14 item 2): Kafka's protocol (controller.core.topic_deletion) on the
ZooKeeper twin with simulated brokers - every replica deleted from every broker's disk before
the znodes go, a broker that is down gets its deletion when it returns, a reassigned topic has
its moves cancelled and throttles removed first, a deletion resumed after failover, and the
DeleteTopics errors."""

from __future__ import annotations

import uuid

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import DeletionsRead, ReplicasHosted
from controller.core.state import ClusterState
from controller.shell.admin.delete_topics import handle_delete
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import cluster, context, reassign_body, throttle_configs
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from tests.controller.test_topic_creation import hosted
from znodes import paths
from znodes.values import Assignment, Broker, LeaderIsr

# ---- the engine's part ---------------------------------------------------------------------------


def _state() -> ClusterState:
    s = ClusterState(controller_id=101, epoch=4, brokers={b: Broker(b, "h", 9000 + b) for b in (1, 3)})
    s.assignments[("t", 0)] = Assignment((1, 2))
    s.topic_partitions["t"], s.topic_versions["t"] = (0,), 0
    s.states[("t", 0)] = LeaderIsr(1, 3, 4, (1, 2), 5)
    return s


def test_the_worked_table():
    """controller.core.topic_deletion's table: p0 [1,2], broker 2 down."""
    s, config = _state(), ControllerConfig()
    st = engine.step(s, DeletionsRead(frozenset({"t"})), config)
    sent = {(c.broker_id, c.api_key) for c in st.commands}
    assert sent == {(1, ApiKey.STOP_REPLICA), (1, ApiKey.DESCRIBE_LOG_DIRS), (1, ApiKey.UPDATE_METADATA), (3, ApiKey.UPDATE_METADATA)}
    um = next(c.body for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA)
    assert um["topic_states"][0]["partition_states"][0]["leader"] == -2
    stop = next(c.body for c in st.commands if c.api_key == ApiKey.STOP_REPLICA)
    assert stop["topic_states"][0]["partition_states"][0] == {"partition_index": 0, "leader_epoch": -2, "delete_partition": True}
    assert st.writes == [] and st.topics_deleted == []
    s.apply(st.delta)
    assert s.deleting["t"].left == {(0, 1), (0, 2)}
    st = engine.step(s, ReplicasHosted(1, frozenset()), config)  # broker 1: gone
    s.apply(st.delta)
    assert s.deleting["t"].left == {(0, 2)} and st.topics_deleted == []
    s.brokers[2] = Broker(2, "h", 9002)
    st = engine.step(s, ReplicasHosted(2, frozenset({("t", 0)})), config)  # still there: again
    assert {(c.broker_id, c.api_key) for c in st.commands} == {(2, ApiKey.STOP_REPLICA), (2, ApiKey.DESCRIBE_LOG_DIRS)}
    s.apply(st.delta)
    st = engine.step(s, ReplicasHosted(2, frozenset()), config)
    assert st.topics_deleted == ["t"]
    s.apply(st.delta)
    assert "t" not in s.topic_partitions and ("t", 0) not in s.assignments and not s.deleting


def test_an_answer_with_a_failed_log_directory_takes_no_replica_for_gone():
    """Broker 1 answers with a directory failed: t-0's replica, absent from what its other
    directories hold, may be on the failed one, so the deletion waits; a replica the partial
    answer lists is told again."""
    s, config = _state(), ControllerConfig()
    s.apply(engine.step(s, DeletionsRead(frozenset({"t"})), config).delta)
    st = engine.step(s, ReplicasHosted(1, frozenset(), complete=False), config)
    s.apply(st.delta)
    assert s.deleting["t"].left == {(0, 1), (0, 2)} and st.topics_deleted == []
    st = engine.step(s, ReplicasHosted(1, frozenset({("t", 0)}), complete=False), config)
    assert {(c.broker_id, c.api_key) for c in st.commands} == {(1, ApiKey.STOP_REPLICA), (1, ApiKey.DESCRIBE_LOG_DIRS)}
    s.apply(st.delta)
    st = engine.step(s, ReplicasHosted(1, frozenset()), config)  # complete at last: gone
    s.apply(st.delta)
    assert s.deleting["t"].left == {(0, 2)}


def test_markers_of_unknown_topics_or_with_deletion_disabled_are_dropped():
    st = engine.step(_state(), DeletionsRead(frozenset({"nope"})), ControllerConfig())
    assert st.markers_dropped == ["nope"] and st.topics_deleted == []
    st = engine.step(_state(), DeletionsRead(frozenset({"t"})), ControllerConfig(delete_topic_enable=False))
    assert st.markers_dropped == ["t"] and st.commands == []


# ---- end to end ------------------------------------------------------------------------------------


def delete_body(*names, timeout_ms=10_000) -> dict:
    return {"topic_names": list(names), "timeout_ms": timeout_ms}


def assert_gone(h: Harness, name: str) -> None:
    assert not h.violations, h.violations
    for path in (paths.topic(name), paths.topic_config(name), paths.delete_topic(name)):
        assert h.server.exists(path) is None, path
    assert hosted(h, name) == {}
    for b, broker in h.cluster.brokers.items():
        assert name not in broker.core.metadata.partitions, b


h = harness_fixture("t:4:3:64KiB", "keep:2:2:64KiB")


async def test_delete_topics_removes_every_replica_then_the_znodes(h):
    c = await h.start_controller(101)
    await h.tick()
    assert hosted(h, "t")
    answer = await handle_delete(context(h), 5, delete_body("t"))
    assert answer["responses"] == [{"name": "t", "topic_id": answer["responses"][0]["topic_id"], "error_code": 0,
                                    "error_message": None}]
    assert_gone(h, "t")
    assert hosted(h, "keep") and h.server.exists(paths.topic("keep")) is not None
    assert "t" not in c.active.state.topic_partitions and not c.active.state.deleting


async def test_a_broker_down_gets_its_deletion_when_it_returns(h):
    await h.start_controller(101)
    await h.tick()
    victim = h.assignments[("t", 0)][0]
    await h.cluster.stop_broker(victim)
    await h.tick()
    answer = await handle_delete(context(h), 6, {"topics": [{"name": "t"}], "timeout_ms": 200})
    assert answer["responses"][0]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    await h.tick()
    assert h.server.exists(paths.topic("t")) is not None  # waits for the broker
    assert {b for bs in hosted(h, "t").values() for b in bs} == {victim}
    await h.cluster.start_broker(victim)
    for _ in range(3):
        await h.tick()
    assert_gone(h, "t")


async def test_a_reassigned_topic_has_its_moves_cancelled_and_throttles_removed_first():
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        tp = ("t", 0)
        target = [b for b in range(1, 7) if b not in h.assignments[tp]]
        from controller.shell.admin.kip179 import handle_reassign

        assert (await handle_reassign(context(h), 0, reassign_body({tp: target}, throttle=1000)))
        await h.tick()
        assert throttle_configs(h)  # the move runs, throttled
        answer = await handle_delete(context(h), 5, delete_body("t"))
        assert answer["responses"][0]["error_code"] == 0
        assert "cancels the reassignment of 1 partition(s)" in answer["responses"][0]["error_message"]
        for _ in range(3):
            await h.tick()
        assert_gone(h, "t")
        assert throttle_configs(h) == {}
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is None
    finally:
        await h.close()


async def test_a_deletion_cut_short_is_resumed_by_the_next_controller(h):
    """The marker written with no controller (or by one that died), and a partition's state
    already deleted (a flush cut after it): the next controller deletes the rest and does not
    give that partition a state again."""
    c1 = await h.start_controller(101)
    await h.tick()
    await c1.stop()
    await h.admin.create(paths.DELETE_TOPICS)
    await h.admin.create(paths.delete_topic("t"))
    await h.admin.delete(paths.partition_state("t", 1))
    await h.start_controller(102)
    for _ in range(3):
        await h.tick()
    assert_gone(h, "t")


async def test_delete_topics_errors(h):
    await h.start_controller(101)
    await h.tick()
    answer = await handle_delete(context(h), 6, {"topics": [
        {"name": "nope"}, {"name": "bad/name"}, {"name": None, "topic_id": None}, {"name": "keep"}, {"name": "keep"},
    ], "timeout_ms": 0})
    assert [r["error_code"] for r in answer["responses"]] == [3, 3, 100, 42, 42]
    assert h.server.exists(paths.DELETE_TOPICS) is None
    # Kafka: "Topic name and topic ID can not both be specified." fails the whole request.
    answer = await handle_delete(context(h), 6, {"topics": [
        {"name": "t", "topic_id": uuid.UUID(int=5)}, {"name": "keep"}], "timeout_ms": 0})
    assert [r["error_code"] for r in answer["responses"]] == [42, 42]
    assert h.server.exists(paths.DELETE_TOPICS) is None and h.server.exists(paths.topic("t")) is not None


async def test_delete_topic_enable_false_refuses():
    harness = Harness(topics=("t:1:1",), config=ControllerConfig(retry_backoff_s=0.0, request_retries=0,
                                                                 delete_topic_enable=False))
    await harness.start()
    try:
        await harness.start_controller(101)
        await harness.tick()
        answer = await handle_delete(context(harness), 3, delete_body("t"))
        assert answer["responses"][0]["error_code"] == ErrorCode.TOPIC_DELETION_DISABLED
        # Kafka refuses the whole request first; v0-2 predate TOPIC_DELETION_DISABLED.
        for version in (0, 1, 2):
            answer = await handle_delete(context(harness), version, {"topic_names": ["t", "nope"], "timeout_ms": 0})
            assert [r["error_code"] for r in answer["responses"]] == [ErrorCode.INVALID_REQUEST] * 2
        answer = await handle_delete(context(harness), 6, {"topics": [{"name": "nope"}, {"name": "t"}], "timeout_ms": 0})
        assert [r["error_code"] for r in answer["responses"]] == [ErrorCode.TOPIC_DELETION_DISABLED] * 2
        # A marker a tool writes is dropped, the topic kept.
        await harness.admin.create(paths.DELETE_TOPICS)
        await harness.admin.create(paths.delete_topic("t"))
        await harness.tick()
        assert harness.server.exists(paths.delete_topic("t")) is None
        assert harness.server.exists(paths.topic("t")) is not None
    finally:
        await harness.close()


async def test_a_marker_with_no_legal_topic_name_is_dropped_and_the_controller_goes_on(h):
    """A tool's typo under /admin/delete_topics (an outside probe's "orders,logs") killed every
    controller in turn: building the marker's path checked it as a topic name. Kafka drops the
    markers of topics that do not exist and carries on; so does this one."""
    c = await h.start_controller(101)
    await h.tick()
    await h.admin.create(paths.DELETE_TOPICS)
    for child in ("orders,logs", "bad name"):
        await h.admin.create(paths.join(paths.DELETE_TOPICS, child))
    await h.tick()
    assert h.server.children(paths.DELETE_TOPICS) == []
    assert c.alive and c.active is not None
    await h.submit({("t", 0): [1, 2, 3]})  # and it still works
    await h.run_until_quiet()
    h.check_invariants({("t", 0): [1, 2, 3]})
