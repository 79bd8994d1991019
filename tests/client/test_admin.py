"""The AdminClient over real sockets, against small Kafka-protocol servers built on this
project's codec (tests/client/wire_server.py): bootstrap, controller discovery, NOT_CONTROLLER
retry, version negotiation, per-partition results and errors, bad peers."""

from __future__ import annotations

import asyncio
import struct

import pytest

from client.admin import AdminClient, parse_bootstrap
from client.errors import (
    ConnectionFailedError,
    InputError,
    InvalidThrottleError,
    KafkaApiError,
    NotControllerError,
    PartitionErrors,
    ProtocolViolationError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from client.metadata import Reassignment

from protocol import ApiKey
from tests.client.wire_cluster import WireCluster


@pytest.fixture
async def cluster():
    c = await WireCluster.start()
    c.topics = {"orders": {0: [1, 2], 1: [2, 3]}, "audit": {0: [3, 4]}}
    try:
        yield c
    finally:
        await c.stop()


async def test_bootstrap_discovers_nodes_and_controller(cluster):
    async with AdminClient(cluster.bootstrap) as admin:
        assert sorted(admin.nodes) == [1, 2, 3, 4, 100]
        assert admin.controller_id == 100
        meta = await admin.describe_cluster()
        assert meta.assignment() == {"audit": {0: [3, 4]}, "orders": {0: [1, 2], 1: [2, 3]}}
        assert meta.topics["orders"][1].leader == 2
    # Metadata went at the highest version both sides have, without auto-creating topics.
    versions = {v for v, _ in cluster.received(ApiKey.METADATA)}
    assert versions == {13}
    assert all(b.get("allow_auto_topic_creation") is False for _, b in cluster.received(ApiKey.METADATA))


async def test_controller_requests_go_to_the_active_controller_from_a_standby():
    c = await WireCluster.start(controllers=(100, 101))
    c.topics = {"t": {0: [1, 2]}}
    c.controller_id = 101
    try:
        async with AdminClient(c.controllers[100].address) as admin:
            result = await admin.reassign_partitions({("t", 0): [3, 4]}, throttle=1000)
            assert result.errors == {} and result.succeeded == [("t", 0)]
        assert c.controllers[100].requests(ApiKey.REASSIGN_PARTITIONS) == []
        [(version, body)] = c.controllers[101].requests(ApiKey.REASSIGN_PARTITIONS)
        assert version == 0
        assert body == {"topic_reassignments": [{"topic": "t", "partition_reassignments": [
            {"partition_id": 0, "broker": [3, 4]}]}], "timeout": 30000, "validate_only": False,
            "throttle": 1000, "remove_throttle": True,
            "skip_isr_check": False, "movement_strategies": []}  # v0 has no such fields: decoded at their defaults (v1 tags)
    finally:
        await c.stop()


async def test_not_controller_refreshes_metadata_and_retries():
    c = await WireCluster.start(controllers=(100, 101))
    c.topics = {"t": {0: [1, 2]}}

    def deposed(version, body):
        # 100 lost the election: it says so, and Metadata now names 101.
        c.controller_id = 101
        return {"reassign_partition_result": [{"topic": "t", "partition_error": [
            {"partition_id": 0, "error_code": 41, "error_message": "not the controller"}]}]}

    c.controllers[100].handlers[ApiKey.REASSIGN_PARTITIONS] = deposed
    try:
        async with AdminClient(c.controllers[100].address) as admin:
            result = await admin.reassign_partitions({("t", 0): [3, 4]})
            result.all()
        assert len(c.controllers[100].requests(ApiKey.REASSIGN_PARTITIONS)) == 1
        assert len(c.controllers[101].requests(ApiKey.REASSIGN_PARTITIONS)) == 1
    finally:
        await c.stop()


async def test_not_controller_forever_gives_up():
    c = await WireCluster.start(controllers=(100,))
    c.controllers[100].handlers[ApiKey.LIST_REASSIGNMENTS] = lambda v, b: {"error_code": 41, "error_message": "standby", "reassignment": []}
    try:
        async with AdminClient(c.bootstrap, retries=2) as admin:
            with pytest.raises(NotControllerError):
                await admin.list_reassignments()
        assert len(c.controllers[100].requests(ApiKey.LIST_REASSIGNMENTS)) == 3
    finally:
        await c.stop()


async def test_per_partition_errors_carry_code_and_message(cluster):
    def answer(version, body):
        return {"reassign_partition_result": [{"topic": "orders", "partition_error": [
            {"partition_id": 0, "error_code": 0, "error_message": None},
            {"partition_id": 1, "error_code": 60, "error_message": "already moving"}]}]}

    cluster.reassign_answer = answer
    async with AdminClient(cluster.bootstrap) as admin:
        result = await admin.reassign_partitions({("orders", 0): [3, 4], ("orders", 1): [1, 4], ("audit", 0): [1, 2]})
    assert result.result(("orders", 0)) is None
    with pytest.raises(ReassignmentInProgressError) as exc:
        result.result(("orders", 1))
    assert (exc.value.code, exc.value.name, exc.value.message) == (60, "REASSIGNMENT_IN_PROGRESS", "already moving")
    assert (exc.value.topic, exc.value.partition) == ("orders", 1)
    # a partition the answer leaves out is an error, never a silent success
    assert result.errors[("audit", 0)].code == -1
    with pytest.raises(PartitionErrors) as all_exc:
        result.all()
    assert set(all_exc.value.errors) == {("orders", 1), ("audit", 0)}


async def test_invalid_throttle_from_the_controller(cluster):
    cluster.reassign_answer = lambda v, b: {"reassign_partition_result": [{"topic": "orders", "partition_error": [
        {"partition_id": 0, "error_code": 1001, "error_message": "throttle must be positive"}]}]}
    async with AdminClient(cluster.bootstrap) as admin:
        result = await admin.reassign_partitions({("orders", 0): [3, 4]}, throttle=1)
    with pytest.raises(InvalidThrottleError):
        result.result(("orders", 0))


async def test_version_negotiation_and_the_additional_semantics():
    c = await WireCluster.start(controllers=(100,))
    c.topics = {"t": {0: [1, 2]}}
    c.controllers[100].offered = {ApiKey.METADATA: (0, 5), ApiKey.REASSIGN_PARTITIONS: (0, 0), ApiKey.LIST_REASSIGNMENTS: (0, 1)}
    try:
        async with AdminClient(c.bootstrap) as admin:
            await admin.reassign_partitions({("t", 0): [2, 1]})
            with pytest.raises(UnsupportedVersionError):
                await admin.reassign_partitions({("t", 0): [2, 1]}, additional=True)
            with pytest.raises(UnsupportedVersionError):
                await admin.cancel_reassignments()
        assert {v for v, _ in c.received(ApiKey.METADATA)} == {5}
        assert [v for v, _ in c.received(ApiKey.REASSIGN_PARTITIONS)] == [0]
        c.controllers[100].offered[ApiKey.REASSIGN_PARTITIONS] = (0, 1)
        async with AdminClient(c.bootstrap) as admin:
            await admin.reassign_partitions({("t", 0): [2, 1]}, additional=True)
        assert [v for v, _ in c.received(ApiKey.REASSIGN_PARTITIONS)] == [0, 1]
    finally:
        await c.stop()


async def test_list_describe_and_cancel(cluster):
    cluster.running = {("orders", 0): 4242, ("audit", 0): 4343}
    cluster.descriptions = {4242: {"start_time": 1_700_000_000_000, "leader_id": 1, "leader_throttle": 500,
                                   "new_assigned": [{"broker_id": 3, "follower_throttle": 400},
                                                    {"broker_id": 4, "follower_throttle": 2**63 - 1}]}}
    async with AdminClient(cluster.bootstrap) as admin:
        listed = await admin.list_reassignments()
        assert listed == {("audit", 0): Reassignment("audit", 0, 4343), ("orders", 0): Reassignment("orders", 0, 4242)}
        only = await admin.list_reassignments([("orders", 0)])
        assert list(only) == [("orders", 0)]
        described = await admin.describe_reassignments(listed.values())
        d = described[("orders", 0)]
        assert (d.start_time, d.current_leader, d.leader_throttle) == (1_700_000_000_000, 1, 500)
        assert d.new_assigned_brokers == [3, 4] and d.new_assigned_throttles == {3: 400, 4: 2**63 - 1}
        # no longer running (KIP-240: left out of the answer): None
        assert described[("audit", 0)] is None
        result = await admin.cancel_reassignments([("orders", 0), ("orders", 1)], validate_only=True)
        assert result.result(("orders", 0)) is None
        assert result.errors[("orders", 1)].code == 85
        everything = await admin.cancel_reassignments()
        assert sorted(everything) == [("audit", 0), ("orders", 0)]
    [(_, body)] = [r for r in cluster.received(ApiKey.CANCEL_REASSIGNMENTS) if r[1]["partitions"] is not None]
    assert body == {"partitions": [{"topic": "orders", "partition_ids": [0, 1]}], "validate_only": True,
                    "timeout_ms": 30000}
    assert cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)[0][1]["topic_reassignment"][0] in (
        {"topic": "audit", "reassignment": {"partition_id": 0, "reassignment_id": 4343}},
        {"topic": "orders", "reassignment": {"partition_id": 0, "reassignment_id": 4242}},
    )


