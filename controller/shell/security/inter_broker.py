"""How the controller reaches brokers when their inter-broker listener is secured: TLS and SASL
on the controller's own connections to brokers (LeaderAndIsr, UpdateMetadata, StopReplica,
DescribeLogDirs), as a Kafka controller connects with its broker's ``inter.broker.listener.name``
and ``sasl.mechanism.inter.broker.protocol``.

The listener is the ``broker_listener`` setting (or, left at its default, the security file's
``inter.broker.listener.name`` / ``security.inter.broker.protocol``); its protocol comes from the security file's
``listener.security.protocol.map`` (a listener named after a protocol speaks it; any other name
the map does not list is PLAINTEXT, as before this module). The keys, Kafka's broker keys, each
listener-prefixed key (``listener.name.<listener>.<key>``, the name lower-cased) taking
precedence over the plain one::

    listener.security.protocol.map=INTERNAL:SASL_SSL
    ssl.truststore.location=ca.pem               # PEM CAs the brokers' certificates chain to
                                                 #   (none: the system's default CAs)
    ssl.keystore.location=controller.pem         # certificate + key, shown when a broker asks
    ssl.key.password=...                         #   (ssl.client.auth on its listener)
    ssl.endpoint.identification.algorithm=https  # "" turns the host name check off, as in Kafka
    sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512    # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="controller" password="...";

    security = InterBrokerSecurity.from_config(SecurityConfig.from_file(path), "INTERNAL")
    transport = TcpTransport(endpoint, security=security)   # every connection: TLS, then SASL

Kafka's default mechanism is GSSAPI (Kerberos), which is not served: a SASL listener without
``sasl.mechanism.inter.broker.protocol`` is refused at start, as is a mechanism without its JAAS
credentials. The SASL exchange per connection (Kafka's SaslClientAuthenticator): ApiVersions,
SaslHandshake, then SaslAuthenticate until done; any refusal is :class:`InterBrokerAuthError`
(a ConnectionError: the dispatcher treats the broker as unreachable and retries, as it does a
refused connection) naming the broker and what it said. A session lifetime the broker gives
(KIP-368) is kept: the connection is replaced before it ends.
"""

from __future__ import annotations

import secrets
import ssl
import time
from dataclasses import dataclass, field

from controller.shell.security.config import SecurityConfig
from controller.shell.security.scram import MECHANISMS as SCRAM_MECHANISMS
from controller.shell.security.scram import ScramError, client_exchange
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.properties import parse_jaas

MECHANISM_KEY = "sasl.mechanism.inter.broker.protocol"
PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *sorted(SCRAM_MECHANISMS))
# The versions this client speaks; the broker's ApiVersions answer picks the highest common one.
HANDSHAKE_VERSIONS = (0, 1)  # v0's tokens come bare: only v1 (KIP-152) is spoken here
AUTHENTICATE_VERSIONS = (0, 2)
# A session is replaced at this share of the lifetime the broker gave (KIP-368), so that no
# request is cut by its expiry; Kafka's clients re-authenticate at 85-95% of it.
REAUTH_SHARE = 0.85


class InterBrokerAuthError(ConnectionError):
    """A broker refused the controller's SASL login (or spoke no SASL the controller can)."""


def _props(security: SecurityConfig, listener: str) -> dict[str, str]:
    return {**security.base_props, **security.listener_overrides.get(listener.lower(), {})}


