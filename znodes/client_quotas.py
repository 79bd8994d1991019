"""Client quotas in ZooKeeper, where and as Kafka's ZooKeeper mode keeps them (``kafka-configs.sh
--alter --entity-type users --entity-name alice --add-config producer_byte_rate=1024`` writes the
same): in the entity config znodes (znodes.entity_configs) of

    /config/users/<user>                      a user's quotas (beside its SCRAM credentials)
    /config/users/<user>/clients/<client id>  a user's quotas for one of its client ids
    /config/clients/<client id>               a client id's quotas
    /config/ips/<ip>                          an IP's connection rate (KIP-612)

each name sanitized as Kafka's Sanitizer does (znodes.users.sanitize), a type's default entity
named ``<default>``. Entities are controller.core.client_quotas' tuples::

    await read_all(store)          # {(("user", "alice"),): {"producer_byte_rate": "1024", ...}, ...}
    entity_path((("user", None), ("client-id", "app")))    # "users/<default>/clients/app"
"""

from __future__ import annotations

from protocol.client_quotas import CLIENT_ID, IP, USER, Entity
from znodes import entity_configs, paths
from znodes.api import NoNodeError, Store
from znodes.users import CONFIG_USERS, desanitize, sanitize

CONFIG_CLIENTS = f"{paths.CONFIG}/clients"
CONFIG_IPS = f"{paths.CONFIG}/ips"
DEFAULT = "<default>"  # Kafka's ConfigEntityName.Default
_ROOTS = {USER: "users", CLIENT_ID: "clients", IP: "ips"}


def stored_name(name: str | None) -> str:
    """An entity name as its znode is named; ValueError for a name no znode can have."""
    return DEFAULT if name is None else sanitize(name)


def _name(stored: str) -> str | None:
    return None if stored == DEFAULT else desanitize(stored)


def entity_path(entity: Entity) -> str:
    """Kafka's entity path of the entity's config (``users/alice/clients/app``)."""
    names = dict(entity)
    if USER in names and CLIENT_ID in names:
        return f"users/{stored_name(names[USER])}/clients/{stored_name(names[CLIENT_ID])}"
    (entity_type, name), = entity
    return f"{_ROOTS[entity_type]}/{stored_name(name)}"


async def _children(store: Store, path: str) -> list[str]:
    try:
        return sorted(await store.children(path))
    except NoNodeError:
        return []


async def read_all(store: Store) -> dict[Entity, dict[str, str]]:
    """Every quota entity's config (all its keys: the caller keeps the quotas). An entity whose
    znode went between its listing and its read is left out; ZnodeFormatError for one that does
    not decode."""
    found: list[tuple[Entity, str]] = []
    for user in await _children(store, CONFIG_USERS):
        found.append((((USER, _name(user)),), f"users/{user}"))
        for client in await _children(store, f"{CONFIG_USERS}/{user}/clients"):
            found.append((((USER, _name(user)), (CLIENT_ID, _name(client))), f"users/{user}/clients/{client}"))
    for client in await _children(store, CONFIG_CLIENTS):
        found.append((((CLIENT_ID, _name(client)),), f"clients/{client}"))
    for ip in await _children(store, CONFIG_IPS):
        found.append((((IP, _name(ip)),), f"ips/{ip}"))
    out: dict[Entity, dict[str, str]] = {}
    for entity, path in found:
        config = await entity_configs.read(store, path)
        if config:
            out[entity] = config
    return out
