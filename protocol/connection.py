"""One Kafka connection without I/O: bytes in, whole frames out, checked against the limits of
protocol.wire_limits (h11's style: the caller owns the socket).

    conn = FrameConnection.server()            # requests: [MIN_REQUEST_FRAME, MAX_FRAME]
    for frame in conn.receive(chunk):          # FrameError (a DecodeError) names the limit broken
        ...
    conn.limits = (MIN_REQUEST_FRAME, MAX_PRE_AUTH_FRAME)   # applies from the next size prefix

A bad size prefix does not lose the frames before it: ``receive`` returns them and keeps the
FrameError in ``error`` (raised by the next ``receive``) so a server answers the requests that
came before it, then closes. The stream cannot be resynchronised after it.
"""

from __future__ import annotations

from .framing import FrameReader
from .wire_limits import MAX_FRAME, MIN_REQUEST_FRAME, MIN_RESPONSE_FRAME, FrameError, Limit


class FrameConnection:
    def __init__(self, low: Limit, high: Limit) -> None:
        self._reader = FrameReader(high, low)
        self.error: FrameError | None = None  # the limit broken, once one is

    @classmethod
    def server(cls, high: Limit = MAX_FRAME) -> FrameConnection:
        """The side that receives requests."""
        return cls(MIN_REQUEST_FRAME, high)

    @classmethod
    def client(cls, high: Limit = MAX_FRAME) -> FrameConnection:
        """The side that receives responses."""
        return cls(MIN_RESPONSE_FRAME, high)

    @property
    def limits(self) -> tuple[Limit, Limit]:
        return self._reader.limits

    @limits.setter
    def limits(self, value: tuple[Limit, Limit]) -> None:
        self._reader.limits = value

    @property
    def buffered(self) -> int:
        """Bytes held for the frame in progress."""
        return self._reader.buffered

    @property
    def frame_in_progress(self) -> int | None:
        """The body size of the frame in progress once its size prefix is in, else None (a
        server waits for room for it before reading on)."""
        return self._reader.frame_in_progress

    def receive(self, data) -> list[bytes]:
        """The frames ``data`` completes (each with its size prefix), in order, up to a bad size
        prefix (then kept in ``error``)."""
        if self.error is not None:
            raise self.error
        frames: list[bytes] = []
        try:
            self._reader.feed(data, frames)
        except FrameError as e:
            self.error = e
        return frames
