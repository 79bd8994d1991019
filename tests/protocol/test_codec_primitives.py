"""Every primitive type, in normal, nullable and compact forms, at its edge values.

Each test compiles a one-field spec and checks the exact bytes against the Kafka encoding
written out by hand, then decodes them back.
"""

import struct
import uuid

import pytest

from protocol.codegen import compile_codec
from protocol.exceptions import DecodeError, EncodeError
from protocol.messages import run_decode, run_encode
from protocol.spec import parse_spec

# v0 is an old-style version, v1 a flexible one.
FLEX = 1


def make(fields, valid="0-1", flexible="1+"):
    return parse_spec({
        "apiKey": 9999, "type": "request", "name": "TestRequest",
        "validVersions": valid, "flexibleVersions": flexible, "fields": fields,
    })


def one(ftype, **extra):
    return make([dict({"name": "Value", "type": ftype, "versions": "0+"}, **extra)])


def enc(spec, version, body):
    out = []
    run_encode(compile_codec(spec, version), body, out.append)
    return b"".join(out)


def dec(spec, version, data):
    body, pos = run_decode(compile_codec(spec, version), data, 0)
    assert pos == len(data), "decoder must consume exactly the encoding"
    return body


def roundtrip(spec, version, value, expected):
    data = enc(spec, version, {"value": value})
    assert data == expected
    assert dec(spec, version, data)["value"] == value


TAGS = b"\x00"  # an empty tagged-field section ends every struct in flexible versions

INT_CASES = [
    ("int8", "b", [-128, -1, 0, 1, 127]),
    ("int16", "h", [-32768, -1, 0, 1, 32767]),
    ("int32", "i", [-(2**31), -1, 0, 1, 2**31 - 1]),
    ("int64", "q", [-(2**63), -1, 0, 1, 2**63 - 1]),
    ("uint16", "H", [0, 1, 65535]),
    ("uint32", "I", [0, 1, 2**32 - 1]),
]


@pytest.mark.parametrize("ftype,code,values", INT_CASES)
def test_fixed_ints_at_their_edges(ftype, code, values):
    spec = one(ftype)
    for v in values:
        roundtrip(spec, 0, v, struct.pack(">" + code, v))
        roundtrip(spec, FLEX, v, struct.pack(">" + code, v) + TAGS)


@pytest.mark.parametrize("ftype,code,values", INT_CASES)
def test_fixed_ints_out_of_range_name_the_field(ftype, code, values):
    spec = one(ftype)
    for bad in (min(values) - 1, max(values) + 1):
        with pytest.raises(EncodeError, match=r"value: .* out of range"):
            enc(spec, 0, {"value": bad})
    with pytest.raises(EncodeError, match="value: expected an integer"):
        enc(spec, 0, {"value": "12"})


def test_float64_and_bool():
    spec = one("float64")
    for v in (0.0, -1.5, 1e300, float("inf")):
        roundtrip(spec, 0, v, struct.pack(">d", v))
    spec = one("bool")
    roundtrip(spec, 0, True, b"\x01")
    roundtrip(spec, 0, False, b"\x00")
    # Any non-zero byte reads as true, as Kafka reads it.
    assert dec(spec, 0, b"\x07")["value"] is True


def test_uuid():
    spec = one("uuid")
    u = uuid.UUID("0123456789abcdef0123456789abcdef")
    roundtrip(spec, 0, u, u.bytes)
    roundtrip(spec, FLEX, u, u.bytes + TAGS)
    zero = dec(spec, 0, bytes(16))["value"]
    assert zero == uuid.UUID(int=0) and isinstance(zero, uuid.UUID)
    assert dec(spec, 0, b"\xff" * 16)["value"] == uuid.UUID(int=2**128 - 1)
    with pytest.raises(EncodeError, match="value: expected a uuid.UUID"):
        enc(spec, 0, {"value": "0123456789abcdef0123456789abcdef"})
    with pytest.raises(DecodeError):
        dec(spec, 0, bytes(15))


