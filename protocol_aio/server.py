"""The one asyncio server loop for Kafka frames: the admin listener and the simulated brokers run it.

    ending = await serve_frames(reader, writer, respond, FrameConnection.server(),
                                pipelining=Pipelining(max_requests=64, idle_timeout_s=600), gate=gate)

One connection, step by step:

 1. Before each size prefix is taken, ``gate.limits()`` (when there is a gate) sets the frame
    limits it is checked against (protocol.connection; a security session's pre-authentication
    bound and SASL's bare tokens plug in here). A prefix past them ends the loop: FrameError.
 2. Each frame is admitted once there is room: fewer than ``max_requests`` requests read and not
    yet answered, and their bytes plus this one's at most ``max_bytes`` (a bigger frame waits until
    nothing is in flight). Nothing more is read from the socket while there is no room, so a
    client that sends faster than it reads meets TCP back-pressure and the read-ahead stays within
    the bounds plus one read (``READ_CHUNK``). With ``max_requests=1`` (the default) a
    connection is served one request at a time, as a Kafka broker serves it.
 3. ``respond(frame)`` starts at admission; its answers (bytes, or awaitables of them) are
    written in request order whatever order they finish in (Kafka's promise per connection).
    While ``gate.one_at_a_time()`` is true, frames are read exactly, one after the other, and the
    next is not read until this one has been handled, so its size meets the limits that the
    handling set (an unauthenticated SASL connection).
 4. After each answer is written, ``gate.last_answer()`` may end the connection (a failed
    authentication).
 5. No whole frame read and nothing in flight for ``idle_timeout_s``: the loop ends (a partly
    sent frame is not activity, so a trickle of bytes does not keep a connection).

The loop returns why it ended (PEER_CLOSED, IDLE, IDLE_IN_FRAME, LAST_ANSWER); a broken limit
(FrameError) or ``respond``'s own exception is raised in its turn, after the answers to the
frames before it are written. The caller closes the socket either way. Requests read but not yet
answered when it ends are cancelled.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from protocol.connection import FrameConnection
from protocol.wire_limits import MAX_FRAME, Limit

from .reading import READ_CHUNK

# Why serve_frames ended (it raises instead for a broken limit or a failed respond).
PEER_CLOSED = "closed by the peer"
IDLE = "idle"
IDLE_IN_FRAME = "idle in the middle of a frame"
LAST_ANSWER = "the gate ended the connection after an answer"


@dataclass(frozen=True, slots=True)
class Pipelining:
    """How far one connection is read ahead of its answers."""

    max_requests: int = 1  # read and not yet answered; 1: one at a time, as a Kafka broker serves
    max_bytes: int = MAX_FRAME.value  # request bytes read and not yet answered
    idle_timeout_s: float | None = None  # None: a connection may stay idle for ever

    def __post_init__(self) -> None:
        if self.max_requests < 1 or self.max_bytes < 1:
            raise ValueError(f"pipelining bounds must be at least 1, got {self.max_requests} requests, {self.max_bytes} bytes")
        if self.idle_timeout_s is not None and self.idle_timeout_s <= 0:
            raise ValueError(f"idle timeout must be positive, got {self.idle_timeout_s}")


class Gate(Protocol):
    """What one connection's policy (its security session) says, asked by the loop as it goes."""

    def limits(self) -> tuple[Limit, Limit]:
        """(minimum, maximum) for the next frame's size prefix."""

    def one_at_a_time(self) -> bool:
        """Whether the next frame must be handled before the one after it is read."""

    def last_answer(self) -> bool:
        """Asked after each answer is written: whether it was the connection's last."""


Respond = Callable[[bytes], "bytes | Awaitable[bytes]"]


class _Ended:
    """Queued after the last admitted request: how reading ended."""

    __slots__ = ("reason", "error")

    def __init__(self, reason: str, error: BaseException | None = None):
        self.reason, self.error = reason, error


class _InFlight:
    """Requests admitted and not yet answered, shared by the reading and the writing side."""

    __slots__ = ("requests", "bytes", "freed", "last_activity")

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self.freed = asyncio.Event()  # set whenever an answer leaves
        self.last_activity = time.monotonic()

    def admit(self, size: int) -> None:
        self.requests += 1
        self.bytes += size
        self.last_activity = time.monotonic()

    def release(self, size: int) -> None:
        self.requests -= 1
        self.bytes -= size
        self.last_activity = time.monotonic()
        self.freed.set()


