"""controller.shell.inbox: the one event queue, and its public signal that the controller's loop
waits for its next event (what bench/controller.py's settling check asks, instead of reading
asyncio.Queue's internals)."""

from __future__ import annotations

import asyncio

from controller.shell.inbox import Inbox
from znodes.api import SessionEvent, SessionState


async def test_next_returns_items_in_order():
    inbox = Inbox()
    inbox.put("a")
    inbox.put("b")
    assert await inbox.next() == "a"
    assert await inbox.next() == "b"


async def test_waiting_only_while_parked_on_an_empty_queue():
    inbox = Inbox()
    assert not inbox.waiting  # nobody waits
    inbox.put("early")
    consumer = asyncio.create_task(inbox.next())
    await asyncio.sleep(0)
    assert consumer.done() and consumer.result() == "early"
    assert not inbox.waiting  # it took the item and returned
    consumer = asyncio.create_task(inbox.next())
    await asyncio.sleep(0)
    assert inbox.waiting  # parked on an empty queue
    inbox.put("late")
    assert not inbox.waiting  # an item is queued: not idle, though the consumer is not awake yet
    assert await consumer == "late"
    assert not inbox.waiting


async def test_a_cancelled_wait_stops_waiting():
    inbox = Inbox()
    consumer = asyncio.create_task(inbox.next())
    await asyncio.sleep(0)
    assert inbox.waiting
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)
    assert not inbox.waiting


async def test_session_events_are_noted_on_put():
    inbox = Inbox()
    inbox.put(SessionEvent(SessionState.SUSPENDED))
    waiter = asyncio.create_task(inbox.wait_connected())
    await asyncio.sleep(0)
    assert not waiter.done()
    inbox.put(SessionEvent(SessionState.LOST))
    assert await waiter is False and inbox.lost
