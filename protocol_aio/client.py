"""The one asyncio client connection to a Kafka node: requests out, each answer matched to its
request by correlation id.

    conn = await ClientConnection.open("127.0.0.1", 9092, client_id="reassignd-controller")
    body = await conn.request(ApiKey.API_VERSIONS, 0, {})          # decoded answer
    frame = await conn.exchange(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, encoded_body)  # not decoded
    await conn.close()

Requests may be pipelined: up to ``max_in_flight`` are written and not yet answered (more wait
for a slot, in the order they were asked). One reader takes the answers through protocol's
sans-IO connection (size prefixes checked against protocol.wire_limits before a body is read)
and hands each to the request with its correlation id. What fails the connection - the peer
leaving, a size past a limit (FrameError), an answer to no request asked, an answer that does not
decode - fails every request in flight with that error and closes the socket; the connection is
then ``closed`` and a new one must be opened.

A request's ``timeout_s`` raises TimeoutError to its caller; its entry stays, so a late answer
is read and discarded instead of desynchronising the stream.
"""

from __future__ import annotations

import asyncio
import itertools

import protocol
from protocol.connection import FrameConnection
from protocol.exceptions import DecodeError

from .reading import read_frames

# A request's correlation id is a non-negative int32 (Kafka's clients wrap the same way).
_CORRELATION_MASK = 0x7FFFFFFF
# Requests written and not yet answered on one connection unless the caller says otherwise:
# enough to pipeline a controller's bursts of control requests to one broker; a peer that stops
# answering holds no more than this many (the rest wait for a slot, in order).
MAX_IN_FLIGHT = 100


class ClientConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, client_id: str | None,
                 name: str = "peer", max_in_flight: int = MAX_IN_FLIGHT, timeout_s: float | None = None):
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.reader, self.writer = reader, writer
        self.client_id = client_id
        self.name = name  # how errors name the peer ("broker 3")
        self.timeout_s = timeout_s  # each request's, unless it gives its own; None: no timeout
        self._slots = asyncio.Semaphore(max_in_flight)
        self._pending: dict[int, asyncio.Future] = {}
        self._correlation = itertools.count(1)
        self.error: BaseException | None = None  # why the connection failed, once it has
        self._reading = asyncio.create_task(self._read(), name=f"{name}-answers")

    @classmethod
    async def open(cls, host: str, port: int, *, connect_timeout_s: float, ssl=None, **kwargs) -> ClientConnection:
        """Connect (ConnectionRefusedError naming the peer when it takes over
        ``connect_timeout_s``); ``kwargs`` as for the constructor."""
        try:
            async with asyncio.timeout(connect_timeout_s):
                reader, writer = await asyncio.open_connection(host, port, ssl=ssl)
        except TimeoutError:
            raise ConnectionRefusedError(f"{kwargs.get('name', 'peer')} at {host}:{port}: connect timed out") from None
        except OSError:
            raise  # refused, unreachable, TLS refused (SSLCertVerificationError is a ValueError too)
        except ValueError as e:  # UnicodeError included: a host no resolver takes (a label over 63 bytes, a NUL)
            # The address came from a peer's registration or answer: as unreachable as a refused one.
            raise ConnectionRefusedError(f"{kwargs.get('name', 'peer')} at {host[:80]!r}:{port}: not a host name: {e}") from None
        return cls(reader, writer, **kwargs)

    @property
    def closed(self) -> bool:
        return self.error is not None

    @property
    def in_flight(self) -> int:
        """Requests written whose answers have not been read (timed-out ones included)."""
        return len(self._pending)

    async def request(self, api_key: int, api_version: int, body: dict | None = None, *,
                      encoded: bytes | None = None, timeout_s: float | None = None) -> dict:
        """The decoded answer to one request (``body``, or its bytes already encoded as
        ``encoded``). An answer that does not decode fails the connection (DecodeError)."""
        frame = await self._send(api_key, api_version, body, encoded, timeout_s)
        try:
            return protocol.decode_response(api_key, api_version, frame)[1]
        except DecodeError as e:
            self._fail(e)  # the stream can no longer be trusted
            raise

    async def exchange(self, api_key: int, api_version: int, encoded: bytes, *, timeout_s: float | None = None) -> bytes:
        """The answer's frame (size prefix included, left undecoded) to a request whose body's
        bytes are ``encoded``."""
        return await self._send(api_key, api_version, None, encoded, timeout_s)

    async def _send(self, api_key: int, api_version: int, body: dict | None, encoded: bytes | None,
                    timeout_s: float | None) -> bytes:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        if timeout_s is None:
            return await self._answer(api_key, api_version, body, encoded)
        async with asyncio.timeout(timeout_s):
            return await self._answer(api_key, api_version, body, encoded)

    async def _answer(self, api_key: int, api_version: int, body: dict | None, encoded: bytes | None) -> bytes:
        if self.error is not None:
            raise self._raised(self.error)
        async with self._slots:
            if self.error is not None:
                raise self._raised(self.error)
            correlation_id = next(self._correlation) & _CORRELATION_MASK
            if encoded is None:
                frame = protocol.encode_request(api_key, api_version, correlation_id, self.client_id, body)
            else:
                frame = protocol.request_frame(api_key, api_version, correlation_id, self.client_id, encoded)
            answer = asyncio.get_running_loop().create_future()
            self._pending[correlation_id] = answer
            try:
                self.writer.write(frame)
                await self.writer.drain()
            except OSError as e:
                self._fail(ConnectionResetError(f"{self.name}: send failed ({e!r})"))
                raise self._raised(self.error) from None
            # A cancelled wait (a timeout) cancels the future but leaves its entry: the late
            # answer is then read and dropped instead of desynchronising the stream.
            return await answer

    async def close(self) -> None:
        self._reading.cancel()
        await asyncio.gather(self._reading, return_exceptions=True)
        self._fail(ConnectionResetError(f"{self.name}: connection closed"))
        try:
            await self.writer.wait_closed()
        except OSError:
            pass

    async def _read(self) -> None:
        try:
            async for frame in read_frames(self.reader, FrameConnection.client()):
                answer = self._pending.pop(protocol.response_correlation_id(frame), None)
                if answer is None:
                    raise DecodeError(
                        f"{self.name} answered correlation id {protocol.response_correlation_id(frame)}, which no request has")
                if not answer.done():
                    answer.set_result(frame)
            self._fail(ConnectionResetError(f"{self.name} closed the connection"))
        except (asyncio.IncompleteReadError, OSError) as e:
            self._fail(ConnectionResetError(f"{self.name}: connection lost ({e!r})"))
        except DecodeError as e:  # a size past a limit (FrameError), an answer nobody asked for
            self._fail(e)

    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        pending, self._pending = self._pending, {}
        for answer in pending.values():
            if not answer.done():
                answer.set_exception(self._raised(error))
                answer.exception()  # retrieved: a timed-out request's entry has no one awaiting it
        self.writer.close()

    @staticmethod
    def _raised(error: BaseException) -> BaseException:
        """A fresh exception of the failure's kind for each request (one instance raised from
        many tasks would chain their tracebacks)."""
        if isinstance(error, ConnectionError):
            return type(error)(*error.args)
        return error
