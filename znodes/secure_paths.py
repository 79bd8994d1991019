"""The znodes the service trusts, and whether anyone but the service may change them.

Kafka's AclAuthorizer creates its paths at start (``KafkaZkClient.createAclPaths``: each ACL
store's root and resource-type children, and both change paths), as the broker creates its
persistent paths (``ZkData.PersistentZkPaths``), each with the secure ACL when
``zookeeper.set.acl`` is on. A path left for later is one that whoever comes first creates, with
an ACL of their choosing: without a chroot the ZooKeeper root is ``world:anyone:ALL``, so a
stranger could create ``/kafka-acl-extended/prefixed/Cluster/...`` and grant themselves
everything. So the service creates them all (:data:`TRUSTED`, parents first) and checks them::

    await ensure_trusted(store)                            # each missing one, with the store's ACLs
    problems = await exposures(store, owners(security))    # [Exposure(path, "world:anyone", "cdrwa")]

An exposure is a grant of a write permission (write, create, delete, admin) to any identity
that is not the service's, or of read on a path Kafka keeps unreadable (SCRAM credentials,
broker configs, the SCRAM decoy secret: ``znodes.security.SENSITIVE_ROOTS``). Checked: every
trusted path, the KIP door znodes and the service's secrets that exist, and each ACL resource
znode and user znode that exists (those hold the grants and the credentials themselves).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions, make_digest_acl_credential

from znodes import acls as zacls
from znodes import decoy_secret, paths
from znodes.api import NoNodeError, ZkError
from znodes.security import ZkSecurity, sensitive
from znodes.client_quotas import CONFIG_CLIENTS, CONFIG_IPS
from znodes.users import CONFIG_USERS

# The service's own registry of controller instances (controller.shell.daemon's
# CONTROLLERS_PATH): a stranger's entry there would send clients to their listener.
SERVICE_ROOT = "/reassignd"
CONTROLLERS = paths.CONTROLLER_INSTANCES

ACL_PATHS = (
    zacls.LITERAL_ROOT,
    *(f"{zacls.LITERAL_ROOT}/{t}" for t in zacls.TYPES),
    zacls.PREFIXED_ROOT.rsplit("/", 1)[0],  # /kafka-acl-extended
    zacls.PREFIXED_ROOT,
    *(f"{zacls.PREFIXED_ROOT}/{t}" for t in zacls.TYPES),
    zacls.LITERAL_CHANGES,
    zacls.EXTENDED_CHANGES,
)
# Kafka's ConfigType.all, each created by its brokers at start (the quota entities' too: a
# stranger's /config/clients would hold the client quotas the service writes).
CONFIG_PATHS = (paths.CONFIG, CONFIG_USERS, paths.CONFIG_TOPICS, paths.CONFIG_BROKERS, paths.CONFIG_CHANGES,
                CONFIG_CLIENTS, CONFIG_IPS)
ADMIN_PATHS = (paths.ADMIN, paths.REASSIGNMENTS, paths.DELETE_TOPICS)
CLUSTER_PATHS = (paths.BROKERS, paths.BROKER_IDS, paths.TOPICS, paths.ISR_CHANGE_NOTIFICATION, SERVICE_ROOT,
                 CONTROLLERS)
# Created at start, parents before children (each gets its own ACL, not its child's).
TRUSTED = (*ACL_PATHS, *CONFIG_PATHS, *ADMIN_PATHS, *CLUSTER_PATHS)
# Doors the tools create and the controller acts on: never created here (their creation is the
# request), but one that exists must be the service's.
DOORS = (paths.REASSIGN_PARTITIONS, paths.CANCEL_REASSIGNMENT, paths.REASSIGN_QUEUE,
         paths.THROTTLED_REPLICAS_REMOVAL, paths.THROTTLED_RATES_REMOVAL, paths.CONTROLLER_EPOCH,
         paths.PREFERRED_REPLICA_ELECTION)
# The service's own secrets: never created here (the first instance that needs one does), but
# one that exists must be readable and changeable by the service alone.
SECRETS = (decoy_secret.PATH,)
# Parents whose every child is checked too: the ACL resources and the SCRAM credentials.
CHECKED_CHILDREN = (*(f"{root}/{t}" for root in (zacls.LITERAL_ROOT, zacls.PREFIXED_ROOT) for t in zacls.TYPES),
                    CONFIG_USERS)
WRITES = Permissions.WRITE | Permissions.CREATE | Permissions.DELETE | Permissions.ADMIN
# zkCli's letters for a permission set.
_LETTERS = ((Permissions.CREATE, "c"), (Permissions.DELETE, "d"), (Permissions.READ, "r"), (Permissions.WRITE, "w"),
            (Permissions.ADMIN, "a"))
# How many exposed paths a refusal names (the rest are counted): enough to act on.
SHOWN = 5
# Stands for the ACL of a znode the service may not even read the ACL of: someone else's.
UNREADABLE = ACL(Permissions.ALL, Id("unknown", "ACL not readable by the service"))


@dataclass(frozen=True)
class Exposure:
    path: str
    grantee: str  # "world:anyone", "digest:mallory:...", "ip:10.0.0.0/8"
    perms: str  # zkCli letters, e.g. "cdrwa"

    def __str__(self) -> str:
        return f"{self.path} ({self.grantee}:{self.perms})"


def owners(security: ZkSecurity) -> frozenset[tuple[str, str]]:
    """The service's ZooKeeper identities as (scheme, id), as ZooKeeper stores them in ACLs."""
    out = set()
    if security.digest is not None:
        out.add(("digest", make_digest_acl_credential(*security.digest)))
    if security.sasl is not None:
        out.add(("sasl", security.sasl[0]))
    return frozenset(out)


