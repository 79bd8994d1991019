"""Differential test of our codec against kafka-python 3.x's, on every (api, version) both define.

kafka-python 3.x encodes with its own engine (`kafka.protocol.api_message.ApiMessage`), driven
by its own copy of Kafka's message specs; our engine is driven by protocol/specs. For each pair
below and for requests and responses, with bodies drawn by tests/protocol/strategies.py:

- bytes our codec encodes decode, in kafka-python, to the same values;
- bytes kafka-python encodes decode, in ours, to the same values;
- when the body sets no tagged field (where Kafka leaves encoders a choice), the two encodings
  are byte for byte the same;
- both see the same field layout (names per struct, per version), so a version range that
  differs between the two spec sets fails here, before any value does;
- whole frames (size, header, body) cross over too: our encode_request/encode_response read by
  kafka-python's `decode(header=True, framed=True)`, and the reverse.

Values map one to one: kafka-python's snake_case attributes are its spec names snake_cased,
which equal ours field by field; its nested structs become dicts, and its `None` for the zero
uuid (kafka-python decodes an all-zero uuid as None) becomes our `uuid.UUID(int=0)`.

Covered (api key: versions, requests and responses alike):

    3  Metadata                      0-13
    17 SaslHandshake                 0-1
    18 ApiVersions                   0-4 (responses at v1+ with error_code 0, see below)
    19 CreateTopics                  0-7
    20 DeleteTopics                  0-6
    32 DescribeConfigs               0-4
    35 DescribeLogDirs               0-5
    36 SaslAuthenticate              0-2
    45 AlterPartitionReassignments   0-1
    46 ListPartitionReassignments    0

The list is computed at collection time (`CASES`: every key and version both sides define, so
it grows with either side) and `test_cases_cover_the_shared_apis` pins it. kafka-python's
classes accept every version from 0 to their maximum (its specs keep the field ranges of the
versions Kafka 4.0 dropped, e.g. CreateTopics 0-1, DescribeConfigs 0), so those old versions
are covered too. MetadataResponse's two AuthorizedOperations fields, which kafka-python turns
into sets of bit positions, are mapped back to the int32 on the wire.

Not covered, and why:

- LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6): controller-to-broker APIs; kafka-python
  is a client and has no classes for them. Their layouts are checked against Kafka's protocol
  guide in test_specs.py instead.
- The KIP APIs on private keys 10000-10005: they exist only in this project.
- ApiVersions responses with a non-zero error_code at v1+: kafka-python (like Kafka's clients)
  then re-reads the body as v0, the fallback a broker's UNSUPPORTED_VERSION answer needs, so
  such bodies are drawn with error_code 0 only.
"""

from __future__ import annotations

import uuid
import warnings
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from protocol import ApiKey

# kafka-python reads its spec files through importlib.resources APIs Python 3.11 deprecates.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol import admin as kp_admin
    from kafka.protocol import metadata as kp_metadata
    from kafka.protocol import sasl as kp_sasl
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas import load_json as _kp_load_json
from protocol.naming import snake_case
from tests.protocol.strategies import (
    INT_RANGES,
    ZERO_UUID,
    body_strategy,
    fields_in,
    load_specs,
    normalise,
    sets_tagged_field,
    struct_fields,
)
from protocol.versions import VersionRange

# Per case: enough to reach the edges of every field's range (strategies bias towards them)
# while the whole module stays within a few seconds per API.
EXAMPLES = 12


def _kp_classes() -> dict[tuple[int, str], type]:
    found = {}
    for module in (kp_admin, kp_metadata, kp_sasl):
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, ApiMessage) and cls is not ApiMessage:
                found[(cls.API_KEY, cls.type)] = cls
    return found


KP = _kp_classes()


def _cases() -> list[tuple[int, int, str]]:
    cases = []
    for (key, kind), spec in sorted(load_specs().items()):
        cls = KP.get((key, kind))
        if cls is None:
            continue
        ours = VersionRange.parse(spec["validVersions"])
        theirs = VersionRange(cls.min_version, cls.max_version)
        both = ours.intersect(theirs)
        cases.extend((key, v, kind) for v in range(both.lo, both.hi + 1))
    return cases


CASES = _cases()


def _case_id(case):
    key, version, kind = case
    return f"{load_specs()[(key, kind)]['name']}-v{version}"


