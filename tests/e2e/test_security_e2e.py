"""Security end to end: two ``reassignd controller`` processes whose listener speaks SASL_SSL
(SCRAM-SHA-512, certificates made at test time) with the ACL authorizer on, simulated brokers,
real ZooKeeper; kafka-python's ``KafkaAdminClient`` and ``kcat`` as the clients, unchanged.

- ZooKeeper is secured as the authorizer requires (the controller refuses to start over paths
  anyone may change): the service's digest identity and ``zookeeper.set.acl`` for the
  controllers, the simulated brokers and ``reassignd users add``.
- Users are made with ``reassignd users add`` (Kafka's /config/users format).
- The super user creates ACLs with CreateAcls; DescribeAcls reads them back, also after the
  active controller is killed and the other takes over.
- alice (ALTER and DESCRIBE on the cluster) lists and alters reassignments; bob (no ACL) gets
  CLUSTER_AUTHORIZATION_FAILED (31) and the cluster is unchanged.
- A wrong password, an unknown mechanism, an untrusted certificate and no authentication at
  all each get Kafka's error and change nothing: kcat and aiokafka logging in, and
  ``kafka-reassign --execute`` (an AlterPartitionReassignments sent over TLS without
  authenticating is closed unanswered).

The listener is ``SECURE://127.0.0.1:0``, mapped to SASL_SSL by ``listener.security.protocol.map``;
Metadata on it lists the controllers at that listener and not the simulated brokers, whose only
listener is PLAINTEXT (Kafka lists the nodes that have the request's listener).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest

from tests.e2e.processes import REPO, running_cluster, wait_for
from tests.security.certs import make_pki

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(180)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "3", "--topics", "orders:2:2:64MiB", "--bandwidth", "1KiB", "--produce-rate", "0"]
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


# The service's ZooKeeper identity, with secure ACLs: the controller refuses to run the
# authorizer over ZooKeeper paths anyone may change (issue 22), and the simulated brokers share
# the controller's identity, as Kafka's brokers and controller do.
SERVICE_DIGEST = "reassignd:service-secret"
ZK_KEYS = f"zookeeper.auth.digest={SERVICE_DIGEST}\nzookeeper.set.acl=true\n"


def write_zk_config(tmp_path):
    """The service's ZooKeeper keys in a file (``--zk-config``)."""
    path = tmp_path / "zk.properties"
    path.write_text(ZK_KEYS)
    return path


@contextmanager
def opened_after(zk_hosts: str):
    """On exit the tree is opened again (secure-acls --unsecure), so the chroot fixture's
    unauthenticated session can delete it."""
    from znodes.secure_paths import migrate
    from znodes.security import ZkSecurity

    try:
        yield
    finally:
        migrate(zk_hosts, ZkSecurity.from_properties({"zookeeper.auth.digest": SERVICE_DIGEST}), secure=False)


def add_user(zk_hosts: str, user: str, password: str, zk_config) -> None:
    out = subprocess.run([sys.executable, "-m", "reassignd", "users", "add", "--zookeeper", zk_hosts, "--zk-config",
                          str(zk_config), "--user", user, "--mechanism", "SCRAM-SHA-512"], cwd=REPO,
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "REASSIGND_USER_PASSWORD": password})
    assert out.returncode == 0, out.stderr


@pytest.fixture
def secured(zk_hosts, tmp_path):
    pki = make_pki(tmp_path / "pki")
    zk_props = write_zk_config(tmp_path)
    with opened_after(zk_hosts):
        for user, password in PASSWORDS.items():
            add_user(zk_hosts, user, password, zk_props)
        props = tmp_path / "server.properties"
        props.write_text(
            "listener.security.protocol.map=SECURE:SASL_SSL\n"
            "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
            f"ssl.keystore.location={pki.server}\n"
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
            "super.users=User:admin\n"
            "connection.failed.authentication.delay.ms=100\n"
            + ZK_KEYS
        )
        with running_cluster(zk_hosts, tmp_path, sim_args=[*SIM_ARGS, "--zk-config", str(zk_props)],
                             controller_ids=CONTROLLER_IDS, controller_config={"security_config": str(props)},
                             listen="SECURE://127.0.0.1:0", zk_auth=SERVICE_DIGEST) as c:  # reads /config/brokers
            yield c, pki


