"""Log directories of a simulated broker (KIP-113): placement, DescribeLogDirs per directory,
AlterReplicaLogDirs's future log copying at the throttled rate then taking over, Kafka's error
codes, and an offline directory."""

import pytest

import protocol
from protocol import ApiKey
from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.core import BrokerConfig, BrokerCore
from sim.logdirs import LogDirs, LogDirsError, check_dir_names
from sim.replica import CopySettings, ReplicationModel, Role
from sim.throttle import ALTER_LOG_DIRS_RATE, Throttles
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica

MB = 1_000_000
D1, D2, D3 = "/data/d1", "/data/d2", "/data/d3"


@pytest.fixture
def sim():
    clock = ManualClock()
    throttles = Throttles()
    model = ReplicationModel(CopySettings(bandwidth=10 * MB, produce_bytes=0, produce_messages=0,
                                          disk_copy_rate=4 * MB), throttles)
    config = BrokerConfig(log_dirs=(D1, D2), disk_bytes=100 * MB)
    cores = {b: BrokerCore(b, model, clock, config) for b in (1, 2)}

    class Sim:
        pass

    s = Sim()
    s.clock, s.model, s.cores, s.throttles = clock, model, cores, throttles

    def tick(seconds):
        clock.advance(seconds)
        model.advance(clock())
        for c in cores.values():
            c.advance(clock())

    s.tick = tick
    return s


def adopt(core, topic, partition, size=8 * MB):
    return core.adopt(topic, partition, size=size, leo=size // 1000, leader=core.broker_id, leader_epoch=0,
                      controller_epoch=1, isr=(core.broker_id,), replicas=(core.broker_id,), zk_version=0)


def move(core, path, topic, *partitions, version=2):
    body = {"dirs": [{"path": path, "topics": [{"name": topic, "partitions": list(partitions)}]}]}
    answer = core.handle(ApiKey.ALTER_REPLICA_LOG_DIRS, version, body)
    # exactly the spec's layout
    protocol.encode_body(ApiKey.ALTER_REPLICA_LOG_DIRS, version, "response", answer)
    return {(r["topic_name"], p["partition_index"]): ErrorCode(p["error_code"])
            for r in answer["results"] for p in r["partitions"]}


