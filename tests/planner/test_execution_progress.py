"""An execution's bytes left to copy and its ETA (what /state shows and the dashboard draws):
the model's measure from the DescribeLogDirs sizes, and the execution's average rate. Pure."""

from __future__ import annotations

from planner_service.execution import Execution
from planner_service.model import ClusterModel
from znodes.values import Assignment, LeaderIsr

MIB = 1 << 20


def _model() -> ClusterModel:
    m = ClusterModel()
    m.set_topic("t", {0: Assignment((1, 2)), 1: Assignment((1, 2)), 2: Assignment((3, 1))}, now=0.0)
    for p, leader in ((0, 1), (1, 1), (2, 3)):
        m.set_state("t", p, LeaderIsr(leader, 0, 1, (1, 2), 0))
    m.set_sizes({1: {("t", 0): 8 * MIB, ("t", 1): 4 * MIB, ("t", 2): 2 * MIB},
                 2: {("t", 0): 8 * MIB, ("t", 1): 4 * MIB}, 3: {("t", 2): 2 * MIB}})
    return m


def test_bytes_to_copy_counts_what_each_added_replica_lacks():
    m = _model()
    assert m.bytes_to_copy({("t", 0): [1, 2]}) == 0  # already there
    assert m.bytes_to_copy({("t", 0): [3, 2], ("t", 1): [4, 5]}) == 8 * MIB + 2 * 4 * MIB
    # A copy under way (the partition is moving, broker 4 holds 1 MiB of it): what is left of it.
    m.set_topic("t", {0: Assignment((4, 1, 2), adding=(4,), removing=(1, 2)), 1: Assignment((1, 2)),
                      2: Assignment((3, 1))}, now=1.0)
    m.set_sizes({1: {("t", 0): 8 * MIB, ("t", 1): 4 * MIB, ("t", 2): 2 * MIB},
                 2: {("t", 0): 8 * MIB, ("t", 1): 4 * MIB}, 3: {("t", 2): 2 * MIB}, 4: {("t", 0): MIB}})
    assert m.bytes_to_copy({("t", 0): [4]}) == 7 * MIB
    assert m.bytes_to_copy({("t", 9): [1]}) is None  # unknown partition: no guess
    m.set_sizes({2: {("t", 0): 8 * MIB}})  # the leader's size unknown
    assert m.bytes_to_copy({("t", 0): [4]}) is None


def _execution() -> Execution:
    waves = [{"wave": 0, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 2]}]},
             {"wave": 1, "partitions": [{"topic": "t", "partition": 1, "replicas": [4, 5]}]}]
    return Execution(1, "rebalance", "test", "api", waves, throttle=None)


def test_remaining_targets_are_the_running_wave_and_the_ones_after_it():
    ex = _execution()
    assert ex.remaining_targets() == {("t", 0): [3, 2], ("t", 1): [4, 5]}
    ex.waves_done, ex.current = 1, {("t", 1): [4, 5]}
    assert ex.remaining_targets() == {("t", 1): [4, 5]}
    ex.state = "done"
    assert ex.remaining_targets() == {}


def test_eta_is_the_bytes_left_at_the_average_rate_since_the_first_measure():
    ex = _execution()
    assert ex.note_copy(1_000, None) is None  # sizes unknown
    assert ex.note_copy(1_000, 10 * MIB) is None  # nothing moved yet: no rate
    assert ex.note_copy(3_000, 8 * MIB) == 8.0  # 2 MiB in 2 s: 8 MiB in 8 s
    assert ex.note_copy(5_000, 2 * MIB) == 1.0  # 8 MiB in 4 s
    assert ex.note_copy(6_000, 0) == 0.0
    assert ex.note_copy(7_000, 6 * MIB) is None  # more work appeared (sizes grew): the rate starts again
