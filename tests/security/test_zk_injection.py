"""Issue 22 item 1 on real ZooKeeper: a secured deployment (a controller with the ACL authorizer,
``zookeeper.set.acl`` and a digest identity; an admin user made with ``reassignd users add``)
leaves no ACL or user znode that a stranger can create or change, with and without a chroot,
on a plain ZooKeeper (a session with no credentials at all) and on one started with
``--require-auth`` (a made-up digest identity, which such a server accepts). A chroot made
world-writable beforehand (by whoever made it) changes nothing: the service creates what it
trusts itself.

And a controller with the authorizer on refuses to start while a stranger may change what it
trusts (the old layout, or a stranger who came first), naming the path and the fix; after
``reassignd zk secure-acls`` it starts; ``reassignd controller`` exits 1 saying so.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from controller.core.acl import ALL, ALLOW, ALTER, CLUSTER, CLUSTER_NAME, LITERAL, TOPIC, Acl, Resource
from controller.core.config import ControllerConfig
from controller.shell.authorizer import Authorizer
from controller.shell.daemon import ControllerDaemon, InsecureZooKeeperError
from controller.shell.role import Role
from controller.shell.security.config import SecurityConfig
from tests.e2e.processes import REPO
from znodes import secure_paths
from znodes.launcher import LocalZooKeeper
from znodes.security import ZkSecurity

pytestmark = [pytest.mark.zk, pytest.mark.timeout(180)]

SERVICE = "reassignd:service-secret"
ZK_PROPS = {"zookeeper.auth.digest": SERVICE, "zookeeper.set.acl": "true"}
SERVER_PROPS = {**ZK_PROPS, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "super.users": "User:admin"}
EVERYTHING = json.dumps({"version": 1, "acls": [
    {"principal": "User:*", "permissionType": "Allow", "operation": "All", "host": "*"}]}).encode()
CREDENTIAL = b'{"version":1,"config":{"SCRAM-SHA-512":"salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}}'
ACTIVE_TIMEOUT_S = 30


def _server(tmp_path_factory, name: str, require_auth: bool):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path_factory.mktemp(name), require_auth=require_auth,
                        stop_with_parent=True)
    zk.start()
    return zk


@pytest.fixture(scope="module")
def open_zk(tmp_path_factory):
    zk = _server(tmp_path_factory, "zk-open", False)
    try:
        yield zk.connect_string
    finally:
        zk.stop()


@pytest.fixture(scope="module")
def auth_zk(tmp_path_factory):
    zk = _server(tmp_path_factory, "zk-require-auth", True)
    try:
        yield zk.connect_string
    finally:
        zk.stop()


def kazoo(hosts: str, digest: str | None) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=5, auth_data=[("digest", digest)] if digest else None)
    client.start(timeout=10)
    return client


@asynccontextmanager
async def controller(hosts: str, props=SERVER_PROPS):
    """An in-process controller on ``hosts``, entered once it is active."""
    daemon = ControllerDaemon(hosts, 101, ("127.0.0.1", 0), ControllerConfig(),
                              security=SecurityConfig.from_properties(props))
    task = asyncio.create_task(daemon.run())
    try:
        deadline = time.monotonic() + ACTIVE_TIMEOUT_S
        while daemon.role.active is None:
            if task.done():
                task.result()  # its error, as the test's
            assert time.monotonic() < deadline, "no active controller"
            await asyncio.sleep(0.1)
        yield daemon
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def add_user(hosts: str, tmp_path, user: str, password: str) -> None:
    config = tmp_path / "zk.properties"
    config.write_text(f"zookeeper.auth.digest={SERVICE}\n")  # no zookeeper.set.acl: secure all the same
    secret = tmp_path / f"{user}.password"
    secret.write_text(password + "\n")
    out = subprocess.run([sys.executable, "-m", "reassignd", "users", "add", "--zookeeper", hosts, "--zk-config",
                          str(config), "--user", user, "--password-file", str(secret)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


class Who:
    def __init__(self, principal):
        self.principal, self.host = principal, "10.0.0.9"

    def current_principal(self):
        return self.principal


def assert_refused(client: KazooClient, action, *args, **kwargs) -> None:
    with pytest.raises(NoAuthError):
        action(*args, **kwargs)


@pytest.mark.parametrize("server,chroot,stranger", [
    ("open_zk", "", None),                     # no chroot, no credentials: the server's root is world:anyone:ALL
    ("open_zk", "/kafka", "mallory:guess"),    # a chroot someone made world-writable
    ("auth_zk", "", "mallory:guess"),          # --require-auth accepts any digest identity
    ("auth_zk", "/kafka", "mallory:guess"),
])
async def test_strangers_cannot_create_or_change_acl_or_user_znodes(request, tmp_path, server, chroot, stranger):
    hosts = request.getfixturevalue(server) + chroot
    if chroot:  # made beforehand, world-writable (as `zkCli create /kafka` or another tool leaves it)
        maker = kazoo(request.getfixturevalue(server), stranger)
        maker.create(chroot, b"", acl=OPEN_ACL_UNSAFE)
        maker.stop()
        maker.close()
    add_user(hosts, tmp_path, "admin", "admin-secret")
    async with controller(hosts):
        store = await ZkSecurity.from_properties(ZK_PROPS).connect(hosts)
        try:  # the service's own ACL, as CreateAcls writes it
            authorizer = Authorizer(Role(1), super_users={"User:admin"})
            authorizer.role.store = store
            await authorizer.create(Acl(Resource(TOPIC, "orders", LITERAL), "User:alice", "*", ALL, ALLOW))
        finally:
            await store.close()
        client = kazoo(hosts, stranger)
        try:
            # The report's injection: a PREFIXED Cluster ACL for everyone, and its notification.
            # (makepath: what the stranger did while the service left the paths to whoever came first)
            assert_refused(client, client.create, "/kafka-acl-extended/prefixed/Cluster/kafka", EVERYTHING,
                           makepath=True)
            assert_refused(client, client.create, "/kafka-acl-extended-changes/acl_changes_",
                           b'{"version":1,"resourceType":"CLUSTER","name":"kafka","patternType":"PREFIXED"}',
                           sequence=True, makepath=True)
            assert_refused(client, client.create, "/kafka-acl/Cluster/kafka-cluster", EVERYTHING, makepath=True)
            assert_refused(client, client.create, "/kafka-acl-changes/acl_changes_", b"Cluster:kafka-cluster",
                           sequence=True, makepath=True)
            # An existing ACL: not changed, deleted nor re-ACLed.
            assert_refused(client, client.set, "/kafka-acl/Topic/orders", EVERYTHING)
            assert_refused(client, client.delete, "/kafka-acl/Topic/orders")
            assert_refused(client, client.set_acls, "/kafka-acl/Topic/orders", OPEN_ACL_UNSAFE)
            # SCRAM users: none made, the admin's neither read nor overwritten.
            assert_refused(client, client.create, "/config/users/mallory", CREDENTIAL, makepath=True)
            assert_refused(client, client.get, "/config/users/admin")
            assert_refused(client, client.set, "/config/users/admin", CREDENTIAL)
            assert_refused(client, client.create, "/config/changes/config_change_", b"{}", sequence=True)
            # Every path the service trusts: nothing created under it, its data not changed.
            for path in secure_paths.TRUSTED:
                assert_refused(client, client.create, f"{path}/injected", b"")
                assert_refused(client, client.set, path, b"x")
        finally:
            client.stop()
            client.close()
        # So nobody but the super user may alter the cluster.
        store = await ZkSecurity.from_properties(ZK_PROPS).connect(hosts)
        try:
            role = Role(1)
            role.store = store
            rules = Authorizer(role, super_users={"User:admin"})
            assert not await rules.allows(Who("User:mallory"), ALTER, CLUSTER, CLUSTER_NAME)
            assert not await rules.allows(Who("User:ANONYMOUS"), ALTER, CLUSTER, CLUSTER_NAME)
        finally:
            await store.close()


async def test_controller_refuses_world_writable_authorizer_paths_until_secured(open_zk, tmp_path):
    hosts = open_zk + "/legacy"
    # The layout an unsecured run (or a stranger who came first) leaves: world-writable.
    old = kazoo(open_zk, None)
    try:
        old.create("/legacy/kafka-acl/Cluster/kafka-cluster", EVERYTHING, makepath=True)
    finally:
        old.stop()
        old.close()
    with pytest.raises(InsecureZooKeeperError) as refused:
        async with controller(hosts):
            pass
    message = str(refused.value)
    assert "/kafka-acl (world:anyone:cdwa)" in message and "/kafka-acl/Cluster/kafka-cluster" in message
    assert f"reassignd zk secure-acls --zookeeper {hosts}" in message
    # The authorizer without any ZooKeeper identity: everything it trusts is anyone's.
    no_identity = {k: v for k, v in SERVER_PROPS.items() if not k.startswith("zookeeper.")}
    with pytest.raises(InsecureZooKeeperError, match="zookeeper.auth.digest"):
        async with controller(open_zk + "/bare", no_identity):
            pass
    config = tmp_path / "zk.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in ZK_PROPS.items()))
    fixed = subprocess.run([sys.executable, "-m", "reassignd", "zk", "secure-acls", "--zookeeper", hosts,
                            "--zk-config", str(config)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert fixed.returncode == 0, fixed.stderr
    async with controller(hosts) as daemon:
        assert daemon.role.active is not None


def test_reassignd_controller_exits_naming_the_path_and_the_fix(open_zk, tmp_path):
    hosts = open_zk + "/cli"
    old = kazoo(open_zk, None)
    try:
        old.create("/cli/config/users/admin", CREDENTIAL, makepath=True)  # world-readable and -writable
    finally:
        old.stop()
        old.close()
    props = tmp_path / "server.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in SERVER_PROPS.items()))
    out = subprocess.run([sys.executable, "-m", "reassignd", "controller", "--zookeeper", hosts, "--id", "101",
                          "--listen", "127.0.0.1:0", "--security-config", str(props)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "refusing to start" in out.stderr and "/config/users/admin (world:anyone:cdrwa)" in out.stderr
    assert f"reassignd zk secure-acls --zookeeper {hosts}" in out.stderr


async def test_secure_acls_creates_the_missing_trusted_paths(open_zk):
    from znodes.secure_paths import migrate

    hosts = open_zk + "/fresh"
    maker = kazoo(open_zk, None)
    try:
        maker.create("/fresh/brokers/topics/orders", b"{}", makepath=True)  # an unsecured cluster's tree
    finally:
        maker.stop()
        maker.close()
    security = ZkSecurity.from_properties(ZK_PROPS)
    await asyncio.to_thread(migrate, hosts, security)
    store = await security.connect(hosts)
    try:
        for path in secure_paths.TRUSTED:
            assert await store.exists(path) is not None, path
        assert await secure_paths.exposures(store, secure_paths.owners(security)) == []
    finally:
        await store.close()
