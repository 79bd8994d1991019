"""The copy model with a manual clock: rates, throttles, sharing, lag, truncation."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.fairshare import allocate
from sim.replica import CopySettings, Replica, ReplicationModel, Role
from sim.throttle import Throttles

MB = 1_000_000


def _partition(model, topic, partition, leader, followers, size, leo=None, in_isr=()):
    lead = model.add(Replica(topic, partition, leader, size=size, leo=size / 1000 if leo is None else leo))
    lead.become_leader(
        leader_epoch=1, isr=(leader, *in_isr), replicas=(leader, *followers), zk_version=0, now=model.now
    )
    out = []
    for f in followers:
        replica = model.add(Replica(topic, partition, f))
        if f in in_isr:
            replica.size, replica.leo = lead.size, lead.leo
        replica.become_follower(leader=leader, leader_epoch=1, replicas=(leader, *followers))
        out.append(replica)
    return lead, out


def _seconds_until_caught_up(model, follower, leader, step=0.5, limit=1000.0):
    while model.now < limit:
        model.advance(model.now + step)
        if follower.size >= leader.size:
            return model.now
    raise AssertionError("never caught up")


def test_throttle_caps_the_copy_rate_10mb_at_1mbs_takes_at_least_10s():
    throttles = Throttles()
    throttles.update_topic("t", {"follower.replication.throttled.replicas": "0:2"})
    throttles.update_broker("2", {"follower.replication.throttled.rate": str(MB)})
    model = ReplicationModel(CopySettings(bandwidth=100 * MB, produce_bytes=0, produce_messages=0), throttles)
    leader, (follower,) = _partition(model, "t", 0, 1, [2], size=10 * MB)

    model.advance(5.0)
    assert follower.size_bytes == 5 * MB
    model.advance(9.9)
    assert follower.size < leader.size and model.lag(follower) > 0
    model.advance(10.0)
    assert follower.size == leader.size
    assert follower.log_end_offset == leader.log_end_offset
    assert model.lag(follower) == 0


def test_without_throttle_bandwidth_is_the_cap():
    model = ReplicationModel(CopySettings(bandwidth=5 * MB, produce_bytes=0, produce_messages=0))
    leader, (follower,) = _partition(model, "t", 0, 1, [2], size=10 * MB)
    assert _seconds_until_caught_up(model, follower, leader, step=0.25) == 2.0


def test_leader_rate_is_shared_by_the_throttled_replicas_it_serves():
    throttles = Throttles()
    throttles.update_topic("t", {"leader.replication.throttled.replicas": "*"})
    throttles.update_broker("1", {"leader.replication.throttled.rate": str(2 * MB)})
    model = ReplicationModel(CopySettings(bandwidth=None, produce_bytes=0, produce_messages=0), throttles)
    _, (a,) = _partition(model, "t", 0, 1, [2], size=10 * MB)
    _, (b,) = _partition(model, "t", 1, 1, [3], size=10 * MB)
    model.advance(2.0)
    # 2 MB/s out of broker 1 for 2 s, split evenly between the two copies.
    assert a.size_bytes == pytest.approx(2 * MB, abs=2)
    assert b.size_bytes == pytest.approx(2 * MB, abs=2)


def test_throttle_listing_another_broker_does_not_apply():
    throttles = Throttles()
    throttles.update_topic("t", {"follower.replication.throttled.replicas": "0:9"})
    throttles.update_broker("<default>", {"follower.replication.throttled.rate": "1000"})
    model = ReplicationModel(CopySettings(bandwidth=10 * MB, produce_bytes=0, produce_messages=0), throttles)
    _, (f,) = _partition(model, "t", 0, 1, [2], size=10 * MB)
    model.advance(1.0)
    assert f.size_bytes == 10 * MB


def test_in_sync_followers_are_not_throttled():
    throttles = Throttles()
    throttles.update_topic("t", {"follower.replication.throttled.replicas": "*"})
    throttles.update_broker("2", {"follower.replication.throttled.rate": "10"})
    model = ReplicationModel(CopySettings(bandwidth=None, produce_bytes=1000, produce_messages=1), throttles)
    leader, (f,) = _partition(model, "t", 0, 1, [2], size=MB, in_isr=(2,))
    model.advance(3.0)
    assert f.size == leader.size and f.leo == leader.leo
    assert leader.caught_up[2] == pytest.approx(3.0)


def test_producers_append_to_leaders_only_and_lag_is_leader_leo_minus_own():
    model = ReplicationModel(CopySettings(bandwidth=0.0, produce_bytes=2000, produce_messages=4))
    leader, (f,) = _partition(model, "t", 0, 1, [2], size=0, leo=0)
    model.advance(10.0)
    assert leader.size_bytes == 20000 and leader.log_end_offset == 40
    assert f.size_bytes == 0
    assert model.lag(f) == 40 and model.lag(leader) == 0


def test_offline_broker_neither_copies_nor_serves():
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    leader, (f,) = _partition(model, "t", 0, 1, [2], size=4 * MB)
    model.offline.add(2)
    model.advance(2.0)
    assert f.size == 0
    model.offline = {1}
    model.advance(4.0)
    assert f.size == 0
    model.offline = set()
    model.advance(5.0)
    assert f.size_bytes == MB


def test_follower_ahead_of_a_new_leader_truncates():
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    leader, (f,) = _partition(model, "t", 0, 1, [2], size=MB, leo=100)
    f.size, f.leo = 3 * MB, 300
    model.advance(0.1)
    assert (f.size, f.leo) == (leader.size, leader.leo)


def test_stopped_role_does_not_copy():
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    _, (f,) = _partition(model, "t", 0, 1, [2], size=MB)
    f.go_offline()
    assert f.role is Role.NONE
    model.advance(3.0)
    assert f.size == 0


@given(
    demands=st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=8),
    caps=st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=4),
    data=st.data(),
)
def test_fair_share_respects_demands_and_capacities(demands, caps, data):
    flows = {f"f{i}": d for i, d in enumerate(demands)}
    pools = {}
    for j, cap in enumerate(caps):
        members = data.draw(st.lists(st.sampled_from(sorted(flows)), unique=True))
        pools[f"p{j}"] = (cap, members)
    got = allocate(flows, pools)
    for flow, amount in got.items():
        assert -1e-6 <= amount <= flows[flow] + 1e-6
    for cap, members in pools.values():
        assert sum(got[f] for f in members) <= cap + 1e-6 * max(1, len(members))
    # Max-min: a flow short of its demand sits in a pool that is full.
    for flow, amount in got.items():
        if amount < flows[flow] - 1e-3:
            full = [cap - sum(got[f] for f in members) <= 1e-3 for cap, members in pools.values() if flow in members]
            assert any(full)
