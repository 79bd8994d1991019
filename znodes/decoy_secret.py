"""The secret SCRAM's made-up credentials are derived from, one for the whole service.

An unknown user's SCRAM exchange is answered like a known user's, with a salt derived from the
user name and a server secret (RFC 5802 5.1; controller.shell.security.scram.decoy_credential),
so that user names cannot be probed. The secret must be the same on every controller instance
and across restarts: a secret of each process's own gave an unknown name a different salt on
each instance and after each restart, while a real user's salt stays put - comparing two
answers told the two apart. So the first instance that needs it creates it here, with the
store's ACL for sensitive paths (no world read, as ``/config/users``: znodes.security), and
every instance reads the same one::

    secret = await read_or_create(store)   # 32 bytes; created once, by whoever comes first

Payload: ``{"version":1,"secret":"<base64 of SECRET_BYTES bytes>"}``; anything else raises
ZnodeFormatError (the caller decides what to answer with meanwhile).
"""

from __future__ import annotations

import base64
import binascii
import json
import os

from znodes.api import NodeExistsError, NoNodeError, Store
from znodes.errors import ZnodeFormatError

PATH = "/reassignd/scram_decoy_secret"
# As long as the SCRAM-SHA-256 key it stands in for: guessing it is no easier than a key.
SECRET_BYTES = 32


def encode(secret: bytes) -> bytes:
    return json.dumps({"version": 1, "secret": base64.b64encode(secret).decode("ascii")},
                      separators=(",", ":")).encode()


def decode(data: bytes) -> bytes:
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeFormatError(PATH, f"payload is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("secret"), str):
        raise ZnodeFormatError(PATH, 'expected {"version":1,"secret":"<base64>"}')
    try:
        secret = base64.b64decode(doc["secret"], validate=True)
    except (binascii.Error, ValueError):
        raise ZnodeFormatError(PATH, "secret is not base64") from None
    if len(secret) != SECRET_BYTES:
        raise ZnodeFormatError(PATH, f"secret is {len(secret)} bytes, not {SECRET_BYTES}")
    return secret


async def read_or_create(store: Store) -> bytes:
    """The service's decoy secret: read, or created (random) if no instance made it yet; two
    instances creating it at once both end up with the one that landed."""
    try:
        data, _ = await store.get(PATH)
        return decode(data)
    except NoNodeError:
        pass
    secret = os.urandom(SECRET_BYTES)
    try:
        await store.ensure_path(PATH.rsplit("/", 1)[0])
        await store.create(PATH, encode(secret))
        return secret
    except NodeExistsError:
        data, _ = await store.get(PATH)
        return decode(data)
