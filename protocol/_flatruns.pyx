# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled run functions for arrays of flat structs: the OPTIONAL build (`make codec-compiled`).

shapes.py generates, per (array site, shape), a Python run function that decodes or encodes a
run of same-shaped elements; this module does the same work in C for the shapes it can take
(fixed-width integers, bool and uuid, arrays of integers, strings and bytes; every field present
in the version). The layout it is given is the one shapes.py computed for that shape: the byte
offset of every field in an element, and the bytes every length prefix (and the tagged-field
count) must hold. Whatever it is not sure of - an element of another shape, a value of another
type or out of range, a missing key, a tagged field - ends the run exactly where the Python run
would end it, and the field-by-field path takes that element, so the results are the same bytes
and the same dicts (tests/protocol/test_codec_compiled.py checks both ways against the pure path).

Nothing imports this module unless it was built; the pure-Python runs are the default install.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.string cimport memcpy

import uuid as _uuid_module

# A flat struct with more fields or length bytes than these (none in Kafka's specs comes close)
# stays in Python.
cdef enum:
    MAX_FIELDS = 32
    MAX_CHECKS = 256
    FIXED = 0
    ARRAY = 1
    BLOB = 2
    UUID = 3

cdef object _UUID = _uuid_module.UUID


cdef inline unsigned long long _be(const unsigned char* p, int width) noexcept nogil:
    cdef unsigned long long v = 0
    cdef int i
    for i in range(width):
        v = (v << 8) | p[i]
    return v


cdef inline int _width(char code) noexcept nogil:
    if code == b'q':
        return 8
    if code == b'i' or code == b'I':
        return 4
    if code == b'h' or code == b'H':
        return 2
    return 1


cdef inline object _read(const unsigned char* p, char code):
    """One big-endian value as struct's code reads it."""
    cdef unsigned long long u = _be(p, _width(code))
    if code == b'i':
        return PyLong_FromLongLong(<int> <unsigned int> u)
    if code == b'q':
        return PyLong_FromLongLong(<long long> u)
    if code == b'h':
        return PyLong_FromLongLong(<short> <unsigned short> u)
    if code == b'b':
        return PyLong_FromLongLong(<signed char> <unsigned char> u)
    if code == b'?':
        return u != 0
    return PyLong_FromUnsignedLongLong(u)  # B, H, I


cdef inline bint _fits(long long v, char code) noexcept nogil:
    if code == b'i':
        return -2147483648 <= v <= 2147483647
    if code == b'h':
        return -32768 <= v <= 32767
    if code == b'b':
        return -128 <= v <= 127
    if code == b'B':
        return 0 <= v <= 255
    if code == b'H':
        return 0 <= v <= 65535
    if code == b'I':
        return 0 <= v <= 4294967295LL
    return True  # q: PyLong_AsLongLongAndOverflow already said it fits


cdef inline void _put_be(unsigned char* p, unsigned long long v, int width) noexcept nogil:
    cdef int i
    for i in range(width - 1, -1, -1):
        p[i] = v & 0xFF
        v >>= 8


cdef inline bint _put_int(object x, unsigned char* p, char code):
    """Write int `x` as struct's code would, or say no (another type, out of range)."""
    cdef int overflow = 0
    cdef long long v
    if code == b'?':
        if type(x) is bool:
            p[0] = 1 if x is True else 0
            return True
        return False
    if type(x) is not int:
        return False
    v = PyLong_AsLongLongAndOverflow(x, &overflow)
    if overflow or not _fits(v, code):
        return False
    _put_be(p, <unsigned long long> v, _width(code))
    return True


