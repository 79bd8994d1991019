"""asyncio around protocol's sans-IO connection: the one loop that serves Kafka frames.

    await serve_frames(reader, writer, respond, FrameConnection.server())
    async for frame in read_frames(reader, FrameConnection.client()): ...   # a client's answers
    frame = await read_frame(reader, conn)     # just one, nothing read past it

reads what arrives, splits it into frames (protocol.connection checks each size prefix against
its limits before the body is buffered), and writes ``await respond(frame)`` for each, in
order. A FrameError, or a ``respond`` raising one of ``closing``, ends the loop (the caller
closes the socket); a peer that goes away ends it too. protocol/ stays pure; this package holds
the I/O.
"""

from __future__ import annotations

import asyncio
import inspect
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

from protocol.connection import FrameConnection

# Bytes asked of the socket per read: large enough that a 100 MiB frame is not thousands of
# wake-ups, small enough that an idle connection holds little.
READ_CHUNK = 256 * 1024


async def serve_frames(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    respond: Callable[[bytes], bytes | Awaitable[bytes]],
    conn: FrameConnection,
) -> None:
    """Answer each frame in arrival order until the peer leaves or a limit is broken (raised:
    protocol.wire_limits.FrameError) or ``respond`` raises."""
    async for frame in read_frames(reader, conn):
        answer = respond(frame)
        if inspect.isawaitable(answer):
            answer = await answer
        writer.write(answer)
        await writer.drain()


async def read_frames(reader: asyncio.StreamReader, conn: FrameConnection) -> AsyncIterator[bytes]:
    """The frames arriving on ``reader``, each with its size prefix, until the peer closes;
    raises the FrameError of a bad size prefix after the frames before it."""
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            return
        for frame in conn.receive(data):
            yield frame
        if conn.error is not None:
            raise conn.error


_SIZE = struct.Struct(">i")


async def read_frame(reader: asyncio.StreamReader, conn: FrameConnection) -> bytes:
    """One frame, reading no byte past it (a client that asks one thing at a time); the
    FrameError of a bad size prefix before its body is read, IncompleteReadError on EOF."""
    head = await reader.readexactly(4)
    frames = conn.receive(head)
    if conn.error is not None:
        raise conn.error
    if frames:  # an empty frame
        return frames[0]
    (frame,) = conn.receive(await reader.readexactly(_SIZE.unpack(head)[0]))
    return frame
