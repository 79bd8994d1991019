"""asyncio around protocol's sans-IO connection: the I/O half of the one wire layer.

    await serve_frames(reader, writer, respond, FrameConnection.server())   # server.py: every server
    async for frame in read_frames(reader, FrameConnection.client()): ...   # reading.py
    frame = await read_frame(reader, conn)     # just one, nothing read past it

protocol/ stays pure (bytes in, frames out, limits checked); this package owns the sockets.
"""

from .reading import READ_CHUNK, read_frame, read_frames
from .server import IDLE, IDLE_IN_FRAME, LAST_ANSWER, PEER_CLOSED, Gate, Pipelining, serve_frames

__all__ = [
    "IDLE", "IDLE_IN_FRAME", "LAST_ANSWER", "PEER_CLOSED", "READ_CHUNK",
    "Gate", "Pipelining", "read_frame", "read_frames", "serve_frames",
]
