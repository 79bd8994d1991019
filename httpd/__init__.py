"""The HTTP plumbing the operations port (controller/shell/ops.py) and the planner service's REST
API (planner_service/http_server.py) share, on aiohttp's server: the limits as named settings, a
site started and stopped on the running event loop. It imports neither of its users.

    site = Site(handler, "127.0.0.1", 0, Limits(max_body_bytes=0), ssl_context=None)
    host, port = await site.start()
    ...
    await site.close()

``handler`` takes every request (any method, any path: the users route themselves, so their
routes, statuses and error bodies stay theirs) and returns an ``aiohttp.web.StreamResponse``.
A request aiohttp cannot parse (a request line or header beyond the limits, too many headers, a
malformed line) is answered by aiohttp itself: 400 with a short text body, and the connection
is closed. A request that parses but never reaches ``handler`` (``OPTIONS *``: no path to route)
gets aiohttp's 404, closed like every answer when ``keep_alive`` is off. Past
``max_connections`` open connections, a new one is closed as soon as it is accepted, so one
client cannot take every file descriptor of the process; a user that reads a body bounds the
wait with :func:`read_body`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

log = logging.getLogger("reassignd.http")

# A stopping server lets answers being written finish for this long, then drops the connections
# (aiohttp's default, 60 s, would hold a SIGTERM that long behind an idle keep-alive client).
SHUTDOWN_GRACE_S = 1.0


@dataclass(frozen=True)
class Limits:
    """What one request may be. Each user names its own (ops.py's probes are tiny; the API's
    clients are tools)."""

    max_line_bytes: int = 8190  # the request line (path and query string included)
    max_field_bytes: int = 8190  # one header line
    max_headers: int = 100
    # The most request.read() accepts (aiohttp answers 413 beyond it); 0 for a user that never
    # reads a body (aiohttp's 0 is "no limit", so such a user must not call read()).
    max_body_bytes: int = 1 << 20
    # A connection that sends no request for this long is closed: before its first request as
    # after an answer (aiohttp's keep-alive timer starts when the connection is accepted).
    idle_timeout_s: float = 60.0
    keep_alive: bool = True  # False: every answer closes its connection
    # Open connections at once; the next ones are closed when accepted (each is a file
    # descriptor of the process, which other listeners of the process share).
    max_connections: int = 1024


class _QuietLog(logging.LoggerAdapter):
    """aiohttp logs each request it cannot parse with a traceback at ERROR: a scanner or a port
    probe is no error of ours, so those go to DEBUG (the client got its 400)."""

    def exception(self, msg, *args, **kwargs):
        kwargs.setdefault("exc_info", True)
        self.debug(msg, *args, **kwargs)

    def error(self, msg, *args, **kwargs):
        self.debug(msg, *args, **kwargs)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Site:
    def __init__(self, handler: Handler, host: str, port: int, limits: Limits, *,
                 ssl_context: ssl.SSLContext | None = None):
        self.handler = handler
        self.host = host
        self.port = port
        self.limits = limits
        self.ssl_context = ssl_context
        self._runner: web.AppRunner | None = None

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> tuple[str, int]:
        """Listen on the running loop; the port (0 picks one) as bound."""
        lim = self.limits
        app = web.Application(client_max_size=lim.max_body_bytes, middlewares=[self._closing], handler_args={
            "max_line_size": lim.max_line_bytes, "max_field_size": lim.max_field_bytes,
            "max_headers": lim.max_headers, "keepalive_timeout": lim.idle_timeout_s,
            "logger": _QuietLog(logging.getLogger("reassignd.http.malformed"), {})})
        app.router.add_route("*", "/{tail:.*}", self._serve)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE_S)
        await runner.setup()
        _cap_connections(runner.server, lim.max_connections)
        try:
            site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context, reuse_address=True)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.host, self.port = runner.addresses[0][:2]
        return self.host, self.port

    async def close(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        return await self.handler(request)

    @web.middleware
    async def _closing(self, request: web.Request, handler) -> web.StreamResponse:
        """Every answer, aiohttp's own 404/405 for what no route takes included, closes its
        connection when ``keep_alive`` is off."""
        try:
            response = await handler(request)
        except web.HTTPException as e:
            response = web.Response(status=e.status, reason=e.reason, text=f"{e.status}: {e.reason}")
        if not self.limits.keep_alive:
            response.force_close()
        return response


def _cap_connections(server, limit: int) -> None:
    made = server.connection_made

    def connection_made(handler, transport) -> None:
        made(handler, transport)
        if len(server.connections) > limit:
            log.warning("more than %d connections open: closing a new one", limit)
            transport.close()

    server.connection_made = connection_made


async def read_body(request: web.Request, timeout_s: float) -> bytes:
    """The request's body, or TimeoutError when it has not all come within ``timeout_s`` (a
    client that declares a length and stops sending would hold its connection for ever)."""
    return await asyncio.wait_for(request.read(), timeout_s)


def peer_certificate(request: web.Request) -> dict | None:
    """The client certificate the TLS handshake verified (ssl's getpeercert() form), or None."""
    transport = request.transport
    if transport is None:
        return None
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    return ssl_object.getpeercert() or None
