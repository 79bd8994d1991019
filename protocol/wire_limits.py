"""The limits on Kafka frames, in one table, each with its reason beside it.

Every server and client of this project checks a frame's 4-byte size prefix against these
before it reads (or allocates) the rest. A size outside them is not a request or response that
can be answered: the connection is closed (the stream cannot be resynchronised), and
`FrameError` names the limit that was broken.

    from protocol.wire_limits import MAX_FRAME, MIN_REQUEST_FRAME
    if not MIN_REQUEST_FRAME.value <= size <= MAX_FRAME.value: ...
"""

from __future__ import annotations

from dataclasses import dataclass

from .exceptions import DecodeError


@dataclass(frozen=True, slots=True)
class Limit:
    name: str
    value: int  # bytes after the size prefix
    reason: str


MIN_REQUEST_FRAME = Limit(
    "minimum request frame", 10,
    "the smallest request: a v1 header with a null client id (api key 2, api version 2, "
    "correlation id 4, client id length 2 bytes) and an empty body (ApiVersions v0)",
)
MIN_RESPONSE_FRAME = Limit(
    "minimum response frame", 4,
    "the smallest response: a v0 header (the correlation id) and an empty body",
)
MIN_SASL_TOKEN_FRAME = Limit(
    "minimum SASL token frame", 0,
    "after SaslHandshake v0 the client sends bare SASL tokens without a Kafka header; an "
    "empty token is a frame the SASL exchange itself refuses",
)
MAX_FRAME = Limit(
    "maximum frame", 100 * 1024 * 1024,
    "Kafka's socket.request.max.bytes default: a control request for a large cluster fits, and "
    "the largest answer here (a 100,000-partition reassignment listing, about 3 MiB) is far below",
)
MAX_PRE_AUTH_FRAME = Limit(
    "maximum frame before authentication", 512 * 1024,
    "Kafka's SaslServerAuthenticator MAX_RECEIVE_SIZE: a SASL token is small, and a client not "
    "yet authenticated must not make the server buffer 100 MiB",
)

LIMITS = (MIN_REQUEST_FRAME, MIN_RESPONSE_FRAME, MIN_SASL_TOKEN_FRAME, MAX_FRAME, MAX_PRE_AUTH_FRAME)


class FrameError(DecodeError):
    """A size prefix outside a limit: ``limit`` is the one broken, ``size`` the prefix read."""

    def __init__(self, size: int, limit: Limit):
        below = size < limit.value
        super().__init__(
            f"frame size prefix {size} is {'below the' if below else 'above the'} {limit.name} of {limit.value} bytes"
        )
        self.size = size
        self.limit = limit


def check_size(size: int, low: Limit, high: Limit) -> None:
    """FrameError naming the broken limit unless ``low.value <= size <= high.value``."""
    if size < low.value:
        raise FrameError(size, low)
    if size > high.value:
        raise FrameError(size, high)
