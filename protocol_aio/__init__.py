"""asyncio around protocol's sans-IO connection: the I/O half of the one wire layer.

    await serve_frames(reader, writer, respond, FrameConnection.server())   # server.py: every server
    conn = await ClientConnection.open(host, port, connect_timeout_s=5, client_id="me")  # client.py
    body = await conn.request(ApiKey.API_VERSIONS, 0, {})   # matched by correlation id
    async for frame in read_frames(reader, FrameConnection.client()): ...   # reading.py
    frame = await read_frame(reader, conn)     # just one, nothing read past it

protocol/ stays pure (bytes in, frames out, limits checked); this package owns the sockets.
"""

from .client import MAX_IN_FLIGHT, ClientConnection
from .reading import READ_CHUNK, read_frame, read_frames
from .server import IDLE, IDLE_IN_FRAME, LAST_ANSWER, PEER_CLOSED, Gate, Pipelining, serve_frames

__all__ = [
    "IDLE", "IDLE_IN_FRAME", "LAST_ANSWER", "MAX_IN_FLIGHT", "PEER_CLOSED", "READ_CHUNK",
    "ClientConnection", "Gate", "Pipelining", "read_frame", "read_frames", "serve_frames",
]
