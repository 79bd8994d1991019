"""SCRAM (RFC 5802, RFC 7677) as Kafka speaks it: credentials and the server's side. Pure.

Kafka keeps one credential per user and mechanism in ``/config/users/<user>`` as
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (ScramCredentialUtils); the
same string is parsed and written (protocol.scram_credential), so credentials made by
``kafka-configs.sh`` work and the other way round::

    cred = make_credential("SCRAM-SHA-512", "alice-secret")          # random salt, 4096 rounds
    text = format_credential(cred)                                   # Kafka's string
    server = ScramServer("SCRAM-SHA-512", nonce=secrets.token_urlsafe(18))
    user = server.client_first(b"n,,n=alice,r=abc")                  # who wants in
    server_first = server.server_first(cred)                         # b"r=abc...,s=...,i=4096"
    server_final = server.client_final(b"c=biws,r=...,p=...")        # b"v=..." or ScramError

Every malformed or wrong message raises :class:`ScramError`, the one error type of this
module; its text is for the log, never for the peer (a failed exchange tells the peer only
that it failed, as Kafka does). The credential, its string and ScramError live in
protocol.scram_credential (below the simulated brokers too) and are imported here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

# Re-exported: the controller's modules and tests import them from here.
from protocol.scram_credential import (  # noqa: F401
    MECHANISMS,
    ScramCredential,
    ScramError,
    format_credential,
    parse_credential,
)
from protocol.scram_credential import hash_name as _hash

# Kafka's ScramMechanism minimum and its kafka-configs.sh default.
MIN_ITERATIONS = 4096
DEFAULT_ITERATIONS = 4096
# Kafka's ScramFormatter upper bound: more rounds than this is a denial of service on login.
MAX_ITERATIONS = 16384
SALT_BYTES = 32  # what Kafka's ScramFormatter.secureRandomBytes draws
# RFC 5802 section 5.1: an unknown user is answered with a server-first like a known one's, its
# salt derived from the name and a secret of this server, so the same name gets the same salt
# on every attempt and nothing tells it from a real user's until the proof fails. Drawn once per
# process.
SERVER_SECRET = os.urandom(32)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_hash(mechanism), password.encode("utf-8"), salt, iterations)


def _hmac(mechanism: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, _hash(mechanism)).digest()


def _h(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(_hash(mechanism), data).digest()


def make_credential(
    mechanism: str, password: str, *, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramError(f"iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}], not {iterations}")
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(
        mechanism, salt, _h(mechanism, client_key), _hmac(mechanism, salted, b"Server Key"), iterations
    )


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The credential of a salted password (KIP-554's AlterUserScramCredentials sends that, so
    the password never crosses the wire)."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramError(f"iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}], not {iterations}")
    if len(salted) != hashlib.new(_hash(mechanism)).digest_size or not salt:
        raise ScramError("salted password or salt of the wrong size")
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(mechanism, salt, _h(mechanism, client_key), _hmac(mechanism, salted, b"Server Key"), iterations)


def decoy_credential(mechanism: str, username: str, secret: bytes | None = None) -> ScramCredential:
    """The made-up credential an unknown user is challenged with (RFC 5802 5.1): salt and keys
    are HMACs of the name under ``secret`` (None: this process's own, SERVER_SECRET), at the
    default iterations. No password matches it: a proof would need a preimage of its stored key."""
    digest = _hash(mechanism)
    if secret is None:
        secret = SERVER_SECRET

    def derive(label: bytes) -> bytes:
        return hmac.new(secret, label + b"\0" + mechanism.encode() + b"\0" + username.encode("utf-8"), digest).digest()

    # Every SCRAM hash gives at least SALT_BYTES (SHA-256: 32), the length of our own salts.
    return ScramCredential(mechanism, derive(b"salt")[:SALT_BYTES], derive(b"stored_key"), derive(b"server_key"),
                           DEFAULT_ITERATIONS)


def password_matches(cred: ScramCredential, password: str) -> bool:
    """Whether ``password`` is the one ``cred`` was made from (how SASL/PLAIN checks it)."""
    again = make_credential(cred.mechanism, password, iterations=cred.iterations, salt=cred.salt)
    return hmac.compare_digest(again.stored_key, cred.stored_key)


# ---- the exchange ----------------------------------------------------------------------------


def _attributes(message: bytes, what: str) -> list[tuple[str, str]]:
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"{what} is not UTF-8") from None
    out = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise ScramError(f"{what}: {part!r} is not an attribute")
        out.append((part[0], part[2:]))
    return out


def _saslname(value: str) -> str:
    """RFC 5802 5.1: ``=2C`` is ',' and ``=3D`` is '='; any other '=' is malformed."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "=":
            code = value[i + 1 : i + 3]
            if code not in ("2C", "3D"):
                raise ScramError("a user name has a bad '=' escape")
            out.append("," if code == "2C" else "=")
            i += 3
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


class ScramServer:
    """One server-side SCRAM exchange: ``client_first`` -> ``server_first`` -> ``client_final``.
    Calls out of that order raise ScramError."""

    def __init__(self, mechanism: str, nonce: str):
        _hash(mechanism)
        self.mechanism = mechanism
        self._server_nonce = nonce
        self._step = "client-first"
        self.username: str | None = None
        self._client_first_bare = ""
        self._gs2_header = ""
        self._nonce = ""
        self._server_first = ""
        self._cred: ScramCredential | None = None

    def client_first(self, message: bytes) -> str:
        """The user name the client claims."""
        if self._step != "client-first":
            raise ScramError("client-first message out of order")
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("client-first message is not UTF-8") from None
        # gs2-header: channel-binding flag ("n" or "y"; "p=" asks for binding Kafka never offers),
        # then an optional authzid.
        flag, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not (sep1 and sep2) or flag not in ("n", "y"):
            raise ScramError("client-first message lacks a gs2 header Kafka accepts")
        if authzid and not authzid.startswith("a="):
            raise ScramError("malformed authzid")
        attrs = _attributes(bare.encode("utf-8"), "client-first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise ScramError("client-first message must start with n= and r=")
        # Extensions after r= are allowed (Kafka reads tokenauth=true; delegation tokens are
        # not served here, so they are ignored).
        self.username = _saslname(attrs[0][1])
        if authzid and _saslname(authzid[2:]) != self.username:
            raise ScramError("authorization id differs from the user name")
        self._gs2_header = text[: len(flag) + len(authzid) + 2]
        self._client_first_bare = bare
        self._nonce = attrs[1][1] + self._server_nonce
        self._step = "server-first"
        return self.username

    def server_first(self, cred: ScramCredential) -> bytes:
        if self._step != "server-first":
            raise ScramError("server-first message out of order")
        if cred.mechanism != self.mechanism:
            raise ScramError("credential is for another mechanism")
        self._cred = cred
        salt = base64.b64encode(cred.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={cred.iterations}"
        self._step = "client-final"
        return self._server_first.encode("utf-8")

    def client_final(self, message: bytes) -> bytes:
        """The server-final message (``v=<signature>``); ScramError if the proof is wrong."""
        if self._step != "client-final" or self._cred is None:
            raise ScramError("client-final message out of order")
        self._step = "done"  # one attempt per exchange, right or wrong
        attrs = _attributes(message, "client-final message")
        if len(attrs) < 3 or attrs[0][0] != "c" or attrs[1][0] != "r" or attrs[-1][0] != "p":
            raise ScramError("client-final message must be c=, r=, ..., p=")
        try:
            binding = base64.b64decode(attrs[0][1], validate=True).decode("utf-8")
            proof = base64.b64decode(attrs[-1][1], validate=True)
        except (ValueError, UnicodeDecodeError):
            raise ScramError("client-final message has bad base64") from None
        if binding != self._gs2_header:
            raise ScramError("channel binding differs from the gs2 header")
        # Kafka's ScramSaslServer checks only that the nonce ENDS with the server's: librdkafka
        # (2.0) sends its own nonce again in front of it, and Kafka accepts that.
        if not attrs[1][1].endswith(self._nonce):
            raise ScramError("nonce differs from the one the server sent")
        without_proof = message.decode("utf-8").rsplit(",p=", 1)[0]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode("utf-8")
        signature = _hmac(self.mechanism, self._cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("client proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(_h(self.mechanism, client_key), self._cred.stored_key):
            raise ScramError("client proof is wrong")
        server_signature = _hmac(self.mechanism, self._cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


def client_exchange(mechanism: str, username: str, password: str, nonce: str):
    """The client's side, as a generator: yields the client-first message, is sent the
    server-first, yields the client-final, is sent the server-final; raises ScramError if the
    server's signature is wrong. For tests and the ``users`` tooling, which log in to check."""
    bare = f"n={username.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
    server_first = yield ("n,," + bare).encode("utf-8")
    attrs = dict(_attributes(server_first, "server-first message"))
    if not attrs.get("r", "").startswith(nonce):
        raise ScramError("server nonce does not extend the client's")
    salted = salted_password(mechanism, password, base64.b64decode(attrs["s"]), int(attrs["i"]))
    without_proof = f"c={base64.b64encode(b'n,,').decode()},r={attrs['r']}"
    auth_message = f"{bare},{server_first.decode()},{without_proof}".encode("utf-8")
    client_key = _hmac(mechanism, salted, b"Client Key")
    signature = _hmac(mechanism, _h(mechanism, client_key), auth_message)
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_final = yield f"{without_proof},p={base64.b64encode(proof).decode()}".encode("utf-8")
    expected = _hmac(mechanism, _hmac(mechanism, salted, b"Server Key"), auth_message)
    if server_final != b"v=" + base64.b64encode(expected):
        raise ScramError("server signature is wrong")
