"""Sizes, throttle configs and Kafka's replica assignment."""

import pytest

from znodes.assignment import AssignmentError, assign_replicas, rack_alternated
from sim.sizes import parse_size
from sim.throttle import ThrottleConfigError, Throttles


@pytest.mark.parametrize(
    "text,value",
    [("123", 123), ("512KB", 512_000), ("10MiB", 10 * 1024**2), ("1.5GB", 1_500_000_000), ("7b", 7), ("2 KiB", 2048)],
)
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "MB", "-1", "10XB", "1e6", "10 MiB extra"])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_throttled_replicas_parse():
    t = Throttles()
    t.update_topic("x", {"leader.replication.throttled.replicas": "0:1, 3:4",
                         "follower.replication.throttled.replicas": "*"})
    assert t.leader_throttled("x", 0, 1) and t.leader_throttled("x", 3, 4)
    assert not t.leader_throttled("x", 1, 0)
    assert t.follower_throttled("x", 9, 9)
    t.update_topic("x", {"leader.replication.throttled.replicas": ""})
    assert not t.leader_throttled("x", 0, 0) and t.snapshot()["topics"] == {}


@pytest.mark.parametrize("value", ["0", "a:1", "0:1,", "0:-1", "**"])
def test_bad_throttled_replicas(value):
    with pytest.raises(ThrottleConfigError):
        Throttles().update_topic("x", {"follower.replication.throttled.replicas": value})


def test_bad_config_changes_nothing():
    t = Throttles()
    t.update_topic("x", {"leader.replication.throttled.replicas": "0:1"})
    t.update_broker("1", {"leader.replication.throttled.rate": "100"})
    with pytest.raises(ThrottleConfigError):
        t.update_topic("x", {"leader.replication.throttled.replicas": "zero"})
    with pytest.raises(ThrottleConfigError):
        t.update_broker("1", {"leader.replication.throttled.rate": "-5"})
    assert t.leader_throttled("x", 0, 1)
    assert t.leader_rate(1) == 100.0


def test_rates_fall_back_to_cluster_default_and_clear():
    t = Throttles()
    t.update_broker("<default>", {"follower.replication.throttled.rate": "50"})
    t.update_broker("2", {"follower.replication.throttled.rate": "70"})
    assert t.follower_rate(1) == 50.0 and t.follower_rate(2) == 70.0
    assert t.leader_rate(1) is None
    t.update_broker("2", None)
    t.update_topic("x", {"follower.replication.throttled.replicas": "*"})
    t.update_topic("x", {})
    assert t.follower_rate(2) == 50.0
    assert not t.follower_throttled("x", 0, 2)


def test_kafka_rack_unaware_example():
    # The layout in Kafka's AdminUtils documentation: 5 brokers, 10 partitions, RF 3.
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start=0, shift=0)
    assert got[0] == [0, 1, 2]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]
    assert got[9] == [4, 1, 2]


def test_assignment_never_doubles_a_broker_and_spreads_leaders():
    got = assign_replicas([1, 2, 3, 4, 5, 6], 12, 3, start=4, shift=2)
    for replicas in got.values():
        assert len(set(replicas)) == 3
    leaders = [r[0] for r in got.values()]
    assert sorted(leaders) == sorted([1, 2, 3, 4, 5, 6] * 2)


def test_rack_aware_puts_replicas_in_distinct_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assert rack_alternated(racks) == [1, 3, 5, 2, 4, 6]
    got = assign_replicas(list(racks), 12, 3, start=1, shift=3, racks=racks)
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == 3


def test_assignment_errors():
    with pytest.raises(AssignmentError):
        assign_replicas([1, 2], 3, 3, start=0, shift=0)
    with pytest.raises(AssignmentError):
        assign_replicas([1, 2], 0, 1, start=0, shift=0)
    with pytest.raises(AssignmentError):
        assign_replicas([1, 2], 1, 1, start=0, shift=0, racks={1: "a"})
