"""controller.shell.metadata_reads: a full UpdateMetadata send's next chunk is read while the
loop handles what came before it, and the chunk's step uses that read; a new send (a reload)
or the end of the term drops it."""

from __future__ import annotations

import asyncio

import pytest

from controller.core import full_metadata
from controller.shell.metadata_reads import ChunkReads
from znodes import paths
from znodes.payloads import encode_state
from znodes.reads import get_or_none
from znodes.twin import TwinServer
from znodes.values import LeaderIsr

PARTITIONS = [("t", p) for p in range(7)]


class CountingTwin:
    """A twin store that records which partition states each multiRead asked for."""

    def __init__(self, inner):
        self.inner = inner
        self.asked: list[list[str]] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def get_many(self, path_list):
        path_list = list(path_list)
        self.asked.append(path_list)
        return [await get_or_none(self.inner, path) for path in path_list]


@pytest.fixture
def twin(monkeypatch):
    monkeypatch.setattr(full_metadata, "CHUNK", 3)
    return TwinServer().connect()


async def _with_states(store) -> CountingTwin:
    for t, p in PARTITIONS:
        await store.create(paths.partition_state(t, p), encode_state(LeaderIsr(1, 0, 1, (1, 2), 0)), makepath=True)
    return CountingTwin(store)


def _partitions(asked):
    return [paths.classify(path).partition for path in asked]


async def test_the_next_chunk_is_read_ahead_and_used(twin):
    store = await _with_states(twin)
    planner, reads = full_metadata.Planner(), ChunkReads(store)
    item = planner.everyone(PARTITIONS)
    chunk, rest = planner.take(item)
    states, _ = await reads.read(item, chunk, rest, planner.peek(rest))
    assert sorted(states) == PARTITIONS[:3]
    await asyncio.sleep(0)  # the loop handles other events: the read ahead goes out
    assert [_partitions(a) for a in store.asked] == [[0, 1, 2], [3, 4, 5]]
    assert reads.pending
    chunk, rest2 = planner.take(rest)
    states, _ = await reads.read(rest, chunk, rest2, planner.peek(rest2))
    assert sorted(states) == PARTITIONS[3:6]
    await asyncio.sleep(0)
    # Chunk 2 came from the read made ahead; chunk 3's read is the one made ahead now.
    assert [_partitions(a) for a in store.asked] == [[0, 1, 2], [3, 4, 5], [6]]
    chunk, rest3 = planner.take(rest2)
    states, _ = await reads.read(rest2, chunk, rest3, planner.peek(rest3))
    assert sorted(states) == PARTITIONS[6:] and rest3 is None
    assert not reads.pending and len(store.asked) == 3


async def test_a_new_send_drops_the_read_ahead(twin):
    store = await _with_states(twin)
    planner, reads = full_metadata.Planner(), ChunkReads(store)
    item = planner.everyone(PARTITIONS)
    chunk, rest = planner.take(item)
    await reads.read(item, chunk, rest, planner.peek(rest))
    # A reload: a new generation, whose first chunk is read now (not the old send's read ahead).
    reads.cancel()
    again = planner.everyone(PARTITIONS)
    assert planner.take(rest) == ((), None)  # the old send's rest is dropped
    chunk, rest = planner.take(again)
    states, _ = await reads.read(again, chunk, rest, planner.peek(rest))
    assert sorted(states) == PARTITIONS[:3]
    await asyncio.sleep(0)
    assert [_partitions(a) for a in store.asked][-2:] == [[0, 1, 2], [3, 4, 5]]


async def test_a_failed_read_ahead_fails_where_its_chunk_is_taken(twin):
    store = await _with_states(twin)
    planner, reads = full_metadata.Planner(), ChunkReads(store)
    item = planner.everyone(PARTITIONS)
    chunk, rest = planner.take(item)

    async def broken(path_list):
        raise ConnectionError("gone")

    await reads.read(item, chunk, rest, planner.peek(rest))
    store.get_many = broken  # the read ahead starts at the loop's next turn: it meets this
    await asyncio.sleep(0)
    chunk, rest2 = planner.take(rest)
    with pytest.raises(ConnectionError):
        await reads.read(rest, chunk, rest2, planner.peek(rest2))
    reads.cancel()


async def test_another_send_at_the_same_offset_is_read_for_itself(twin):
    # Two new topics' sends of one generation, each in chunks: the second's chunk at the offset
    # the first's read ahead is for must not be given the first's states.
    store = await _with_states(twin)
    planner, reads = full_metadata.Planner(), ChunkReads(store)
    first = planner.new_partitions(PARTITIONS[:6])
    second = planner.new_partitions([PARTITIONS[6], *PARTITIONS[:5]])
    chunk, rest = planner.take(first)
    await reads.read(first, chunk, rest, planner.peek(rest))  # reads [3, 4, 5] ahead
    later = planner.take(second)[1]  # the second send at offset 3 (its first chunk sent)
    chunk, rest2 = planner.take(later)
    assert later.offset == rest.offset and chunk == (PARTITIONS[2], PARTITIONS[3], PARTITIONS[4])
    states, _ = await reads.read(later, chunk, rest2, planner.peek(rest2))
    assert sorted(states) == sorted(chunk)
