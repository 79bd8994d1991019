"""SCRAM credentials in ZooKeeper, where and as Kafka keeps them (``kafka-configs.sh
--alter --entity-type users --add-config 'SCRAM-SHA-512=[password=...]'`` writes the same).

``/config/users/<sanitized user>`` holds ``{"version":1,"config":{"SCRAM-SHA-512":"salt=...,
stored_key=...,server_key=...,iterations=4096"}}`` next to the user's other configs (quotas),
which are kept as they are. Every change also creates a config change notification
``/config/changes/config_change_<seq>`` with ``{"version":2,"entity_path":"users/<sanitized>"}``
so Kafka's brokers pick it up. The credential strings are opaque here (parsed by
``controller.shell.security.scram``)::

    await write_credentials(store, "alice", {"SCRAM-SHA-512": text})    # add or replace
    await read_credentials(store, "alice")                              # {"SCRAM-SHA-512": text}
    await delete_credentials(store, "alice", ["SCRAM-SHA-512"])
    await list_users(store)                                             # {"alice": ["SCRAM-SHA-512"]}
    await all_credentials(store)                                        # {"alice": {"SCRAM-SHA-512": text}}
"""

from __future__ import annotations

import urllib.parse

from znodes import entity_configs
from znodes.api import NoNodeError, Store
from znodes.errors import ZnodeFormatError
from znodes.reads import children_or_empty, get_many

CONFIG_USERS = "/config/users"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


# URLEncoder leaves '.' alone, so these two names sanitize to themselves, which ZooKeeper
# refuses as path elements (relative paths): no credential can be stored under them, in Kafka
# either (its write fails there with an unexpected error).
UNSTORABLE = frozenset({".", ".."})


# A user's config is an entity config (znodes.entity_configs), read and written with its codec.
decode_user_config = entity_configs.decode
encode_user_config = entity_configs.encode


def sanitize(user: str) -> str:
    """Kafka's Sanitizer: URL-encoding as Java's URLEncoder does it, then '+' -> %20, '*' -> %2A
    (so a user name is one safe znode name). ValueError for a name that cannot be one."""
    if not user:
        raise ValueError("a user name must not be empty")
    name = urllib.parse.quote(user, safe="-._*").replace("*", "%2A").replace("~", "%7E")
    if name in UNSTORABLE:
        raise ValueError(f"the user name {user!r} cannot be a znode name (ZooKeeper refuses {name!r} in a path)")
    return name


def storable(user: str) -> bool:
    """Whether ``user`` can have a ``/config/users`` znode (not empty, not '.' or '..')."""
    return bool(user) and user not in UNSTORABLE


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def user_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user)}"


async def read_credentials(store: Store, user: str) -> dict[str, str]:
    """The user's SCRAM credential strings by mechanism; {} for an unknown user (and for a
    name no znode can have: a login or a describe naming it finds nothing, as for any stranger)."""
    if not storable(user):
        return {}
    path = user_path(user)
    try:
        data, _ = await store.get(path)
    except NoNodeError:
        return {}
    config = decode_user_config(path, data)
    return {m: config[m] for m in SCRAM_MECHANISMS if m in config}


async def all_credentials(store: Store) -> dict[str, dict[str, str]]:
    """Every user with at least one SCRAM credential -> its credential strings by mechanism,
    the user znodes read together (a user gone or not decoding since the listing is left out)."""
    names = sorted(await children_or_empty(store, CONFIG_USERS))
    paths_ = [f"{CONFIG_USERS}/{name}" for name in names]
    out = {}
    for name, path, read in zip(names, paths_, await get_many(store, paths_)):
        if read is None:
            continue
        try:
            config = decode_user_config(path, read[0])
        except ZnodeFormatError:
            continue
        texts = {m: config[m] for m in SCRAM_MECHANISMS if m in config}
        if texts:
            out[desanitize(name)] = texts
    return out


async def list_users(store: Store) -> dict[str, list[str]]:
    """Every user with at least one SCRAM credential -> its mechanisms."""
    return {user: list(texts) for user, texts in (await all_credentials(store)).items()}


async def update_config(store: Store, user: str, change) -> bool:
    """Apply ``change(config) -> config | None`` to the user's config (None: nothing to do),
    conditional on the version read, then notify (znodes.entity_configs.update). Whether
    anything changed."""
    return await entity_configs.update(store, f"users/{sanitize(user)}", change)


async def write_credentials(store: Store, user: str, credentials: dict[str, str]) -> None:
    unknown = set(credentials) - set(SCRAM_MECHANISMS)
    if unknown:
        raise ValueError(f"not SCRAM mechanisms: {sorted(unknown)}")
    await update_config(store, user, lambda config: {**config, **credentials})


async def delete_credentials(store: Store, user: str, mechanisms: list[str] | None = None) -> list[str]:
    """Remove the user's credentials for ``mechanisms`` (all SCRAM ones by default); the
    mechanisms that were there."""
    removed: list[str] = []

    def change(config: dict[str, str]):
        removed[:] = [m for m in (mechanisms or SCRAM_MECHANISMS) if m in config]
        if not removed:
            return None
        return {k: v for k, v in config.items() if k not in removed}

    await update_config(store, user, change)
    return removed
