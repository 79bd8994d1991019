"""Simulated brokers with Kafka's SSL listener (ClusterSettings.tls, sim.tls) over REAL sockets:
TLS clients are served and plain ones are not, the registrations declare the listener as Kafka
writes one, client certificates are asked for as ssl.client.auth says, the sim's own readers
of its registrations (the watched view, Metadata) use the SSL endpoints, and ``reassignd sim``
refuses bad TLS files with exit 2 naming the flag (and, as a process on the real ZooKeeper,
serves TLS)."""

from __future__ import annotations

import asyncio
import json
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import ApiKey
from protocol_aio import ClientConnection
from reassignd.sim import main, parse_args, settings_from
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.metadata import MetadataCache
from sim.replica import CopySettings
from sim.server import HANDSHAKE_TIMEOUT_S
from sim.tls import SimTls, TlsSettingError, server_context
from sim.topics import parse_topic_spec
from sim.zookeeper_view import RegisteredBroker
from tests.security.certs import make_pki
from tests.sim.bodies import update_metadata
from znodes import store as zstore
from znodes.payloads import decode_broker, decode_broker_endpoints
from znodes.twin import TwinServer

HOST = "127.0.0.1"
ZK = "127.0.0.1:2181/sim"
# Each request's: long enough for a loaded machine, short enough that a listener which
# answers nothing fails the test instead of hanging it.
REQUEST_TIMEOUT_S = 10.0
# A plain client must be turned away by the failed handshake itself, well before the timeout
# that would also end the connection.
REFUSED_WITHIN_S = HANDSHAKE_TIMEOUT_S / 2
API_VERSIONS_BODY = {"client_software_name": "t", "client_software_version": "1"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("sim-tls-pki"))


