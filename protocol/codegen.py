"""Compile a (message spec, version) into two specialised Python functions.

How the codec is fast
---------------------
A general codec walks the spec for every message: for each field it asks "which type? is it in
this version? nullable? compact?" and dispatches. All of those answers are fixed once the
message and version are known, so this module asks them once, writes the straight-line Python
a person would write by hand for exactly that message and version, `exec`s it once and caches
the two functions (`registry.py` keeps them):

* `decode(buf, pos) -> (dict, pos)` reads `buf` (the whole frame, `bytes`) at offsets; it never
  slices the frame except to take out a string or bytes value.
* `encode(body, w)` appends byte strings to a list through `w` (its bound `append`); the caller
  joins them once.

Inside those functions:

* Runs of consecutive fixed-width fields (ints, bool, float64, uuid) are read or written by ONE
  precompiled `struct.Struct` call (`unpack_from(buf, pos)` / `pack(...)`); an old-style length
  or count prefix that follows joins the same call.
* An array of fixed-width numbers is one `unpack_from` / `pack` of a Struct for n elements,
  taken from a bounded cache, never a per-element loop.
* Nested structs and arrays of structs are inlined as nested loops; a decoded struct is built by
  one dict display; encoding reads the dict with plain subscripts and falls back to `.get` with
  the spec default only when a key is missing (try/except costs nothing in 3.11).
* Arrays of "flat" structs (only fixed fields, strings/bytes and number arrays: partitions in
  Metadata, ListPartitionReassignments, LeaderAndIsr, ...) go by shape speculation (shapes.py):
  after one element is read or written the ordinary way, a run function for "an element of
  that shape" takes the elements that follow. Decoding, it checks every length byte of the run
  at once (one strided slice per byte, in C), then builds the dicts in one list comprehension
  over `iter_unpack`; encoding, it unpacks each element's arrays into as many names as the
  shape says (another shape raises there and ends the run) and packs it in one call whose
  length prefixes are constants. The first element of another shape goes the ordinary way and
  starts the next run.
* Compact lengths, tags and other unsigned varints take an inline one-byte fast path; only
  longer varints call a helper.
* Every length and count read from the wire is checked against the bytes left BEFORE anything is
  sliced or allocated, so a 4-byte frame claiming two billion elements costs nothing.
* Frames of 64 KiB or more are decoded with the cyclic garbage collector paused (messages.py):
  a decoded body is a tree of new dicts and lists without cycles, so collector passes over it
  while it is being built are pure overhead.

The generated source of any codec can be read with `generate_source(spec, version)`.
"""

from __future__ import annotations

import dataclasses
import functools
from struct import Struct

from . import primitives as P
from . import shapes
from .exceptions import DecodeError, EncodeError
from .spec import (
    BLOB_TYPES,
    FIXED_TYPES,
    UNKNOWN_TAGS_KEY,
    VARINT_TYPES,
    FieldSpec,
    MessageSpec,
    StructDefault,
    StructSpec,
    default_value,
)
from .versions import NONE

_PREFIX_SIZE = {"h": 2, "i": 4}
_VARINT_READERS = {"varint": "_rvarint", "varlong": "_rvarlong", "uvarint": "_ruv32"}
_VARINT_WRITERS = {"varint": "_wvarint", "varlong": "_wvarlong", "uvarint": "_uvb"}


def _bad_length(path: str, n: int, left: int) -> DecodeError:
    return DecodeError(f"{path}: length {n} is invalid with {left} bytes left")


def _bad_count(path: str, n: int, left: int) -> DecodeError:
    return DecodeError(f"{path}: array count {n} is invalid with {left} bytes left")


