"""BrokerCore without sockets or ZooKeeper: requests, epochs, ISR duty, notification batching."""

import json

import pytest

from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.core import BrokerConfig, BrokerCore, UnsupportedRequest
from sim.effects import IsrChangeNotification, IsrWrite
from sim.replica import CopySettings, ReplicationModel, Role
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica, update_metadata

MB = 1_000_000
CONFIG = BrokerConfig(replica_lag_time_max=2.0, isr_notification_quiet=0.5, isr_notification_max_delay=5.0)


@pytest.fixture
def sim():
    clock = ManualClock()
    model = ReplicationModel(CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    cores = {b: BrokerCore(b, model, clock, CONFIG) for b in (1, 2, 3)}

    class Sim:
        pass

    s = Sim()
    s.clock, s.model, s.cores = clock, model, cores

    def tick(seconds):
        clock.advance(seconds)
        model.advance(clock())
        return {b: c.advance(clock()) for b, c in cores.items()}

    s.tick = tick
    return s


def _send_all(sim, body, brokers=(1, 2, 3)):
    return {b: sim.cores[b].handle(4, 4, body) for b in brokers}


def test_leader_and_isr_makes_leader_and_followers(sim):
    sim.cores[1].adopt("t", 0, size=2 * MB, leo=2000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1,), replicas=(1,), zk_version=0)
    body = leader_and_isr("t", [partition_state(0, 1, [1, 2, 3], isr=[1], leader_epoch=1, zk_version=1)])
    for response in _send_all(sim, body).values():
        assert response["error_code"] == 0
        assert response["partition_errors"] == [{"topic_name": "t", "partition_index": 0, "error_code": 0}]
    assert sim.model.get("t", 0, 1).role is Role.LEADER
    follower = sim.model.get("t", 0, 2)
    assert follower.role is Role.FOLLOWER and follower.leader == 1 and follower.size == 0


def test_follower_catches_up_then_leader_expands_isr_once_and_notifies(sim):
    sim.cores[1].adopt("t", 0, size=2 * MB, leo=2000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1,), replicas=(1,), zk_version=0)
    _send_all(sim, leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1, zk_version=1)]), (1, 2))
    assert sim.tick(1.0)[1] == []  # half copied: nothing to do yet
    effects = sim.tick(1.0)[1]
    assert effects == [IsrWrite("t", 0, leader=1, leader_epoch=1, controller_epoch=1, isr=(1, 2), zk_version=1)]
    assert sim.tick(0.1)[1] == []  # one write in flight per partition
    sim.cores[1].isr_write_done(effects[0], 2, sim.clock())
    leader = sim.model.get("t", 0, 1)
    assert leader.isr == (1, 2) and leader.zk_version == 2
    assert sim.tick(0.2)[1] == []  # batching: quiet period not over
    note = IsrChangeNotification(((effects[0], 2),))
    assert sim.tick(0.4)[1] == [note]
    # the notification carries the state written and its zkVersion: no read needed
    assert json.loads(note.payload()) == {"version": 1, "partitions": [{"topic": "t", "partition": 0, "state": {
        "leader": 1, "leader_epoch": 1, "controller_epoch": 1, "isr": [1, 2], "zk_version": 2}}]}
    assert sim.tick(1.0)[1] == []


def test_leader_shrinks_isr_when_a_follower_stops_fetching(sim):
    sim.cores[1].adopt("t", 0, size=MB, leo=1000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1, 2, 3), replicas=(1, 2, 3), zk_version=0)
    for b in (2, 3):
        sim.cores[b].adopt("t", 0, size=MB, leo=1000, leader=1, leader_epoch=0, controller_epoch=1,
                           isr=(1, 2, 3), replicas=(1, 2, 3), zk_version=0)
    sim.model.offline.add(3)
    assert sim.tick(1.9)[1] == []
    writes = sim.tick(0.2)[1]
    assert [w.isr for w in writes] == [(1, 2)]
    sim.cores[1].isr_write_done(writes[0], 1, sim.clock())
    assert sim.model.get("t", 0, 1).isr == (1, 2)


