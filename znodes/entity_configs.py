"""Kafka's entity config znodes, ``/config/<entity path>``, read and changed as Kafka's
AdminZkClient.changeConfigs does: ``{"version":1,"config":{"name":"value",...}}`` (a missing
or null payload is an empty config), written conditional on the version read and followed by a
change notification ``/config/changes/config_change_<seq>`` with ``{"version":2,
"entity_path":"<entity path>"}`` so that Kafka's brokers re-read the entity. The entity paths
are Kafka's, names sanitized by the caller: ``users/alice``, ``users/alice/clients/app``,
``clients/app``, ``ips/10.0.0.1``, ``users/<default>``::

    config = await read(store, "clients/app")                        # {} when absent
    changed = await update(store, "clients/app", lambda c: {**c, "producer_byte_rate": "1024"})

Each other config in the znode is kept as it is (a user's SCRAM credentials beside its quotas).
"""

from __future__ import annotations

import json

from znodes import paths
from znodes.api import BadVersionError, NodeExistsError, NoNodeError, Store
from znodes.errors import ZnodeFormatError

# Read-modify-write races with another writer of the same entity: retried this many times.
WRITE_ATTEMPTS = 5


def decode(path: str, data: bytes) -> dict[str, str]:
    try:
        doc = json.loads(bytes(data).decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeFormatError(path, f"payload is not JSON: {e}") from None
    if doc is None:
        return {}
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(config, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in config.items()
    ):
        raise ZnodeFormatError(path, 'expected {"version":1,"config":{"name":"value",...}}')
    return config


def encode(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def path_of(entity_path: str) -> str:
    return f"{paths.CONFIG}/{entity_path}"


async def read(store: Store, entity_path: str) -> dict[str, str]:
    """The entity's config; {} when it has no znode. ZnodeFormatError when it does not decode."""
    path = path_of(entity_path)
    try:
        data, _ = await store.get(path)
    except NoNodeError:
        return {}
    return decode(path, data)


async def update(store: Store, entity_path: str, change) -> bool:
    """Apply ``change(config) -> config | None`` (None: nothing to do) with a version check,
    then notify. Whether anything changed. ZnodeFormatError when the znode does not decode (it
    is left as it is: a rewrite would lose what it holds)."""
    path = path_of(entity_path)
    for _ in range(WRITE_ATTEMPTS):
        try:
            data, stat = await store.get(path)
            config = decode(path, data)
            version = stat.version
        except NoNodeError:
            config, version = {}, None
        new = change(dict(config))
        if new is None:
            return False
        try:
            if version is None:
                await store.create(path, encode(new), makepath=True)
            else:
                await store.set(path, encode(new), version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
        notice = json.dumps({"version": 2, "entity_path": entity_path}).encode()
        await store.create(paths.CONFIG_CHANGE_PREFIX, notice, sequential=True, makepath=True)
        return True
    raise BadVersionError(f"{path} kept changing under {WRITE_ATTEMPTS} attempts to update it")