async def test_top_level_error_is_raised(cluster):
    cluster.controllers[100].handlers[ApiKey.LIST_REASSIGNMENTS] = lambda v, b: {"error_code": 31, "error_message": "no Describe on Cluster",
                                                            "reassignment": []}
    async with AdminClient(cluster.bootstrap) as admin:
        with pytest.raises(KafkaApiError) as exc:
            await admin.list_reassignments()
    assert (exc.value.code, exc.value.name) == (31, "CLUSTER_AUTHORIZATION_FAILED")


async def test_throttle_apis(cluster):
    async with AdminClient(cluster.bootstrap) as admin:
        rates = await admin.alter_interbroker_throttled_rates({1: (100, 200), 2: (300, 400)}, auto_remove=False)
        assert sorted(rates) == [1, 2] and rates.errors == {}
        replicas = await admin.alter_interbroker_throttled_replicas({("orders", 0): [1, 2, 3]}, validate_only=True)
        assert replicas.succeeded == [("orders", 0)]
        with pytest.raises(InputError):
            await admin.alter_interbroker_throttled_rates({1: (0, 200)})
    [(_, body)] = cluster.received(ApiKey.ALTER_INTERBROKER_THROTTLED_RATES)
    assert body == {"broker_throttles": [{"broker_id": 1, "leader_rate": 100, "follower_rate": 200},
                                         {"broker_id": 2, "leader_rate": 300, "follower_rate": 400}],
                    "remove_throttle": False, "timeout": 30000, "validate_only": False}
    [(_, body)] = cluster.received(ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS)
    assert body["topic_throttles"] == [{"topic": "orders", "partition_throttles": [{"partition_id": 0, "broker_id": [1, 2, 3]}]}]


