"""Leaders and ISRs after a broker fails or comes back (controller.core.broker_failure, Kafka's
onBrokerFailure / onBrokerStartup): the rules of ``decide`` case by case, then the docstring's
worked table through the engine (BrokersRead + OfflineCheck in one step, as the shell feeds
them): the state znode writes (leader epoch + 1, conditional on the zkVersion), the requests,
what a running move keeps, and a broker coming back."""

from __future__ import annotations

import json

import pytest

from controller.core import engine
from controller.core.broker_failure import NO_LEADER, decide, unclean_candidates, unclean_enabled
from controller.core.config import ControllerConfig
from controller.core.events import BrokersRead, offline_check
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from protocol import ApiKey
from znodes.values import Assignment, Broker, LeaderIsr


def _s(leader, isr, epoch=3, zk=5):
    return LeaderIsr(leader, epoch, 1, tuple(isr), zk)


@pytest.mark.parametrize(
    "replicas, state, live, unclean, moving, expected",
    [
        # step 3: clean, first live replica of RS (RS order, not ISR order) in the ISR; ISR = live members
        ((1, 2, 3), _s(1, (1, 3, 2)), {2, 3}, False, False, (2, (3, 2), "clean")),
        # a NO_LEADER partition gets one once an ISR member is live (a broker came back)
        ((1, 2), _s(NO_LEADER, (1,)), {1, 2}, False, False, (1, (1,), "clean")),
        # step 2: live leader, a dead ISR member goes
        ((2, 1, 3), _s(2, (2, 1, 3)), {2, 3}, False, False, (2, (2, 3), "shrink")),
        # step 2: nothing dead in the ISR, or not a replica of it
        ((3, 4), _s(3, (3, 4)), {2, 3, 4}, False, False, None),
        # step 2: a running move's ISR is the move's
        ((4, 2, 1), _s(2, (2, 1)), {2, 4}, False, True, None),
        # step 3 for a running move: its leader died, RS order (TRS first)
        ((4, 2, 1), _s(1, (1, 2, 4)), {2, 4}, False, True, (4, (2, 4), "clean")),
        # step 5: no live ISR member, unclean off -> NO_LEADER, ISR kept
        ((1, 2), _s(1, (1,)), {2}, False, False, (NO_LEADER, (1,), "none")),
        # ... and nothing more once it is NO_LEADER
        ((1, 2), _s(NO_LEADER, (1,)), {2}, False, False, None),
        # step 4: unclean enabled: the first live replica, alone in the ISR
        ((1, 3, 2), _s(1, (1,)), {2, 3}, True, False, (3, (3,), "unclean")),
        # unclean enabled, but a clean election is possible: clean
        ((1, 3, 2), _s(1, (1, 2)), {2, 3}, True, False, (2, (2,), "clean")),
        # nothing live at all: NO_LEADER even with unclean enabled
        ((1, 2), _s(1, (1, 2)), set(), True, False, (NO_LEADER, (1, 2), "none")),
    ],
)
def test_decide(replicas, state, live, unclean, moving, expected):
    assert decide(replicas, state, live, unclean=unclean, moving=moving) == expected


def test_unclean_candidates_and_config():
    states = {("a", 0): _s(1, (1,)), ("b", 0): _s(1, (1, 2)), ("c", 0): _s(1, (1,)), ("d", 0): _s(2, (2,))}
    assignments = {("a", 0): Assignment((1, 2)), ("b", 0): Assignment((1, 2)), ("c", 0): Assignment((1,)),
                   ("d", 0): Assignment((2, 1))}
    # a: only an unclean election helps; b: 2 is in the ISR; c: no live replica; d: leader live
    assert unclean_candidates(states, assignments, {2}) == {"a"}
    assert unclean_candidates(states, assignments, {2}, [("b", 0)]) == set()
    assert unclean_enabled({"unclean.leader.election.enable": "True"})
    assert not unclean_enabled({"unclean.leader.election.enable": "false"})
    assert not unclean_enabled(None) and unclean_enabled({}, default=True)


# ---- the worked table through the engine ------------------------------------------------------

TABLE = {  # partition: (RS, AR, RR, state before), the module docstring's rows a-g
    ("t", 0): ((1, 2, 3), (), (), LeaderIsr(1, 4, 1, (1, 2, 3), 10)),  # a
    ("t", 1): ((2, 1, 3), (), (), LeaderIsr(2, 7, 1, (2, 1, 3), 11)),  # b
    ("t", 2): ((1, 2), (), (), LeaderIsr(1, 3, 1, (1,), 12)),  # c
    ("t", 3): ((3, 4), (), (), LeaderIsr(3, 0, 1, (3, 4), 13)),  # d
    ("t", 4): ((4, 2, 1), (4,), (1,), LeaderIsr(1, 2, 1, (1, 2), 14)),  # e: ORS 2,1 -> TRS 4,2
    ("t", 5): ((4, 2, 1), (4,), (1,), LeaderIsr(2, 2, 1, (2, 1), 15)),  # f: same move, 2 leads
    ("t", 6): ((1, 2), (), (), LeaderIsr(1, 5, 1, (1, 2), 16)),  # g: STOPPING (TRS 1,2)
}


