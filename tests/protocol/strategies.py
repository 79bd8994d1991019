"""Hypothesis strategies for message bodies, built by walking the JSON specs in protocol/specs.

A body is what the codec takes and gives back: a dict keyed by snake_case field names, nested
structs as dicts, arrays as lists. `body_strategy` draws only the fields the version has, with
values in range for their wire type, None where the version allows null, short unicode strings,
0-3 element arrays, uuids, and tagged fields sometimes left out (so the decoder must fill in
their default). `normalise` fills in every default the way a decoder must, so a round trip is
checked with one equality.

    >>> from tests.protocol.strategies import load_specs, body_strategy, normalise
    >>> spec = load_specs()[(46, "request")]
    >>> body = body_strategy(spec, 0).example()          # doctest: +SKIP
    >>> normalise(spec, 0, {})
    {'timeout_ms': 60000, 'topics': None}
    >>> normalise(load_specs()[(19, "response")], 0, {"topics": []})   # fields v0 lacks too
    {'throttle_time_ms': 0, 'topics': []}
"""

from __future__ import annotations

import json
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from hypothesis import strategies as st

import protocol
from protocol.naming import snake_case
from protocol.versions import VersionRange

SPEC_DIR = Path(protocol.__file__).parent / "specs"

# Inclusive ranges of the integer wire types.
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    # Zig-zag and unsigned varints, should a spec use them.
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**32 - 1),
}
PRIMITIVES = set(INT_RANGES) | {"bool", "float64", "string", "bytes", "uuid", "records"}
NULLABLE_TYPES = {"string", "bytes", "records"}  # plus every array and struct

ZERO_UUID = uuid.UUID(int=0)

# Small sizes keep a body's encoding short, so many examples fit in the test-time budget.
MAX_ARRAY = 3
MAX_TEXT = 8
MAX_BYTES = 12


# --------------------------------------------------------------------------- spec walking


@lru_cache(maxsize=1)
def load_all_specs() -> dict[str, dict]:
    """Every spec file (messages and headers), keyed by name."""
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(SPEC_DIR.glob("*.json"))
    }


@lru_cache(maxsize=1)
def load_specs() -> dict[tuple[int, str], dict]:
    """Every request and response spec, keyed by (apiKey, "request"|"response")."""
    return {
        (spec["apiKey"], spec["type"]): spec
        for spec in load_all_specs().values()
        if spec.get("type") in ("request", "response")
    }


def spec_cases() -> list[tuple[int, int, str]]:
    """(api_key, version, kind) for every version of every spec."""
    cases = []
    for (api_key, kind), spec in sorted(load_specs().items()):
        valid = VersionRange.parse(spec["validVersions"])
        cases.extend((api_key, v, kind) for v in range(valid.lo, valid.hi + 1))
    return cases


def case_id(case: tuple[int, int, str]) -> str:
    api_key, version, kind = case
    name = load_specs()[(api_key, kind)]["name"]
    return f"{name}-v{version}"


def in_range(text: str | None, version: int) -> bool:
    return text is not None and version in VersionRange.parse(text)


def is_flexible(spec: dict, version: int) -> bool:
    return in_range(spec.get("flexibleVersions", "none"), version)


def element_type(field: dict) -> tuple[bool, str]:
    """(is_array, element type name) of a field's type."""
    t = field["type"]
    return (True, t[2:]) if t.startswith("[]") else (False, t)


def struct_fields(spec: dict, field: dict) -> list[dict] | None:
    """The fields of a struct or struct-array field, or None for a primitive (array)."""
    _, elem = element_type(field)
    if elem in PRIMITIVES:
        return None
    if "fields" in field:
        return field["fields"]
    for common in spec.get("commonStructs", []):
        if common["name"] == elem:
            return common["fields"]
    raise KeyError(f"{spec['name']}: struct type {elem} has no fields and no commonStruct")


def fields_in(fields: list[dict], version: int) -> Iterator[dict]:
    """The fields a version has, in wire order."""
    return (f for f in fields if in_range(f["versions"], version))


def is_tagged(field: dict, version: int) -> bool:
    return in_range(field.get("taggedVersions"), version)


def is_nullable(field: dict, version: int) -> bool:
    return in_range(field.get("nullableVersions"), version)


