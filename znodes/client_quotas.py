"""Client quotas in ZooKeeper, where and as Kafka's ZooKeeper mode keeps them (``kafka-configs.sh
--alter --entity-type users --entity-name alice --add-config producer_byte_rate=1024`` writes the
same): in the entity config znodes (znodes.entity_configs) of

    /config/users/<user>                      a user's quotas (beside its SCRAM credentials)
    /config/users/<user>/clients/<client id>  a user's quotas for one of its client ids
    /config/clients/<client id>               a client id's quotas
    /config/ips/<ip>                          an IP's connection rate (KIP-612)

each name sanitized as Kafka's Sanitizer does (znodes.users.sanitize), a type's default entity
named ``<default>``. Entities are protocol.client_quotas' tuples. The two requests are served
here for both servers that answer them, the controller's listener and the simulated brokers
(as every ZooKeeper-mode Kafka broker does), over their own ZooKeeper session; the rules are
protocol.client_quotas'::

    answer = await describe(store, {"components": [], "strict": False})
    answer = await alter(store, {"entries": [...], "validate_only": False})
    await read_all(store)          # {(("user", "alice"),): {"producer_byte_rate": "1024", ...}, ...}
    entity_path((("user", None), ("client-id", "app")))    # "users/<default>/clients/app"

    Describe: the filter checked first (a refusal is the whole request's error, with null
              entries); then every quota entity in ZooKeeper the filter selects, with its quota
              keys as numbers. A stored quota that is not a number fails the whole request
              UNKNOWN_SERVER_ERROR naming it, as Kafka's does; so does a config znode that does
              not decode (a removal of the quota repairs the first, not the second).
    Alter:    per entry, in request order: the entity, then every op in order (a set checked and
              formatted as Kafka stores it, a removal of a quota key); any refusal leaves the
              entity unchanged. Then, unless ``validate_only``, one write of the entity's config
              znode (its other configs kept: a user's SCRAM credentials) conditional on the
              version read, and one change notification; nothing is written when nothing
              changes. An IP entity must be an address or a host name that resolves (Kafka's
              InetAddress.getByName; looked up off the event loop, at most RESOLVE_TIMEOUT_S).
              A name no znode can have ('.' or '..') is INVALID_REQUEST, where Kafka's write
              fails UNKNOWN_SERVER_ERROR. One result per entry, with the entity as the request
              named it.
"""

from __future__ import annotations

import asyncio
import socket

from protocol.client_quotas import (
    CLIENT_ID,
    IP,
    USER,
    Entity,
    QuotaError,
    describe_failure,
    entity_data,
    ip_literal,
    keys_for,
    parse_entity,
    parse_filter,
    read_value,
    stored_value,
)
from protocol.errors import ErrorCode
from znodes import entity_configs, paths
from znodes.api import Store
from znodes.errors import ZnodeFormatError
from znodes.reads import children_or_empty, get_many
from znodes.users import CONFIG_USERS, desanitize, sanitize, storable

CONFIG_CLIENTS = f"{paths.CONFIG}/clients"
CONFIG_IPS = f"{paths.CONFIG}/ips"
DEFAULT = "<default>"  # Kafka's ConfigEntityName.Default
_ROOTS = {USER: "users", CLIENT_ID: "clients", IP: "ips"}
# An IP entity's host name lookup (Kafka's is the JVM's resolver, unbounded): a resolver that
# hangs must not hold the request past a client's usual 30 s timeout.
RESOLVE_TIMEOUT_S = 5.0
# Where Kafka's write fails UNKNOWN_SERVER_ERROR: a name its Sanitizer leaves as '.' or '..'.
UNSTORABLE = "{type} {name!r} cannot be stored in ZooKeeper: its znode name would be a relative path"


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


