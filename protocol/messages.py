"""Whole frames: size prefix + header + body, built from and parsed into plain dicts.

Header versions follow Kafka: a request uses header v2 when its API version is flexible, else
v1; a response uses header v1 when flexible, else v0 - except ApiVersions responses, which always
use v0. Frames given to decode_* include the 4-byte size prefix, which must match.
"""

from __future__ import annotations

import gc
import struct

from .check import find_problem
from .codegen import Compiled
from .exceptions import DecodeError, EncodeError, UnsupportedVersionError
from .registry import REGISTRY, REQUEST_HEADER, RESPONSE_HEADER

_SIZE = struct.Struct(">i")
_REQUEST_START = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_CLIENT_ID_LENGTH = struct.Struct(">h")
_CORRELATION = struct.Struct(">i")  # a response header's first field, in every version

# Any of these escaping a generated decoder means the bytes were malformed; they become
# DecodeError. (UnicodeDecodeError is a ValueError.)
_DECODE_FAILURES = (struct.error, IndexError, ValueError, TypeError, KeyError, OverflowError, RecursionError, MemoryError)
# And from a generated encoder, a body the wire cannot carry.
_ENCODE_FAILURES = (struct.error, TypeError, ValueError, AttributeError, KeyError, OverflowError, IndexError)


# Decoding builds a tree of fresh dicts and lists without reference cycles, so the cyclic
# garbage collector's passes over it while it grows are pure overhead (reference counting frees
# it). Frames at least this large are decoded with the collector paused; small ones are not
# worth the two calls.
GC_PAUSE_MIN_BYTES = 64 * 1024


def _as_bytes(frame) -> bytes:
    if type(frame) is bytes:
        return frame
    if isinstance(frame, (bytearray, memoryview)):
        return bytes(frame)
    raise DecodeError(f"a frame must be bytes, got {type(frame).__name__}")


def _translate(codec: Compiled, e: Exception) -> DecodeError:
    """The one error type for malformed bytes, labelled with the message and version."""
    label = f"{codec.spec.name} v{codec.version}"
    if isinstance(e, DecodeError):
        return e if str(e).startswith(codec.spec.name) else DecodeError(f"{label}: {e}")
    if isinstance(e, (IndexError, struct.error)):
        why = "truncated (more bytes expected)"
    elif isinstance(e, UnicodeDecodeError):
        why = f"invalid UTF-8 in a string ({e.reason})"
    else:
        why = f"malformed ({type(e).__name__}: {e})"
    return DecodeError(f"{label}: {why}")


def _decode_now(header: Compiled | None, codec: Compiled, buf: bytes, pos: int, strict: bool = True) -> tuple[dict | None, dict, int]:
    """(header, body, bytes left over after the body); with `strict`, left-over bytes are a DecodeError."""
    try:
        if header is not None:
            try:
                head, pos = header.decode(buf, pos)
            except (DecodeError, *_DECODE_FAILURES) as e:
                raise _translate(header, e) from None
        else:
            head = None
        body, pos = codec.decode(buf, pos)
    except DecodeError:
        raise
    except _DECODE_FAILURES as e:
        raise _translate(codec, e) from None
    if strict and pos != len(buf):
        raise DecodeError(f"{codec.spec.name} v{codec.version}: {len(buf) - pos} bytes left over after the body")
    return head, body, len(buf) - pos


def _decode(header: Compiled | None, codec: Compiled, buf: bytes, pos: int, strict: bool = True) -> tuple[dict | None, dict, int]:
    if len(buf) >= GC_PAUSE_MIN_BYTES and gc.isenabled():
        gc.disable()
        try:
            return _decode_now(header, codec, buf, pos, strict)
        finally:
            gc.enable()
    return _decode_now(header, codec, buf, pos, strict)


def run_decode(codec: Compiled, buf: bytes, pos: int) -> tuple[dict, int]:
    """Decode with the codec at pos, translating any failure into DecodeError."""
    try:
        return codec.decode(buf, pos)
    except (DecodeError, *_DECODE_FAILURES) as e:
        raise _translate(codec, e) from None


def run_encode(codec: Compiled, body: object, w) -> None:
    try:
        codec.encode(body, w)
    except EncodeError:
        raise
    except _ENCODE_FAILURES as e:
        raise _encode_error(codec, body, e) from e


def _encode_error(codec: Compiled, body: object, e: Exception) -> EncodeError:
    try:
        problem = find_problem(codec.spec, codec.version, body)
    except Exception:  # the checker must never hide the original failure
        problem = None
    detail = problem or f"cannot encode ({type(e).__name__}: {e})"
    return EncodeError(f"{codec.spec.name} v{codec.version}: {detail}")