cdef class Layout:
    """One flat struct's fields at one shape: what a run reads and writes, at which offsets."""

    cdef int nfields
    cdef int kind[MAX_FIELDS]
    cdef char code[MAX_FIELDS]
    cdef Py_ssize_t offset[MAX_FIELDS]
    cdef Py_ssize_t count[MAX_FIELDS]  # array elements or blob bytes; -1 = null
    cdef bint string[MAX_FIELDS]
    cdef object keys  # tuple, in the order a decoded dict holds them
    cdef int ncheck
    cdef Py_ssize_t check_offset[MAX_CHECKS]
    cdef unsigned char check_byte[MAX_CHECKS]
    cdef Py_ssize_t size
    cdef bint strict_keys
    cdef object unknown_key

    def __init__(self, fields, checks, Py_ssize_t size, bint strict_keys=False, unknown_key="_unknown_tagged_fields"):
        """fields: (key, kind, code, offset, count, string) in dict order, kind one of "fixed",
        "array", "blob", "uuid"; checks: (offset, byte) every element must hold."""
        if len(fields) > MAX_FIELDS or len(checks) > MAX_CHECKS:
            raise ValueError("layout too large for the compiled runs")
        kinds = {"fixed": FIXED, "array": ARRAY, "blob": BLOB, "uuid": UUID}
        self.nfields = len(fields)
        keys = []
        for j, (key, kind, code, offset, count, string) in enumerate(fields):
            keys.append(key)
            self.kind[j] = kinds[kind]
            self.code[j] = ord(code) if code else 0
            self.offset[j] = offset
            self.count[j] = count
            self.string[j] = string
        self.keys = tuple(keys)
        self.ncheck = len(checks)
        for c, (offset, byte) in enumerate(checks):
            self.check_offset[c] = offset
            self.check_byte[c] = byte
        self.size = size
        self.strict_keys = strict_keys
        self.unknown_key = unknown_key

    def decode(self, bytes buf not None, Py_ssize_t pos, Py_ssize_t count, list lst not None):
        """As a Python decode run: (elements taken, new pos)."""
        cdef const unsigned char* base = <const unsigned char*> PyBytes_AS_STRING(buf)
        cdef Py_ssize_t end = PyBytes_GET_SIZE(buf)
        cdef Py_ssize_t k = 0, m, n, w
        cdef const unsigned char* p
        cdef const unsigned char* q
        cdef int c, j
        cdef dict d
        cdef list arr
        cdef object v
        while k < count and pos + self.size <= end:
            p = base + pos
            for c in range(self.ncheck):
                if p[self.check_offset[c]] != self.check_byte[c]:
                    return k, pos
            d = {}
            for j in range(self.nfields):
                q = p + self.offset[j]
                n = self.count[j]
                if self.kind[j] == FIXED:
                    v = _read(q, self.code[j])
                elif n < 0:
                    v = None
                elif self.kind[j] == ARRAY:
                    w = _width(self.code[j])
                    arr = PyList_New(n)
                    for m in range(n):
                        v = _read(q + m * w, self.code[j])
                        Py_INCREF(v)
                        PyList_SET_ITEM(arr, m, v)
                    v = arr
                elif self.kind[j] == BLOB:
                    if self.string[j]:
                        v = PyUnicode_DecodeUTF8(<const char*> q, n, NULL)
                    else:
                        v = PyBytes_FromStringAndSize(<const char*> q, n)
                else:  # UUID
                    v = _uuid_from(PyBytes_FromStringAndSize(<const char*> q, 16))
                PyDict_SetItem(d, self.keys[j], v)
            lst.append(d)
            pos += self.size
            k += 1
        return k, pos

    def encode(self, v, Py_ssize_t i, w):
        """As a Python encode run: elements v[i], v[i+1], ... of this shape, their bytes passed
        to `w` in one piece; returns how many it took."""
        cdef Py_ssize_t total = len(v) - i
        cdef Py_ssize_t k = 0
        cdef unsigned char* base
        if total <= 0:
            return 0
        out = bytearray(total * self.size)
        base = <unsigned char*> (<char*> out)
        for e in v[i:]:
            if not self._put(e, base + k * self.size):
                break
            k += 1
        if k:
            w(PyBytes_FromStringAndSize(<const char*> base, k * self.size))
        return k

    cdef bint _put(self, object e, unsigned char* p) except -1:
        cdef int c, j
        cdef Py_ssize_t m, n, length
        cdef PyObject* found
        cdef object x, item
        cdef const char* data
        cdef int width
        if type(e) is not dict:
            return False
        if self.strict_keys:
            if len(<dict> e) != self.nfields:
                return False
        elif PyDict_GetItem(e, self.unknown_key) is not NULL:
            return False
        for j in range(self.nfields):
            found = PyDict_GetItem(e, self.keys[j])
            if found is NULL:
                return False
            x = <object> found
            n = self.count[j]
            if self.kind[j] == FIXED:
                if not _put_int(x, p + self.offset[j], self.code[j]):
                    return False
            elif self.kind[j] == ARRAY:
                if (type(x) is not list and type(x) is not tuple) or len(x) != n:
                    return False
                width = _width(self.code[j])
                for m in range(n):
                    item = x[m]
                    if not _put_int(item, p + self.offset[j] + m * width, self.code[j]):
                        return False
            elif self.kind[j] == BLOB:
                if self.string[j]:
                    if type(x) is not str:
                        return False
                    try:
                        data = PyUnicode_AsUTF8AndSize(x, &length)
                    except UnicodeEncodeError:
                        return False  # the field-by-field path says why
                else:
                    if type(x) is not bytes:
                        return False
                    data = PyBytes_AS_STRING(x)
                    length = PyBytes_GET_SIZE(x)
                if length != n:
                    return False
                memcpy(p + self.offset[j], data, n)
            else:  # UUID
                if type(x) is not _UUID:
                    return False
                memcpy(p + self.offset[j], PyBytes_AS_STRING(x.bytes), 16)
        for c in range(self.ncheck):
            p[self.check_offset[c]] = self.check_byte[c]
        return True


cdef object _uuid_from = None


def set_uuid_reader(fn):
    """The function a decoded uuid goes through (primitives.uuid_from_bytes), as in Python runs."""
    global _uuid_from
    _uuid_from = fn
