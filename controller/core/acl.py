"""Kafka's ACL model and its authorization rule (AclAuthorizer), pure.

    acls = [Acl(Resource(TOPIC, "orders", LITERAL), "User:alice", "*", ALTER, ALLOW)]
    authorizer = AclRules(acls, super_users={"User:admin"}, allow_if_no_acl=False)
    authorizer.allows("User:alice", "10.0.0.7", DESCRIBE, TOPIC, "orders")     # True: ALTER implies DESCRIBE

The rule, as Kafka's AclAuthorizer has it:

 1. A super user may do everything.
 2. The ACLs that apply to a resource are those on its exact name (LITERAL), on the wildcard
    name ``*`` (LITERAL), and on every PREFIXED name it starts with.
 3. A DENY that matches the principal (or ``User:*``), the host (or ``*``) and the operation
    (or ALL) refuses.
 4. No ACL at all for the resource: ``allow.everyone.if.no.acl.found`` decides.
 5. Else an ALLOW that matches refuses nothing; DESCRIBE is also allowed by READ, WRITE,
    DELETE or ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS (Kafka's implied operations).

Codes are Kafka's wire codes (AclOperation, ResourceType, PatternType, AclPermissionType);
names are the ones Kafka writes in ZooKeeper (``"Alter"``, ``"Topic"``, ``"Allow"``).
Filters (DescribeAcls, DeleteAcls) are :class:`AclFilter`; :func:`validate` says why an ACL
cannot be created (Kafka's InvalidRequestException reasons); the authorizer applies it to the
ACLs it reads from ZooKeeper too, so a binding written there directly that Kafka would refuse
(a PREFIXED Cluster resource) grants nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

# ResourceType codes and the names ZooKeeper paths use (SecurityUtils.resourceTypeName).
ANY_RESOURCE, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
RESOURCE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
                  DELEGATION_TOKEN: "DelegationToken", USER: "User"}
# PatternType codes.
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
PATTERN_NAMES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}
# AclOperation codes and their ZooKeeper names.
ANY_OP, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS = 9, 10, 11, 12, 13, 14
OPERATION_NAMES = {ALL: "All", READ: "Read", WRITE: "Write", CREATE: "Create", DELETE: "Delete", ALTER: "Alter",
                   DESCRIBE: "Describe", CLUSTER_ACTION: "ClusterAction", DESCRIBE_CONFIGS: "DescribeConfigs",
                   ALTER_CONFIGS: "AlterConfigs", IDEMPOTENT_WRITE: "IdempotentWrite",
                   CREATE_TOKENS: "CreateTokens", DESCRIBE_TOKENS: "DescribeTokens"}
# AclPermissionType codes.
ANY_PERMISSION, DENY, ALLOW = 1, 2, 3
PERMISSION_NAMES = {DENY: "Deny", ALLOW: "Allow"}

WILDCARD = "*"  # resource name, host
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name
# Kafka's implied operations: an ALLOW of any of these also allows the key.
IMPLIED_BY = {DESCRIBE: {DESCRIBE, READ, WRITE, DELETE, ALTER}, DESCRIBE_CONFIGS: {DESCRIBE_CONFIGS, ALTER_CONFIGS}}


@dataclass(frozen=True, slots=True, order=True)
class Resource:
    type: int
    name: str
    pattern: int = LITERAL


@dataclass(frozen=True, slots=True, order=True)
class Acl:
    resource: Resource
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A DescribeAcls/DeleteAcls filter: None (or ANY) matches anything."""

    resource_type: int = ANY_RESOURCE
    name: str | None = None
    pattern: int = ANY_PATTERN
    principal: str | None = None
    host: str | None = None
    operation: int = ANY_OP
    permission: int = ANY_PERMISSION

    def matches(self, acl: Acl) -> bool:
        r = acl.resource
        if self.resource_type != ANY_RESOURCE and r.type != self.resource_type:
            return False
        if self.pattern == MATCH:
            # MATCH: the ACLs that would apply to the named resource (literal, wildcard, prefixes).
            if self.name is not None and not _applies(r, self.name):
                return False
        else:
            if self.pattern not in (ANY_PATTERN, r.pattern):
                return False
            if self.name is not None and r.name != self.name:
                return False
        return (
            (self.principal is None or acl.principal == self.principal)
            and (self.host is None or acl.host == self.host)
            and self.operation in (ANY_OP, acl.operation)
            and self.permission in (ANY_PERMISSION, acl.permission)
        )


