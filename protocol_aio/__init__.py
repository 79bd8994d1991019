"""asyncio around protocol's sans-IO connection: the one loop that serves Kafka frames.

    await serve_frames(reader, writer, respond, FrameConnection.server())

reads what arrives, splits it into frames (protocol.connection checks each size prefix against
its limits before the body is buffered), and writes ``await respond(frame)`` for each, in
order. A FrameError, or a ``respond`` raising one of ``closing``, ends the loop (the caller
closes the socket); a peer that goes away ends it too. protocol/ stays pure; this package holds
the I/O.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

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
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            return
        for frame in conn.receive(data):
            answer = respond(frame)
            if inspect.isawaitable(answer):
                answer = await answer
            writer.write(answer)
            await writer.drain()
        if conn.error is not None:  # after answering the frames before the bad prefix
            raise conn.error