def default_value(spec: dict, field: dict, version: int) -> Any:
    """The value a decoder gives a field the bytes leave out (a tagged field not sent)."""
    is_array, elem = element_type(field)
    raw = field.get("default")
    if raw == "null":
        return None
    if is_array:
        return []
    sub = struct_fields(spec, field)
    if sub is not None:
        return {snake_case(f["name"]): default_value(spec, f, version) for f in sub}
    if elem in INT_RANGES:
        return int(raw, 0) if isinstance(raw, str) else int(raw or 0)
    if elem == "float64":
        return float(raw or 0)
    if elem == "bool":
        return raw is True or raw == "true"
    if elem == "string":
        return raw if isinstance(raw, str) else ""
    if elem in ("bytes", "records"):
        return b""
    if elem == "uuid":
        return ZERO_UUID
    raise KeyError(f"{spec['name']}: unknown type {field['type']}")


def normalise(
    spec: dict,
    version: int,
    body: dict,
    fields: list[dict] | None = None,
    *,
    every_field: bool = True,
) -> dict:
    """What a decoder gives back for `body`: every field of the spec, in every struct, with
    the ones the bytes do not carry (tagged fields not sent, fields the version lacks) at their
    default. With every_field=False, only the fields the version has."""
    out = {}
    for field in spec["fields"] if fields is None else fields:
        key = snake_case(field["name"])
        if not in_range(field["versions"], version):
            if every_field:
                out[key] = default_value(spec, field, version)
            continue
        if key not in body:
            out[key] = default_value(spec, field, version)
            continue
        value = body[key]
        sub = struct_fields(spec, field)
        if value is None or sub is None:
            out[key] = value
        elif field["type"].startswith("[]"):
            out[key] = [normalise(spec, version, x, sub, every_field=every_field) for x in value]
        else:
            out[key] = normalise(spec, version, value, sub, every_field=every_field)
    return out


def sets_tagged_field(spec: dict, version: int, body: dict, fields: list[dict] | None = None) -> bool:
    """True if `body` gives a value to any tagged field, at any depth. Without one, every
    encoder that follows Kafka writes the same bytes (tagged fields are where encoders may
    differ: Kafka writes them only when they differ from the default)."""
    for field in fields_in(spec["fields"] if fields is None else fields, version):
        key = snake_case(field["name"])
        if key not in body:
            continue
        if is_tagged(field, version):
            return True
        sub = struct_fields(spec, field)
        value = body[key]
        if sub is None or value is None:
            continue
        items = value if field["type"].startswith("[]") else [value]
        if any(sets_tagged_field(spec, version, item, sub) for item in items):
            return True
    return False


# --------------------------------------------------------------------------- strategies

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=MAX_TEXT)
_UUIDS = st.one_of(st.just(ZERO_UUID), st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)))


def primitive_strategy(elem: str) -> st.SearchStrategy:
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        # Bias towards the edges, where width and sign mistakes show.
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if elem == "bool":
        return st.booleans()
    if elem == "float64":
        return st.floats(allow_nan=False)
    if elem == "string":
        return _TEXT
    if elem in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    if elem == "uuid":
        return _UUIDS
    raise KeyError(f"unknown primitive type {elem}")


def field_strategy(spec: dict, field: dict, version: int) -> st.SearchStrategy:
    is_array, elem = element_type(field)
    sub = struct_fields(spec, field)
    if sub is not None:
        inner: st.SearchStrategy = struct_strategy(spec, sub, version)
    else:
        inner = primitive_strategy(elem)
    if is_array:
        inner = st.lists(inner, max_size=MAX_ARRAY)
    if is_nullable(field, version):
        inner = st.one_of(st.none(), inner)
    return inner


def struct_strategy(spec: dict, fields: list[dict], version: int) -> st.SearchStrategy:
    required, optional = {}, {}
    for field in fields_in(fields, version):
        target = optional if is_tagged(field, version) else required
        target[snake_case(field["name"])] = field_strategy(spec, field, version)
    return st.fixed_dictionaries(required, optional=optional)


def body_strategy(spec: dict, version: int) -> st.SearchStrategy:
    """A valid body of `spec` at `version` (tagged fields sometimes absent)."""
    return struct_strategy(spec, spec["fields"], version)


def header_strategy() -> st.SearchStrategy:
    """(correlation_id, client_id) for a request header; client_id may be null."""
    return st.tuples(
        st.integers(*INT_RANGES["int32"]),
        st.one_of(st.none(), _TEXT),
    )
