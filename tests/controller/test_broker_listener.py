"""Brokers whose listener is not named PLAINTEXT (Kafka's ``listeners=INTERNAL://...`` with
``inter.broker.listener.name=INTERNAL``): the controller reaches them at the listener its
``broker_listener`` setting names, over real sockets (the simulated brokers serve it), and a
broker without that listener is alive but unreachable - never taken for dead, which would move
every leadership off it (znodes.payloads.decode_broker)."""

from __future__ import annotations

import asyncio
import json

from controller.core.config import ControllerConfig
from controller.shell.active import ActiveController
from controller.shell.election import campaign
from controller.shell.inbox import Inbox
from controller.shell.transport import TcpTransport, broker_address
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from znodes import paths
from znodes.reads import read_brokers
from znodes.twin import TwinServer

WAIT_S = 20.0  # real seconds: a loaded machine; the moves take a few simulated seconds


async def _cluster(server: TwinServer, clock: ManualClock) -> SimulatedCluster:
    settings = ClusterSettings(brokers=4, listener_name="INTERNAL",
                               copy=CopySettings(bandwidth=8_000_000, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=True)
    await cluster.start([parse_topic_spec("t:4:2:64KiB")])
    return cluster


async def _controller(server: TwinServer, config: ControllerConfig):
    store = server.connect()
    inbox = Inbox(store)
    won = await campaign(store, inbox, 101)
    holder: dict = {}
    transport = TcpTransport(lambda b: broker_address(holder["active"].state.brokers, b))
    active = holder["active"] = ActiveController(store, inbox, controller_id=101, epoch=won.epoch,
                                                 epoch_zkversion=won.epoch_zkversion, transport=transport, config=config)
    return active, transport, asyncio.create_task(active.run())


def _states(server: TwinServer) -> dict:
    return {p: json.loads(server.read(paths.partition_state("t", p))[0]) for p in range(4)}


async def _until(check, what: str, clock: ManualClock, cluster: SimulatedCluster):
    loop = asyncio.get_running_loop()
    end = loop.time() + WAIT_S
    while not check():
        if loop.time() > end:
            raise AssertionError(f"not within {WAIT_S}s: {what}")
        clock.advance(0.25)
        await cluster.advance()
        await asyncio.sleep(0.01)


async def test_the_controller_reaches_brokers_at_the_listener_it_is_told_and_moves_complete():
    server, clock = TwinServer(), ManualClock()
    cluster = await _cluster(server, clock)
    active, transport, run = await _controller(server, ControllerConfig(broker_listener="INTERNAL", request_timeout_s=2.0))
    try:
        await _until(lambda: active.state is not None and active.state.brokers, "the controller loaded", clock, cluster)
        assert all(b.reachable and b.endpoints[0][0] == "INTERNAL" for b in active.state.brokers.values())
        current = json.loads(server.read(paths.topic("t"))[0])["partitions"]
        target = {p: [b for b in (1, 2, 3, 4) if b not in r] for p, r in current.items()}
        entries = [{"topic": "t", "partition": int(p), "replicas": r} for p, r in target.items()]
        admin = server.connect()
        await admin.create(paths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": entries}).encode())
        await _until(lambda: server.exists(paths.REASSIGN_PARTITIONS) is None, "every move done", clock, cluster)
        assert json.loads(server.read(paths.topic("t"))[0])["partitions"] == target
        states = _states(server)
        assert all(states[int(p)]["leader"] in r and sorted(states[int(p)]["isr"]) == sorted(r) for p, r in target.items())
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await transport.close()
        await cluster.close()


async def test_brokers_without_the_controllers_listener_stay_alive_and_keep_their_leaders():
    server, clock = TwinServer(), ManualClock()
    cluster = await _cluster(server, clock)
    before = _states(server)
    found = await read_brokers(server.connect())
    brokers, lines = found.brokers, found.lines
    assert sorted(brokers) == [1, 2, 3, 4] and not any(b.reachable for b in brokers.values())
    assert any("broker 1 has no PLAINTEXT endpoint" in line and "INTERNAL://" in line for line in lines), lines
    active, transport, run = await _controller(server, ControllerConfig(request_timeout_s=0.5, request_retries=0))
    try:
        await _until(lambda: active.state is not None and len(active.state.brokers) == 4, "the controller loaded", clock, cluster)
        for _ in range(20):  # an election's checks and sends have run (and failed to reach anyone)
            clock.advance(0.25)
            await cluster.advance()
            await asyncio.sleep(0.01)
        after = _states(server)
        assert {p: (s["leader"], s["isr"]) for p, s in after.items()} == {p: (s["leader"], s["isr"]) for p, s in before.items()}
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await transport.close()
        await cluster.close()


async def test_one_unreachable_broker_holds_up_no_move_among_the_others():
    # Broker 4 re-registers with no INTERNAL listener (only an SSL one): alive, unreachable. The
    # election's probes and UpdateMetadata to it fail; moves among brokers 1-3 still complete.
    server, clock = TwinServer(), ManualClock()
    cluster = await _cluster(server, clock)
    admin = server.connect()
    reg = json.loads(server.read(paths.broker(4))[0])
    reg.update(endpoints=["EXTERNAL://10.9.9.4:9093"], listener_security_protocol_map={"EXTERNAL": "SSL"})
    await admin.set(paths.broker(4), json.dumps(reg).encode())
    active, transport, run = await _controller(server, ControllerConfig(broker_listener="INTERNAL", request_timeout_s=1.0,
                                                                         request_retries=0))
    try:
        await _until(lambda: active.state is not None and len(active.state.brokers) == 4, "the controller loaded", clock, cluster)
        assert not active.state.brokers[4].reachable
        current = json.loads(server.read(paths.topic("t"))[0])["partitions"]
        movable = {p: r for p, r in current.items() if 4 not in r}
        assert movable, current
        target = {p: [b for b in (1, 2, 3) if b not in r][:1] + r[1:] for p, r in movable.items()}
        entries = [{"topic": "t", "partition": int(p), "replicas": r} for p, r in target.items()]
        await admin.create(paths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": entries}).encode())
        await _until(lambda: server.exists(paths.REASSIGN_PARTITIONS) is None, "the moves among 1-3 done", clock, cluster)
        after = json.loads(server.read(paths.topic("t"))[0])["partitions"]
        assert {p: after[p] for p in target} == target
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await transport.close()
        await cluster.close()
