"""The controller's security settings: a Kafka ``server.properties``-style file
(``reassignd controller --security-config FILE``), with Kafka's names::

    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL   # name -> protocol
    sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
    ssl.keystore.location=server.pem        # PEM: certificate chain and private key (ssl.keystore.type=PEM)
    ssl.key.password=...                    # when the key is encrypted
    ssl.truststore.location=ca.pem          # PEM CA bundle for client certificates
    ssl.client.auth=required                # none | requested | required
    ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/,DEFAULT
    connections.max.reauth.ms=3600000       # KIP-368; 0: sessions never expire
    connection.failed.authentication.delay.ms=100
    max.failed.authentication.rate.per.ip=5   # failed logins a second from one address (a burst of 2 s first)
    max.connections.per.ip=128              # one count across all listeners, taken at accept
    ssl.handshake.timeout.ms=5000           # a TLS handshake not done by then is closed
    authorizer.class.name=kafka.security.authorizer.AclAuthorizer
    super.users=User:admin;User:CN=ops
    allow.everyone.if.no.acl.found=false
    zookeeper.auth.digest=reassignd:secret  # and the other zookeeper.* keys of znodes.security
    zookeeper.set.acl=true
    # Kafka's per-listener overrides (the name lower-cased), each falling back to the key above:
    listener.name.secure.ssl.keystore.location=secure.pem
    listener.name.secure.sasl.enabled.mechanisms=SCRAM-SHA-512

    security = SecurityConfig.from_file("server.properties")    # ValueError names what is bad
    security.protocol_of("SECURE")                               # "SASL_SSL"
    security.for_listener("SECURE").mechanisms                   # {"SCRAM-SHA-512"}

No file: every listener is PLAINTEXT, no authorizer, ZooKeeper unauthenticated (today's
behaviour, which ``make demo`` keeps).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field, replace

from controller.shell.security.principal import Rule, parse_rules
from controller.shell.security.sasl import MECHANISMS
from controller.shell.security.tls import TlsSettings, server_context
from znodes.security import ZkSecurity
from protocol.properties import parse_properties

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
# Kafka's connection.failed.authentication.delay.ms default: slows password guessing without
# holding a socket long.
FAILED_AUTH_DELAY_MS = 100
# Kafka has no default cap per address; here one address may hold a quarter of the listener's
# 512 connections, so one misbehaving client cannot lock every other client out. One count
# across all listeners (Kafka's ConnectionQuotas), taken at accept before any TLS handshake.
MAX_CONNECTIONS_PER_IP = 128
# Kafka has no such bound (its SASL runs on network threads, not beside a controller): failed
# logins a second from one address, after a burst of two seconds' worth (quotas.LoginBudget).
# At Kafka's most expensive credential (16384 iterations, ~10.5 ms of PBKDF2 for PLAIN) one
# address then costs at most ~5% of a core.
FAILED_AUTH_RATE_PER_IP = 5.0
# Kafka has no separate bound either (a stalled handshake waits for connections.max.idle.ms);
# asyncio's own is 60 s. A TLS handshake takes milliseconds: a few seconds is plenty even over
# a slow link, and a connection that never starts one is closed soon.
SSL_HANDSHAKE_TIMEOUT_MS = 5000
DEFAULT_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# Kafka's ``listener.name.<name>.<key>``: the settings a listener may have of its own. The rest
# (the authorizer, super.users, the ZooKeeper keys, max.connections.per.ip, the failed-login
# delay and rate, the TLS handshake timeout) are the instance's: one address's counts and
# budget are shared by every listener.
LISTENER_PREFIX = "listener.name."
PER_LISTENER = (
    "ssl.keystore.location", "ssl.keystore.type", "ssl.key.password", "ssl.truststore.location", "ssl.client.auth",
    "ssl.principal.mapping.rules", "sasl.enabled.mechanisms", "connections.max.reauth.ms",
    # The controller's connections to the brokers' listener of that name (inter_broker.py).
    "ssl.endpoint.identification.algorithm",
)
# ``listener.name.<name>.<mechanism>.sasl.jaas.config``: the credentials the controller logs in to
# brokers with on that listener (controller.shell.security.inter_broker), Kafka's broker key.
JAAS_SUFFIX = ".sasl.jaas.config"


def _int(props: dict[str, str], key: str, default: int, low: int = 0) -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be an integer, not {raw!r}") from None
    if value < low:
        raise ValueError(f"{key} must be at least {low}, not {value}")
    return value


def _positive(props: dict[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{key} must be a positive number, not {raw}")
    return value


LISTENER_NAME_KEY = "inter.broker.listener.name"
PROTOCOL_KEY = "security.inter.broker.protocol"


def _inter_broker_listener(props: dict[str, str]) -> str | None:
    name, protocol = props.get(LISTENER_NAME_KEY, "").strip(), props.get(PROTOCOL_KEY, "").strip()
    if name and protocol:  # Kafka refuses the pair at start (KafkaConfig's validation) too
        raise ValueError(f"only one of {LISTENER_NAME_KEY} and {PROTOCOL_KEY} may be set")
    if protocol and protocol.upper() not in PROTOCOLS:
        raise ValueError(f"{PROTOCOL_KEY}: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    return (name or protocol).upper() or None  # listener names compare upper-cased, as Kafka's ListenerName


@dataclass(frozen=True)
class SecurityConfig:
    protocol_map: dict[str, str] = field(default_factory=dict)
    mechanisms: frozenset[str] = frozenset(DEFAULT_MECHANISMS)
    tls: TlsSettings | None = None
    mapping_rules: tuple[Rule, ...] = (Rule(None),)
    reauth_ms: int = 0
    failed_auth_delay_ms: int = FAILED_AUTH_DELAY_MS
    max_connections_per_ip: int = MAX_CONNECTIONS_PER_IP
    failed_auth_rate_per_ip: float = FAILED_AUTH_RATE_PER_IP
    ssl_handshake_timeout_ms: int = SSL_HANDSHAKE_TIMEOUT_MS
    authorizer: bool = False
    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False
    zk: ZkSecurity = field(default_factory=ZkSecurity)
    # listener name (lower case) -> its listener.name.<name>.* settings; and the file's other keys,
    # which those fall back to.
    listener_overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    base_props: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def inter_broker_listener(self) -> str | None:
        """The brokers' listener as the file names it, Kafka's way: ``inter.broker.listener.name``,
        or ``security.inter.broker.protocol`` (the listener named after the protocol); None when
        neither is set (the ``broker_listener`` setting decides: controller.shell.options)."""
        return _inter_broker_listener(self.base_props)

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> SecurityConfig:
        base, overrides = {}, {}
        for key, value in props.items():
            if not key.startswith(LISTENER_PREFIX):
                base[key] = value
                continue
            name, dot, setting = key[len(LISTENER_PREFIX):].partition(".")
            jaas = setting.endswith(JAAS_SUFFIX) and setting[:-len(JAAS_SUFFIX)].upper() in MECHANISMS
            if not (name and dot) or (setting not in PER_LISTENER and not jaas):
                raise ValueError(f"{key}: not a per-listener setting (listener.name.<name>.<key>, the key one of "
                                 f"{', '.join(PER_LISTENER)}, or <mechanism>{JAAS_SUFFIX})")
            overrides.setdefault(name.lower(), {})[setting] = value
        _inter_broker_listener(base)  # checked at start, as the rest
        for name, own in overrides.items():  # each listener's settings are checked at start, as the rest
            try:
                cls._from_base({**base, **own})
            except ValueError as exc:
                raise ValueError(f"{LISTENER_PREFIX}{name}.*: {exc}") from None
        return replace(cls._from_base(base), listener_overrides=overrides, base_props=base)

    def for_listener(self, listener_name: str) -> SecurityConfig:
        """The settings of listener ``listener_name``: its ``listener.name.<name>.*`` keys over the
        file's (Kafka's rule: the name matched lower-cased, each key falling back on its own)."""
        own = self.listener_overrides.get(listener_name.lower())
        if not own:
            return self
        return replace(self._from_base({**self.base_props, **own}), listener_overrides=self.listener_overrides,
                       base_props=self.base_props)

    @classmethod
    def _from_base(cls, props: dict[str, str]) -> SecurityConfig:
        protocol_map = {}
        for item in filter(None, (p.strip() for p in props.get("listener.security.protocol.map", "").split(","))):
            name, sep, protocol = item.partition(":")
            if not sep or protocol.upper() not in PROTOCOLS:
                raise ValueError(f"listener.security.protocol.map: {item!r} is not NAME:{'|'.join(PROTOCOLS)}")
            protocol_map[name.strip().upper()] = protocol.upper()
        mechanisms = frozenset(
            m.strip() for m in props.get("sasl.enabled.mechanisms", ",".join(DEFAULT_MECHANISMS)).split(",") if m.strip()
        )
        unknown = mechanisms - MECHANISMS
        if unknown:
            raise ValueError(f"sasl.enabled.mechanisms: {sorted(unknown)} not supported (only {sorted(MECHANISMS)})")
        tls = None
        if props.get("ssl.keystore.location"):
            if props.get("ssl.keystore.type", "PEM").upper() != "PEM":
                raise ValueError("ssl.keystore.type: only PEM files are read")
            tls = TlsSettings(
                keystore=props["ssl.keystore.location"],
                key_password=props.get("ssl.key.password") or None,
                truststore=props.get("ssl.truststore.location") or None,
                client_auth=props.get("ssl.client.auth", "none").lower(),
            )
        authorizer_name = props.get("authorizer.class.name", "").strip()
        if authorizer_name not in ("", AUTHORIZER):
            raise ValueError(f"authorizer.class.name: only {AUTHORIZER} (Kafka's ZooKeeper ACLs) is served")
        allow = props.get("allow.everyone.if.no.acl.found", "false").strip().lower()
        if allow not in ("true", "false"):
            raise ValueError("allow.everyone.if.no.acl.found must be true or false")
        super_users = frozenset(u.strip() for u in props.get("super.users", "").split(";") if u.strip())
        for user in super_users:
            if ":" not in user:
                raise ValueError(f"super.users: {user!r} is not PrincipalType:name (User:alice)")
        return cls(
            protocol_map=protocol_map,
            mechanisms=mechanisms,
            tls=tls,
            mapping_rules=tuple(parse_rules(props.get("ssl.principal.mapping.rules", "DEFAULT"))),
            reauth_ms=_int(props, "connections.max.reauth.ms", 0),
            failed_auth_delay_ms=_int(props, "connection.failed.authentication.delay.ms", FAILED_AUTH_DELAY_MS),
            max_connections_per_ip=_int(props, "max.connections.per.ip", MAX_CONNECTIONS_PER_IP, low=1),
            failed_auth_rate_per_ip=_positive(props, "max.failed.authentication.rate.per.ip", FAILED_AUTH_RATE_PER_IP),
            ssl_handshake_timeout_ms=_int(props, "ssl.handshake.timeout.ms", SSL_HANDSHAKE_TIMEOUT_MS, low=1),
            authorizer=bool(authorizer_name),
            super_users=super_users,
            allow_if_no_acl=allow == "true",
            zk=ZkSecurity.from_properties(props),
        )

    @classmethod
    def from_file(cls, path: str | None) -> SecurityConfig:
        if not path:
            return cls()
        with open(path, encoding="utf-8") as f:
            return cls.from_properties(parse_properties(f.read()))

    def protocol_of(self, listener_name: str) -> str:
        """Kafka's rule: the map's entry, else a listener named after a protocol speaks it."""
        protocol = self.protocol_map.get(listener_name)
        if protocol is None:
            if listener_name not in PROTOCOLS:
                raise ValueError(f"listener {listener_name} is not in listener.security.protocol.map")
            protocol = listener_name
        return protocol

    def protocol_or_plaintext(self, listener_name: str) -> str:
        """:meth:`protocol_of`, with a name neither the map nor the protocols know speaking
        PLAINTEXT (a broker listener named INTERNAL before any security file existed)."""
        name = listener_name.upper()
        return self.protocol_map.get(name, name if name in PROTOCOLS else "PLAINTEXT")

    def ssl_context(self, protocol: str) -> ssl.SSLContext | None:
        if protocol not in ("SSL", "SASL_SSL"):
            return None
        if self.tls is None:
            raise ValueError(f"a {protocol} listener needs ssl.keystore.location")
        return server_context(self.tls)
