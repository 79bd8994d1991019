"""The AdminClient's client quotas (KIP-546) against real controller daemons on real ZooKeeper:
set, validate-only, remove and describe through the active controller, a refused entity's
error raised for that entity alone, and a standby serving the describe (every node does)."""

from __future__ import annotations

import json

import pytest

from client.admin import AdminClient
from client.errors import InputError, KafkaApiError
from protocol.client_quotas import MATCH_DEFAULT, MATCH_EXACT
from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

ALICE = (("user", "alice"),)
ALICE_APP = (("user", "alice"), ("client-id", "app"))
ANY_IP = (("ip", None),)


async def test_admin_client_sets_describes_and_removes_quotas(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101, 102), topics={"t": {0: [1, 2]}}) as c:
        active = await c.wait_active()
        host, port = c.addr(active)
        async with AdminClient(f"{host}:{port}") as admin:
            checked = await admin.alter_client_quotas({ALICE: {"producer_byte_rate": 1024}}, validate_only=True)
            assert checked[ALICE] is None and c.kafka.zk.exists("/config/users/alice") is None
            result = await admin.alter_client_quotas({
                ALICE: {"producer_byte_rate": 1024, "request_percentage": 50.5},
                ALICE_APP: {"consumer_byte_rate": 4096},
                ANY_IP: {"connection_creation_rate": 30},
                (("client-id", "bad"),): {"producer_byte_rate": 0.5},
            })
            assert result.succeeded == [ALICE, ALICE_APP, ANY_IP]
            error = result[(("client-id", "bad"),)]
            assert isinstance(error, KafkaApiError) and error.code == ErrorCode.INVALID_REQUEST
            assert error.message == "Configuration producer_byte_rate must be a LONG value"
            assert json.loads(c.kafka.zk.get("/config/users/alice")[0])["config"] == {
                "producer_byte_rate": "1024", "request_percentage": "50.5"}
            assert await admin.describe_client_quotas([("user", MATCH_EXACT, "alice")]) == {
                ALICE: {"producer_byte_rate": 1024.0, "request_percentage": 50.5},
                ALICE_APP: {"consumer_byte_rate": 4096.0}}
            assert await admin.describe_client_quotas([("ip", MATCH_DEFAULT, None)], strict=True) == {
                ANY_IP: {"connection_creation_rate": 30.0}}
            assert (await admin.alter_client_quotas({ALICE: {"request_percentage": None}}))[ALICE] is None
            assert await admin.describe_client_quotas([("user", MATCH_EXACT, "alice")], strict=True) == {
                ALICE: {"producer_byte_rate": 1024.0}}
            with pytest.raises(KafkaApiError) as refused:
                await admin.describe_client_quotas([("group", 2, None)])
            assert refused.value.code == ErrorCode.UNSUPPORTED_VERSION
            # Bad arguments are the caller's error, said before anything is sent.
            for bad in ({ALICE: {"producer_byte_rate": "1024"}}, {(("user", 7),): {"producer_byte_rate": 1}},
                        {("user", "alice"): {"producer_byte_rate": 1}}, {(): {}}):
                with pytest.raises(InputError):
                    await admin.alter_client_quotas(bad)
            for bad in ([("user", "0", "alice")], [("user", 0)], [(None, 2, None)], [("user", 1000, None)]):
                with pytest.raises(InputError):
                    await admin.describe_client_quotas(bad)
        # A standby serves them too (Kafka's clients send them to any node).
        standby = c.standby(active)
        body = await c.call(standby, 48, 1, {"components": [], "strict": False})
        assert body["error_code"] == 0 and len(body["entries"]) == 3