def _client_context(pki, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """A client trusting the test CA (the server certificate names 127.0.0.1), with ``cert``."""
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


async def _open(port: int, ctx: ssl.SSLContext | None) -> ClientConnection:
    return await ClientConnection.open(HOST, port, connect_timeout_s=REQUEST_TIMEOUT_S, ssl=ctx, client_id="tls-test",
                                       timeout_s=REQUEST_TIMEOUT_S)


async def _api_versions(port: int, ctx: ssl.SSLContext | None) -> dict:
    conn = await _open(port, ctx)
    try:
        return await conn.request(ApiKey.API_VERSIONS, 3, API_VERSIONS_BODY)
    finally:
        await conn.close()


async def _refused(port: int, ctx: ssl.SSLContext | None) -> BaseException:
    """What a client gets from a listener that will not serve it: the handshake fails, or the
    connection is closed (a TLS 1.3 server checks the client's certificate after the client
    thinks it is done), promptly, never an answer."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises((OSError, asyncio.IncompleteReadError, EOFError)) as caught:  # SSLError is an OSError
        await _api_versions(port, ctx)
    assert not isinstance(caught.value, TimeoutError)
    assert loop.time() - started < REFUSED_WITHIN_S
    return caught.value


async def _tls_cluster(pki, **tls) -> tuple[TwinServer, SimulatedCluster]:
    server = TwinServer()
    settings = ClusterSettings(brokers=3, listener_name="SSL", tls=SimTls(keystore=str(pki.server), **tls),
                               copy=CopySettings(bandwidth=1_000_000, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=ManualClock(), serve=True)
    await cluster.start([parse_topic_spec("t:2:2:1MB")])
    return server, cluster


@pytest.fixture
async def tls_cluster(pki):
    server, cluster = await _tls_cluster(pki)
    yield server, cluster
    await cluster.close()


def _port(cluster: SimulatedCluster, broker_id: int) -> int:
    return cluster.broker(broker_id).port


# ---- (a) TLS is spoken, plain TCP is not ------------------------------------------------------


async def test_tls_clients_are_served_plain_ones_get_no_answer_and_other_connections_carry_on(pki, tls_cluster):
    _, cluster = tls_cluster
    ctx = _client_context(pki)
    for b in (1, 2, 3):
        assert (await _api_versions(_port(cluster, b), ctx))["error_code"] == 0
    kept = await _open(_port(cluster, 1), ctx)  # open across the plain client's attempts
    assert (await kept.request(ApiKey.API_VERSIONS, 3, API_VERSIONS_BODY))["error_code"] == 0

    await _refused(_port(cluster, 1), None)  # a Kafka request in the clear: not a TLS record
    reader, writer = await asyncio.open_connection(HOST, _port(cluster, 2))
    writer.write(b"\x00\x00\x00\x0bnot a TLS hello")
    got = await asyncio.wait_for(reader.read(), REFUSED_WITHIN_S)  # closed, at most after an alert
    assert not got or got[0] == 0x15  # TLS record type 21: alert
    writer.close()

    assert (await kept.request(ApiKey.API_VERSIONS, 3, API_VERSIONS_BODY))["error_code"] == 0
    await kept.close()
    for b in (1, 2, 3):
        assert (await _api_versions(_port(cluster, b), ctx))["error_code"] == 0


async def test_a_client_that_does_not_trust_the_certificate_is_refused(pki, tls_cluster):
    _, cluster = tls_cluster
    caught = await _refused(_port(cluster, 1), ssl.create_default_context())  # the system CAs only
    assert isinstance(caught, ssl.SSLCertVerificationError)


# ---- (b) the registration declares it ----------------------------------------------------------


async def test_the_registration_declares_the_ssl_listener_as_kafka_writes_it(tls_cluster):
    server, cluster = tls_cluster
    for b in (1, 2, 3):
        port = _port(cluster, b)
        path = f"/brokers/ids/{b}"
        data, stat = server.read(path)
        reg = json.loads(data)
        assert reg["endpoints"] == [f"SSL://{HOST}:{port}"]
        assert reg["listener_security_protocol_map"] == {"SSL": "SSL"}
        assert reg["host"] is None and reg["port"] == -1  # Kafka: from a PLAINTEXT endpoint only
        assert reg["version"] == 4
        # What the controller reads: the endpoint, by name, with its protocol.
        by_name = decode_broker_endpoints(path, data, b, 0)
        assert (by_name["SSL"].host, by_name["SSL"].port) == (HOST, port)
        assert (("SSL", HOST, port, "SSL"),) == decode_broker(path, data, b, 0, listener="SSL").endpoints


async def test_a_plaintext_cluster_registers_as_before():
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, ClusterSettings(brokers=1), clock=ManualClock(), serve=True)
    await cluster.start()
    try:
        reg = json.loads(server.read("/brokers/ids/1")[0])
        port = _port(cluster, 1)
        assert reg["endpoints"] == [f"PLAINTEXT://{HOST}:{port}"]
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert (reg["host"], reg["port"]) == (HOST, port)
        assert (await _api_versions(port, None))["error_code"] == 0
    finally:
        await cluster.close()


# ---- (c) ssl.client.auth ------------------------------------------------------------------------


async def test_client_auth_required_refuses_a_client_without_a_trusted_certificate(pki):
    _, cluster = await _tls_cluster(pki, truststore=str(pki.ca), client_auth="required")
    try:
        port = _port(cluster, 1)
        await _refused(port, _client_context(pki))
        await _refused(port, _client_context(pki, pki.client("mallory", "/CN=mallory", rogue=True)))
        served = await _api_versions(port, _client_context(pki, pki.client("alice", "/CN=alice")))
        assert served["error_code"] == 0
    finally:
        await cluster.close()


async def test_client_auth_requested_serves_a_client_without_one_but_checks_one_sent(pki):
    _, cluster = await _tls_cluster(pki, truststore=str(pki.ca), client_auth="requested")
    try:
        port = _port(cluster, 1)
        assert (await _api_versions(port, _client_context(pki)))["error_code"] == 0
        await _refused(port, _client_context(pki, pki.client("eve", "/CN=eve", rogue=True)))
    finally:
        await cluster.close()


def test_client_auth_without_a_truststore_is_refused_naming_the_setting(pki):
    with pytest.raises(TlsSettingError, match="truststore") as caught:
        server_context(SimTls(keystore=str(pki.server), client_auth="required"))
    assert caught.value.setting == "truststore" and isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match="client_auth"):
        SimTls(keystore=str(pki.server), client_auth="always")


def test_the_context_is_tls_1_2_or_later(pki):
    ctx = server_context(SimTls(keystore=str(pki.server)))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx.verify_mode == ssl.CERT_NONE


# ---- the sim's own readers of its registrations -------------------------------------------------


async def test_metadata_lists_the_brokers_at_their_ssl_endpoints(pki, tls_cluster):
    _, cluster = tls_cluster
    ports = {b: _port(cluster, b) for b in (1, 2, 3)}
    # The watched view (sim.clusterwatch) read the SSL endpoints.
    assert cluster.view.registered == {b: RegisteredBroker(b, HOST, p, None) for b, p in ports.items()}
    conn = await _open(ports[1], _client_context(pki))
    try:
        # Before any UpdateMetadata: the registered brokers.
        meta = await conn.request(ApiKey.METADATA, 9, {"topics": []})
        assert {n["node_id"]: (n["host"], n["port"]) for n in meta["brokers"]} == {b: (HOST, p) for b, p in ports.items()}
        # After one naming two listeners per broker: the listener the request came on.
        body = update_metadata({b: (p, None) for b, p in ports.items()}, {"t": {0: [1, 2]}}, controller_id=100)
        for live in body["live_brokers"]:
            ssl_endpoint = dict(live["endpoints"][0], listener="SSL", security_protocol=1)
            live["endpoints"] = [dict(live["endpoints"][0], port=1), ssl_endpoint]
        assert (await conn.request(ApiKey.UPDATE_METADATA, 6, body))["error_code"] == 0
        meta = await conn.request(ApiKey.METADATA, 9, {"topics": []})
        assert {n["node_id"]: (n["host"], n["port"]) for n in meta["brokers"]} == {b: (HOST, p) for b, p in ports.items()}
    finally:
        await conn.close()


def test_update_metadata_endpoints_without_a_name_are_named_after_their_protocol():
    """UpdateMetadata v1-2 endpoints carry only a security protocol (Kafka names the listener
    after it): an SSL broker's cache picks its SSL one."""
    cache = MetadataCache(listener="SSL")
    cache.update(2, {"controller_id": 7, "live_brokers": [{"id": 1, "endpoints": [
        {"port": 9092, "host": "h", "security_protocol": 0}, {"port": 9093, "host": "h", "security_protocol": 1}]}]})
    assert [(b["host"], b["port"]) for b in cache.metadata(1, {"topics": []})["brokers"]] == [("h", 9093)]
    plain = MetadataCache()
    plain.update(2, {"controller_id": 7, "live_brokers": [{"id": 1, "endpoints": [
        {"port": 9093, "host": "h", "security_protocol": 1}, {"port": 9092, "host": "h", "security_protocol": 0}]}]})
    assert [(b["host"], b["port"]) for b in plain.metadata(1, {"topics": []})["brokers"]] == [("h", 9092)]


async def test_a_registration_without_the_listener_is_not_listed(tls_cluster):
    server, cluster = tls_cluster
    admin = server.connect()
    await admin.create("/brokers/ids/9", json.dumps({
        "version": 4, "host": "10.1.1.9", "port": 9099, "jmx_port": -1, "timestamp": "1",
        "endpoints": ["PLAINTEXT://10.1.1.9:9099"], "rack": None,
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}}).encode(), ephemeral=True)
    await cluster.advance()
    assert set(cluster.view.registered) == {1, 2, 3}
    await admin.close()