async def test_describe_log_dirs_asks_brokers_and_reports_the_silent_ones(cluster):
    cluster.logs = {1: {("orders", 0): (1000, 0)}, 2: {("orders", 0): (400, 17), ("orders", 1): (5, 0)}}
    await cluster.brokers[4].stop()
    async with AdminClient(cluster.bootstrap) as admin:
        logs = await admin.describe_log_dirs()
    assert logs.replicas[1][("orders", 0)].size == 1000
    assert logs.replicas[2][("orders", 0)].offset_lag == 17
    assert logs.replicas[3] == {}
    assert set(logs.errors) == {4} and isinstance(logs.errors[4], ConnectionFailedError)
    assert 100 not in logs.replicas and 100 not in logs.errors  # the controller serves no log dirs


async def test_client_side_validation_sends_nothing(cluster):
    async with AdminClient(cluster.bootstrap) as admin:
        with pytest.raises(InputError):
            await admin.reassign_partitions({("orders", 0): [3, 4]}, throttle=0)
        with pytest.raises(InputError):
            await admin.reassign_partitions({("orders", 0): [3, 3]})
        with pytest.raises(InputError):
            await admin.reassign_partitions({"orders-0": [3]})
    assert cluster.received(ApiKey.REASSIGN_PARTITIONS) == []
    for bad in ("", "host:notaport", "h:70000", [""]):
        with pytest.raises(InputError):
            parse_bootstrap(bad)
    assert parse_bootstrap("a:1, [::1]:2,b") == [("a", 1), ("::1", 2), ("b", 9092)]


