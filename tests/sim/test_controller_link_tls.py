"""How simulated brokers reach the controller's listener (sim.controller_link), TLS included: a
controller whose registration (``/reassignd/controllers/<id>``, written as controller.shell.daemon
writes it: endpoints and ``listener_security_protocol_map``) lists SSL listeners only is reached
over TLS by brokers with TLS settings (``ClusterSettings.tls``: the truststore checks the
controller's certificate, the keystore is presented as the client certificate), and refused with
a NoAnswer naming why without a truststore that trusts it, without TLS settings, or when it
speaks SASL only. The endpoint is picked as Kafka's broker picks it: the listener named like the
broker's own, else a PLAINTEXT one, else an SSL one when the brokers have TLS settings; the
``--controller-lookup metadata`` way picks among UpdateMetadata's endpoints by the same rule.

Fake controllers on real sockets (tests/sim/test_alter_partition.py's, here behind a TLS
listener), certificates from tests/security/certs.py, the ZooKeeper twin."""

from __future__ import annotations

import asyncio
import logging
import ssl

import pytest

import protocol
import sim.controlled_shutdown as cs
import sim.controller_link as link
from protocol import ApiKey
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.replica import CopySettings
from sim.tls import SimTls
from sim.topics import parse_topic_spec
from tests.security.certs import make_pki
from tests.sim.bodies import leader_and_isr, partition_state
from tests.sim.test_alter_partition import FakeController
from znodes.payloads import encode_controller, encode_listener
from znodes.twin import TwinServer

MB = 1_000_000
HOST = "127.0.0.1"
STEP_S = 0.25
SSL_ID = 1  # Kafka's SecurityProtocol ids, as UpdateMetadata carries them
SASL_SSL_ID = 3


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("controller-link-pki"))


class TlsController(FakeController):
    """FakeController behind a TLS listener that requires a client certificate signed by the
    test CA; answers ControlledShutdown with NONE and nothing remaining. ``peers``: the subject
    of each connection's client certificate."""

    def __init__(self, cid: int, pki, *answers):
        super().__init__(cid, *answers)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(pki.server))
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.load_verify_locations(cafile=str(pki.ca))
        self.peers: list[dict] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, HOST, 0, ssl=self.ctx)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader, writer) -> None:
        cert = writer.get_extra_info("peercert") or {}
        self.peers.append(dict(x[0] for x in cert.get("subject", ())))
        await super()._serve(reader, writer)

    def _respond(self, frame: bytes):
        header, body = protocol.decode_request(frame)
        if header["request_api_key"] != ApiKey.CONTROLLED_SHUTDOWN:
            return super()._respond(frame)
        self.requests.append((header, body))
        return self._encoded(header, body, lambda _: {"error_code": 0, "remaining_partitions": []})


def _settings(tls: SimTls | None, **kwargs) -> ClusterSettings:
    return ClusterSettings(
        brokers=3, topic_brokers=(1,), listener_name="SSL" if tls is not None else "PLAINTEXT", tls=tls,
        copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0),
        broker=BrokerConfig(replica_lag_time_max=30.0), isr_via="alter_partition", **kwargs)


class Sim:
    def __init__(self, server, cluster, clock, other):
        self.server, self.cluster, self.clock, self.other = server, cluster, clock, other
        self.fakes: list[FakeController] = []

    async def register(self, cid: int, endpoints: dict[str, tuple[str, int]], protocols: dict[str, str]) -> None:
        """``/reassignd/controllers/<cid>`` as the daemon writes it, and ``/controller``."""
        first = next(iter(endpoints.values()))
        await self.other.create(f"/reassignd/controllers/{cid}", encode_listener(*first, endpoints=endpoints,
                                                                                  protocols=protocols),
                                ephemeral=True, makepath=True)
        await self.other.create("/controller", encode_controller(cid, 1), ephemeral=True)

    async def tls_controller(self, pki, cid: int = 101) -> TlsController:
        fake = TlsController(cid, pki)
        port = await fake.start()
        self.fakes.append(fake)
        await self.register(cid, {"SSL": (HOST, port)}, {"SSL": "SSL"})
        return fake

    async def propose(self) -> None:
        """Broker 1's follower on broker 2 catches up: broker 1 sends AlterPartition."""
        body = leader_and_isr("t", [partition_state(0, 1, [1, 2], isr=[1], leader_epoch=1, zk_version=0,
                                                    adding=[2])])
        for b in (1, 2):
            assert self.cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0
        for _ in range(5):  # 1 MB at 1 MB/s: caught up at the fourth
            self.clock.advance(STEP_S)
            await self.cluster.advance()
        await self.cluster.wait_alter_partition_answers()

    def isr(self) -> tuple[int, ...]:
        return self.cluster.model.get("t", 0, 1).isr

    async def close(self) -> None:
        await self.other.close()
        await self.cluster.close()
        for fake in self.fakes:
            await fake.close()


