"""znodes.multiwrite packs a write multi byte for byte as kazoo's Transaction does, and reads
its answer as kazoo does, but for SetData straight into znodes.api.ZnodeStat. (The store's use
of it against a real ZooKeeper is the contract suite's: tests/znodes/test_contract.py.)"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData, Transaction
from kazoo.protocol.states import ZnodeStat as KazooStat
from kazoo.security import ACL, Id, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from znodes.multiwrite import CHECK, CREATE, DELETE, SET_DATA, PackedMulti, pack_ops, read_results
from znodes.store import _stat_by_name

paths = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).map(lambda s: "/" + s)
data = st.binary(max_size=200)
versions = st.integers(min_value=-1, max_value=2**31 - 1)
acls = st.lists(
    st.builds(lambda perms, scheme, ident: ACL(perms, Id(scheme, ident)), st.integers(0, 31),
              st.sampled_from(["world", "digest", "sasl"]), st.text(max_size=20)),
    min_size=1, max_size=3,
)
ops = st.one_of(
    st.builds(lambda p, d, a, f: ((CREATE, p, d, -1, a, f), Create(p, d, a, f)), paths, data, acls, st.integers(0, 3)),
    st.builds(lambda p, v: ((DELETE, p, None, v, None, 0), Delete(p, v)), paths, versions),
    st.builds(lambda p, d, v: ((SET_DATA, p, d, v, None, 0), SetData(p, d, v)), paths, data, versions),
    st.builds(lambda p, v: ((CHECK, p, None, v, None, 0), CheckVersion(p, v)), paths, versions),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=20))
def test_packs_as_kazoos_transaction(pairs):
    ours = pack_ops([mine for mine, _ in pairs])
    assert ours == bytes(Transaction([theirs for _, theirs in pairs]).serialize())
    assert PackedMulti(ours).serialize() == ours and PackedMulti.type == Transaction.type


def test_kazoo_acls_as_the_store_sends_them():
    record = (CREATE, "/a/é", b"x", -1, OPEN_ACL_UNSAFE + READ_ACL_UNSAFE, 3)
    assert pack_ops([record]) == bytes(Transaction([Create("/a/é", b"x", OPEN_ACL_UNSAFE + READ_ACL_UNSAFE, 3)]).serialize())


def test_an_unknown_op_kind_is_refused():
    with pytest.raises(ValueError, match="not a write op kind"):
        pack_ops([(4, "/a", None, 0, None, 0)])


_HEADER = struct.Struct(">iBi")
_STAT = struct.Struct(">qqqqiiiqiiq")


def _answer(*results) -> bytes:
    out = b""
    for kind, payload in results:
        out += _HEADER.pack(kind, 0, 0 if kind != -1 else payload) if kind != -1 else _HEADER.pack(-1, 0, payload)
        if kind == 1:
            raw = payload.encode()
            out += struct.pack(">i", len(raw)) + raw
        elif kind == 5:
            out += _STAT.pack(*payload)
        elif kind == -1:
            out += struct.pack(">i", payload)
    return out + _HEADER.pack(-1, 1, -1)


stats = st.tuples(*(st.integers(-2**63, 2**63 - 1) for _ in range(4)), *(st.integers(-2**31, 2**31 - 1) for _ in range(3)),
                  st.integers(-2**63, 2**63 - 1), *(st.integers(-2**31, 2**31 - 1) for _ in range(2)), st.integers(-2**63, 2**63 - 1))
results = st.one_of(
    st.tuples(st.just(1), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30).map(lambda s: "/" + s)),
    st.tuples(st.just(2), st.none()),
    st.tuples(st.just(5), stats),
    st.tuples(st.just(13), st.none()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(results, max_size=20), st.binary(max_size=8))
def test_reads_answers_as_kazoo_does(answer, prefix):
    body = prefix + _answer(*answer)
    ours = read_results(body, len(prefix))
    theirs = Transaction.deserialize(body, len(prefix))
    assert len(ours) == len(theirs) == len(answer)
    for mine, kazoo_result in zip(ours, theirs):
        if isinstance(kazoo_result, KazooStat):
            assert mine == _stat_by_name(kazoo_result)  # ours, field for field
        else:
            assert mine == kazoo_result  # created path, or True


def test_a_failed_multi_answers_an_error_per_op():
    body = _answer((-1, 0), (-1, BadVersionError.code), (-1, RuntimeInconsistency.code))
    ours = read_results(body, 0)
    assert [type(r) for r in ours] == [RolledBackError, BadVersionError, RuntimeInconsistency]
    assert [type(r) for r in Transaction.deserialize(body, 0)] == [type(r) for r in ours]
    assert type(read_results(_answer((-1, NoNodeError.code)), 0)[0]) is NoNodeError


@pytest.mark.parametrize("body", [
    _HEADER.pack(7, 0, 0) + _HEADER.pack(-1, 1, -1),  # an op type a write multi never answers
    _HEADER.pack(1, 0, 0) + struct.pack(">i", 50) + b"/short" + _HEADER.pack(-1, 1, -1),  # a path past the end
    _HEADER.pack(1, 0, 0) + struct.pack(">i", -2) + _HEADER.pack(-1, 1, -1),  # a negative length
])
def test_malformed_answers_raise_value_error(body):
    with pytest.raises(ValueError, match="multi answer"):
        read_results(body, 0)


@pytest.mark.parametrize("body", [b"", _HEADER.pack(5, 0, 0) + b"\x00" * 10])
def test_truncated_answers_raise(body):
    # kazoo hands any error of deserialize to the request's result; the store maps it
    with pytest.raises(struct.error):
        read_results(body, 0)
