"""The admin listener's security protocols over real sockets and a real ZooKeeper: SASL_SSL,
SASL_PLAINTEXT, SSL with client certificates, PLAINTEXT side by side; aiokafka's SASL client
and hand-made frames; credentials in /config/users written as Kafka writes them.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import time

import pytest
from aiokafka.conn import create_conn
from aiokafka.errors import SaslAuthenticationFailed
from aiokafka.protocol.metadata import MetadataRequest

import protocol
from controller.core.config import ControllerConfig
from controller.core.listeners import Listener
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import ListenerLimits
from controller.shell.role import Role
from controller.shell.security import session as S
from controller.shell.security.config import SecurityConfig
from controller.shell.security.listeners import build_listeners
from controller.shell.security.scram import format_credential, make_credential
from protocol.errors import ErrorCode
from tests.security.certs import make_pki
from znodes import users
from znodes.store import connect

pytestmark = [pytest.mark.zk, pytest.mark.timeout(60)]

SPECS = [Listener("SECURE", "127.0.0.1", 0), Listener("SASL_PLAINTEXT", "127.0.0.1", 0),
         Listener("TLS", "127.0.0.1", 0), Listener("PLAINTEXT", "127.0.0.1", 0)]
DELAY_MS = 300


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def security(pki, **extra) -> SecurityConfig:
    props = {
        "listener.security.protocol.map": "SECURE:SASL_SSL,TLS:SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ops,.*$/$1/L,DEFAULT",
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
        "max.connections.per.ip": "6",
        **extra,
    }
    return SecurityConfig.from_properties(props)


class Served:
    def __init__(self, listeners, store):
        self.listeners = {lis.name: lis for lis in listeners}
        self.store = store

    def port(self, name: str) -> int:
        return self.listeners[name].port


@pytest.fixture
async def served(zk_hosts, pki):
    store = await connect(zk_hosts)
    await users.write_credentials(store, "alice", {
        m: format_credential(make_credential(m, "alice-secret")) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")})
    role = Role(101)
    role.store = store
    handler = AdminHandler(AdminContext(role, ControllerConfig()))
    listeners = build_listeners(SPECS, handler, ListenerLimits(), security(pki), role)
    for listener in listeners:
        await listener.start()
    try:
        yield Served(listeners, store)
    finally:
        for listener in listeners:
            await listener.close()
        await store.close()


def client_tls(pki, cert=None, key=None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if cert:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


async def metadata(conn) -> list:
    response = await conn.send(MetadataRequest([]))
    return response.brokers


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
async def test_sasl_ssl_login_then_requests(served, pki, mechanism):
    conn = await create_conn("127.0.0.1", served.port("SECURE"), ssl_context=client_tls(pki),
                             security_protocol="SASL_SSL", sasl_mechanism=mechanism,
                             sasl_plain_username="alice", sasl_plain_password="alice-secret")
    try:
        assert await metadata(conn) == []  # served: no controllers registered in this chroot
    finally:
        conn.close()


async def test_sasl_plaintext_login(served):
    conn = await create_conn("127.0.0.1", served.port("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret")
    try:
        await metadata(conn)
    finally:
        conn.close()


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", "alice-secret")])
async def test_wrong_password_or_user_fails_after_the_delay(served, pki, user, password):
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailed):  # 58, the same for a wrong password and an unknown user
        await create_conn("127.0.0.1", served.port("SECURE"), ssl_context=client_tls(pki),
                          security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                          sasl_plain_username=user, sasl_plain_password=password)
    assert time.monotonic() - started >= DELAY_MS / 1000


# ---- raw frames ------------------------------------------------------------------------------


async def open_raw(port: int, tls: ssl.SSLContext | None = None):
    return await asyncio.open_connection("127.0.0.1", port, ssl=tls)


async def call(reader, writer, key: int, version: int, body: dict, correlation: int = 1):
    writer.write(protocol.encode_request(key, version, correlation, "raw", body))
    await writer.drain()
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    frame = struct.pack(">i", size) + await reader.readexactly(size)
    return protocol.decode_response(key, version, frame)[1]


async def closed(reader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except ConnectionError:
        return True


async def test_unsupported_mechanism_gets_33_and_the_connection_closes(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    answer = await call(reader, writer, 17, 1, {"mechanism": "GSSAPI"})
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert await closed(reader)


async def test_authenticate_before_handshake_is_illegal_sasl_state(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    answer = await call(reader, writer, 36, 1, {"auth_bytes": b"n,,n=alice,r=x"})
    assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert await closed(reader)


async def test_no_authentication_at_all_is_closed_unanswered(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    versions = await call(reader, writer, 18, 0, {})  # ApiVersions is served before the handshake
    assert {17, 36} <= {v["api_key"] for v in versions["api_keys"]}
    writer.write(protocol.encode_request(3, 1, 2, "raw", {"topics": []}))  # Metadata: refused
    await writer.drain()
    assert await closed(reader)


async def test_big_frames_are_refused_before_authentication_only(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    writer.write(struct.pack(">i", S.MAX_UNAUTHENTICATED_REQUEST_BYTES + 1))
    await writer.drain()
    assert await closed(reader)
    reader, writer = await open_raw(served.port("PLAINTEXT"))  # no authentication to wait for
    writer.write(struct.pack(">i", S.MAX_UNAUTHENTICATED_REQUEST_BYTES + 1) + b"\0" * 64)
    await writer.drain()
    assert not await asyncio.wait_for(asyncio.shield(_eof_within(reader, 0.5)), 5)


async def _eof_within(reader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), seconds) == b""
    except TimeoutError:
        return False


async def test_connections_per_address_are_capped(served):
    opened = [await open_raw(served.port("PLAINTEXT")) for _ in range(6)]
    for reader, writer in opened:
        await call(reader, writer, 18, 0, {})
    reader, writer = await open_raw(served.port("PLAINTEXT"))
    assert await closed(reader)
    opened[0][1].close()
    # The slot frees once the server has seen that close: wait for it, not for a fixed 0.2 s
    # that a loaded machine may not honour.
    counts = served.listeners["PLAINTEXT"].addresses
    deadline = time.monotonic() + 10
    while counts.held("127.0.0.1") >= 6:
        assert time.monotonic() < deadline, "the closed connection's slot was never freed"
        await asyncio.sleep(0.01)
    reader, writer = await open_raw(served.port("PLAINTEXT"))
    assert (await call(reader, writer, 18, 0, {}))["error_code"] == 0
    for _, w in opened[1:]:
        w.close()


# ---- SSL -------------------------------------------------------------------------------------


async def test_ssl_principal_from_the_client_certificate(served, pki):
    cert, key = pki.client("alice", "/O=example/OU=ops/CN=Alice")
    seen = []
    listener = served.listeners["TLS"]
    inner = listener.handler.inner

    class Spy:
        def api_versions(self):
            return inner.api_versions()

        async def handle(self, header, body):
            seen.append(S.SESSION_OF())
            return await inner.handle(header, body)

    listener.handler.inner = Spy()
    reader, writer = await open_raw(served.port("TLS"), client_tls(pki, cert, key))
    await call(reader, writer, 18, 0, {})
    assert seen[-1].current_principal() == "User:alice"
    reader, writer = await open_raw(served.port("TLS"), client_tls(pki))  # no certificate: anonymous
    await call(reader, writer, 18, 0, {})
    assert seen[-1].current_principal() == "User:ANONYMOUS"


async def test_untrusted_client_certificate_fails_the_handshake(served, pki):
    cert, key = pki.client("rogue", "/CN=rogue", rogue=True)
    # TLS 1.3: the client's handshake ends before the server checks its certificate, so the
    # refusal shows as an alert or as the server closing before any answer.
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
        reader, writer = await open_raw(served.port("TLS"), client_tls(pki, cert, key))
        await call(reader, writer, 18, 0, {})


async def test_untrusted_server_certificate_is_refused_by_the_client(served, pki):
    with pytest.raises(ssl.SSLError):
        await open_raw(served.port("SECURE"), ssl.create_default_context(cafile=str(pki.rogue_ca)))


# ---- KIP-368 and SaslHandshake v0 -------------------------------------------------------------


# KIP-368's session lifetime for the test below: long enough that a loaded machine's delays
# (a login or a request taking a few hundred ms) stay well inside each margin it checks.
REAUTH_LIFETIME_MS = 3000


async def test_reauthentication_within_the_session_lifetime_then_expiry(served, pki):
    role = Role(102)
    role.store = served.store
    lifetime = REAUTH_LIFETIME_MS / 1000
    config = security(pki, **{"connections.max.reauth.ms": str(REAUTH_LIFETIME_MS)})
    handler = AdminHandler(AdminContext(role, ControllerConfig()))
    (listener,) = build_listeners([Listener("SASL_PLAINTEXT", "127.0.0.1", 0)], handler, ListenerLimits(), config, role)
    await listener.start()
    try:
        reader, writer = await open_raw(listener.port)

        async def login(correlation: int, user: str = "alice", password: str = "alice-secret"):
            assert (await call(reader, writer, 17, 1, {"mechanism": "PLAIN"}, correlation))["error_code"] == 0
            return await call(reader, writer, 36, 1, {"auth_bytes": f"\0{user}\0{password}".encode()}, correlation + 1)

        async def sleep_until(t: float) -> None:
            await asyncio.sleep(max(0.0, t - time.monotonic()))

        first = await login(1)
        first_done = time.monotonic()  # the first session ends by first_done + lifetime
        assert first["error_code"] == 0 and first["session_lifetime_ms"] == REAUTH_LIFETIME_MS
        await sleep_until(first_done + 0.5 * lifetime)
        second_sent = time.monotonic()  # the second session ends no sooner than second_sent + lifetime
        again = await login(3)  # KIP-368: a new exchange on the same connection, same principal
        assert again["error_code"] == 0 and again["session_lifetime_ms"] == REAUTH_LIFETIME_MS
        # Past the first session's end, well before the second's: still valid.
        await sleep_until(first_done + 1.2 * lifetime)
        assert (await call(reader, writer, 18, 0, {}, 5))["error_code"] == 0
        assert time.monotonic() < second_sent + lifetime, "the request came after the second session ended"
        await sleep_until(time.monotonic() + lifetime)  # now past the second session's end
        writer.write(protocol.encode_request(18, 0, 6, "raw", {}))
        await writer.drain()
        assert await closed(reader)
    finally:
        await listener.close()


async def test_sasl_handshake_v0_takes_bare_tokens(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    assert (await call(reader, writer, 17, 0, {"mechanism": "PLAIN"}))["error_code"] == 0
    token = b"\0alice\0alice-secret"
    writer.write(struct.pack(">i", len(token)) + token)  # no Kafka header: v0 framing
    await writer.drain()
    assert await reader.readexactly(4) == struct.pack(">i", 0)  # PLAIN's empty server token
    assert (await call(reader, writer, 18, 0, {}, 2))["error_code"] == 0  # authenticated
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    assert (await call(reader, writer, 17, 0, {"mechanism": "PLAIN"}))["error_code"] == 0
    bad = b"\0alice\0wrong"
    writer.write(struct.pack(">i", len(bad)) + bad)
    await writer.drain()
    assert await closed(reader)  # v0 has no error to send: the connection closes


async def test_required_client_certificate(served, pki):
    role = Role(103)
    role.store = served.store
    config = security(pki, **{"ssl.client.auth": "required"})
    handler = AdminHandler(AdminContext(role, ControllerConfig()))
    (listener,) = build_listeners([Listener("TLS", "127.0.0.1", 0)], handler, ListenerLimits(), config, role)
    await listener.start()
    try:
        cert, key = pki.client("carol", "/O=example/OU=ops/CN=carol")
        reader, writer = await open_raw(listener.port, client_tls(pki, cert, key))
        assert (await call(reader, writer, 18, 0, {}))["error_code"] == 0
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):  # no certificate
            reader, writer = await open_raw(listener.port, client_tls(pki))
            await call(reader, writer, 18, 0, {})
    finally:
        await listener.close()


async def test_listener_name_overrides_give_a_listener_its_own_tls_and_mechanisms(zk_hosts, pki):
    """Kafka's ``listener.name.<name>.*``: OTHER serves a certificate of another CA and PLAIN only;
    SECURE keeps the file's certificate and mechanisms."""
    from aiokafka.errors import UnsupportedSaslMechanismError

    other_cert = pki._leaf("server-other", "/CN=localhost", "rogue-ca", san="subjectAltName=IP:127.0.0.1,DNS:localhost")
    sec = security(pki, **{"listener.security.protocol.map": "SECURE:SASL_SSL,OTHER:SASL_SSL",
                           "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                           "listener.name.other.ssl.keystore.location": str(other_cert),
                           "listener.name.other.sasl.enabled.mechanisms": "PLAIN"})
    store = await connect(zk_hosts)
    await users.write_credentials(store, "alice", {"SCRAM-SHA-512": format_credential(
        make_credential("SCRAM-SHA-512", "alice-secret"))})
    role = Role(101)
    role.store = store
    listeners = build_listeners([Listener("SECURE", "127.0.0.1", 0), Listener("OTHER", "127.0.0.1", 0)],
                                AdminHandler(AdminContext(role, ControllerConfig())), ListenerLimits(), sec, role)
    for listener in listeners:
        await listener.start()
    secure, other = (lis.port for lis in listeners)

    async def login(port, ca, mechanism):
        conn = await create_conn("127.0.0.1", port, ssl_context=client_tls(pki) if ca == "ca" else ssl.create_default_context(
            cafile=str(pki.rogue_ca)), security_protocol="SASL_SSL", sasl_mechanism=mechanism,
            sasl_plain_username="alice", sasl_plain_password="alice-secret")
        try:
            return await metadata(conn)
        finally:
            conn.close()

    try:
        assert await login(secure, "ca", "SCRAM-SHA-512") == []
        assert await login(other, "rogue", "PLAIN") == []  # its own certificate and mechanism
        with pytest.raises(UnsupportedSaslMechanismError):  # 33: not enabled on OTHER
            await login(other, "rogue", "SCRAM-SHA-512")
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            await login(other, "ca", "PLAIN")  # not the file's certificate
        with pytest.raises(UnsupportedSaslMechanismError):  # PLAIN is OTHER's only: SECURE has the file's
            await login(secure, "ca", "PLAIN")
    finally:
        for listener in listeners:
            await listener.close()
        await store.close()
