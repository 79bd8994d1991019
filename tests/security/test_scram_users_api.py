"""KIP-554's Describe/AlterUserScramCredentials on a real ZooKeeper: the error table, and that
a credential made from a salted password logs in (the SASL server checks it)."""

from __future__ import annotations

import hashlib

import pytest

from controller.core.config import ControllerConfig
from controller.shell.admin import scram_users as api
from controller.shell.admin.base import AdminContext
from controller.shell.role import Role
from controller.shell.security.sasl import SaslServer
from controller.shell.security.session import read_credentials
from protocol.errors import ErrorCode
from znodes.store import connect

pytestmark = pytest.mark.zk

SHA512 = 2


def upsert(name, password="pw", mechanism=SHA512, iterations=4096, salt=b"salt-salt"):
    hash_name = {1: "sha256", 2: "sha512"}.get(mechanism, "sha512")
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, max(iterations, 1))
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt, "salted_password": salted}


@pytest.fixture
async def ctx(zk_hosts):
    store = await connect(zk_hosts)
    role = Role(101)
    role.store = store
    yield AdminContext(role, ControllerConfig())
    await store.close()


async def alter(ctx, deletions=(), upsertions=()):
    answer = await api.handle_alter(ctx, 0, {"deletions": list(deletions), "upsertions": list(upsertions)})
    return {r["user"]: r["error_code"] for r in answer["results"]}


async def test_alter_error_table_and_describe(ctx):
    assert await alter(ctx, upsertions=[upsert("alice"), upsert("bob", mechanism=1)]) == {"alice": 0, "bob": 0}
    assert await alter(ctx, upsertions=[upsert("")]) == {"": ErrorCode.UNACCEPTABLE_CREDENTIAL}
    assert await alter(ctx, upsertions=[upsert("c", iterations=100)]) == {"c": ErrorCode.UNACCEPTABLE_CREDENTIAL}
    assert await alter(ctx, upsertions=[upsert("c", mechanism=9)]) == {"c": ErrorCode.UNSUPPORTED_SASL_MECHANISM}
    # one user's changes apply together or not at all
    assert await alter(ctx, deletions=[{"name": "alice", "mechanism": SHA512}],
                       upsertions=[upsert("alice", password="new")]) == {"alice": ErrorCode.DUPLICATE_RESOURCE}
    assert await alter(ctx, deletions=[{"name": "alice", "mechanism": 1}]) == {"alice": ErrorCode.RESOURCE_NOT_FOUND}
    described = await api.handle_describe(ctx, 0, {"users": None})
    assert {r["user"]: r["credential_infos"] for r in described["results"]} == {
        "alice": [{"mechanism": SHA512, "iterations": 4096}], "bob": [{"mechanism": 1, "iterations": 4096}]}
    named = await api.handle_describe(ctx, 0, {"users": [{"name": "alice"}, {"name": "zed"}, {"name": "zed"}]})
    assert {r["user"]: r["error_code"] for r in named["results"]} == {"alice": 0, "zed": ErrorCode.DUPLICATE_RESOURCE}
    missing = await api.handle_describe(ctx, 0, {"users": [{"name": "zed"}]})
    assert missing["results"][0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
    assert await alter(ctx, deletions=[{"name": "bob", "mechanism": 1}]) == {"bob": 0}
    assert [r["user"] for r in (await api.handle_describe(ctx, 0, {"users": []}))["results"]] == ["alice"]


async def test_a_salted_password_credential_logs_in(ctx):
    assert await alter(ctx, upsertions=[upsert("dora", password="dora-secret")]) == {"dora": 0}
    creds = await read_credentials(ctx.store, "dora")
    sasl = SaslServer({"PLAIN"}, nonce=lambda: "n")
    sasl.handshake("PLAIN")
    sasl.authenticate(b"\0dora\0dora-secret", creds, now_ms=0)
    assert sasl.principal == "User:dora"
