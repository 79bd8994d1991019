"""The controller's connections to brokers on a secured inter-broker listener
(controller.shell.security.inter_broker, controller.shell.transport.TcpTransport): the settings
as Kafka's broker keys give them, and real logins over real sockets against a SASL_SSL, a
SASL_PLAINTEXT and an SSL listener with required client certificates (the controller's own
listener stack plays the broker: it is the one tested against Kafka's clients elsewhere;
credentials in a real ZooKeeper, as Kafka writes them)."""

from __future__ import annotations

import asyncio

import pytest

from controller.core.config import ControllerConfig
from controller.core.listeners import Listener
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import ListenerLimits
from controller.shell.role import Role
from controller.shell.security.config import SecurityConfig
from controller.shell.security.inter_broker import InterBrokerAuthError, InterBrokerSecurity
from controller.shell.security.listeners import build_listeners
from controller.shell.security.scram import format_credential, make_credential
from controller.shell.transport import TcpTransport
from protocol import ApiKey
from tests.security.certs import make_pki
from znodes import users
from znodes.store import connect

pytestmark = [pytest.mark.timeout(60)]

JAAS = 'org.apache.kafka.common.security.{module} required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _jaas(user="controller", password="controller-secret", module="scram.ScramLoginModule") -> str:
    return JAAS.format(module=module, user=user, password=password)


def _settings(listener: str, **props) -> InterBrokerSecurity:
    return InterBrokerSecurity.from_config(SecurityConfig.from_properties(props), listener)


# ---- the settings --------------------------------------------------------------------------


def test_plaintext_unless_the_map_or_the_name_says_otherwise(pki):
    assert _settings("PLAINTEXT").protocol == "PLAINTEXT"
    assert _settings("INTERNAL").protocol == "PLAINTEXT"  # a name the map does not list: as before
    tls = _settings("INTERNAL", **{"listener.security.protocol.map": "INTERNAL:SSL",
                                   "ssl.truststore.location": str(pki.ca)})
    assert tls.protocol == "SSL" and tls.ssl_context is not None and not tls.sasl
    assert tls.ssl_context.check_hostname
    off = _settings("SSL", **{"ssl.truststore.location": str(pki.ca), "ssl.endpoint.identification.algorithm": ""})
    assert off.protocol == "SSL" and not off.ssl_context.check_hostname