def dirs(core, version=4):
    answer = core.handle(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": None})
    protocol.encode_body(ApiKey.DESCRIBE_LOG_DIRS, version, "response", answer)
    return {r["log_dir"]: r for r in answer["results"]}


def logs_in(result):
    return {(t["name"], p["partition_index"], p["is_future_key"]): (p["partition_size"], p["offset_lag"])
            for t in result["topics"] for p in t["partitions"]}


def test_new_replicas_go_to_the_directory_with_fewest_logs_first_configured_on_a_tie(sim):
    core = sim.cores[1]
    placed = [adopt(core, "t", p).log_dir for p in range(3)]
    assert placed == [D1, D2, D1]
    # a LeaderAndIsr-created replica is placed the same way
    core.handle(4, 4, leader_and_isr("u", [partition_state(0, 2, [2, 1], leader_epoch=1)]))
    assert sim.model.get("u", 0, 1).log_dir == D2


def test_describe_log_dirs_lists_each_directory_with_its_replicas_and_bytes(sim):
    core = sim.cores[1]
    adopt(core, "t", 0, 8 * MB)
    adopt(core, "t", 1, 3 * MB)
    answer = dirs(core)
    assert list(answer) == [D1, D2]
    assert logs_in(answer[D1]) == {("t", 0, False): (8 * MB, 0)}
    assert logs_in(answer[D2]) == {("t", 1, False): (3 * MB, 0)}
    assert answer[D1]["total_bytes"] == 100 * MB and answer[D1]["usable_bytes"] == 92 * MB
    assert answer[D2]["usable_bytes"] == 97 * MB
    assert core.handle(32, 4, {"resources": [{"resource_type": 4, "resource_name": "1",
                                               "configuration_keys": ["log.dirs"]}]})["results"][0]["configs"][0][
        "value"] == f"{D1},{D2}"


def test_one_directory_by_default_named_as_before():
    core = BrokerCore(3, ReplicationModel(), clock=lambda: 0.0)
    assert core.log_dirs.names == ("/var/sim/kafka-logs-3",)


def test_future_log_copies_at_the_alter_log_dirs_rate_then_takes_over(sim):
    core = sim.cores[1]
    replica = adopt(core, "t", 0, 8 * MB)
    assert replica.log_dir == D1
    sim.throttles.update_broker("1", {ALTER_LOG_DIRS_RATE: str(MB)})
    assert move(core, D2, "t", 0) == {("t", 0): ErrorCode.NONE}
    sim.tick(2.0)
    answer = dirs(core)
    assert logs_in(answer[D1]) == {("t", 0, False): (8 * MB, 0)}
    size, lag = logs_in(answer[D2])[("t", 0, True)]
    # 1 MB/s for 2 s (20 steps of float sums: within a byte); lag in messages behind the current log
    assert size == pytest.approx(2 * MB, abs=2) and lag == pytest.approx(8000 - 2000, abs=1)
    assert replica.log_dir == D1 and replica.role is Role.LEADER
    # the rate is a dynamic config: raised, the copy speeds up to the disk rate (4 MB/s)
    sim.throttles.update_broker("1", {ALTER_LOG_DIRS_RATE: str(100 * MB)})
    sim.tick(1.0)
    assert logs_in(dirs(core)[D2])[("t", 0, True)][0] == pytest.approx(6 * MB, abs=2)
    sim.tick(1.0)
    answer = dirs(core)
    assert logs_in(answer[D1]) == {}
    assert logs_in(answer[D2]) == {("t", 0, False): (8 * MB, 0)}
    assert replica.log_dir == D2 and replica.future is None


def test_future_logs_of_one_broker_share_its_rate(sim):
    core = sim.cores[1]
    adopt(core, "t", 0, 4 * MB)
    adopt(core, "t", 1, 4 * MB)
    sim.throttles.update_broker("<default>", {ALTER_LOG_DIRS_RATE: str(2 * MB)})
    assert move(core, D2, "t", 0) == {("t", 0): ErrorCode.NONE}
    assert move(core, D1, "t", 1) == {("t", 1): ErrorCode.NONE}
    sim.tick(1.0)
    answer = dirs(core)
    assert logs_in(answer[D2])[("t", 0, True)][0] == pytest.approx(MB, abs=2)
    assert logs_in(answer[D1])[("t", 1, True)][0] == pytest.approx(MB, abs=2)


def test_a_follower_moves_while_it_copies_from_its_leader(sim):
    leader, follower = sim.cores[1], sim.cores[2]
    adopt(leader, "t", 0, 8 * MB)
    body = leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1)])
    leader.handle(4, 4, body)
    follower.handle(4, 4, body)
    replica = sim.model.get("t", 0, 2)
    assert replica.log_dir == D1
    assert move(follower, D2, "t", 0) == {("t", 0): ErrorCode.NONE}
    sim.tick(1.0)  # the follower holds 8 MB of 8 (10 MB/s), its future 4 MB (the disk rate)
    assert replica.future is not None and replica.future.size_bytes == pytest.approx(4 * MB, abs=2)
    sim.tick(0.9)
    assert replica.log_dir == D1 and replica.future.size_bytes == pytest.approx(7.6 * MB, abs=2)
    sim.tick(0.2)
    assert replica.log_dir == D2 and replica.future is None and replica.size_bytes == 8 * MB


