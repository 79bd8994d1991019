"""BatchedWriter: exact jute sizing, chunk planning, and flushes against real ZooKeeper
(and the twin, since the writer only needs the Store contract)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.protocol import serialization as ks
from kazoo.security import OPEN_ACL_UNSAFE

from tests.znodes.test_contract import KazooHarness, TwinHarness
from znodes.api import (
    CONTROLLER_EPOCH_PATH,
    Check,
    Create,
    Delete,
    FencedError,
    MultiOpError,
    NodeExistsError,
    SetData,
)
from znodes.batch import (
    DEFAULT_MAX_REQUEST_BYTES,
    JUTE_MAXBUFFER,
    MAX_OPS_PER_MULTI,
    TXN_EXTRA_PER_MULTI_OP,
    TXN_HEADROOM,
    BatchedWriter,
    FencedFlushError,
    FlushError,
    RequestTooLargeError,
    multi_op_size,
    multi_request_size,
    plan_chunks,
    single_request_size,
)

# ---- pure sizing and planning -------------------------------------------------------------------

names = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xD7FF, blacklist_characters="/\x7f"), min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..") and not any(0x7F <= ord(c) <= 0x9F for c in n)
)
paths = st.lists(names, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
datas = st.binary(max_size=300)
versions = st.integers(-1, 2**31 - 1)
ops_strategy = st.one_of(
    st.builds(Create, paths, datas, st.booleans(), st.booleans()),
    st.builds(SetData, paths, datas, versions),
    st.builds(Delete, paths, versions),
    st.builds(Check, paths, versions),
)
chroots = st.sampled_from(["", "/kafka", "/t_ab12cd/ünï"])


def kazoo_request(op, chroot):
    path = (chroot + op.path) if chroot else op.path
    if isinstance(op, Create):
        return ks.Create(path, op.data, OPEN_ACL_UNSAFE, int(op.ephemeral) | (int(op.sequential) << 1))
    if isinstance(op, SetData):
        return ks.SetData(path, op.data, op.version)
    if isinstance(op, Delete):
        return ks.Delete(path, op.version)
    return ks.CheckVersion(path, op.version)


@given(st.lists(ops_strategy, max_size=8), chroots)
def test_sizes_equal_kazoos_encoding(ops, chroot):
    header = 8  # xid + type, as the connection writes them
    for op in ops:
        assert single_request_size(op, chroot) - TXN_HEADROOM == header + len(kazoo_request(op, chroot).serialize())
    wire = header + len(ks.Transaction([kazoo_request(op, chroot) for op in ops]).serialize())
    assert multi_request_size(ops, chroot) - TXN_HEADROOM - TXN_EXTRA_PER_MULTI_OP * len(ops) == wire


@given(
    st.lists(st.builds(Create, paths, st.binary(max_size=2000)), max_size=60),
    st.integers(3000, 20000),
    st.integers(2, 12),
    st.booleans(),
)
def test_plan_chunks_keeps_order_and_limits_and_fills_greedily(ops, limit, max_ops, fenced):
    chunks = plan_chunks(ops, max_request_bytes=limit, max_ops=max_ops, fenced=fenced)
    assert [op for c in chunks for op in c] == ops
    check = [Check(CONTROLLER_EPOCH_PATH, 0)] if fenced else []
    for n, chunk in enumerate(chunks):
        assert chunk
        assert multi_request_size(check + chunk) <= limit
        assert len(check + chunk) <= max_ops
        if n + 1 < len(chunks):  # it closed only because the next op did not fit
            nxt = chunks[n + 1][0]
            assert multi_request_size(check + chunk + [nxt]) > limit or len(check + chunk) + 1 > max_ops


def test_op_too_large_is_refused_before_queueing():
    writer = BatchedWriter(TwinHarness().server.connect())
    too_big = Create("/big", b"x" * DEFAULT_MAX_REQUEST_BYTES)
    with pytest.raises(RequestTooLargeError) as e:
        writer.add(too_big)
    assert "/big" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(RequestTooLargeError):
        writer.extend([Create("/fine"), too_big])
    assert len(writer) == 0
    with pytest.raises(RequestTooLargeError):
        plan_chunks([Create("/a"), Create("/b", b"x" * JUTE_MAXBUFFER)])


def test_fenced_chunks_leave_room_for_the_check():
    ops = [Create(f"/n{i}") for i in range(10)]
    assert [len(c) for c in plan_chunks(ops, max_ops=5)] == [5, 5]
    assert [len(c) for c in plan_chunks(ops, max_ops=5, fenced=True)] == [4, 4, 2]
    one_op = multi_op_size(ops[0])
    limit = multi_request_size(ops[:3])
    assert [len(c) for c in plan_chunks(ops[:3], max_request_bytes=limit)] == [3]
    assert [len(c) for c in plan_chunks(ops[:3], max_request_bytes=limit, fenced=True)] == [2, 1]
    assert one_op > 0


def test_writer_rejects_bad_limits():
    store = TwinHarness().server.connect()
    with pytest.raises(ValueError):
        BatchedWriter(store, max_request_bytes=JUTE_MAXBUFFER + 1)
    with pytest.raises(ValueError):
        BatchedWriter(store, max_request_bytes=0)
    with pytest.raises(ValueError):
        BatchedWriter(store, max_ops=1)


def test_chroot_counts_toward_size():
    ops = [Create("/n", b"x")]
    assert multi_request_size(ops, "/kafka") == multi_request_size(ops) + len("/kafka")
    assert multi_op_size(Create("/", b""), "/kafka") == multi_op_size(Create("/kafka", b""))


# ---- flushing through a store ----------------------------------------------------------------------


@pytest.fixture(params=["kazoo", "twin"])
async def h(request):
    if request.param == "kazoo":
        harness = KazooHarness(request.getfixturevalue("zk_server").connect_string, request.getfixturevalue("zk_chroot"))
    else:
        harness = TwinHarness()
    harness.store = await harness.new_store()
    try:
        yield harness
    finally:
        await harness.close()


async def test_flush_writes_everything_in_order_across_chunks(h):
    store = h.store
    await store.create("/w")
    writer = BatchedWriter(store)
    writer.extend(Create(f"/w/n{i:05d}", str(i).encode()) for i in range(2500))
    writer.add(SetData("/w/n00000", b"updated"))
    writer.add(Create("/w/seq-", sequential=True))
    assert [len(c) for c in writer.chunks()] == [1000, 1000, 502]
    results = await writer.flush()
    assert len(writer) == 0
    assert results[:2500] == [f"/w/n{i:05d}" for i in range(2500)]
    assert results[2500].version == 1
    assert results[2501] == "/w/seq-0000002500"
    assert len(await store.children("/w")) == 2501
    # each chunk is one transaction
    czxids = {(await store.exists(f"/w/n{i:05d}")).czxid for i in (0, 999, 1000, 1999, 2000, 2499)}
    assert len(czxids) == 3


async def test_flush_of_nothing_sends_nothing(h):
    assert await BatchedWriter(h.store).flush() == []
    assert await BatchedWriter(h.store).flush(epoch_zkversion=0) == []


async def test_chunks_near_the_byte_limit_are_accepted(h):
    store = h.store
    writer = BatchedWriter(store)
    blob = b"b" * 400_000
    writer.extend([Create("/a", blob), Create("/b", blob), Create("/c", blob)])
    assert [len(c) for c in writer.chunks()] == [2, 1]
    assert await writer.flush() == ["/a", "/b", "/c"]
    assert (await store.get("/c"))[0] == blob


async def test_failing_op_stops_the_flush_with_a_global_index(h):
    store = h.store
    await store.create("/w")
    await store.create("/w/n01200")
    writer = BatchedWriter(store)
    ops = [Create(f"/w/n{i:05d}") for i in range(1500)]
    writer.extend(ops)
    with pytest.raises(FlushError) as e:
        await writer.flush()
    err = e.value
    assert err.index == 1200
    assert isinstance(err.cause, MultiOpError) and isinstance(err.cause.cause, NodeExistsError)
    assert err.cause.index == 1200
    assert err.applied == 1000 and err.results == [op.path for op in ops[:1000]]
    assert err.unsent == ops[1000:] and err.in_doubt == []
    assert len(writer) == 0
    assert len(await store.children("/w")) == 1001  # first chunk + the pre-existing node


async def test_fenced_flush_checks_the_epoch_in_every_chunk(h):
    store = h.store
    await store.create(CONTROLLER_EPOCH_PATH, b"1")
    epoch = (await store.exists(CONTROLLER_EPOCH_PATH)).version
    rival = await h.new_store()

    class RivalElectedAfterFirstChunk:
        """The real store; a rival controller takes over right after the first chunk lands."""

        chroot = getattr(store, "chroot", "")

        def __init__(self):
            self.chunks = 0

        async def fenced_multi(self, ops, epoch_zkversion):
            result = await store.fenced_multi(ops, epoch_zkversion)
            self.chunks += 1
            if self.chunks == 1:
                await rival.set(CONTROLLER_EPOCH_PATH, b"2")
            return result

        async def multi(self, ops):
            raise AssertionError("a fenced flush must not send an unfenced multi")

    writer = BatchedWriter(RivalElectedAfterFirstChunk(), max_ops=100)
    ops = [Create(f"/n{i:03d}") for i in range(250)]
    writer.extend(ops)
    with pytest.raises(FencedFlushError) as e:
        await writer.flush(epoch_zkversion=epoch)
    assert isinstance(e.value, FencedError) and isinstance(e.value, FlushError)
    assert e.value.applied == 99  # one slot of each chunk holds the check
    assert e.value.unsent == ops[99:]
    names = await store.children("/")
    assert sum(n.startswith("n") for n in names) == 99


def test_malformed_ops_are_refused_before_queueing():
    writer = BatchedWriter(TwinHarness().server.connect())
    for bad in (Create("/bad//path"), Create("relative"), SetData("/a", "text"), Delete("/a", -2), "op"):
        with pytest.raises((ValueError, TypeError)):
            writer.add(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        writer.extend([Create("/fine"), Create("/x/")])
    assert len(writer) == 0
    writer.add(Create("/q/", sequential=True))  # a sequential name may end in "/"
    assert len(writer) == 1


async def test_connection_loss_marks_the_chunk_in_flight_as_in_doubt():
    from znodes.twin import FaultMode

    harness = TwinHarness()
    store = await harness.new_store()
    # the 2nd write request (the 2nd chunk) is applied but its reply is lost
    harness.server.fail_after(2, store=store, mode=FaultMode.REPLY_LOST)
    writer = BatchedWriter(store, max_ops=MAX_OPS_PER_MULTI)
    ops = [Create(f"/n{i:04d}") for i in range(2100)]
    writer.extend(ops)
    with pytest.raises(FlushError) as e:
        await writer.flush()
    assert e.value.applied == 1000
    assert e.value.in_doubt == ops[1000:2000]
    assert e.value.unsent == ops[2000:]
    harness.server.reconnect(store.session_id)
    assert len(await store.children("/")) == 2000  # the in-doubt chunk did land
    await harness.close()


@given(st.text(st.sampled_from("/.a-_Z9\x00\x1f\x7f\u00e9\ue000\U0001f600 "), max_size=12), st.booleans())
def test_fast_path_check_agrees_with_full_validation(path, sequential):
    from znodes.batch import check_path
    from znodes.paths import validate_path

    def verdict(fn):
        try:
            fn(path, sequential=sequential)
            return "ok"
        except (ValueError, TypeError) as e:
            return type(e).__name__

    assert verdict(check_path) == verdict(validate_path)
