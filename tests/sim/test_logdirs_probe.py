"""DescribeLogDirs (35) and AlterReplicaLogDirs (34, KIP-113) as a Kafka broker answers them,
probed on a simulated broker and on a controller instance's listener.

Kafka's behaviour is taken from its source: KafkaApis.handleDescribeLogDirsRequest /
handleAlterReplicaLogDirsRequest, ReplicaManager.describeLogDirs / alterReplicaLogDirs,
LogManager.isLogDirOnline / maybeUpdatePreferredLogDir / getOrCreateLog and
AlterReplicaLogDirsRequest.partitionDirs / getErrorResponse. Where that reading is unsure the
test says so."""

import pytest

import protocol
from controller.core import acl
from controller.shell.listener import SESSION
from protocol import ApiKey
from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.core import BrokerConfig, BrokerCore
from sim.replica import CopySettings, ReplicationModel
from sim.throttle import ALTER_LOG_DIRS_RATE, Throttles
from tests.admin.test_every_node import ask, standby
from tests.admin.test_topic_acls import CLUSTER, FixedAcls, OpsSession, grant
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica

MB = 1_000_000
D1, D2, D3 = "/data/d1", "/data/d2", "/data/d3"


class Sim:
    def __init__(self, dirs=(D1, D2), disk_bytes=100 * MB):
        self.clock = ManualClock()
        self.throttles = Throttles()
        self.model = ReplicationModel(CopySettings(bandwidth=10 * MB, produce_bytes=0, produce_messages=0,
                                                   disk_copy_rate=4 * MB), self.throttles)
        self.core = BrokerCore(1, self.model, self.clock, BrokerConfig(log_dirs=dirs, disk_bytes=disk_bytes))

    def tick(self, seconds):
        self.clock.advance(seconds)
        self.model.advance(self.clock())
        self.core.advance(self.clock())

    def adopt(self, topic, partition, size=8 * MB):
        return self.core.adopt(topic, partition, size=size, leo=size // 1000, leader=1, leader_epoch=0,
                               controller_epoch=1, isr=(1,), replicas=(1,), zk_version=0)

    def alter(self, dirs, version=2):
        """``dirs``: [(path, topic, [partitions])] as sent; the answer as (topic, partition) pairs
        with their codes, in answer order (a repeat shows)."""
        body = {"dirs": [{"path": p, "topics": [{"name": t, "partitions": ps}]} for p, t, ps in dirs]}
        answer = self.core.handle(ApiKey.ALTER_REPLICA_LOG_DIRS, version, body)
        protocol.encode_body(ApiKey.ALTER_REPLICA_LOG_DIRS, version, "response", answer)
        return [((r["topic_name"], p["partition_index"]), ErrorCode(p["error_code"]))
                for r in answer["results"] for p in r["partitions"]]

    def describe(self, topics=None, version=4):
        answer = self.core.handle(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": topics})
        protocol.encode_body(ApiKey.DESCRIBE_LOG_DIRS, version, "response", answer)
        return answer


def logs(result):
    return {(t["name"], p["partition_index"], p["is_future_key"]) for t in result["topics"] for p in t["partitions"]}


def by_dir(answer):
    return {r["log_dir"]: r for r in answer["results"]}


# ---- DescribeLogDirs on a simulated broker -------------------------------------------------

def test_all_topics_lists_every_log_and_the_future_one_in_its_destination():
    # Kafka: topics null = logManager.allLogs (current and future); a future log is listed in
    # its own directory with is_future_key true, its lag behind the current log's end.
    s = Sim()
    s.adopt("t", 0)  # D1
    s.adopt("t", 1)  # D2
    s.throttles.update_broker("1", {ALTER_LOG_DIRS_RATE: str(MB)})
    assert s.alter([(D2, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    s.tick(1.0)
    answer = s.describe()
    assert answer["error_code"] == ErrorCode.NONE
    found = by_dir(answer)
    assert logs(found[D1]) == {("t", 0, False)}
    assert logs(found[D2]) == {("t", 1, False), ("t", 0, True)}
    future = [p for t in found[D2]["topics"] for p in t["partitions"] if p["is_future_key"]][0]
    assert 0 < future["partition_size"] < 8 * MB and future["offset_lag"] > 0


def test_a_named_partition_not_here_is_absent_and_a_topic_named_twice_is_one():
    # Kafka: the request's partitions become a set; a partition this broker has no log of is
    # simply not listed, without an error; every directory is still answered.
    s = Sim()
    s.adopt("t", 0)
    s.adopt("t", 1)
    answer = s.describe([{"topic": "t", "partitions": [0]}, {"topic": "t", "partitions": [0, 1]},
                         {"topic": "nope", "partitions": [3]}, {"topic": "t", "partitions": [7]}])
    assert answer["error_code"] == ErrorCode.NONE
    found = by_dir(answer)
    assert set(found) == {D1, D2} and all(r["error_code"] == ErrorCode.NONE for r in found.values())
    assert logs(found[D1]) | logs(found[D2]) == {("t", 0, False), ("t", 1, False)}
    listed = [p["partition_index"] for r in found.values() for t in r["topics"] for p in t["partitions"]]
    assert sorted(listed) == [0, 1]  # each once


def test_an_offline_directory_is_a_storage_error_without_logs_or_sizes():
    s = Sim()
    s.adopt("t", 0)  # D1
    s.adopt("t", 1)  # D2
    s.core.fail_log_dir(D2)
    found = by_dir(s.describe())
    assert found[D2]["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR and found[D2]["topics"] == []
    assert (found[D2]["total_bytes"], found[D2]["usable_bytes"]) == (-1, -1)
    assert found[D1]["error_code"] == ErrorCode.NONE and logs(found[D1]) == {("t", 0, False)}
    assert (found[D1]["total_bytes"], found[D1]["usable_bytes"]) == (100 * MB, 92 * MB)


def test_an_unknown_volume_size_leaves_usable_bytes_unknown():
    # KIP-827: -1 when unknown. A volume of unknown size has unknown free space, not 0 (which
    # a disk planner would read as a full disk).
    s = Sim(disk_bytes=-1)
    s.adopt("t", 0)
    found = by_dir(s.describe())
    assert (found[D1]["total_bytes"], found[D1]["usable_bytes"]) == (-1, -1)


@pytest.mark.parametrize("version", range(0, 6))
def test_every_version_encodes(version):
    s = Sim()
    s.adopt("t", 0)
    answer = protocol.decode_body(35, version, "response", protocol.encode_body(
        35, version, "response", s.describe(version=version)))
    assert {r["log_dir"] for r in answer["results"]} == {D1, D2}


# ---- AlterReplicaLogDirs on a simulated broker ---------------------------------------------

def test_a_partition_named_twice_is_answered_once_and_moved_to_the_last_path():
    # Kafka's AlterReplicaLogDirsRequest.partitionDirs puts each (topic, partition) into a
    # HashMap: a repeat overwrites (the last path wins), so it is moved once and answered once
    # - not INVALID_REQUEST. High confidence (the map is plain; no duplicate check in KafkaApis).
    s = Sim(dirs=(D1, D2, D3))
    replica = s.adopt("t", 0)  # D1
    assert s.alter([(D2, "t", [0, 0])]) == [(("t", 0), ErrorCode.NONE)]
    assert replica.future.log_dir == D2
    assert s.alter([(D2, "t", [0]), (D3, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    assert replica.future.log_dir == D3


def test_the_future_log_uses_the_preferred_directory_up():
    # Kafka records the destination (maybeUpdatePreferredLogDir) and getOrCreateLog removes it
    # once it made the future log from it; a later AlterReplicaLogDirs to where the future log
    # already is records nothing. So a replica deleted and created again later is placed as
    # any new one (fewest logs), not in the old destination.
    s = Sim()
    replica = s.adopt("t", 0)  # D1
    assert s.alter([(D2, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    assert s.alter([(D2, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]  # already moving there
    assert replica.future.log_dir == D2
    s.core.handle(5, 3, stop_replica("t", [0], delete=True))
    s.core.handle(4, 4, leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=1)]))
    assert s.model.get("t", 0, 1).log_dir == D1  # D1 and D2 both empty: the first configured


def test_asking_again_for_the_running_destination_keeps_the_copy():
    # maybeCreateFutureReplica: a future log already in that directory is kept (NONE).
    s = Sim()
    replica = s.adopt("t", 0)
    s.throttles.update_broker("1", {ALTER_LOG_DIRS_RATE: str(MB)})
    s.alter([(D2, "t", [0])])
    s.tick(1.0)
    copied = replica.future.size_bytes
    assert copied > 0
    assert s.alter([(D2, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    assert replica.future.size_bytes == copied


def test_paths_that_are_not_a_configured_directory_and_offline_ones():
    # LogManager.isLogDirOnline compares with each configured dir's absolute path: a relative
    # path, another spelling (trailing slash) or an unknown one is LOG_DIR_NOT_FOUND; checked
    # before the replica, so a partition not hosted gets it too. An offline destination is
    # KAFKA_STORAGE_ERROR, also before the replica.
    s = Sim(dirs=(D1, D2, D3))
    s.adopt("t", 0)
    for path in ("data/d2", D2 + "/", "/data/d9", ""):
        assert s.alter([(path, "t", [0]), (path, "absent", [0])]) == [
            (("t", 0), ErrorCode.LOG_DIR_NOT_FOUND), (("absent", 0), ErrorCode.LOG_DIR_NOT_FOUND)]
    s.core.fail_log_dir(D3)
    assert s.alter([(D3, "t", [0]), (D3, "absent", [0])]) == [
        (("t", 0), ErrorCode.KAFKA_STORAGE_ERROR), (("absent", 0), ErrorCode.KAFKA_STORAGE_ERROR)]


def test_moving_to_its_own_directory_is_none_and_cancels_a_running_move():
    # futureReplicaDirChanged drops a future log elsewhere; maybeCreateFutureReplica then sees
    # the current directory and creates nothing: NONE, the replica stays.
    s = Sim()
    replica = s.adopt("t", 0)  # D1
    assert s.alter([(D1, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    assert replica.future is None and replica.log_dir == D1
    s.alter([(D2, "t", [0])])
    assert replica.future is not None
    assert s.alter([(D1, "t", [0])]) == [(("t", 0), ErrorCode.NONE)]
    assert replica.future is None and replica.log_dir == D1


# ---- a controller instance's listener ------------------------------------------------------

async def test_controller_answers_a_repeated_partition_once():
    body = {"dirs": [{"path": D1, "topics": [{"name": "t", "partitions": [0, 0]}]},
                     {"path": D2, "topics": [{"name": "t", "partitions": [0, 1]}]}]}
    answer = await ask(standby(), 34, 2, body)
    assert [(r["topic_name"], p["partition_index"], p["error_code"]) for r in answer["results"]
            for p in r["partitions"]] == [("t", 0, ErrorCode.LOG_DIR_NOT_FOUND), ("t", 1, ErrorCode.LOG_DIR_NOT_FOUND)]


@pytest.fixture
def refused():
    """A controller instance whose ACLs grant the principal nothing it needs here."""
    handler = standby()
    handler.ctx.authorizer = FixedAcls(*grant(CLUSTER, acl.CREATE))
    SESSION.set(OpsSession())
    yield handler
    SESSION.set(None)


@pytest.mark.parametrize("version", range(0, 3))
async def test_alter_refused_is_kafkas_error_response(refused, version):
    # KafkaApis without ALTER on CLUSTER answers getErrorResponse: one topic entry per (dir,
    # topic) of the request as sent, each listed partition CLUSTER_AUTHORIZATION_FAILED,
    # nothing merged.
    body = {"dirs": [{"path": D1, "topics": [{"name": "t", "partitions": [0]}]},
                     {"path": D2, "topics": [{"name": "t", "partitions": [1]}, {"name": "u", "partitions": [0]}]}]}
    answer = await ask(refused, 34, version, body)
    assert [(r["topic_name"], [(p["partition_index"], p["error_code"]) for p in r["partitions"]])
            for r in answer["results"]] == [("t", [(0, 31)]), ("t", [(1, 31)]), ("u", [(0, 31)])]


@pytest.mark.parametrize("version", range(0, 6))
async def test_describe_refused_is_the_request_error_without_directories(refused, version):
    # KafkaApis without DESCRIBE on CLUSTER: no results, error_code 31 (a v3+ field).
    answer = await ask(refused, 35, version, {"topics": None})
    assert answer["results"] == []
    assert answer.get("error_code", 0) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if version >= 3 else 0)