_BASE_GLOBALS = {
    "_DE": DecodeError,
    "_EE": EncodeError,
    "_badlen": _bad_length,
    "_badcount": _bad_count,
    "_ruv": P.read_uvarint,
    "_ruv32": P.read_uvarint32,
    "_rvarint": P.read_varint,
    "_rvarlong": P.read_varlong,
    "_uvb": P.uvarint_bytes,
    "_wvarint": P.varint_bytes,
    "_wvarlong": P.varlong_bytes,
    "_UV1": tuple(bytes((i,)) for i in range(128)),
    "_rtags": P.read_tags,
    "_wtags": P.write_tags,
    "_Z": b"\x00",
    "_NULL1": b"\xff",
    "_ONE1": b"\x01",
    "_uuid": P.uuid_from_bytes,
    "_uuida": P.uuid_array,
    "_uuidab": P.uuid_array_bytes,
    "_asb": P.as_bytes,
    "_notseq": (str, bytes, bytearray, dict),
}


@dataclasses.dataclass
class Compiled:
    """The two functions for one (message, version) and the source they came from."""

    spec: MessageSpec
    version: int
    decode: object  # (buf: bytes, pos: int) -> (dict, int)
    encode: object  # (body: dict, w: list.append) -> None
    source: str


class _Gen:
    def __init__(self, spec: MessageSpec, version: int, compiled: bool | None = None) -> None:
        self.compiled = compiled  # compiled runs for flat-struct arrays (None: shapes.USE_COMPILED)
        self.spec = spec
        self.v = version
        self.flex = spec.is_flexible(version)
        self.g = dict(_BASE_GLOBALS)
        self.funcs: list[list[str]] = []
        self.cur: list[str] = []
        self.counter = 0
        self.label = f"{spec.name} v{version}"
        self.tag_tables: list[dict] = []
        self.lens: list[str] | None = None  # collects length variables of a flat struct's fields

    # -- plumbing -------------------------------------------------------------------------------

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value, prefix: str = "_c") -> str:
        n = self.name(prefix)
        self.g[n] = value
        return n

    def emit(self, ind: int, line: str) -> None:
        self.cur.append("    " * ind + line)

    def begin(self, header: str) -> list[str]:
        saved = self.cur
        self.cur = [header]
        return saved

    def end(self, saved: list[str]) -> None:
        self.funcs.append(self.cur)
        self.cur = saved

    # -- field facts for this version -----------------------------------------------------------

    def parts(self, st: StructSpec) -> tuple[list[FieldSpec], list[FieldSpec]]:
        v = self.v
        present = [f for f in st.fields if v in f.versions and v not in f.tagged]
        tagged = [f for f in st.fields if v in f.versions and v in f.tagged] if self.flex else []
        return present, tagged

    def compact(self, f: FieldSpec) -> bool:
        return (self.v in f.flexible) if f.flexible is not None else self.flex

    def prefix_char(self, f: FieldSpec) -> str | None:
        """The struct code of an old-style (non-compact) length/count prefix, if `f` has one."""
        if self.compact(f):
            return None
        if f.kind == "string":
            return "h"
        if f.kind in ("bytes", "records", "array"):
            return "i"
        return None

    def min_size(self, f: FieldSpec) -> int:
        k = f.kind
        if k in FIXED_TYPES:
            return FIXED_TYPES[k][1]
        if k in VARINT_TYPES:
            return 1
        if k in BLOB_TYPES or k == "array":
            pc = self.prefix_char(f)
            return _PREFIX_SIZE[pc] if pc else 1
        if self.v in f.nullable:
            return 1
        return self.struct_min_size(f.struct)

    def struct_min_size(self, st: StructSpec) -> int:
        present, _ = self.parts(st)
        return sum(self.min_size(f) for f in present) + (1 if self.flex else 0)

    def element_min_size(self, f: FieldSpec) -> int:
        if f.element == "struct":
            return self.struct_min_size(f.struct)
        return self.min_size(element_field(f))

    @staticmethod
    def sub(path: str, key: str) -> str:
        return f"{path}.{key}" if path else key

    # -- defaults ---------------------------------------------------------------------------------

    def literal(self, d) -> str:
        if d is None or type(d) in (int, bool, str, bytes):
            return repr(d)
        return self.const(d)

    def decoded_default(self, f: FieldSpec) -> str:
        """Expression for the default a decoded body holds for a field the version lacks."""
        d = f.default
        if type(d) is tuple:
            return "[]"
        if isinstance(d, StructDefault):
            return self.const(functools.partial(default_value, f), "_df") + "()"
        return self.literal(d)

    def encode_default(self, f: FieldSpec) -> str:
        """Expression for a missing key's value when encoding (never mutated)."""
        d = f.default
        if type(d) is tuple:
            return "()"
        if isinstance(d, StructDefault):
            return self.const(default_value(f), "_dd")
        return self.literal(d)

    def non_default(self, f: FieldSpec, y: str) -> str:
        d = f.default
        if d is None:
            return f"{y} is not None"
        if type(d) is tuple:
            return f"({y} is None or len({y}) > 0)"
        if isinstance(d, StructDefault):
            return f"{y} != {self.const(default_value(f), '_dd')}"
        return f"{y} != {self.literal(d)}"

    # -- decoding ---------------------------------------------------------------------------------

    def dec_struct(self, st: StructSpec, ind: int, target: str, path: str) -> None:
        present, tagged = self.parts(st)
        vals: dict[str, str] = {}
        i = 0
        while i < len(present):
            f = present[i]
            if f.kind in FIXED_TYPES or self.prefix_char(f):
                run = []
                while i < len(present) and present[i].kind in FIXED_TYPES:
                    run.append(present[i])
                    i += 1
                pf = None
                if i < len(present) and self.prefix_char(present[i]):
                    pf = present[i]
                    i += 1
                self.dec_group(run, pf, ind, vals, path)
            else:
                vals[f.key] = self.dec_field(f, ind, path)
                i += 1
        items = ", ".join(f"{f.key!r}: {vals[f.key] if f.key in vals else self.decoded_default(f)}" for f in st.fields)
        self.emit(ind, f"{target} = {{{items}}}")
        if self.flex:
            known = {f.tag: (f.key, self.tagged_decoder(f, path)) for f in tagged}
            self.tag_tables.append(known)
            kt = self.const(known, "_kt")
            self.emit(ind, f"if buf[pos]: pos = _rtags(buf, pos, {target}, {kt})")
            self.emit(ind, "else: pos += 1")

    def dec_group(self, run: list[FieldSpec], pf: FieldSpec | None, ind: int, vals: dict, path: str) -> None:
        fmt = ">" + "".join(FIXED_TYPES[f.kind][0] for f in run)
        size = sum(FIXED_TYPES[f.kind][1] for f in run)
        names = [self.name("x") for _ in run]
        targets = list(names)
        n = None
        if pf is not None:
            pc = self.prefix_char(pf)
            fmt += pc
            size += _PREFIX_SIZE[pc]
            n = self.name("n")
            targets.append(n)
        unpack = self.const(Struct(fmt).unpack_from, "_u")
        lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
        self.emit(ind, f"{lhs} = {unpack}(buf, pos)")
        self.emit(ind, f"pos += {size}")
        for f, nm in zip(run, names):
            if f.kind == "uuid":
                self.emit(ind, f"{nm} = _uuid({nm})")
            vals[f.key] = nm
        if pf is not None:
            vals[pf.key] = self.dec_body(pf, n, ind, path)

    def dec_uvarint(self, n: str, ind: int) -> None:
        self.emit(ind, f"{n} = buf[pos]")
        self.emit(ind, f"if {n} < 128: pos += 1")
        self.emit(ind, f"else: {n}, pos = _ruv(buf, pos)")

    def dec_field(self, f: FieldSpec, ind: int, path: str) -> str:
        k = f.kind
        if k in FIXED_TYPES:
            vals: dict[str, str] = {}
            self.dec_group([f], None, ind, vals, path)
            return vals[f.key]
        if k in VARINT_TYPES:
            x = self.name("x")
            self.emit(ind, f"{x}, pos = {_VARINT_READERS[k]}(buf, pos)")
            return x
        if k == "struct":
            x = self.name("s")
            sub = self.sub(path, f.key)
            if self.v in f.nullable:
                # Kafka reads the marker as a signed byte: negative means null.
                self.emit(ind, "if buf[pos] >= 128:")
                self.emit(ind + 1, f"{x} = None")
                self.emit(ind + 1, "pos += 1")
                self.emit(ind, "else:")
                self.emit(ind + 1, "pos += 1")
                self.dec_struct(f.struct, ind + 1, x, sub)
            else:
                self.dec_struct(f.struct, ind, x, sub)
            return x
        if self.compact(f):
            n = self.name("n")
            self.dec_uvarint(n, ind)
            self.emit(ind, f"{n} -= 1")
            return self.dec_body(f, n, ind, path)
        vals = {}
        self.dec_group([], f, ind, vals, path)
        return vals[f.key]

    def dec_body(self, f: FieldSpec, n: str, ind: int, path: str) -> str:
        """Value of a string/bytes/array whose length or count is in `n` (-1 = null)."""
        if self.lens is not None:
            self.lens.append(n)
        x = self.name("b")
        fpath = self.sub(path, f.key)
        nullable = self.v in f.nullable
        bad = "_badlen" if f.kind in BLOB_TYPES else "_badcount"
        body = ind
        if nullable:
            self.emit(ind, f"if {n} < 0:")
            self.emit(ind + 1, f"if {n} != -1: raise {bad}({fpath!r}, {n}, end - pos)")
            self.emit(ind + 1, f"{x} = None")
            self.emit(ind, "else:")
            body = ind + 1
        neg = "" if nullable else f"{n} < 0 or "
        if f.kind in BLOB_TYPES:
            self.emit(body, f"if {neg}{n} > end - pos: raise {bad}({fpath!r}, {n}, end - pos)")
            if f.kind == "string":
                self.emit(body, f"{x} = buf[pos:pos + {n}].decode()")
            else:
                self.emit(body, f"{x} = buf[pos:pos + {n}]")
            self.emit(body, f"pos += {n}")
            return x
        mn = max(1, self.element_min_size(f))
        need = n if mn == 1 else f"{n} * {mn}"
        self.emit(body, f"if {neg}{need} > end - pos: raise {bad}({fpath!r}, {n}, end - pos)")
        self.dec_elements(f, n, x, body, fpath)
        return x

    def dec_elements(self, f: FieldSpec, n: str, x: str, ind: int, path: str) -> None:
        e = f.element
        if e in FIXED_TYPES and e != "uuid":
            code, size = FIXED_TYPES[e]
            ua = self.const(P.array_unpacker(code), "_ua")
            self.emit(ind, f"{x} = list({ua}[{n}](buf, pos))")
            self.emit(ind, f"pos += {n}" if size == 1 else f"pos += {n} * {size}")
            return
        if e == "uuid":
            self.emit(ind, f"{x} = _uuida(buf, pos, {n})")
            self.emit(ind, f"pos += {n} * 16")
            return
        ap = self.name("ap")
        self.emit(ind, f"{x} = []")
        self.emit(ind, f"{ap} = {x}.append")
        if e == "struct":
            plan = self.flat_plan(f.struct)
            if plan is not None:
                self.dec_flat_elements(f, plan, n, x, ap, ind, path)
                return
        self.emit(ind, f"for _ in range({n}):")
        if e == "struct":
            ev = self.name("e")
            self.dec_struct(f.struct, ind + 1, ev, path + "[]")
        else:
            ev = self.dec_field(element_field(f), ind + 1, path + "[]")
        self.emit(ind + 1, f"{ap}({ev})")

    def flat_plan(self, st: StructSpec) -> shapes.FlatPlan | None:
        """A plan for speculative run decoding if `st` is flat in this version (see shapes.py)."""
        present, tagged = self.parts(st)
        fields = []
        for f in present:
            k = f.kind
            if k in FIXED_TYPES:
                fields.append(shapes.FlatField(f.key, "fixed", FIXED_TYPES[k][0], "", False, uuid=k == "uuid"))
            elif k in ("string", "bytes") or (k == "array" and f.element in FIXED_TYPES and f.element != "uuid"):
                prefix = self.prefix_char(f) or "B"
                code = "s" if k != "array" else FIXED_TYPES[f.element][0]
                fields.append(shapes.FlatField(
                    f.key, "array" if k == "array" else "blob", code, prefix, self.v in f.nullable,
                    string=k == "string",
                ))
            else:
                return None
        if self.struct_min_size(st) == 0:
            return None
        items = [(f.key, None if f in present else self.decoded_default(f)) for f in st.fields]
        return shapes.FlatPlan(f"{self.label} {st.name}", fields, self.flex, items)

    def flat_encodable(self, st: StructSpec) -> bool:
        """Flat, with no nullable variable fields and no tagged fields in this version."""
        present, tagged = self.parts(st)
        return not tagged and not any(f.kind not in FIXED_TYPES and self.v in f.nullable for f in present)

    def dec_flat_elements(self, f: FieldSpec, plan, n: str, x: str, ap: str, ind: int, path: str) -> None:
        site = shapes.DecodeSite(plan, self.g, compiled=self.compiled)
        runs = self.const(site.runs, "_runs")
        make = self.const(site.make, "_mkrun")
        i, sh, ms, k, rf = (self.name(p) for p in ("i", "sh", "ms", "k", "rf"))
        self.emit(ind, f"{i} = 0")
        self.emit(ind, f"{sh} = None")
        self.emit(ind, f"{ms} = 0")
        self.emit(ind, f"while {i} < {n}:")
        self.emit(ind + 1, f"if {sh} is not None:")
        self.emit(ind + 2, f"{rf} = {runs}.get({sh}) or {make}({sh})")
        self.emit(ind + 2, f"{k}, pos = {rf}(buf, pos, {n} - {i}, {x})")
        self.emit(ind + 2, f"if {k}:")
        self.emit(ind + 3, f"{i} += {k}")
        self.emit(ind + 3, f"if {i} == {n}: break")
        self.emit(ind + 2, f"else: {ms} += 1")
        ev = self.name("e")
        saved, self.lens = self.lens, []
        self.dec_struct(f.struct, ind + 1, ev, path + "[]")
        lens, self.lens = self.lens, saved
        self.emit(ind + 1, f"{ap}({ev})")
        self.emit(ind + 1, f"{i} += 1")
        shape = "(" + "".join(f"{v}, " for v in lens) + ")"
        self.emit(ind + 1, f"{sh} = {shape} if {ms} < {shapes.MISS_LIMIT} else None")

    def tagged_decoder(self, f: FieldSpec, path: str) -> object:
        fn = self.name("_td")
        saved = self.begin(f"def {fn}(buf):")
        self.emit(1, "pos = 0")
        self.emit(1, "end = len(buf)")
        x = self.dec_field(f, 1, path)
        msg = f"{self.label}: tagged field {self.sub(path, f.key)} has "
        self.emit(1, f"if pos != end: raise _DE({msg!r} + str(end - pos) + ' bytes left over')")
        self.emit(1, f"return {x}")
        self.end(saved)
        return _Late(fn)

    # -- encoding ---------------------------------------------------------------------------------

    def enc_struct(self, st: StructSpec, d: str, ind: int, path: str) -> None:
        present, tagged = self.parts(st)
        vals = self.enc_fetch(st, present, d, ind, path)
        self.enc_writes(present, tagged, vals, d, ind, path)

    def enc_fetch(self, st: StructSpec, present: list[FieldSpec], d: str, ind: int, path: str) -> dict[str, str]:
        """Read the present fields of dict `d` into locals; refuse non-default absent ones."""
        vals: dict[str, str] = {}
        if present:
            for f in present:
                vals[f.key] = self.name("v")
            self.emit(ind, "try:")
            for f in present:
                self.emit(ind + 1, f"{vals[f.key]} = {d}[{f.key!r}]")
            self.emit(ind, "except KeyError:")
            for f in present:
                self.emit(ind + 1, f"{vals[f.key]} = {d}.get({f.key!r}, {self.encode_default(f)})")
        for f in st.fields:
            if self.v not in f.versions and not f.ignorable:
                y = self.name("y")
                msg = (
                    f"{self.label}: {self.sub(path, f.key)} does not exist in this version and is not "
                    f"ignorable, so it must be left at its default"
                )
                self.emit(ind, f"{y} = {d}.get({f.key!r})")
                self.emit(ind, f"if {y} is not None and {self.non_default(f, y)}: raise _EE({msg!r})")
        return vals

    def enc_writes(self, present: list[FieldSpec], tagged: list[FieldSpec], vals: dict, d: str, ind: int, path: str) -> None:
        i = 0
        while i < len(present):
            f = present[i]
            if f.kind in FIXED_TYPES or self.prefix_char(f):
                run = []
                while i < len(present) and present[i].kind in FIXED_TYPES:
                    run.append(present[i])
                    i += 1
                pf = None
                if i < len(present) and self.prefix_char(present[i]):
                    pf = present[i]
                    i += 1
                self.enc_group(run, pf, vals, ind, path)
            else:
                self.enc_field(f, vals[f.key], ind, path)
                i += 1
        if self.flex:
            unk = UNKNOWN_TAGS_KEY
            if tagged:
                tg = self.name("tg")
                self.emit(ind, f"{tg} = []")
                for f in tagged:
                    y = self.name("y")
                    te = self.tagged_encoder(f, path)
                    self.emit(ind, f"{y} = {d}.get({f.key!r}, {self.encode_default(f)})")
                    self.emit(ind, f"if {self.non_default(f, y)}: {tg}.append(({f.tag}, {te}({y})))")
                known = self.const(frozenset(f.tag for f in tagged), "_tags")
                self.emit(ind, f"w(_wtags({tg}, {d}.get({unk!r}), {known}))")
            else:
                self.emit(ind, f"w(_wtags((), {d}[{unk!r}]) if {unk!r} in {d} else _Z)")

    def enc_flat_elements(self, f: FieldSpec, plan, vv: str, ind: int, path: str) -> None:
        """Runs of same-shaped elements through a run function (shapes.EncodeSite.make_run);
        each element before a run, field by field with one pack call, learns the shape."""
        st = f.struct
        present, tagged = self.parts(st)
        strict = any(self.v not in g.versions and not g.ignorable for g in st.fields)
        site = shapes.EncodeSite(plan, strict_keys=strict, compiled=self.compiled)
        ev, i, n, ms, shape, k = (self.name(p) for p in ("e", "i", "n", "ms", "sh", "k"))
        runs = self.const(site.runs, "_eruns")
        make_run = self.const(site.make_run, "_mkerun")
        self.emit(ind, f"if type({vv}) is not list and type({vv}) is not tuple: {vv} = list({vv})")
        self.emit(ind, f"{i} = 0")
        self.emit(ind, f"{n} = len({vv})")
        self.emit(ind, f"{ms} = 0")
        self.emit(ind, f"while {i} < {n}:")
        body = ind + 1
        self.emit(body, f"{ev} = {vv}[{i}]")
        self.emit(body, f"{i} += 1")
        vals = self.enc_fetch(st, present, ev, body, path)
        args: list[str] = []
        lens: list[str] = []
        for g in present:
            x = vals[g.key]
            if g.kind in FIXED_TYPES:
                args.append(f"{x}.bytes" if g.kind == "uuid" else x)
                continue
            ln = self.name("l")
            lens.append(ln)
            if g.kind == "string":
                b = self.name("b")
                self.emit(body, f"{b} = {x}.encode()")
            elif g.kind == "array":
                b = x
            else:
                b = self.name("b")
                self.emit(body, f"{b} = {x} if type({x}) is bytes else _asb({x})")
            self.emit(body, f"{ln} = len({b})")
            compact = self.prefix_char(g) is None
            args.append(f"{ln} + 1" if compact else ln)
            args.append(b if g.kind != "array" else f"*{b}")
        unk = UNKNOWN_TAGS_KEY
        self.emit(body, f"{shape} = (" + "".join(f"{ln}, " for ln in lens) + ")")
        if not lens:
            pack = site.make(())
            self.emit(body, f"if {unk!r} not in {ev}: w({self.const(pack, '_pk')}({', '.join(args)}))")
        else:
            packers = self.const(site.packers, "_pks")
            make = self.const(site.make, "_mkpk")
            pk = self.name("pk")
            self.emit(body, f"{pk} = {packers}.get({shape})")
            self.emit(body, f"if {pk} is None: {pk} = {make}({shape})")
            self.emit(body, f"if {pk} and {unk!r} not in {ev}: w({pk}({', '.join(args)}))")
        self.emit(body, "else:")
        self.enc_writes(present, tagged, vals, ev, body + 1, path)
        self.emit(body, f"if {i} < {n} and {ms} < {shapes.MISS_LIMIT}:")
        self.emit(body + 1, f"{k} = ({runs}.get({shape}) or {make_run}({shape}))({vv}, {i}, w)")
        self.emit(body + 1, f"{i} += {k}")
        self.emit(body + 1, f"if {i} < {n}: {ms} += 1")

    def enc_group(self, run: list[FieldSpec], pf: FieldSpec | None, vals: dict, ind: int, path: str) -> None:
        fmt = ">" + "".join(FIXED_TYPES[f.kind][0] for f in run)
        args = [f"{vals[f.key]}.bytes" if f.kind == "uuid" else vals[f.key] for f in run]
        blob = None
        if pf is not None:
            vv = vals[pf.key]
            nullable = self.v in pf.nullable
            fmt += self.prefix_char(pf)
            if pf.kind in BLOB_TYPES:
                if pf.kind == "string":
                    blob = self.name("b")
                    if nullable:
                        self.emit(ind, f"{blob} = None if {vv} is None else {vv}.encode()")
                    else:
                        self.emit(ind, f"{blob} = {vv}.encode()")
                else:
                    blob = self.name("b")
                    if nullable:
                        self.emit(ind, f"{blob} = None if {vv} is None else {vv} if type({vv}) is bytes else _asb({vv})")
                    else:
                        self.emit(ind, f"{blob} = {vv} if type({vv}) is bytes else _asb({vv})")
            size_of = blob if blob is not None else vv
            args.append(f"-1 if {size_of} is None else len({size_of})" if nullable else f"len({size_of})")
        pack = self.const(Struct(fmt).pack, "_p")
        self.emit(ind, f"w({pack}({', '.join(args)}))")
        if pf is None:
            return
        if blob is not None:
            self.emit(ind, f"if {blob}: w({blob})")
            return
        vv = vals[pf.key]
        if self.v in pf.nullable:
            self.emit(ind, f"if {vv} is not None:")
            self.enc_elements(pf, vv, ind + 1, self.sub(path, pf.key))
        else:
            self.enc_elements(pf, vv, ind, self.sub(path, pf.key))

    def enc_field(self, f: FieldSpec, vv: str, ind: int, path: str) -> None:
        k = f.kind
        if k in FIXED_TYPES:
            self.enc_group([f], None, {f.key: vv}, ind, path)
            return
        if k in VARINT_TYPES:
            self.emit(ind, f"w({_VARINT_WRITERS[k]}({vv}))")
            return
        nullable = self.v in f.nullable
        if k == "struct":
            sub = self.sub(path, f.key)
            if nullable:
                self.emit(ind, f"if {vv} is None: w(_NULL1)")
                self.emit(ind, "else:")
                self.emit(ind + 1, "w(_ONE1)")
                self.enc_struct(f.struct, vv, ind + 1, sub)
            else:
                self.enc_struct(f.struct, vv, ind, sub)
            return
        if not self.compact(f):
            self.enc_group([], f, {f.key: vv}, ind, path)
            return
        body = ind
        if nullable:
            self.emit(ind, f"if {vv} is None: w(_Z)")
            self.emit(ind, "else:")
            body = ind + 1
        n = self.name("l")
        if k in BLOB_TYPES:
            b = self.name("b")
            self.emit(body, f"{b} = {vv}.encode()" if k == "string" else f"{b} = {vv} if type({vv}) is bytes else _asb({vv})")
            self.emit(body, f"{n} = len({b}) + 1")
            self.emit(body, f"w(_UV1[{n}] if {n} < 128 else _uvb({n}))")
            self.emit(body, f"if {b}: w({b})")
            return
        self.emit(body, f"{n} = len({vv}) + 1")
        self.emit(body, f"w(_UV1[{n}] if {n} < 128 else _uvb({n}))")
        self.enc_elements(f, vv, body, self.sub(path, f.key))

    def enc_elements(self, f: FieldSpec, vv: str, ind: int, path: str) -> None:
        e = f.element
        if e in FIXED_TYPES and e != "uuid":
            pa = self.const(P.array_packer(FIXED_TYPES[e][0]), "_pa")
            self.emit(ind, f"if {vv}: w({pa}[len({vv})](*{vv}))")
            return
        if e == "uuid":
            self.emit(ind, f"if {vv}: w(_uuidab({vv}))")
            return
        if e == "struct":
            plan = self.flat_plan(f.struct)
            if plan is not None and self.flat_encodable(f.struct):
                self.enc_flat_elements(f, plan, vv, ind, path + "[]")
                return
        ev = self.name("e")
        if e != "struct":
            # A str iterates as characters: refuse it (and bytes, dicts) rather than send them.
            self.emit(ind, f"if isinstance({vv}, _notseq): raise TypeError('not a list')")
        self.emit(ind, f"for {ev} in {vv}:")
        if e == "struct":
            self.enc_struct(f.struct, ev, ind + 1, path + "[]")
        else:
            self.enc_field(element_field(f), ev, ind + 1, path + "[]")

    def tagged_encoder(self, f: FieldSpec, path: str) -> str:
        fn = self.name("_te")
        saved = self.begin(f"def {fn}(x):")
        self.emit(1, "out = []")
        self.emit(1, "w = out.append")
        self.enc_field(f, "x", 1, path)
        self.emit(1, "return b''.join(out)")
        self.end(saved)
        return fn

    # -- whole message ------------------------------------------------------------------------------

    def build(self) -> tuple[str, dict, list[dict]]:
        saved = self.begin("def decode(buf, pos):")
        self.emit(1, "end = len(buf)")
        self.dec_struct(self.spec.struct, 1, "d", "")
        self.emit(1, "return d, pos")
        self.end(saved)
        saved = self.begin("def encode(d, w):")
        self.enc_struct(self.spec.struct, "d", 1, "")
        if len(self.cur) == 1:
            self.emit(1, "pass")
        self.end(saved)
        source = "\n\n".join("\n".join(lines) for lines in self.funcs) + "\n"
        return source, self.g, self.tag_tables