def _check_frame(buf: bytes) -> None:
    if len(buf) < 4:
        raise DecodeError(f"frame of {len(buf)} bytes has no size prefix")
    (size,) = _SIZE.unpack_from(buf, 0)
    if size != len(buf) - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame carries {len(buf) - 4}")


def _peek_client_id(buf: bytes) -> str | None:
    """Best effort, for error reports: the client id of a request we cannot decode further."""
    try:
        (n,) = _CLIENT_ID_LENGTH.unpack_from(buf, 12)
        if 0 <= n <= len(buf) - 14:
            return buf[14:14 + n].decode()
    except (struct.error, UnicodeDecodeError):
        pass
    return None


# -- requests -----------------------------------------------------------------------------------

# (api_key, version) -> (header codec, body codec), filled on first use.
_REQUEST_CODECS: dict[tuple[int, int], tuple[Compiled, Compiled]] = {}
_RESPONSE_CODECS: dict[tuple[int, int], tuple[Compiled, Compiled]] = {}


def _request_codecs(api_key: int, api_version: int) -> tuple[Compiled, Compiled]:
    pair = _REQUEST_CODECS.get((api_key, api_version))
    if pair is None:
        header = REGISTRY.header_codec(REQUEST_HEADER, REGISTRY.request_header_version(api_key, api_version))
        pair = _REQUEST_CODECS[(api_key, api_version)] = (header, REGISTRY.codec(api_key, api_version, "request"))
    return pair


def _response_codecs(api_key: int, api_version: int) -> tuple[Compiled, Compiled]:
    pair = _RESPONSE_CODECS.get((api_key, api_version))
    if pair is None:
        codec = REGISTRY.codec(api_key, api_version, "response")
        header = REGISTRY.header_codec(RESPONSE_HEADER, REGISTRY.response_header_version(api_key, api_version))
        pair = _RESPONSE_CODECS[(api_key, api_version)] = (header, codec)
    return pair


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """A size-prefixed request frame."""
    pair = _REQUEST_CODECS.get((api_key, api_version))
    if pair is None:
        REGISTRY.codec_for_encode(api_key, api_version, "request")  # EncodeError if unknown
        pair = _request_codecs(api_key, api_version)
    header, codec = pair
    out: list[bytes] = []
    w = out.append
    run_encode(header, {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }, w)
    run_encode(codec, body, w)
    data = b"".join(out)
    return _SIZE.pack(len(data)) + data


