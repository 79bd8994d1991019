"""Reading a peer's frames through protocol's sans-IO connection (the client side's loops).

    async for frame in read_frames(reader, FrameConnection.client()): ...   # a peer's answers
    frame = await read_frame(reader, conn)     # just one, nothing read past it
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

from protocol.connection import FrameConnection

# Bytes asked of the socket per read: large enough that a 100 MiB frame is not thousands of
# wake-ups, small enough that an idle connection holds little.
READ_CHUNK = 256 * 1024

_SIZE = struct.Struct(">i")


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
