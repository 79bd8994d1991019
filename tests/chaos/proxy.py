"""A TCP fault proxy on loopback: pass, delay, cut or blackhole one client's links to a server.

The chaos suite puts one proxy between each controller and each ZooKeeper server, so a fault can
hit one controller's view of ZooKeeper while everyone else's stays healthy. Modes:

``pass``       bytes flow both ways as they arrive.
``delay``      every chunk is forwarded ``delay_s`` after it arrived, order kept (a slow link).
``delay_down`` only the server's chunks are delayed: the client hears late (answers, watch
               events), what it sends arrives at once.
``cut``        every open connection is closed at once (both sides see a reset link) and new
               connections are closed as soon as they are accepted (a link that is down).
``blackhole``  connections stay open but nothing is forwarded either way until the mode changes
               (a partition: the bytes wait, as TCP's retransmissions would, and flow on heal);
               new connections are accepted and held the same way.

The proxy runs its own event loop in a daemon thread, so a busy caller never slows the links.

    proxy = FaultProxy(("127.0.0.1", 2181)).start()
    zk_hosts = f"127.0.0.1:{proxy.port}"
    proxy.set_mode("delay", delay_s=0.5)
    proxy.set_mode("cut")
    proxy.set_mode("pass")
    proxy.close()
"""

from __future__ import annotations

import asyncio
import threading
import time

MODES = ("pass", "delay", "delay_down", "cut", "blackhole")
CHUNK = 65536


class FaultProxy:
    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1", port: int = 0):
        self.upstream = upstream
        self.host = host
        self.port = port
        self.mode = "pass"
        self.delay_s = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"proxy->{upstream[1]}", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._links: set[_Link] = set()
        self._flowing: asyncio.Event | None = None  # set unless blackholed

    # ---- control, from any thread ------------------------------------------------------------

    def start(self) -> "FaultProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def set_mode(self, mode: str, delay_s: float = 0.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        asyncio.run_coroutine_threadsafe(self._set_mode(mode, delay_s), self._loop).result(10)

    def connections(self) -> int:
        return len(self._links)

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # ---- the loop thread ---------------------------------------------------------------------

    async def _start(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _set_mode(self, mode: str, delay_s: float) -> None:
        self.mode, self.delay_s = mode, (delay_s if mode in ("delay", "delay_down") else 0.0)
        if mode == "blackhole":
            self._flowing.clear()
        else:
            self._flowing.set()
        if mode == "cut":
            for link in list(self._links):
                link.close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.close()
        self._flowing.set()
        # Every connection's tasks end with the loop (none left pending when it stops).
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "cut":
            _abort(writer)
            return
        # Blackholed: hold the connection, connect upstream only once the link heals.
        await self._flowing.wait()
        if self.mode == "cut":
            _abort(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _abort(writer)  # the server is down: the client sees a refused link
            return
        link = _Link(self, writer, up_writer)
        self._links.add(link)
        await asyncio.gather(link.pump(reader, up_writer), link.pump(up_reader, writer, downstream=True),
                             return_exceptions=True)
        link.close()
        self._links.discard(link)


class _Link:
    """One client connection and its upstream twin."""

    def __init__(self, proxy: FaultProxy, client: asyncio.StreamWriter, server: asyncio.StreamWriter):
        self.proxy = proxy
        self.writers = (client, server)
        self.closed = False

    async def pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, downstream: bool = False) -> None:
        # Reads and forwards run apart so a delayed chunk does not hold up reading the next
        # (each chunk keeps its own due time; the queue keeps the order).
        queue: asyncio.Queue = asyncio.Queue()

        async def forward() -> None:
            while True:
                due, data = await queue.get()
                if data is None:
                    return
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.proxy._flowing.wait()
                if self.closed:
                    return
                dst.write(data)
                await dst.drain()

        forwarder = asyncio.create_task(forward())
        try:
            while not self.closed:
                data = await src.read(CHUNK)
                if not data:
                    break
                delay = self.proxy.delay_s if downstream or self.proxy.mode != "delay_down" else 0.0
                queue.put_nowait((time.monotonic() + delay, data))
            queue.put_nowait((0.0, None))
            await forwarder
        finally:
            forwarder.cancel()
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for w in self.writers:
            _abort(w)


def _abort(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    if not transport.is_closing():
        transport.abort()  # RST, not a polite FIN: the far side sees the link die


class ProxyGroup:
    """One client's proxies to every server of an ensemble: its connect string and faults."""

    def __init__(self, upstreams: list[tuple[str, int]]):
        self.proxies = [FaultProxy(u).start() for u in upstreams]

    @property
    def connect_string(self) -> str:
        return ",".join(f"{p.host}:{p.port}" for p in self.proxies)

    def set_mode(self, mode: str, delay_s: float = 0.0) -> None:
        for p in self.proxies:
            p.set_mode(mode, delay_s)

    def close(self) -> None:
        for p in self.proxies:
            p.close()