async def _sim(tls: SimTls | None, **kwargs) -> Sim:
    server, clock = TwinServer(), ManualClock()
    cluster = SimulatedCluster(server.connect, _settings(tls, **kwargs), clock=clock, serve=False)
    await cluster.start([parse_topic_spec("t:1:1:1MB")])
    return Sim(server, cluster, clock, server.connect())


def _tls(pki, truststore="ca") -> SimTls:
    stores = {"ca": pki.ca, "rogue": pki.rogue_ca, None: None}
    return SimTls(keystore=str(pki.server), truststore=None if stores[truststore] is None else str(stores[truststore]))


async def test_alter_partition_reaches_a_tls_only_controller_with_the_truststore(pki):
    s = await _sim(_tls(pki))
    try:
        fake = await s.tls_controller(pki)
        endpoint = await link.find_controller(s.cluster.broker(1))
        assert (endpoint.id, endpoint.listener, endpoint.protocol, endpoint.port) == \
            (101, "SSL", "SSL", fake.server.sockets[0].getsockname()[1])
        await s.propose()
        assert fake.proposals() == [("t", 0, 1, [1, 2], 0)] and s.isr() == (1, 2)
        assert fake.peers == [{"commonName": "localhost"}]  # the keystore, presented as client certificate
    finally:
        await s.close()


@pytest.mark.parametrize("truststore", [None, "rogue"], ids=["system-cas", "another-ca"])
async def test_a_controller_the_truststore_does_not_trust_is_refused_with_a_clear_no_answer(pki, caplog, truststore):
    caplog.set_level(logging.INFO, logger="sim.alter_partition")
    s = await _sim(_tls(pki, truststore))
    try:
        fake = await s.tls_controller(pki)
        broker = s.cluster.broker(1)
        with pytest.raises(link.NoAnswer, match="certificate verify failed") as refused:
            await link.connect(broker, await link.find_controller(broker), timeout_s=5.0)
        assert "controller 101" in str(refused.value) and "truststore" in str(refused.value)
        await s.propose()
        assert fake.requests == [] and s.isr() == (1,)  # not reached: proposed again later
        assert any("certificate verify failed" in r.getMessage() for r in caplog.records)
    finally:
        await s.close()


async def test_brokers_without_tls_settings_do_not_reach_an_ssl_only_controller_and_say_why(pki):
    s = await _sim(None)
    try:
        fake = await s.tls_controller(pki)
        with pytest.raises(link.NoAnswer, match=r"controller 101 .*SSL.*--ssl-keystore"):
            await link.find_controller(s.cluster.broker(1))
        await s.propose()
        assert fake.connections == 0 and s.isr() == (1,)
    finally:
        await s.close()


async def test_a_sasl_only_controller_is_unreachable_and_the_no_answer_names_why(pki):
    s = await _sim(_tls(pki))
    try:
        await s.register(101, {"SASL_SSL": (HOST, 9093), "BROKERS": (HOST, 9094)},
                         {"SASL_SSL": "SASL_SSL", "BROKERS": "SASL_PLAINTEXT"})
        with pytest.raises(link.NoAnswer, match=r"controller 101 .*SASL_SSL.*SASL_PLAINTEXT.*no SASL"):
            await link.find_controller(s.cluster.broker(1))
    finally:
        await s.close()


async def test_controlled_shutdown_over_tls(pki, monkeypatch):
    monkeypatch.setattr(cs, "RETRY_BACKOFF_S", 0.05)
    s = await _sim(_tls(pki))
    try:
        fake = await s.tls_controller(pki)
        czxid = s.server.exists("/brokers/ids/2").czxid
        outcome = await s.cluster.controlled_stop_broker(2)
        assert (outcome.controlled, outcome.remaining, outcome.tries) == (True, (), 1)
        header, body = fake.requests[0]
        assert (header["request_api_key"], header["request_api_version"], body) == \
            (ApiKey.CONTROLLED_SHUTDOWN, 3, {"broker_id": 2, "broker_epoch": czxid})
        assert fake.peers == [{"commonName": "localhost"}]
    finally:
        await s.close()