def encode_request_header(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    """The request header alone (v2 for flexible versions, with its empty tagged fields; else v1):
    what goes between the size prefix and a body encoded elsewhere (see `request_frame`)."""
    pair = _REQUEST_CODECS.get((api_key, api_version))
    if pair is None:
        REGISTRY.codec_for_encode(api_key, api_version, "request")  # EncodeError if unknown
        pair = _request_codecs(api_key, api_version)
    out: list[bytes] = []
    run_encode(pair[0], {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }, out.append)
    return b"".join(out)


def request_frame(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: bytes) -> bytes:
    """A size-prefixed request frame around a body already encoded (`encode_body`)."""
    header = encode_request_header(api_key, api_version, correlation_id, client_id)
    return _SIZE.pack(len(header) + len(body)) + header + body


def size_prefixed(payload: bytes) -> bytes:
    """`payload` with its 4-byte size prefix: a frame without a Kafka header (SASL tokens after
    SaslHandshake v0)."""
    return _SIZE.pack(len(payload)) + payload


def decode_request(frame) -> tuple[dict, dict]:
    """(header, body) of a size-prefixed request frame.

    Bytes left over after the body are ignored, as Kafka's brokers ignore them (librdkafka
    2.x sends some, docs/DESIGN.md section 5); `parse_request` also says how many there were.
    Raises UnsupportedVersionError (carrying api_key, api_version, correlation_id, client_id)
    when no spec covers the API key and version, DecodeError for anything else wrong.
    """
    header, body, _ = parse_request(frame)
    return header, body


def parse_request(frame) -> tuple[dict, dict, int]:
    """(header, body, left_over) of a size-prefixed request frame: decode_request plus the
    number of bytes after the body that were ignored (for a server's counters and logs)."""
    buf = frame if type(frame) is bytes else _as_bytes(frame)
    if len(buf) < 12:
        _check_frame(buf)
        raise DecodeError(f"request frame of {len(buf)} bytes is too short for a request header")
    size, api_key, api_version, correlation_id = _REQUEST_START.unpack_from(buf, 0)
    if size != len(buf) - 4:
        raise DecodeError(f"size prefix says {size} bytes but the frame carries {len(buf) - 4}")
    pair = _REQUEST_CODECS.get((api_key, api_version))
    if pair is None:
        if not REGISTRY.supports(api_key, api_version):
            spec = REGISTRY.requests.get(api_key)
            what = f"{spec.name} v{api_version} is not supported (valid: {spec.valid})" if spec else f"unknown api key {api_key}"
            raise UnsupportedVersionError(what, api_key, api_version, correlation_id, _peek_client_id(buf))
        pair = _request_codecs(api_key, api_version)
    return _decode(pair[0], pair[1], buf, 4, strict=False)


# -- responses ----------------------------------------------------------------------------------


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> bytes:
    """A size-prefixed response frame."""
    pair = _RESPONSE_CODECS.get((api_key, api_version))
    if pair is None:
        REGISTRY.codec_for_encode(api_key, api_version, "response")  # EncodeError if unknown
        pair = _response_codecs(api_key, api_version)
    header, codec = pair
    out: list[bytes] = []
    w = out.append
    run_encode(header, {"correlation_id": correlation_id}, w)
    run_encode(codec, body, w)
    data = b"".join(out)
    return _SIZE.pack(len(data)) + data


def encode_response_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    """The response header alone (v1 for flexible versions, else v0; v0 for ApiVersions)."""
    pair = _RESPONSE_CODECS.get((api_key, api_version))
    if pair is None:
        REGISTRY.codec_for_encode(api_key, api_version, "response")  # EncodeError if unknown
        pair = _response_codecs(api_key, api_version)
    out: list[bytes] = []
    run_encode(pair[0], {"correlation_id": correlation_id}, out.append)
    return b"".join(out)


def response_frame(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    """A size-prefixed response frame around a body already encoded (`encode_body`)."""
    header = encode_response_header(api_key, api_version, correlation_id)
    return _SIZE.pack(len(header) + len(body)) + header + body


def response_correlation_id(frame) -> int:
    """The correlation id of a size-prefixed response frame, the body left undecoded: the first
    header field in every response header version, so a client can match (or count) answers
    without decoding them."""
    buf = frame if type(frame) is bytes else _as_bytes(frame)
    _check_frame(buf)
    if len(buf) < 8:
        raise DecodeError(f"response frame of {len(buf)} bytes is too short for a correlation id")
    return _CORRELATION.unpack_from(buf, 4)[0]


def decode_response(api_key: int, api_version: int, frame) -> tuple[dict, dict]:
    """(header, body) of a size-prefixed response frame to a request of (api_key, api_version)."""
    buf = frame if type(frame) is bytes else _as_bytes(frame)
    _check_frame(buf)
    pair = _RESPONSE_CODECS.get((api_key, api_version)) or _response_codecs(api_key, api_version)
    # Strict: a response with bytes this codec does not read means the specs disagree with the
    # server, which a client must hear about rather than act on half a message.
    head, body, _ = _decode(pair[0], pair[1], buf, 4)
    return head, body


# -- bodies alone -------------------------------------------------------------------------------


def encode_body(api_key: int, api_version: int, kind: str, body: dict) -> bytes:
    """The body alone (no size prefix, no header); kind is "request" or "response"."""
    codec = REGISTRY.codec_for_encode(api_key, api_version, kind)
    out: list[bytes] = []
    run_encode(codec, body, out.append)
    return b"".join(out)


def decode_body(api_key: int, api_version: int, kind: str, data) -> dict:
    """Inverse of encode_body: every byte of `data` must belong to the body."""
    if kind not in ("request", "response"):
        raise ValueError(f"kind must be 'request' or 'response', got {kind!r}")
    buf = _as_bytes(data)
    return _decode(None, REGISTRY.codec(api_key, api_version, kind), buf, 0)[1]  # strict: a body alone has no slack


def encoded_size(api_key: int, api_version: int, kind: str, body: dict) -> int:
    """Bytes the body takes on the wire (without size prefix and header)."""
    return len(encode_body(api_key, api_version, kind, body))


# -- what is supported --------------------------------------------------------------------------


def supported_apis() -> dict[int, tuple[int, int]]:
    """api key -> (min, max) request version, for APIs with both a request and a response spec."""
    return {
        key: (spec.valid.lo, spec.valid.hi)
        for key, spec in sorted(REGISTRY.requests.items())
        if key in REGISTRY.responses
    }


def api_name(api_key: int) -> str:
    """The API's name without Request/Response: api_name(3) == "Metadata"; KeyError if unknown."""
    spec = REGISTRY.requests.get(api_key) or REGISTRY.responses.get(api_key)
    if spec is None:
        raise KeyError(f"no spec for api key {api_key}")
    return spec.name.removesuffix("Request").removesuffix("Response")


def api_keys() -> dict[str, int]:
    """API name -> key, for every API with a spec (protocol.API_KEYS holds it)."""
    keys = {}
    for table in (REGISTRY.responses, REGISTRY.requests):
        for key, spec in table.items():
            keys[spec.name.removesuffix("Request").removesuffix("Response")] = key
    return dict(sorted(keys.items(), key=lambda kv: kv[1]))