class _Late:
    """A generated function referred to before the module defining it has been executed."""

    def __init__(self, name: str) -> None:
        self.name = name


def element_field(f: FieldSpec) -> FieldSpec:
    """The field an array's primitive elements behave as: same compactness, never null."""
    return dataclasses.replace(
        f, kind=f.element, type=f.element, element=None, struct=None,
        nullable=NONE, tagged=NONE, tag=None, flexible=None,
    )


def generate_source(spec: MessageSpec, version: int) -> str:
    """The Python source the codec for (spec, version) runs (for reading and debugging)."""
    return _Gen(spec, version).build()[0]


def compile_codec(spec: MessageSpec, version: int, compiled: bool | None = None) -> Compiled:
    """Generate, exec and return the decode/encode functions for one message version. `compiled`
    says whether arrays of flat structs use the optional compiled runs (shapes.py) where they
    can; None: when they were built (shapes.USE_COMPILED)."""
    source, namespace, tag_tables = _Gen(spec, version, compiled).build()
    code = compile(source, f"<codec {spec.name} v{version}>", "exec")
    exec(code, namespace)
    # Tag tables name their decoder functions; resolve them now that the functions exist.
    for table in tag_tables:
        for tag, (key, late) in list(table.items()):
            table[tag] = (key, namespace[late.name])
    return Compiled(spec, version, namespace["decode"], namespace["encode"], source)
