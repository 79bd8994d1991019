"""Speculative decoding of arrays of flat structs, one C call per run of same-shaped elements.

A "flat" struct holds only fixed-width fields, strings/bytes and arrays of fixed-width
numbers - Metadata's and ListPartitionReassignments' partitions, for instance. Its "shape" is
the tuple of its variable lengths (e.g. 3 replicas, 2 in-sync, 0 offline). Once the shape is
known, every element of that shape has the same byte layout, so one precompiled
`Struct.iter_unpack` walks a whole run of them in C, yielding a tuple per element.

The generated decoder reads the first element the ordinary way, notes its shape, and hands the
rest of the array to the run function for that shape. The run function checks that every
length and count byte of every element equals the shape's (and that the tagged-field byte is
0) - one strided slice of the frame per such byte, compared in C - and ends the run before
the first element that differs; one list comprehension over `iter_unpack` then builds the
run's dicts. The ordinary decoder takes the element that differed, and the new shape's run
function continues. An element whose length fields all match IS that layout, so the result
equals what the ordinary decoder would produce; anything unusual (a long varint, a tagged
field, a hostile length) simply falls back to it.

Encoding mirrors it (EncodeSite): the generated encoder writes an element field by field in one
pack call, learning its shape, and the run function for that shape packs the elements that
follow, each in one call with its length prefixes as constants, until one does not fit.

Run functions are generated per (array site, shape) the first time the shape is seen, and
cached; at most MAX_SHAPES_PER_SITE shapes are compiled per site, and an array whose shapes keep
changing stops speculating after MISS_LIMIT misses, so hostile input cannot make this path cost
more than a small constant over the ordinary one.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from struct import Struct, calcsize
from struct import error as StructError

from .primitives import UNKNOWN_TAGS_KEY, uuid_from_bytes

try:
    from ._flatruns import Layout as _Layout, set_uuid_reader as _set_uuid_reader  # the optional compiled runs (make codec-compiled): absent by default
except ImportError:
    _Layout = _flatruns = None
else:
    _set_uuid_reader(uuid_from_bytes)
    _flatruns = sys.modules[__name__.rpartition(".")[0] + "._flatruns"]  # the module (its file, its types)
# Whether the compiled runs were built, and whether sites use them by default: when built, unless
# REASSIGND_PURE_CODEC=1 (the pure-Python runs stay the fallback for every shape they cannot take).
COMPILED = _Layout is not None
USE_COMPILED = COMPILED and os.environ.get("REASSIGND_PURE_CODEC", "") != "1"

# Distinct shapes compiled per array site (bounded work and memory under hostile input).
MAX_SHAPES_PER_SITE = 64
# Failed speculations tolerated per array before an array decodes element by element.
MISS_LIMIT = 8
# Arrays up to this long get a local name per element in a run function (faster than indexing
# a tuple); a longer one (never a replica list) is read by index, so hostile shapes cannot make
# the generated source grow with the array.
UNPACK_LIMIT = 16


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


def compiled_layout(plan: FlatPlan, shape: tuple, strict_keys: bool = False):
    """The compiled runs' Layout of `plan` at `shape` (byte offsets of its fields, the bytes its
    length prefixes and tag count hold), or None where they cannot take it: not built, a field
    this version lacks (its default would have to be made), float64, or a shape the Python runs
    refuse too."""
    if _Layout is None or any(default is not None for _, default in plan.items):
        return None
    fmt = ">"
    fields: dict[str, tuple] = {}
    checks: list[tuple[int, int]] = []
    lengths = iter(shape)
    for f in plan.fields:
        if f.kind == "fixed":
            if f.code == "d":
                return None
            fields[f.key] = (f.key, "uuid" if f.uuid else "fixed", "" if f.uuid else f.code, calcsize(fmt), 0, False)
            fmt += f.code
            continue
        n = next(lengths)
        value = n + 1 if f.prefix == "B" else n
        if (n < 0 and not f.nullable) or (f.prefix == "B" and value >= 128):
            return None
        width = calcsize(">" + f.prefix)
        offset = calcsize(fmt)
        checks.extend((offset + j, b) for j, b in enumerate(value.to_bytes(width, "big", signed=f.prefix != "B")))
        fmt += f.prefix
        blob = f.kind == "blob"
        fields[f.key] = (f.key, "blob" if blob else "array", "" if blob else f.code, calcsize(fmt), n, f.string)
        if n > 0:
            fmt += f"{n}s" if blob else f"{n}{f.code}"
    if plan.tagged_section:
        checks.append((calcsize(fmt), 0))
        fmt += "B"
    size = calcsize(fmt)
    if size == 0:
        return None
    try:
        return _Layout([fields[key] for key, _ in plan.items], checks, size, strict_keys, UNKNOWN_TAGS_KEY)
    except ValueError:  # more fields or length bytes than the compiled layout holds
        return None


class DecodeSite:
    """Run functions of one array-of-flat-struct site, by shape."""

    def __init__(self, plan: FlatPlan, namespace: dict, compiled: bool | None = None) -> None:
        self.plan = plan
        self.namespace = namespace
        self.compiled = USE_COMPILED if compiled is None else compiled
        self.runs: dict[tuple, object] = {}

    def make(self, shape: tuple):
        if len(self.runs) >= MAX_SHAPES_PER_SITE:
            return _no_run
        layout = compiled_layout(self.plan, shape) if self.compiled else None
        fn = layout.decode if layout is not None else self._compile(shape)
        self.runs[shape] = fn
        return fn

    def _compile(self, shape: tuple):
        plan = self.plan
        fmt = ">"
        checks: list[tuple[int, int]] = []  # (byte offset in an element, the value that byte must hold)
        count = 0  # items in an element's tuple
        used: set[int] = set()  # the items a dict value reads
        exprs: dict[str, str] = {}
        indexed = any(n > UNPACK_LIMIT for n in shape)

        def item(read: bool = True) -> str:
            """The next tuple item: a local name, or t[i] when the shape is too long to name."""
            nonlocal count
            count += 1
            if read:
                used.add(count - 1)
            return f"t[{count - 1}]" if indexed else f"v{count - 1}"

        lengths = iter(shape)
        for f in plan.fields:
            if f.kind == "fixed":
                x = item()
                exprs[f.key] = f"_uuid({x})" if f.uuid else x
                fmt += f.code
                continue
            n = next(lengths)
            if n < 0 and not f.nullable:
                return _no_run
            value = n + 1 if f.prefix == "B" else n
            if f.prefix == "B" and value >= 128:  # the length would take more than one byte
                return _no_run
            offset = calcsize(fmt)
            width = calcsize(">" + f.prefix)
            checks.extend((offset + j, b) for j, b in enumerate(value.to_bytes(width, "big", signed=f.prefix != "B")))
            item(read=False)
            fmt += f.prefix
            if n < 0:
                exprs[f.key] = "None"
            elif f.kind == "blob":
                x = item()
                exprs[f.key] = f"{x}.decode()" if f.string else x
                fmt += f"{n}s"
            elif n > UNPACK_LIMIT:
                first = count
                count += n
                used.update(range(first, count))
                exprs[f.key] = f"list(t[{first}:{count}])"
                fmt += f"{n}{f.code}"
            else:
                # A list display beats list(t[a:b]) for the short arrays replica lists are.
                exprs[f.key] = "[" + ", ".join(item() for _ in range(n)) + "]"
                fmt += f"{n}{f.code}" if n else ""
        if plan.tagged_section:
            checks.append((calcsize(fmt), 0))
            item(read=False)
            fmt += "B"
        st = Struct(fmt)
        if st.size == 0:
            return _no_run
        size = st.size
        items = ", ".join(f"{key!r}: {exprs[key] if default is None else default}" for key, default in plan.items)
        lines = [
            "def run(buf, pos, count, lst):",
            f"    k = (len(buf) - pos) // {size}",
            "    if k > count: k = count",
            "    if k <= 0: return 0, pos",
            f"    stop = pos + k * {size}",
        ]
        # Each length byte (and tag count) of the run, read as one strided slice in C: the run
        # ends before the first element whose byte differs from the shape's.
        for offset, byte in checks:
            lines.append(f"    m = k - len(buf[pos + {offset}:stop:{size}].lstrip({bytes((byte,))!r}))")
            lines.append(f"    if m < k: k = m; stop = pos + k * {size}")
        lines.append("    if not k: return 0, pos")
        if indexed:
            lines.append(f"    lst += [{{{items}}} for t in _it(_mv(buf)[pos:stop])]")
        else:
            target = ", ".join(f"v{i}" if i in used else "_" for i in range(count))
            lines.append(f"    lst += [{{{items}}} for {target}, in _it(_mv(buf)[pos:stop])]")
        lines.append("    return k, stop")
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

    def __init__(self, plan: FlatPlan, strict_keys: bool = False, compiled: bool | None = None) -> None:
        self.plan = plan
        self.compiled = USE_COMPILED if compiled is None else compiled
        # True when the struct has fields this version lacks that are not ignorable: a run then
        # takes only elements holding exactly the present keys (the field-by-field path checks
        # the others and refuses them).
        self.strict_keys = strict_keys
        self.packers: dict[tuple, object] = {}
        self.runs: dict[tuple, object] = {}

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

    def make_run(self, shape: tuple):
        """The run function for `shape`: ``run(v, i, w) -> k`` encodes v[i], v[i+1], ... while
        they have that shape, passes their bytes to `w` in one piece and returns how many it
        took. Each element is read with plain subscripts and packed in one call whose length
        prefixes are constants; its arrays are unpacked into exactly as many names as the shape
        says, so an element of another shape raises ValueError there and ends the run (as does
        anything unusual: a missing key, a tagged field, a value pack refuses). The
        field-by-field path then takes that element and reports what is wrong with it."""
        run = self.runs.get(shape)
        if run is not None:
            return run
        if len(self.runs) >= MAX_SHAPES_PER_SITE:
            return _no_encode_run
        pack = self.packers.get(shape)
        if pack is None:
            pack = self.make(shape)
        layout = compiled_layout(self.plan, shape, self.strict_keys) if pack and self.compiled else None
        if layout is not None:
            run = layout.encode
        else:
            run = self._compile(shape, pack) if pack else _no_encode_run
        self.runs[shape] = run
        return run

    def _compile(self, shape: tuple, pack):
        plan = self.plan
        body: list[str] = []
        args: list[str] = []
        unpack_targets: list[str] = []
        unpack_values: list[str] = []
        lengths = iter(shape)
        for j, f in enumerate(plan.fields):
            x = f"e[{f.key!r}]"
            if f.kind == "fixed":
                args.append(f"{x}.bytes" if f.uuid else x)
                continue
            n = next(lengths)
            args.append(str(n + 1 if f.prefix == "B" else n))
            if f.kind == "blob":
                b = f"b{j}"
                if f.string:
                    body.append(f"{b} = {x}.encode()")
                    body.append(f"if len({b}) != {n}: break")
                else:
                    body.append(f"{b} = {x}")
                    body.append(f"if type({b}) is not bytes or len({b}) != {n}: break")
                args.append(b)
            elif n == 0:
                body.append(f"if len({x}): break")
            elif n > UNPACK_LIMIT:
                r = f"r{j}"
                body.append(f"{r} = {x}")
                body.append(f"if len({r}) != {n}: break")
                args.append(f"*{r}")
            else:
                names = [f"a{j}_{i}" for i in range(n)]
                unpack_targets.append("(" + ", ".join(names) + ",)")
                unpack_values.append(x)
                args.extend(names)
        if unpack_targets:
            body.insert(0, f"{', '.join(unpack_targets)} = {', '.join(unpack_values)}")
        guard = f"len(e) != {len(plan.fields)}" if self.strict_keys else f"{UNKNOWN_TAGS_KEY!r} in e"
        lines = [
            "def run(v, i, w):",
            "    o = []",
            "    ap = o.append",
            "    try:",
            "        for e in v[i:]:",
            f"            if {guard}: break",
            *(f"            {line}" for line in body),
            f"            ap(_pk({', '.join(args)}))",
            "    except _FAIL:",
            "        pass",
            "    if o: w(b''.join(o))",
            "    return len(o)",
        ]
        namespace = {"_pk": pack, "_FAIL": _RUN_ENDS}
        exec(compile("\n".join(lines), f"<encode run {plan.label} {shape}>", "exec"), namespace)
        return namespace["run"]


def _no_encode_run(v, i, w):
    return 0


# What ends an encoding run at an element (the field-by-field path then encodes it, or says why
# it cannot): a shape or type that differs, a missing key, a value pack refuses.
_RUN_ENDS = (ValueError, TypeError, KeyError, AttributeError, IndexError, StructError)
