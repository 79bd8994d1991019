"""The SASL server of one connection, as a Kafka broker runs it (KIP-43, KIP-152, KIP-368). Pure.

The transitions are data (:data:`TRANSITIONS`): which SASL request each state takes and where
it leads. Credentials come in as arguments (the shell reads them from ZooKeeper), time comes
in as ``now_ms``; nothing here does I/O. Every refusal raises :class:`SaslError` carrying
Kafka's error code and whether the connection must close after the answer::

    sasl = SaslServer({"PLAIN", "SCRAM-SHA-512"}, reauth_ms=3_600_000, nonce=lambda: "xyz")
    sasl.handshake("SCRAM-SHA-512")                     # SaslHandshake v1
    user = sasl.user_named(token)                       # "alice": the credential to fetch
    out = sasl.authenticate(token, creds, now_ms=0)     # SaslAuthenticate; creds by mechanism
    ...                                                 # until sasl.state == "authenticated"
    sasl.principal, sasl.session_lifetime_ms            # "User:alice", 3600000

Mechanisms: PLAIN (RFC 4616; the password is checked against the user's SCRAM credential, so
one credential store serves both) and SCRAM-SHA-256/512 (controller.shell.security.scram).

Re-authentication (KIP-368): an authenticated connection may send SaslHandshake again and run
a new exchange; it must end as the same principal. ``session_lifetime_ms`` is
``connections.max.reauth.ms`` (0: sessions never expire); a session past its expiry may send
nothing but a re-authentication (:meth:`SaslServer.expired`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.shell.security.scram import MECHANISMS as SCRAM_MECHANISMS
from controller.shell.security.scram import ScramCredential, ScramError, ScramServer, password_matches
from protocol.errors import ErrorCode

PLAIN = "PLAIN"
MECHANISMS = frozenset({PLAIN, *SCRAM_MECHANISMS})
# A SASL token is a few hundred bytes; Kafka reads no request bigger than 512 KiB before
# authentication (BrokerSecurityConfigs' SaslServerAuthenticator MAX_RECEIVE_SIZE).
MAX_TOKEN_BYTES = 512 * 1024

# state -> {request: next state}. "handshake" is SaslHandshake, "token" one SaslAuthenticate
# that does not finish the exchange, "done" the one that does.
TRANSITIONS: dict[str, dict[str, str]] = {
    "handshake": {"handshake": "authenticate"},
    "authenticate": {"token": "authenticate", "done": "authenticated"},
    "authenticated": {"handshake": "reauthenticate"},
    "reauthenticate": {"token": "reauthenticate", "done": "authenticated"},
    "failed": {},
}

SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PLAIN_FAILED = "Authentication failed: Invalid username or password"


class SaslError(Exception):
    """A refused SASL step: ``code`` goes in the response, then the connection closes."""

    def __init__(self, code: ErrorCode, message: str, *, log: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.log = log or message  # the reason, for the server's log only


class SaslServer:
    def __init__(self, mechanisms: set[str] | frozenset[str], *, reauth_ms: int = 0, nonce: Callable[[], str]):
        unknown = set(mechanisms) - MECHANISMS
        if unknown:
            raise ValueError(f"unsupported SASL mechanisms {sorted(unknown)}; supported: {sorted(MECHANISMS)}")
        self.mechanisms = frozenset(mechanisms)
        self.reauth_ms = reauth_ms
        self._nonce = nonce
        self.state = "handshake"
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.session_lifetime_ms = 0
        self.expires_at_ms: int | None = None
        self._scram: ScramServer | None = None

    # ---- transitions -------------------------------------------------------------------------

    def _move(self, event: str) -> None:
        nxt = TRANSITIONS[self.state].get(event)
        if nxt is None:
            state = self.state
            self.state = "failed"
            raise SaslError(ErrorCode.ILLEGAL_SASL_STATE, f"Unexpected SASL request in state {state}")
        self.state = nxt

    def _fail(self, message: str, log: str) -> SaslError:
        self.state = "failed"
        return SaslError(ErrorCode.SASL_AUTHENTICATION_FAILED, message, log=log)

    def handshake(self, mechanism: str) -> None:
        """SaslHandshake: UNSUPPORTED_SASL_MECHANISM for one not enabled, ILLEGAL_SASL_STATE
        out of order."""
        self._move("handshake")
        if mechanism not in self.mechanisms:
            self.state = "failed"
            raise SaslError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self._scram = ScramServer(mechanism, self._nonce()) if mechanism in SCRAM_MECHANISMS else None

    def user_named(self, token: bytes) -> str | None:
        """The user whose credentials the next :meth:`authenticate` needs, None if it needs none.
        Malformed tokens give None here and fail in authenticate."""
        if self.state not in ("authenticate", "reauthenticate"):
            return None
        if self.mechanism == PLAIN:
            parts = token.split(b"\0")
            return parts[1].decode("utf-8", "replace") if len(parts) == 3 else None
        if self._scram is not None and self._scram.username is None:
            try:
                return ScramServer(self.mechanism, "").client_first(token)
            except ScramError:
                return None
        return None

    def authenticate(self, token: bytes, creds: Mapping[str, ScramCredential], *, now_ms: int) -> bytes:
        """One SaslAuthenticate: the server's token. ``creds`` are the named user's credentials
        by mechanism (empty for an unknown user)."""
        if self.state not in ("authenticate", "reauthenticate"):
            self._move("token")  # raises ILLEGAL_SASL_STATE
        if len(token) > MAX_TOKEN_BYTES:
            raise self._fail("SASL token too large", f"token of {len(token)} bytes")
        if self.mechanism == PLAIN:
            return self._plain(token, creds, now_ms)
        return self._scram_step(token, creds, now_ms)

    def _plain(self, token: bytes, creds: Mapping[str, ScramCredential], now_ms: int) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise self._fail(PLAIN_FAILED, "PLAIN token is not authzid NUL user NUL password")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise self._fail(PLAIN_FAILED, "PLAIN token is not UTF-8") from None
        if not user or not password:
            raise self._fail(PLAIN_FAILED, "PLAIN token has an empty user name or password")
        if authzid and authzid != user:
            raise self._fail(PLAIN_FAILED, f"PLAIN authorization id {authzid!r} differs from user {user!r}")
        # Any of the user's SCRAM credentials verifies the password (the strongest first).
        cred = creds.get("SCRAM-SHA-512") or creds.get("SCRAM-SHA-256")
        if cred is None or not password_matches(cred, password):
            raise self._fail(PLAIN_FAILED, f"PLAIN: wrong password or unknown user {user!r}")
        self._finish(user, now_ms)
        return b""

    def _scram_step(self, token: bytes, creds: Mapping[str, ScramCredential], now_ms: int) -> bytes:
        scram = self._scram
        assert scram is not None and self.mechanism is not None
        failed = SCRAM_FAILED.format(self.mechanism)
        try:
            if scram.username is None:
                user = scram.client_first(token)
                cred = creds.get(self.mechanism)
                if cred is None:
                    raise self._fail(failed, f"{self.mechanism}: no credential for user {user!r}")
                self._move("token")
                return scram.server_first(cred)
            out = scram.client_final(token)
        except ScramError as e:
            raise self._fail(failed, f"{self.mechanism}: {e}") from None
        self._finish(scram.username, now_ms)
        return out

    def _finish(self, user: str, now_ms: int) -> None:
        principal = f"User:{user}"
        if self.state == "reauthenticate" and principal != self.principal:
            raise self._fail(
                "Cannot change principals during re-authentication",
                f"re-authentication as {principal} on a connection of {self.principal}",
            )
        self._move("done")
        self.principal = principal
        self.session_lifetime_ms = self.reauth_ms
        self.expires_at_ms = now_ms + self.reauth_ms if self.reauth_ms > 0 else None

    # ---- queries -----------------------------------------------------------------------------

    @property
    def authenticated(self) -> bool:
        """Whether a principal is established (also while it re-authenticates)."""
        return self.principal is not None and self.state != "failed"

    def expired(self, now_ms: int) -> bool:
        """Whether the session outlived ``connections.max.reauth.ms`` without re-authenticating:
        only a re-authentication may follow (Kafka closes the connection on anything else)."""
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms
