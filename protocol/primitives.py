"""Run-time helpers the generated codecs call: varints, tagged-field sections, array structs.

Everything here is pure (bytes in, values out) and fast paths are inlined by the code
generator; these functions handle the rarer cases (multi-byte varints, tag sections).
A decoding helper either returns or raises `DecodeError`; an encoding helper raises
`EncodeError` for values the wire cannot carry.
"""

from __future__ import annotations

import uuid
from struct import Struct

from .exceptions import DecodeError, EncodeError

# Kafka reads an unsigned varint (lengths, counts, tags) in at most 5 bytes, a varlong in 10.
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10
# Array structs are cached up to this many elements; larger arrays build a Struct per call
# (still one C call per array) so hostile counts cannot grow the cache without bound.
ARRAY_STRUCT_CACHE_LIMIT = 1024

UNKNOWN_TAGS_KEY = "_unknown_tagged_fields"

_ONE_BYTE = tuple(bytes((i,)) for i in range(128))
ZERO_BYTE = b"\x00"


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint at buf[pos]: (value, new pos). At most 5 bytes, value < 2**35."""
    value = 0
    shift = 0
    for _ in range(MAX_VARINT_BYTES):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(f"unsigned varint longer than {MAX_VARINT_BYTES} bytes")


def read_uvarint32(buf: bytes, pos: int) -> tuple[int, int]:
    value, pos = read_uvarint(buf, pos)
    if value > 0xFFFFFFFF:
        raise DecodeError(f"unsigned varint {value} does not fit in 32 bits")
    return value, pos


def _read_zigzag(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    for _ in range(max_bytes):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    value, pos = _read_zigzag(buf, pos, MAX_VARINT_BYTES)
    if not -(2**31) <= value < 2**31:
        raise DecodeError(f"varint {value} does not fit in 32 bits")
    return value, pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    value, pos = _read_zigzag(buf, pos, MAX_VARLONG_BYTES)
    if not -(2**63) <= value < 2**63:
        raise DecodeError(f"varlong {value} does not fit in 64 bits")
    return value, pos


def uvarint_bytes(n: int) -> bytes:
    """Encode an unsigned varint (0 <= n < 2**32)."""
    if 0 <= n < 128:
        return _ONE_BYTE[n]
    if not isinstance(n, int):
        raise EncodeError(f"unsigned varint must be an integer, got {type(n).__name__}")
    if not 0 <= n <= 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint {n} out of range 0..2**32-1")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag_bytes(n: int, bits: int) -> bytes:
    if not isinstance(n, int):
        raise EncodeError(f"varint must be an integer, got {type(n).__name__}")
    if not -(2 ** (bits - 1)) <= n < 2 ** (bits - 1):
        raise EncodeError(f"varint {n} does not fit in {bits} bits")
    z = (n << 1) ^ (n >> (bits - 1))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def varint_bytes(n: int) -> bytes:
    return _zigzag_bytes(n, 32)


def varlong_bytes(n: int) -> bytes:
    return _zigzag_bytes(n, 64)


def read_tags(buf: bytes, pos: int, target: dict, known: dict) -> int:
    """Read a tagged-field section at buf[pos] into `target`; returns the new pos.

    `known` maps tag -> (key, decoder); a decoder gets the field's exact bytes. Unknown tags are
    kept, raw, under target["_unknown_tagged_fields"] = {tag: bytes} so a re-encode can carry
    them on.
    """
    end = len(buf)
    count, pos = read_uvarint(buf, pos)
    # Each tagged field takes at least two bytes (tag and size), so a larger count is a lie.
    if count * 2 > end - pos:
        raise DecodeError(f"tagged field count {count} with only {end - pos} bytes left")
    seen = set()
    unknown = None
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > end - pos:
            raise DecodeError(f"tagged field {tag}: size {size} with only {end - pos} bytes left")
        if tag in seen:
            raise DecodeError(f"tagged field {tag} appears twice")
        seen.add(tag)
        data = buf[pos:pos + size]
        pos += size
        entry = known.get(tag)
        if entry is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = data
        else:
            key, decode = entry
            target[key] = decode(data)
    if unknown:
        target[UNKNOWN_TAGS_KEY] = unknown
    return pos


def write_tags(known: list, unknown, known_tags: frozenset = frozenset()) -> bytes:
    """A tagged-field section from [(tag, bytes)] plus the unknown-tags dict (may be None).

    `known_tags` are the tags the spec defines here: an "unknown" tag may not reuse one.
    """
    items = list(known)
    if unknown:
        if not isinstance(unknown, dict):
            raise EncodeError(f"{UNKNOWN_TAGS_KEY} must be a dict of tag -> bytes")
        taken = known_tags
        for tag, data in unknown.items():
            if not isinstance(tag, int) or isinstance(tag, bool) or not 0 <= tag <= 0x7FFFFFFF:
                raise EncodeError(f"{UNKNOWN_TAGS_KEY}: bad tag {tag!r}")
            if tag in taken:
                raise EncodeError(f"{UNKNOWN_TAGS_KEY}: tag {tag} is a known field of this struct")
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise EncodeError(f"{UNKNOWN_TAGS_KEY}[{tag}] must be bytes")
            items.append((tag, bytes(data)))
    if not items:
        return ZERO_BYTE
    items.sort(key=lambda item: item[0])
    parts = [uvarint_bytes(len(items))]
    for tag, data in items:
        parts.append(uvarint_bytes(tag))
        parts.append(uvarint_bytes(len(data)))
        parts.append(data)
    return b"".join(parts)


class _StructCache(dict):
    """n -> a Struct method for n elements of one fixed type (bounded cache)."""

    def __init__(self, code: str, method: str) -> None:
        super().__init__()
        self.code = code
        self.method = method

    def __missing__(self, n: int):
        fn = getattr(Struct(">%d%s" % (n, self.code)), self.method)
        if n <= ARRAY_STRUCT_CACHE_LIMIT:
            self[n] = fn
        return fn


_UNPACKERS: dict[str, _StructCache] = {}
_PACKERS: dict[str, _StructCache] = {}


def array_unpacker(code: str) -> _StructCache:
    """unpack_from for n elements of struct format `code`: array_unpacker("i")[n](buf, pos)."""
    if code not in _UNPACKERS:
        _UNPACKERS[code] = _StructCache(code, "unpack_from")
    return _UNPACKERS[code]


def array_packer(code: str) -> _StructCache:
    """pack for n elements of struct format `code`: array_packer("i")[n](*values)."""
    if code not in _PACKERS:
        _PACKERS[code] = _StructCache(code, "pack")
    return _PACKERS[code]


ZERO_UUID = uuid.UUID(int=0)
_ZERO16 = bytes(16)
_new = object.__new__
_set = object.__setattr__
_UUID = uuid.UUID
_UNKNOWN = uuid.SafeUUID.unknown
_from_bytes = int.from_bytes


def uuid_from_bytes(b: bytes) -> uuid.UUID:
    """uuid.UUID(bytes=b), without the constructor's argument handling (a few times faster)."""
    if b == _ZERO16:
        return ZERO_UUID
    u = _new(_UUID)
    _set(u, "int", _from_bytes(b, "big"))
    _set(u, "is_safe", _UNKNOWN)
    return u


def uuid_array(buf: bytes, pos: int, n: int) -> list:
    return [uuid_from_bytes(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]


def as_bytes(value) -> bytes:
    """A bytes field's value as bytes: bytearray and memoryview are copied, anything else refused."""
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def uuid_array_bytes(values) -> bytes:
    return b"".join([u.bytes for u in values])