def filter_error(f: AclFilter) -> str | None:
    """Why a filter is unusable, None if it is fine (Kafka refuses UNKNOWN codes)."""
    if f.resource_type not in (ANY_RESOURCE, *RESOURCE_NAMES):
        return f"unknown resource type {f.resource_type}"
    if f.pattern not in (ANY_PATTERN, MATCH, LITERAL, PREFIXED):
        return f"unknown pattern type {f.pattern}"
    if f.operation not in (ANY_OP, *OPERATION_NAMES):
        return f"unknown operation {f.operation}"
    if f.permission not in (ANY_PERMISSION, DENY, ALLOW):
        return f"unknown permission type {f.permission}"
    return None


def validate(acl: Acl) -> str | None:
    """Why ``acl`` cannot be created, None if it can."""
    r = acl.resource
    if r.type not in RESOURCE_NAMES:
        return f"resource type {r.type} is not a specific type"
    if r.pattern not in PATTERN_NAMES:
        return f"pattern type {r.pattern} is not LITERAL or PREFIXED"
    if not r.name:
        return "Invalid empty resource name"
    if "/" in r.name:  # Kafka's AclAuthorizer: the name is a znode name
        return f"ACL binding contains invalid resource name: {r.name}"
    if r.type == CLUSTER and r.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if r.type == CLUSTER and r.pattern != LITERAL:
        # A PREFIXED 'kafka' would match kafka-cluster: the grant must name it exactly.
        return f"the CLUSTER resource is LITERAL {CLUSTER_NAME}, not {PATTERN_NAMES[r.pattern]}"
    if r.pattern == PREFIXED and r.name == WILDCARD:
        return "a PREFIXED ACL cannot be on '*' (use LITERAL '*')"
    if acl.operation not in OPERATION_NAMES:
        return f"operation {acl.operation} is not a specific operation"
    if acl.permission not in PERMISSION_NAMES:
        return f"permission type {acl.permission} is not ALLOW or DENY"
    kind, sep, name = acl.principal.partition(":")
    if not (sep and kind and name):
        return f"principal {acl.principal!r} is not Type:name"
    if not acl.host:
        return "host must not be empty (use '*')"
    return None


def _applies(resource: Resource, name: str) -> bool:
    if resource.pattern == LITERAL:
        return resource.name in (name, WILDCARD)
    return resource.pattern == PREFIXED and name.startswith(resource.name)


class AclRules:
    """The ACLs in force, indexed by resource type, with the authorization rule above."""

    def __init__(self, acls, *, super_users=frozenset(), allow_if_no_acl: bool = False):
        self.acls = frozenset(acls)
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._by_type: dict[int, list[Acl]] = {}
        for acl in self.acls:
            self._by_type.setdefault(acl.resource.type, []).append(acl)

    def applying(self, resource_type: int, name: str) -> list[Acl]:
        return [a for a in self._by_type.get(resource_type, ()) if _applies(a.resource, name)]

    def allows(self, principal: str | None, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal is None:
            return False
        if principal in self.super_users:
            return True
        acls = self.applying(resource_type, name)
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)

        def matching(permission: int, operations) -> bool:
            return any(
                a.permission == permission and a.principal in principals and a.host in hosts
                and (a.operation == ALL or a.operation in operations)
                for a in acls
            )

        if matching(DENY, {operation}):
            return False
        if not acls:
            return self.allow_if_no_acl
        return matching(ALLOW, IMPLIED_BY.get(operation, {operation}))


# KIP-430: the operations an authorised-operations field reports, per resource type (Kafka's
# AclEntry.supportedOperations); bit ``code`` is set for each one allowed.
SUPPORTED_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
}


def operations_field(operations) -> int:
    """KIP-430's 32-bit field: bit ``code`` set for each operation."""
    return sum(1 << op for op in set(operations))


def authorized_operations(rules: AclRules, principal: str | None, host: str, resource_type: int, name: str) -> int:
    """The KIP-430 field of what ``principal`` may do on the resource: each supported operation
    the rule above allows (implied ones included, as Kafka asks the authorizer op by op)."""
    # The resource's ACLs are looked up once, not once per operation: Metadata asks this for
    # every topic of the cluster.
    own = AclRules(rules.applying(resource_type, name), super_users=rules.super_users,
                   allow_if_no_acl=rules.allow_if_no_acl)
    return operations_field(op for op in SUPPORTED_OPERATIONS[resource_type]
                            if own.allows(principal, host, op, resource_type, name))
