"""The controller instances as nodes of UpdateMetadata's live brokers (engine step 8,
controller.core.replica_sync.on_controllers): where a Kafka 3.x broker looks the controller up,
by ``controller_id``, on its inter-broker listener, to send it AlterPartition,
AllocateProducerIds (ControlledShutdown reads /brokers/ids/<id> instead, in every ZooKeeper-mode
Kafka). Kafka's controller is one of its brokers and so is
always there; reassignd's instances are listed from ``/reassignd/controllers``."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import ControllersRead
from controller.core.state import ClusterState
from protocol import ApiKey
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.controller.test_broker_listener import _controller as twin_controller
from znodes import paths
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_controller_node, encode_listener
from znodes.twin import TwinServer
from znodes.values import Assignment, Broker, LeaderIsr

WAIT_S = 20.0


def _node(cid: int, port: int, *extra) -> Broker:
    return Broker(cid, "10.0.0.9", port, None, -1, (("PLAINTEXT", "10.0.0.9", port, "PLAINTEXT"), *extra))


def _state() -> ClusterState:
    s = ClusterState(controller_id=101, epoch=3, brokers={b: Broker(b, "h", 9000 + b, epoch=b) for b in (1, 2)})
    s.assignments[("t", 0)] = Assignment((1, 2))
    s.states[("t", 0)] = LeaderIsr(1, 0, 3, (1, 2), 0)
    return s


def _live(step) -> dict[int, dict]:
    [body] = {json.dumps(c.body["live_brokers"], sort_keys=True) for c in step.commands
              if c.api_key == ApiKey.UPDATE_METADATA}
    return {n["id"]: n for n in json.loads(body)}


def test_the_instances_join_every_brokers_live_nodes_and_a_change_tells_them_all():
    s = _state()
    nodes = {101: _node(101, 9190, ("SECURE", "10.0.0.9", 9193, "SASL_SSL"))}
    step = engine.step(s, ControllersRead(nodes), ControllerConfig())
    assert {c.broker_id for c in step.commands if c.api_key == ApiKey.UPDATE_METADATA} == {1, 2}
    live = _live(step)
    assert sorted(live) == [1, 2, 101]
    assert live[101]["endpoints"] == [
        {"port": 9190, "host": "10.0.0.9", "listener": "PLAINTEXT", "security_protocol": 0},
        {"port": 9193, "host": "10.0.0.9", "listener": "SECURE", "security_protocol": 3}]
    s.apply(step.delta)
    assert s.controller_nodes == nodes
    assert engine.step(s, ControllersRead(dict(nodes)), ControllerConfig()).commands == []  # nothing new
    # Later UpdateMetadata (a partition's) keep listing them; one gone is dropped.
    step = engine.step(s, ControllersRead({102: _node(102, 9290)}), ControllerConfig())
    assert sorted(_live(step)) == [1, 2, 102]


def test_a_brokers_own_registration_wins_over_an_instance_given_its_id():
    s = _state()
    step = engine.step(s, ControllersRead({2: _node(2, 9190)}), ControllerConfig())
    assert _live(step)[2]["endpoints"][0]["port"] == 9002


def test_the_registration_gives_each_listener_its_protocol():
    data = encode_listener("h", 9190, endpoints={"PLAINTEXT": ("h", 9190), "SECURE": ("h", 9193), "SSL": ("h", 9194)},
                           protocols={"PLAINTEXT": "PLAINTEXT", "SECURE": "SASL_SSL"})
    node = decode_controller_node("/reassignd/controllers/101", data, 101)
    assert node.endpoints == (("PLAINTEXT", "h", 9190, "PLAINTEXT"), ("SECURE", "h", 9193, "SASL_SSL"),
                              ("SSL", "h", 9194, "SSL"))  # a name that is a protocol speaks it
    # An older registration (host and port only): its one listener, PLAINTEXT.
    old = decode_controller_node("/reassignd/controllers/101", b'{"version":1,"host":"h","port":9190}', 101)
    assert old.endpoints == (("PLAINTEXT", "h", 9190, "PLAINTEXT"),)
    with pytest.raises(ZnodeFormatError):
        decode_controller_node("/reassignd/controllers/101", encode_listener(
            "h", 1, endpoints={"X": ("h", 1)}, protocols={"X": "KERBEROS"}), 101)


async def test_simulated_brokers_learn_the_instances_from_updatemetadata_as_they_come_and_go():
    """Over real sockets (the twin ZooKeeper, simulated brokers listening): the active
    controller's UpdateMetadata lists the instances registered under /reassignd/controllers,
    at once after its election and again when one registers or goes."""
    server, clock = TwinServer(), ManualClock()
    settings = ClusterSettings(brokers=3, copy=CopySettings(bandwidth=8_000_000, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=True)
    await cluster.start([parse_topic_spec("t:2:2:64KiB")])
    admin = server.connect()
    await admin.create(paths.CONTROLLER_INSTANCES + "/101", encode_listener(
        "127.0.0.1", 9190, endpoints={"PLAINTEXT": ("127.0.0.1", 9190)}, protocols={"PLAINTEXT": "PLAINTEXT"}),
        ephemeral=True, makepath=True)
    _, transport, run = await twin_controller(server, ControllerConfig(request_timeout_s=2.0))

    def known(b: int) -> dict:
        return {i: (n.host, n.port) for i, n in cluster.brokers[b].core.metadata.brokers.items()}

    async def until(check, what):
        end = asyncio.get_running_loop().time() + WAIT_S
        while not check():
            assert asyncio.get_running_loop().time() < end, f"not within {WAIT_S}s: {what}"
            clock.advance(0.25)
            await cluster.advance()
            await asyncio.sleep(0.01)

    try:
        await until(lambda: all(known(b).get(101) == ("127.0.0.1", 9190) for b in (1, 2, 3)), "101 known to all")
        assert all(set(known(b)) == {1, 2, 3, 101} for b in (1, 2, 3))
        await admin.create(paths.CONTROLLER_INSTANCES + "/102", encode_listener("127.0.0.1", 9290), ephemeral=True)
        await until(lambda: all(known(b).get(102) == ("127.0.0.1", 9290) for b in (1, 2, 3)), "102 known to all")
        await admin.delete(paths.CONTROLLER_INSTANCES + "/102")
        await until(lambda: all(102 not in known(b) for b in (1, 2, 3)), "102 forgotten")
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await transport.close()
        await cluster.close()
