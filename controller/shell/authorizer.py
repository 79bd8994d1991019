"""The ACL authorizer of the admin API: Kafka's AclAuthorizer over its ZooKeeper layout.

    authorizer = Authorizer(role, super_users={"User:admin"}, allow_if_no_acl=False)
    if not await authorizer.allows(session, ALTER, CLUSTER, CLUSTER_NAME): ...
    await authorizer.create(acl); await authorizer.delete(AclFilter(...))

ACLs are read from ZooKeeper (znodes.acls) through the instance's current session and kept in
memory; before they are used, at most every :data:`REFRESH_S`, the change-notification
parents are looked at (one multiRead) and everything is re-read when a notification arrived,
so ACLs written by another controller instance or by Kafka's tooling apply within that bound.
This instance's own writes apply at once.

Which operation each API needs is :data:`API_OPERATIONS` (Kafka's mapping for the APIs it
shares; the KIP APIs change or read the cluster's assignment as AlterPartitionReassignments
and ListPartitionReassignments do). Metadata and DescribeConfigs check per topic in their
handlers.
"""

from __future__ import annotations

import logging
import time

from controller.core.acl import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    OPERATION_NAMES,
    PATTERN_NAMES,
    RESOURCE_NAMES,
    SUPPORTED_OPERATIONS,
    Acl,
    AclFilter,
    AclRules,
    Resource,
    authorized_operations,
    operations_field,
    validate,
)
from controller.shell.security.principal import ANONYMOUS
from protocol import ApiKey
from znodes import acls as zacls
from znodes.api import ZkError

log = logging.getLogger("reassignd.authorizer")

# How stale ACLs written elsewhere may be when a request is authorized (one ZooKeeper read per
# interval at most, however many requests arrive).
REFRESH_S = 1.0
# Kafka's ZkNodeChangeNotificationListener changeExpirationMs: ACL change notifications older
# than this are deleted when ACLs are re-read, so the notification parents stay small.
NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000

# api key -> (operation, resource type) on the cluster resource.
API_OPERATIONS: dict[int, tuple[int, int]] = {
    ApiKey.REASSIGN_PARTITIONS: (ALTER, CLUSTER),  # KIP-179
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (ALTER, CLUSTER),
    ApiKey.ALTER_INTERBROKER_THROTTLED_RATES: (ALTER, CLUSTER),
    ApiKey.ALTER_INTERBROKER_THROTTLED_REPLICAS: (ALTER, CLUSTER),
    ApiKey.CANCEL_REASSIGNMENTS: (ALTER, CLUSTER),  # KIP-236
    ApiKey.LIST_REASSIGNMENTS: (DESCRIBE, CLUSTER),  # KIP-240
    ApiKey.DESCRIBE_REASSIGNMENTS: (DESCRIBE, CLUSTER),  # KIP-240
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (DESCRIBE, CLUSTER),
    ApiKey.DESCRIBE_ACLS: (DESCRIBE, CLUSTER),
    ApiKey.CREATE_ACLS: (ALTER, CLUSTER),
    ApiKey.DELETE_ACLS: (ALTER, CLUSTER),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (DESCRIBE, CLUSTER),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (ALTER, CLUSTER),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (DESCRIBE_CONFIGS, CLUSTER),  # KIP-546, Kafka's
    ApiKey.ALTER_CLIENT_QUOTAS: (ALTER_CONFIGS, CLUSTER),
    ApiKey.ELECT_LEADERS: (ALTER, CLUSTER),  # Kafka: ALTER on the cluster
    ApiKey.CONTROLLED_SHUTDOWN: (CLUSTER_ACTION, CLUSTER),  # Kafka: brokers' own operation
    ApiKey.ALTER_PARTITION: (CLUSTER_ACTION, CLUSTER),  # Kafka: brokers' own operation
    ApiKey.ALLOCATE_PRODUCER_IDS: (CLUSTER_ACTION, CLUSTER),  # Kafka: brokers' own operation
    ApiKey.DESCRIBE_LOG_DIRS: (DESCRIBE, CLUSTER),  # Kafka: refused whole, no directories
    ApiKey.ALTER_REPLICA_LOG_DIRS: (ALTER, CLUSTER),  # Kafka: every replica CLUSTER_AUTHORIZATION_FAILED
}
# Checked per resource in their handlers, as Kafka does: CreateTopics (19) CREATE on the cluster
# or the topic, DeleteTopics (20) DELETE and CreatePartitions (37) ALTER on the topic alone,
# AlterConfigs (33) and IncrementalAlterConfigs (44) ALTER_CONFIGS on the topic (the cluster for
# a broker resource); a request-wide gate here would refuse a principal holding only the
# topic's grant. Metadata (3) and DescribeConfigs (32) check per topic too (docs/DESIGN.md 8).
# DescribeGroups (15) needs DESCRIBE on each group; ListGroups (16) lists only the groups the
# principal may DESCRIBE (all of them with DESCRIBE on the cluster); ListTransactions (66) only
# the transactions whose transactional id it may DESCRIBE.
PER_RESOURCE_APIS = (
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.LIST_TRANSACTIONS,
)

_TYPE_CODES = {name: code for code, name in RESOURCE_NAMES.items()}
_OPERATION_CODES = {name.lower(): code for code, name in OPERATION_NAMES.items()}
_PERMISSION_CODES = {"allow": 3, "deny": 2}
_PATTERN_CODES = {name: code for code, name in PATTERN_NAMES.items()}


def entry_acl(resource: Resource, e: dict) -> Acl | None:
    """One ZooKeeper entry as an Acl (names compared without case, as Kafka's fromString)."""
    operation = _OPERATION_CODES.get(e["operation"].lower())
    permission = _PERMISSION_CODES.get(e["permissionType"].lower())
    if operation is None or permission is None:
        return None
    return Acl(resource, e["principal"], e["host"], operation, permission)


