"""Split a byte stream into size-prefixed Kafka frames. Pure: bytes in, frames out.

    reader = FrameReader()
    for chunk in chunks_from_socket:
        for frame in reader.feed(chunk):   # each frame includes its 4-byte size prefix
            header, body = protocol.decode_request(frame)

A size prefix that is negative or above `max_frame_size` raises DecodeError as soon as its four
bytes have arrived, before any of the body is buffered; the reader then stays failed (the
stream cannot be resynchronised) and the connection should be closed.
"""

from __future__ import annotations

from struct import Struct

from .exceptions import DecodeError

# Kafka brokers refuse requests above socket.request.max.bytes, 100 MiB by default; it is also
# far above what the largest response here needs (a 100,000-partition reassignment listing is
# about 3 MiB), and small enough that a hostile prefix cannot make us buffer gigabytes.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = Struct(">i")


class FrameReader:
    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if not isinstance(max_frame_size, int) or max_frame_size < 0:
            raise ValueError(f"max_frame_size must be a non-negative integer, got {max_frame_size!r}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()  # bytes of the current, incomplete frame (prefix included)
        self._need = -1  # body size of the current frame once its prefix is known, else -1
        self._failed: DecodeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for the frame in progress."""
        return len(self._buf)

    def _check(self, size: int) -> None:
        if size < 0 or size > self.max_frame_size:
            what = "negative" if size < 0 else f"larger than the {self.max_frame_size}-byte limit"
            self._failed = DecodeError(f"frame size prefix {size} is {what}")
            self._buf.clear()
            raise self._failed

    def feed(self, data) -> list[bytes]:
        """Take bytes in any chunking; return the frames they complete, in order."""
        if self._failed is not None:
            raise DecodeError(f"frame reader failed earlier: {self._failed}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, got {type(data).__name__}")
        mv = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
        n = len(mv)
        i = 0
        frames: list[bytes] = []
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
