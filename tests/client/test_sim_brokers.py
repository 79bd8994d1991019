"""The AdminClient and --progress against the project's simulated brokers over real sockets:
DescribeLogDirs (KIP-113) sizes and lags of a replica being copied. The controller side is a
codec-built wire server whose Metadata names the simulated brokers."""

from __future__ import annotations

import json

import pytest

from client import commands, progress
from client.admin import AdminClient
from client.inputs import parse_reassignment
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.client.cluster_zk import plan
from tests.client.wire_server import WireServer
from tests.sim.bodies import leader_and_isr, partition_state
from tests.sim.wire import Conn
from znodes.twin import TwinServer

MB = 1_000_000


@pytest.fixture
async def sim():
    server = TwinServer()
    clock = ManualClock()
    settings = ClusterSettings(brokers=3, copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=True)
    await cluster.start([parse_topic_spec("t:1:1:4MB")])
    ports = {b: cluster.broker(b).port for b in (1, 2, 3)}
    (replicas,) = json.loads(server.read("/brokers/topics/t")[0])["partitions"].values()
    assignment = {"t": {0: list(replicas)}}

    def metadata(version, body):
        return {
            "brokers": [{"node_id": b, "host": "127.0.0.1", "port": p, "rack": None} for b, p in ports.items()]
            + [{"node_id": 100, "host": "127.0.0.1", "port": controller.port, "rack": None}],
            "cluster_id": "sim", "controller_id": 100,
            "topics": [{"error_code": 0, "name": t, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": r[0], "leader_epoch": 1,
                 "replica_nodes": r, "isr_nodes": r[:1], "offline_replicas": []} for p, r in ps.items()]}
                for t, ps in assignment.items()],
        }

    controller = await WireServer.start({3: metadata})
    try:
        yield cluster, clock, controller, assignment, ports
    finally:
        await controller.stop()
        await cluster.close()


async def test_describe_log_dirs_and_progress_of_a_real_copy(sim):
    cluster, clock, controller, assignment, ports = sim
    (leader,) = assignment["t"][0]
    new = 1 if leader != 1 else 2
    # what the controller would send to start the move: the new replica starts copying
    body = leader_and_isr("t", [partition_state(0, leader, [leader, new], isr=[leader], leader_epoch=1, adding=[new])])
    for b in (leader, new):
        conn = await Conn.open(ports[b])
        assert (await conn.call(4, 4, body))["error_code"] == 0
        conn.close()
    assignment["t"][0] = [leader, new]

    async with AdminClient(controller.address) as admin:
        clock.advance(1.0)
        await cluster.advance()
        logs = await admin.describe_log_dirs()
        assert logs.errors == {}
        assert logs.replicas[leader][("t", 0)].size == 4 * MB
        assert logs.replicas[new][("t", 0)].size == MB and logs.replicas[new][("t", 0)].offset_lag > 0
        third = ({1, 2, 3} - {leader, new}).pop()
        assert logs.replicas[third] == {}

        target = parse_reassignment(plan(("t", 0, [new])), "p.json")
        first = await commands._sample(admin, target)
        clock.advance(1.0)
        await cluster.advance()
        second = await commands._sample(admin, target)
        second.time = first.time + 1.0  # the simulated clock moved 1 s between the samples
        report = progress.compute(target.assignments, second, first)
    [row] = report.rows
    assert row.status.startswith("Behind: ") and row.status.endswith(" messages behind")
    # the simulation rounds to whole bytes
    assert row.remaining == pytest.approx(2 * MB, abs=2) and row.rate == pytest.approx(MB, abs=2)
    assert row.eta_s == pytest.approx(2.0, rel=1e-5) and report.overall_eta_s == pytest.approx(2.0, rel=1e-5)
    assert not report.done
