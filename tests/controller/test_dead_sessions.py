"""A broker whose session ends (gone, or back under a new one) loses its request queue and its
connection at once (controller.shell.dispatch.Dispatcher.forget, Kafka's removeBroker): the
requests of its next session - the startup LeaderAndIsr that makes it follow again - are not
held behind requests stuck on its dead socket, each of which held the queue for up to
``request_timeout_s`` (10 s here)."""

from __future__ import annotations

import asyncio

from protocol import ApiKey
from tests.controller import harness as harness_mod
from tests.controller.fixtures import harness_fixture

h = harness_fixture("t:4:3:64KiB")


async def test_a_broker_back_under_a_new_session_gets_its_requests_at_once(h, monkeypatch):
    hung: set[int] = set()

    class DeadSockets(harness_mod.WatchingTransport):
        async def request(self, broker_id, api_key, api_version, body):
            if broker_id in hung:
                await asyncio.Event().wait()  # nothing comes back, nothing fails
            return await super().request(broker_id, api_key, api_version, body)

    monkeypatch.setattr(harness_mod, "WatchingTransport", DeadSockets)
    await h.start_controller(101)
    await h.tick()
    hung.add(3)
    # Requests to 3 pile up behind one that never returns: UpdateMetadata on every broker change.
    for b in (5, 6):
        await h.cluster.stop_broker(b)
        await h.settle()
        await h.cluster.start_broker(b)
        await h.settle()
    await h.cluster.stop_broker(3)
    await h.settle()
    hung.discard(3)
    h.sent.clear()
    await h.cluster.start_broker(3)  # a new session: its startup LeaderAndIsr and full metadata
    async with asyncio.timeout(5):
        while not any(b == 3 and key == ApiKey.LEADER_AND_ISR for b, key, _ in h.sent):
            await h.tick()


async def test_forgetting_a_connection_never_waits_on_its_peer(monkeypatch):
    """TcpTransport.disconnect runs inside a controller step (Dispatcher.forget): it forgets the
    connection at once and closes it in the background, aborting the socket when a close that
    flushes to a peer that stopped reading does not end within DROP_WAIT_S."""
    from controller.shell import transport as transport_mod

    monkeypatch.setattr(transport_mod, "DROP_WAIT_S", 0.05)
    aborted = asyncio.Event()

    class Stuck:
        closed = False
        in_flight = 0

        class writer:
            class transport:
                @staticmethod
                def abort():
                    aborted.set()

        async def close(self):
            await asyncio.Event().wait()  # a flush to a peer that reads nothing

    t = transport_mod.TcpTransport(lambda b: ("127.0.0.1", 1))
    t._connections[3] = Stuck()
    async with asyncio.timeout(0.5):
        await t.disconnect(3)  # returns at once
    assert 3 not in t._connections
    async with asyncio.timeout(2):
        await aborted.wait()
    await t.close()
