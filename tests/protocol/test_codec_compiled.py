"""The optional compiled runs (protocol/_flatruns.pyx, `make codec-compiled`) against the pure
Python ones: the same bytes out, the same dicts back, the same errors.

Every check runs on the pure-Python runs ("pure") and, when the compiled module was built, on
the compiled ones too ("compiled"); the tests that compare the two directly are skipped only
when it was not built, and the pure runs are still checked against the field-by-field path
(the first element of every array, which no run takes) and by round trips.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from protocol import shapes
from protocol.codegen import compile_codec, generate_source
from protocol.messages import _decode, run_encode
from protocol.primitives import UNKNOWN_TAGS_KEY
from protocol.spec import parse_spec
from tests.protocol.strategies import body_strategy, case_id, load_specs, normalise, spec_cases

MODES = ["pure", "compiled"] if shapes.COMPILED else ["pure"]
needs_compiled = pytest.mark.skipif(not shapes.COMPILED, reason="compiled runs not built (make codec-compiled)")


def test_ci_builds_the_compiled_runs():
    """`make test` builds them first (Makefile), so CI compares the two codecs every run
    rather than skipping; outside CI they stay optional."""
    if os.environ.get("CI"):  # as tests/conftest.py reads it
        assert shapes.COMPILED, "make test builds protocol/_flatruns (make codec-compiled) before the suite"

# Every (api, version, kind) whose codec has an array of flat structs: where runs apply.
RUN_CASES = [
    c for c in spec_cases()
    if "_mkrun" in (src := generate_source(protocol.REGISTRY.spec(c[0], c[2]), c[1])) or "_mkerun" in src
]


def codec(key, version, kind, mode):
    return compile_codec(protocol.REGISTRY.spec(key, kind), version, compiled=mode == "compiled")


def encode(c, body) -> bytes:
    out: list[bytes] = []
    run_encode(c, body, out.append)
    return b"".join(out)


def decode(c, data: bytes) -> dict:
    return _decode(None, c, data, 0)[1]


def stretch(value):
    """Every list of dicts made long with repeated shapes (its elements three times over, the
    last pass reversed), so that runs take most of it; nested lists likewise."""
    if isinstance(value, dict):
        return {k: stretch(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(e, dict) for e in value):
        inner = [stretch(e) for e in value]
        return inner * 2 + inner[::-1]
    return value


def test_runs_apply_to_many_messages():
    assert len(RUN_CASES) > 100
    assert (46, 0, "response") in RUN_CASES


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", RUN_CASES, ids=[case_id(c) for c in RUN_CASES])
def test_every_run_site_round_trips(case, mode):
    key, version, kind = case
    spec = load_specs()[(key, kind)]
    c = codec(key, version, kind, mode)
    pure = codec(key, version, kind, "pure")

    @settings(max_examples=4, deadline=None)
    @given(body_strategy(spec, version).map(stretch))
    def check(body):
        data = encode(c, body)
        assert data == protocol.encode_body(key, version, kind, body)  # the registry's codec agrees
        assert data == encode(pure, body)
        back = decode(c, data)
        assert back == normalise(spec, version, body)
        assert back == decode(pure, data)

    check()


def lpr(partitions):
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "topics": [{"name": "t", "partitions": partitions}]}


def partitions(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = 3 if i < n // 2 else rng.choice([0, 1, 3, 3, 3, 4, 20])
        reps = [rng.randrange(-5, 2**31 - 1) if i % 97 == 0 else rng.randrange(30) for _ in range(k)]
        out.append({"partition_index": i, "replicas": reps, "adding_replicas": reps[:1], "removing_replicas": reps[1:2]})
    return out


@pytest.mark.parametrize("mode", MODES)
def test_element_for_element_the_field_by_field_bytes(mode):
    """The run-encoded array is the concatenation of what the field-by-field path writes for
    each element alone (a one-element array is never taken by a run)."""
    c = codec(46, 0, "response", mode)
    parts = partitions(120, seed=5)
    parts[30][UNKNOWN_TAGS_KEY] = {9: b"tag"}
    parts[31]["replicas"] = tuple(parts[31]["replicas"])
    parts[32]["adding_replicas"] = [True]  # a bool where an int goes: struct packs it as 1
    del parts[33]["removing_replicas"]
    prefix = encode(c, lpr([]))[:-3]
    elements = []
    for p in parts:
        single = encode(c, lpr([p]))
        elements.append(single[len(prefix) + 1:-2])
    expected = prefix + bytes((len(parts) + 1,)) + b"".join(elements) + b"\x00\x00"
    assert encode(c, lpr(parts)) == expected
    back = decode(c, expected)["topics"][0]["partitions"]
    assert back[30][UNKNOWN_TAGS_KEY] == {9: b"tag"}
    assert back[32]["adding_replicas"] == [1] and back[33]["removing_replicas"] == []


@needs_compiled
def test_compiled_and_pure_agree_on_a_large_mixed_array():
    parts = partitions(20_000, seed=9)
    pure, compiled = codec(46, 0, "response", "pure"), codec(46, 0, "response", "compiled")
    data = encode(pure, lpr(parts))
    assert encode(compiled, lpr(parts)) == data
    assert decode(compiled, data) == decode(pure, data) == lpr(parts)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [
    ("partition_index", 2**31), ("partition_index", "7"), ("replicas", [1, 2, 2**40]),
    ("replicas", "abc"), ("replicas", None), ("adding_replicas", [1.5]),
])
def test_a_bad_element_inside_a_run_gets_the_same_error(mode, bad):
    key, value = bad
    parts = [{"partition_index": i, "replicas": [1, 2, 3], "adding_replicas": [1], "removing_replicas": [2]} for i in range(50)]
    parts[25][key] = value
    messages = {}
    for m in MODES:
        with pytest.raises(protocol.EncodeError) as e:
            encode(codec(46, 0, "response", m), lpr(parts))
        messages[m] = str(e.value)
    assert f"partitions[25].{key}" in messages[mode]
    assert len(set(messages.values())) == 1


@pytest.mark.parametrize("mode", MODES)
def test_malformed_runs_are_the_same_decode_errors(mode):
    parts = [{"partition_index": i, "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [2]} for i in range(60)]
    data = encode(codec(46, 0, "response", "pure"), lpr(parts))
    c = codec(46, 0, "response", mode)
    for cut in (len(data) - 1, len(data) - 20, len(data) // 2):
        with pytest.raises(protocol.DecodeError) as e:
            decode(c, data[:cut])
        with pytest.raises(protocol.DecodeError) as p:
            decode(codec(46, 0, "response", "pure"), data[:cut])
        assert str(e.value) == str(p.value)
    # A length byte that claims more than is there, in the middle of a run.
    bad = bytearray(data)
    at = len(data) // 2
    at = bad.index(bytes((4,)), at)  # a replicas count (3 + 1)
    bad[at] = 120
    with pytest.raises(protocol.DecodeError):
        decode(c, bytes(bad))


def flat_spec(nullable_note: bool):
    # Every fixed kind, strings and bytes, arrays of two widths. With the nullable Note, arrays of
    # Items decode in runs but encode field by field (a run packs no nulls); without it, both.
    note = [{"name": "Note", "type": "string", "versions": "0+", "nullableVersions": "0+"}] if nullable_note else []
    return parse_spec({
        "apiKey": 9997, "type": "request", "name": "FlatKindsRequest", "validVersions": "0-1", "flexibleVersions": "1+",
        "fields": [{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
            {"name": "Id", "type": "uuid", "versions": "0+"},
            {"name": "Small", "type": "int8", "versions": "0+"},
            {"name": "Port", "type": "uint16", "versions": "0+"},
            {"name": "Big", "type": "int64", "versions": "0+"},
            {"name": "Wide", "type": "uint32", "versions": "0+"},
            {"name": "Flag", "type": "bool", "versions": "0+"},
            {"name": "Label", "type": "string", "versions": "0+"},
            *note,
            {"name": "Blob", "type": "bytes", "versions": "0+"},
            {"name": "Shorts", "type": "[]int16", "versions": "0+"},
            {"name": "Longs", "type": "[]int64", "versions": "0+"},
        ]}],
    })


FLAT = flat_spec(nullable_note=True)
FLAT_ENC = flat_spec(nullable_note=False)


def flat_items(n, seed, uniform=False):
    """Items of FLAT (uniform: of FLAT_ENC, all of one shape, so that one run takes them)."""
    rng = random.Random(seed)
    items = [{
        "id": uuid.UUID(int=rng.getrandbits(128)) if i % 4 else uuid.UUID(int=0),
        "small": rng.choice([-128, -1, 0, 127]), "port": rng.choice([0, 9092, 65535]),
        "big": rng.choice([-(2**63), 2**63 - 1, 0]), "wide": rng.choice([0, 2**32 - 1]),
        "flag": i % 3 == 0, "label": "é" * (i % 2) + "ab", "note": None if i % 10 == 0 else "n",
        "blob": b"xy", "shorts": [-(2**15), 2**15 - 1][: i % 3], "longs": [i] * (i % 2),
    } for i in range(n)]
    if uniform:
        for it in items:
            del it["note"]
            it.update(label="éab", shorts=[-(2**15), 2**15 - 1], longs=[it["big"]])
    return items


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("uniform", [False, True])
def test_every_fixed_kind_and_blob_in_runs(mode, version, uniform):
    spec = FLAT_ENC if uniform else FLAT
    c = compile_codec(spec, version, compiled=mode == "compiled")
    pure = compile_codec(spec, version, compiled=False)
    items = flat_items(300, seed=version, uniform=uniform)
    data = encode(c, {"items": items})
    assert data == encode(pure, {"items": items})
    assert decode(c, data) == {"items": items}
    # Lone surrogates cannot be UTF-8: refused by the field-by-field path, naming the field.
    items[150]["label"] = "\udc80b"
    with pytest.raises(protocol.EncodeError, match=r"items\[150\]\.label"):
        encode(c, {"items": items})
    # Invalid UTF-8 inside a run is a DecodeError.
    bad = bytearray(data)
    bad[bad.index("éab".encode(), len(bad) // 2)] = 0xFF
    with pytest.raises(protocol.DecodeError, match="UTF-8"):
        decode(c, bytes(bad))


def test_uniform_items_are_taken_by_encoding_runs():
    # What the tests above rely on: FLAT_ENC's items go through an encoding run (no bytes of
    # theirs but the first element's are written field by field), FLAT's never.
    for spec, taken in ((FLAT_ENC, True), (FLAT, False)):
        c = compile_codec(spec, 0, compiled=False)
        encode(c, {"items": flat_items(30, seed=3, uniform=spec is FLAT_ENC)})
        assert bool([r for name, d in c.encode.__globals__.items() if name.startswith("_eruns") for r in d.values()]) is taken


def _runs_of(c) -> list:
    """The run functions a codec's sites made (decode: _runs*, encode: _eruns*)."""
    g = c.decode.__globals__
    return [r for name, d in g.items() if name.startswith(("_runs", "_eruns")) for r in d.values()]