def letters(perms: int) -> str:
    return "".join(letter for bit, letter in _LETTERS if perms & bit)


def exposed(path: str, acl: list, service: frozenset[tuple[str, str]]) -> list[Exposure]:
    """The grants of ``acl`` (kazoo ACL entries of ``path``) to identities other than
    ``service`` that let them change the znode or its children, or read a sensitive one."""
    risky = WRITES | (Permissions.READ if sensitive(path) else 0)
    out = []
    for entry in acl:
        if (entry.id.scheme, entry.id.id) in service:
            continue
        perms = entry.perms & risky
        if perms:
            out.append(Exposure(path, f"{entry.id.scheme}:{entry.id.id}", letters(perms)))
    return out


def _refused(error: ZkError) -> bool:
    """ZooKeeper's NoAuth (the store keeps kazoo's name in the message)."""
    return "NoAuth" in str(error) or "NoAuth" in type(error.__cause__).__name__


async def ensure_trusted(store) -> list[str]:
    """Create every trusted path that is missing (with the ACL the store gives new znodes); the
    ones created. One whose parent refuses the service is left to :func:`exposures`, which
    names that parent."""
    created = []
    for path in TRUSTED:
        if await store.exists(path) is None:
            try:
                await store.ensure_path(path)
            except ZkError as e:
                if not _refused(e):
                    raise
                continue
            created.append(path)
    return created


async def acl_of(store, path: str) -> list | None:
    """The znode's ACL; None when it does not exist, :data:`UNREADABLE` when the service may
    not read it."""
    try:
        return await store.get_acls(path)
    except NoNodeError:
        return None
    except ZkError as e:
        if not _refused(e):
            raise
        return [UNREADABLE]


async def _children(store, path: str) -> list[str]:
    try:
        return await store.children(path)
    except NoNodeError:
        return []
    except ZkError as e:
        if not _refused(e):
            raise
        return []  # the parent's own ACL is reported


async def exposures(store, service: frozenset[tuple[str, str]]) -> list[Exposure]:
    """Every exposure (see the module's docstring) on the trusted paths, the existing doors and
    secrets and each existing ACL resource and user znode, in path order. ``store`` needs ``get_acls``
    (znodes.store.KazooStore)."""
    listed = await asyncio.gather(*(_children(store, p) for p in CHECKED_CHILDREN))
    checked = [*TRUSTED, *DOORS, *SECRETS, *(f"{p}/{n}" for p, names in zip(CHECKED_CHILDREN, listed) for n in names)]
    acls = await asyncio.gather(*(acl_of(store, p) for p in checked))
    out = [e for path, acl in zip(checked, acls) if acl is not None for e in exposed(path, acl, service)]
    return sorted(out, key=lambda e: e.path)


def refusal(problems: list[Exposure], hosts: str, *, what: str) -> str:
    """A refusal naming the exposed paths and how to fix them."""
    shown = ", ".join(str(p) for p in problems[:SHOWN])
    more = f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return (f"{what}: ZooKeeper lets others change what the service trusts: {shown}{more}. Fix: give the service "
            f"its identity (zookeeper.auth.digest or zookeeper.sasl.jaas.config) with zookeeper.set.acl=true, and "
            f"run `reassignd zk secure-acls --zookeeper {hosts} --zk-config FILE` with that identity (Kafka's "
            f"zookeeper-security-migration), which creates the missing paths and sets the secure ACL on every znode")


def migrate(hosts: str, security: ZkSecurity, *, secure: bool = True, timeout: float = 10.0) -> int:
    """Set every znode's ACL under ``hosts`` (its chroot included) to Kafka's secure ACL, or to
    OPEN_ACL_UNSAFE with ``secure=False``; the number of znodes set. Parents before children,
    so a half-done run leaves no znode unreachable. Securing first creates each path the
    service trusts that is missing (:data:`TRUSTED`), so no stranger can create it later with
    an ACL of their own. ``reassignd zk secure-acls`` runs it (Kafka's
    zookeeper-security-migration)."""
    from kazoo.client import KazooClient

    if secure and security.digest is None and security.sasl is None:
        raise ValueError("secure ACLs need zookeeper.auth.digest or zookeeper.sasl.jaas.config (the identity they grant)")
    client = KazooClient(hosts=hosts, timeout=timeout, **security.client_options())
    client.start(timeout=timeout)
    try:
        if secure:
            for path in TRUSTED:  # parents first, each with its own ACL
                client.ensure_path(path, acl=security.acl_for(path))
        count, stack = 0, ["/"]
        while stack:
            path = stack.pop()
            if path == "/zookeeper":  # ZooKeeper's own quota tree
                continue
            # The root itself only when it is our chroot: the server's root is not ours to lock.
            if path != "/" or client.chroot:
                client.set_acls(path, security.acl_for(path) if secure else OPEN_ACL_UNSAFE)
                count += 1
            stack.extend(("" if path == "/" else path) + "/" + child for child in client.get_children(path))
        return count
    finally:
        client.stop()
        client.close()