# ---- (d) reassignd sim's --ssl-* flags ----------------------------------------------------------


def _argv(*extra: str) -> list[str]:
    return ["--zookeeper", ZK, "--brokers", "2", *extra]


@pytest.fixture(scope="module")
def bad_files(pki, tmp_path_factory) -> dict[str, Path]:
    """A file that is not PEM, and a keystore whose key is encrypted with "secret"."""
    root = tmp_path_factory.mktemp("bad-tls-files")
    junk = root / "junk.pem"
    junk.write_text("not a PEM file\n")
    key = root / "encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", str(pki.root / "server.key"), "-aes256", "-passout", "pass:secret",
                    "-out", str(key)], check=True, capture_output=True, timeout=60)
    encrypted = root / "encrypted.pem"
    encrypted.write_text((pki.root / "server.crt").read_text() + key.read_text())
    return {"junk": junk, "encrypted": encrypted, "missing": root / "missing.pem"}


@pytest.mark.parametrize("extra,flag,reason", [
    (("--ssl-keystore", "{missing}"), "--ssl-keystore", "cannot read"),
    (("--ssl-keystore", "{junk}"), "--ssl-keystore", "not a PEM keystore"),
    (("--ssl-keystore", "{ca}"), "--ssl-keystore", "not a PEM keystore"),  # a certificate, no key
    (("--ssl-keystore", "{encrypted}"), "--ssl-key-password", "encrypted"),
    (("--ssl-keystore", "{encrypted}", "--ssl-key-password", "wrong"), "--ssl-key-password", "does not open"),
    (("--ssl-keystore", "{server}", "--ssl-client-auth", "required"), "--ssl-truststore", "needs a truststore"),
    (("--ssl-keystore", "{server}", "--ssl-truststore", "{missing}"), "--ssl-truststore", "cannot read"),
    (("--ssl-keystore", "{server}", "--ssl-truststore", "{junk}"), "--ssl-truststore", "no PEM certificate"),
    (("--ssl-truststore", "{ca}"), "--ssl-truststore", "needs --ssl-keystore"),
    (("--ssl-client-auth", "required"), "--ssl-client-auth", "needs --ssl-keystore"),
    (("--ssl-keystore", "{server}", "--ssl-client-auth", "always"), "--ssl-client-auth", "invalid choice"),
    (("--listener-name", "SSL://x"), "--listener-name", "a listener name"),
])
def test_bad_tls_arguments_exit_2_naming_the_flag(pki, bad_files, extra, flag, reason, capsys):
    files = {"server": pki.server, "ca": pki.ca, **bad_files}
    assert main(_argv(*(e.format(**files) for e in extra))) == 2
    err = capsys.readouterr().err
    assert f"reassignd sim: error: {flag}" in err.replace("argument ", "") and reason in err


