"""The operations port: probes and Prometheus over HTTP/1.1, on aiohttp's server (the shared
plumbing and its limits are :mod:`httpd`).

    ops = OpsServer("0.0.0.0", 9191, metrics, ready=daemon.readiness, max_loop_lag_s=1.0)
    host, port = await ops.start()
    ...
    await ops.close()

Routes (GET or HEAD; anything else 404 or 405; one request per connection: every answer says
``Connection: close``):

* ``/healthz``: 200 while the process is responsive: the event loop answered this request and
  its worst lag over the last ``LAG_WINDOW_S`` (how late a ticker that should wake every
  ``LAG_TICK_S`` woke) is below ``max_loop_lag_s``; else 503. An orchestrator restarts a process that fails it.
* ``/readyz``: 200 when ``ready()`` says so (the daemon: connected to ZooKeeper, and either
  active or standing by with a known active controller); else 503 with the reason. Takes the
  instance out of a Service without restarting it.
* ``/metrics``: the process's registry in Prometheus text format.
* ``/progress/history``: JSON, the per-broker bytes remaining over time of the latest
  reassignment run this process sampled while active (controller.shell.copy_progress
  ``ProgressHistory``), ``{"version": 1, "run": null}`` before any; plus ``active``, whether this
  process is the active controller now (a standby's run is the one it saw while it was).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from controller.shell.metrics import CONTENT_TYPE, Metrics
from httpd import Limits, Site

log = logging.getLogger("reassignd.ops")

LAG_TICK_S = 0.25
# /healthz judges the worst lag of this window: a stall between two probes still shows.
LAG_WINDOW_S = 2.0
# Probes and scrapes are tiny GETs: a request line or header beyond these or more headers are
# refused (400/431), a body is never read (no route takes one), and a connection silent this
# long is closed (a probe's whole budget is seconds).
MAX_LINE_BYTES = 4096
MAX_HEADERS = 32
IDLE_TIMEOUT_S = 5.0
# Kubelets and a Prometheus or two: more than this at once is a flood, refused at accept.
MAX_CONNECTIONS = 128
LIMITS = Limits(max_line_bytes=MAX_LINE_BYTES, max_field_bytes=MAX_LINE_BYTES, max_headers=MAX_HEADERS,
                max_body_bytes=0, idle_timeout_s=IDLE_TIMEOUT_S, keep_alive=False,
                max_connections=MAX_CONNECTIONS)
READY_TIMEOUT_S = 3.0


class OpsServer:
    def __init__(
        self,
        host: str,
        port: int,
        metrics: Metrics,
        *,
        ready: Callable[[], Awaitable[tuple[bool, str]]],
        max_loop_lag_s: float = 1.0,
        history=None,
        is_active: Callable[[], bool] = lambda: False,
    ):
        self.host = host
        self.port = port
        self.metrics = metrics
        self.ready = ready
        self.max_loop_lag_s = max_loop_lag_s
        self.history = history  # controller.shell.copy_progress.ProgressHistory, or None
        self.is_active = is_active
        self.lag = 0.0
        self._lags: list[tuple[float, float]] = []  # (when, lag) over the last LAG_WINDOW_S
        self._last_tick = time.monotonic()
        self._site = Site(self._serve, host, port, LIMITS)
        self._ticker: asyncio.Task | None = None

    @property
    def running(self) -> bool:
        return self._site.running

    async def start(self) -> tuple[str, int]:
        _, self.port = await self._site.start()
        self._ticker = asyncio.create_task(self._tick(), name="ops-loop-lag")
        return self.host, self.port

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        await self._site.close()

    async def _tick(self) -> None:
        """Measure the loop's lag: how late a sleep of LAG_TICK_S wakes up."""
        while True:
            began = time.monotonic()
            await asyncio.sleep(LAG_TICK_S)
            now = time.monotonic()
            self.lag = max(0.0, now - began - LAG_TICK_S)
            self._lags = [(t, v) for t, v in self._lags if t > now - LAG_WINDOW_S] + [(now, self.lag)]
            self._last_tick = now
            self.metrics.loop_lag.set(self.lag)

    def health(self) -> tuple[bool, str]:
        # A ticker that has not woken for long is lag too (measured only once it wakes).
        now = time.monotonic()
        stalled = now - self._last_tick - LAG_TICK_S
        # 0 at least: a ticker that woke a moment ago is not 'negative lag'.
        lag = max([0.0, stalled, *(v for t, v in self._lags if t > now - LAG_WINDOW_S)])
        if lag > self.max_loop_lag_s:
            return False, f"event loop lag {lag:.3f}s > {self.max_loop_lag_s}s"
        return True, f"ok (event loop lag {lag:.3f}s)"

    async def _serve(self, request: web.Request) -> web.Response:
        try:
            status, ctype, body = await self._route(request.method, request.path)
        except Exception:  # a probe must never take the server down
            log.exception("ops request failed")
            status, ctype, body = "500 Internal Server Error", "text/plain; charset=utf-8", b"internal error\n"
        code, _, reason = status.partition(" ")
        # aiohttp sends no body for HEAD and keeps Content-Length: a HEAD tells the GET's size.
        response = web.Response(status=int(code), reason=reason, body=body)
        response.headers["Content-Type"] = ctype
        return response

    async def _route(self, method: str, path: str) -> tuple[str, str, bytes]:
        text = "text/plain; charset=utf-8"
        routes = ("/healthz", "/readyz", "/metrics") + (("/progress/history",) if self.history is not None else ())
        if path not in routes:
            return "404 Not Found", text, f"not found: {', '.join(routes)}\n".encode()
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", text, b"GET or HEAD\n"
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE, self.metrics.scrape()
        if path == "/progress/history":
            doc = {**self.history.as_json(), "active": self.is_active()}
            return "200 OK", "application/json", json.dumps(doc, separators=(",", ":")).encode()
        if path == "/healthz":
            ok, why = self.health()
        else:
            try:
                async with asyncio.timeout(READY_TIMEOUT_S):
                    ok, why = await self.ready()
            except TimeoutError:
                ok, why = False, "readiness check timed out (ZooKeeper unresponsive)"
        return ("200 OK" if ok else "503 Service Unavailable"), text, (why + "\n").encode()