def test_errors_as_kafka_answers_them(sim):
    core = sim.cores[1]
    adopt(core, "t", 0)
    assert move(core, D3, "t", 0) == {("t", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    assert move(core, "relative", "t", 0) == {("t", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    assert move(core, D1, "t", 0) == {("t", 0): ErrorCode.NONE}  # already there: nothing to do
    assert sim.model.get("t", 0, 1).future is None
    assert move(core, D2, "x" * 240, 0) == {("x" * 240, 0): ErrorCode.INVALID_TOPIC_EXCEPTION}
    # not hosted yet: REPLICA_NOT_AVAILABLE, and the replica starts in that directory when created
    assert move(core, D1, "u", 0, version=0) == {("u", 0): ErrorCode.REPLICA_NOT_AVAILABLE}
    assert [adopt(core, "v", p).log_dir for p in (0, 1)] == [D2, D1]  # D1 holds 2 logs now, D2 1...
    core.handle(4, 4, leader_and_isr("u", [partition_state(0, 2, [2, 1], leader_epoch=1)]))
    assert sim.model.get("u", 0, 1).log_dir == D1  # ...but u-0 was asked for D1
    assert adopt(core, "v", 2).log_dir == D2  # asked once: the next replica is placed as usual
    # hosted but stopped (StopReplica without delete): not available either
    core.handle(5, 3, stop_replica("t", [0], delete=False))
    assert move(core, D2, "t", 0) == {("t", 0): ErrorCode.REPLICA_NOT_AVAILABLE}


def test_a_new_destination_restarts_the_copy_and_moving_back_cancels_it(sim):
    config = BrokerConfig(log_dirs=(D1, D2, D3))
    core = BrokerCore(7, sim.model, sim.clock, config)
    replica = adopt(core, "t", 0, 8 * MB)
    sim.throttles.update_broker("7", {ALTER_LOG_DIRS_RATE: str(MB)})
    move(core, D2, "t", 0)
    sim.tick(1.0)
    assert replica.future.log_dir == D2 and replica.future.size_bytes == pytest.approx(MB, abs=2)
    move(core, D3, "t", 0)
    assert replica.future.log_dir == D3 and replica.future.size_bytes == 0
    assert move(core, D1, "t", 0) == {("t", 0): ErrorCode.NONE}
    assert replica.future is None and replica.log_dir == D1


def test_an_offline_directory_takes_its_replicas_offline(sim):
    leader, follower = sim.cores[1], sim.cores[2]
    adopt(leader, "t", 0, 8 * MB)  # in D1
    adopt(leader, "t", 1, 8 * MB)  # in D2
    sim.throttles.update_broker("1", {ALTER_LOG_DIRS_RATE: str(MB)})
    move(leader, D1, "t", 1)  # a future log of t-1 in D1
    assert leader.fail_log_dir(D1) == [("t", 0)]
    t0, t1 = sim.model.get("t", 0, 1), sim.model.get("t", 1, 1)
    assert t0.role is Role.NONE and t0.storage_error
    assert t1.future is None and t1.role is Role.LEADER  # its future in D1 is lost, it stays in D2
    answer = dirs(leader)
    assert answer[D1]["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR and answer[D1]["topics"] == []
    assert answer[D1]["total_bytes"] == -1
    assert logs_in(answer[D2]) == {("t", 1, False): (8 * MB, 0)}
    # LeaderAndIsr for the offline replica is refused; moves into or while a dir is offline too
    lai = leader.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1, 2], leader_epoch=5)]))
    assert lai["partition_errors"][0]["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert move(leader, D1, "t", 1) == {("t", 1): ErrorCode.KAFKA_STORAGE_ERROR}
    assert move(leader, D2, "t", 0) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    follower.handle(4, 4, leader_and_isr("t", [partition_state(1, 1, [1, 2], isr=[1], leader_epoch=1)]))
    assert move(follower, D1, "t", 1) == {("t", 1): ErrorCode.NONE}  # another broker is unaffected
    with pytest.raises(LogDirsError):
        leader.fail_log_dir(D3)
    # a restart opens the directory again
    leader.restart()
    assert dirs(leader)[D1]["error_code"] == 0
    lai = leader.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=6)]))
    assert lai["partition_errors"][0]["error_code"] == 0 and t0.role is Role.LEADER


def test_every_directory_offline_refuses_new_replicas(sim):
    core = sim.cores[1]
    core.fail_log_dir(D1)
    core.fail_log_dir(D2)
    lai = core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=1)]))
    assert lai["partition_errors"][0]["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert sim.model.get("t", 0, 1) is None


def test_deleting_a_replica_drops_its_future(sim):
    core = sim.cores[1]
    adopt(core, "t", 0)
    move(core, D2, "t", 0)
    core.handle(5, 3, stop_replica("t", [0], delete=True))
    assert logs_in(dirs(core)[D2]) == {}


@pytest.mark.parametrize("names, reason", [
    ((), "at least one"),
    (("data",), "absolute"),
    (("/a", "/a"), "twice"),
    (("/a,b",), "comma"),
])
def test_bad_directory_lists_are_refused(names, reason):
    with pytest.raises(LogDirsError, match=reason):
        check_dir_names(names)


def test_placement_skips_offline_directories():
    d = LogDirs((D1, D2))
    d.go_offline(D1)
    assert d.place(("t", 0), {D2: 9}) == D2
    d.preferred[("t", 1)] = D1  # preferred but offline: the normal choice
    assert d.place(("t", 1), {}) == D2
    d.go_offline(D2)
    assert d.place(("t", 2), {}) is None


def test_no_future_log_while_any_directory_is_offline(sim):
    core = BrokerCore(8, sim.model, sim.clock, BrokerConfig(log_dirs=(D1, D2, D3)))
    replica = adopt(core, "t", 0)  # in D1
    core.fail_log_dir(D3)
    # D1 and D2 are online, but Kafka creates no future log while any directory is offline
    assert move(core, D2, "t", 0) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert replica.future is None and replica.log_dir == D1
    assert move(core, D1, "t", 0) == {("t", 0): ErrorCode.NONE}  # already there: no future needed