@needs_compiled
def test_sites_use_the_compiled_runs_when_asked():
    parts = [{"partition_index": i, "replicas": [1, 2], "adding_replicas": [], "removing_replicas": []} for i in range(10)]
    c = codec(46, 0, "response", "compiled")
    decode(c, encode(c, lpr(parts)))
    runs = _runs_of(c)
    assert len(runs) == 2 and all(isinstance(getattr(r, "__self__", None), shapes._flatruns.Layout) for r in runs)
    p = codec(46, 0, "response", "pure")
    decode(p, encode(p, lpr(parts)))
    runs = _runs_of(p)
    assert len(runs) == 2 and all(type(r).__name__ == "function" for r in runs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key, value", [
    ("small", 128), ("small", -129), ("port", 65536), ("port", -1), ("wide", 2**32), ("wide", -1),
    ("big", 2**63), ("big", -(2**63) - 1), ("shorts", [0, 2**15]), ("shorts", [-(2**15) - 1]),
    ("longs", [2**64]), ("id", "not a uuid"), ("blob", "str, not bytes"), ("label", b"bytes"),
])
def test_every_fixed_kind_out_of_range_inside_a_run(mode, key, value):
    c = compile_codec(FLAT_ENC, 0, compiled=mode == "compiled")
    items = flat_items(40, seed=1, uniform=True)
    items[20][key] = value
    with pytest.raises(protocol.EncodeError, match=rf"items\[20\]\.{key}"):
        encode(c, {"items": items})


@pytest.mark.parametrize("mode", MODES)
def test_values_struct_takes_though_not_of_the_exact_type(mode):
    # bool for ints and ints for bools, as struct packs them; a bytearray blob; a tuple array.
    c = compile_codec(FLAT_ENC, 0, compiled=mode == "compiled")
    items = flat_items(40, seed=2, uniform=True)
    odd = [dict(it) for it in items]
    odd[10]["small"] = True
    odd[11]["flag"] = 1
    odd[12]["blob"] = bytearray(odd[12]["blob"])
    odd[13]["shorts"] = tuple(odd[13]["shorts"])
    expected = [dict(it) for it in items]
    expected[10]["small"] = 1
    expected[11]["flag"] = True
    data = encode(c, {"items": odd})
    assert data == encode(compile_codec(FLAT_ENC, 0, compiled=False), {"items": expected})
    assert decode(c, data) == {"items": expected}
