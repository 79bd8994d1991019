"""The controller's admin listeners: one :class:`AdminListener` per ``--listen`` entry, each
with its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)::

    security = SecurityConfig.from_file(settings.security_config)
    listeners = build_listeners(parse_listeners(settings.listen), handler, limits, security, role)
    for listener in listeners:
        await listener.start()

Every listener serves the same admin handler; SASL listeners wrap it in a SecureHandler whose
credentials are read from the instance's current ZooKeeper session (``/config/users``), and an
unknown user's made-up SCRAM answer comes from the service's one decoy secret
(znodes.decoy_secret), the same on every instance and after restarts. Each
listener's TLS, mechanisms, mapping rules and re-authentication bound are its own
``listener.name.<name>.*`` settings over the file's (``SecurityConfig.for_listener``).

What one client address may hold and spend is counted once for all of them: its connections
(``max.connections.per.ip``, taken at accept before any TLS handshake) and its failed logins
(``max.failed.authentication.rate.per.ip``); PLAIN's key derivations share one small pool.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from controller.core.listeners import Listener
from controller.shell.authorizer import Authorizer
from controller.shell.listener import AdminListener, ListenerLimits
from controller.shell.security.config import SecurityConfig
from controller.shell.security.kdf import KeyDerivations
from controller.shell.security.quotas import AddressCounts, LoginBudget
from controller.shell.security.session import SecureHandler, read_credentials, session_factory
from znodes import decoy_secret as decoy_secret_znode

log = logging.getLogger("reassignd.security")


def build_listeners(
    specs: list[Listener], handler, limits: ListenerLimits, security: SecurityConfig, role
) -> list[AdminListener]:
    async def credentials(user: str):
        store = role.store
        if store is None:
            raise ConnectionError("no ZooKeeper session")
        return await read_credentials(store, user)

    secret: list[bytes] = []  # the service's decoy secret once read (it never changes)

    async def decoy_secret() -> bytes | None:
        if not secret:
            store = role.store
            if store is None:
                return None  # no ZooKeeper: nobody can log in, the process's own secret answers
            try:
                secret.append(await decoy_secret_znode.read_or_create(store))
            except Exception as e:
                log.warning("the SCRAM decoy secret (%s) is unusable, this process's own answers: %r",
                            decoy_secret_znode.PATH, e)
                return None
        return secret[0]

    limits = replace(limits, max_connections_per_address=security.max_connections_per_ip,
                     handshake_timeout_s=security.ssl_handshake_timeout_ms / 1000)
    addresses = AddressCounts(security.max_connections_per_ip)  # one count across the listeners
    logins = LoginBudget(security.failed_auth_rate_per_ip)
    kdf = KeyDerivations()
    ctx = getattr(handler, "ctx", None)
    if security.authorizer and ctx is not None:
        ctx.authorizer = Authorizer(role, super_users=security.super_users, allow_if_no_acl=security.allow_if_no_acl)
    out = []
    for spec in specs:
        protocol = security.protocol_of(spec.name)
        own = security.for_listener(spec.name)  # its listener.name.<name>.* settings (TLS, mechanisms)
        listener = AdminListener(
            spec.host,
            spec.port,
            SecureHandler(handler, protocol, own, credentials=credentials, logins=logins, kdf=kdf,
                          decoy_secret=decoy_secret),
            limits=limits,
            ssl=own.ssl_context(protocol),
            session_factory=session_factory(spec.name, protocol, own),
            addresses=addresses,
        )
        listener.name, listener.protocol = spec.name, protocol
        out.append(listener)
    return out
