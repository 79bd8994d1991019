"""Message specs: Kafka's message-spec JSON shape, loaded and checked into plain objects.

A spec file is strict JSON shaped like Kafka's clients/src/main/resources/common/message/*.json:

    {"apiKey": 3, "type": "response", "name": "MetadataResponse",
     "validVersions": "0-12", "flexibleVersions": "9+",
     "fields": [{"name": "ThrottleTimeMs", "type": "int32", "versions": "3+"}, ...]}

`load_spec(path)` returns a `MessageSpec` or raises `SpecError` naming the file and the field.
The checks are Kafka's: known keys only, PascalCase names, known types, nested `fields` only for
structs, `nullableVersions` only on types that can be null, tags unique and only in flexible
versions, defaults that parse for their type (and "null" only where every version is nullable).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from .exceptions import SpecError
from .naming import PASCAL_CASE, snake_case
from .versions import NONE, VersionRange

# Fixed-width types: struct format character(s) and size in bytes.
FIXED_TYPES: dict[str, tuple[str, int]] = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint8": ("B", 1),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
    "uuid": ("16s", 16),
}
# Variable-width scalars: zig-zag varints and the unsigned varint (internal use).
VARINT_TYPES = frozenset({"varint", "varlong", "uvarint"})
# Length-prefixed types; "records" is carried as (nullable) bytes.
BLOB_TYPES = frozenset({"string", "bytes", "records"})
PRIMITIVE_TYPES = frozenset(FIXED_TYPES) | VARINT_TYPES | BLOB_TYPES

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**32 - 1),
}

ZERO_UUID = uuid.UUID(int=0)

MESSAGE_KEYS = frozenset({
    "apiKey", "type", "listeners", "name", "validVersions", "deprecatedVersions",
    "flexibleVersions", "latestVersionUnstable", "fields", "commonStructs", "about",
})
FIELD_KEYS = frozenset({
    "name", "type", "versions", "nullableVersions", "default", "ignorable", "entityType",
    "about", "fields", "mapKey", "tag", "taggedVersions", "flexibleVersions", "zeroCopy",
})
STRUCT_KEYS = frozenset({"name", "versions", "fields", "about"})
MESSAGE_TYPES = frozenset({"request", "response", "header"})

# The key decoded bodies use for tagged fields this codec has no spec for: {tag: raw bytes}.
UNKNOWN_TAGS_KEY = "_unknown_tagged_fields"


@dataclass(eq=False)
class StructSpec:
    name: str
    fields: list["FieldSpec"]


@dataclass(eq=False)
class FieldSpec:
    name: str
    key: str  # snake_case dict key
    type: str  # as written in the spec: "int32", "[]int32", "[]Topic", "Topic"
    kind: str  # a primitive type name, "array" or "struct"
    element: str | None  # arrays: the element's primitive type name, or "struct"
    struct: StructSpec | None  # struct fields and arrays of structs
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    ignorable: bool
    default: Any  # immutable form: None, int, float, bool, str, bytes, UUID, () or a default dict
    flexible: VersionRange | None  # field-level override of compactness (RequestHeader.ClientId)
    map_key: bool = False
    entity_type: str | None = None
    about: str = ""

    def present(self, version: int) -> bool:
        return version in self.versions

    def is_tagged(self, version: int) -> bool:
        return version in self.tagged


@dataclass(eq=False)
class MessageSpec:
    name: str
    kind: str  # "request", "response" or "header"
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange
    struct: StructSpec
    path: str
    about: str = ""
    structs: dict[str, StructSpec] = dc_field(default_factory=dict)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


def _fail(path: str, where: str, msg: str) -> SpecError:
    return SpecError(f"{path}: {where}: {msg}" if where else f"{path}: {msg}")


def load_spec(path: str | Path) -> MessageSpec:
    """Parse and check one spec file."""
    path = Path(path)
    p = str(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise _fail(p, "", f"cannot read: {e}") from e
    except json.JSONDecodeError as e:
        hint = " (spec files are strict JSON: no // comments)" if "//" in path.read_text(encoding="utf-8", errors="replace") else ""
        raise _fail(p, "", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}{hint}") from e
    spec = parse_spec(raw, p)
    if path.stem != spec.name:
        raise _fail(p, "", f"file name must be the spec name: {spec.name}.json")
    return spec


def parse_spec(raw: Any, path: str = "<spec>") -> MessageSpec:
    """Check a spec already parsed from JSON; `path` only labels errors."""
    if not isinstance(raw, dict):
        raise _fail(path, "", "top level must be a JSON object")
    unknown = set(raw) - MESSAGE_KEYS
    if unknown:
        raise _fail(path, "", f"unknown keys {sorted(unknown)}")
    for key in ("type", "name", "validVersions", "flexibleVersions", "fields"):
        if key not in raw:
            raise _fail(path, "", f"missing {key!r}")
    kind = raw["type"]
    if kind not in MESSAGE_TYPES:
        raise _fail(path, "", f"type must be one of {sorted(MESSAGE_TYPES)}, got {kind!r}")
    name = raw["name"]
    if not isinstance(name, str) or not PASCAL_CASE.match(name):
        raise _fail(path, "", f"name must be PascalCase, got {name!r}")
    suffix = {"request": "Request", "response": "Response", "header": "Header"}[kind]
    if not name.endswith(suffix) or name == suffix and kind != "header":
        raise _fail(path, "", f"a {kind} spec's name must end with {suffix!r}, got {name!r}")
    api_key = raw.get("apiKey")
    if kind == "header":
        if api_key is not None:
            raise _fail(path, "", "a header spec has no apiKey")
    elif type(api_key) is not int or not 0 <= api_key <= 0x7FFF:
        raise _fail(path, "", f"apiKey must be an integer in 0..32767, got {api_key!r}")
    valid = _versions(raw["validVersions"], path, "validVersions")
    if valid.empty:
        raise _fail(path, "", "validVersions must not be 'none'")
    flexible = _versions(raw["flexibleVersions"], path, "flexibleVersions")
    if not flexible.empty and flexible.hi != 0x7FFF:
        raise _fail(path, "", "flexibleVersions must be open-ended ('N+') or 'none'")
    if "deprecatedVersions" in raw:
        _versions(raw["deprecatedVersions"], path, "deprecatedVersions")
    for key in ("latestVersionUnstable",):
        if key in raw and type(raw[key]) is not bool:
            raise _fail(path, "", f"{key} must be true or false")
    about = raw.get("about", "")
    if not isinstance(about, str):
        raise _fail(path, "", "about must be a string")

    ctx = _Ctx(path, valid, flexible)
    common = raw.get("commonStructs", [])
    if not isinstance(common, list):
        raise _fail(path, "commonStructs", "must be a list")
    # Common structs may refer to each other, so register names first, then fill fields.
    pending = []
    for i, cs in enumerate(common):
        where = f"commonStructs[{i}]"
        if not isinstance(cs, dict):
            raise _fail(path, where, "must be an object")
        bad = set(cs) - STRUCT_KEYS
        if bad:
            raise _fail(path, where, f"unknown keys {sorted(bad)}")
        cname = cs.get("name")
        if not isinstance(cname, str) or not PASCAL_CASE.match(cname) or cname in PRIMITIVE_TYPES:
            raise _fail(path, where, f"struct name must be PascalCase, got {cname!r}")
        if "versions" in cs:
            _versions(cs["versions"], path, f"{cname}.versions")
        if not isinstance(cs.get("fields"), list):
            raise _fail(path, cname, "a common struct needs a 'fields' list")
        if cname in ctx.structs:
            raise _fail(path, cname, "struct defined twice")
        st = StructSpec(cname, [])
        ctx.structs[cname] = st
        ctx.common.add(cname)
        pending.append((st, cs["fields"]))
    for st, fields in pending:
        st.fields = ctx.fields(fields, st.name, VersionRange(0, 0x7FFF))
    root = StructSpec(name, ctx.fields(raw["fields"], "", valid))
    _check_no_cycles(path, [root] + [st for st, _ in pending])
    return MessageSpec(
        name=name, kind=kind, api_key=api_key, valid=valid, flexible=flexible, struct=root,
        path=path, about=about, structs=ctx.structs,
    )


def _check_no_cycles(path: str, roots: list[StructSpec]) -> None:
    """A struct may not contain itself, even through arrays: its codec would be infinite."""
    done: set[int] = set()

    def visit(st: StructSpec, chain: list[str], active: set[int]) -> None:
        if id(st) in active:
            raise _fail(path, " -> ".join(chain), f"struct {st.name} contains itself")
        if id(st) in done:
            return
        active.add(id(st))
        for f in st.fields:
            if f.struct is not None:
                visit(f.struct, chain + [f.name], active)
        active.discard(id(st))
        done.add(id(st))

    for root in roots:
        visit(root, [root.name], set())


def _versions(text: Any, path: str, where: str) -> VersionRange:
    try:
        return VersionRange.parse(text)
    except ValueError as e:
        raise _fail(path, where, str(e)) from None


class _Ctx:
    def __init__(self, path: str, valid: VersionRange, flexible: VersionRange) -> None:
        self.path = path
        self.valid = valid
        self.flexible = flexible
        self.structs: dict[str, StructSpec] = {}
        self.common: set[str] = set()

    def fail(self, where: str, msg: str) -> SpecError:
        return _fail(self.path, where, msg)

    def fields(self, raw: Any, parent: str, parent_versions: VersionRange) -> list[FieldSpec]:
        if not isinstance(raw, list):
            raise self.fail(parent or "fields", "'fields' must be a list")
        out: list[FieldSpec] = []
        names: set[str] = set()
        keys: set[str] = set()
        tags: dict[int, str] = {}
        for i, rf in enumerate(raw):
            f = self.field(rf, parent, i, parent_versions)
            where = f"{parent}.{f.name}" if parent else f.name
            if f.name in names:
                raise self.fail(where, "duplicate field name")
            if f.key in keys or f.key == UNKNOWN_TAGS_KEY:
                raise self.fail(where, f"snake_case key {f.key!r} collides with another field")
            names.add(f.name)
            keys.add(f.key)
            if f.tag is not None:
                if f.tag in tags:
                    raise self.fail(where, f"tag {f.tag} already used by {tags[f.tag]}")
                tags[f.tag] = f.name
            out.append(f)
        return out

    def field(self, rf: Any, parent: str, index: int, parent_versions: VersionRange) -> FieldSpec:
        if not isinstance(rf, dict):
            raise self.fail(f"{parent}.fields[{index}]" if parent else f"fields[{index}]", "a field must be an object")
        name = rf.get("name")
        where = (f"{parent}.{name}" if parent else str(name)) if isinstance(name, str) else f"{parent}.fields[{index}]"
        bad = set(rf) - FIELD_KEYS
        if bad:
            raise self.fail(where, f"unknown keys {sorted(bad)}")
        if not isinstance(name, str) or not PASCAL_CASE.match(name):
            raise self.fail(where, f"field name must be PascalCase, got {name!r}")
        ftype = rf.get("type")
        if not isinstance(ftype, str) or not ftype:
            raise self.fail(where, "missing 'type'")
        if "versions" not in rf:
            raise self.fail(where, "missing 'versions'")
        versions = _versions(rf["versions"], self.path, f"{where}.versions")
        nullable = _versions(rf["nullableVersions"], self.path, f"{where}.nullableVersions") if "nullableVersions" in rf else NONE
        for flag in ("ignorable", "mapKey", "zeroCopy"):
            if flag in rf and type(rf[flag]) is not bool:
                raise self.fail(where, f"{flag} must be true or false")
        for text in ("about", "entityType"):
            if text in rf and not isinstance(rf[text], str):
                raise self.fail(where, f"{text} must be a string")

        kind, element, struct = self.type_of(ftype, rf, where, versions)
        can_be_null = kind in ("string", "bytes", "records", "array", "struct")
        if not nullable.empty and not can_be_null:
            raise self.fail(where, f"nullableVersions is not allowed on type {ftype}")

        tag = rf.get("tag")
        tagged = NONE
        if tag is not None or "taggedVersions" in rf:
            if type(tag) is not int or tag < 0 or tag > 0x7FFFFFFF:
                raise self.fail(where, f"tag must be a non-negative integer, got {tag!r}")
            if "taggedVersions" not in rf:
                raise self.fail(where, "a tagged field needs 'taggedVersions'")
            tagged = _versions(rf["taggedVersions"], self.path, f"{where}.taggedVersions")
            if tagged.empty:
                raise self.fail(where, "taggedVersions must not be 'none'")
            if not versions.covers(tagged):
                raise self.fail(where, f"taggedVersions {tagged} is not within versions {versions}")
            if not self.flexible.covers(tagged.intersect(self.valid)):
                raise self.fail(where, f"taggedVersions {tagged} includes versions that are not flexible ({self.flexible})")

        flexible = None
        if "flexibleVersions" in rf:
            if kind not in ("string", "bytes"):
                raise self.fail(where, "a field-level flexibleVersions is only allowed on string and bytes fields")
            flexible = _versions(rf["flexibleVersions"], self.path, f"{where}.flexibleVersions")
            if not self.flexible.covers(flexible):
                raise self.fail(where, f"flexibleVersions {flexible} is not within the message's {self.flexible}")
            if tagged is not NONE:
                raise self.fail(where, "a tagged field cannot override flexibleVersions")

        f = FieldSpec(
            name=name, key=snake_case(name), type=ftype, kind=kind, element=element, struct=struct,
            versions=versions, nullable=nullable, tagged=tagged, tag=tag,
            ignorable=bool(rf.get("ignorable", False)), default=None, flexible=flexible,
            map_key=bool(rf.get("mapKey", False)), entity_type=rf.get("entityType"),
            about=rf.get("about", ""),
        )
        f.default = self.default_of(f, rf, where)
        return f

    def type_of(self, ftype: str, rf: dict, where: str, versions: VersionRange):
        has_fields = "fields" in rf
        if ftype.startswith("[]"):
            inner = ftype[2:]
            if inner in PRIMITIVE_TYPES:
                if has_fields:
                    raise self.fail(where, f"an array of {inner} cannot have nested fields")
                return "array", inner, None
            return "array", "struct", self.struct_of(inner, rf, where, versions)
        if ftype in PRIMITIVE_TYPES:
            if has_fields:
                raise self.fail(where, f"type {ftype} cannot have nested fields")
            return ftype, None, None
        return "struct", None, self.struct_of(ftype, rf, where, versions)

    def struct_of(self, sname: str, rf: dict, where: str, versions: VersionRange) -> StructSpec:
        if not PASCAL_CASE.match(sname):
            raise self.fail(where, f"unknown type {sname!r} (not a primitive, and not a PascalCase struct name)")
        if "fields" in rf:
            if sname in self.structs:
                raise self.fail(where, f"struct {sname} is defined twice")
            st = StructSpec(sname, [])
            self.structs[sname] = st
            st.fields = self.fields(rf["fields"], where, versions)
            return st
        if sname in self.common:
            return self.structs[sname]
        raise self.fail(where, f"unknown type {sname!r}: give it 'fields' or define it in commonStructs")

    def default_of(self, f: FieldSpec, rf: dict, where: str) -> Any:
        has = "default" in rf
        d = rf.get("default")
        nullable_everywhere = not f.nullable.empty and f.nullable.covers(f.versions.intersect(self.valid))
        if has and d == "null":
            if f.kind not in ("string", "bytes", "records", "array", "struct"):
                raise self.fail(where, f"null is not a valid default for type {f.type}")
            if not nullable_everywhere:
                raise self.fail(where, "null can only be the default if the field is nullable in every version it has")
            return None
        kind = f.kind
        if kind in INT_RANGES:
            if not has:
                return 0
            try:
                if type(d) is int:
                    value = d
                elif isinstance(d, str) and re.fullmatch(r"[-+]?(0[xX][0-9a-fA-F]+|\d+)", d.strip()):
                    value = int(d.strip(), 0)
                else:
                    raise ValueError
            except ValueError:
                raise self.fail(where, f"default {d!r} is not an integer") from None
            lo, hi = INT_RANGES[kind]
            if not lo <= value <= hi:
                raise self.fail(where, f"default {value} is out of range for {kind}")
            return value
        if kind == "float64":
            if not has:
                return 0.0
            try:
                if type(d) is bool:
                    raise ValueError
                return float(d)
            except (TypeError, ValueError):
                raise self.fail(where, f"default {d!r} is not a number") from None
        if kind == "bool":
            if not has:
                return False
            if type(d) is bool:
                return d
            if d in ("true", "false"):
                return d == "true"
            raise self.fail(where, f"default {d!r} is not true or false")
        if kind == "string":
            if not has:
                return ""
            if not isinstance(d, str):
                raise self.fail(where, f"default {d!r} is not a string")
            return d
        if kind in ("bytes", "records"):
            if has and d != "":
                raise self.fail(where, "the only defaults for bytes are \"\" and \"null\"")
            return b""
        if kind == "uuid":
            if not has or d == "":
                return ZERO_UUID
            if isinstance(d, str):
                try:
                    return uuid.UUID(d)
                except ValueError:
                    pass
                try:
                    raw = base64.urlsafe_b64decode(d + "=" * (-len(d) % 4))
                    if len(raw) == 16:
                        return uuid.UUID(bytes=raw)
                except (binascii.Error, ValueError):
                    pass
            raise self.fail(where, f"default {d!r} is not a UUID")
        if kind == "array":
            if has and d != "":
                raise self.fail(where, "the only defaults for arrays are \"\" (empty) and \"null\"")
            return ()
        if kind in VARINT_TYPES:  # pragma: no cover - INT_RANGES covers these
            return 0
        # struct
        if has and d != "":
            raise self.fail(where, "the only defaults for structs are \"\" and \"null\"")
        return StructDefault(f.struct)


class StructDefault:
    """Marks a struct field whose default is a dict of its fields' defaults (built fresh)."""

    __slots__ = ("struct",)

    def __init__(self, struct: StructSpec) -> None:
        self.struct = struct


def default_value(f: FieldSpec) -> Any:
    """A fresh default value for `f`, as a decoded body holds it (lists and dicts are new)."""
    d = f.default
    if type(d) is tuple:
        return []
    if isinstance(d, StructDefault):
        return {g.key: default_value(g) for g in d.struct.fields}
    return d
