"""Simulated brokers over REAL sockets with the wire codec: control requests, DescribeLogDirs,
ApiVersions fallback, pipelining, and malformed input closing only its own connection."""

import asyncio
import json
import struct

import pytest

from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.replica import CopySettings
from sim.server import MAX_FRAME_SIZE
from sim.topics import parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica
from tests.sim.wire import Conn
from znodes.twin import TwinServer

MB = 1_000_000


@pytest.fixture
async def tcp_cluster():
    server = TwinServer()
    clock = ManualClock()
    settings = ClusterSettings(brokers=3, copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=True)
    await cluster.start([parse_topic_spec("t:1:1:4MB")])
    yield server, cluster, clock
    await cluster.close()


def _port(cluster, broker_id):
    return cluster.broker(broker_id).port


async def test_registered_port_is_the_listener(tcp_cluster):
    server, cluster, _ = tcp_cluster
    for b in (1, 2, 3):
        reg = json.loads(server.read(f"/brokers/ids/{b}")[0])
        conn = await Conn.open(reg["port"])
        assert (await conn.call(18, 3, {"client_software_name": "t", "client_software_version": "1"}))["error_code"] == 0
        conn.close()


async def test_leader_and_isr_copy_describe_log_dirs_then_stop_replica(tcp_cluster):
    server, cluster, clock = tcp_cluster
    (leader,) = json.loads(server.read("/brokers/topics/t")[0])["partitions"]["0"]
    new = 1 if leader != 1 else 2
    body = leader_and_isr("t", [partition_state(0, leader, [leader, new], isr=[leader], leader_epoch=1, adding=[new])])
    conns = {b: await Conn.open(_port(cluster, b)) for b in (leader, new)}
    for b, conn in conns.items():
        response = await conn.call(4, 4, body)
        assert response["error_code"] == 0
        assert response["partition_errors"] == [{"topic_name": "t", "partition_index": 0, "error_code": 0}]

    clock.advance(1.0)
    await cluster.advance()
    logs = await conns[new].call(35, 4, {"topics": [{"topic": "t", "partitions": [0]}]})
    (result,) = logs["results"]
    assert result["log_dir"] == f"/var/sim/kafka-logs-{new}"
    (partition,) = result["topics"][0]["partitions"]
    assert partition["partition_size"] == MB and partition["is_future_key"] is False
    leader_offset = 4 * MB // 1024  # pre-filled at 1 KiB a message
    assert partition["offset_lag"] == leader_offset - int(leader_offset * 0.25)  # 1 of 4 MB copied
    lead = (await conns[leader].call(35, 1, {"topics": None}))["results"][0]["topics"][0]["partitions"][0]
    assert lead["offset_lag"] == 0 and lead["partition_size"] == 4 * MB

    stop = await conns[new].call(5, 3, stop_replica("t", [0], delete=True, leader_epoch=-2))
    assert stop["partition_errors"] == [{"topic_name": "t", "partition_index": 0, "error_code": 0}]
    assert cluster.model.get("t", 0, new) is None
    clock.advance(5.0)
    await cluster.advance()
    assert (await conns[new].call(35, 4, {"topics": None}))["results"][0]["topics"] == []
    for conn in conns.values():
        conn.close()