async def serve_frames(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    respond: Respond,
    conn: FrameConnection,
    *,
    pipelining: Pipelining = Pipelining(),
    gate: Gate | None = None,
) -> str:
    """Serve one connection until the peer leaves, it idles, the gate ends it (returned: why),
    a size breaks a limit or ``respond`` raises (raised, after the earlier answers)."""
    answers: asyncio.Queue = asyncio.Queue()  # admission bounds it
    flight = _InFlight()
    reading = asyncio.create_task(_read(reader, conn, respond, answers, flight, pipelining, gate))
    try:
        return await _write(writer, answers, flight, gate)
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)  # it queues nothing more
        while not answers.empty():  # read but not answered: dropped with the connection
            item = answers.get_nowait()
            if isinstance(item, tuple) and isinstance(item[0], asyncio.Future):
                if item[0].done() and not item[0].cancelled():
                    item[0].exception()  # retrieved: nobody is left to hear of it
                item[0].cancel()


async def _write(writer: asyncio.StreamWriter, answers: asyncio.Queue, flight: _InFlight, gate: Gate | None) -> str:
    while True:
        item = await answers.get()
        if isinstance(item, _Ended):
            if item.error is not None:
                raise item.error
            return item.reason
        answer, size = item
        try:
            if not isinstance(answer, (bytes, bytearray)):
                answer = await answer
        finally:
            flight.release(size)
        writer.write(answer)
        await writer.drain()
        if gate is not None and gate.last_answer():
            return LAST_ANSWER


async def _read(reader, conn: FrameConnection, respond: Respond, answers: asyncio.Queue, flight: _InFlight,
                pipelining: Pipelining, gate: Gate | None) -> None:
    """Frames in, each started at admission and queued in arrival order; ends by queueing _Ended."""
    idle = pipelining.idle_timeout_s
    ready: deque[bytes] = deque()  # read, not yet admitted
    try:
        while True:
            if not ready:
                if gate is not None:
                    conn.limits = gate.limits()  # checked from the next size prefix on
                # Read on only with room for what is coming (the frame in progress, if known).
                await _room(flight, pipelining, conn.frame_in_progress or 1)
                if gate is not None and gate.one_at_a_time():
                    # Exactly the rest of this frame and nothing past it: the next prefix is
                    # checked against the limits this frame's handling sets.
                    need = _still_needed(conn)
                    data = await _idle_bounded(lambda: reader.readexactly(need), flight, idle, conn)
                else:
                    data = await _idle_bounded(lambda: reader.read(READ_CHUNK), flight, idle, conn)
                    if not data:
                        answers.put_nowait(_Ended(PEER_CLOSED))
                        return
                ready.extend(conn.receive(data))
                if not ready and conn.error is not None:
                    raise conn.error
                continue
            frame = ready.popleft()
            size = len(frame) - 4
            await _room(flight, pipelining, size)
            flight.admit(size)
            try:
                answer = respond(frame)
            except Exception as e:  # noqa: BLE001 - raised in its turn, after earlier answers
                failed = asyncio.get_running_loop().create_future()
                failed.set_exception(e)
                answers.put_nowait((failed, size))
                return
            if inspect.isawaitable(answer):
                answer = asyncio.ensure_future(answer)
                if gate is not None and gate.one_at_a_time():
                    answers.put_nowait((answer, size))
                    await asyncio.wait({answer})  # handled (its session updated) before reading on
                    continue
            answers.put_nowait((answer, size))
            if not ready and conn.error is not None:
                raise conn.error
    except _IdleEnd as e:
        answers.put_nowait(_Ended(e.reason))
    except (asyncio.IncompleteReadError, ConnectionError):
        answers.put_nowait(_Ended(PEER_CLOSED))
    except Exception as e:  # noqa: BLE001 - a FrameError: raised after the answers owed
        answers.put_nowait(_Ended("", e))


def _still_needed(conn: FrameConnection) -> int:
    """Bytes that complete the size prefix, or the frame, in progress."""
    size = conn.frame_in_progress
    return 4 - conn.buffered if size is None else 4 + size - conn.buffered


class _IdleEnd(Exception):
    def __init__(self, reason: str):
        self.reason = reason


async def _room(flight: _InFlight, pipelining: Pipelining, size: int) -> None:
    """Wait until a request of ``size`` bytes may be admitted."""
    while flight.requests and (
        flight.requests >= pipelining.max_requests or flight.bytes + size > pipelining.max_bytes
    ):
        flight.freed.clear()
        await flight.freed.wait()


async def _idle_bounded(read: Callable[[], Awaitable], flight: _InFlight, idle: float | None,
                        conn: FrameConnection):
    """``read()``'s result, or _IdleEnd once no whole frame was read and nothing was in flight for
    ``idle`` seconds. A StreamReader read cancelled by the timeout consumes nothing, so it is
    simply asked again."""
    if idle is None:
        return await read()
    while True:
        wait = flight.last_activity + idle - time.monotonic()
        if flight.requests:
            wait = max(wait, idle)  # busy is not idle: look again later
        if wait <= 0:
            raise _IdleEnd(IDLE_IN_FRAME if conn.buffered else IDLE)
        deadline = asyncio.timeout(wait)
        try:
            async with deadline:
                return await read()
        except TimeoutError:
            if not deadline.expired():  # the socket's own timeout, not ours
                raise
