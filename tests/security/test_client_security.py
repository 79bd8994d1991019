"""client.security: Kafka's client properties into aiokafka's connection arguments."""

from __future__ import annotations

import ssl

import pytest

from client.errors import InputError
from client.security import ClientSecurity
from protocol.properties import parse_properties


def props(text: str) -> ClientSecurity:
    return ClientSecurity.from_properties(parse_properties(text))


def test_jaas_and_librdkafka_forms_give_the_same_login():
    jaas = props('security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n'
                 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n'
                 '    username="alice" password="a\\"b";\n')
    plain = props('security.protocol=sasl_plaintext\nsasl.mechanisms=scram-sha-256\n'
                  'sasl.username=alice\nsasl.password=a"b\n')
    assert jaas.connection_kwargs() == plain.connection_kwargs() == {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice", "sasl_plain_password": 'a"b'}


def test_tls_context(tmp_path):
    from tests.security.certs import make_pki

    pki = make_pki(tmp_path)
    cert, key = pki.client("alice", "/CN=alice")
    sec = props(f"security.protocol=SSL\nssl.truststore.location={pki.ca}\nssl.keystore.location={cert}\n"
                f"ssl.key.location={key}\nssl.endpoint.identification.algorithm=\n")
    ctx = sec.connection_kwargs()["ssl_context"]
    assert isinstance(ctx, ssl.SSLContext) and not ctx.check_hostname
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert props("security.protocol=SSL").ssl_context().check_hostname  # Kafka's default: https


@pytest.mark.parametrize("text", [
    "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n",        # no credentials
    "security.protocol=KERBEROS\n",
    "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.username=a\nsasl.password=b\n",
    "security.protocol=SASL_SSL\nsasl.jaas.config=nonsense\n",
    "zookeeper.set.acl=true\n",                                          # set.acl without an identity
])
def test_bad_files_are_input_errors(text):
    with pytest.raises(InputError):
        props(text).zk_security()


def test_zookeeper_keys_go_to_the_zookeeper_security():
    zk = props("zookeeper.auth.digest=svc:pw\nzookeeper.set.acl=true\n").zk_security()
    assert zk.digest == ("svc", "pw") and zk.set_acl
    assert zk.client_options() == {"auth_data": [("digest", "svc:pw")]}
