"""The AdminClient against a server answering every request with seeded random bodies that
decode (error codes, node ids, hosts, lists of any length, hostile strings): every call ends in
one of the client's own errors (client.errors.ReassignError) or a value, never another
exception. What a broker or controller answers is input like any other; the case this found:
a broker advertised at a host no resolver takes (a label over 63 bytes, a NUL) escaped as
UnicodeError or ValueError instead of ConnectionFailedError."""

from __future__ import annotations

import asyncio
import random

from client.admin import AdminClient
from client.errors import ReassignError
from protocol import ApiKey
from protocol.registry import REGISTRY
from tests.admin.test_handler_fuzz import _struct
from tests.client.wire_server import WireServer

SEED = 20261129
CALLS = 300  # seconds in all: a few time out against answers that never complete a call


def _handlers(rng: random.Random, port: list[int]) -> dict:
    def answer_for(key):
        spec = REGISTRY.responses[key]

        def answer(version, body):
            out = _struct(spec.struct, version, rng)
            if key == ApiKey.METADATA:  # most brokers at this server, so calls get past metadata
                for b in out.get("brokers", []):
                    if rng.random() < 0.9:
                        b["host"], b["port"] = "127.0.0.1", port[0]
                if out.get("brokers") and rng.random() < 0.7:
                    out["controller_id"] = out["brokers"][0]["node_id"]
            if "error_code" in out and rng.random() < 0.6:
                out["error_code"] = 0
            return out
        return answer
    return {k: answer_for(k) for k in REGISTRY.responses if k != ApiKey.API_VERSIONS}


async def _described(client: AdminClient):
    """KIP-240's describe of what the list answered (the only Reassignments it takes)."""
    return await client.describe_reassignments(list((await client.list_reassignments()).values()))


CALLS_MADE = [
    lambda c: c.describe_cluster(),
    lambda c: c.reassign_partitions({("orders", 0): [1, 2]}),
    lambda c: c.alter_interbroker_throttled_rates({1: (1000, 1000)}),
    lambda c: c.cancel_reassignments([("orders", 0)]),
    lambda c: c.list_reassignments(),
    lambda c: _described(c),
    lambda c: c.list_partition_reassignments(),
    lambda c: c.elect_preferred_leaders([("orders", 0)]),
    lambda c: c.describe_log_dirs(),
    lambda c: c.describe_broker_throttles([1, 2]),
    lambda c: c.describe_broker_config([1], "leader.replication.throttled.rate"),
    lambda c: c.alter_broker_config(1, "leader.replication.throttled.rate", "1000"),
    lambda c: c.waiting_reassignments(),
]


async def test_random_answers_end_in_the_clients_own_errors():
    rng = random.Random(SEED)
    port = [0]
    server = await WireServer.start(_handlers(rng, port))
    port[0] = server.port
    unexpected = []
    try:
        for i in range(CALLS):
            client = AdminClient(server.address, request_timeout_ms=2000, retries=1)
            call = CALLS_MADE[i % len(CALLS_MADE)]
            try:
                await asyncio.wait_for(client.start(), 10)
                await asyncio.wait_for(call(client), 20)
            except (ReassignError, TimeoutError):
                pass
            except Exception as e:  # noqa: BLE001 - what the test looks for
                unexpected.append(f"call {i}: {type(e).__name__}: {str(e)[:200]}")
            finally:
                await client.close()
    finally:
        await server.stop()
    assert not unexpected, "\n".join(unexpected[:10])
