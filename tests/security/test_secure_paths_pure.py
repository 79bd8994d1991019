"""znodes.secure_paths without ZooKeeper: which grants expose a trusted znode, the service's
identities as ZooKeeper stores them, the refusal's wording; the ACL bindings the authorizer
refuses to load; ZkSecurity's TLS options (verified by default, hostname checked unless
Kafka's setting turns it off)."""

from __future__ import annotations

import logging

import pytest
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions, make_digest_acl

from controller.core.acl import ALL, ALLOW, CLUSTER, CLUSTER_NAME, LITERAL, PREFIXED, TOPIC, Acl, Resource, validate
from controller.shell.authorizer import from_znodes
from znodes import acls as zacls
from znodes import secure_paths as sp
from znodes.security import ZkSecurity

SERVICE = ZkSecurity.from_properties({"zookeeper.auth.digest": "reassignd:secret", "zookeeper.set.acl": "true"})


def test_owners_are_the_ids_zookeeper_stores():
    both = ZkSecurity(digest=("reassignd", "secret"), sasl=("svc", "pw"))
    digest_acl = make_digest_acl("reassignd", "secret", all=True)
    assert sp.owners(both) == {("digest", digest_acl.id.id), ("sasl", "svc")}
    assert sp.owners(ZkSecurity()) == frozenset()


def test_the_secure_acl_exposes_nothing_and_world_write_does():
    service = sp.owners(SERVICE)
    for path in ("/kafka-acl/Cluster", "/config/users/alice", "/admin"):
        assert sp.exposed(path, SERVICE.acl_for(path), service) == []
    assert sp.exposed("/kafka-acl", OPEN_ACL_UNSAFE, service) == [sp.Exposure("/kafka-acl", "world:anyone", "cdwa")]
    # Read to everyone is Kafka's secure ACL, except where credentials live.
    world_read = [ACL(Permissions.READ, Id("world", "anyone"))]
    assert sp.exposed("/kafka-acl/Topic", world_read, service) == []
    assert sp.exposed("/config/users/alice", world_read, service) == [
        sp.Exposure("/config/users/alice", "world:anyone", "r")]
    # The SCRAM decoy secret too: whoever reads it can tell unknown user names apart again.
    assert sp.exposed("/reassignd/scram_decoy_secret", world_read, service) == [
        sp.Exposure("/reassignd/scram_decoy_secret", "world:anyone", "r")]
    assert "/reassignd/scram_decoy_secret" in sp.SECRETS
    # Another identity, however it authenticated, is not the service.
    mallory = make_digest_acl("mallory", "guess", write=True)
    assert [e.grantee for e in sp.exposed("/admin", [mallory], service)] == [f"digest:{mallory.id.id}"]
    # With no identity at all, nothing is the service's.
    assert sp.exposed("/admin", SERVICE.acl_for("/admin"), frozenset())[0].perms == "cdwa"


def test_trusted_paths_come_parents_first_and_cover_the_authorizer():
    seen: set[str] = set()
    for path in sp.TRUSTED:
        parent = path.rsplit("/", 1)[0]
        assert not parent or parent in seen, f"{path} before its parent"
        seen.add(path)
    for root in (zacls.LITERAL_ROOT, zacls.PREFIXED_ROOT):
        assert {f"{root}/{t}" for t in zacls.TYPES} <= seen
    assert {zacls.LITERAL_CHANGES, zacls.EXTENDED_CHANGES, "/config/users", "/config/changes", "/admin"} <= seen


def test_refusal_names_paths_and_the_fix():
    problems = [sp.Exposure(f"/kafka-acl/T{i}", "world:anyone", "cdwa") for i in range(sp.SHOWN + 2)]
    text = sp.refusal(problems, "zk:2181/kafka", what="controller 1")
    assert "/kafka-acl/T0 (world:anyone:cdwa)" in text and "and 2 more" in text
    assert "reassignd zk secure-acls --zookeeper zk:2181/kafka" in text and "zookeeper.set.acl=true" in text


@pytest.mark.parametrize("pattern,name", [(PREFIXED, "kafka"), (PREFIXED, CLUSTER_NAME), (LITERAL, "*"),
                                          (LITERAL, "other")])
def test_cluster_bindings_kafka_refuses(pattern, name):
    assert validate(Acl(Resource(CLUSTER, name, pattern), "User:*", "*", ALL, ALLOW))


def test_resource_names_with_a_slash_are_refused():
    assert "invalid resource name" in validate(Acl(Resource(TOPIC, "a/b", LITERAL), "User:a", "*", ALL, ALLOW))


def test_bindings_kafka_refuses_are_not_loaded(caplog):
    everything = ({"principal": "User:*", "permissionType": "Allow", "operation": "All", "host": "*"},)
    znodes = [zacls.AclZnode("Cluster", "PREFIXED", "kafka", everything),
              zacls.AclZnode("Cluster", "LITERAL", "*", everything),
              zacls.AclZnode("Topic", "LITERAL", "orders", everything),
              zacls.AclZnode("Topic", "LITERAL", "bad", ({**everything[0], "principal": "nobody"},))]
    with caplog.at_level(logging.WARNING, logger="reassignd.authorizer"):
        loaded = from_znodes(znodes)
    assert [(a.resource.type, a.resource.name) for a in loaded] == [(TOPIC, "orders")]
    refused = [r.getMessage() for r in caplog.records]
    assert len(refused) == 3 and "PREFIXED Cluster 'kafka' refused" in refused[0]


def test_tls_is_verified_by_default_and_hostname_checked():
    tls = ZkSecurity.from_properties({"zookeeper.ssl.client.enable": "true"}).client_options()
    assert tls["verify_certs"] is True and tls["check_hostname"] is True and tls["ca"] is None


def test_hostname_check_off_only_by_kafkas_setting_with_a_warning(caplog):
    off = ZkSecurity.from_properties({"zookeeper.ssl.client.enable": "true",
                                      "zookeeper.ssl.endpoint.identification.algorithm": ""})
    with caplog.at_level(logging.WARNING, logger="reassignd.zookeeper"):
        options = off.client_options()
    assert options["verify_certs"] is True and options["check_hostname"] is False
    assert "hostname" in caplog.text
    on = ZkSecurity.from_properties({"zookeeper.ssl.client.enable": "true",
                                     "zookeeper.ssl.endpoint.identification.algorithm": "https"})
    assert on.client_options()["check_hostname"] is True
    with pytest.raises(ValueError, match="HTTPS or empty"):
        ZkSecurity.from_properties({"zookeeper.ssl.endpoint.identification.algorithm": "none"})
    with pytest.raises(ValueError, match="not a Kafka setting"):
        ZkSecurity.from_properties({"zookeeper.ssl.endpoint.identification.enable": "false"})


def test_a_pem_keystore_holding_the_key_is_given_as_both_files():
    one = ZkSecurity.from_properties({"zookeeper.ssl.client.enable": "true",
                                      "zookeeper.ssl.keystore.location": "client.pem"}).client_options()
    assert (one["certfile"], one["keyfile"]) == ("client.pem", "client.pem")
    two = ZkSecurity.from_properties({"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.location": "c.pem",
                                      "zookeeper.ssl.key.location": "c.key"}).client_options()
    assert (two["certfile"], two["keyfile"]) == ("c.pem", "c.key")
