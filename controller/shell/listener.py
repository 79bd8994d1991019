"""The controller's admin listener: Kafka's wire protocol on the ``--listen`` socket.

The server part only: framing, decoding, pipelining, limits, encoding. What a request means is
up to the :class:`RequestHandler` passed in (``controller.shell.admin.handler.AdminHandler`` serves
the API table).

    listener = AdminListener("127.0.0.1", 9190, handler, limits=ListenerLimits.from_config(config))
    host, port = await listener.start()          # bound now (port 0 picks one)
    ...
    await listener.close()

One connection, step by step:

 1. Accept. Beyond ``max_connections`` open connections, or ``max_connections_per_address``
    from one address (counted in ``addresses``, which the listeners of one instance share), the
    new one is closed at once (the client sees EOF and may retry elsewhere); the others are
    untouched. This is before anything else, TLS included (Kafka's acceptor counts the same
    way), so a flood of bare TCP connections holds no more than the caps. With ``ssl``, the
    TLS handshake next, closed unless done within ``handshake_timeout_s``; with a
    ``session_factory``, the connection gets its security session (``SESSION``; see
    controller.shell.security.session): until it is authenticated, requests are read one at
    a time and bounded by its smaller limit, and an answer it marks ``closing`` is the last.
 2. The connection runs on protocol_aio's server loop (``serve_frames``), the one the simulated
    brokers run. Before each size prefix the loop asks this listener's gate for the limits
    (``_frame_limits``: ``[MIN_REQUEST_BYTES, max_request_bytes]`` from protocol.wire_limits, the
    session's smaller bound before authentication, SASL's bare tokens from 0); a size is
    checked before the body is read. Each frame starts its own task (decode, handle, encode);
    at most ``max_pipelined`` requests and ``max_pipelined_bytes`` request bytes are read and
    not yet answered (a request bigger than that is read once nothing is in flight), so a
    client that sends faster than it reads meets TCP back-pressure and a connection's
    read-ahead memory stays bounded.
 3. Answers are written in request order, each when ITS task is done: requests are handled
    concurrently but answered in request order (Kafka's guarantee per connection).
 4. No whole request read and nothing in flight for ``idle_timeout_s``: the connection is closed.
 5. What closes only this connection (after the answers to earlier requests are written):
    a bad size, bytes that do not decode (bytes left over after a request's body are not
    that: they are ignored and counted in ``stats``, as Kafka ignores them), an API key or
    version the handler does not serve
    (as a Kafka broker does), a response that cannot be encoded even as an error response.
    A handler's own failure is not one of them: the handler turns it into that API's error
    response (UNKNOWN_SERVER_ERROR) and the connection carries on.

An ApiVersions request of a version the codec does not know gets Kafka's answer: a v0
response with UNSUPPORTED_VERSION and ApiVersions' own range (KIP-511; protocol.api_versions).
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Protocol

import protocol
from protocol import ApiKey, wire_limits
from protocol.api_versions import error_answer
from protocol.connection import FrameConnection
from protocol.wire_limits import Limit
from protocol.errors import ErrorCode
from controller.shell.security.quotas import AddressCounts
from protocol.exceptions import DecodeError, EncodeError, UnsupportedVersionError
from protocol_aio import IDLE, LAST_ANSWER, PEER_CLOSED, Pipelining, serve_frames

log = logging.getLogger("reassignd.listener")

# The client address ("host:port") of the connection a request came on, for handlers that
# record who asked (controller.shell.admin_audit); set per connection, inherited by its tasks.
CLIENT: ContextVar[str | None] = ContextVar("client", default=None)
# The connection's security session (controller.shell.security.session.Session: principal,
# authentication state) when the listener has a session factory; None otherwise.
SESSION: ContextVar[object | None] = ContextVar("session", default=None)

# Frame limits (protocol.wire_limits has their reasons): a size is checked before a byte of the
# body is read.
MAX_REQUEST_BYTES = wire_limits.MAX_FRAME.value
MIN_REQUEST_BYTES = wire_limits.MIN_REQUEST_FRAME.value
# Defaults when no configuration is given (see controller.core.config for their reasons).
MAX_CONNECTIONS = 512
IDLE_TIMEOUT_S = 600.0
MAX_PIPELINED = 64
MAX_PIPELINED_BYTES = 100 * 1024 * 1024
# A TLS handshake takes milliseconds; one not done in this long is a stalled or hostile client
# (controller.shell.security.config's ssl.handshake.timeout.ms sets it; asyncio's default is 60 s).
HANDSHAKE_TIMEOUT_S = 5.0


class RequestHandler(Protocol):
    def api_versions(self) -> list[dict]:
        """``[{"api_key", "min_version", "max_version"}]`` this handler serves."""

    async def handle(self, header: dict, body: dict) -> dict | EncodedBody | None:
        """The response body for one decoded request (a dict, or the bytes of one already
        encoded); None closes the connection."""

    # Optional: ``error_response(header, body, code, message) -> dict | None``, the whole
    # response of a request that failed as a whole (used when a handler's answer cannot be
    # encoded); without it such a failure closes the connection.


class WrappedHandler:
    """A RequestHandler around another (metrics, audit): serves what the inner one serves and
    passes on every attribute it does not define itself; subclasses override ``handle``."""

    def __init__(self, inner):
        self.inner = inner
        self.ctx = getattr(inner, "ctx", None)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def api_versions(self):
        return self.inner.api_versions()


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_connections: int = MAX_CONNECTIONS
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_pipelined: int = MAX_PIPELINED
    max_pipelined_bytes: int = MAX_PIPELINED_BYTES
    # Connections from one client address (Kafka's max.connections.per.ip); None: no cap.
    max_connections_per_address: int | None = None
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S

    @classmethod
    def from_config(cls, config) -> ListenerLimits:
        return cls(
            max_request_bytes=config.listener_max_request_bytes,
            max_connections=config.listener_max_connections,
            idle_timeout_s=float(config.listener_idle_timeout_s),
            max_pipelined=config.listener_max_pipelined,
            max_pipelined_bytes=config.listener_max_pipelined_bytes,
        )


class EncodedBody(bytes):
    """A response body a handler has already encoded (``protocol.encode_body`` for the
    request's API and version): the listener only adds the frame and the response header.
    Lets a handler reuse the bytes of an answer that has not changed since it was built."""


def frame_encoded(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    """The response frame around an EncodedBody (protocol's header writer)."""
    return protocol.response_frame(api_key, api_version, correlation_id, body)


class UnservedRequest(Exception):
    """A request for an API the handler does not serve: the connection is closed."""


@dataclass
class Stats:
    accepted: int = 0
    refused: int = 0  # over max_connections or the per-address cap, closed at accept
    handshake_failed: int = 0  # TLS handshakes that failed or did not finish in time
    idle_closed: int = 0
    requests: int = 0
    # Requests with bytes after their body (ignored, as Kafka ignores them; librdkafka 2.x sends
    # 3 with every all-topics Metadata request) and how many such bytes in all.
    left_over_requests: int = 0
    left_over_bytes: int = 0


class AdminListener:
    def __init__(
        self,
        host: str,
        port: int,
        handler: RequestHandler,
        *,
        limits: ListenerLimits | None = None,
        max_request_bytes: int | None = None,
        ssl=None,
        session_factory=None,
        addresses: AddressCounts | None = None,
    ):
        self.host = host
        self.port = port
        self.handler = handler
        limits = limits or ListenerLimits()
        if max_request_bytes is not None:
            limits = replace(limits, max_request_bytes=max_request_bytes)
        self.limits = limits
        # The table's maximum unless configured otherwise (listener.max.request.bytes).
        self._max_frame = wire_limits.MAX_FRAME if limits.max_request_bytes == wire_limits.MAX_FRAME.value else Limit(
            "maximum frame", limits.max_request_bytes, "this listener's configured max request bytes")
        self.stats = Stats()
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.ssl = ssl  # an ssl.SSLContext: TLS on every connection
        # session_factory(peer, peercert) -> Session: per-connection security (SESSION); a
        # session's ``authenticated`` bounds what is read, ``closing`` ends the connection
        # after the answer just written.
        self.session_factory = session_factory
        # Connections per client address: shared by the listeners of one instance (one count,
        # as max.connections.per.ip promises), else this listener's own.
        self.addresses = addresses if addresses is not None else AddressCounts(limits.max_connections_per_address)
        self._open = 0  # accepted and not closed yet, TLS handshakes included
        self._pipelining = Pipelining(max_requests=limits.max_pipelined, max_bytes=limits.max_pipelined_bytes,
                                      idle_timeout_s=limits.idle_timeout_s)

    @property
    def max_request_bytes(self) -> int:
        return self.limits.max_request_bytes

    @property
    def connections(self) -> int:
        return self._open

    async def start(self) -> tuple[str, int]:
        """Bind and listen; returns the bound (host, port)."""
        # No ssl here: asyncio would run the handshake before _serve sees the connection, so the
        # caps could only be checked after it. _serve counts first, then starts TLS itself.
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True, backlog=max(100, self.limits.max_connections),
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.host, self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    # ---- one connection ----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        CLIENT.set(f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer))
        # Nothing is awaited before TLS starts: a ClientHello that arrived must still be unread.
        if self._open >= self.limits.max_connections:
            self.stats.refused += 1
            log.warning("refusing admin connection from %s: %d connections open (the limit)", peer, self._open)
            writer.close()
            return
        address = peer[0] if isinstance(peer, tuple) else str(peer)
        if not self.addresses.admit(address):
            self.stats.refused += 1
            log.warning("refusing admin connection from %s: %d connections from that address (the limit)",
                        peer, self.addresses.held(address))
            writer.close()
            return
        self._open += 1
        self.stats.accepted += 1
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            if self.ssl is not None and not await self._start_tls(writer, peer):
                return
            await self._converse(reader, writer, peer)
        except asyncio.CancelledError:
            # close() ends the connection: the task's end. (Python 3.11's stream server reports a
            # cancelled connection task as an unhandled error; 3.12 no longer does.)
            pass
        finally:
            self._tasks.discard(task)
            self._open -= 1
            self.addresses.release(address)
            writer.close()

    async def _start_tls(self, writer: asyncio.StreamWriter, peer) -> bool:
        """The server side of the TLS handshake, bounded by ``handshake_timeout_s``."""
        try:
            await writer.start_tls(self.ssl, ssl_handshake_timeout=self.limits.handshake_timeout_s)
        except (OSError, EOFError, TimeoutError) as e:  # ssl.SSLError and ConnectionError are OSErrors
            self.stats.handshake_failed += 1
            log.info("TLS handshake with %s failed: %s", peer, e or type(e).__name__)
            return False
        return True

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer) -> None:
        """Steps 2 to 5 on protocol_aio's server loop, the simulated brokers' own."""
        session = None
        if self.session_factory is not None:
            session = self.session_factory(peer, writer.get_extra_info("peercert"))
        SESSION.set(session)  # the loop's reader and every request task inherit it
        self._writers.add(writer)
        try:
            ending = await serve_frames(reader, writer, self.respond, FrameConnection.server(self._max_frame),
                                        pipelining=self._pipelining, gate=_SessionGate(self, session))
        except (DecodeError, EncodeError, UnservedRequest) as e:
            log.info("closing admin connection from %s: %s", peer, e)
        except ConnectionError:
            pass
        except Exception:  # one bad request must never take the listener down
            log.exception("closing admin connection from %s after an unexpected error", peer)
        else:
            if ending == IDLE:
                self.stats.idle_closed += 1
                log.info("closing idle admin connection from %s", peer)
            elif ending == LAST_ANSWER:
                log.info("closing admin connection from %s after a failed authentication", peer)
            elif ending != PEER_CLOSED:
                log.info("closing admin connection from %s: %s", peer, ending)
        finally:
            self._writers.discard(writer)

    def _frame_limits(self, session) -> tuple[Limit, Limit]:
        """(minimum, maximum) frame for the next request on a connection with ``session``."""
        high = self._max_frame
        if session is not None:  # smaller before authentication
            bound = session.request_bytes_limit(high.value)
            if bound == wire_limits.MAX_PRE_AUTH_FRAME.value:
                high = wire_limits.MAX_PRE_AUTH_FRAME
            elif bound != high.value:
                high = Limit("maximum frame for this session", bound, "the security session's bound")
            if session.raw_tokens:  # SaslHandshake v0: a bare SASL token, any size
                return wire_limits.MIN_SASL_TOKEN_FRAME, high
        return wire_limits.MIN_REQUEST_FRAME, high

    async def respond(self, frame: bytes) -> bytes:
        """The response frame for one request frame; raises DecodeError, EncodeError or
        UnservedRequest when the connection must be closed instead."""
        self.stats.requests += 1
        session = SESSION.get()
        if session is not None and session.raw_tokens:
            # After SaslHandshake v0 the client sends bare SASL tokens, without Kafka headers.
            answer = await self.handler.raw_token(frame[4:])
            if answer is None:
                raise UnservedRequest("SASL authentication failed")
            return protocol.size_prefixed(answer)
        try:
            header, body, left_over = protocol.parse_request(frame)
        except UnsupportedVersionError as e:
            if e.api_key == ApiKey.API_VERSIONS and e.correlation_id is not None:
                answer = error_answer(ErrorCode.UNSUPPORTED_VERSION, self.handler.api_versions())
                return protocol.encode_response(ApiKey.API_VERSIONS, 0, e.correlation_id, answer)
            raise
        key, version, correlation = header["request_api_key"], header["request_api_version"], header["correlation_id"]
        if left_over:
            self.stats.left_over_requests += 1
            self.stats.left_over_bytes += left_over
            log.debug("API %d v%d from %r: %d bytes after the body ignored", key, version, header["client_id"], left_over)
        response = await self.handler.handle(header, body)
        if response is None:
            raise UnservedRequest(f"API {key} v{version} is not served here")
        if isinstance(response, EncodedBody):
            return frame_encoded(key, version, correlation, response)
        try:
            return protocol.encode_response(key, version, correlation, response)
        except EncodeError as e:
            fallback = getattr(self.handler, "error_response", None)
            if fallback is None:
                raise
            log.error("API %d v%d: the answer cannot be encoded (%s): sending an error response", key, version, e)
            error = fallback(header, body, ErrorCode.UNKNOWN_SERVER_ERROR, "the controller built a bad response")
            if error is None:
                raise
            return protocol.encode_response(key, version, correlation, error)


class _SessionGate:
    """protocol_aio's gate for one connection: the listener's limits, and its security session's
    (None: a plain listener, pipelined from the first request)."""

    __slots__ = ("listener", "session")

    def __init__(self, listener: AdminListener, session) -> None:
        self.listener, self.session = listener, session

    def limits(self) -> tuple[Limit, Limit]:
        return self.listener._frame_limits(self.session)

    def one_at_a_time(self) -> bool:
        # Unauthenticated: one request at a time, so the next is read (and bounded) knowing
        # how this one ended.
        return self.session is not None and not self.session.authenticated

    def last_answer(self) -> bool:
        return self.session is not None and self.session.closing