def admin_client(c, pki, user, password=None, **overrides):
    from kafka import KafkaAdminClient

    active = c.active_controller()
    config = dict(bootstrap_servers=c.listeners[active], client_id=f"e2e-{user}", request_timeout_ms=20000,
                  security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=user,
                  sasl_plain_password=password or PASSWORDS[user], ssl_cafile=str(pki.ca), ssl_check_hostname=False)
    config.update(overrides)
    return KafkaAdminClient(**config)


def kcat(c, pki, user, password, mechanism="SCRAM-SHA-512", protocol="SASL_SSL", ca=None, wait_s=10):
    return subprocess.run(["kcat", "-L", "-J", "-b", c.listeners[c.active_controller()], "-m", str(wait_s),
                           "-X", f"security.protocol={protocol}", "-X", f"sasl.mechanisms={mechanism}",
                           "-X", f"sasl.username={user}", "-X", f"sasl.password={password}",
                           "-X", f"ssl.ca.location={ca or pki.ca}", "-X", "ssl.endpoint.identification.algorithm=none"],
                          capture_output=True, text=True, timeout=60)


def test_acls_gate_reassignments_over_sasl_ssl(secured):
    from kafka import TopicPartition
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern, ResourceType
    from kafka.admin import ACLResourcePatternType as Pattern
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion
    from kafka.errors import ClusterAuthorizationFailedError

    c, pki = secured
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", Pattern.LITERAL)
    granted = [ACL("User:alice", "*", op, ACLPermissionType.ALLOW, cluster)
               for op in (ACLOperation.ALTER, ACLOperation.DESCRIBE)]
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePattern.__new__(ResourcePattern))
    everything.resource_pattern.resource_type, everything.resource_pattern.resource_name = ResourceType.ANY, None
    everything.resource_pattern.pattern_type = Pattern.ANY

    admin = admin_client(c, pki, "admin")
    try:
        assert admin.create_acls(granted)["failed"] == []
        acls, _ = admin.describe_acls(everything)
        assert {(a.principal, a.operation) for a in acls} == {("User:alice", ACLOperation.ALTER),
                                                              ("User:alice", ACLOperation.DESCRIBE)}
        # KIP-554: a user made through the API (the client sends a salted password) logs in.
        assert admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "carol", ScramMechanism.SCRAM_SHA_512, "carol-secret", iterations=8192)]) == {"carol": None}
        described = admin.describe_user_scram_credentials(["carol", "nobody"])
        assert described["carol"] == {"error": None, "credential_infos": [
            {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 8192}]}
        assert described["nobody"]["error"] and not described["nobody"]["credential_infos"]
        assert set(admin.describe_user_scram_credentials()) == {"admin", "alice", "bob", "carol"}
    finally:
        admin.close()
    carol = admin_client(c, pki, "carol", "carol-secret")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):  # logged in, but no ACL
            carol.list_partition_reassignments()
        refused = carol.alter_user_scram_credentials([UserScramCredentialUpsertion(  # nor make users
            "eve", ScramMechanism.SCRAM_SHA_512, "eve-secret")])
        assert refused["eve"]  # the per-user error (CLUSTER_AUTHORIZATION_FAILED's message)
    finally:
        carol.close()
    assert c.zk.exists("/config/users/eve") is None
    # Kafka's layout in ZooKeeper, as kafka-acls.sh would have written it.
    doc = json.loads(c.zk.get("/kafka-acl/Cluster/kafka-cluster")[0])
    assert sorted(e["operation"] for e in doc["acls"]) == ["Alter", "Describe"]
    assert c.zk.get_children("/kafka-acl-changes")

    topic = json.loads(c.zk.get("/brokers/topics/orders")[0])["partitions"]
    current = topic["0"]
    target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
    tp0 = TopicPartition("orders", 0)

    bob = admin_client(c, pki, "bob")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.alter_partition_reassignments({tp0: target})
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.list_partition_reassignments()
    finally:
        bob.close()
    assert c.zk.exists("/admin/reassignments/orders/0") is None  # nothing changed
    assert json.loads(c.zk.get("/brokers/topics/orders")[0])["partitions"] == topic

    alice = admin_client(c, pki, "alice")
    try:
        assert alice.alter_partition_reassignments({tp0: target}) == {tp0: None}
        wait_for(lambda: alice.list_partition_reassignments().get(tp0), 30, "alice's move to be listed")
        assert alice.alter_partition_reassignments({tp0: None}) == {tp0: None}  # cancel (KIP-455)
        wait_for(lambda: alice.list_partition_reassignments() == {}, 30, "the cancel to finish")
    finally:
        alice.close()

    # kafka-reassign with --command-config (Kafka's client property names, both SASL forms).
    alice_props = c.processes.workdir / "alice.properties"
    alice_props.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{PASSWORDS["alice"]}";\n'
        f"ssl.truststore.location={pki.ca}\nssl.endpoint.identification.algorithm=\n")
    bob_props = c.processes.workdir / "bob.properties"
    bob_props.write_text(
        f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=bob\nsasl.password={PASSWORDS['bob']}\n"
        f"ssl.ca.location={pki.ca}\nssl.endpoint.identification.algorithm=\n")
    for props, ok in ((alice_props, True), (bob_props, False)):
        out = subprocess.run([sys.executable, "-m", "client.cli", "--bootstrap-server", c.listeners[c.active_controller()],
                              "--command-config", str(props), "--list"], cwd=REPO, capture_output=True, text=True,
                             timeout=60)
        assert (out.returncode == 0) is ok, out.stdout + out.stderr
        if not ok:
            assert "CLUSTER_AUTHORIZATION_FAILED" in out.stdout + out.stderr

    # Failover: the ACLs are in ZooKeeper, so the other instance enforces and describes them.
    killed = c.active_controller()
    c.kill_controller(killed)
    wait_for(lambda: c.new_active_controller(killed), 30, "a new active controller")
    admin = admin_client(c, pki, "admin")
    try:
        acls, _ = admin.describe_acls(everything)
        assert {(a.principal, a.host, a.operation, a.permission_type, a.resource_pattern.resource_type,
                 a.resource_pattern.resource_name) for a in acls} == {
            ("User:alice", "*", op, ACLPermissionType.ALLOW, ResourceType.CLUSTER, "kafka-cluster")
            for op in (ACLOperation.ALTER, ACLOperation.DESCRIBE)}
    finally:
        admin.close()
    bob = admin_client(c, pki, "bob")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.alter_partition_reassignments({tp0: target})
    finally:
        bob.close()