def _update_metadata(controller_id: int, endpoints: list[dict]) -> dict:
    """UpdateMetadata v7 listing the brokers' own nodes and the controller instance's."""
    own = [{"id": b, "rack": None,
            "endpoints": [{"port": 9000 + b, "host": HOST, "listener": "SSL", "security_protocol": SSL_ID}]}
           for b in (1, 2, 3)]
    return {"controller_id": controller_id, "controller_epoch": 1, "broker_epoch": -1, "topic_states": [],
            "live_brokers": [*own, {"id": controller_id, "endpoints": endpoints, "rack": None}]}


async def test_the_metadata_lookup_picks_the_endpoint_by_the_same_rule(pki):
    s = await _sim(_tls(pki), controller_lookup="metadata")
    try:
        fake = TlsController(101, pki)
        port = await fake.start()
        s.fakes.append(fake)
        sasl = {"port": 9093, "host": HOST, "listener": "SASL_SSL", "security_protocol": SASL_SSL_ID}
        tls = {"port": port, "host": HOST, "listener": "CONTROLLER_TLS", "security_protocol": SSL_ID}
        for b in (1, 2, 3):  # the SASL endpoint first: the old rule (the first endpoint) would take it
            assert s.cluster.broker(b).core.handle(6, 7, _update_metadata(101, [sasl, tls]))["error_code"] == 0
        endpoint = await link.find_controller(s.cluster.broker(1))
        assert (endpoint.listener, endpoint.protocol, endpoint.port) == ("CONTROLLER_TLS", "SSL", port)
        await s.propose()
        assert fake.proposals() == [("t", 0, 1, [1, 2], 0)] and s.isr() == (1, 2)

        for b in (1, 2, 3):
            s.cluster.broker(b).core.handle(6, 7, _update_metadata(101, [sasl]))
        with pytest.raises(link.NoAnswer, match=r"controller 101 .*SASL_SSL.*no SASL"):
            await link.find_controller(s.cluster.broker(1))
    finally:
        await s.close()


E = [("INTERNAL", "h", 1, "SSL"), ("PLAINTEXT", "h", 2, "PLAINTEXT"), ("EXTERNAL", "h", 3, "SSL"),
     ("SECURED", "h", 4, "SASL_SSL")]


@pytest.mark.parametrize("endpoints, listener, tls, port", [
    (E, "INTERNAL", True, 1),  # the broker's own listener name, when it can speak it
    (E, "EXTERNAL", True, 3),
    (E, "INTERNAL", False, 2),  # named, but SSL without TLS settings: a PLAINTEXT one instead
    (E, "SECURED", True, 2),  # named, but SASL: a PLAINTEXT one instead
    (E, "OTHER", True, 2),  # none of that name: PLAINTEXT first ...
    (E[:1] + E[2:], "OTHER", True, 1),  # ... else the first SSL one
], ids=["named-ssl", "named-ssl-later", "named-ssl-without-tls", "named-sasl", "plaintext-first", "then-ssl"])
def test_the_endpoint_choice(endpoints, listener, tls, port):
    chosen = link.choose_endpoint(101, endpoints, listener=listener, tls=tls)
    assert chosen.port == port and (chosen.id, chosen.host) == (101, "h")


@pytest.mark.parametrize("endpoints, tls, why", [
    ([("INTERNAL", "h", 1, "SSL")], False, r"INTERNAL://h:1 \(SSL\).*--ssl-keystore"),
    ([("A", "h", 1, "SASL_SSL"), ("B", "h", 2, "SASL_PLAINTEXT")], True, r"A://h:1 \(SASL_SSL\).*B://h:2 "
                                                                          r"\(SASL_PLAINTEXT\).*no SASL"),
    ([], True, "no listener"),
])
def test_no_endpoint_to_speak_is_a_no_answer_naming_why(endpoints, tls, why):
    with pytest.raises(link.NoAnswer, match=rf"controller 101 .*{why}"):
        link.choose_endpoint(101, endpoints, listener="PLAINTEXT", tls=tls)
