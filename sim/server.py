"""One simulated broker's TCP listener: Kafka framing and codec in front of a BrokerCore.

Requests on a connection are answered in order. Bytes left over after a request's body are
ignored and counted (``left_over_requests``), as Kafka ignores them. Bytes that do not decode, a frame over the
size limit, or an API the broker does not serve close that connection only; the listener and
every other connection carry on. An ApiVersions request of a version the codec does not know
gets Kafka's answer: a v0 response with UNSUPPORTED_VERSION and ApiVersions' own range.

With ``ssl`` (an ssl.SSLContext, :func:`sim.tls.server_context`) the listener is Kafka's SSL
listener: every connection is TLS from its first byte. A handshake that fails (a plain client,
an untrusted or missing client certificate) or does not finish within HANDSHAKE_TIMEOUT_S
closes that connection only; asyncio runs the handshake before the connection is served.

    server = BrokerServer(core.handle, lambda: core.handle(18, 0, {})["api_keys"])
    port = await server.start("127.0.0.1", 0)
    ...
    await server.close()
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl as ssl_module
from collections.abc import Callable

import protocol
from protocol import ApiKey, wire_limits
from protocol.api_versions import error_answer
from protocol.connection import FrameConnection
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError, EncodeError, UnsupportedVersionError
from protocol_aio import serve_frames
from sim.core import UnsupportedRequest

log = logging.getLogger(__name__)

# Frame limits (protocol.wire_limits has their reasons; protocol.connection checks them).
MAX_FRAME_SIZE = wire_limits.MAX_FRAME.value
# A TLS handshake on the same network takes milliseconds. One not done in 5 s is a peer that
# does not speak TLS and waits for an answer (a plain Kafka client sent its request and reads),
# or one that stalls: asyncio's default would hold that socket for 60 s.
HANDSHAKE_TIMEOUT_S = 5.0


class BrokerServer:
    def __init__(
        self,
        handle: Callable[[int, int, dict], dict],
        api_keys: Callable[[], list[dict]],
        *,
        max_frame_size: int = MAX_FRAME_SIZE,
        name: str = "broker",
        ssl: ssl_module.SSLContext | None = None,
    ):
        self._handle = handle
        self._api_keys = api_keys
        self._max_frame = wire_limits.MAX_FRAME if max_frame_size == wire_limits.MAX_FRAME.value else wire_limits.Limit(
            "maximum frame", max_frame_size, "set for this broker")
        self._name = name
        self._ssl = ssl  # None: PLAINTEXT
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()
        self.port: int | None = None
        # Requests with bytes after their body, ignored as Kafka ignores them (librdkafka 2.x
        # sends 3 with every all-topics Metadata request), and those bytes in all.
        self.left_over_requests = 0
        self.left_over_bytes = 0

    async def start(self, host: str, port: int) -> int:
        tls = {"ssl": self._ssl, "ssl_handshake_timeout": HANDSHAKE_TIMEOUT_S} if self._ssl is not None else {}
        self._server = await asyncio.start_server(self._on_connection, host, port, reuse_address=True, **tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        """Stop listening and drop every connection (a crashed or stopped broker)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._connections):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self._connections.add(writer)
        try:
            await serve_frames(reader, writer, self.respond, FrameConnection.server(self._max_frame))
        except (DecodeError, UnsupportedRequest, EncodeError) as exc:
            log.warning("%s: closing connection: %s", self._name, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # a bug in one request must not take the broker down
            log.exception("%s: closing connection after an unexpected error", self._name)
        finally:
            self._connections.discard(writer)
            self._tasks.discard(task)
            writer.close()

    def respond(self, frame: bytes):
        """The response frame for one request frame (an awaitable of it when the handler's answer
        is one); raises on anything that ends the connection."""
        try:
            header, body, left_over = protocol.parse_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                answer = error_answer(ErrorCode.UNSUPPORTED_VERSION, self._api_keys())
                return protocol.encode_response(ApiKey.API_VERSIONS, 0, exc.correlation_id, answer)
            raise
        api_key, api_version = header["request_api_key"], header["request_api_version"]
        if left_over:
            self.left_over_requests += 1
            self.left_over_bytes += left_over
            log.debug("%s: API %d v%d: %d bytes after the body ignored", self._name, api_key, api_version, left_over)
        response = self._handle(api_key, api_version, body)
        if inspect.isawaitable(response):
            return self._encoded_later(api_key, api_version, header["correlation_id"], response)
        return protocol.encode_response(api_key, api_version, header["correlation_id"], response)

    @staticmethod
    async def _encoded_later(api_key: int, api_version: int, correlation_id: int, response) -> bytes:
        return protocol.encode_response(api_key, api_version, correlation_id, await response)