def test_isr_write_conflict_retries_only_while_still_leader_of_that_epoch(sim):
    core = sim.cores[1]
    core.adopt("t", 0, size=0, leo=0, leader=1, leader_epoch=3, controller_epoch=1,
               isr=(1,), replicas=(1, 2), zk_version=5)
    sim.cores[2].adopt("t", 0, size=0, leo=0, leader=1, leader_epoch=3, controller_epoch=1,
                       isr=(1,), replicas=(1, 2), zk_version=5)
    (write,) = sim.tick(0.1)[1]
    retry = core.isr_write_conflict(write, {"leader": 1, "leader_epoch": 3, "controller_epoch": 4, "isr": [1]}, 6)
    assert retry == IsrWrite("t", 0, leader=1, leader_epoch=3, controller_epoch=4, isr=(1, 2), zk_version=6)
    assert core.isr_write_conflict(retry, {"leader": 2, "leader_epoch": 4, "isr": [2]}, 7) is None
    # Given up: the next advance may try again from the state it holds.
    assert sim.tick(0.1)[1][0].isr == (1, 2)


def test_stale_controller_epoch_is_rejected_and_changes_nothing(sim):
    core = sim.cores[2]
    core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2], leader_epoch=1)], controller_epoch=5))
    before = vars(sim.model.get("t", 0, 2)).copy()
    response = core.handle(
        4, 4, leader_and_isr("t", [partition_state(0, 2, [1, 2], leader_epoch=9)], controller_epoch=4)
    )
    assert response["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert response["partition_errors"][0]["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert vars(sim.model.get("t", 0, 2)) == before
    assert core.handle(6, 6, update_metadata({}, {}, controller_epoch=3))["error_code"] == 11
    assert core.handle(5, 3, stop_replica("t", [0], controller_epoch=3))["error_code"] == 11
    assert sim.model.get("t", 0, 2) is not None


def test_older_leader_epoch_is_ignored_newer_applies(sim):
    core = sim.cores[2]
    core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2], leader_epoch=3, zk_version=3)]))
    stale = core.handle(4, 4, leader_and_isr("t", [partition_state(0, 2, [1, 2], leader_epoch=2)]))
    assert stale["partition_errors"][0]["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert sim.model.get("t", 0, 2).leader == 1
    newer = core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2, 3], leader_epoch=4, zk_version=4)]))
    assert newer["partition_errors"][0]["error_code"] == 0
    replica = sim.model.get("t", 0, 2)
    assert replica.replicas == (1, 2, 3) and replica.leader_epoch == 4 and replica.zk_version == 4


def test_not_in_replicas_is_unknown_partition(sim):
    response = sim.cores[3].handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2])]))
    assert response["partition_errors"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert sim.model.get("t", 0, 3) is None


def test_stale_broker_epoch(sim):
    core = sim.cores[2]
    core.broker_epoch = 100
    response = core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2])], broker_epoch=99))
    assert response["error_code"] == ErrorCode.STALE_BROKER_EPOCH
    assert core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2])], broker_epoch=100))["error_code"] == 0


def test_stop_replica_delete_and_fenced_epoch(sim):
    core = sim.cores[2]
    core.handle(4, 4, leader_and_isr("t", [partition_state(p, 1, [1, 2], leader_epoch=4) for p in (0, 1, 2)]))
    response = core.handle(5, 3, stop_replica("t", [0], leader_epoch=3))
    assert response["partition_errors"][0]["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
    assert sim.model.get("t", 0, 2) is not None
    response = core.handle(5, 3, stop_replica("t", [0, 1], leader_epoch=-2))
    assert [e["error_code"] for e in response["partition_errors"]] == [0, 0]
    assert sim.model.get("t", 0, 2) is None and sim.model.get("t", 1, 2) is None
    core.handle(5, 3, stop_replica("t", [2], delete=False, leader_epoch=4))
    assert sim.model.get("t", 2, 2).role is Role.NONE
    # v1 layout
    body = {"controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "delete_partitions": True,
            "topics": [{"name": "t", "partition_indexes": [2]}]}
    assert core.handle(5, 1, body)["partition_errors"] == [{"topic_name": "t", "partition_index": 2, "error_code": 0}]
    assert sim.model.get("t", 2, 2) is None


def test_stop_replica_without_delete_stops_following_until_a_newer_leader_and_isr(sim):
    """A controlled shutdown's StopReplica(delete_partition=false): the follower stops copying
    and keeps its log and epoch; the leader does not take it back into the ISR; a newer
    LeaderAndIsr makes it follow (and catch up, and rejoin) again."""
    sim.cores[1].adopt("t", 0, size=4 * MB, leo=4000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1,), replicas=(1, 2), zk_version=0)
    _send_all(sim, leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1, zk_version=1)]), (1, 2))
    sim.tick(1.0)
    follower = sim.model.get("t", 0, 2)
    assert follower.role is Role.FOLLOWER and follower.size == MB
    response = sim.cores[2].handle(5, 3, stop_replica("t", [0], delete=False, leader_epoch=1))
    assert response["partition_errors"][0]["error_code"] == ErrorCode.NONE
    assert follower.role is Role.NONE and follower.leader_epoch == 1
    assert sim.tick(5.0) == {1: [], 2: [], 3: []}  # nothing copied, nobody joins the ISR
    assert follower.size == MB and sim.model.get("t", 0, 2) is follower
    _send_all(sim, leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=2, zk_version=2)]), (1, 2))
    assert follower.role is Role.FOLLOWER and follower.leader_epoch == 2
    sim.tick(3.0)
    assert follower.size == pytest.approx(4 * MB)
    assert sim.tick(0.1)[1][0].isr == (1, 2)


