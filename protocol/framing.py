"""Split a byte stream into size-prefixed Kafka frames. Pure: bytes in, frames out.

    reader = FrameReader()
    for chunk in chunks_from_socket:
        for frame in reader.feed(chunk):   # each frame includes its 4-byte size prefix
            header, body = protocol.decode_request(frame)

A size prefix below `min_frame_size` (negative, by default) or above `max_frame_size` raises
`wire_limits.FrameError` (a DecodeError naming the limit broken) as soon as its four bytes have
arrived, before any of the body is buffered; the reader then stays failed (the stream cannot be
resynchronised) and the connection should be closed. The limits and their reasons are in
`protocol.wire_limits`.
"""

from __future__ import annotations

from struct import Struct

from .exceptions import DecodeError
from .wire_limits import MAX_FRAME, FrameError, Limit, check_size

DEFAULT_MAX_FRAME_SIZE = MAX_FRAME.value
_NOT_NEGATIVE = Limit("minimum frame", 0, "a size prefix is a byte count")

_SIZE = Struct(">i")


class FrameReader:
    def __init__(self, max_frame_size: int | Limit = MAX_FRAME, min_frame_size: int | Limit = _NOT_NEGATIVE) -> None:
        high = max_frame_size if isinstance(max_frame_size, Limit) else Limit("maximum frame", max_frame_size, "set by the caller")
        low = min_frame_size if isinstance(min_frame_size, Limit) else Limit("minimum frame", min_frame_size, "set by the caller")
        for limit in (high, low):
            if not isinstance(limit.value, int) or isinstance(limit.value, bool) or limit.value < 0:
                raise ValueError(f"frame size limits must be non-negative integers, got {limit.value!r}")
        if low.value > high.value:
            raise ValueError(f"minimum frame size {low.value} is above the maximum {high.value}")
        self.max_frame_size, self.min_frame_size = high.value, low.value
        self._low, self._high = low, high
        self._buf = bytearray()  # bytes of the current, incomplete frame (prefix included)
        self._need = -1  # body size of the current frame once its prefix is known, else -1
        self._failed: DecodeError | None = None

    @property
    def limits(self) -> tuple[Limit, Limit]:
        """(minimum, maximum) for the size prefixes still to come."""
        return self._low, self._high

    @limits.setter
    def limits(self, value: tuple[Limit, Limit]) -> None:
        low, high = value
        if low.value > high.value:
            raise ValueError(f"minimum frame size {low.value} is above the maximum {high.value}")
        self._low, self._high = low, high
        self.min_frame_size, self.max_frame_size = low.value, high.value

    @property
    def buffered(self) -> int:
        """Bytes held for the frame in progress."""
        return len(self._buf)

    @property
    def frame_in_progress(self) -> int | None:
        """The body size of the frame in progress once its prefix has been read, else None."""
        return self._need if self._need >= 0 else None

    def _check(self, size: int) -> None:
        try:
            check_size(size, self._low, self._high)
        except FrameError as e:
            self._failed = e
            self._buf.clear()
            raise

    def feed(self, data, out: list[bytes] | None = None) -> list[bytes]:
        """Take bytes in any chunking; return the frames they complete, in order. With ``out``,
        the frames are appended to it as they complete, so a caller still has the ones before
        a bad size prefix that raised."""
        if self._failed is not None:
            raise DecodeError(f"frame reader failed earlier: {self._failed}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, got {type(data).__name__}")
        mv = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
        n = len(mv)
        i = 0
        frames: list[bytes] = [] if out is None else out
        buf = self._buf
        while i < n:
            if not buf:
                # Nothing pending: take whole frames straight from the input.
                if n - i < 4:
                    buf += mv[i:]
                    break
                (size,) = _SIZE.unpack_from(mv, i)
                self._check(size)
                end = i + 4 + size
                if end <= n:
                    frames.append(bytes(mv[i:end]))
                    i = end
                    continue
                self._need = size
                buf += mv[i:]
                break
            if self._need < 0:
                # Complete a prefix split across chunks, then check it before taking more.
                take = min(4 - len(buf), n - i)
                buf += mv[i:i + take]
                i += take
                if len(buf) < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, 0)
                self._check(size)
                self._need = size
            take = min(4 + self._need - len(buf), n - i)
            buf += mv[i:i + take]
            i += take
            if len(buf) == 4 + self._need:
                frames.append(bytes(buf))
                buf.clear()
                self._need = -1
        return frames
