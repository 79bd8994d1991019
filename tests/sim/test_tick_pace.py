"""What a simulated tick and a LeaderAndIsr cost the sim's one process, kept from growing with
every replica it holds when only a few are doing anything.

bench/controller.py's sockets run (12 brokers, 2,000 partitions moved) spent most of the sim's
CPU in two walks over every replica: each step re-shared the copy pools among all followers,
caught up or not, and each replica a LeaderAndIsr created counted its broker's logs per
directory. The event loop that serves the brokers' requests and ZooKeeper answers waited for
them, so a new follower's first copy and its leader's ISR write came ticks late.
"""

import pytest

import sim.replica
from sim.core import BrokerCore
from sim.replica import CopySettings, Replica, ReplicationModel
from tests.sim.bodies import leader_and_isr, partition_state

MB = 1_000_000


def test_a_step_shares_the_pools_only_among_the_followers_that_lack_bytes(monkeypatch):
    """A caught-up follower stays caught up (and its leader sees it so) without joining the
    max-min allocation: with thousands of them, that bookkeeping was most of a tick."""
    shared = []
    allocate = sim.replica.allocate
    monkeypatch.setattr(sim.replica, "allocate", lambda demands, pools: shared.append(dict(demands)) or
                        allocate(demands, pools))
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    for p, size in ((0, MB / 10), (1, 4 * MB)):
        leader = model.add(Replica("t", p, 1, size=size, leo=size / 1000))
        leader.become_leader(leader_epoch=1, isr=(1,), replicas=(1, 2), zk_version=0, now=0.0)
        model.add(Replica("t", p, 2)).become_follower(leader=1, leader_epoch=1, replicas=(1, 2))
    model.advance(1.0)  # t-0 copied long ago (0.1 MB of 1 MB/s shared with t-1), t-1 not
    copying = model.get("t", 1, 2)
    before = copying.size
    shared.clear()
    model.advance(1.1)
    assert [list(d) for d in shared] == [[("t", 1, 2)]]
    t0 = model.get("t", 0, 1)
    assert t0.caught_up[2] == 1.1 and model.get("t", 0, 2).size == t0.size
    assert copying.size - before == pytest.approx(MB / 10)  # the whole bandwidth for the one copy


def test_a_replica_created_on_a_one_directory_broker_does_not_count_the_brokers_logs(monkeypatch):
    """Kafka's nextLogDirs counts logs per directory to pick the emptiest; with one directory
    online there is nothing to pick, and the count walked every replica of the broker for
    each one a LeaderAndIsr created."""
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    core = BrokerCore(1, model, clock=lambda: model.now)
    assert core.handle(4, 4, leader_and_isr("t", [partition_state(p, 1, [1, 2]) for p in range(3)]))["error_code"] == 0
    walked = []
    for name in ("hosted", "hosted_by"):  # every walk over a broker's replicas
        original = getattr(model, name, None)
        if original is not None:
            monkeypatch.setattr(model, name, lambda broker, _o=original, _n=name: walked.append(_n) or _o(broker))
    body = leader_and_isr("u", [partition_state(p, 2, [2, 1]) for p in range(3)])
    assert [e["error_code"] for e in core.handle(4, 4, body)["partition_errors"]] == [0, 0, 0]
    assert walked == []
    assert {r.log_dir for r in core.replicas()} == {core.log_dir}
