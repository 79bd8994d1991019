"""ZooKeeper security for the controller and every project command, with Kafka's settings
(below the controller, beside the store: the launcher's ``secure-acls`` uses it too).

A properties file (``--zk-config FILE``, or the keys inside the controller's
``--security-config``) may say::

    zookeeper.auth.digest=reassignd:s3cret       # the session's identity (zkCli's `addauth digest`)
    zookeeper.sasl.jaas.config=org.apache.zookeeper.server.auth.DigestLoginModule required \
        username="reassignd" password="s3cret";  # or SASL (DIGEST-MD5), Kafka's JAAS Client section
    zookeeper.set.acl=true                       # secure ACLs on every znode created
    zookeeper.ssl.client.enable=true             # TLS to ZooKeeper
    zookeeper.ssl.truststore.location=ca.pem     # PEM CA bundle
    zookeeper.ssl.keystore.location=client.pem   # PEM client certificate (and key)
    zookeeper.ssl.key.location=client.key        # its key, when not in the certificate file
    zookeeper.ssl.endpoint.identification.algorithm=HTTPS   # Kafka's default: check the server's name

TLS to ZooKeeper always verifies the server's certificate (against the truststore, else the
system's CAs) and, unless ``zookeeper.ssl.endpoint.identification.algorithm`` is set empty
(Kafka's way to turn it off, logged as a warning), that it names the host connected to: a
session's first request carries its credentials, so an unverified server would receive them.

Secure ACLs are Kafka's (``ZkData.defaultAcls``): the creator (the digest identity
``digest:user:hash``, the SASL one ``sasl:user``, or both) may do everything, and everyone may read, except under the sensitive roots Kafka keeps unreadable
(``/config/users`` holds SCRAM credentials, ``/config/brokers`` may hold passwords)::

    zk = ZkSecurity.from_properties(props)
    store = await zk.connect("127.0.0.1:2181/kafka", create_chroot=True)

``znodes.secure_paths.migrate`` is Kafka's ``zookeeper-security-migration`` (``--zookeeper.acl
secure|unsecure``, run by ``reassignd zk secure-acls``): it creates the paths the service trusts
that are missing, then walks the tree (``/zookeeper`` excepted) and sets each znode's ACL to the
secure one, or back to world-writable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kazoo.security import ACL, Id, Permissions, make_digest_acl

from protocol.properties import parse_properties
from znodes import decoy_secret

log = logging.getLogger("reassignd.zookeeper")

# Kafka's ZkData.sensitiveRootPaths: never world-readable under zookeeper.set.acl.
# Kafka's, and the service's SCRAM decoy secret (znodes.decoy_secret: whoever reads it can tell
# unknown user names from known ones again).
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token", decoy_secret.PATH)
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
# Kafka's zookeeper.ssl.endpoint.identification.algorithm: HTTPS (its default) checks the
# server's hostname, an empty value does not; Kafka knows no other.
HOSTNAME_KEY = "zookeeper.ssl.endpoint.identification.algorithm"
HOSTNAME_CHECK = "HTTPS"


def _flag(props: dict[str, str], key: str) -> bool:
    value = props.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return value == "true"


def sensitive(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)


@dataclass(frozen=True)
class ZkSecurity:
    digest: tuple[str, str] | None = None  # (user, password)
    sasl: tuple[str, str] | None = None  # (user, password) for SASL DIGEST-MD5 (kazoo with pure-sasl)
    set_acl: bool = False
    use_ssl: bool = False
    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    check_hostname: bool = True

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> ZkSecurity:
        digest = None
        if props.get("zookeeper.auth.digest"):
            user, sep, password = props["zookeeper.auth.digest"].partition(":")
            if not (sep and user and password):
                raise ValueError("zookeeper.auth.digest must be USER:PASSWORD")
            digest = (user, password)
        sasl = None
        if props.get("zookeeper.sasl.jaas.config"):
            from protocol.properties import parse_jaas

            options = parse_jaas(props["zookeeper.sasl.jaas.config"])
            if not options.get("username") or not options.get("password"):
                raise ValueError("zookeeper.sasl.jaas.config needs username and password (DigestLoginModule)")
            sasl = (options["username"], options["password"])
        set_acl = _flag(props, "zookeeper.set.acl")
        if set_acl and digest is None and sasl is None:
            # Kafka refuses this too: secure ACLs need an identity to grant the writes to.
            raise ValueError("zookeeper.set.acl=true needs zookeeper.auth.digest or zookeeper.sasl.jaas.config "
                             "(the identity the ACLs grant)")
        use_ssl = _flag(props, "zookeeper.ssl.client.enable")
        for key in props:  # a near miss must not leave the check on while its writer believes it off, or the reverse
            if key.startswith("zookeeper.ssl.endpoint.identification.") and key != HOSTNAME_KEY:
                raise ValueError(f"{key} is not a Kafka setting: {HOSTNAME_KEY} is ({HOSTNAME_CHECK}, the default, "
                                 f"checks the ZooKeeper server's hostname; empty does not)")
        algorithm = props.get(HOSTNAME_KEY, HOSTNAME_CHECK).strip()
        if algorithm.upper() not in (HOSTNAME_CHECK, ""):
            raise ValueError(f"{HOSTNAME_KEY} must be {HOSTNAME_CHECK} or empty (no hostname check), not {algorithm!r}")
        check_hostname = algorithm != ""
        return cls(
            digest=digest,
            sasl=sasl,
            set_acl=set_acl,
            check_hostname=check_hostname,
            use_ssl=use_ssl,
            ca=props.get("zookeeper.ssl.truststore.location"),
            certfile=props.get("zookeeper.ssl.keystore.location"),
            keyfile=props.get("zookeeper.ssl.key.location"),
        )

    @classmethod
    def from_file(cls, path: str | None) -> ZkSecurity:
        if not path:
            return cls()
        with open(path, encoding="utf-8") as f:
            return cls.from_properties(parse_properties(f.read()))

    def client_options(self) -> dict:
        options: dict = {}
        if self.digest is not None:
            options["auth_data"] = [("digest", f"{self.digest[0]}:{self.digest[1]}")]
        if self.sasl is not None:
            options["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": self.sasl[0], "password": self.sasl[1]}
        if self.use_ssl:
            if not self.check_hostname:  # said at every session: the setting is a standing risk
                log.warning("%s is empty: the ZooKeeper server's certificate is verified but not its hostname; "
                            "any server with a certificate from a trusted CA can receive this session's "
                            "credentials", HOSTNAME_KEY)
            # Always verified: without a truststore, against the system's CAs (kazoo loads them).
            options.update(use_ssl=True, verify_certs=True, check_hostname=self.check_hostname, ca=self.ca,
                           # kazoo loads a client certificate only given both; a PEM keystore holds both
                           certfile=self.certfile, keyfile=self.keyfile or self.certfile)
        return options

    def acl_for(self, path: str) -> list[ACL]:
        """Kafka's secure ACL of ``path``: all to the service's identity, read to everyone
        outside the sensitive roots."""
        owners = []
        if self.digest is not None:
            owners.append(make_digest_acl(self.digest[0], self.digest[1], all=True))
        if self.sasl is not None:
            owners.append(ACL(Permissions.ALL, Id("sasl", self.sasl[0])))
        assert owners, "secure ACLs need an identity"
        return owners if sensitive(path) else [*owners, WORLD_READ]

    async def connect(self, hosts: str, **kwargs):
        from znodes.store import connect

        return await connect(
            hosts, client_options=self.client_options(), acl_for=self.acl_for if self.set_acl else None, **kwargs
        )


def auth_hint(error: BaseException, security: ZkSecurity) -> str:
    """What to do about ``error`` when ZooKeeper refused the session for its credentials (the
    store names kazoo's SessionClosedRequireSaslError, NoAuthError, AuthFailedError), for a
    command's message; "" for any other error."""
    text = f"{type(error).__name__}: {error}"
    if not any(k in text for k in ("RequireSasl", "NoAuth", "AuthFailed")):
        return ""
    if security.digest is None and security.sasl is None:
        return (" (ZooKeeper requires authentication: give --zk-config FILE with zookeeper.auth.digest "
                "or zookeeper.sasl.jaas.config)")
    return " (ZooKeeper refused the --zk-config identity)"


async def connect_secured(hosts: str, zk_config: str | None, **kwargs):
    """A store on ``hosts`` with the ZooKeeper security of the ``zk_config`` properties file."""
    return await ZkSecurity.from_file(zk_config).connect(hosts, **kwargs)