def from_znodes(znodes) -> list[Acl]:
    """The ACLs of the resource znodes that Kafka would accept; every other one is refused and
    logged (a binding CreateAcls refuses, e.g. a PREFIXED Cluster resource, must not take
    effect because someone wrote it into ZooKeeper directly)."""
    out = []
    for z in znodes:
        resource = Resource(_TYPE_CODES[z.type], z.name, _PATTERN_CODES[z.pattern])
        for e in z.entries:
            acl = entry_acl(resource, e)
            problem = "unknown operation or permission type" if acl is None else validate(acl)
            if problem:
                log.warning("ACL on %s %s %r refused: %s: %r", z.pattern, z.type, z.name, problem, e)
            else:
                out.append(acl)
    return out


def to_entry(acl: Acl) -> dict:
    return {"principal": acl.principal, "permissionType": "Allow" if acl.permission == 3 else "Deny",
            "operation": OPERATION_NAMES[acl.operation], "host": acl.host}


def who(session) -> tuple[str | None, str]:
    """(principal, host) of a request's connection (anonymous when it has no session)."""
    if session is None:
        return ANONYMOUS, ""
    return session.current_principal(), session.host


class Authorizer:
    def __init__(self, role, *, super_users=frozenset(), allow_if_no_acl: bool = False):
        self.role = role
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._rules: AclRules | None = None
        self._marker: tuple | None = None
        self._checked = 0.0
        self._store = None

    async def rules(self) -> AclRules:
        store = self.role.store
        if store is None:
            raise ConnectionError("no ZooKeeper session: ACLs cannot be read")
        now = time.monotonic()
        if self._rules is not None and store is self._store and now - self._checked < REFRESH_S:
            return self._rules
        marker = await zacls.change_marker(store)
        if self._rules is None or store is not self._store or marker != self._marker:
            self._rules = AclRules(from_znodes(await zacls.read_all(store)), super_users=self.super_users,
                                   allow_if_no_acl=self.allow_if_no_acl)
            self._marker, self._store = marker, store
            try:
                await zacls.purge_notifications(store, int(time.time() * 1000), NOTIFICATION_EXPIRY_MS)
            except ZkError as e:  # not ours to delete (ZooKeeper ACLs), or the session went: next time
                log.info("ACL change notifications not purged: %r", e)
        self._checked = now
        return self._rules

    async def allows(self, session, operation: int, resource_type: int, name: str) -> bool:
        principal, host = who(session)
        if principal in self.super_users:
            return True
        return (await self.rules()).allows(principal, host, operation, resource_type, name)

    async def allows_api(self, session, api_key: int) -> bool:
        need = API_OPERATIONS.get(api_key)
        return need is None or await self.allows(session, need[0], need[1], CLUSTER_NAME)

    async def authorized_operations(self, session, resource_type: int, name: str) -> int:
        """KIP-430's field for the resource: the operations the session's principal may do."""
        principal, host = who(session)
        if principal in self.super_users:
            return operations_field(SUPPORTED_OPERATIONS[resource_type])
        return authorized_operations(await self.rules(), principal, host, resource_type, name)

    async def describe(self, f: AclFilter) -> list[Acl]:
        return sorted(a for a in (await self.rules()).acls if f.matches(a))

    async def create(self, acl: Acl) -> None:
        failed: dict[Acl, Exception] = {}
        await self.create_all([acl], failed)
        if failed:
            raise failed[acl]

    async def create_all(self, acls: list[Acl], failed: dict[Acl, Exception]) -> None:
        """Add ``acls``: one write and one change notification per resource, whatever the
        number of its ACLs (Kafka's AclAuthorizer.createAcls groups them so); a resource whose
        update fails (ZkError, or ValueError: a name ZooKeeper cannot hold) has its ACLs put in
        ``failed`` with the error, and the other resources go on."""
        store = self.role.store
        by_resource: dict[Resource, list[Acl]] = {}
        for acl in acls:
            by_resource.setdefault(acl.resource, []).append(acl)
        try:
            for r, mine in by_resource.items():
                added = [to_entry(a) for a in mine]

                def add(entries, added=added):
                    new = entries + [e for i, e in enumerate(added) if e not in entries and e not in added[:i]]
                    return new if len(new) > len(entries) else None

                try:
                    await zacls.update(store, RESOURCE_NAMES[r.type], PATTERN_NAMES[r.pattern], r.name, add)
                except (ZkError, ValueError) as e:
                    failed.update((a, e) for a in mine)
        finally:
            self._rules = None  # our own writes apply at once (and a failed one is read again)

    async def delete(self, f: AclFilter, failed: dict[Acl, ZkError] | None = None) -> list[Acl]:
        """Delete every ACL matching ``f``, resource by resource; the ones deleted. With
        ``failed``, a resource whose update fails has its ACLs put there with the error and
        the other resources go on (Kafka's AclAuthorizer.deleteAcls); without, it is raised."""
        store = self.role.store
        doomed = await self.describe(f)
        gone = set(doomed)
        deleted: list[Acl] = []
        try:
            for r in sorted({acl.resource for acl in doomed}):
                def drop(old, r=r):
                    kept = [e for e in old if entry_acl(r, e) not in gone]
                    return kept if len(kept) < len(old) else None

                mine = [a for a in doomed if a.resource == r]
                try:
                    await zacls.update(store, RESOURCE_NAMES[r.type], PATTERN_NAMES[r.pattern], r.name, drop)
                except ZkError as e:
                    if failed is None:
                        raise
                    failed.update((a, e) for a in mine)
                    continue
                deleted += mine
        finally:
            self._rules = None
        return deleted