def _cluster(live=(1, 2, 3, 4)) -> ClusterState:
    s = ClusterState(controller_id=101, epoch=9, brokers={b: Broker(b, "h", 9000 + b) for b in live})
    for tp, (rs, ar, rr, state) in TABLE.items():
        s.assignments[tp] = Assignment(rs, ar, rr)
        s.states[tp] = state
    s.tasks[("t", 4)] = Move(("t", 4), (4, 2), Phase.REPLICATING, original=(2, 1))
    s.tasks[("t", 5)] = Move(("t", 5), (4, 2), Phase.REPLICATING, original=(2, 1))
    s.tasks[("t", 6)] = Move(("t", 6), (1, 2), Phase.STOPPING, original=(3, 1, 2))
    s.topic_partitions["t"], s.topic_versions["t"] = tuple(range(7)), 0
    return s


def _kill(s: ClusterState, gone: int, unclean=frozenset()) -> engine.Step:
    brokers = {b: info for b, info in s.brokers.items() if b != gone}
    return engine.step(s, [BrokersRead(brokers), offline_check(None, unclean)], ControllerConfig())


def _written(st: engine.Step) -> dict:
    """State znode writes: partition -> (expected version, leader, isr, leader epoch, controller epoch)."""
    out = {}
    for op in st.writes:
        if op.path.endswith("/state"):
            p = int(op.path.split("/")[-2])
            doc = json.loads(op.data)
            out.setdefault(("t", p), []).append((op.version, doc["leader"], doc["isr"], doc["leader_epoch"], doc["controller_epoch"]))
    return out


def _lai(st: engine.Step) -> dict:
    """LeaderAndIsr per partition: {broker: (leader, leader epoch, replicas, adding, removing, is_new)}."""
    out: dict = {}
    for c in st.commands:
        if c.api_key != ApiKey.LEADER_AND_ISR:
            continue
        for t in c.body["topic_states"]:
            for ps in t["partition_states"]:
                out.setdefault((t["topic_name"], ps["partition_index"]), {})[c.broker_id] = (
                    ps["leader"], ps["leader_epoch"], ps["replicas"], ps["adding_replicas"], ps["removing_replicas"],
                    ps["is_new"])
    return out


def test_worked_table_broker_1_dies():
    st = _kill(_cluster(), 1)
    assert _written(st) == {
        ("t", 0): [(10, 2, [2, 3], 5, 9)],  # a: clean election, ISR without 1
        ("t", 1): [(11, 2, [2, 3], 8, 9)],  # b: ISR shrunk
        ("t", 2): [(12, NO_LEADER, [1], 4, 9)],  # c: no live ISR member
        ("t", 4): [(14, 2, [2], 3, 9)],  # e: the move's RS order: 4 is not in the ISR, 2 is
    }  # d: not a replica; f: the move's ISR; g: STOPPING
    assert set(st.kinds) == {frozenset({"broker-failure"})}
    lai = _lai(st)
    assert set(lai) == {("t", 0), ("t", 1), ("t", 2), ("t", 4)}
    assert lai[("t", 0)] == {b: (2, 5, [1, 2, 3], [], [], False) for b in (2, 3)}
    assert lai[("t", 2)] == {2: (NO_LEADER, 4, [1, 2], [], [], False)}
    # e: the move's own RS, AR and RR, AR is_new, to its live replicas (engine announce)
    assert lai[("t", 4)] == {2: (2, 3, [4, 2, 1], [4], [1], False), 4: (2, 3, [4, 2, 1], [4], [1], True)}
    metadata = {(t["topic_name"], p["partition_index"]) for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA
                for t in c.body.get("topic_states") or [] for p in t["partition_states"]}
    assert {("t", 0), ("t", 1), ("t", 2), ("t", 4)} <= metadata
    # the moves go on: nothing about them changed but e's state
    assert st.delta.tasks == {} or all(m.phase is Phase.REPLICATING for tp, m in st.delta.tasks.items() if tp[1] in (4, 5))
    assert not any(c.api_key == ApiKey.STOP_REPLICA for c in st.commands)