def test_refused_logins_change_nothing(secured):
    c, pki = secured
    before = c.zk.get_children("/admin")
    # kcat: the right user lists metadata; a wrong password and an unknown mechanism fail.
    ok = kcat(c, pki, "alice", PASSWORDS["alice"])
    assert ok.returncode == 0, ok.stderr
    assert {b["id"] for b in json.loads(ok.stdout)["brokers"]} == set(CONTROLLER_IDS)
    wrong = kcat(c, pki, "alice", "nope", wait_s=3)
    assert wrong.returncode != 0 and "SASL authentication error" in wrong.stderr + wrong.stdout, wrong.stderr
    mech = kcat(c, pki, "alice", PASSWORDS["alice"], mechanism="SCRAM-SHA-256", wait_s=3)
    assert mech.returncode != 0 and "mechanism" in (mech.stderr + mech.stdout).lower(), mech.stderr
    untrusted = kcat(c, pki, "alice", PASSWORDS["alice"], ca=pki.rogue_ca, wait_s=3)
    assert untrusted.returncode != 0 and "certificate verify failed" in untrusted.stderr + untrusted.stdout
    unauthenticated = kcat(c, pki, "alice", "x", protocol="SSL", wait_s=3)  # TLS but no SASL: closed unanswered
    assert unauthenticated.returncode != 0

    # aiokafka's connection: Kafka's error types (kafka-python's admin client would only say it
    # could not bootstrap, after its timeout).
    asyncio.run(_aiokafka_refusals(c, pki))
    assert c.zk.get_children("/admin") == before


