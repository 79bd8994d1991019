"""Every API version a simulated broker advertises, through the codec both ways.

InProcessTransport(roundtrip=True) encodes each request and response with the wire codec, so
a response body that a version cannot carry fails here just as it would on a socket.
"""

import uuid

import pytest

from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.inprocess import InProcessTransport
from sim.topics import parse_topic_spec
from sim.versions import served_versions
from znodes.twin import TwinServer


@pytest.fixture
async def transport():
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, ClusterSettings(brokers=3), clock=ManualClock(), serve=False)
    await cluster.start([parse_topic_spec("t:2:3:4KiB")])
    yield InProcessTransport(cluster), cluster
    await cluster.close()


def _state(version, topic, partition, replicas, *, epoch, zk_version=0):
    state = {
        "partition_index": partition,
        "controller_epoch": 1,
        "leader": replicas[0],
        "leader_epoch": epoch,
        "isr": replicas,
        "partition_epoch": zk_version,
        "replicas": replicas,
    }
    if version <= 1:
        state["topic_name"] = topic
    if version >= 3:
        state["adding_replicas"] = []
        state["removing_replicas"] = []
    return state


TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def _leader_and_isr(version, epoch):
    states = [_state(version, "t", 0, [1, 2, 3], epoch=epoch), _state(version, "t", 9, [1, 2], epoch=epoch)]
    body = {"controller_id": 100, "controller_epoch": 1, "live_leaders": [{"broker_id": 1, "host_name": "h", "port": 1}]}
    if version <= 1:
        body["ungrouped_partition_states"] = states
    else:
        body["topic_states"] = [{"topic_name": "t", "partition_states": states}]
    if version >= 5:  # KIP-516: topic ids; answered per id
        body["topic_states"][0]["topic_id"] = TOPIC_ID
        body["type"] = 1  # incremental
    if version >= 6:
        for state in states:
            state["leader_recovery_state"] = 0
    return body


def _update_metadata(version):
    state = {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2],
             "zk_version": 0, "replicas": [1, 2, 3]}
    if version >= 4:
        state["offline_replicas"] = [3]
    broker = {"id": 1}
    if version == 0:
        broker.update(v0_host="127.0.0.1", v0_port=9001)
    else:
        endpoint = {"port": 9001, "host": "127.0.0.1", "security_protocol": 0}
        if version >= 3:
            endpoint["listener"] = "PLAINTEXT"
        broker["endpoints"] = [endpoint]
    if version >= 2:
        broker["rack"] = "r1"
    body = {"controller_id": 100, "controller_epoch": 1, "live_brokers": [broker, {**broker, "id": 2}]}
    if version <= 4:
        body["ungrouped_partition_states"] = [{**state, "topic_name": "t"}]
    else:
        body["topic_states"] = [{"topic_name": "t", "partition_states": [state]}]
    return body


def _stop_replica(version):
    body = {"controller_id": 100, "controller_epoch": 1}
    if version == 0:
        body.update(delete_partitions=True, ungrouped_partitions=[{"topic_name": "t", "partition_index": 1}])
    elif version <= 2:
        body.update(delete_partitions=True, topics=[{"name": "t", "partition_indexes": [1]}])
    else:
        body["topic_states"] = [{"topic_name": "t", "partition_states": [
            {"partition_index": 1, "leader_epoch": -2, "delete_partition": True}]}]
    return body


def _versions(key):
    lo, hi = served_versions()[key]
    return range(lo, hi + 1)


@pytest.mark.parametrize("version", _versions(18))
async def test_api_versions(transport, version):
    tr, _ = transport
    body = {"client_software_name": "sim-test", "client_software_version": "1.0"} if version >= 3 else {}
    response = await tr.request(1, 18, version, body)
    assert response["error_code"] == 0
    listed = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert listed == served_versions()


@pytest.mark.parametrize("version", _versions(4))
async def test_leader_and_isr(transport, version):
    tr, cluster = transport
    response = await tr.request(3, 4, version, _leader_and_isr(version, epoch=1))
    assert response["error_code"] == 0
    if version >= 5:
        assert response["partition_errors"] == []  # v0-4 only
        errors = {(t["topic_id"], e["partition_index"]): e["error_code"]
                  for t in response["topics"] for e in t["partition_errors"]}
        assert errors == {(TOPIC_ID, 0): 0, (TOPIC_ID, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    else:
        errors = {(e["topic_name"], e["partition_index"]): e["error_code"] for e in response["partition_errors"]}
        assert errors == {("t", 0): 0, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert cluster.model.get("t", 0, 3).leader_epoch == 1


@pytest.mark.parametrize("version", _versions(5))
async def test_stop_replica(transport, version):
    tr, cluster = transport
    response = await tr.request(2, 5, version, _stop_replica(version))
    assert response["error_code"] == 0
    assert [(e["topic_name"], e["partition_index"], e["error_code"]) for e in response["partition_errors"]] == [
        ("t", 1, 0)
    ]
    assert cluster.model.get("t", 1, 2) is None


@pytest.mark.parametrize("version", _versions(6))
async def test_update_metadata_then_metadata(transport, version):
    tr, _ = transport
    assert (await tr.request(1, 6, version, _update_metadata(version)))["error_code"] == 0
    meta = await tr.request(1, 3, 1, {"topics": None})
    assert [b["node_id"] for b in meta["brokers"]] == [1, 2]
    assert meta["brokers"][0]["port"] == 9001
    assert meta["controller_id"] == 100


@pytest.mark.parametrize("version", _versions(3))
async def test_metadata(transport, version):
    tr, _ = transport
    await tr.request(1, 6, 6, _update_metadata(6))
    body = {"topics": [{"name": "t"}, {"name": "missing"}]}
    if version >= 8:
        body["include_topic_authorized_operations"] = True
    if 8 <= version <= 10:
        body["include_cluster_authorized_operations"] = True
    response = await tr.request(1, 3, version, body)
    topics = {t["name"]: t for t in response["topics"]}
    assert topics["missing"]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    (partition,) = topics["t"]["partitions"]
    assert partition["leader_id"] == 1
    if version == 0:
        assert partition["error_code"] == ErrorCode.REPLICA_NOT_AVAILABLE and partition["replica_nodes"] == [1, 2]
    else:
        assert partition["error_code"] == 0 and partition["replica_nodes"] == [1, 2, 3]
    if version >= 1:
        assert response["controller_id"] == 100
    if version >= 8:
        assert topics["t"]["topic_authorized_operations"] > 0


@pytest.mark.parametrize("version", _versions(35))
async def test_describe_log_dirs(transport, version):
    tr, _ = transport
    response = await tr.request(3, 35, version, {"topics": None})
    (result,) = response["results"]
    assert result["log_dir"] == "/var/sim/kafka-logs-3"
    sizes = [p["partition_size"] for t in result["topics"] for p in t["partitions"]]
    assert sizes == [4096, 4096]
    if version >= 4:
        assert result["total_bytes"] > result["usable_bytes"] > 0
    assert result["is_cordoned"] is False  # v5+ on the wire; the default before


async def test_stopped_broker_refuses_and_unsupported_version_resets(transport):
    tr, cluster = transport
    await cluster.stop_broker(2)
    with pytest.raises(ConnectionRefusedError):
        await tr.request(2, 18, 0, {})
    with pytest.raises(ConnectionResetError):
        await InProcessTransport(cluster, roundtrip=False).request(1, 4, 8, {})  # Kafka 3.9 ends at 7
