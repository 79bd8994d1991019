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


def test_only_record_writes_of_moves_with_a_door_get_it_and_created_records_get_ids():
    from controller.shell.journal import QUEUE, RECOVERED
    from znodes.api import Delete, ZnodeStat

    class _Stats(_Seen):
        async def fenced_multi(self, ops, epoch_zkversion):
            self.given.append(ops)
            stat = ZnodeStat(czxid=1, mzxid=77, pzxid=77, ctime=0, mtime=0, version=1, cversion=0, aversion=0,
                             ephemeral_owner=0, data_length=0, num_children=0)
            return [stat if type(op) is SetData else op.path for op in ops]

    journal = MoveJournal()
    journal._doors.update({("t", 0): ALTER_PARTITION_REASSIGNMENTS, ("t", 1): QUEUE, ("t", 2): RECOVERED,
                           ("u/v", 3): QUEUE})
    record = b'{"version":1}'
    ops = [
        Create(paths.reassignment("t", 0), record),           # a door: gets it
        SetData(paths.reassignment("t", 1), record, 4),        # a door: gets it
        SetData(paths.partition_state("t", 1), b"{}", 3),      # not a record
        Create(f"{paths.REASSIGNMENTS}/t", b""),               # a topic's parent: no partition
        Create(paths.reassignment("t", 2), record),           # recovered: written without one
        Create(paths.reassignment("t", 9), record),           # no door known
        Delete(paths.reassignment("t", 1), -1),                # a delete carries no data
    ]
    inner = _Stats()
    asyncio.run(RecordIds(inner, journal).fenced_multi(ops, 0))
    (given,) = inner.given
    assert given[0].data == b'{"version":1,"door":"AlterPartitionReassignments"}'
    assert given[1].data == b'{"version":1,"door":"queue"}' and given[1].version == 4
    assert [op for i, op in enumerate(given) if i > 1] == ops[2:]
    # every record the multi created has the multi's zxid as its reassignment_id
    assert journal.ids == {("t", 0): 77, ("t", 2): 77, ("t", 9): 77}