async def _aiokafka_refusals(c, pki) -> None:
    import ssl

    from aiokafka.conn import create_conn
    from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed, UnsupportedSaslMechanismError

    host, port = c.listeners[c.active_controller()].rsplit(":", 1)
    trusted = ssl.create_default_context(cafile=str(pki.ca))
    trusted.check_hostname = False
    rogue = ssl.create_default_context(cafile=str(pki.rogue_ca))
    rogue.check_hostname = False

    async def login(ctx, mechanism="SCRAM-SHA-512", password=PASSWORDS["alice"], protocol="SASL_SSL"):
        conn = await create_conn(host, int(port), ssl_context=ctx, security_protocol=protocol,
                                 sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password=password,
                                 request_timeout_ms=10000)
        conn.close()

    await login(trusted)  # the right password works
    with pytest.raises(SaslAuthenticationFailed):  # 58
        await login(trusted, password="nope")
    with pytest.raises(UnsupportedSaslMechanismError):  # 33
        await login(trusted, mechanism="PLAIN")
    with pytest.raises((ssl.SSLError, KafkaConnectionError)):
        await login(rogue)
    # TLS without SASL: ApiVersions is answered (as Kafka does before the handshake), anything
    # else closes the connection unanswered.
    from aiokafka.protocol.metadata import MetadataRequest

    conn = await create_conn(host, int(port), ssl_context=trusted, security_protocol="SSL", request_timeout_ms=10000)
    try:
        with pytest.raises(KafkaConnectionError):
            await conn.send(MetadataRequest([]))
    finally:
        conn.close()


def test_refused_clients_cannot_start_a_reassignment(secured):
    """Each refusal as a client that means to alter meets it: ``kafka-reassign --execute`` with a
    wrong password, an unknown mechanism, an untrusted certificate and no SASL at all gets
    Kafka's error (58, 33, the TLS verification failure, the connection closed unanswered), and
    an AlterPartitionReassignments frame sent over TLS without authenticating is not answered.
    The cluster is unchanged: no request, no move, no throttle, the same assignment."""
    c, pki = secured
    addr = c.listeners[c.active_controller()]
    # As it stays: the election gives the simulator's id-less topic its topic id (a rewrite of
    # its znode) a moment after the controller is up.
    topic = wait_for(lambda: (t := c.topic("orders")).get("topic_id") and t, 30, "orders given its topic id")
    current = topic["partitions"]["0"]
    target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
    plan = c.processes.workdir / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": target}]}))
    tls = f"ssl.ca.location={pki.ca}\nssl.endpoint.identification.algorithm=\n"
    sasl = "security.protocol=SASL_SSL\nsasl.mechanism={}\nsasl.username=alice\nsasl.password={}\n"
    cases = {
        "wrong-password": (sasl.format("SCRAM-SHA-512", "nope") + tls, "[Error 58] SaslAuthenticationFailed"),
        "unknown-mechanism": (sasl.format("SCRAM-SHA-256", PASSWORDS["alice"]) + tls,
                              "[Error 33] UnsupportedSaslMechanismError"),
        "untrusted-certificate": (sasl.format("SCRAM-SHA-512", PASSWORDS["alice"]) + tls.replace(
            str(pki.ca), str(pki.rogue_ca)), "CERTIFICATE_VERIFY_FAILED"),
        "no-authentication": ("security.protocol=SSL\n" + tls, "closed"),
    }
    for name, (text, error) in cases.items():
        props = c.processes.workdir / f"{name}.properties"
        props.write_text(text)
        out = subprocess.run([sys.executable, "-m", "client.cli", "--bootstrap-server", addr, "--command-config",
                              str(props), "--execute", "--reassignment-json-file", str(plan), "--throttle", "1000",
                              "--timeout", "5000"], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert out.returncode != 0 and error in out.stderr, (name, out.stdout + out.stderr)
    assert asyncio.run(_alter_without_authenticating(addr, pki, target)) == "closed unanswered"
    assert c.zk.exists("/admin/reassign_partitions") is None
    assert not c.zk.exists("/admin/reassignments") or c.zk.get_children("/admin/reassignments") == []
    assert c.throttle_configs() == {}
    assert c.topic("orders") == topic


async def _alter_without_authenticating(addr: str, pki, target: list[int]) -> str:
    import ssl
    import struct

    import protocol

    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    ctx.check_hostname = False
    reader, writer = await asyncio.open_connection(host, int(port), ssl=ctx)
    try:
        body = {"timeout_ms": 5000, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "replicas": target}]}]}
        writer.write(protocol.encode_request(45, 0, 1, "mallory", body))  # AlterPartitionReassignments
        await writer.drain()
        try:
            head = await asyncio.wait_for(reader.read(4), 10)
        except ConnectionError:
            head = b""
        return "closed unanswered" if head == b"" else f"answered: {struct.unpack('>i', head)[0]} bytes"
    finally:
        writer.close()