# --------------------------------------------------------------------------- value mapping
#
# kafka-python patches a few fields after loading its specs (MetadataResponse's two
# AuthorizedOperations int32 fields become "authorized_operations" of type "bitfield", a set of
# bit positions, None for Kafka's INT32_MIN "not requested"). Names are therefore taken from
# its unpatched spec file, and bitfields are mapped back to the int32 the wire carries.

INT32_MIN = INT_RANGES["int32"][0]


def _kp_fields(struct, version):
    return [f for f in struct._fields if f.for_version_q(version)]


def _kp_struct(field):
    """The struct a struct or struct-array field holds (an array keeps its own copy of the
    field list, without the data classes, so always go through `array_of`)."""
    return field.array_of if field.is_struct_array() else field


def kp_load_json(name: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _kp_load_json(name)


@lru_cache(maxsize=None)
def _kp_names(cls) -> dict[int, str]:
    """id(kafka-python field) -> our key, from kafka-python's unpatched spec file."""
    names: dict[int, str] = {}

    def walk(struct, raw_fields):
        for f, raw in zip(struct._fields, raw_fields, strict=True):
            names[id(f)] = snake_case(raw["name"])
            if f.is_struct() or f.is_struct_array():
                walk(_kp_struct(f), raw["fields"])

    walk(cls._struct, kp_load_json(cls.__name__)["fields"])
    return names


def _kp_type(f) -> str:
    return "int32" if f.type_str == "bitfield" else f.type_str


def _kp_layout(cls, struct, version) -> list:
    """kafka-python's view of a version: [(our key, sub-layout or type)] in wire order."""
    names = _kp_names(cls)
    out = []
    for f in _kp_fields(struct, version):
        if f.is_struct() or f.is_struct_array():
            out.append((names[id(f)], _kp_layout(cls, _kp_struct(f), version)))
        else:
            out.append((names[id(f)], _kp_type(f)))
    return out


def _our_layout(spec, fields, version) -> list:
    out = []
    for f in fields_in(fields, version):
        sub = struct_fields(spec, f)
        out.append((snake_case(f["name"]), _our_layout(spec, sub, version) if sub is not None else f["type"]))
    return out


def _to_bitfield(value: int) -> set[int]:
    return {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}


def _from_bitfield(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    value = sum(1 << bit for bit in bits)
    return value - (1 << 32) if value >= 1 << 31 else value


def to_kp(cls, data_class, struct, body: dict, version: int):
    """Our body dict -> a kafka-python data object of `data_class` at `version`."""
    names = _kp_names(cls)
    kwargs = {}
    for f in _kp_fields(struct, version):
        key = names[id(f)]
        if key not in body:
            # A tagged field we leave out: kafka-python then leaves it out too.
            continue
        value = body[key]
        if value is not None and f.is_struct_array():
            value = [to_kp(cls, f.data_class, f.array_of, item, version) for item in value]
        elif value is not None and f.is_struct():
            value = to_kp(cls, f.data_class, f, value, version)
        elif f.type_str == "bitfield":
            value = _to_bitfield(value)
        kwargs[f.name] = value
    return data_class(version=version, **kwargs)


def from_kp(cls, obj, struct, version: int) -> dict:
    """A kafka-python data object -> our body dict (every field of the version)."""
    names = _kp_names(cls)
    out = {}
    for f in _kp_fields(struct, version):
        value = getattr(obj, f.name)
        if value is not None and f.is_struct_array():
            value = [from_kp(cls, item, f.array_of, version) for item in value]
        elif value is not None and f.is_struct():
            value = from_kp(cls, value, f, version)
        elif f.type_str == "bitfield":
            value = _from_bitfield(value)
        elif f.type_str == "uuid" and value is None:
            value = ZERO_UUID
        elif f.type_str in ("bytes", "records") and value is not None:
            value = bytes(value)
        elif f.type_str.startswith("[]") and value is not None:
            value = list(value)
        out[names[id(f)]] = value
    return out


def _bodies(key: int, version: int, kind: str) -> st.SearchStrategy:
    spec = load_specs()[(key, kind)]
    bodies = body_strategy(spec, version)
    if key == ApiKey.API_VERSIONS and kind == "response" and version > 0:
        bodies = bodies.map(lambda b: {**b, "error_code": 0})
    return bodies


# --------------------------------------------------------------------------- tests


def test_cases_cover_the_shared_apis():
    keys = {key for key, _, _ in CASES}
    # Every API kafka-python defines and this project specifies is exercised.
    shared = {k for (k, _) in KP} & {k for (k, _) in load_specs()}
    assert keys == shared
    assert {3, 17, 18, 19, 20, 32, 35, 36, 45, 46} <= keys


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_same_layout(case):
    key, version, kind = case
    spec = load_specs()[(key, kind)]
    assert _kp_layout(KP[(key, kind)], KP[(key, kind)]._struct, version) == _our_layout(spec, spec["fields"], version)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_bodies_cross_over(case):
    key, version, kind = case
    spec = load_specs()[(key, kind)]
    cls = KP[(key, kind)]

    @settings(max_examples=EXAMPLES)
    @given(_bodies(key, version, kind))
    def check(body):
        expected = normalise(spec, version, body)
        expected_kp = normalise(spec, version, body, every_field=False)

        ours = protocol.encode_body(key, version, kind, body)
        theirs_read = cls.decode(bytes(ours), version=version)
        assert from_kp(cls, theirs_read, cls._struct, version) == expected_kp

        theirs = bytes(to_kp(cls, cls, cls._struct, body, version).encode(version=version))
        assert protocol.decode_body(key, version, kind, theirs) == expected

        if not sets_tagged_field(spec, version, body):
            # Nothing left to encoder discretion: the bytes themselves must agree.
            assert bytes(ours) == theirs

    check()


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_frames_cross_over(case):
    key, version, kind = case
    spec = load_specs()[(key, kind)]
    cls = KP[(key, kind)]
    int32 = st.integers(*INT_RANGES["int32"])
    client_ids = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)

    @settings(max_examples=max(3, EXAMPLES // 3))
    @given(_bodies(key, version, kind), int32, client_ids)
    def check(body, correlation_id, client_id):
        expected = normalise(spec, version, body)
        expected_kp = normalise(spec, version, body, every_field=False)
        obj = to_kp(cls, cls, cls._struct, body, version)
        obj.with_header(correlation_id=correlation_id, client_id=client_id)
        # The version is already set; passing it again would touch the header's api version,
        # which a response header does not have.
        theirs = bytes(obj.encode(header=True, framed=True))

        if kind == "request":
            ours = protocol.encode_request(key, version, correlation_id, client_id, body)
            read = cls.decode(bytes(ours), version=version, header=True, framed=True)
            assert read.header.request_api_key == key
            assert read.header.request_api_version == version
            assert read.header.correlation_id == correlation_id
            assert read.header.client_id == client_id
            assert from_kp(cls, read, cls._struct, version) == expected_kp

            header, decoded = protocol.decode_request(theirs)
            assert _header_values(header) == (key, version, correlation_id, client_id)
            assert decoded == expected
            if not sets_tagged_field(spec, version, body):
                assert bytes(ours) == theirs
        else:
            ours = protocol.encode_response(key, version, correlation_id, body)
            read = cls.decode(bytes(ours), version=version, header=True, framed=True)
            assert read.header.correlation_id == correlation_id
            assert from_kp(cls, read, cls._struct, version) == expected_kp

            header, decoded = protocol.decode_response(key, version, theirs)
            assert _correlation_id(header) == correlation_id
            assert decoded == expected
            if not sets_tagged_field(spec, version, body):
                assert bytes(ours) == theirs

    check()


def _header_values(header) -> tuple:
    get = header.get if isinstance(header, dict) else lambda k: getattr(header, k)
    return (get("request_api_key"), get("request_api_version"), get("correlation_id"), get("client_id"))


def _correlation_id(header) -> int:
    return header["correlation_id"] if isinstance(header, dict) else header.correlation_id


def test_zero_uuid_maps_to_none_in_kafka_python():
    # The one representation difference the mapping bridges, pinned so a kafka-python change
    # that makes it unnecessary (or different) shows up here.
    cls = KP[(19, "response")]
    body = {"throttle_time_ms": 0, "topics": [{
        "name": "t", "topic_id": uuid.UUID(int=0), "error_code": 0, "error_message": None,
        "num_partitions": 1, "replication_factor": 1, "configs": None,
    }]}
    read = cls.decode(bytes(protocol.encode_body(19, 7, "response", body)), version=7)
    assert read.topics[0].topic_id is None
    assert from_kp(cls, read, cls._struct, 7)["topics"][0]["topic_id"] == ZERO_UUID