def test_good_tls_arguments_make_the_settings(pki, bad_files):
    args = parse_args(_argv("--ssl-keystore", str(bad_files["encrypted"]), "--ssl-key-password", "secret",
                            "--ssl-truststore", str(pki.ca), "--ssl-client-auth", "requested"))
    settings = settings_from(args)
    assert settings.tls == SimTls(keystore=str(bad_files["encrypted"]), key_password="secret",
                                  truststore=str(pki.ca), client_auth="requested")
    assert settings.listener_name == "SSL" and settings.security_protocol == "SSL"
    named = settings_from(parse_args(_argv("--ssl-keystore", str(pki.server), "--listener-name", "INTERNAL")))
    assert named.listener_name == "INTERNAL" and named.tls == SimTls(keystore=str(pki.server))
    plain = settings_from(parse_args(_argv()))
    assert plain.tls is None and plain.listener_name == "PLAINTEXT" and plain.security_protocol == "PLAINTEXT"
    assert settings_from(parse_args(_argv("--listener-name", "INTERNAL"))).listener_name == "INTERNAL"


def test_the_command_exits_2_before_anything_starts(tmp_path):
    """Run as a user would: ZooKeeper is never reached (nothing listens on port 1)."""
    done = subprocess.run([sys.executable, "-m", "reassignd", "sim", "--zookeeper", "127.0.0.1:1", "--brokers", "1",
                           "--ssl-keystore", str(tmp_path / "missing.pem")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--ssl-keystore" in done.stderr and "missing.pem" in done.stderr and "ready" not in done.stdout


@pytest.mark.zk
@pytest.mark.e2e
async def test_the_command_serves_tls_and_registers_ssl_on_real_zookeeper(pki, zk_hosts):
    """``reassignd sim --ssl-keystore`` as a process: its brokers speak TLS, register SSL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reassignd", "sim", "--zookeeper", zk_hosts, "--brokers", "2", "--first-id", "31",
        "--ssl-keystore", str(pki.server), "--log-level", "WARNING",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line, (await proc.stderr.read()).decode()[-2000:]
        brokers = json.loads(line)["brokers"]
        for b, address in brokers.items():
            port = int(address.rsplit(":", 1)[1])
            assert (await _api_versions(port, _client_context(pki)))["error_code"] == 0
            await _refused(port, None)
            zk = await zstore.connect(zk_hosts)
            try:
                reg = json.loads((await zk.get(f"/brokers/ids/{b}"))[0])
            finally:
                await zk.close()
            assert reg["endpoints"] == [f"SSL://{HOST}:{port}"] and reg["listener_security_protocol_map"] == {"SSL": "SSL"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
