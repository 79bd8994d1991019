"""The controller's ONE event queue, and the ZooKeeper session state seen on the way in.

Everything the controller reacts to is an item on ``inbox.queue``, handled one at a time:
ZooKeeper watch and session events (pumped from ``store.events``), broker answers
(:class:`controller.core.events.StopReplicaSent`), follow-up reads, and later admin requests.
The pump also records the session state as events pass, so code that hit a connection loss
can wait for the reconnection without racing the queue.

    inbox = Inbox(store)
    item = await inbox.next()        # inbox.waiting is True while this waits on an empty queue
    if not await inbox.wait_connected():
        ...                          # session LOST: resign
    inbox.close()
"""

from __future__ import annotations

import asyncio

from znodes.api import SessionEvent, SessionState, Store


class Inbox:
    def __init__(self, store: Store | None = None):
        self.queue: asyncio.Queue = asyncio.Queue()
        self._connected = asyncio.Event()
        self._connected.set()
        self._lost = asyncio.Event()
        self._pump: asyncio.Task | None = None
        self._waiters = 0  # consumers parked in next() (the controller's loop: at most one)
        if store is not None:
            self._pump = asyncio.create_task(self._forward(store), name="inbox-pump")

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def note(self, item) -> None:
        """Track the session state of ``item`` (done by the pump for store events)."""
        if isinstance(item, SessionEvent):
            if item.state is SessionState.SUSPENDED:
                self._connected.clear()
            elif item.state is SessionState.CONNECTED:
                self._connected.set()
            elif item.state is SessionState.LOST:
                self._lost.set()
                self._connected.set()

    def put(self, item) -> None:
        self.note(item)
        self.queue.put_nowait(item)

    async def next(self):
        """The next item, waiting for one if the queue is empty."""
        self._waiters += 1
        try:
            return await self.queue.get()
        finally:
            self._waiters -= 1

    @property
    def waiting(self) -> bool:
        """The consumer is parked in :meth:`next` on an empty queue: everything put so far has
        been taken, and whatever it started on the last one has returned to the loop."""
        return self._waiters > 0 and self.queue.empty()

    async def _forward(self, store: Store) -> None:
        while True:
            self.put(await store.events.get())

    async def wait_connected(self) -> bool:
        """Wait until the session is connected again; False if it was lost instead."""
        await self._connected.wait()
        return not self._lost.is_set()

    def drain(self, limit: int) -> list:
        """Up to ``limit`` items already queued, without waiting."""
        out = []
        while len(out) < limit:
            try:
                out.append(self.queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return out

    def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
