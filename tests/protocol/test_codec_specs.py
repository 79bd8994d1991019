"""Spec files: bad ones fail loudly with the file name; the registry checks pairs and headers."""

import json
import shutil
from pathlib import Path

import pytest

from protocol.exceptions import SpecError
from protocol.registry import SPEC_DIR, Registry
from protocol.spec import load_spec


def base(**over):
    spec = {
        "apiKey": 9000, "type": "request", "name": "ProbeRequest",
        "validVersions": "0-2", "flexibleVersions": "2+",
        "fields": [{"name": "Value", "type": "int32", "versions": "0+"}],
    }
    spec.update(over)
    return spec


def field(**over):
    f = {"name": "Value", "type": "int32", "versions": "0+"}
    f.update(over)
    return base(fields=[f])


def write(tmp_path: Path, spec, name="ProbeRequest.json") -> Path:
    p = tmp_path / name
    p.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return p


BAD = {
    "unknown top-level key": (base(colour="red"), "unknown keys"),
    "missing validVersions": ({k: v for k, v in base().items() if k != "validVersions"}, "missing 'validVersions'"),
    "bad version range": (base(validVersions="3-1"), "bad version range"),
    "flexible not open-ended": (base(flexibleVersions="1-2"), "open-ended"),
    "api key out of range": (base(apiKey=40000), "apiKey"),
    "wrong type": (base(type="query"), "type must be one of"),
    "name suffix": (base(name="Probe"), "must end with 'Request'"),
    "unknown field key": (field(colour="red"), "Value: unknown keys"),
    "field name not PascalCase": (field(name="value"), "PascalCase"),
    "unknown type": (field(type="int33"), "unknown type"),
    "struct without fields": (field(type="[]Thing"), "unknown type 'Thing'"),
    "fields on a primitive": (field(fields=[]), "cannot have nested fields"),
    "nullable int": (field(nullableVersions="0+"), "nullableVersions is not allowed on type int32"),
    "default out of range": (field(type="int8", default="300"), "out of range"),
    "default not a number": (field(default="many"), "not an integer"),
    "null default on a non-nullable string": (field(type="string", default="null"), "nullable in every version"),
    "bad bool default": (field(type="bool", default="yes"), "not true or false"),
    "tag without taggedVersions": (field(tag=0), "taggedVersions"),
    "tag in non-flexible versions": (field(tag=0, taggedVersions="1+", versions="1+"), "not flexible"),
    "taggedVersions outside versions": (field(tag=0, taggedVersions="2+", versions="0-1"), "not within versions"),
    "duplicate field": (base(fields=[{"name": "A", "type": "int8", "versions": "0+"}, {"name": "A", "type": "int8", "versions": "0+"}]), "duplicate field"),
    "duplicate tag": (base(fields=[
        {"name": "A", "type": "int8", "versions": "2+", "tag": 1, "taggedVersions": "2+"},
        {"name": "B", "type": "int8", "versions": "2+", "tag": 1, "taggedVersions": "2+"},
    ]), "tag 1 already used"),
    "snake_case collision": (base(fields=[{"name": "ISRNodes", "type": "int8", "versions": "0+"}, {"name": "IsrNodes", "type": "int8", "versions": "0+"}]), "collides"),
    "struct defined twice": (base(fields=[
        {"name": "A", "type": "[]S", "versions": "0+", "fields": []},
        {"name": "B", "type": "[]S", "versions": "0+", "fields": []},
    ]), "defined twice"),
    "field flexibleVersions on an int": (field(flexibleVersions="none"), "only allowed on string and bytes"),
    "recursive common struct": (base(
        commonStructs=[{"name": "Node", "versions": "0+", "fields": [
            {"name": "Children", "type": "[]Node", "versions": "0+"},
        ]}],
        fields=[{"name": "Root", "type": "Node", "versions": "0+"}],
    ), "contains itself"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_specs_fail_with_file_and_reason(tmp_path, case):
    spec, message = BAD[case]
    path = write(tmp_path, spec)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert str(path) in str(e.value)
    assert message in str(e.value)


def test_json_comments_and_file_names(tmp_path):
    with pytest.raises(SpecError, match="strict JSON"):
        load_spec(write(tmp_path, '{\n  // Kafka style comment\n  "apiKey": 1\n}'))
    with pytest.raises(SpecError, match="file name must be the spec name"):
        load_spec(write(tmp_path, base(), name="Other.json"))


def test_good_spec_features(tmp_path):
    spec = load_spec(write(tmp_path, base(
        commonStructs=[{"name": "Pair", "versions": "0+", "fields": [
            {"name": "Left", "type": "int8", "versions": "0+"},
            {"name": "Right", "type": "int8", "versions": "0+"},
        ]}],
        fields=[
            {"name": "Pairs", "type": "[]Pair", "versions": "0+"},
            {"name": "One", "type": "Pair", "versions": "0+"},
            {"name": "Hex", "type": "int32", "versions": "0+", "default": "0x7fffffff"},
            {"name": "Opt", "type": "string", "versions": "1+", "nullableVersions": "1+", "default": "null"},
            {"name": "Extra", "type": "int64", "versions": "2+", "tag": 0, "taggedVersions": "2+", "default": -1},
        ],
    )))
    by_key = {f.key: f for f in spec.struct.fields}
    assert by_key["pairs"].struct is by_key["one"].struct
    assert by_key["hex"].default == 2**31 - 1 and by_key["opt"].default is None and by_key["extra"].default == -1


def _copy_specs(tmp_path) -> Path:
    d = tmp_path / "specs"
    shutil.copytree(SPEC_DIR, d)
    return d


def test_registry_checks_pairs_and_headers(tmp_path):
    d = _copy_specs(tmp_path)
    Registry(d)  # the real set is consistent
    resp = json.loads((d / "MetadataResponse.json").read_text())
    resp["validVersions"] = "0-11"
    (d / "MetadataResponse.json").write_text(json.dumps(resp))
    with pytest.raises(SpecError, match="validVersions 0-11 differ"):
        Registry(d)

    d = _copy_specs(tmp_path / "b")
    (d / "ResponseHeader.json").unlink()
    with pytest.raises(SpecError, match="ResponseHeader.json is missing"):
        Registry(d)

    d = _copy_specs(tmp_path / "c")
    dup = json.loads((d / "ApiVersionsRequest.json").read_text())
    dup["name"] = "DuplicateRequest"
    (d / "DuplicateRequest.json").write_text(json.dumps(dup))
    with pytest.raises(SpecError, match="already defined by"):
        Registry(d)


def test_a_bad_spec_in_the_directory_fails_the_load(tmp_path):
    d = _copy_specs(tmp_path)
    (d / "BrokenRequest.json").write_text('{"apiKey": 9999, "type": "request"')
    with pytest.raises(SpecError, match="BrokenRequest.json"):
        Registry(d)