def test_unclean_election_only_where_the_topic_allows_it():
    st = _kill(_cluster(), 1, unclean=frozenset({"t"}))
    assert _written(st)[("t", 2)] == [(12, 2, [2], 4, 9)]
    assert any("unclean leader election of t-2" in line for line in st.log)


def test_the_dead_broker_comes_back_as_a_follower_and_leads_what_waited_for_it():
    s = _cluster()
    s.apply(_kill(s, 1).delta)
    assert s.states[("t", 2)].leader == NO_LEADER and s.states[("t", 0)].leader == 2
    back = engine.step(s, [BrokersRead(_cluster().brokers), offline_check(None)], ControllerConfig())
    # only c changes (clean: 1 is its ISR); a stays led by 2, with 1 a follower that rejoins the ISR by copying
    assert _written(back) == {("t", 2): [(13, 1, [1], 5, 9)]}


def test_a_broker_that_registers_gets_leader_and_isr_for_its_replicas():
    # Kafka's onBrokerStartup: a restarted broker remembers no role; without LeaderAndIsr it
    # would neither follow (never back in an ISR) nor lead.
    s = _cluster()
    s.apply(_kill(s, 1).delta)
    back = engine.step(s, [BrokersRead(_cluster().brokers), offline_check(None, registered={1})], ControllerConfig())
    lai = _lai(back)
    # a and b: the state held, leader epoch unchanged, to broker 1 only; c: its election (step 6)
    assert lai[("t", 0)] == {1: (2, 5, [1, 2, 3], [], [], False)}
    assert lai[("t", 1)] == {1: (2, 8, [2, 1, 3], [], [], False)}
    assert set(lai[("t", 2)]) == {1, 2} and lai[("t", 2)][1][:2] == (1, 5)
    # d is not on 1; e, f and g are moves: the engine's own requests (RS, AR, RR), one each
    assert ("t", 3) not in lai
    assert lai[("t", 4)] == {1: (2, 3, [4, 2, 1], [4], [1], False)} and lai[("t", 5)][1][3:5] == ([4], [1])
    assert sum(c.api_key == ApiKey.LEADER_AND_ISR and c.broker_id == 1 for c in back.commands) == 1  # one request
    assert _written(back) == {("t", 2): [(13, 1, [1], 5, 9)]}  # nothing else written


def test_a_registering_broker_is_told_of_a_partition_whose_move_waits_for_a_slot():
    # A pending move has sent no request of its own: the partition's state held goes out as
    # for any other (only a started move's requests are the engine's).
    s = _cluster()
    s.apply(_kill(s, 1).delta)
    s.tasks[("t", 1)] = Move(("t", 1), (2, 3, 4))  # PENDING
    s.pending[("t", 1)] = None
    back = engine.step(s, [BrokersRead(_cluster().brokers), offline_check(None, registered={1})],
                       ControllerConfig(max_cluster_moves=2))
    assert _lai(back)[("t", 1)][1] == (2, 8, [2, 1, 3], [], [], False)


def test_a_move_whose_trs_is_in_sync_is_the_engines_to_complete_not_elected_twice():
    s = _cluster()
    s.states[("t", 4)] = LeaderIsr(1, 2, 1, (1, 2, 4), 14)  # 4 caught up; the old leader 1 dies
    st = _kill(s, 1)
    # the engine's step 5 (on the BrokersRead) elects a TRS leader and completes the move; the
    # check that follows finds a live leader and nothing dead in its ISR: one write, "complete"
    assert _written(st)[("t", 4)] == [(14, 4, [2, 4], 3, 9)]
    assert st.completed == [("t", 4)]
    state_kinds = [k for op, k in zip(st.writes, st.kinds) if op.path == "/brokers/topics/t/partitions/4/state"]
    assert state_kinds == [frozenset({"complete"})]


def test_named_partitions_only_and_deferred_until_resumed_states_are_read():
    s = _cluster(live=(2, 3, 4))  # broker 1 died while no controller was active
    st = engine.step(s, offline_check((("t", 0), ("t", 3))), ControllerConfig())
    assert set(_written(st)) == {("t", 0)}
    s.tasks[("t", 6)] = Move(("t", 6), (1, 2), Phase.STOPPING, original=(3, 1, 2), resend=True)
    del s.states[("t", 6)]  # a resumed move whose state is being read: checks wait for it
    st = engine.step(s, offline_check(None), ControllerConfig())
    assert st.writes == [] and len(st.delta.deferred) == 1


def test_topic_being_deleted_and_unknown_partitions_are_left_alone():
    s = _cluster()
    st = engine.step(s, [BrokersRead({b: s.brokers[b] for b in (2, 3, 4)}), offline_check((("t", 0), ("x", 0)))],
                     ControllerConfig())
    assert set(_written(st)) == {("t", 0)}
