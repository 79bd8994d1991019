"""How the controller talks to brokers: ``BrokerTransport.request(broker, key, version, body)``.

:class:`TcpTransport` keeps one connection per broker (pipelined: many requests in flight,
answers matched by correlation id), opened on first use from the broker's registered
endpoint and re-opened after a failure. ``sim.inprocess.InProcessTransport`` has the same
method for deterministic tests.

    transport = TcpTransport(lambda b: ("127.0.0.1", 9092 + b))
    body = await transport.request(1, 4, 4, leader_and_isr_body)   # LeaderAndIsr v4
    await transport.close()

Failures raise ``ConnectionError`` (refused, reset, closed mid-request), ``TimeoutError``
is left to the caller's ``asyncio.timeout``, and a garbled answer raises ``protocol.DecodeError`` and
closes that connection (the stream can no longer be trusted).
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import protocol
from controller.core.shared_body import request_frame
from protocol.connection import FrameConnection
from protocol.exceptions import DecodeError
from protocol_aio import read_frames

CLIENT_ID = "reassignd-controller"
CONNECT_TIMEOUT_S = 5.0
_CORRELATION = struct.Struct(">i")


@runtime_checkable
class BrokerTransport(Protocol):
    async def request(self, broker_id: int, api_key: int, api_version: int, body: dict) -> dict: ...

    async def close(self) -> None: ...


class _Connection:
    def __init__(self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.broker_id = broker_id
        self.reader = reader
        self.writer = writer
        self.pending: dict[int, tuple[int, int, asyncio.Future]] = {}
        self.closed = False
        self.task = asyncio.create_task(self._read_loop(), name=f"broker-{broker_id}-reader")

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionResetError(f"broker {self.broker_id} closed the connection")
        try:
            # Size prefixes are checked against protocol.wire_limits before the bytes are kept.
            async for frame in read_frames(self.reader, FrameConnection.client()):
                (correlation_id,) = _CORRELATION.unpack_from(frame, 4)
                entry = self.pending.pop(correlation_id, None)
                if entry is None:
                    raise DecodeError(f"broker {self.broker_id} answered unknown correlation id {correlation_id}")
                api_key, api_version, future = entry
                try:
                    _, body = protocol.decode_response(api_key, api_version, frame)
                except DecodeError as e:
                    if not future.done():
                        future.set_exception(e)
                    raise
                if not future.done():
                    future.set_result(body)
        except (asyncio.IncompleteReadError, OSError) as e:
            error = ConnectionResetError(f"broker {self.broker_id}: connection lost ({e!r})")
        except DecodeError as e:
            error = e
        except asyncio.CancelledError:
            error = ConnectionResetError(f"broker {self.broker_id}: connection closed")
            raise
        finally:
            self._fail_all(error)

    def _fail_all(self, error: BaseException) -> None:
        self.closed = True
        pending, self.pending = self.pending, {}
        for _, _, future in pending.values():
            if not future.done():
                future.set_exception(error if isinstance(error, Exception) else ConnectionResetError(str(error)))
        self.writer.close()

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


class TcpTransport:
    """One pipelined TCP connection per broker; ``endpoint(broker_id) -> (host, port) | None``."""

    def __init__(self, endpoint: Callable[[int], tuple[str, int] | None], *, client_id: str = CLIENT_ID):
        self.endpoint = endpoint
        self.client_id = client_id
        self._connections: dict[int, _Connection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._correlation = itertools.count(1)

    async def _connection(self, broker_id: int) -> _Connection:
        lock = self._connecting.setdefault(broker_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(broker_id)
            if conn is not None and not conn.closed:
                return conn
            where = self.endpoint(broker_id)
            if where is None:
                raise ConnectionRefusedError(f"broker {broker_id} is not registered")
            host, port = where
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    reader, writer = await asyncio.open_connection(host, port)
            except TimeoutError:
                raise ConnectionRefusedError(f"broker {broker_id} at {host}:{port}: connect timed out") from None
            conn = _Connection(broker_id, reader, writer)
            self._connections[broker_id] = conn
            return conn

    # request() takes ``encoded=``: the body's bytes, encoded once for many brokers (a
    # BrokerCommand's ``encoded``, controller.core.shared_body); ``body`` is then not encoded again.
    takes_encoded = True

    async def request(
        self, broker_id: int, api_key: int, api_version: int, body: dict, *, encoded: bytes | None = None
    ) -> dict:
        conn = await self._connection(broker_id)
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        if encoded is None:
            frame = protocol.encode_request(api_key, api_version, correlation_id, self.client_id, body)
        else:
            frame = request_frame(api_key, api_version, correlation_id, self.client_id, encoded)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        conn.pending[correlation_id] = (api_key, api_version, future)
        try:
            conn.writer.write(frame)
            await conn.writer.drain()
        except OSError as e:
            conn.pending.pop(correlation_id, None)
            await conn.close()
            raise ConnectionResetError(f"broker {broker_id}: send failed ({e!r})") from None
        # A caller's timeout cancels the future but leaves the entry: the late answer is then
        # read and discarded instead of desynchronising the stream.
        return await future

    async def disconnect(self, broker_id: int) -> None:
        conn = self._connections.pop(broker_id, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        conns, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
