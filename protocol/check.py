"""Find what is wrong with a body an encoder refused, to say it in the EncodeError.

The compiled encoders are fast because they do not check types; when one fails (TypeError,
struct.error, ...) this slow walker goes over the body with the spec and names the first bad
value by its path, e.g. "topics[3].partitions[0].leader_id: 4294967296 is out of range for int32".
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from .spec import BLOB_TYPES, INT_RANGES, UNKNOWN_TAGS_KEY, FieldSpec, MessageSpec, StructSpec

# Old-style lengths: int16 for strings, int32 for bytes and arrays.
MAX_STRING_BYTES = 0x7FFF
MAX_BYTES_LENGTH = 0x7FFFFFFF


def find_problem(spec: MessageSpec, version: int, body: object) -> str | None:
    return _Checker(spec.is_flexible(version), version).struct(spec.struct, body, "")


class _Checker:
    def __init__(self, flex: bool, version: int) -> None:
        self.flex = flex
        self.v = version

    def compact(self, f: FieldSpec) -> bool:
        return (self.v in f.flexible) if f.flexible is not None else self.flex

    def struct(self, st: StructSpec, d: object, path: str) -> str | None:
        if not isinstance(d, Mapping):
            return f"{path or 'body'}: expected a dict, got {type(d).__name__}"
        for f in st.fields:
            if self.v not in f.versions or f.key not in d:
                continue
            p = f"{path}.{f.key}" if path else f.key
            problem = self.value(f, d[f.key], p)
            if problem:
                return problem
        if self.flex and UNKNOWN_TAGS_KEY in d:
            tags = d[UNKNOWN_TAGS_KEY]
            p = f"{path}.{UNKNOWN_TAGS_KEY}" if path else UNKNOWN_TAGS_KEY
            if tags is not None and not isinstance(tags, Mapping):
                return f"{p}: expected a dict of tag -> bytes"
            for tag, data in (tags or {}).items():
                if not isinstance(tag, int) or tag < 0:
                    return f"{p}: bad tag {tag!r}"
                if not isinstance(data, (bytes, bytearray, memoryview)):
                    return f"{p}[{tag}]: expected bytes, got {type(data).__name__}"
        return None

    def value(self, f: FieldSpec, val: object, p: str) -> str | None:
        k = f.kind
        if val is None:
            if self.v in f.nullable:
                return None
            return f"{p}: null is not allowed for {f.type} in this version"
        if k in INT_RANGES:
            if not isinstance(val, int):
                return f"{p}: expected an integer ({k}), got {type(val).__name__}"
            lo, hi = INT_RANGES[k]
            if not lo <= val <= hi:
                return f"{p}: {val} is out of range for {k}"
            return None
        if k == "float64":
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                return f"{p}: expected a number, got {type(val).__name__}"
            return None
        if k == "bool":
            return None
        if k == "uuid":
            if not isinstance(val, uuid.UUID):
                return f"{p}: expected a uuid.UUID, got {type(val).__name__}"
            return None
        if k == "string":
            if not isinstance(val, str):
                return f"{p}: expected a str, got {type(val).__name__}"
            try:
                n = len(val.encode("utf-8"))
            except UnicodeEncodeError as e:
                return f"{p}: not encodable as UTF-8 ({e.reason})"
            if not self.compact(f) and n > MAX_STRING_BYTES:
                return f"{p}: {n} bytes is longer than a string can be ({MAX_STRING_BYTES})"
            return None
        if k in BLOB_TYPES:
            if not isinstance(val, (bytes, bytearray)):
                return f"{p}: expected bytes, got {type(val).__name__}"
            if len(val) > MAX_BYTES_LENGTH:
                return f"{p}: {len(val)} bytes is too long"
            return None
        if k == "array":
            if not isinstance(val, (list, tuple)):
                return f"{p}: expected a list, got {type(val).__name__}"
            if f.element == "struct":
                for i, e in enumerate(val):
                    problem = self.struct(f.struct, e, f"{p}[{i}]")
                    if problem:
                        return problem
                return None
            from .codegen import element_field

            ef = element_field(f)
            for i, e in enumerate(val):
                problem = self.value(ef, e, f"{p}[{i}]")
                if problem:
                    return problem
            return None
        if k == "struct":
            return self.struct(f.struct, val, p)
        return None
