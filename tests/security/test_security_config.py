"""The pure and parsing parts: principal mapping rules, Kafka property files, the controller's
security config and its refusals, and ``reassignd controller`` exiting 2 on a bad one."""

from __future__ import annotations

import pytest

from controller.core.listeners import Listener, parse_listeners
from controller.shell.security.config import SecurityConfig
from controller.shell.security.principal import PrincipalError, distinguished_name, map_dn, parse_rules
from protocol.properties import parse_jaas, parse_properties


@pytest.mark.parametrize("rules,dn,name", [
    ("DEFAULT", "CN=alice,O=example", "CN=alice,O=example"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/,DEFAULT", "CN=bob,OU=ops,O=example", "bob@ops"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U", "CN=bob,OU=ops,O=x", "BOB@OPS"),
    ("RULE:^CN=([^,]*).*$/$1/L, RULE:^.*$/other/", "CN=Carol,O=x", "carol"),
    ("RULE:^O=x$/only-o/,DEFAULT", "CN=d,O=x", "CN=d,O=x"),  # the first rule must match the whole DN
    ("RULE:^CN=(.*)$/a\\/b $1/", "CN=e", "a/b e"),
])
def test_mapping_rules(rules, dn, name):
    assert map_dn(dn, parse_rules(rules)) == name


@pytest.mark.parametrize("rules", ["RULE:(/x/", "NONSENSE", "RULE:^a$/b/X", "DEFAULT DEFAULT"])
def test_bad_rules(rules):
    with pytest.raises(PrincipalError):
        parse_rules(rules)


def test_no_rule_matching_is_an_error():
    with pytest.raises(PrincipalError):
        map_dn("CN=x", parse_rules("RULE:^O=.*$/y/"))


def test_distinguished_name_is_rfc2253_order_and_escaped():
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),), (("commonName", "#1 admin"),))
    assert distinguished_name(subject) == "CN=\\#1 admin,O=Acme\\, Inc.,C=US"


def test_properties_and_jaas():
    props = parse_properties("# comment\n! also\nkey = value\nother:x\nlong=a\\\n   b\nempty=\n")
    assert props == {"key": "value", "other": "x", "long": "ab", "empty": ""}
    assert parse_jaas('M required username="u" password=p;') == {"username": "u", "password": "p"}
    with pytest.raises(ValueError):
        parse_jaas('M username="u";')


def test_listeners():
    assert parse_listeners("127.0.0.1:9190") == [Listener("PLAINTEXT", "127.0.0.1", 9190)]
    assert parse_listeners("secure://[::1]:0,PLAINTEXT://h:1") == [Listener("SECURE", "::1", 0),
                                                                   Listener("PLAINTEXT", "h", 1)]
    for bad in ("h:1,h:2", "x://:1", "1x://h:1", "h:99999", ""):
        with pytest.raises(ValueError):
            parse_listeners(bad)


def test_security_config_defaults_and_refusals():
    default = SecurityConfig.from_properties({})
    assert default.protocol_of("PLAINTEXT") == "PLAINTEXT" and not default.authorizer
    assert default.mechanisms == {"SCRAM-SHA-256", "SCRAM-SHA-512"} and not default.allow_if_no_acl
    config = SecurityConfig.from_properties({"listener.security.protocol.map": "EXT:SASL_SSL,INT:plaintext",
                                             "super.users": "User:a; User:CN=b,O=c"})
    assert config.protocol_of("EXT") == "SASL_SSL" and config.protocol_of("INT") == "PLAINTEXT"
    assert config.super_users == {"User:a", "User:CN=b,O=c"}
    with pytest.raises(ValueError):
        config.protocol_of("OTHER")  # neither mapped nor a protocol's name
    with pytest.raises(ValueError):
        config.ssl_context("SASL_SSL")  # TLS without a keystore
    for bad in ({"listener.security.protocol.map": "A:KERBEROS"}, {"sasl.enabled.mechanisms": "GSSAPI"},
                {"authorizer.class.name": "com.example.Mine"}, {"allow.everyone.if.no.acl.found": "yes"},
                {"super.users": "alice"}, {"max.connections.per.ip": "0"}, {"ssl.keystore.location": "k",
                                                                              "ssl.keystore.type": "JKS"},
                {"zookeeper.set.acl": "true"}):
        with pytest.raises(ValueError):
            SecurityConfig.from_properties(bad)


@pytest.mark.parametrize("text", ["authorizer.class.name=com.example.Mine\n", None])
def test_controller_exits_2_on_a_bad_security_config(tmp_path, text, capsys):
    from controller.shell.daemon import main

    path = tmp_path / "server.properties"
    if text is not None:
        path.write_text(text)
    assert main(["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "127.0.0.1:0",
                 "--security-config", str(path)]) == 2
    assert "security" in capsys.readouterr().err


def test_listener_name_overrides_fall_back_key_by_key():
    config = SecurityConfig.from_properties({
        "listener.security.protocol.map": "EXT:SASL_SSL,INT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN", "connections.max.reauth.ms": "60000",
        "listener.name.int.sasl.enabled.mechanisms": "PLAIN", "listener.name.EXT.connections.max.reauth.ms": "0",
        "super.users": "User:admin"})
    internal, external = config.for_listener("INT"), config.for_listener("ext")
    assert internal.mechanisms == {"PLAIN"} and internal.reauth_ms == 60000  # its own; the file's
    assert external.mechanisms == {"SCRAM-SHA-512", "PLAIN"} and external.reauth_ms == 0
    assert internal.super_users == external.super_users == {"User:admin"}
    assert config.for_listener("OTHER") is config  # no overrides: the file's settings
    for bad, words in (({"listener.name.ext.super.users": "User:a"}, "not a per-listener setting"),
                       ({"listener.name.ext.gssapi.sasl.jaas.config": "x"}, "not a per-listener setting"),
                       ({"listener.name.ext.sasl.enabled.mechanisms": "GSSAPI"}, "listener.name.ext.*"),
                       ({"listener.name.ext.ssl.keystore.type": "JKS", "ssl.keystore.location": "k"},
                        "listener.name.ext.*")):
        with pytest.raises(ValueError, match=words.replace(".", r"\.").replace("*", r"\*")):
            SecurityConfig.from_properties(bad)