async def read_all(store: Store) -> dict[Entity, dict[str, str]]:
    """Every quota entity's config (all its keys: the caller keeps the quotas), read together
    (znodes.reads.get_many). An entity whose znode went between its listing and its read is
    left out; ZnodeFormatError for one that does not decode."""
    users = sorted(await children_or_empty(store, CONFIG_USERS))
    user_clients = await asyncio.gather(*(children_or_empty(store, f"{CONFIG_USERS}/{u}/clients") for u in users))
    found: list[tuple[Entity, str]] = []
    for user, clients in zip(users, user_clients):
        found.append((((USER, _name(user)),), f"users/{user}"))
        for client in sorted(clients):
            found.append((((USER, _name(user)), (CLIENT_ID, _name(client))), f"users/{user}/clients/{client}"))
    for client in sorted(await children_or_empty(store, CONFIG_CLIENTS)):
        found.append((((CLIENT_ID, _name(client)),), f"clients/{client}"))
    for ip in sorted(await children_or_empty(store, CONFIG_IPS)):
        found.append((((IP, _name(ip)),), f"ips/{ip}"))
    out: dict[Entity, dict[str, str]] = {}
    znodes = [entity_configs.path_of(path) for _, path in found]
    for (entity, _), path, read in zip(found, znodes, await get_many(store, znodes)):
        config = entity_configs.decode(path, read[0]) if read is not None else {}
        if config:
            out[entity] = config
    return out


async def describe(store: Store, body: dict) -> dict:
    """DescribeClientQuotas' answer (see the module's docstring)."""
    try:
        filt = parse_filter([(c["entity_type"], c["match_type"], c["match"]) for c in body["components"]],
                            body["strict"])
    except QuotaError as e:
        return describe_failure(ErrorCode.UNSUPPORTED_VERSION if e.unsupported else ErrorCode.INVALID_REQUEST, e.message)
    try:
        found = await read_all(store)
    except ZnodeFormatError as e:
        return describe_failure(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
    entries = []
    for entity, config in found.items():
        if not filt.selects(entity):
            continue
        values = []
        for key in sorted(config.keys() & keys_for(entity).keys()):
            value = read_value(config[key])
            if value is None:
                return describe_failure(ErrorCode.UNKNOWN_SERVER_ERROR, "Unexpected client quota configuration value: "
                                        f"{entity_path(entity)} {key} -> {config[key]}")
            values.append({"key": key, "value": value})
        if values:
            entries.append({"entity": entity_data(entity), "values": values})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}


async def _resolves(host: str) -> bool:
    if ip_literal(host):
        return True
    try:
        await asyncio.wait_for(asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM),
                               RESOLVE_TIMEOUT_S)
    except (OSError, UnicodeError, ValueError, asyncio.TimeoutError):
        return False
    return True


async def _alter_one(store: Store, entry: dict, validate_only: bool) -> tuple[ErrorCode, str] | None:
    """One entry's checks and write: None when done (or, validating, when it would be)."""
    try:
        entity = parse_entity([(e["entity_type"], e["entity_name"]) for e in entry["entity"]])
        first_type, first_name = entity[0]
        if first_type == IP and first_name is not None and not await _resolves(first_name):
            raise QuotaError(f"{first_name} is not a valid IP or resolvable host.")
        keys = keys_for(entity)
        ops = [(op["key"], None if op["remove"] else stored_value(keys, op["key"], op["value"])) for op in entry["ops"]]
    except QuotaError as e:
        return ErrorCode.INVALID_REQUEST, e.message
    for entity_type, name in entity:
        if name is not None and not storable(name):
            return ErrorCode.INVALID_REQUEST, UNSTORABLE.format(type=entity_type, name=name)
    path = entity_path(entity)

    def change(config: dict[str, str]):
        new = dict(config)
        for key, text in ops:
            if text is not None:
                new[key] = text
            elif key in keys:  # never another config of the znode (a user's SCRAM credentials)
                new.pop(key, None)
        return new if new != config else None

    try:
        if validate_only:
            await entity_configs.read(store, path)  # a znode that does not decode fails here too
        else:
            await entity_configs.update(store, path, change)
    except ZnodeFormatError as e:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"{e}; left as it is"
    return None


async def alter(store: Store, body: dict) -> dict:
    """AlterClientQuotas' answer (see the module's docstring)."""
    results = []
    for entry in body["entries"]:
        problem = await _alter_one(store, entry, body["validate_only"])
        code, message = problem if problem is not None else (ErrorCode.NONE, None)
        results.append({"error_code": int(code), "error_message": message,
                        "entity": entity_data((e["entity_type"], e["entity_name"]) for e in entry["entity"])})
    return {"throttle_time_ms": 0, "entries": results}