def test_sasl_takes_the_mechanism_and_the_listeners_jaas_credentials(pki):
    s = _settings("INTERNAL", **{
        "listener.security.protocol.map": "INTERNAL:SASL_SSL", "ssl.truststore.location": str(pki.ca),
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": _jaas()})
    assert (s.protocol, s.mechanism, s.username, s.password) == ("SASL_SSL", "SCRAM-SHA-512", "controller", "controller-secret")
    assert "controller-secret" not in repr(s)


@pytest.mark.parametrize("props, words", [
    ({"listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT"}, "GSSAPI is not served"),
    ({"listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN"},
     "listener.name.internal.plain.sasl.jaas.config"),
    ({"listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.internal.plain.sasl.jaas.config": "PlainLoginModule required username=\"x\";"}, "password"),
    ({"listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.internal.plain.sasl.jaas.config": "nonsense"}, "sasl.jaas.config"),
    ({"listener.security.protocol.map": "INTERNAL:SSL", "ssl.truststore.location": "/nonexistent/ca.pem"},
     "TLS settings for the brokers' INTERNAL listener"),
])
def test_bad_settings_are_refused_naming_the_key(props, words):
    with pytest.raises(ValueError, match=None) as err:
        _settings("INTERNAL", **props)
    assert words in str(err.value)


def test_a_per_listener_key_that_is_not_a_setting_is_still_refused():
    with pytest.raises(ValueError, match="not a per-listener setting"):
        SecurityConfig.from_properties({"listener.name.internal.gssapi.sasl.jaas.config": "x"})


# ---- over real sockets -----------------------------------------------------------------------

SPECS = [Listener("SECURE", "127.0.0.1", 0), Listener("SASL_PLAINTEXT", "127.0.0.1", 0),
         Listener("MTLS", "127.0.0.1", 0)]


def _broker_side(pki, reauth_ms: int = 0) -> SecurityConfig:
    return SecurityConfig.from_properties({
        "listener.security.protocol.map": "SECURE:SASL_SSL,MTLS:SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.location": str(pki.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "connection.failed.authentication.delay.ms": "10",
        "connections.max.reauth.ms": str(reauth_ms),
    })


@pytest.fixture
async def brokers(zk_hosts, pki):
    """A 'broker' with the three listeners, its SCRAM users in ZooKeeper; yields name -> port."""
    store = await connect(zk_hosts)
    await users.write_credentials(store, "controller", {
        m: format_credential(make_credential(m, "controller-secret")) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")})
    role = Role(101)
    role.store = store
    listeners = build_listeners(SPECS, AdminHandler(AdminContext(role, ControllerConfig())), ListenerLimits(),
                                _broker_side(pki, reauth_ms=1500), role)
    for listener in listeners:
        await listener.start()
    try:
        yield {lis.name: lis.port for lis in listeners}
    finally:
        for listener in listeners:
            await listener.close()
        await store.close()


async def _ask(port: int, security: InterBrokerSecurity) -> tuple[TcpTransport, dict]:
    transport = TcpTransport(lambda b: ("127.0.0.1", port), security=security)
    answer = await transport.request(7, ApiKey.METADATA, 1, {"topics": []})
    return transport, answer


def _client(listener: str, pki, mechanism: str | None = None, password: str = "controller-secret", **extra):
    props = {"listener.security.protocol.map": "SECURE:SASL_SSL,MTLS:SSL", "ssl.truststore.location": str(pki.ca), **extra}
    if mechanism:
        module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
        props["sasl.mechanism.inter.broker.protocol"] = mechanism
        props[f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"] = _jaas(password=password, module=module)
    return _settings(listener, **props)


@pytest.mark.zk
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
async def test_the_controller_logs_in_over_tls_then_sends_its_requests(brokers, pki, mechanism):
    transport, answer = await _ask(brokers["SECURE"], _client("SECURE", pki, mechanism))
    try:
        assert answer["brokers"] == [] and "topics" in answer  # served after the login
    finally:
        await transport.close()


@pytest.mark.zk
async def test_sasl_plaintext(brokers, pki):
    transport, answer = await _ask(brokers["SASL_PLAINTEXT"], _client("SASL_PLAINTEXT", pki, "SCRAM-SHA-256"))
    await transport.close()
    assert answer["brokers"] == []


@pytest.mark.zk
async def test_a_wrong_password_is_a_connection_error_naming_the_broker(brokers, pki):
    transport = TcpTransport(lambda b: ("127.0.0.1", brokers["SECURE"]),
                             security=_client("SECURE", pki, "SCRAM-SHA-512", password="wrong"))
    with pytest.raises(InterBrokerAuthError, match="broker 7 at 127.0.0.1:.*SASL_AUTHENTICATION_FAILED"):
        await transport.request(7, ApiKey.METADATA, 1, {"topics": []})
    assert isinstance(InterBrokerAuthError("x"), ConnectionError)  # the dispatcher's retry path
    await transport.close()


@pytest.mark.zk
async def test_tls_without_trust_or_without_the_required_certificate_is_refused(brokers, pki, tmp_path):
    untrusted = _settings("MTLS", **{"listener.security.protocol.map": "MTLS:SSL",
                                     "ssl.truststore.location": str(pki.root / "rogue-ca.pem")})
    transport = TcpTransport(lambda b: ("127.0.0.1", brokers["MTLS"]), security=untrusted)
    with pytest.raises(ConnectionError, match="TLS"):
        await transport.request(7, ApiKey.METADATA, 1, {"topics": []})
    await transport.close()
    # Trusted, but the listener requires a client certificate and none is given: refused.
    transport = TcpTransport(lambda b: ("127.0.0.1", brokers["MTLS"]), security=_client("MTLS", pki))
    with pytest.raises((ConnectionError, OSError)):
        await transport.request(7, ApiKey.METADATA, 1, {"topics": []})
    await transport.close()
    # With the controller's certificate (the keystore, as a Kafka broker's is): served.
    cert, key = pki.client("controller", "/CN=controller")
    bundle = tmp_path / "controller.pem"
    bundle.write_text(cert.read_text() + key.read_text())
    transport, answer = await _ask(brokers["MTLS"], _client("MTLS", pki, **{"ssl.keystore.location": str(bundle)}))
    await transport.close()
    assert answer["brokers"] == []


@pytest.mark.zk
async def test_a_session_is_replaced_before_its_lifetime_ends(brokers, pki):
    """KIP-368: the broker gives a session lifetime (connections.max.reauth.ms, 1.5 s here); the
    controller opens and logs in a new connection before it ends, instead of sending on an
    expired one (which the broker closes)."""
    transport, _ = await _ask(brokers["SECURE"], _client("SECURE", pki, "SCRAM-SHA-512"))
    try:
        first = transport._connections[7]
        await asyncio.sleep(1.5 * 0.9)
        answer = await transport.request(7, ApiKey.METADATA, 1, {"topics": []})
        assert answer["brokers"] == [] and transport._connections[7] is not first
    finally:
        await transport.close()


async def test_a_replaced_connection_closes_only_once_its_requests_are_answered():
    """The connection a session replacement leaves keeps carrying what it had in flight: closed
    once that is answered, not cut (controller.shell.transport._retire)."""
    from controller.shell import transport as T

    class Conn:
        in_flight, closed, closes = 2, False, 0

        async def close(self):
            self.closes += 1

    conn = Conn()
    retiring = asyncio.create_task(T._retire(conn))
    await asyncio.sleep(T.RETIRE_POLL_S * 3)
    assert conn.closes == 0 and not retiring.done()
    conn.in_flight = 0
    await asyncio.wait_for(retiring, 1)
    assert conn.closes == 1
