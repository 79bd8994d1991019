"""ZooKeeper security for real: a second local ZooKeeper started with authentication required
(``reassignd zk start --require-auth``: ZooKeeper's enforce.auth, digest), the store with
``zookeeper.set.acl`` (Kafka's secure ACLs), ``reassignd users`` and ``reassignd zk
secure-acls`` as subprocesses, and an in-process controller on the secured session."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError
from kazoo.security import OPEN_ACL_UNSAFE

from controller.core.config import ControllerConfig
from controller.shell.daemon import ControllerDaemon
from controller.shell.security.config import SecurityConfig
from tests.e2e.processes import REPO, wait_for
from znodes.api import ConnectionLossError
from znodes.launcher import LocalZooKeeper
from znodes.security import ZkSecurity

pytestmark = [pytest.mark.zk, pytest.mark.timeout(120)]

SERVICE = ("reassignd", "service-secret")
PROPS = {"zookeeper.auth.digest": ":".join(SERVICE), "zookeeper.set.acl": "true"}


@pytest.fixture(scope="module")
def secured_zk(tmp_path_factory):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path_factory.mktemp("zk-auth"), require_auth=True, stop_with_parent=True)
    zk.start()
    try:
        yield zk.connect_string
    finally:
        zk.stop()


def kazoo(hosts: str, digest: str | None) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=5, auth_data=[("digest", digest)] if digest else None)
    client.start(timeout=10)
    return client


def test_unauthenticated_sessions_may_do_nothing(secured_zk):
    client = KazooClient(hosts=secured_zk, timeout=5)
    try:
        client.start(timeout=10)
        # ZooKeeper closes the session (its error is named for SASL, whatever the scheme).
        with pytest.raises(SessionClosedRequireSaslError):
            client.get_children("/")
    finally:
        client.stop()
        client.close()


async def test_secure_acls_refuse_another_user(secured_zk):
    security = ZkSecurity.from_properties(PROPS)
    store = await security.connect(secured_zk + "/sec1", create_chroot=True)
    try:
        await store.create("/admin/reassign_partitions", b'{"version":1,"partitions":[]}', makepath=True)
        await store.create("/config/users/alice", b'{"version":1,"config":{}}', makepath=True)
    finally:
        await store.close()
    mallory = kazoo(secured_zk + "/sec1", "mallory:guess")
    try:
        assert mallory.get("/admin/reassign_partitions")[0].startswith(b"{")  # world-readable, as Kafka's
        with pytest.raises(NoAuthError):
            mallory.set("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t"}]}')
        with pytest.raises(NoAuthError):
            mallory.create("/admin/cancel_reassignment_in_progress", b"")
        with pytest.raises(NoAuthError):
            mallory.get("/config/users/alice")  # SCRAM credentials: not even readable
    finally:
        mallory.stop()
        mallory.close()
    owner = kazoo(secured_zk + "/sec1", ":".join(SERVICE))
    try:
        owner.set("/admin/reassign_partitions", b'{"version":1,"partitions":[]}')  # the service may
    finally:
        owner.stop()
        owner.close()


def reassignd(*args, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reassignd", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})


def test_users_command_and_secure_acls_migration(secured_zk, tmp_path):
    config = tmp_path / "zk.properties"
    config.write_text("zookeeper.auth.digest=reassignd:service-secret\n")  # authenticated, no set.acl
    hosts = secured_zk + "/sec2"
    zk = ["--zookeeper", hosts, "--zk-config", str(config)]
    out = reassignd("users", "add", *zk, "--user", "alice", REASSIGND_USER_PASSWORD="alice-secret")
    assert out.returncode == 0, out.stderr
    listed = reassignd("users", "list", *zk)
    assert listed.stdout.split() == ["alice", "SCRAM-SHA-256,SCRAM-SHA-512"]
    mallory = kazoo(hosts, "mallory:guess")
    owner = kazoo(hosts, ":".join(SERVICE))
    try:
        # Secure by default with an identity, as Kafka's tool (issue 22 item 5): only the service
        # may read or write the credential, zookeeper.set.acl or not.
        with pytest.raises(NoAuthError):
            mallory.get("/config/users/alice")
        with pytest.raises(NoAuthError):
            mallory.set("/config/users/alice", b"{}")
        assert [(a.id.scheme, a.perms) for a in owner.get_acls("/config/users/alice")[0]] == [("digest", 31)]
        assert [(a.id.scheme, a.perms) for a in owner.get_acls("/config/users")[0]] == [("digest", 31)]
        assert [(a.id.scheme, a.perms) for a in owner.get_acls("/config")[0]] == [("digest", 31), ("world", 1)]
        # Opened up (an older run, or by hand): a credential is not written there again...
        back = reassignd("zk", "secure-acls", "--unsecure", *zk)
        assert back.returncode == 0, back.stderr
        mallory.set("/config/changes", b"")
        before = owner.get("/config/users/alice")[0]
        refused = reassignd("users", "add", *zk, "--user", "alice", REASSIGND_USER_PASSWORD="new-secret")
        assert refused.returncode == 2
        assert "/config/users/alice (world:anyone:cdrwa)" in refused.stderr and "secure-acls" in refused.stderr
        assert owner.get("/config/users/alice")[0] == before
        # ...unless forced, which says so.
        forced = reassignd("users", "add", *zk, "--user", "alice", "--force", REASSIGND_USER_PASSWORD="new-secret")
        assert forced.returncode == 0 and "--force" in forced.stderr
        assert owner.get("/config/users/alice")[0] != before
        migrated = reassignd("zk", "secure-acls", *zk)
        assert migrated.returncode == 0, migrated.stderr
        with pytest.raises(NoAuthError):
            mallory.get("/config/users/alice")
        with pytest.raises(NoAuthError):
            mallory.set("/config/changes", b"x")
        assert mallory.get("/config/changes")  # world-readable
        again = reassignd("users", "add", *zk, "--user", "alice", REASSIGND_USER_PASSWORD="alice-secret")
        assert again.returncode == 0, again.stderr
    finally:
        for client in (mallory, owner):
            client.stop()
            client.close()
    # Without the credentials the command fails cleanly.
    config.write_text("zookeeper.set.acl=true\n")
    refused = reassignd("users", "list", *zk)
    assert refused.returncode == 2 and "zookeeper.auth.digest" in refused.stderr


def test_users_add_without_an_identity_refuses_a_world_writable_credential(zk_hosts):
    zk = KazooClient(hosts=zk_hosts, timeout=5)
    zk.start(timeout=10)
    try:
        refused = reassignd("users", "add", "--zookeeper", zk_hosts, "--user", "bob",
                            REASSIGND_USER_PASSWORD="bob-secret")
        assert refused.returncode == 2 and "no identity" in refused.stderr and "--force" in refused.stderr
        assert zk.exists("/config/users/bob") is None
        forced = reassignd("users", "add", "--zookeeper", zk_hosts, "--user", "bob", "--force",
                           REASSIGND_USER_PASSWORD="bob-secret")
        assert forced.returncode == 0, forced.stderr
        assert zk.get_acls("/config/users/bob")[0] == OPEN_ACL_UNSAFE
    finally:
        zk.stop()
        zk.close()


def test_kafka_reassign_zookeeper_path_takes_the_credentials(secured_zk, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("zookeeper.auth.digest=reassignd:service-secret\n")
    cmd = [sys.executable, "-m", "client.cli", "--zookeeper", secured_zk, "--list", "--output", "json"]
    ok = subprocess.run([*cmd, "--command-config", str(config)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    refused = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)  # no credentials
    assert refused.returncode != 0


async def test_controller_on_the_secured_session(secured_zk):
    security = SecurityConfig.from_properties(PROPS)
    hosts = secured_zk + "/sec3"
    daemon = ControllerDaemon(hosts, 101, ("127.0.0.1", 0), ControllerConfig(), security=security)
    task = asyncio.create_task(daemon.run())
    try:
        mallory = kazoo(hosts, "mallory:guess")
        try:
            await asyncio.to_thread(wait_for, lambda: mallory.exists("/controller"), 30, "an active controller")
            for path in ("/controller", "/controller_epoch", "/admin", "/brokers/topics"):
                with pytest.raises(NoAuthError):
                    mallory.set(path, b"x")
            with pytest.raises(NoAuthError):
                mallory.create("/admin/reassign_partitions", b'{"version":1,"partitions":[]}')
        finally:
            mallory.stop()
            mallory.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# ---- TLS to ZooKeeper --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_zk(tmp_path_factory):
    """A ZooKeeper with a TLS client port (Netty, PEM files) that also requires authentication."""
    from tests.security.certs import make_pki
    from znodes.launcher import free_port

    root = tmp_path_factory.mktemp("zk-tls")
    pki = make_pki(root / "pki")
    port = free_port()
    zk = LocalZooKeeper(port=0, data_dir=root / "zk", require_auth=True, stop_with_parent=True, extra_config={
        "secureClientPort": str(port), "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        "ssl.keyStore.location": str(pki.server), "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": str(pki.ca), "ssl.trustStore.type": "PEM", "ssl.clientAuth": "none"})
    zk.start()
    try:
        yield f"127.0.0.1:{port}", pki
    finally:
        zk.stop()


async def test_store_over_tls_with_secure_acls(tls_zk):
    hosts, pki = tls_zk
    props = {**PROPS, "zookeeper.ssl.client.enable": "true", "zookeeper.ssl.truststore.location": str(pki.ca)}
    store = await ZkSecurity.from_properties(props).connect(hosts + "/tls", create_chroot=True, timeout=10)
    try:
        await store.create("/admin/reassign_partitions", b"{}", makepath=True)
        assert (await store.get("/admin/reassign_partitions"))[0] == b"{}"
    finally:
        await store.close()
    untrusted = {**props, "zookeeper.ssl.truststore.location": str(pki.rogue_ca)}
    with pytest.raises(ConnectionLossError):  # the server's certificate is not trusted: no session
        await ZkSecurity.from_properties(untrusted).connect(hosts + "/tls", timeout=3)


async def test_tls_without_a_truststore_verifies_against_the_system_cas(tls_zk):
    # Issue 22 item 4: this was verify_certs=False, and the test CA's server got the session.
    hosts, _ = tls_zk
    props = {**PROPS, "zookeeper.ssl.client.enable": "true"}
    with pytest.raises(ConnectionLossError):
        store = await ZkSecurity.from_properties(props).connect(hosts + "/tls", timeout=3)
        await store.close()


async def test_tls_checks_the_hostname_unless_kafkas_setting_turns_it_off(tls_zk, caplog):
    hosts, pki = tls_zk
    # The certificate names 127.0.0.1 and localhost; 127.0.0.2 reaches the same server (loopback).
    elsewhere = hosts.replace("127.0.0.1", "127.0.0.2") + "/tls"
    props = {**PROPS, "zookeeper.ssl.client.enable": "true", "zookeeper.ssl.truststore.location": str(pki.ca)}
    with pytest.raises(ConnectionLossError):  # a trusted CA, but not this host's certificate
        store = await ZkSecurity.from_properties(props).connect(elsewhere, create_chroot=True, timeout=3)
        await store.close()
    unchecked = {**props, "zookeeper.ssl.endpoint.identification.algorithm": ""}
    with caplog.at_level("WARNING", logger="reassignd.zookeeper"):
        store = await ZkSecurity.from_properties(unchecked).connect(elsewhere, create_chroot=True, timeout=10)
    try:
        assert await store.exists("/") is not None
    finally:
        await store.close()
    assert "not its hostname" in caplog.text


# ---- SASL (DIGEST-MD5) to ZooKeeper --------------------------------------------------------------


@pytest.fixture(scope="module")
def sasl_zk(tmp_path_factory):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path_factory.mktemp("zk-sasl"), require_auth=True,
                        sasl_users={"reassignd": "sasl-secret"}, stop_with_parent=True)
    zk.start()
    try:
        yield zk.connect_string
    finally:
        zk.stop()


JAAS = 'org.apache.zookeeper.server.auth.DigestLoginModule required username="reassignd" password="{}";'


async def test_sasl_identity_and_its_secure_acls(sasl_zk):
    props = {"zookeeper.sasl.jaas.config": JAAS.format("sasl-secret"), "zookeeper.set.acl": "true"}
    store = await ZkSecurity.from_properties(props).connect(sasl_zk + "/sasl", create_chroot=True, timeout=10)
    try:
        await store.create("/admin/reassign_partitions", b"{}", makepath=True)
    finally:
        await store.close()
    mallory = kazoo(sasl_zk + "/sasl", "mallory:guess")  # authenticated (digest), not the owner
    try:
        acls, _ = mallory.get_acls("/admin/reassign_partitions")
        assert [(a.id.scheme, a.id.id, a.perms) for a in acls] == [("sasl", "reassignd", 31), ("world", "anyone", 1)]
        with pytest.raises(NoAuthError):
            mallory.set("/admin/reassign_partitions", b"x")
    finally:
        mallory.stop()
        mallory.close()
    wrong = {"zookeeper.sasl.jaas.config": JAAS.format("wrong")}
    with pytest.raises(ConnectionLossError):  # the server refuses the SASL exchange and drops the connection
        store = await ZkSecurity.from_properties(wrong).connect(sasl_zk + "/sasl", timeout=5)
        try:
            await store.get("/admin/reassign_partitions")
        finally:
            await store.close()