async def test_stale_controller_epoch_over_the_wire(tcp_cluster):
    _, cluster, _ = tcp_cluster
    conn = await Conn.open(_port(cluster, 1))
    body = leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=5)], controller_epoch=3)
    assert (await conn.call(4, 4, body))["error_code"] == 0
    stale = leader_and_isr("t", [partition_state(0, 1, [1], leader_epoch=6)], controller_epoch=2)
    response = await conn.call(4, 4, stale)
    assert response["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert cluster.model.get("t", 0, 1).leader_epoch == 5
    conn.close()


async def test_pipelined_requests_are_answered_in_order(tcp_cluster):
    _, cluster, _ = tcp_cluster
    conn = await Conn.open(_port(cluster, 2))
    sent = [conn.send(18, v, {}) for v in (0, 1, 2)]
    await conn.writer.drain()
    got = [(await conn.receive(18, v))[0] for v in (0, 1, 2)]
    assert got == sent
    conn.close()


async def test_unsupported_api_versions_version_gets_kafkas_v0_answer(tcp_cluster):
    _, cluster, _ = tcp_cluster
    conn = await Conn.open(_port(cluster, 1))
    # A future ApiVersions version: header v2, an empty body; the codec has no spec for it.
    header = struct.pack(">hhi", 18, 99, 77) + struct.pack(">h", 4) + b"test" + b"\x00"
    conn.writer.write(struct.pack(">i", len(header) + 1) + header + b"\x00")
    await conn.writer.drain()
    correlation, body = await conn.receive(18, 0)
    assert correlation == 77
    assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    # ApiVersions' own range alone (Kafka's ApiVersionsRequest.getErrorResponse, KIP-511).
    assert [k["api_key"] for k in body["api_keys"]] == [18] and body["api_keys"][0]["min_version"] == 0
    conn.close()


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", 6) + b"\xff\xff\x00\x00\x00\x01",  # a truncated header
        struct.pack(">i", 8) + struct.pack(">hhi", 4, 42, 1),  # a version no spec has
        struct.pack(">i", 12) + struct.pack(">hhi", 4, 4, 1) + b"\x00\x00\x00\x00",  # a body cut short
        struct.pack(">i", MAX_FRAME_SIZE + 1),  # over the frame limit
        struct.pack(">i", -5),  # a negative size
        struct.pack(">i", 8) + struct.pack(">hhi", 1, 0, 1),  # Fetch: not served by a broker here
    ],
)
async def test_malformed_frame_closes_only_that_connection(tcp_cluster, garbage):
    _, cluster, _ = tcp_cluster
    port = _port(cluster, 1)
    bystander = await Conn.open(port)
    assert (await bystander.call(18, 0, {}))["error_code"] == 0
    bad = await Conn.open(port)
    bad.writer.write(garbage)
    await bad.writer.drain()
    assert await bad.closed_by_peer()
    # The other connection and the listener carry on.
    assert (await bystander.call(18, 1, {}))["error_code"] == 0
    fresh = await Conn.open(port)
    assert (await fresh.call(35, 0, {"topics": None}))["results"][0]["log_dir"] == "/var/sim/kafka-logs-1"
    for conn in (bystander, bad, fresh):
        conn.close()


async def test_stopped_broker_refuses_connections_and_restart_listens_on_the_same_port(tcp_cluster):
    server, cluster, _ = tcp_cluster
    port = _port(cluster, 3)
    conn = await Conn.open(port)
    await cluster.stop_broker(3)
    assert await conn.closed_by_peer()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
    await cluster.start_broker(3)
    assert cluster.broker(3).port == port
    assert json.loads(server.read("/brokers/ids/3")[0])["port"] == port
    again = await Conn.open(port)
    assert (await again.call(18, 0, {}))["error_code"] == 0
    again.close()


async def test_librdkafkas_all_topics_metadata_request_is_answered_and_its_extra_bytes_counted(tcp_cluster):
    """confluent-kafka 2.16.1 (librdkafka 2.16.0) list_topics(): Metadata v12 with 3 bytes after
    the body, which Kafka ignores; so does a simulated broker, and the connection stays open."""
    from tests.protocol.test_codec_messages import LIBRDKAFKA_ALL_TOPICS

    _, cluster, _ = tcp_cluster
    conn = await Conn.open(_port(cluster, 1))
    conn.writer.write(LIBRDKAFKA_ALL_TOPICS)
    await conn.writer.drain()
    correlation, body = await conn.receive(3, 12)
    assert correlation == 3
    assert {b["node_id"] for b in body["brokers"]} >= {1, 2, 3}
    server = cluster.broker(1).server
    assert (server.left_over_requests, server.left_over_bytes) == (1, 3)
    assert (await conn.call(18, 0, {}))["error_code"] == 0
    conn.close()
