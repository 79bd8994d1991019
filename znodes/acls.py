"""ACLs in ZooKeeper, in Kafka's layout (AclAuthorizer's ZkAclStore), so ACLs written by
``kafka-acls.sh --authorizer-properties zookeeper.connect=...`` apply here and the other way round.

| path | payload |
|---|---|
| ``/kafka-acl/<Type>/<name>`` (LITERAL) | ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Alter","host":"*"}]}`` |
| ``/kafka-acl-extended/prefixed/<Type>/<name>`` (PREFIXED) | the same |
| ``/kafka-acl-changes/acl_changes_<seq>`` | ``Topic:orders`` (a LITERAL resource changed) |
| ``/kafka-acl-extended-changes/acl_changes_<seq>`` | ``{"version":1,"resourceType":"TOPIC","name":"orders","patternType":"PREFIXED"}`` |

``<Type>`` is ``Topic``, ``Group``, ``Cluster``, ``TransactionalId``, ``DelegationToken`` or
``User``. Entries are plain dicts here (controller.core.acl gives them meaning)::

    resources = await read_all(store)          # [AclZnode("Topic", "LITERAL", "orders", [...entries])]
    await update(store, "Topic", "LITERAL", "orders", lambda entries: entries + [entry])
    marker = await change_marker(store)        # changes whenever any ACL changes
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from znodes.api import BadVersionError, NodeExistsError, NoNodeError, Store
from znodes.errors import ZnodeFormatError
from znodes.reads import children_or_empty, get_many

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ROOTS = {"LITERAL": LITERAL_ROOT, "PREFIXED": PREFIXED_ROOT}
TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
ENTRY_KEYS = ("principal", "permissionType", "operation", "host")
# Read-modify-write of one resource znode, raced by another writer: retried this often.
WRITE_ATTEMPTS = 5


@dataclass(frozen=True)
class AclZnode:
    type: str
    pattern: str
    name: str
    entries: tuple[dict, ...]


def resource_path(type_name: str, pattern: str, name: str) -> str:
    if type_name not in TYPES or pattern not in ROOTS:
        raise ValueError(f"no ACL path for {pattern} {type_name}")
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"resource name {name!r} cannot be a znode name")
    return f"{ROOTS[pattern]}/{type_name}/{name}"


def decode_entries(path: str, data: bytes) -> tuple[dict, ...]:
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeFormatError(path, f"payload is not JSON: {e}") from None
    acls = doc.get("acls") if isinstance(doc, dict) else None
    if not isinstance(acls, list) or not all(
        isinstance(a, dict) and all(isinstance(a.get(k), str) for k in ENTRY_KEYS) for a in acls
    ):
        raise ZnodeFormatError(path, 'expected {"version":1,"acls":[{"principal","permissionType","operation","host"}]}')
    return tuple({k: a[k] for k in ENTRY_KEYS} for a in acls)


def encode_entries(entries) -> bytes:
    return json.dumps({"version": 1, "acls": list(entries)}, separators=(",", ":")).encode()


async def read_all(store: Store) -> list[AclZnode]:
    """Every ACL resource znode; unreadable ones are skipped (a bad znode must not lock
    everyone out of the rest)."""
    paths: list[tuple[str, str, str, str]] = []
    for pattern, root in ROOTS.items():
        for type_name in TYPES:
            for name in await children_or_empty(store, f"{root}/{type_name}"):
                paths.append((type_name, pattern, name, f"{root}/{type_name}/{name}"))
    out = []
    for (type_name, pattern, name, path), read in zip(paths, await get_many(store, [p[3] for p in paths])):
        if read is None:
            continue
        try:
            out.append(AclZnode(type_name, pattern, name, decode_entries(path, read[0])))
        except ZnodeFormatError:
            continue
    return out


async def purge_notifications(store: Store, now_ms: int, older_than_ms: int) -> int:
    """Delete change notifications created more than ``older_than_ms`` before ``now_ms`` (Kafka's
    ZkNodeChangeNotificationListener does so, after 15 minutes); how many went."""
    gone = 0
    for parent in (LITERAL_CHANGES, EXTENDED_CHANGES):
        names = [n for n in await children_or_empty(store, parent) if n.startswith(CHANGE_PREFIX)]
        paths = [f"{parent}/{n}" for n in names]
        for path, read in zip(paths, await get_many(store, paths)):
            if read is not None and read[1].ctime < now_ms - older_than_ms:
                try:
                    await store.delete(path)
                    gone += 1
                except NoNodeError:  # another instance purged it first
                    pass
    return gone


async def change_marker(store: Store) -> tuple[int, int]:
    """(cversion of /kafka-acl-changes, of /kafka-acl-extended-changes): moves on every change
    notification, whoever wrote it."""
    reads = await get_many(store, [LITERAL_CHANGES, EXTENDED_CHANGES])
    return tuple(-1 if r is None else r[1].cversion for r in reads)  # type: ignore[return-value]


# Java's ResourceType enum names, which the extended change event carries.
ENUM_NAMES = {"Topic": "TOPIC", "Group": "GROUP", "Cluster": "CLUSTER", "TransactionalId": "TRANSACTIONAL_ID",
              "DelegationToken": "DELEGATION_TOKEN", "User": "USER"}


def _notification(type_name: str, pattern: str, name: str) -> tuple[str, bytes]:
    if pattern == "LITERAL":
        return LITERAL_CHANGES, f"{type_name}:{name}".encode()
    event = {"version": 1, "resourceType": ENUM_NAMES[type_name], "name": name, "patternType": pattern}
    return EXTENDED_CHANGES, json.dumps(event, separators=(",", ":")).encode()


async def update(
    store: Store, type_name: str, pattern: str, name: str, change: Callable[[list[dict]], list[dict] | None]
) -> bool:
    """Apply ``change(entries) -> entries | None`` (None: nothing to do) to one resource with a
    version check; an empty result deletes the znode, as Kafka does. Then notify. Whether
    anything changed."""
    path = resource_path(type_name, pattern, name)
    for _ in range(WRITE_ATTEMPTS):
        try:
            data, stat = await store.get(path)
            entries, version = list(decode_entries(path, data)), stat.version
        except NoNodeError:
            entries, version = [], None
        new = change(list(entries))
        if new is None:
            return False
        try:
            if version is None:
                if not new:
                    return False
                await store.create(path, encode_entries(new), makepath=True)
            elif new:
                await store.set(path, encode_entries(new), version)
            else:
                await store.delete(path, version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
        parent, payload = _notification(type_name, pattern, name)
        await store.create(f"{parent}/{CHANGE_PREFIX}", payload, sequential=True, makepath=True)
        return True
    raise BadVersionError(f"{path} kept changing under {WRITE_ATTEMPTS} attempts to update it")