def test_varints():
    spec = one("varint")
    # zig-zag: 0 -> 0, -1 -> 1, 1 -> 2, -64 -> 127, 64 -> 128 (two bytes)
    for v, b in [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
                 (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f")]:
        roundtrip(spec, 0, v, b)
    with pytest.raises(EncodeError):
        enc(spec, 0, {"value": 2**31})
    spec = one("varlong")
    for v in (0, -1, 2**63 - 1, -(2**63)):
        assert dec(spec, 0, enc(spec, 0, {"value": v}))["value"] == v
    assert enc(spec, 0, {"value": -(2**63)}) == b"\xff" * 9 + b"\x01"
    spec = one("uvarint")
    for v, b in [(0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"), (2**32 - 1, b"\xff\xff\xff\xff\x0f")]:
        roundtrip(spec, 0, v, b)


def test_overlong_varints_are_rejected():
    with pytest.raises(DecodeError, match="longer than 5"):
        dec(one("varint"), 0, b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(DecodeError, match="longer than 10"):
        dec(one("varlong"), 0, b"\x80" * 10 + b"\x01")
    with pytest.raises(DecodeError):
        dec(one("varint"), 0, b"\x80")  # continuation bit, then nothing


def test_strings_normal_nullable_compact():
    spec = one("string")
    roundtrip(spec, 0, "", b"\x00\x00")
    roundtrip(spec, 0, "héllo", b"\x00\x06h\xc3\xa9llo")
    roundtrip(spec, FLEX, "", b"\x01" + TAGS)
    roundtrip(spec, FLEX, "ab", b"\x03ab" + TAGS)
    long = "x" * 200  # compact length 201 needs a two-byte varint
    roundtrip(spec, FLEX, long, b"\xc9\x01" + long.encode() + TAGS)
    with pytest.raises(EncodeError, match="value: null is not allowed"):
        enc(spec, 0, {"value": None})
    with pytest.raises(EncodeError, match="longer than a string can be"):
        enc(spec, 0, {"value": "x" * 40000})
    # Compact strings have no int16 limit.
    assert dec(spec, FLEX, enc(spec, FLEX, {"value": "x" * 40000}))["value"] == "x" * 40000

    spec = one("string", nullableVersions="0+")
    roundtrip(spec, 0, None, b"\xff\xff")
    roundtrip(spec, FLEX, None, b"\x00" + TAGS)
    roundtrip(spec, 0, "a", b"\x00\x01a")


def test_string_length_lies_and_bad_utf8():
    spec = one("string")
    with pytest.raises(DecodeError, match="length 5"):
        dec(spec, 0, b"\x00\x05abc")
    with pytest.raises(DecodeError, match="length -1"):
        dec(spec, 0, b"\xff\xff")  # null in a non-nullable version
    with pytest.raises(DecodeError, match="length -2"):
        dec(one("string", nullableVersions="0+"), 0, b"\xff\xfe")
    with pytest.raises(DecodeError, match="UTF-8"):
        dec(spec, 0, b"\x00\x02\xc3\x28")
    with pytest.raises(DecodeError, match="length -1"):
        dec(spec, FLEX, b"\x00" + TAGS)  # compact null where not nullable


def test_bytes_normal_nullable_compact():
    spec = one("bytes", nullableVersions="0+")
    roundtrip(spec, 0, b"", b"\x00\x00\x00\x00")
    roundtrip(spec, 0, b"\x00\xff", b"\x00\x00\x00\x02\x00\xff")
    roundtrip(spec, 0, None, b"\xff\xff\xff\xff")
    roundtrip(spec, FLEX, b"\x01", b"\x02\x01" + TAGS)
    roundtrip(spec, FLEX, None, b"\x00" + TAGS)
    assert dec(spec, 0, enc(spec, 0, {"value": bytearray(b"ab")}))["value"] == b"ab"
    with pytest.raises(EncodeError, match="expected bytes"):
        enc(spec, 0, {"value": "text"})
    # A records field is carried as bytes.
    rec = one("records", nullableVersions="0+")
    roundtrip(rec, 0, b"batch", b"\x00\x00\x00\x05batch")


def test_arrays_normal_nullable_compact():
    spec = one("[]int32", nullableVersions="1+")
    roundtrip(spec, 0, [], b"\x00\x00\x00\x00")
    roundtrip(spec, 0, [1, -1], b"\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff")
    roundtrip(spec, FLEX, [7], b"\x02\x00\x00\x00\x07" + TAGS)
    roundtrip(spec, FLEX, None, b"\x00" + TAGS)
    with pytest.raises(EncodeError, match="null is not allowed"):
        enc(spec, 0, {"value": None})  # nullable from v1 only
    with pytest.raises(DecodeError, match="count -1"):
        dec(spec, 0, b"\xff\xff\xff\xff")
    with pytest.raises(EncodeError, match=r"value\[1\]: expected an integer"):
        enc(spec, 0, {"value": [1, "2"]})
    big = list(range(300))  # compact count 301: a two-byte varint
    data = enc(spec, FLEX, {"value": big})
    assert data[:2] == b"\xad\x02"
    assert dec(spec, FLEX, data)["value"] == big


@pytest.mark.parametrize("ftype,values", [
    ("[]int8", [-128, 0, 127]),
    ("[]int16", [-1, 2]),
    ("[]int64", [2**63 - 1, -(2**63)]),
    ("[]uint16", [0, 65535]),
    ("[]float64", [0.5, -2.0]),
    ("[]bool", [True, False, True]),
    ("[]string", ["a", "", "ß"]),
    ("[]bytes", [b"", b"\x00"]),
    ("[]uuid", [uuid.UUID(int=1), uuid.UUID(int=0)]),
    ("[]varint", [0, -1, 300]),
    ("[]varlong", [2**40, -(2**40)]),
])
def test_arrays_of_every_primitive(ftype, values):
    spec = one(ftype)
    for version in (0, FLEX):
        assert dec(spec, version, enc(spec, version, {"value": values}))["value"] == values
        assert dec(spec, version, enc(spec, version, {"value": []}))["value"] == []


def test_nested_structs_and_nullable_struct_fields():
    spec = make([
        {"name": "Outer", "type": "[]OuterItem", "versions": "0+", "fields": [
            {"name": "Id", "type": "int32", "versions": "0+"},
            {"name": "Inner", "type": "[]InnerItem", "versions": "0+", "fields": [
                {"name": "Label", "type": "string", "versions": "0+"},
            ]},
        ]},
        {"name": "Point", "type": "PointStruct", "versions": "0+", "nullableVersions": "1+", "fields": [
            {"name": "X", "type": "int16", "versions": "0+"},
            {"name": "Y", "type": "int16", "versions": "0+"},
        ]},
    ])
    body = {"outer": [{"id": 1, "inner": [{"label": "a"}, {"label": "bc"}]}, {"id": 2, "inner": []}],
            "point": {"x": 3, "y": -4}}
    v0 = enc(spec, 0, body)
    assert v0 == (b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x02bc"
                  + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x03\xff\xfc")
    assert dec(spec, 0, v0) == body
    v1 = enc(spec, FLEX, body)
    assert v1.endswith(b"\x01\x00\x03\xff\xfc" + TAGS + TAGS)  # present marker, x, y, its tags, top tags
    assert dec(spec, FLEX, v1) == body
    nothing = dict(body, point=None)
    v1 = enc(spec, FLEX, nothing)
    assert v1.endswith(b"\xff" + TAGS)
    assert dec(spec, FLEX, v1) == nothing
    with pytest.raises(EncodeError, match="point: null is not allowed"):
        enc(spec, 0, nothing)
    with pytest.raises(EncodeError, match=r"outer\[0\]: expected a dict"):
        enc(spec, 0, {"outer": [5]})


def test_truncation_anywhere_is_a_decode_error():
    spec = make([
        {"name": "A", "type": "int32", "versions": "0+"},
        {"name": "B", "type": "string", "versions": "0+"},
        {"name": "C", "type": "[]int64", "versions": "0+"},
    ])
    for version in (0, FLEX):
        data = enc(spec, version, {"a": 1, "b": "xyz", "c": [1, 2]})
        for cut in range(len(data)):
            with pytest.raises(DecodeError):
                dec(spec, version, data[:cut])
