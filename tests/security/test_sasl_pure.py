"""The pure SCRAM and SASL server (controller.shell.security.scram, .sasl): driven by
kafka-python's SCRAM client (an independent implementation) and by hand-made bad input."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from controller.shell.security import sasl as S
from controller.shell.security.scram import (
    ScramError,
    ScramServer,
    client_exchange,
    format_credential,
    make_credential,
    parse_credential,
    password_matches,
)
from protocol.errors import ErrorCode

NONCE = "servernonce123"


def server(mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), reauth_ms=0):
    return S.SaslServer(set(mechanisms), reauth_ms=reauth_ms, nonce=lambda: NONCE)


def creds(password="alice-secret"):
    return {m: make_credential(m, password) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_scram_client_logs_in(mechanism):
    sasl = server()
    sasl.handshake(mechanism)
    client = ScramClient("alice", "alice-secret", mechanism)
    first = client.first_message()
    assert sasl.user_named(first) == "alice"
    server_first = sasl.authenticate(first, creds(), now_ms=0)
    assert sasl.state == "authenticate" and not sasl.authenticated
    client.process_server_first_message(server_first)
    final = sasl.authenticate(client.final_message(), {}, now_ms=0)
    client.process_server_final_message(final)  # raises if our signature is wrong
    assert sasl.state == "authenticated" and sasl.principal == "User:alice"


def test_wrong_password_is_sasl_authentication_failed():
    sasl = server()
    sasl.handshake("SCRAM-SHA-512")
    client = ScramClient("alice", "wrong", "SCRAM-SHA-512")
    client.process_server_first_message(sasl.authenticate(client.first_message(), creds(), now_ms=0))
    with pytest.raises(S.SaslError) as e:
        sasl.authenticate(client.final_message(), {}, now_ms=0)
    assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert e.value.message == S.SCRAM_FAILED.format("SCRAM-SHA-512")
    assert sasl.state == "failed" and not sasl.authenticated
    with pytest.raises(S.SaslError) as e:  # nothing after a failure
        sasl.handshake("SCRAM-SHA-512")
    assert e.value.code == ErrorCode.ILLEGAL_SASL_STATE


def test_unknown_user_fails_like_a_wrong_password():
    sasl = server()
    sasl.handshake("SCRAM-SHA-256")
    client = ScramClient("mallory", "x", "SCRAM-SHA-256")
    # challenged like a known user (RFC 5802 5.1; tests/security/test_sasl_hardening.py), refused at the proof
    client.process_server_first_message(sasl.authenticate(client.first_message(), {}, now_ms=0))
    with pytest.raises(S.SaslError) as e:
        sasl.authenticate(client.final_message(), {}, now_ms=0)
    assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert e.value.message == S.SCRAM_FAILED.format("SCRAM-SHA-256")  # same words: no user probing


def test_unsupported_mechanism_and_out_of_order():
    sasl = server(mechanisms=("SCRAM-SHA-512",))
    with pytest.raises(S.SaslError) as e:
        sasl.handshake("GSSAPI")
    assert e.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    sasl = server()
    with pytest.raises(S.SaslError) as e:
        sasl.authenticate(b"n,,n=a,r=b", {}, now_ms=0)  # before any handshake
    assert e.value.code == ErrorCode.ILLEGAL_SASL_STATE
    sasl = server()
    sasl.handshake("PLAIN")
    with pytest.raises(S.SaslError) as e:
        sasl.handshake("PLAIN")  # twice without authenticating
    assert e.value.code == ErrorCode.ILLEGAL_SASL_STATE


def test_plain_checks_the_scram_credential():
    sasl = server()
    sasl.handshake("PLAIN")
    assert sasl.user_named(b"\0alice\0alice-secret") == "alice"
    assert sasl.authenticate(b"\0alice\0alice-secret", creds(), now_ms=0) == b""
    assert sasl.principal == "User:alice"
    for token in (b"\0alice\0nope", b"bob\0alice\0alice-secret", b"alice-secret", b"\0\0"):
        sasl = server()
        sasl.handshake("PLAIN")
        with pytest.raises(S.SaslError) as e:
            sasl.authenticate(token, creds(), now_ms=0)
        assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_reauthentication_bounds_and_principal():
    sasl = server(reauth_ms=1000)
    sasl.handshake("PLAIN")
    sasl.authenticate(b"\0alice\0alice-secret", creds(), now_ms=5000)
    assert sasl.session_lifetime_ms == 1000
    assert not sasl.expired(5999) and sasl.expired(6000)
    sasl.handshake("PLAIN")  # KIP-368: a new exchange on the authenticated connection
    assert sasl.state == "reauthenticate" and sasl.authenticated
    sasl.authenticate(b"\0alice\0alice-secret", creds(), now_ms=6500)
    assert sasl.state == "authenticated" and not sasl.expired(7000) and sasl.expired(7500)
    sasl.handshake("PLAIN")
    with pytest.raises(S.SaslError) as e:  # another principal: refused
        sasl.authenticate(b"\0bob\0bob-secret", {"SCRAM-SHA-512": make_credential("SCRAM-SHA-512", "bob-secret")},
                          now_ms=7000)
    assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED and not sasl.authenticated


def test_kafka_credential_string_round_trips_and_checks_passwords():
    cred = make_credential("SCRAM-SHA-512", "pw", iterations=4096)
    text = format_credential(cred)
    assert text.startswith("salt=") and ",stored_key=" in text and text.endswith(",iterations=4096")
    assert parse_credential("SCRAM-SHA-512", text) == cred
    assert password_matches(cred, "pw") and not password_matches(cred, "pW")
    for bad in ("salt=AA==", "salt=!!,stored_key=AA==,server_key=AA==,iterations=4096", "nonsense"):
        with pytest.raises(ScramError):
            parse_credential("SCRAM-SHA-512", bad)
    with pytest.raises(ScramError):
        make_credential("SCRAM-SHA-512", "pw", iterations=10)


def test_rfc7677_test_vector():
    # RFC 7677 section 3: user "user", password "pencil", SCRAM-SHA-256.
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = make_credential("SCRAM-SHA-256", "pencil", iterations=4096, salt=salt)
    scram = ScramServer("SCRAM-SHA-256", nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert scram.client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == "user"
    assert scram.server_first(cred) == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = scram.client_final(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final.startswith(b"v=")  # the proof above is the RFC's; kafka-python checks our signature


@pytest.mark.parametrize("message", [b"", b"p=tls-unique,,n=a,r=b", b"n,,r=b,n=a", b"n,,n=a=ZZ,r=b", b"\xff",
                                     b"n,x,n=a,r=b"])
def test_malformed_client_first_is_one_error_type(message):
    with pytest.raises(ScramError):
        ScramServer("SCRAM-SHA-512", nonce="x").client_first(message)


def test_own_client_exchange_matches_the_server():
    cred = make_credential("SCRAM-SHA-512", "pw")
    scram = ScramServer("SCRAM-SHA-512", nonce="srv")
    gen = client_exchange("SCRAM-SHA-512", "a,b=c", "pw", "cli")
    first = next(gen)
    assert scram.client_first(first) == "a,b=c"
    final = gen.send(scram.server_first(cred))
    with pytest.raises(StopIteration):
        gen.send(scram.client_final(final))