def test_a_broker_shutting_down_is_not_taken_into_an_isr(sim):
    """KIP-841: a caught-up follower whose broker is in a controlled shutdown stays out of the
    ISR until its broker is no longer shutting down."""
    sim.cores[1].adopt("t", 0, size=MB, leo=1000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1,), replicas=(1, 2), zk_version=0)
    _send_all(sim, leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1, zk_version=1)]), (1, 2))
    sim.model.shutting_down.add(2)
    assert sim.tick(2.0)[1] == [] and sim.tick(1.0)[1] == []
    assert sim.model.get("t", 0, 2).size == MB  # it copies meanwhile
    sim.model.shutting_down.discard(2)
    assert sim.tick(0.1)[1][0].isr == (1, 2)


def test_describe_log_dirs_reports_sizes_and_lag(sim):
    sim.cores[1].adopt("t", 0, size=4 * MB, leo=4000, leader=1, leader_epoch=0, controller_epoch=1,
                       isr=(1,), replicas=(1, 2), zk_version=0)
    sim.cores[2].handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=0)]))
    sim.tick(1.0)
    (result,) = sim.cores[2].handle(35, 4, {"topics": None})["results"]
    assert result["log_dir"] == "/var/sim/kafka-logs-2"
    assert result["topics"] == [
        {"name": "t", "partitions": [{"partition_index": 0, "partition_size": MB, "offset_lag": 3000,
                                      "is_future_key": False}]}
    ]
    assert result["usable_bytes"] == result["total_bytes"] - MB
    leader = sim.cores[1].handle(35, 1, {"topics": [{"topic": "t", "partitions": [0, 7]}]})["results"][0]
    assert leader["topics"][0]["partitions"][0]["offset_lag"] == 0
    none = sim.cores[1].handle(35, 1, {"topics": [{"topic": "other", "partitions": [0]}]})["results"][0]
    assert none["topics"] == []


def test_metadata_from_update_metadata(sim):
    core = sim.cores[1]
    assert core.handle(3, 9, {"topics": None})["brokers"] == []
    body = update_metadata({1: (9001, "r0"), 2: (9002, None)}, {"t": {0: [1, 2], 1: [2, 3]}}, controller_id=7)
    assert core.handle(6, 6, body) == {"error_code": 0}
    meta = core.handle(3, 9, {"topics": None})
    assert meta["controller_id"] == 7
    assert [(b["node_id"], b["port"], b["rack"]) for b in meta["brokers"]] == [(1, 9001, "r0"), (2, 9002, None)]
    (topic,) = meta["topics"]
    assert [p["leader_id"] for p in topic["partitions"]] == [1, 2]
    assert [p["error_code"] for p in topic["partitions"]] == [0, 0]
    # v0 names and shields the unavailable replica 3.
    v0 = core.handle(3, 0, {"topics": [{"name": "t"}]})["topics"][0]["partitions"][1]
    assert v0["error_code"] == ErrorCode.REPLICA_NOT_AVAILABLE and v0["replica_nodes"] == [2]
    missing = core.handle(3, 9, {"topics": [{"name": "nope"}, {"name": "bad/name"}]})["topics"]
    assert [t["error_code"] for t in missing] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION]


