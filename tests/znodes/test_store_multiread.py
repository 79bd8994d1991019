"""KazooStore.get_many: ZooKeeper 3.6+ multiRead, many gets per request, on a real server."""

from __future__ import annotations

import pytest

from znodes import store as store_module
from znodes.api import Create
from znodes.batch import BatchedWriter
from znodes.store import connect


async def test_get_many_matches_single_gets_in_order_with_none_for_missing(zk_hosts, monkeypatch):
    # Small requests, so that several multiReads are in flight at once and stitched in order.
    monkeypatch.setattr(store_module, "MULTI_READ_MAX_PATHS", 7)
    store = await connect(zk_hosts)
    try:
        writer = BatchedWriter(store)
        writer.add(Create("/m"))
        writer.extend(Create(f"/m/n{i}", f"value {i}".encode() * (i % 3)) for i in range(40))
        await writer.flush()
        await store.set("/m/n5", b"changed")
        wanted = [f"/m/n{i}" for i in range(39, -1, -1)]
        missing = ["/m/absent", "/nowhere/at/all"]
        wanted[3:3] = missing
        many = await store.get_many(wanted)
        assert len(many) == len(wanted)
        for path, got in zip(wanted, many):
            if path in missing:
                assert got is None, path
                continue
            data, stat = await store.get(path)
            assert got == (data, stat), path
        assert many[wanted.index("/m/n5")][1].version == 1
        assert many[wanted.index("/m/n5")][0] == b"changed"
        assert await store.get_many([]) == []
    finally:
        await store.close()


async def test_get_many_reads_inside_the_chroot_and_the_chroot_itself(zk_hosts):
    store = await connect(zk_hosts)
    try:
        await store.create("/x", b"inside")
        (x, _), root = await store.get_many(["/x", "/"])
        assert x == b"inside"
        assert root is not None and root[1].num_children >= 1
    finally:
        await store.close()


async def test_get_many_refuses_a_bad_path_before_sending_anything(zk_hosts):
    store = await connect(zk_hosts)
    try:
        with pytest.raises(ValueError):
            await store.get_many(["/ok", "no-leading-slash"])
        with pytest.raises(ValueError):
            await store.get_many(["/trailing/"])
    finally:
        await store.close()


async def test_a_writers_checked_chunks_skip_rechecks_but_keep_the_fence(zk_hosts):
    from znodes.api import FencedError
    from znodes.batch import CheckedChunk

    store = await connect(zk_hosts, create_chroot=True)
    try:
        await store.create("/controller_epoch", b"1")
        seen = []
        real = store.fenced_multi

        async def spy(ops, epoch_zkversion):
            seen.append(type(ops))
            return await real(ops, epoch_zkversion)

        store.fenced_multi = spy
        writer = BatchedWriter(store, max_ops=3)
        writer.extend(Create(f"/c{i}", b"x") for i in range(5))
        assert len(await writer.flush(0)) == 5
        assert seen and all(t is CheckedChunk for t in seen)
        assert await store.children("/") == sorted(["controller_epoch"] + [f"c{i}" for i in range(5)])
        writer.add(Create("/late", b"x"))
        with pytest.raises(FencedError):
            await writer.flush(7)  # a stale epoch zkVersion: nothing lands
        assert await store.exists("/late") is None
        with pytest.raises(ValueError):
            await real(CheckedChunk([Create("/bad-version", b"")]), -2)
        assert await store.exists("/bad-version") is None
    finally:
        await store.close()
