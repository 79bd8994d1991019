"""RecordIds (controller.shell.journal) and a BatchedWriter's checked chunks: adding a move's door
to its record writes keeps the chunk checked (the store does not check every op of it again)
while the grown chunk still fits ZooKeeper's request limit, and hands a chunk that no longer
fits to the store as a plain list, which the store checks and refuses whole."""

from __future__ import annotations

import asyncio

import pytest

from controller.shell.journal import ALTER_PARTITION_REASSIGNMENTS, MoveJournal, RecordIds
from znodes import paths
from znodes.api import Create, SetData
from znodes.batch import JUTE_MAXBUFFER, CheckedChunk, multi_request_size


class _Seen:
    """A store that records what fenced_multi was given."""

    def __init__(self):
        self.given = []

    async def fenced_multi(self, ops, epoch_zkversion):
        self.given.append(ops)
        return [None] * len(ops)

    async def exists(self, path, watch=False):
        return None  # RecordIds looks a created record's czxid up when no stat came back


def _journal_with_door(tp) -> MoveJournal:
    journal = MoveJournal()
    journal._doors[tp] = ALTER_PARTITION_REASSIGNMENTS
    return journal


def _chunk(ops, size):
    return CheckedChunk(ops, size)


def test_a_chunk_with_doors_added_stays_checked_with_its_new_size():
    tp = ("t", 0)
    ops = [Create(paths.reassignment(*tp), b'{"version":1}'), SetData(paths.partition_state(*tp), b"{}", 3)]
    planned = multi_request_size(ops)
    inner = _Seen()
    asyncio.run(RecordIds(inner, _journal_with_door(tp)).fenced_multi(_chunk(ops, planned), 0))
    (given,) = inner.given
    assert type(given) is CheckedChunk
    assert given[0].data == b'{"version":1,"door":"AlterPartitionReassignments"}'
    assert given.size == planned + len(given[0].data) - len(ops[0].data) == multi_request_size(list(given))


def test_a_chunk_the_doors_push_over_the_limit_goes_as_a_plain_list():
    tp = ("t", 0)
    ops = [Create(paths.reassignment(*tp), b'{"version":1}')]
    inner = _Seen()
    asyncio.run(RecordIds(inner, _journal_with_door(tp)).fenced_multi(_chunk(ops, JUTE_MAXBUFFER - 5), 0))
    (given,) = inner.given
    assert type(given) is list  # the store checks it and refuses it whole


@pytest.mark.parametrize("size", [None, 100])
def test_chunks_without_a_door_or_a_size_pass_as_they_came(size):
    ops = _chunk([Create(paths.reassignment("t", 0), b'{"version":1}')], size)
    inner = _Seen()
    asyncio.run(RecordIds(inner, MoveJournal()).fenced_multi(ops, 0))  # no door known
    assert inner.given == [ops] and inner.given[0] is ops
    inner = _Seen()
    asyncio.run(RecordIds(inner, _journal_with_door(("t", 0))).fenced_multi(ops, 0))
    assert (type(inner.given[0]) is CheckedChunk) == (size is not None)
