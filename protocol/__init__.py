"""Kafka wire codec: message specs as data, compiled to fast pure-Python encoders and decoders.

No I/O happens here. Every `protocol/specs/*.json` (Kafka's message-spec shape) is loaded and
checked at import; a bad spec fails the import with the file name. Bodies are plain dicts with
snake_case keys (ThrottleTimeMs -> "throttle_time_ms"), nested structs are dicts, arrays lists.

Usage::

    import protocol

    frame = protocol.encode_request(3, 12, correlation_id=7, client_id="me",
                                    body={"topics": None, "allow_auto_topic_creation": False})
    header, body = protocol.decode_request(frame)     # frame includes its 4-byte size prefix
    assert header["correlation_id"] == 7 and body["topics"] is None

    reply = protocol.encode_response(3, 12, 7, {"brokers": [], "controller_id": 1, "topics": []})
    header, body = protocol.decode_response(3, 12, reply)

Frames
    `encode_request(api_key, api_version, correlation_id, client_id, body) -> bytes` and
    `encode_response(api_key, api_version, correlation_id, body) -> bytes` return whole
    size-prefixed frames. `decode_request(frame) -> (header, body)` and
    `decode_response(api_key, api_version, frame) -> (header, body)` take one (with its prefix,
    as `framing.FrameReader` yields them) and check that the prefix matches;
    `response_correlation_id(frame)` reads only a response's correlation id. Around a body already
    encoded (`encode_body`): `request_frame(api_key, api_version, correlation_id, client_id,
    body_bytes)` and `response_frame(api_key, api_version, correlation_id, body_bytes)`; the
    headers alone: `encode_request_header(...)`, `encode_response_header(...)`;
    `size_prefixed(payload)` frames bytes that carry no Kafka header (SASL tokens). Bytes left over
    after a request body are ignored, as Kafka's brokers ignore them; `parse_request(frame) ->
    (header, body, left_over)` counts them. Responses and bodies alone must be exact. Request headers
    are dicts with request_api_key, request_api_version, correlation_id, client_id; response
    headers with correlation_id. Header versions follow Kafka: request v2 / response v1 for
    flexible API versions, else v1 / v0; ApiVersions responses always use header v0.

Bodies
    `encode_body(api_key, version, "request"|"response", body) -> bytes`,
    `decode_body(api_key, version, kind, data) -> dict` and `encoded_size(...) -> int` work on
    the body alone. On encode a missing key takes the spec default (0, "", False, [], or null
    where the spec says so); a key for a field the version lacks is ignored if the field is
    ignorable or at its default, else EncodeError (as Kafka does). On decode every field of the
    spec is in the dict: fields the version lacks hold their defaults. In flexible versions,
    tagged fields this codec has no spec for are kept as {tag: bytes} under
    "_unknown_tagged_fields" and written back out on encode. uuid fields are `uuid.UUID`,
    bytes fields `bytes`, strings `str` (invalid UTF-8 is a DecodeError).

Errors
    Any bytes either decode or raise `DecodeError` (a ValueError) - never IndexError,
    struct.error, UnicodeDecodeError or MemoryError; lengths and counts are checked against the
    bytes left before anything is allocated. `UnsupportedVersionError(DecodeError)` means no spec
    covers the API key/version; it carries api_key, api_version, correlation_id and client_id
    (None when unreadable) so a server can answer UNSUPPORTED_VERSION (35). Bad bodies raise
    `EncodeError` (a ValueError, naming the field path); unknown api keys or versions given to
    an encoder raise EncodeError too.

What is supported
    `supported_apis() -> {api_key: (min, max)}` (APIs with both a request and a response spec:
    what an ApiVersions response lists), `api_name(key) -> "Metadata"`, `API_KEYS`
    ({"Metadata": 3, ...}) and `ApiKey` (the same as an IntEnum: `ApiKey.METADATA == 3`),
    `request_header_version(key, version)`,
    `response_header_version(key, version)`. Error codes are in `protocol.errors`
    (`ErrorCode.NOT_CONTROLLER == 41`), the frame splitter in `protocol.framing`.

How it is fast: see `protocol.codegen` (each message version is compiled once into
straight-line Python with batched struct calls).
"""

import enum

from .errors import ERRORS, ErrorCode, error_info
from .exceptions import DecodeError, EncodeError, SpecError, UnsupportedVersionError
from .messages import (
    api_keys,
    api_name,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
    encoded_size,
    parse_request,
    request_frame,
    response_correlation_id,
    response_frame,
    size_prefixed,
    supported_apis,
)
from .naming import snake_case
from .registry import REGISTRY

API_KEYS: dict[str, int] = api_keys()

# Every API number by name, generated from the specs (the one list: no module keeps its own
# integers): ApiKey.DESCRIBE_LOG_DIRS == 35, ApiKey.LEADER_AND_ISR == 4.
ApiKey = enum.IntEnum("ApiKey", {snake_case(name).upper(): key for name, key in API_KEYS.items()}, module=__name__)
ApiKey.__doc__ = "Kafka API keys by name, from the specs: ApiKey.API_VERSIONS == 18."


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible request versions, else 1."""
    return REGISTRY.request_header_version(api_key, api_version)


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible response versions, else 0; always 0 for ApiVersions (18)."""
    return REGISTRY.response_header_version(api_key, api_version)


__all__ = [
    "API_KEYS",
    "ApiKey",
    "DecodeError",
    "ERRORS",
    "EncodeError",
    "ErrorCode",
    "SpecError",
    "UnsupportedVersionError",
    "api_name",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_body",
    "encode_request",
    "encode_request_header",
    "encode_response",
    "encode_response_header",
    "encoded_size",
    "error_info",
    "parse_request",
    "request_frame",
    "request_header_version",
    "response_correlation_id",
    "response_frame",
    "response_header_version",
    "size_prefixed",
    "supported_apis",
]
