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
PLAIN's check is a PBKDF2 derivation; a shell that must not spend it on its event loop splits
it: ``claim = sasl.plain_claim(token, creds)``, derive elsewhere, ``sasl.plain_verdict(claim,
matched, now_ms=...)``. An unknown user is derived against a dummy credential, so it costs
the same as a known one.

Re-authentication (KIP-368): an authenticated connection may send SaslHandshake again and run
a new exchange; it must use the mechanism the session was authenticated with and end as the
same principal (Kafka's SaslServerAuthenticator: a handshake naming another enabled mechanism
is answered, then the exchange fails at its first token - SCRAM to PLAIN would trade a
challenge-response login for a password one). ``session_lifetime_ms`` is
``connections.max.reauth.ms`` (0: sessions never expire); a session past its expiry may send
nothing but a re-authentication (:meth:`SaslServer.expired`).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from controller.shell.security.scram import DEFAULT_ITERATIONS
from controller.shell.security.scram import MECHANISMS as SCRAM_MECHANISMS
from controller.shell.security.scram import decoy_credential
from controller.shell.security.scram import ScramCredential, ScramError, ScramServer, make_credential, password_matches
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
    # A re-authentication handshake that named another mechanism: its first token fails.
    "reauth_bad_mechanism": {},
}

SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PLAIN_FAILED = "Authentication failed: Invalid username or password"


@functools.cache
def unknown_user_credential() -> ScramCredential:
    """What PLAIN checks an unknown user's password against: a credential of a random password
    nobody knows, at the default iterations, so that an unknown user costs the same key
    derivation as a known one and the answer's timing does not tell which it was."""
    return make_credential("SCRAM-SHA-512", secrets.token_urlsafe(32), iterations=DEFAULT_ITERATIONS)


@dataclass(frozen=True, slots=True)
class PlainClaim:
    """A PLAIN token's user and password, and the credential to check them against."""

    user: str
    password: str = field(repr=False)
    credential: ScramCredential = field(repr=False)
    known: bool  # False: ``credential`` is the unknown-user one, the login fails whatever


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
        self._bad_mechanism = ""
        self._unknown_user: str | None = None  # SCRAM: the client-first named no known user

    # ---- transitions -------------------------------------------------------------------------

    def _move(self, event: str) -> None:
        nxt = TRANSITIONS[self.state].get(event)
        if nxt is None:
            state = self.state
            self.state = "failed"
            if state == "reauth_bad_mechanism":
                raise SaslError(ErrorCode.SASL_AUTHENTICATION_FAILED, self._bad_mechanism)
            raise SaslError(ErrorCode.ILLEGAL_SASL_STATE, f"Unexpected SASL request in state {state}")
        self.state = nxt

    def _fail(self, message: str, log: str) -> SaslError:
        self.state = "failed"
        return SaslError(ErrorCode.SASL_AUTHENTICATION_FAILED, message, log=log)

    def refuse(self, message: str, log: str) -> SaslError:
        """A refusal the shell decides (the address's login budget is spent): the exchange
        fails as a wrong password would, SASL_AUTHENTICATION_FAILED."""
        return self._fail(message, log)

    def handshake(self, mechanism: str) -> None:
        """SaslHandshake: UNSUPPORTED_SASL_MECHANISM for one not enabled, ILLEGAL_SASL_STATE
        out of order."""
        self._move("handshake")
        if mechanism not in self.mechanisms:
            self.state = "failed"
            raise SaslError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unsupported SASL mechanism {mechanism}")
        if self.state == "reauthenticate" and mechanism != self.mechanism:
            # As Kafka: the handshake is answered, the exchange fails at its first token.
            self.state = "reauth_bad_mechanism"
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self.mechanism}'")
            return
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

    def authenticate(self, token: bytes, creds: Mapping[str, ScramCredential], *, now_ms: int,
                     decoy_secret: bytes | None = None) -> bytes:
        """One SaslAuthenticate: the server's token. ``creds`` are the named user's credentials
        by mechanism (empty for an unknown user); ``decoy_secret`` the service's secret an
        unknown user's made-up SCRAM credential is derived from (znodes.decoy_secret; None:
        this process's own)."""
        if self.state not in ("authenticate", "reauthenticate"):
            self._move("token")  # raises ILLEGAL_SASL_STATE
        if len(token) > MAX_TOKEN_BYTES:
            raise self._fail("SASL token too large", f"token of {len(token)} bytes")
        if self.mechanism == PLAIN:
            return self._plain(token, creds, now_ms)
        return self._scram_step(token, creds, now_ms, decoy_secret)

    def _plain(self, token: bytes, creds: Mapping[str, ScramCredential], now_ms: int) -> bytes:
        claim = self.plain_claim(token, creds)
        return self.plain_verdict(claim, password_matches(claim.credential, claim.password), now_ms=now_ms)

    def plain_claim(self, token: bytes, creds: Mapping[str, ScramCredential]) -> PlainClaim:
        """PLAIN's first half: who claims what, and the credential the password is checked
        against (a dummy one for an unknown user, so that it costs the same key derivation).
        The shell derives off the event loop, then calls :meth:`plain_verdict`. A malformed
        token raises SaslError here, before any derivation."""
        if self.state not in ("authenticate", "reauthenticate"):
            self._move("token")  # raises ILLEGAL_SASL_STATE
        if self.mechanism != PLAIN:
            self.state = "failed"
            raise SaslError(ErrorCode.ILLEGAL_SASL_STATE, f"A PLAIN token in a {self.mechanism} exchange")
        if len(token) > MAX_TOKEN_BYTES:
            raise self._fail("SASL token too large", f"token of {len(token)} bytes")
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
        return PlainClaim(user, password, cred or unknown_user_credential(), known=cred is not None)

    def plain_verdict(self, claim: PlainClaim, matched: bool, *, now_ms: int) -> bytes:
        """PLAIN's second half: ``matched`` is whether the claim's password derives to its
        credential. An unknown user fails whatever it says."""
        if not (claim.known and matched):
            raise self._fail(PLAIN_FAILED, f"PLAIN: wrong password or unknown user {claim.user!r}")
        self._finish(claim.user, now_ms)
        return b""

    def _scram_step(self, token: bytes, creds: Mapping[str, ScramCredential], now_ms: int,
                    decoy_secret: bytes | None = None) -> bytes:
        scram = self._scram
        assert scram is not None and self.mechanism is not None
        failed = SCRAM_FAILED.format(self.mechanism)
        try:
            if scram.username is None:
                user = scram.client_first(token)
                cred = creds.get(self.mechanism)
                if cred is None:
                    # RFC 5802 5.1: challenge an unknown user like a known one (a salt made from
                    # the name and the server's secret); the proof fails at client-final with the
                    # same words as a wrong password, so user names cannot be probed.
                    self._unknown_user = user
                    cred = decoy_credential(self.mechanism, user, decoy_secret)
                self._move("token")
                return scram.server_first(cred)
            out = scram.client_final(token)
            if self._unknown_user is not None:  # unreachable but for a hash preimage: never a login
                raise ScramError(f"no credential for user {self._unknown_user!r}")
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
