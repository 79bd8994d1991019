"""Speculative decoding of arrays of flat structs, one C call per run of same-shaped elements.

A "flat" struct holds only fixed-width fields, strings/bytes and arrays of fixed-width
numbers - Metadata's and ListPartitionReassignments' partitions, for instance. Its "shape" is
the tuple of its variable lengths (e.g. 3 replicas, 2 in-sync, 0 offline). Once the shape is
known, every element of that shape has the same byte layout, so one precompiled
`Struct.iter_unpack` walks a whole run of them in C, yielding a tuple per element.

The generated decoder reads the first element the ordinary way, notes its shape, and hands the
rest of the array to the run function for that shape. The run function checks, per element,
that every length and count byte equals the shape's (and that the tagged-field byte is 0); at
the first element that differs it stops, the ordinary decoder takes that element, and the new
shape's run function continues. A tuple whose length fields all match IS that layout, so the
result equals what the ordinary decoder would produce; anything unusual (a long varint, a
tagged field, a hostile length) simply falls back to it.

Run functions are generated per (array site, shape) the first time the shape is seen, and
cached; at most MAX_SHAPES_PER_SITE shapes are compiled per site, and an array whose shapes keep
changing stops speculating after MISS_LIMIT misses, so hostile input cannot make this path cost
more than a small constant over the ordinary one.
"""

from __future__ import annotations

from dataclasses import dataclass
from struct import Struct

from .primitives import uuid_from_bytes

# Distinct shapes compiled per array site (bounded work and memory under hostile input).
MAX_SHAPES_PER_SITE = 64
# Failed speculations tolerated per array before an array decodes element by element.
MISS_LIMIT = 8


@dataclass(frozen=True)
class FlatField:
    key: str
    kind: str  # "fixed", "blob" or "array"
    code: str  # struct code: the fixed type's, an array element's, or "s" for a blob
    prefix: str  # blobs and arrays: "B" (compact, length+1 in one byte), "h" or "i"
    nullable: bool
    string: bool = False  # blob holding UTF-8 text
    uuid: bool = False  # fixed uuid, converted from 16 bytes


@dataclass
class FlatPlan:
    """What a run function needs to know about one flat struct in one version."""

    label: str
    fields: list[FlatField]  # present, untagged, in wire order
    tagged_section: bool  # flexible version: each element ends with a tagged-field count
    items: list[tuple[str, str | None]]  # (key, default expression or None if present)


def _no_run(buf, pos, count, lst):
    return 0, pos


class DecodeSite:
    """Run functions of one array-of-flat-struct site, by shape."""

    def __init__(self, plan: FlatPlan, namespace: dict) -> None:
        self.plan = plan
        self.namespace = namespace
        self.runs: dict[tuple, object] = {}

    def make(self, shape: tuple):
        if len(self.runs) >= MAX_SHAPES_PER_SITE:
            return _no_run
        fn = self._compile(shape)
        self.runs[shape] = fn
        return fn

    def _compile(self, shape: tuple):
        plan = self.plan
        fmt = ">"
        idx = 0
        checks: list[str] = []
        exprs: dict[str, str] = {}
        lengths = iter(shape)
        for f in plan.fields:
            if f.kind == "fixed":
                fmt += f.code
                exprs[f.key] = f"_uuid(t[{idx}])" if f.uuid else f"t[{idx}]"
                idx += 1
                continue
            n = next(lengths)
            if n < 0 and not f.nullable:
                return _no_run
            if f.prefix == "B":
                if n + 1 >= 128:  # the length would take more than one byte
                    return _no_run
                checks.append(f"t[{idx}] != {n + 1}")
            else:
                checks.append(f"t[{idx}] != {n}")
            fmt += f.prefix
            idx += 1
            if n < 0:
                exprs[f.key] = "None"
            elif f.kind == "blob":
                fmt += f"{n}s"
                exprs[f.key] = f"t[{idx}].decode()" if f.string else f"t[{idx}]"
                idx += 1
            else:
                if n:
                    fmt += f"{n}{f.code}"
                # A list display beats list(t[a:b]) for the short arrays replica lists are.
                exprs[f.key] = (
                    "[" + ", ".join(f"t[{j}]" for j in range(idx, idx + n)) + "]" if n <= 16 else f"list(t[{idx}:{idx + n}])"
                )
                idx += n
        if plan.tagged_section:
            fmt += "B"
            checks.append(f"t[{idx}]")
            idx += 1
        st = Struct(fmt)
        if st.size == 0:
            return _no_run
        items = ", ".join(f"{key!r}: {exprs[key] if default is None else default}" for key, default in plan.items)
        lines = [
            "def run(buf, pos, count, lst):",
            f"    k = (len(buf) - pos) // {st.size}",
            "    if k > count: k = count",
            "    n0 = len(lst)",
            "    ap = lst.append",
            f"    for t in _it(_mv(buf)[pos:pos + k * {st.size}]):",
        ]
        if checks:
            lines.append(f"        if {' or '.join(checks)}: break")
        lines.append(f"        ap({{{items}}})")
        lines.append("    k = len(lst) - n0")
        lines.append(f"    return k, pos + k * {st.size}")
        namespace = dict(self.namespace)
        namespace.update(_it=st.iter_unpack, _mv=memoryview, _uuid=uuid_from_bytes)
        local: dict = {}
        exec(compile("\n".join(lines), f"<run {plan.label} {shape}>", "exec"), namespace, local)
        return local["run"]


class EncodeSite:
    """Pack functions of one array-of-flat-struct site, by shape: one pack call per element.

    The generated encoder passes fixed values, then for each variable field its length (plus
    one when compact) followed by its bytes or its elements; the tagged-field count, when the
    version has one, is a zero pad byte. Shapes a struct cannot express (a compact length of
    128 or more) map to False and such elements are encoded field by field.
    """

    def __init__(self, plan: FlatPlan) -> None:
        self.plan = plan
        self.packers: dict[tuple, object] = {}

    def make(self, shape: tuple):
        if len(self.packers) >= MAX_SHAPES_PER_SITE:
            return False
        fmt = ">"
        lengths = iter(shape)
        ok = True
        for f in self.plan.fields:
            if f.kind == "fixed":
                fmt += f.code
                continue
            n = next(lengths)
            if f.prefix == "B" and n + 1 >= 128:
                ok = False
                break
            fmt += f.prefix + (f"{n}s" if f.kind == "blob" else (f"{n}{f.code}" if n else ""))
        if self.plan.tagged_section:
            fmt += "x"
        pack = Struct(fmt).pack if ok else False
        self.packers[shape] = pack
        return pack
