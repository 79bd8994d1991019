"""The controller's admin listener: Kafka's wire protocol on the ``--listen`` socket.

The server part only: framing, decoding, one request at a time per connection, encoding.
What a request means is up to the :class:`RequestHandler` passed in - THE hook for the admin
API (Metadata, AlterPartitionReassignments, the KIP-179/236/240 keys...). Until that handler
exists, :class:`ApiVersionsHandler` answers ApiVersions and nothing else (other requests close
the connection, as a Kafka broker does for an API it does not serve).

    listener = AdminListener("127.0.0.1", 9190, ApiVersionsHandler())
    host, port = await listener.start()          # bound now (port 0 picks one)
    ...
    await listener.close()

Bad input (a size prefix over the limit or under a header's size, bytes that do not decode)
closes that connection only; the listener and the other connections carry on. An ApiVersions
request of a version the codec does not know gets Kafka's answer: a v0 response with
UNSUPPORTED_VERSION and the supported ranges (KIP-511).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Protocol

import protocol
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError, EncodeError, UnsupportedVersionError

log = logging.getLogger("reassignd.listener")

API_VERSIONS = 18
# Kafka's socket.request.max.bytes default: refused before a byte of the body is read.
MAX_REQUEST_BYTES = 100 * 1024 * 1024
# The smallest request: a v1 header with a null client id (api key, version, correlation id).
MIN_REQUEST_BYTES = 10


class RequestHandler(Protocol):
    def api_versions(self) -> list[dict]:
        """``[{"api_key", "min_version", "max_version"}]`` this handler serves."""

    async def handle(self, header: dict, body: dict) -> dict | None:
        """The response body for one decoded request; None closes the connection."""


class UnservedRequest(Exception):
    """A request for an API the handler does not serve: the connection is closed."""


class ApiVersionsHandler:
    """Answers ApiVersions (v0 up to the codec's newest) and nothing else."""

    def api_versions(self) -> list[dict]:
        low, high = protocol.supported_apis()[API_VERSIONS]
        return [{"api_key": API_VERSIONS, "min_version": low, "max_version": high}]

    async def handle(self, header: dict, body: dict) -> dict | None:
        if header["request_api_key"] == API_VERSIONS:
            return {"error_code": 0, "api_keys": self.api_versions(), "throttle_time_ms": 0}
        return None


class AdminListener:
    def __init__(self, host: str, port: int, handler: RequestHandler, *, max_request_bytes: int = MAX_REQUEST_BYTES):
        self.host = host
        self.port = port
        self.handler = handler
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> tuple[str, int]:
        """Bind and listen; returns the bound (host, port)."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
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

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if not MIN_REQUEST_BYTES <= size <= self.max_request_bytes:
                    raise DecodeError(f"request size {size} outside [{MIN_REQUEST_BYTES}, {self.max_request_bytes}]")
                frame = head + await reader.readexactly(size)
                answer = await self.respond(frame)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (DecodeError, EncodeError, UnservedRequest) as e:
            log.info("closing admin connection from %s: %s", peer, e)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:  # one bad request must never take the listener down
            log.exception("closing admin connection from %s after an unexpected error", peer)
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            writer.close()

    async def respond(self, frame: bytes) -> bytes | None:
        """The response frame for one request frame, or None to close the connection."""
        try:
            header, body = protocol.decode_request(frame)
        except UnsupportedVersionError as e:
            if e.api_key == API_VERSIONS and e.correlation_id is not None:
                answer = {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "api_keys": self.handler.api_versions()}
                return protocol.encode_response(API_VERSIONS, 0, e.correlation_id, answer)
            raise
        response = await self.handler.handle(header, body)
        if response is None:
            raise UnservedRequest(f"API {header['request_api_key']} v{header['request_api_version']} is not served here")
        return protocol.encode_response(
            header["request_api_key"], header["request_api_version"], header["correlation_id"], response
        )