def test_api_versions_and_unsupported(sim):
    response = sim.cores[1].handle(18, 3, {"client_software_name": "kcat", "client_software_version": "1.7.1"})
    assert response["error_code"] == 0
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert keys[4] == (0, 7) and keys[35] == (0, 5)
    bad = sim.cores[1].handle(18, 3, {"client_software_name": "-bad-", "client_software_version": "1"})
    assert bad["error_code"] == ErrorCode.INVALID_REQUEST
    with pytest.raises(UnsupportedRequest):
        sim.cores[1].handle(4, 8, {})  # past Kafka 3.9's LeaderAndIsr v7
    with pytest.raises(UnsupportedRequest):
        sim.cores[1].handle(1, 0, {})


def test_restart_forgets_roles_keeps_logs(sim):
    core = sim.cores[1]
    core.adopt("t", 0, size=MB, leo=1000, leader=1, leader_epoch=4, controller_epoch=3,
               isr=(1,), replicas=(1,), zk_version=2)
    core.handle(6, 6, update_metadata({}, {}, controller_epoch=3))
    core.restart()
    replica = sim.model.get("t", 0, 1)
    assert replica.role is Role.NONE and replica.leader_epoch == -1 and replica.size == MB
    assert core.controller_epoch == 0
    assert core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=0)]))["error_code"] == 0
    assert replica.role is Role.LEADER


def test_bad_partition_states_are_refused_one_by_one(sim):
    core = sim.cores[2]
    body = leader_and_isr("t", [partition_state(0, 1, [1, 2]), partition_state(-1, 1, [1, 2])])
    body["topic_states"].append({"topic_name": "bad/topic", "partition_states": [partition_state(0, 1, [1, 2])]})
    errors = [e["error_code"] for e in core.handle(4, 4, body)["partition_errors"]]
    assert errors == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert [r.key for r in core.replicas()] == [("t", 0)]


def test_same_leader_epoch_is_refused_per_partition_and_not_applied(sim):
    """Kafka 2.4+ (ZooKeeper mode): a partition state whose leader epoch is not newer than the
    one held is answered STALE_CONTROLLER_EPOCH and not applied; the other partitions of the
    request are."""
    core = sim.cores[2]
    core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2], leader_epoch=3, zk_version=3)]))
    response = core.handle(4, 4, leader_and_isr("t", [
        partition_state(0, 2, [1, 2, 3], leader_epoch=3, zk_version=4),
        partition_state(1, 1, [1, 2], leader_epoch=0),
    ]))
    assert response["error_code"] == ErrorCode.NONE
    assert [e["error_code"] for e in response["partition_errors"]] == [ErrorCode.STALE_CONTROLLER_EPOCH, ErrorCode.NONE]
    replica = sim.model.get("t", 0, 2)
    assert (replica.leader, replica.replicas, replica.leader_epoch, replica.zk_version) == (1, (1, 2), 3, 3)
    assert sim.model.get("t", 1, 2).role is Role.FOLLOWER


def test_resend_at_a_held_epoch_reaches_only_replicas_without_local_state(sim):
    """A controller resending a state already written (failover, a broker back): brokers
    holding its epoch refuse it harmlessly; a new replica, or one whose broker restarted
    (no local state), takes it whatever its epoch."""
    body = leader_and_isr("t", [partition_state(0, 1, [1, 2], leader_epoch=5, zk_version=5)])
    _send_all(sim, body, (1, 2))
    resend = leader_and_isr("t", [partition_state(0, 1, [1, 2, 3], isr=[1, 2], leader_epoch=5, zk_version=5)])
    codes = {b: r["partition_errors"][0]["error_code"] for b, r in _send_all(sim, resend).items()}
    assert codes == {1: ErrorCode.STALE_CONTROLLER_EPOCH, 2: ErrorCode.STALE_CONTROLLER_EPOCH, 3: ErrorCode.NONE}
    assert sim.model.get("t", 0, 1).replicas == (1, 2)  # the leader kept what it held
    assert sim.model.get("t", 0, 3).role is Role.FOLLOWER
    sim.cores[2].restart()
    assert sim.cores[2].handle(4, 4, resend)["partition_errors"][0]["error_code"] == ErrorCode.NONE
    assert sim.model.get("t", 0, 2).replicas == (1, 2, 3)