async def test_unreachable_bootstrap():
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(ConnectionFailedError) as exc:
        async with AdminClient(f"127.0.0.1:{port}", request_timeout_ms=2000):
            pass
    assert f"127.0.0.1:{port}" in str(exc.value)


async def test_garbage_answer_is_a_protocol_violation_and_the_client_recovers(cluster):
    calls = []

    def garbage(version, body):
        calls.append(1)
        if len(calls) == 1:
            # the right correlation id, then bytes that are no ListReassignments response
            payload = struct.pack(">i", cluster.controllers[100].last_correlation_id) + b"\xff\xff\xff"
            return struct.pack(">i", len(payload)) + payload
        return cluster.list_reassignments(version, body)

    cluster.controllers[100].handlers[ApiKey.LIST_REASSIGNMENTS] = garbage
    async with AdminClient(cluster.bootstrap, retries=0) as admin:
        with pytest.raises(ProtocolViolationError):
            await admin.list_reassignments()
        assert await admin.list_reassignments() == {}


async def test_request_timeout(cluster):
    async def slow(version, body):
        await asyncio.sleep(5)
        return cluster.list_reassignments(version, body)

    cluster.controllers[100].handlers[ApiKey.LIST_REASSIGNMENTS] = slow
    async with AdminClient(cluster.bootstrap, request_timeout_ms=300) as admin:
        with pytest.raises(RequestTimedOutError):
            await admin.list_reassignments()


async def test_a_peer_that_hangs_up(cluster):
    cluster.controllers[100].handlers[ApiKey.CANCEL_REASSIGNMENTS] = lambda v, b: None
    async with AdminClient(cluster.bootstrap, retries=0) as admin:
        with pytest.raises(ConnectionFailedError):
            await admin.cancel_reassignments()


async def test_a_metadata_v13_top_level_error_moves_on_to_another_node():
    """KIP-1102: a node that answers Metadata v13 with a request-wide error code has no usable
    metadata; the client asks the next node instead of taking the empty answer."""
    c = await WireCluster.start(controllers=(100, 101))
    c.topics = {"t": {0: [1, 2]}}
    answer = c.controllers[100].handlers[ApiKey.METADATA]
    try:
        async with AdminClient(c.controllers[100].address) as admin:
            # After bootstrap, the active controller (asked first) starts failing Metadata.
            c.controllers[100].handlers[ApiKey.METADATA] = lambda v, b: {**answer(v, b), "error_code": 91, "brokers": [],
                                                                  "topics": []}
            meta = await admin.describe_cluster()
            assert meta.assignment() == {"t": {0: [1, 2]}}
        # 100 was asked (at v13) and its empty answer not taken: the topics came from another node.
        assert {v for v, _ in c.controllers[100].requests(ApiKey.METADATA)} == {13}
    finally:
        await c.stop()
