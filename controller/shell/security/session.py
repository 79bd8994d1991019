"""One connection's security, and the handler that enforces it on a listener.

The listener (controller.shell.listener) makes a :class:`Session` per accepted connection with
the session factory built here, and puts it in ``listener.SESSION`` for every request task of
that connection; :class:`SecureHandler` wraps the admin handler::

    security = SecurityConfig.from_file("server.properties")
    handler = SecureHandler(AdminHandler(ctx), "SASL_SSL", security, credentials=read_creds)
    listener = AdminListener(host, port, handler, ssl=security.ssl_context("SASL_SSL"),
                             session_factory=session_factory("SECURE", "SASL_SSL", security))

What a request meets, in order (Kafka's SaslServerAuthenticator and SocketServer):

 1. SASL listeners: before authentication only ApiVersions (before the handshake), SaslHandshake
    (17) and SaslAuthenticate (36) are served; anything else closes the connection unanswered,
    and requests are read one at a time and no bigger than 512 KiB
    (:data:`MAX_UNAUTHENTICATED_REQUEST_BYTES`).
 2. A failed step (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE)
    is answered after ``connection.failed.authentication.delay.ms`` (KIP-306), then the
    connection closes. Each exchange's first SaslAuthenticate takes one of its address's
    login tokens (``max.failed.authentication.rate.per.ip``, shared by the listeners); a
    successful exchange gives it back; an address without one is refused
    (SASL_AUTHENTICATION_FAILED) without its credentials being read or derived. PLAIN's
    password check (PBKDF2) runs in controller.shell.security.kdf's pool, never on the loop,
    and an unknown user costs the same derivation as a known one.
 3. A session past ``connections.max.reauth.ms`` that has not re-authenticated (KIP-368) may send
    only a new SaslHandshake; anything else closes the connection.
 4. SSL: the principal is the client certificate's subject through
    ``ssl.principal.mapping.rules`` (``User:ANONYMOUS`` without a certificate); a subject no rule
    maps closes the connection at its first request.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable

from controller.shell.listener import SESSION
from controller.shell.security.config import SecurityConfig
from controller.shell.security.principal import ANONYMOUS, PrincipalError, distinguished_name, map_dn
from controller.shell.security.kdf import KeyDerivations
from controller.shell.security.quotas import LoginBudget
from controller.shell.security.sasl import PLAIN, SaslError, SaslServer
from controller.shell.security.scram import ScramCredential
from protocol import ApiKey, wire_limits
from protocol.errors import ErrorCode

log = logging.getLogger("reassignd.security")

# What an unauthenticated client may send (protocol.wire_limits has the reason).
MAX_UNAUTHENTICATED_REQUEST_BYTES = wire_limits.MAX_PRE_AUTH_FRAME.value
# SaslHandshake v0: the tokens that follow are bare frames without Kafka headers (the listener
# hands them to SecureHandler.raw_token); v1: they come as SaslAuthenticate requests (KIP-152).
SASL_HANDSHAKE_VERSIONS = (0, 1)
SASL_AUTHENTICATE_VERSIONS = (0, 2)
# The answer to an address over its failed-login rate: no password was checked.
LOGINS_SPENT = "Authentication failed: too many failed authentications from this address, retry later"

Credentials = Callable[[str], Awaitable[dict[str, ScramCredential]]]
DecoySecret = Callable[[], Awaitable[bytes | None]]


def SESSION_OF() -> Session | None:  # noqa: N802 - reads like the context variable it is
    """The session of the connection the current request came on (None without one)."""
    return SESSION.get()


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class Session:
    """Who is on one connection, and how far its authentication got."""

    def __init__(self, listener: str, protocol: str, host: str, security: SecurityConfig, peercert: dict | None):
        self.listener = listener
        self.protocol = protocol
        self.host = host  # the client's address, what ACL hosts match
        self.closing = False  # set: the listener closes the connection after this answer
        self.charged = False  # this exchange has taken its address's login token
        self.raw_tokens = False  # after SaslHandshake v0: bare SASL tokens until authenticated
        self.sasl = (
            SaslServer(security.mechanisms, reauth_ms=security.reauth_ms, nonce=lambda: secrets.token_urlsafe(24))
            if protocol.startswith("SASL_")
            else None
        )
        self.principal: str | None = ANONYMOUS
        if protocol == "SSL" and peercert:
            dn = distinguished_name(peercert.get("subject"))
            try:
                self.principal = f"User:{map_dn(dn, list(security.mapping_rules))}"
            except PrincipalError as e:
                log.warning("TLS client %s: %s", host, e)
                self.principal = None

    @property
    def authenticated(self) -> bool:
        if self.sasl is not None:
            return self.sasl.authenticated
        return self.principal is not None

    def current_principal(self) -> str | None:
        return self.sasl.principal if self.sasl is not None else self.principal

    def request_bytes_limit(self, limit: int) -> int:
        return limit if self.authenticated else min(limit, MAX_UNAUTHENTICATED_REQUEST_BYTES)


def session_factory(listener: str, protocol: str, security: SecurityConfig):
    def make(peer, peercert: dict | None) -> Session:
        host = peer[0] if isinstance(peer, tuple) else str(peer)
        return Session(listener, protocol, host, security, peercert)

    return make


class SecureHandler:
    """The wrapped handler's API table plus SASL, served only to who may use it."""

    def __init__(self, inner, protocol: str, security: SecurityConfig, *, credentials: Credentials,
                 logins: LoginBudget | None = None, kdf: KeyDerivations | None = None,
                 decoy_secret: DecoySecret | None = None):
        self.inner = inner
        self.protocol = protocol
        self.security = security
        self._credentials = credentials
        # The service's secret for unknown users' SCRAM answers (znodes.decoy_secret); None:
        # this process's own, which tells unknown names apart across instances and restarts.
        self._decoy_secret = decoy_secret
        # Both shared by an instance's listeners (build_listeners), else this handler's own.
        self.logins = logins or LoginBudget(security.failed_auth_rate_per_ip)
        self.kdf = kdf or KeyDerivations()
        self._sasl = protocol.startswith("SASL_")

    @property
    def ctx(self):  # the daemon fills in the bound address through it
        return getattr(self.inner, "ctx", None)

    def __getattr__(self, name):  # the wrapped handler's other attributes (its API table)
        return getattr(self.inner, name)

    def api_versions(self) -> list[dict]:
        versions = self.inner.api_versions()
        if self._sasl:
            versions += [
                {"api_key": ApiKey.SASL_HANDSHAKE, "min_version": SASL_HANDSHAKE_VERSIONS[0], "max_version": SASL_HANDSHAKE_VERSIONS[1]},
                {"api_key": ApiKey.SASL_AUTHENTICATE, "min_version": SASL_AUTHENTICATE_VERSIONS[0],
                 "max_version": SASL_AUTHENTICATE_VERSIONS[1]},
            ]
            versions.sort(key=lambda v: v["api_key"])
        return versions

    async def handle(self, header: dict, body: dict) -> dict | None:
        session: Session | None = SESSION.get()
        if session is None:
            return await self.inner.handle(header, body)
        key, version = header["request_api_key"], header["request_api_version"]
        sasl = session.sasl
        if sasl is not None and key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            low, high = SASL_HANDSHAKE_VERSIONS if key == ApiKey.SASL_HANDSHAKE else SASL_AUTHENTICATE_VERSIONS
            if not low <= version <= high:
                return None
            if key == ApiKey.SASL_HANDSHAKE:
                return await self._handshake(session, body, version)
            return await self._authenticate(session, body)
        if sasl is not None and sasl.expired(_now_ms()):
            log.info("closing connection of %s from %s: session expired without re-authentication",
                     sasl.principal, session.host)
            return None
        if key == ApiKey.API_VERSIONS and (session.authenticated or (sasl is not None and sasl.state == "handshake")):
            answer = await self.inner.handle(header, body)
            if isinstance(answer, dict) and "api_keys" in answer:  # the SASL APIs too
                answer = {**answer, "api_keys": self.api_versions()}
            return answer
        if not session.authenticated:
            log.info("closing %s connection from %s: API %d before authentication", self.protocol, session.host, key)
            return None
        return await self.inner.handle(header, body)

    def error_response(self, header: dict, body: dict, code: ErrorCode, message: str | None) -> dict | None:
        if header["request_api_key"] == ApiKey.SASL_HANDSHAKE:
            return {"error_code": int(code), "mechanisms": sorted(self.security.mechanisms)}
        if header["request_api_key"] == ApiKey.SASL_AUTHENTICATE:
            return {"error_code": int(code), "error_message": message, "auth_bytes": b"", "session_lifetime_ms": 0}
        fallback = getattr(self.inner, "error_response", None)
        return None if fallback is None else fallback(header, body, code, message)

    async def _refuse(self, session: Session, e: SaslError) -> None:
        log.info("%s authentication from %s failed: %s", self.protocol, session.host, e.log)
        session.closing = True
        await asyncio.sleep(self.security.failed_auth_delay_ms / 1000)

    async def _handshake(self, session: Session, body: dict, version: int) -> dict:
        mechanisms = sorted(self.security.mechanisms)
        try:
            if version == 0 and session.sasl.state == "authenticated":
                # KIP-368: re-authentication needs SaslAuthenticate framing (v1+).
                raise SaslError(ErrorCode.ILLEGAL_SASL_STATE, "Re-authentication needs SaslHandshake v1")
            session.sasl.handshake(body["mechanism"])
        except SaslError as e:
            await self._refuse(session, e)
            return {"error_code": int(e.code), "mechanisms": mechanisms}
        session.raw_tokens = version == 0
        return {"error_code": 0, "mechanisms": mechanisms}

    async def raw_token(self, token: bytes) -> bytes | None:
        """One bare SASL token after SaslHandshake v0: the server's token, or None (after the
        failed-authentication delay) to close the connection, which is all v0 can say."""
        session: Session = SESSION.get()
        answer = await self._authenticate(session, {"auth_bytes": token})
        if answer["error_code"]:
            return None
        if session.sasl.state == "authenticated":
            session.raw_tokens = False
        return answer["auth_bytes"]

    async def _authenticate(self, session: Session, body: dict) -> dict:
        sasl = session.sasl
        token = bytes(body["auth_bytes"])
        try:
            if not session.charged:
                if not self.logins.take(session.host, time.monotonic()):
                    raise sasl.refuse(LOGINS_SPENT, f"over max.failed.authentication.rate.per.ip ({self.logins.rate}/s)")
                session.charged = True
            user = sasl.user_named(token)
            creds = {}
            if user is not None:
                try:
                    creds = await self._credentials(user)
                except Exception as e:  # no ZooKeeper, unreadable credential: that user cannot log in
                    log.warning("credentials of %r unreadable: %r", user, e)
            if sasl.mechanism == PLAIN and sasl.state in ("authenticate", "reauthenticate"):
                claim = sasl.plain_claim(token, creds)  # a malformed token fails here, underived
                matched = await self.kdf.password_matches(claim.credential, claim.password)
                out = sasl.plain_verdict(claim, matched, now_ms=_now_ms())
            else:
                secret = None
                if user is not None and sasl.mechanism not in creds and self._decoy_secret is not None:
                    secret = await self._decoy_secret()
                out = sasl.authenticate(token, creds, now_ms=_now_ms(), decoy_secret=secret)
        except SaslError as e:
            await self._refuse(session, e)
            return {"error_code": int(e.code), "error_message": e.message, "auth_bytes": b"", "session_lifetime_ms": 0}
        if sasl.state == "authenticated":
            log.info("%s authenticated as %s from %s", self.protocol, sasl.principal, session.host)
            self.logins.give_back(session.host, time.monotonic())  # only failures spend the budget
            session.charged = False
        return {"error_code": 0, "error_message": None, "auth_bytes": out,
                "session_lifetime_ms": sasl.session_lifetime_ms if sasl.state == "authenticated" else 0}


async def read_credentials(store, user: str) -> dict[str, ScramCredential]:
    """The user's SCRAM credentials from ``/config/users/<user>`` (Kafka's format)."""
    from controller.shell.security.scram import ScramError, parse_credential
    from znodes.users import read_credentials as read_texts

    out = {}
    for mechanism, text in (await read_texts(store, user)).items():
        try:
            out[mechanism] = parse_credential(mechanism, text)
        except ScramError as e:
            log.warning("user %r: %s credential unreadable: %s", user, mechanism, e)
    return out
