"""Client security from Kafka's client properties (``--command-config FILE``, as Kafka's tools
take it): TLS and SASL for the admin listener, digest and TLS for ZooKeeper.

    security = ClientSecurity.from_file("client.properties")
    async with AdminClient("host:9193", security=security) as admin: ...

Keys (Java client names, with librdkafka's where they differ)::

    security.protocol=SASL_SSL                    # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism=SCRAM-SHA-512                  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="alice" password="alice-secret";
    sasl.username=alice / sasl.password=...       # librdkafka's form of the same
    ssl.truststore.location=ca.pem                # PEM (or ssl.ca.location)
    ssl.keystore.location=client.pem              # client certificate PEM (or ssl.certificate.location)
    ssl.key.location=client.key                   # its key, when not in that file
    ssl.key.password=...
    ssl.endpoint.identification.algorithm=https   # "" turns the host name check off, as in Kafka
    zookeeper.auth.digest=user:password           # and the other zookeeper.* keys of znodes.security

aiokafka's connection does the SASL exchange and the TLS; this module only builds its
arguments. A bad file raises :class:`client.errors.InputError` naming the key.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from client.errors import InputError
from protocol.properties import parse_jaas, parse_properties

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    key_password: str | None = None
    check_hostname: bool = True
    zookeeper: dict = field(default_factory=dict)  # the zookeeper.* keys, for znodes.security

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = "--command-config") -> ClientSecurity:
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise InputError(f"security.protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}", source)
        mechanism = username = password = None
        if protocol.startswith("SASL_"):
            mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "PLAIN")).upper()
            if mechanism not in MECHANISMS:
                raise InputError(f"sasl.mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}", source)
            username, password = props.get("sasl.username"), props.get("sasl.password")
            if props.get("sasl.jaas.config"):
                try:
                    options = parse_jaas(props["sasl.jaas.config"])
                except ValueError as e:
                    raise InputError(str(e), source) from None
                username, password = options.get("username", username), options.get("password", password)
            if not username or not password:
                raise InputError("SASL needs a user name and password (sasl.jaas.config or sasl.username/sasl.password)",
                                 source)
        return cls(
            protocol=protocol,
            mechanism=mechanism,
            username=username,
            password=password,
            cafile=props.get("ssl.truststore.location") or props.get("ssl.ca.location") or None,
            certfile=props.get("ssl.keystore.location") or props.get("ssl.certificate.location") or None,
            keyfile=props.get("ssl.key.location") or None,
            key_password=props.get("ssl.key.password") or None,
            check_hostname=props.get("ssl.endpoint.identification.algorithm", "https").strip().lower() not in ("", "none"),
            zookeeper={k: v for k, v in props.items() if k.startswith("zookeeper.")},
        )

    @classmethod
    def from_file(cls, path: str | None) -> ClientSecurity:
        if not path:
            return cls()
        try:
            with open(path, encoding="utf-8") as f:
                props = parse_properties(f.read())
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}", "--command-config") from None
        except ValueError as e:
            raise InputError(f"{path}: {e}", "--command-config") from None
        return cls.from_properties(props)

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.protocol not in ("SSL", "SASL_SSL"):
            return None
        try:
            ctx = ssl.create_default_context(cafile=self.cafile)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.check_hostname = self.check_hostname
            if self.certfile:
                ctx.load_cert_chain(self.certfile, self.keyfile, self.key_password)
        except (OSError, ssl.SSLError) as e:
            raise InputError(f"TLS files: {e}", "--command-config") from None
        return ctx

    def connection_kwargs(self) -> dict:
        """aiokafka ``create_conn`` arguments."""
        kwargs: dict = {"security_protocol": self.protocol}
        ctx = self.ssl_context()
        if ctx is not None:
            kwargs["ssl_context"] = ctx
        if self.mechanism is not None:
            kwargs.update(sasl_mechanism=self.mechanism, sasl_plain_username=self.username,
                          sasl_plain_password=self.password)
        return kwargs

    def zk_security(self):
        from znodes.security import ZkSecurity

        try:
            return ZkSecurity.from_properties(self.zookeeper)
        except ValueError as e:
            raise InputError(str(e), "--command-config") from None