@dataclass(frozen=True)
class InterBrokerSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_config(cls, security: SecurityConfig, listener: str) -> InterBrokerSecurity:
        """The settings for connections to ``listener``; ValueError naming what is wrong."""
        protocol = security.protocol_or_plaintext(listener)
        props = _props(security, listener)
        context = _client_context(props, listener) if protocol in ("SSL", "SASL_SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = props.get(MECHANISM_KEY, "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"{MECHANISM_KEY}={mechanism}: the controller logs in to brokers with "
                             f"{', '.join(MECHANISMS)} only (Kafka's default GSSAPI is not served)")
        key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        own = security.listener_overrides.get(listener.lower(), {}).get(f"{mechanism.lower()}.sasl.jaas.config")
        if not own:
            raise ValueError(f"{key}: the controller's {mechanism} credentials for the brokers' {listener} listener "
                             f"are not set")
        try:
            options = parse_jaas(own)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
        if not options.get("username") or not options.get("password"):
            raise ValueError(f"{key}: needs username=\"...\" and password=\"...\"")
        return cls(protocol, context, mechanism, options["username"], options["password"])

    @property
    def sasl(self) -> bool:
        return self.mechanism is not None

    async def authenticate(self, conn, name: str) -> float | None:
        """Log in on a new connection ``conn`` (protocol_aio.ClientConnection) to ``name`` (a
        broker); returns when the session must be replaced (time.monotonic()), None: never."""
        versions = {a["api_key"]: (a["min_version"], a["max_version"])
                    for a in (await conn.request(ApiKey.API_VERSIONS, 0, {}))["api_keys"]}
        handshake = _common(versions, ApiKey.SASL_HANDSHAKE, (1, HANDSHAKE_VERSIONS[1]), name)
        authenticate = _common(versions, ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSIONS, name)
        answer = await conn.request(ApiKey.SASL_HANDSHAKE, handshake, {"mechanism": self.mechanism})
        if answer["error_code"] != ErrorCode.NONE:
            raise InterBrokerAuthError(f"{name}: SaslHandshake {self.mechanism}: {_code(answer['error_code'])} "
                                       f"(it offers {answer.get('mechanisms')})")
        if self.mechanism == PLAIN:
            tokens = iter([b"\0" + self.username.encode() + b"\0" + self.password.encode()])
            answers = None
        else:
            answers = client_exchange(self.mechanism, self.username, self.password, secrets.token_urlsafe(18))
            tokens = None
        lifetime_ms = 0
        token = next(tokens) if tokens is not None else next(answers)
        while True:
            reply = await conn.request(ApiKey.SASL_AUTHENTICATE, authenticate, {"auth_bytes": token})
            if reply["error_code"] != ErrorCode.NONE:
                raise InterBrokerAuthError(f"{name}: SaslAuthenticate {self.mechanism} as {self.username}: "
                                           f"{_code(reply['error_code'])}: {reply.get('error_message')}")
            lifetime_ms = reply.get("session_lifetime_ms", 0) or lifetime_ms
            if answers is None:
                break
            try:
                token = answers.send(reply["auth_bytes"])
            except StopIteration:
                break
            except ScramError as exc:  # the broker could not prove it knows the credential
                raise InterBrokerAuthError(f"{name}: SCRAM: {exc}") from None
        return time.monotonic() + REAUTH_SHARE * lifetime_ms / 1000 if lifetime_ms > 0 else None


def _common(versions: dict, key: int, ours: tuple[int, int], name: str) -> int:
    theirs = versions.get(key)
    if theirs is None or theirs[1] < ours[0] or theirs[0] > ours[1]:
        raise InterBrokerAuthError(f"{name}: no common version of API {int(key)} (it serves {theirs}, we {ours})")
    return min(theirs[1], ours[1])


def _code(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def _client_context(props: dict[str, str], listener: str) -> ssl.SSLContext:
    """TLS to the brokers: their certificates checked against the truststore (else the system's
    CAs) and, unless ``ssl.endpoint.identification.algorithm`` is empty, their host names; the
    keystore, when set, is the controller's client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    truststore = props.get("ssl.truststore.location")
    try:
        if truststore:
            ctx.load_verify_locations(truststore)
        else:
            ctx.load_default_certs()
        if props.get("ssl.keystore.location"):
            ctx.load_cert_chain(props["ssl.keystore.location"], None, props.get("ssl.key.password") or None)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"TLS settings for the brokers' {listener} listener: {exc}") from None
    ctx.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower() not in ("", "none")
    return ctx
