"""Leader elections asked for by ElectLeaders (KIP-460, issue 14 item 5): the engine's step 12
(controller.core.elections), every rule of its docstring."""

from __future__ import annotations

import json

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.elections import PREFERRED, UNCLEAN
from controller.core.events import ElectionRequested, PreferredElectionRead
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes.values import Assignment, Broker, LeaderIsr

TOKEN = object()


def _state(live=(1, 2, 3)) -> ClusterState:
    s = ClusterState(controller_id=101, epoch=4, brokers={b: Broker(b, "h", 9000 + b) for b in live})
    for p, (replicas, state) in enumerate([
        ((1, 2, 3), LeaderIsr(2, 5, 3, (1, 2, 3), 7)),  # p0: preferred 1 in sync, 2 leads
        ((1, 2, 3), LeaderIsr(1, 1, 3, (1, 2, 3), 2)),  # p1: preferred leads already
        ((3, 1, 2), LeaderIsr(1, 1, 3, (1, 2), 2)),  # p2: preferred 3 out of the ISR
        ((2, 3), LeaderIsr(9, 4, 3, (9,), 6)),  # p3: leader gone, ISR gone
    ]):
        s.assignments[("t", p)] = Assignment(replicas)
        s.states[("t", p)] = state
    s.topic_partitions["t"], s.topic_versions["t"] = (0, 1, 2, 3), 0
    return s


def results(st) -> dict:
    [(token, res)] = st.elections
    assert token is TOKEN
    return {tp: code for tp, (code, _) in res.items()}


def test_preferred_election_moves_leadership_with_a_new_epoch_and_says_why_not_elsewhere():
    st = engine.step(_state(), ElectionRequested(None, PREFERRED, {}, TOKEN), ControllerConfig())
    assert results(st) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 2): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ("t", 3): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    }
    [write] = st.writes
    assert write.path == "/brokers/topics/t/partitions/0/state" and write.version == 7
    assert json.loads(write.data) == {"controller_epoch": 4, "leader": 1, "version": 1, "leader_epoch": 6, "isr": [1, 2, 3]}
    assert {c.broker_id for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR} == {1, 2, 3}
    assert {c.broker_id for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA} == {1, 2, 3}
    assert st.kinds == [frozenset({"elect"})]


def test_unclean_election_takes_the_first_live_replica_only_when_nothing_in_sync_lives():
    st = engine.step(_state(), ElectionRequested((("t", 3), ("t", 0), ("t", 9)), UNCLEAN, {}, TOKEN), ControllerConfig())
    assert results(st) == {("t", 3): ErrorCode.NONE, ("t", 0): ErrorCode.ELECTION_NOT_NEEDED,
                           ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert json.loads(st.writes[0].data)["leader"] == 2 and json.loads(st.writes[0].data)["isr"] == [2]
    none_live = engine.step(_state(live=(1,)), ElectionRequested((("t", 3),), UNCLEAN, {}, TOKEN), ControllerConfig())
    assert results(none_live) == {("t", 3): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE} and none_live.writes == []


def test_an_unclean_request_with_a_live_isr_member_elects_as_the_controller_after_a_broker_failure():
    """Leader 2 dead, ISR [3, 2, 1], broker 3 and 1 live: Kafka's offline election takes the first
    replica of the assignment (1, 2, 3) that is live and in the ISR - 1, not the ISR's first -
    and keeps the ISR's live members only, as controller.core.broker_failure does; the ISR
    kept whole named dead broker 2 beside the new leader."""
    s = _state(live=(1, 3))
    s.states[("t", 0)] = LeaderIsr(2, 5, 3, (3, 2, 1), 7)
    st = engine.step(s, ElectionRequested((("t", 0),), UNCLEAN, {}, TOKEN), ControllerConfig())
    assert results(st) == {("t", 0): ErrorCode.NONE}
    [write] = st.writes
    assert json.loads(write.data) == {"controller_epoch": 4, "leader": 1, "version": 1, "leader_epoch": 6, "isr": [3, 1]}
    assert not [line for line in st.log if "unclean" in line]  # a clean election: nothing lost


def test_a_moving_partition_and_a_newer_read_state():
    s = _state()
    s.tasks[("t", 0)] = Move(("t", 0), (1, 2, 4), Phase.REPLICATING, original=(1, 2, 3))
    st = engine.step(s, ElectionRequested((("t", 0),), PREFERRED, {}, TOKEN), ControllerConfig())
    assert results(st) == {("t", 0): ErrorCode.REASSIGNMENT_IN_PROGRESS}
    # The state the shell read is newer than the one held (the leader moved meanwhile): used.
    read = LeaderIsr(1, 6, 3, (1, 2, 3), 8)
    st = engine.step(_state(), ElectionRequested((("t", 0),), PREFERRED, {("t", 0): read}, TOKEN), ControllerConfig())
    assert results(st) == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED}


