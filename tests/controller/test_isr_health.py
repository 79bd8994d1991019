"""ISR-aware execution (issue 24 item 4): controller.core.isr_health's rule (its worked table)
and the engine's step 2a-2c with it: a move whose partition's ISR is at its floor waits, the
others start, it starts once the ISR recovers; the caps drop while a partition is under its min
ISR; under_replicated_last orders the queue; an entry's skip_isr_check and the settings."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import engine, isr_health
from controller.core.config import ConfigError, ControllerConfig, resolve
from controller.core.state import Overlay, apply_changes
from controller.core.events import BrokersRead, RequestsRead, StatesRead, TopicConfigsRead
from controller.core.task import Phase
from tests.controller.helpers import cluster, req, state
from znodes.payloads import decode_requests, encode_requests
from znodes.values import Request

CFG = ControllerConfig()
LIVE = {1: None, 2: None, 3: None, 4: None}


def run(s, events, config=CFG):
    before = copy.deepcopy(s)
    step = engine.step(s, events, config)
    assert s == before, "engine.step mutated its input state"
    s.apply(step.delta)
    return step


@pytest.mark.parametrize(
    "replicas, isr, wait_offline, expected",
    [
        ((1, 2, 3), (1, 2, 3), False, None),
        ((1, 2, 3), (1, 2), False, "ISR [1, 2] at or under min.insync.replicas=2"),
        ((1, 2, 3), (1,), False, "ISR [1] at or under min.insync.replicas=2"),
        ((1, 2, 3, 4), (1, 2, 3), False, None),
        ((1, 5), (1,), False, None),
        ((1, 5), (1,), True, "replica(s) [5] offline"),
        ((1,), (1,), False, None),
    ],
)
def test_worked_table(replicas, isr, wait_offline, expected):
    got = isr_health.waiting_reason(replicas, state(1, isr), LIVE, 2, wait_offline=wait_offline)
    assert got == expected


def test_min_isr_override_and_parse():
    assert isr_health.min_isr_of("t", {"t": 3}, 1) == 3
    assert isr_health.min_isr_of("u", {"t": 3}, 2) == 2
    assert isr_health.parse_min_isr({"min.insync.replicas": "2"}) == 2
    assert isr_health.parse_min_isr({"min.insync.replicas": "0"}) is None
    assert isr_health.parse_min_isr({"min.insync.replicas": "x"}) is None
    assert isr_health.parse_min_isr(None) is None


def _two_moves(isr_a):
    """a-0 on 1,2,3 with ISR ``isr_a`` and b-0 on 1,2,3 in sync, both moving 3 -> 4."""
    s = cluster(topics={"a": {0: (1, 2, 3)}, "b": {0: (1, 2, 3)}})
    s.states[("a", 0)] = state(1, isr_a)
    s.states[("b", 0)] = state(1, (1, 2, 3))
    return s


def test_a_move_at_min_isr_waits_the_others_start_and_it_starts_once_the_isr_recovers():
    s = _two_moves((1,))  # ISR 1 of 3 at the default floor of 1
    step = run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)), req("b", 0, (1, 2, 4)))))
    assert s.tasks[("a", 0)].phase is Phase.PENDING
    assert s.tasks[("a", 0)].waiting == "ISR [1] at or under min.insync.replicas=1"
    assert s.tasks[("b", 0)].phase is Phase.REPLICATING
    assert any("a-0 waits" in line for line in step.log)
    assert not any(op.path.startswith("/admin/reassignments/a") for op in step.writes)
    # An ISR change that leaves it at the floor: still waiting, nothing written for it.
    step = run(s, StatesRead({("a", 0): state(1, (1,), zk_version=1)}))
    assert s.tasks[("a", 0)].phase is Phase.PENDING and not step.writes
    # The ISR recovers (one more in sync): it starts in that step.
    step = run(s, StatesRead({("a", 0): state(1, (1, 2), zk_version=2)}))
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING and s.tasks[("a", 0)].waiting is None
    assert any(op.path == "/admin/reassignments/a/0" for op in step.writes)


def test_skip_isr_check_entry_and_setting_off_start_at_once():
    s = _two_moves((1,))
    run(s, RequestsRead(0, (Request("a", 0, (1, 2, 4), skip_isr_check=True),)))
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING
    s = _two_moves((1,))
    run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)),)), ControllerConfig(isr_aware_moves=False))
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING


def test_a_loading_move_whose_read_state_is_at_the_floor_waits_again():
    s = cluster(topics={"a": {0: (1, 2, 3)}})  # no state held: read first
    step = run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)),)))
    assert step.reads == {("a", 0)} and s.tasks[("a", 0)].phase is Phase.LOADING
    step = run(s, StatesRead({("a", 0): state(1, (1,))}))
    move = s.tasks[("a", 0)]
    assert move.phase is Phase.PENDING and move.waiting and ("a", 0) in s.pending and not step.writes
    run(s, StatesRead({("a", 0): state(1, (1, 2, 3), zk_version=1)}))
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING


def test_topic_override_of_min_isr_is_the_floor():
    s = _two_moves((1, 2))  # 2 of 3 in sync: above the default floor of 1
    run(s, [TopicConfigsRead({"a": 2}), RequestsRead(0, (req("a", 0, (1, 2, 4)),))])
    assert s.min_isr == {"a": 2}
    assert s.tasks[("a", 0)].waiting == "ISR [1, 2] at or under min.insync.replicas=2"
    run(s, TopicConfigsRead({"a": None}))  # the override removed: the default floor again
    assert s.min_isr == {} and s.tasks[("a", 0)].phase is Phase.REPLICATING


def test_offline_replica_waits_only_when_asked():
    s = cluster(brokers=(1, 2, 4), topics={"a": {0: (1, 2, 3)}})
    s.states[("a", 0)] = state(1, (1, 2))
    default = copy.deepcopy(s)
    wait = ControllerConfig(isr_wait_offline_replicas=True)
    run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)),)), wait)
    assert s.tasks[("a", 0)].waiting == "replica(s) [3] offline"
    back = dict(cluster(brokers=(1, 2, 3, 4)).brokers)
    run(s, BrokersRead(back), wait)  # 3 registers again: ISR 1,2 is above the floor of 1
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING
    run(default, RequestsRead(0, (req("a", 0, (1, 2, 4)),)))  # default: 3 being dead does not hold it
    assert default.tasks[("a", 0)].phase is Phase.REPLICATING


def _adjuster_cluster(isr_c):
    s = cluster(topics={"a": {0: (1, 2, 3)}, "b": {0: (1, 2, 3)}, "c": {0: (1, 2, 5)}})
    s.states[("a", 0)] = state(1, (1, 2, 3))
    s.states[("b", 0)] = state(2, (1, 2, 3))
    s.states[("c", 0)] = state(1, isr_c)
    return s


def test_concurrency_drops_while_a_partition_is_under_min_isr():
    entries = (req("a", 0, (1, 2, 4)), req("b", 0, (1, 2, 4)))  # both add a replica to broker 4
    s = _adjuster_cluster((1, 2, 5))
    run(s, [TopicConfigsRead({"c": 2}), RequestsRead(0, entries)])
    assert [s.tasks[tp].phase for tp in (("a", 0), ("b", 0))] == [Phase.REPLICATING] * 2
    s = _adjuster_cluster((1,))  # c is under its min ISR of 2: per-broker caps of 1
    run(s, [TopicConfigsRead({"c": 2}), RequestsRead(0, entries)])
    assert [s.tasks[tp].phase for tp in (("a", 0), ("b", 0))] == [Phase.REPLICATING, Phase.PENDING]
    assert s.tasks[("b", 0)].waiting is None  # waits for a slot, not for its own ISR
    # c's ISR recovers above its floor: the caps come back, b starts.
    run(s, StatesRead({("c", 0): state(1, (1, 2), zk_version=1)}))
    assert s.tasks[("b", 0)].phase is Phase.REPLICATING


def test_under_replicated_last_starts_partitions_with_a_full_isr_first():
    s = cluster(topics={"u": {0: (1, 2, 3, 4)}, "h": {0: (1, 2, 3)}})
    s.states[("u", 0)] = state(1, (1, 2, 3))  # under-replicated but above the floor: may start
    s.states[("h", 0)] = state(1, (1, 2, 3))
    entries = (req("u", 0, (1, 2, 3, 5)), req("h", 0, (1, 2, 6)))
    given = copy.deepcopy(s)
    run(given, RequestsRead(0, entries), ControllerConfig(max_cluster_moves=1))
    assert given.tasks[("u", 0)].phase is Phase.REPLICATING and given.tasks[("h", 0)].phase is Phase.PENDING
    run(s, RequestsRead(0, entries), ControllerConfig(max_cluster_moves=1, replica_movement_strategies="under_replicated_last"))
    assert s.tasks[("h", 0)].phase is Phase.REPLICATING and s.tasks[("u", 0)].phase is Phase.PENDING


def test_skip_isr_check_round_trips_through_the_znode_entry():
    data = b'{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"skip_isr_check":true},' \
           b'{"topic":"b","partition":0,"replicas":[3]}]}'
    good, bad = decode_requests("/admin/reassign_partitions", data)
    assert not bad and [r.skip_isr_check for r in good] == [True, False]
    again, _ = decode_requests("/admin/reassign_partitions", encode_requests(good))
    assert again == good
    assert b"skip_isr_check" not in encode_requests(good[1:])  # only written when set
    _, bad = decode_requests("/admin/reassign_partitions", data.replace(b"true", b'"yes"'))
    assert bad and "skip_isr_check" in bad[0]


def test_settings():
    settings = resolve(flags={"zookeeper": "zk:2181", "id": "1", "listen": "127.0.0.1:0"}).settings
    assert (settings.isr_aware_moves, settings.isr_wait_offline_replicas, settings.isr_throttled_concurrency,
            settings.min_insync_replicas, settings.replica_movement_strategies) == (True, False, 1, 1, "order_given")
    with pytest.raises(ConfigError, match="isr_throttled_concurrency"):
        resolve(flags={"zookeeper": "zk:2181", "id": "1", "listen": "127.0.0.1:0", "isr_throttled_concurrency": "0"})


def test_the_waiting_gauge_counts_moves_held_for_isr():
    from types import SimpleNamespace

    from prometheus_client.parser import text_string_to_metric_families

    from controller.shell.metrics import Metrics
    from controller.shell.role import Role

    s = _two_moves((1,))
    run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)), req("b", 0, (1, 2, 4)))))
    metrics, role = Metrics(), Role(101)
    metrics.watch(role=role, listener=None)

    def gauge():
        return next(sample.value for f in text_string_to_metric_families(metrics.scrape().decode())
                    for sample in f.samples if sample.name == "reassignd_moves_waiting_for_isr")

    assert gauge() == 0  # standing by
    role.active = SimpleNamespace(state=s, config=CFG)  # what the collector reads of the active controller
    assert gauge() == 1
    run(s, StatesRead({("a", 0): state(1, (1, 2, 3), zk_version=1)}))
    assert gauge() == 0


def test_an_entry_rewritten_with_skip_isr_check_starts_its_waiting_move():
    s = _two_moves((1,))
    run(s, RequestsRead(0, (req("a", 0, (1, 2, 4)),)))
    assert s.tasks[("a", 0)].waiting is not None
    run(s, RequestsRead(1, (Request("a", 0, (1, 2, 4), skip_isr_check=True),)))
    assert s.tasks[("a", 0)].phase is Phase.REPLICATING


_ISRS = st.sampled_from([(), (1,), (1, 2), (2, 3, 4)])


@settings(max_examples=200, deadline=None)
@given(base=st.dictionaries(st.integers(0, 30), _ISRS, max_size=25),
       changes=st.dictionaries(st.integers(0, 40), st.one_of(st.none(), _ISRS), max_size=15))
def test_the_count_under_an_overlay_is_the_count_of_the_state_it_makes(base, changes):
    # None in changes: the partition deleted in the step (DELETED)
    base = {("t", p): state(1, isr) for p, isr in base.items()}
    overlay = Overlay(base)
    for p, isr in changes.items():
        if isr is None:
            overlay.pop(("t", p))
        else:
            overlay[("t", p)] = state(1, isr)
    made = dict(base)
    apply_changes(made, overlay.changes)
    want = sum(1 for s in made.values() if not s.isr)
    assert isr_health.under_min_isr(overlay, {}, 1) == want
    assert isr_health.under_min_isr(made, {}, 1) == want
    # the general path (a floor of 2), over the overlay and the dict alike
    assert isr_health.under_min_isr(overlay, {}, 2) == isr_health.under_min_isr(made, {}, 2) == sum(
        1 for s in made.values() if len(s.isr) < 2)
