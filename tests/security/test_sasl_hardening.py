"""Issue 22 item 7's SASL holes, pure and over a real SASL listener:

- re-authentication (KIP-368) may not switch mechanism: SCRAM to PLAIN was accepted; now, as
  Kafka's SaslServerAuthenticator, the handshake is answered and the exchange's first token
  fails (SASL_AUTHENTICATION_FAILED, then the connection closes);
- SCRAM no longer tells which user names exist: an unknown user gets a server-first like a known
  one's (RFC 5802 5.1: its salt made from the name and the server's secret, the same on every
  attempt) and fails at client-final with a wrong password's words."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from controller.shell.security import sasl as S
from controller.shell.security.scram import (
    DEFAULT_ITERATIONS,
    SALT_BYTES,
    client_exchange,
    make_credential,
    decoy_credential,
)
from protocol.errors import ErrorCode
from znodes import decoy_secret
from tests.security.test_listener_security import call, closed, open_raw, pki, served  # noqa: F401 - fixtures

NONCE = "servernonce123"


def server(reauth_ms: int = 0):
    return S.SaslServer({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, reauth_ms=reauth_ms, nonce=lambda: NONCE)


def creds(password: str = "alice-secret"):
    return {m: make_credential(m, password) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def scram_login(sasl, mechanism: str, user: str, password: str, known) -> None:
    client = ScramClient(user, password, mechanism)
    client.process_server_first_message(sasl.authenticate(client.first_message(), known, now_ms=0))
    client.process_server_final_message(sasl.authenticate(client.final_message(), {}, now_ms=0))


def attributes(server_first: bytes) -> dict[str, str]:
    return dict(part.split("=", 1) for part in server_first.decode().split(","))


# ---- re-authentication keeps its mechanism ------------------------------------------------------


def test_reauthentication_cannot_switch_from_scram_to_plain():
    sasl = server(reauth_ms=60_000)
    sasl.handshake("SCRAM-SHA-512")
    scram_login(sasl, "SCRAM-SHA-512", "alice", "alice-secret", creds())
    assert sasl.principal == "User:alice"
    sasl.handshake("PLAIN")  # answered, as Kafka does: PLAIN is enabled
    with pytest.raises(S.SaslError) as e:
        sasl.authenticate(b"\0alice\0alice-secret", creds(), now_ms=1)
    assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "not supported for re-authentication of mechanism 'SCRAM-SHA-512'" in e.value.message
    assert sasl.state == "failed" and not sasl.authenticated
    # the same mechanism again is still a re-authentication
    sasl = server(reauth_ms=60_000)
    sasl.handshake("SCRAM-SHA-256")
    scram_login(sasl, "SCRAM-SHA-256", "alice", "alice-secret", creds())
    sasl.handshake("SCRAM-SHA-256")
    scram_login(sasl, "SCRAM-SHA-256", "alice", "alice-secret", creds())
    assert sasl.state == "authenticated"


async def test_a_listener_refuses_a_mechanism_switch_and_closes(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    assert (await call(reader, writer, 17, 1, {"mechanism": "SCRAM-SHA-512"}, 1))["error_code"] == 0
    exchange = client_exchange("SCRAM-SHA-512", "alice", "alice-secret", "clientnonce")
    first = await call(reader, writer, 36, 1, {"auth_bytes": next(exchange)}, 2)
    final = await call(reader, writer, 36, 1, {"auth_bytes": exchange.send(first["auth_bytes"])}, 3)
    assert final["error_code"] == 0
    assert (await call(reader, writer, 17, 1, {"mechanism": "PLAIN"}, 4))["error_code"] == 0
    refused = await call(reader, writer, 36, 1, {"auth_bytes": b"\0alice\0alice-secret"}, 5)
    assert refused["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert await closed(reader)


# ---- SCRAM: unknown users look like known ones until the proof -----------------------------------


def test_an_unknown_user_gets_a_server_first_and_fails_like_a_wrong_password():
    def first_for(user: str, known) -> tuple[S.SaslServer, ScramClient, bytes]:
        sasl = server()
        sasl.handshake("SCRAM-SHA-256")
        client = ScramClient(user, "guess", "SCRAM-SHA-256")
        return sasl, client, sasl.authenticate(client.first_message(), known, now_ms=0)

    sasl, client, mallory = first_for("mallory", {})
    _, _, again = first_for("mallory", {})
    _, _, other = first_for("trudy", {})
    _, _, alice = first_for("alice", creds())
    m, a = attributes(mallory), attributes(alice)
    assert sorted(m) == sorted(a) == ["i", "r", "s"]  # nothing in its shape tells them apart
    assert int(m["i"]) == DEFAULT_ITERATIONS and len(base64.b64decode(m["s"])) == SALT_BYTES
    assert m["s"] == attributes(again)["s"] != attributes(other)["s"]  # stable per name, differs between names
    client.process_server_first_message(mallory)
    with pytest.raises(S.SaslError) as unknown:
        sasl.authenticate(client.final_message(), {}, now_ms=0)
    sasl, client, alice = first_for("alice", creds())
    client.process_server_first_message(alice)
    with pytest.raises(S.SaslError) as wrong:
        sasl.authenticate(client.final_message(), {}, now_ms=0)
    assert (unknown.value.code, unknown.value.message) == (wrong.value.code, wrong.value.message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, S.SCRAM_FAILED.format("SCRAM-SHA-256"))


def test_the_made_up_credential_depends_on_the_server_secret():
    one = decoy_credential("SCRAM-SHA-512", "mallory", b"server-one")
    assert one == decoy_credential("SCRAM-SHA-512", "mallory", b"server-one")
    assert one.salt != decoy_credential("SCRAM-SHA-512", "mallory", b"server-two").salt
    assert len(one.stored_key) == len(make_credential("SCRAM-SHA-512", "x").stored_key)


async def test_a_listener_answers_an_unknown_user_s_client_first(served):
    reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
    assert (await call(reader, writer, 17, 1, {"mechanism": "SCRAM-SHA-512"}, 1))["error_code"] == 0
    exchange = client_exchange("SCRAM-SHA-512", "mallory", "guess", "clientnonce")
    first = await call(reader, writer, 36, 1, {"auth_bytes": next(exchange)}, 2)
    assert first["error_code"] == 0 and set(attributes(first["auth_bytes"])) == {"r", "s", "i"}
    final = await call(reader, writer, 36, 1, {"auth_bytes": exchange.send(first["auth_bytes"])}, 3)
    assert (final["error_code"], final["error_message"]) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, S.SCRAM_FAILED.format("SCRAM-SHA-512"))
    assert await closed(reader)


async def test_an_unknown_user_s_salt_comes_from_the_service_s_secret(served):
    """The made-up salt is derived from the one secret in ZooKeeper (znodes.decoy_secret), so
    every controller instance, and the same one after a restart, answers an unknown name alike;
    a secret of each process's own told unknown names from known ones across instances."""

    async def salt_for(user: str) -> bytes:
        reader, writer = await open_raw(served.port("SASL_PLAINTEXT"))
        try:
            assert (await call(reader, writer, 17, 1, {"mechanism": "SCRAM-SHA-512"}, 1))["error_code"] == 0
            exchange = client_exchange("SCRAM-SHA-512", user, "guess", "clientnonce")
            first = await call(reader, writer, 36, 1, {"auth_bytes": next(exchange)}, 2)
            return base64.b64decode(attributes(first["auth_bytes"])["s"])
        finally:
            writer.close()

    mallory = await salt_for("mallory")
    data, _ = await served.store.get(decoy_secret.PATH)  # created by the first unknown name
    assert mallory == decoy_credential("SCRAM-SHA-512", "mallory", decoy_secret.decode(data)).salt
    assert await salt_for("mallory") == mallory
