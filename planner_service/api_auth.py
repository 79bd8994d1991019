"""Who may call the planner service's REST API: roles as Cruise Control splits them, principals
from HTTP Basic credentials (a file of salted PBKDF2 hashes) or from TLS client certificates (a
file mapping the certificate's subject CN to a role). The server (:mod:`planner_service.http_server`)
asks :meth:`ApiAuth.authenticate` and :func:`required_role`; this module does no network I/O.

Roles, each including the ones before it:

* ``VIEWER``: GET (``/state``, ``/load``, ``/proposals``).
* ``USER``: + dry runs (a POST of a planning endpoint whose ``dryrun`` is absent or true).
* ``ADMIN``: + everything else: executions (``dryrun=false``), stopping one, self-healing
  changes, and any POST this module does not know to be a dry run.

Credentials file, one user a line (``#`` comments, blank lines skipped)::

    alice:ADMIN:pbkdf2-sha512$210000$<salt, base64>$<hash, base64>

made by ``reassignd planner hash-password --user alice --role ADMIN`` (the password from stdin or
``REASSIGND_PLANNER_PASSWORD``). Certificate roles file, one certificate a line: ``CN:ROLE``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import hashlib
import hmac
import os
import secrets
import time
from dataclasses import dataclass

ROLES = ("VIEWER", "USER", "ADMIN")
# The planning endpoints: a POST of one of these is a dry run unless dryrun says otherwise.
DRY_RUN_ROUTES = frozenset({"/rebalance", "/remove_broker", "/add_broker", "/fix_rack_violations",
                            "/demote_broker", "/rebalance_disk", "/topic_configuration"})
_DRY_RUN_TRUE = ("true", "1", "yes")  # endpoints.py's spelling of a true dryrun

SCHEME = "pbkdf2-sha512"
# OWASP's figure for PBKDF2-HMAC-SHA512 (2023): ~0.15 s a check on this machine's cores.
DEFAULT_ITERATIONS = 210_000
# A file with fewer is refused: a hash that cheap is no protection once the file leaks.
MIN_ITERATIONS = 100_000
# More would let whoever writes the file make each login a denial of service.
MAX_ITERATIONS = 10_000_000
SALT_BYTES = 16
# The KDF runs on these threads, never on the event loop; at most this many at once, so a flood
# of bad passwords costs the service two cores' worth, not every request's latency.
KDF_THREADS = 2
# A password verified once is remembered (as an HMAC under a per-process key, never in clear) for
# this long: a client polling /state pays the KDF once, not on every request.
VERIFIED_TTL_S = 300.0
VERIFIED_MAX = 1024


class AuthConfigError(ValueError):
    """A credentials or certificate-roles file that cannot be used (the line and why)."""


def required_role(method: str, path: str, query: dict) -> str:
    if method in ("GET", "HEAD"):
        return "VIEWER"
    if method == "POST" and path in DRY_RUN_ROUTES and query.get("dryrun", "true").strip().lower() in _DRY_RUN_TRUE:
        return "USER"
    return "ADMIN"


def allows(role: str, needed: str) -> bool:
    return ROLES.index(role) >= ROLES.index(needed)


def hash_password(password: str, *, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None) -> str:
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    return f"{SCHEME}${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def credential_line(user: str, role: str, password: str, **kw) -> str:
    _check_user(user)
    if role not in ROLES:
        raise AuthConfigError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if not password:
        raise AuthConfigError("empty password")
    return f"{user}:{role}:{hash_password(password, **kw)}"


def _check_user(user: str) -> None:
    if not user or ":" in user or any(c.isspace() for c in user):
        raise AuthConfigError(f"a user name is not empty and holds no ':' or space, got {user!r}")


@dataclass(frozen=True)
class StoredHash:
    iterations: int
    salt: bytes
    digest: bytes

    @classmethod
    def parse(cls, text: str) -> StoredHash:
        parts = text.split("$")
        if len(parts) != 4 or parts[0] != SCHEME:
            raise AuthConfigError(f"expected {SCHEME}$ITERATIONS$SALT$HASH")
        if not parts[1].isdigit() or not MIN_ITERATIONS <= int(parts[1]) <= MAX_ITERATIONS:
            raise AuthConfigError(f"iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}, got {parts[1]!r}")
        try:
            salt, digest = base64.b64decode(parts[2], validate=True), base64.b64decode(parts[3], validate=True)
        except (binascii.Error, ValueError):
            raise AuthConfigError("salt and hash must be base64") from None
        if len(salt) < 8 or len(digest) != 64:
            raise AuthConfigError("a salt of 8 bytes or more and a 64-byte SHA-512 hash expected")
        return cls(int(parts[1]), salt, digest)

    def matches(self, password: str) -> bool:
        got = hashlib.pbkdf2_hmac("sha512", password.encode(), self.salt, self.iterations)
        return hmac.compare_digest(got, self.digest)


def _lines(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise AuthConfigError(f"{path}: {e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            yield n, line


def load_credentials(path: str) -> dict[str, tuple[str, StoredHash]]:
    """{user: (role, hash)} from a credentials file; AuthConfigError names the bad line."""
    users: dict[str, tuple[str, StoredHash]] = {}
    for n, line in _lines(path):
        user, sep, rest = line.partition(":")
        role, sep2, stored = rest.partition(":")
        try:
            if not sep or not sep2:
                raise AuthConfigError("expected USER:ROLE:HASH")
            _check_user(user)
            if role not in ROLES:
                raise AuthConfigError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
            if user in users:
                raise AuthConfigError(f"user {user!r} listed twice")
            users[user] = (role, StoredHash.parse(stored))
        except AuthConfigError as e:
            raise AuthConfigError(f"{path} line {n}: {e}") from None
    if not users:
        raise AuthConfigError(f"{path}: no users")
    return users


def load_cert_roles(path: str) -> dict[str, str]:
    """{subject CN: role} from a certificate roles file (``CN:ROLE`` lines; a CN may hold ':')."""
    roles: dict[str, str] = {}
    for n, line in _lines(path):
        cn, sep, role = line.rpartition(":")
        cn, role = cn.strip(), role.strip()
        if not sep or not cn or role not in ROLES:
            raise AuthConfigError(f"{path} line {n}: expected CN:ROLE with a role of {', '.join(ROLES)}")
        if cn in roles:
            raise AuthConfigError(f"{path} line {n}: CN {cn!r} listed twice")
        roles[cn] = role
    if not roles:
        raise AuthConfigError(f"{path}: no certificates")
    return roles


def certificate_cn(peercert: dict | None) -> str | None:
    """The subject CN of a verified peer certificate (ssl's getpeercert() form)."""
    for rdn in (peercert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic`` header; None for none or a malformed one."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, ValueError):
        return None
    return (user, password) if sep else None


@dataclass(frozen=True)
class Principal:
    name: str  # Kafka's form: User:alice (Basic), User:CN=alice (a client certificate)
    role: str


class ApiAuth:
    """Authenticates requests: a mapped client certificate first, else Basic credentials."""

    def __init__(self, users: dict[str, tuple[str, StoredHash]] | None = None,
                 cert_roles: dict[str, str] | None = None):
        self.users = users or {}
        self.cert_roles = cert_roles or {}
        self._key = secrets.token_bytes(32)
        self._verified: dict[bytes, tuple[float, str]] = {}  # HMAC(user, password) -> (until, user)
        self._kdf = concurrent.futures.ThreadPoolExecutor(KDF_THREADS, thread_name_prefix="api-auth")

    @classmethod
    def from_files(cls, credentials: str | None, cert_roles: str | None) -> ApiAuth:
        return cls(load_credentials(credentials) if credentials else None,
                   load_cert_roles(cert_roles) if cert_roles else None)

    def describe(self) -> str:
        ways = ([f"Basic ({len(self.users)} users)"] if self.users else []) + \
               ([f"client certificates ({len(self.cert_roles)} CNs)"] if self.cert_roles else [])
        return " and ".join(ways)

    async def authenticate(self, authorization: str | None, peercert: dict | None) -> Principal | None:
        cn = certificate_cn(peercert)
        if cn is not None and cn in self.cert_roles:
            return Principal(f"User:CN={cn}", self.cert_roles[cn])
        creds = basic_credentials(authorization)
        if creds is None or creds[0] not in self.users:
            return None
        user, password = creds
        role, stored = self.users[user]
        tag = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        now = time.monotonic()
        hit = self._verified.get(tag)
        if hit is not None and hit[0] > now:
            return Principal(f"User:{user}", role)
        ok = await asyncio.get_running_loop().run_in_executor(self._kdf, stored.matches, password)
        if not ok:
            return None
        if len(self._verified) >= VERIFIED_MAX:
            self._verified = {k: v for k, v in self._verified.items() if v[0] > now}
            if len(self._verified) >= VERIFIED_MAX:
                self._verified.clear()
        self._verified[tag] = (now + VERIFIED_TTL_S, user)
        return Principal(f"User:{user}", role)

    def close(self) -> None:
        self._kdf.shutdown(wait=False)


def password_from(env: dict | None = None, stdin=None) -> str:
    """The password for hash-password: REASSIGND_PLANNER_PASSWORD, else stdin's first line."""
    env = os.environ if env is None else env
    if env.get("REASSIGND_PLANNER_PASSWORD"):
        return env["REASSIGND_PLANNER_PASSWORD"]
    line = stdin.readline() if stdin is not None else ""
    return line.rstrip("\r\n")
