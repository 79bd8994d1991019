"""A broker registration rewritten in place - same session, so the same epoch (czxid) - and one
that does not decode. Kafka's controller watches each /brokers/ids/N's data
(BrokerModificationsHandler): a broker that changes its advertised listeners at run time
(KIP-226) rewrites its registration, and the controller then tells every broker
(onBrokerUpdate). A registration that does not parse fails Kafka's event, the broker kept as it
was. Here: the data watch, UpdateMetadata to every live broker on a rewrite (engine step 8), an
undecodable registration alive and unreachable (never taken for dead), the held one kept while
the same session's znode does not decode."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import BrokersRead
from controller.core.state import ClusterState
from controller.shell.active import keep_held
from protocol import ApiKey
from tests.admin.cluster import AdminCluster
from tests.client.cluster_zk import broker_payload
from znodes.reads import BrokersFound, read_brokers
from znodes.twin import TwinServer
from znodes.values import Assignment, Broker, LeaderIsr


def _broker(b: int, port: int, epoch: int | None = None) -> Broker:
    return Broker(b, "h", port, None, b if epoch is None else epoch, (("PLAINTEXT", "h", port, "PLAINTEXT"),))


def _state() -> ClusterState:
    s = ClusterState(controller_id=101, epoch=3, brokers={b: _broker(b, 9000 + b) for b in (1, 2)})
    s.assignments[("t", 0)] = Assignment((1, 2))
    s.states[("t", 0)] = LeaderIsr(1, 0, 3, (1, 2), 0)
    return s


def test_a_rewritten_registration_is_told_to_every_broker():
    s = _state()
    step = engine.step(s, BrokersRead({1: _broker(1, 9001), 2: _broker(2, 9902)}), ControllerConfig())
    told = [c for c in step.commands if c.api_key == ApiKey.UPDATE_METADATA]
    assert sorted(c.broker_id for c in told) == [1, 2]
    [live] = {json.dumps(c.body["live_brokers"], sort_keys=True) for c in told}
    assert {n["id"]: n["endpoints"][0]["port"] for n in json.loads(live)} == {1: 9001, 2: 9902}
    assert not [c for c in step.commands if c.api_key != ApiKey.UPDATE_METADATA]  # no restart, no election
    s.apply(step.delta)
    assert s.brokers[2].port == 9902
    # The same registrations read again: nothing to tell.
    assert engine.step(s, BrokersRead(dict(s.brokers)), ControllerConfig()).commands == []


async def test_an_undecodable_registration_is_a_live_unreachable_broker():
    server = TwinServer()
    zk = server.connect()
    await zk.create("/brokers/ids/1", broker_payload(1), makepath=True)
    await zk.create("/brokers/ids/2", b'{"version":4,"endpoints":7}')
    found = await read_brokers(zk)
    assert sorted(found.brokers) == [1, 2] and found.undecodable == {2}
    assert found.brokers[1].reachable and not found.brokers[2].reachable
    assert found.brokers[2].epoch == (await zk.exists("/brokers/ids/2")).czxid
    assert any("broker 2's registration does not decode" in line for line in found.lines), found.lines


def test_the_held_registration_is_kept_for_the_same_session_only():
    held = {1: _broker(1, 9001), 2: _broker(2, 9002)}
    unreadable = Broker(2, "", -1, None, 2, ())
    assert keep_held(BrokersFound({1: held[1], 2: unreadable}, [], frozenset({2})), held)[2] == held[2]
    restarted = Broker(2, "", -1, None, 77, ())  # a new session: what was held is another registration's
    assert keep_held(BrokersFound({1: held[1], 2: restarted}, [], frozenset({2})), held)[2] == restarted


async def test_the_controller_reads_a_registration_rewritten_in_place(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics={"orders": {0: [1, 2, 3]}}) as c:
        active = c.daemons[await c.wait_active()].role.active
        zk = c.kafka.zk
        assert active.state.brokers[2].port == 9092
        moved = json.loads(broker_payload(2))
        moved["endpoints"], moved["port"] = ["PLAINTEXT://127.0.0.1:19092"], 19092
        await asyncio.to_thread(zk.set, "/brokers/ids/2", json.dumps(moved).encode())
        async with asyncio.timeout(20):
            while active.state.brokers[2].port != 19092:
                await asyncio.sleep(0.02)
        # Junk over it (same session): the last registration read is kept, not dropped.
        await asyncio.to_thread(zk.set, "/brokers/ids/2", b"[]")
        await asyncio.sleep(1.0)
        assert active.state.brokers[2].port == 19092 and 2 in active.state.brokers
        # Repaired: read again.
        await asyncio.to_thread(zk.set, "/brokers/ids/2", broker_payload(2))
        async with asyncio.timeout(20):
            while active.state.brokers[2].port != 9092:
                await asyncio.sleep(0.02)


async def test_a_registered_host_no_resolver_takes_is_an_unreachable_broker():
    # A registration decodes with any host string; one no resolver takes (a label over 63
    # bytes) raised UnicodeError out of the connect, past the dispatcher's retries, a traceback
    # per request. Now it is a refused connection, retried and logged as not delivered.
    from controller.shell.transport import TcpTransport

    transport = TcpTransport(lambda b: ("x" * 300 + ".example", 9092))
    try:
        with pytest.raises(ConnectionRefusedError, match="not a host name"):
            await transport.request(1, ApiKey.UPDATE_METADATA, 7, {})
    finally:
        await transport.close()


async def test_a_broker_that_moved_is_reached_at_its_new_address():
    # Kafka's controller keeps the channel it opened (processBrokerModification updates its
    # context, not its ControllerChannelManager); here the next request goes to the address the
    # registration now names, and the old connection closes once its requests are answered.
    from controller.shell.transport import TcpTransport
    from tests.client.wire_server import WireServer

    answers = {ApiKey.UPDATE_METADATA: lambda v, b: {"error_code": 0}}
    old, new = await WireServer.start(answers), await WireServer.start(answers)
    where = {1: ("127.0.0.1", old.port)}
    transport = TcpTransport(where.get)
    try:
        assert (await transport.request(1, ApiKey.UPDATE_METADATA, 7, {}))["error_code"] == 0
        where[1] = ("127.0.0.1", new.port)  # the broker rewrote its registration
        assert (await transport.request(1, ApiKey.UPDATE_METADATA, 7, {}))["error_code"] == 0
        assert len(old.requests(ApiKey.UPDATE_METADATA)) == 1 and len(new.requests(ApiKey.UPDATE_METADATA)) == 1
    finally:
        await transport.close()
        await old.stop()
        await new.stop()