# ---- ElectLeaders end to end on the twin ----------------------------------------------------------


async def test_elect_leaders_moves_leadership_back_to_the_preferred_replica():
    from controller.shell.admin.elect_leaders import handle_elect
    from tests.admin.test_kip179 import context
    from tests.controller.harness import Harness
    from znodes import paths

    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        replicas = h.assignments[("t", 0)]
        path = paths.partition_state("t", 0)
        state = h.json(path)
        # The leader moved to the second replica (as after a failure of the first).
        moved = dict(state, leader=replicas[1], leader_epoch=state["leader_epoch"] + 1)
        await h.admin.set(path, json.dumps(moved).encode())
        body = {"election_type": PREFERRED, "topic_partitions": [{"topic": "t", "partitions": [0, 1, 7]}], "timeout_ms": 5000}
        answer = await handle_elect(context(h), 2, body)
        codes = {(t["topic"], p["partition_id"]): p["error_code"] for t in answer["replica_election_results"]
                 for p in t["partition_result"]}
        assert codes == {("t", 0): 0, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED, ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        now = h.json(path)
        assert now["leader"] == replicas[0] and now["leader_epoch"] == moved["leader_epoch"] + 1
        await h.tick()
        replica = h.cluster.broker(replicas[0]).core.model.get("t", 0, replicas[0])
        assert replica.leader == replicas[0] and replica.leader_epoch == now["leader_epoch"]
        # v0 (KIP-183's preferred only), every partition: nothing left to elect, nothing listed.
        answer = await handle_elect(context(h), 0, {"topic_partitions": None, "timeout_ms": 5000})
        assert answer["replica_election_results"] == []
    finally:
        await h.close()


# ---- the automatic preferred-leader rebalance --------------------------------------------------


def test_imbalance_over_the_percentage_picks_the_partitions_that_can_take_their_leader_back():
    from controller.core.elections import imbalanced

    assignments = {("t", p): Assignment((1, 2)) for p in range(10)}
    assignments |= {("u", p): Assignment((2, 1)) for p in range(10)}
    states = {tp: LeaderIsr(tp[0] == "t" and 1 or 2, 0, 1, (1, 2), 0) for tp in assignments}
    states[("t", 0)] = LeaderIsr(2, 1, 1, (1, 2), 1)  # 1 of broker 1's 10: 10%, not over
    live = {1: None, 2: None}
    assert imbalanced(assignments, states, {}, live, 10) == []
    states[("t", 1)] = LeaderIsr(2, 1, 1, (2,), 1)  # 20%: over; t-1's preferred is out of the ISR
    assert imbalanced(assignments, states, {}, live, 10) == [("t", 0)]
    assert imbalanced(assignments, states, {}, live, 20) == []
    assert imbalanced(assignments, states, {}, {2: None}, 10) == []  # broker 1 is down
    moving = {("t", 0): Move(("t", 0), (1, 3), Phase.REPLICATING, original=(1, 2))}
    assert imbalanced(assignments, states, moving, live, 10) == []


async def test_the_controller_rebalances_leaders_on_its_own():
    from tests.controller.harness import Harness
    from znodes import paths

    import asyncio

    h = Harness(topics=("t:3:3:64KiB",), config=ControllerConfig(
        retry_backoff_s=0.0, request_retries=0, leader_imbalance_check_interval_s=0.05))
    await h.start()
    try:
        c = await h.start_controller(101)
        await h.tick()
        replicas = h.assignments[("t", 0)]
        path = paths.partition_state("t", 0)
        state = h.json(path)
        await h.admin.set(path, json.dumps(dict(state, leader=replicas[1], leader_epoch=state["leader_epoch"] + 1)).encode())
        # The controller learns the state as it would from the leader's ISR change notification.
        await h.admin.create(paths.isr_change_prefix(), json.dumps(
            {"version": 1, "partitions": [{"topic": "t", "partition": 0}]}).encode(), sequential=True)
        for _ in range(20):
            await asyncio.sleep(0.05)
            await h.settle()
            if h.json(path)["leader"] == replicas[0]:
                break
        assert h.json(path)["leader"] == replicas[0]
        assert c.active.state.states[("t", 0)].leader == replicas[0]
    finally:
        await h.close()


async def test_an_election_or_cancel_queued_at_resignation_is_answered_not_controller_at_once():
    """A controller that resigns with an ElectLeaders or CancelReassignments request still queued
    fails it at once (controller.shell.active.fail_waiting): the handler answers NOT_CONTROLLER,
    as Kafka's does, instead of the client waiting out its timeout. Other items are kept."""
    import asyncio
    from types import SimpleNamespace

    from controller.core.events import CancelRequested, StatesRead
    from controller.shell.active import CancelNotRecorded, fail_waiting
    from controller.shell.admin.elect_leaders import handle_elect
    from znodes.twin import TwinServer

    loop = asyncio.get_running_loop()
    election, cancel = loop.create_future(), loop.create_future()
    other = StatesRead({})
    kept = fail_waiting([ElectionRequested(None, PREFERRED, {}, election), CancelRequested((), cancel, "api"), other], "(deposed)")
    assert kept == [other]
    assert isinstance(cancel.exception(), CancelNotRecorded) and "resigned" in str(election.exception())

    class Resigning:  # the controller resigns as the request is queued
        def put_nowait(self, event):
            fail_waiting([event])

    active = SimpleNamespace(state=ClusterState(controller_id=101, epoch=1), inbox=SimpleNamespace(queue=Resigning()))
    active.state.assignments[("t", 0)] = Assignment((1, 2))
    ctx = SimpleNamespace(require_active=lambda: active, store=TwinServer().connect())
    body = {"election_type": PREFERRED, "topic_partitions": [{"topic": "t", "partitions": [0]}], "timeout_ms": 60_000}
    answer = await asyncio.wait_for(handle_elect(ctx, 2, body), 5)
    assert answer["error_code"] == ErrorCode.NOT_CONTROLLER
    assert answer["replica_election_results"][0]["partition_result"][0]["error_code"] == ErrorCode.NOT_CONTROLLER


async def test_an_election_of_every_partition_that_fails_lists_every_partition_with_its_error():
    """ElectLeaders naming no partition that times out, or whose step's writes fail, lists every
    known partition with REQUEST_TIMED_OUT or UNKNOWN_SERVER_ERROR (Kafka's broker expands a
    null list to every partition before it waits): an empty list with error code 0 read as
    nothing to elect."""
    import asyncio
    from types import SimpleNamespace

    from controller.shell.admin.elect_leaders import handle_elect
    from znodes.twin import TwinServer

    class Failing:  # the step's writes failed (controller.shell.active fails the token)
        def put_nowait(self, event):
            event.token.set_exception(RuntimeError("the flush failed"))

    class Silent:  # never taken in time
        def put_nowait(self, event):
            pass

    def ctx(queue):
        active = SimpleNamespace(state=ClusterState(controller_id=101, epoch=1), inbox=SimpleNamespace(queue=queue))
        active.state.assignments.update({("t", 0): Assignment((1, 2)), ("t", 1): Assignment((2, 1))})
        return SimpleNamespace(require_active=lambda: active, store=TwinServer().connect())

    every = {"election_type": PREFERRED, "topic_partitions": None}
    for queue, timeout_ms, code in ((Failing(), 60_000, ErrorCode.UNKNOWN_SERVER_ERROR),
                                    (Silent(), 1, ErrorCode.REQUEST_TIMED_OUT)):
        answer = await asyncio.wait_for(handle_elect(ctx(queue), 2, dict(every, timeout_ms=timeout_ms)), 5)
        listed = {(t["topic"], p["partition_id"]): p["error_code"] for t in answer["replica_election_results"]
                  for p in t["partition_result"]}
        assert listed == {("t", 0): code, ("t", 1): code}, answer


def test_the_zookeeper_door_elects_then_deletes_its_znode_in_the_same_flush():
    """Step 5: /admin/preferred_replica_election's partitions as PREFERRED, nobody waiting; the
    znode deleted after the state writes, in the same flush, at the version read; what could not
    be elected is a warning."""
    asked = (("t", 0), ("t", 1), ("t", 2), ("t", 9))
    st = engine.step(_state(), PreferredElectionRead(asked, 3, {}), ControllerConfig())
    assert st.elections == []
    state_write, delete = st.writes
    assert state_write.path == "/brokers/topics/t/partitions/0/state" and state_write.version == 7
    assert (delete.path, delete.version, type(delete).__name__) == ("/admin/preferred_replica_election", 3, "Delete")
    assert st.kinds == [frozenset({"elect"}), frozenset({"elect"})]
    assert any("1 of 4 partition(s)" in line for line in st.log)
    [warning] = st.warnings
    assert "t-2: PREFERRED_LEADER_NOT_AVAILABLE" in warning and "t-9: UNKNOWN_TOPIC_OR_PARTITION" in warning
    assert "t-1" not in warning  # ELECTION_NOT_NEEDED is no news


def test_the_zookeeper_door_leaves_a_znode_that_does_not_decode():
    st = engine.step(_state(), PreferredElectionRead((), 0, {}, error="partitions.0.partition: missing"), ControllerConfig())
    assert st.writes == [] and st.commands == []
    assert any("left in place" in w and "partitions.0.partition" in w for w in st.warnings)
