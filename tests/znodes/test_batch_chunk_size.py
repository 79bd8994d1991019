"""BatchedWriter's chunks carry their planned size (znodes.batch.CheckedChunk.size): the multi's
request size with the epoch check when fenced, what a store wrapper changing an op's data
(controller.shell.journal.RecordIds) adds to before deciding whether the chunk still fits."""

from __future__ import annotations

import asyncio

from znodes.api import CONTROLLER_EPOCH_PATH, Check, Create, Delete, SetData
from znodes.batch import BatchedWriter, CheckedChunk, multi_request_size


class _Seen:
    chroot = "/kafka"

    def __init__(self):
        self.given = []

    async def fenced_multi(self, ops, epoch_zkversion):
        self.given.append(ops)
        return [None] * len(ops)

    async def multi(self, ops):
        self.given.append(ops)
        return [None] * len(ops)


def test_each_chunk_carries_its_planned_size():
    store = _Seen()
    writer = BatchedWriter(store, max_ops=50)
    ops = [op for i in range(120) for op in (
        Create(f"/a/n{i}", b"x" * i), SetData(f"/b/n{i}", b"y" * (i % 7), i), Delete(f"/c/n{i}", -1))]
    writer.extend(ops)
    asyncio.run(writer.flush(epoch_zkversion=3))
    assert sum(len(c) for c in store.given) == len(ops) and len(store.given) > 1
    for chunk in store.given:
        assert type(chunk) is CheckedChunk
        assert chunk.size == multi_request_size([Check(CONTROLLER_EPOCH_PATH, 3), *chunk], "/kafka")
    store.given.clear()
    writer.extend(ops[:10])
    asyncio.run(writer.flush())  # unfenced: no check in the size
    (chunk,) = store.given
    assert chunk.size == multi_request_size(list(chunk), "/kafka")


def test_the_plain_op_fast_path_sizes_as_check_op_and_multi_op_size_do():
    """Ops the writer sizes on sight (znodes.batch._plain_op_size) get multi_op_size's size;
    anything check_op would refuse, or would need a closer look at, goes the long way."""
    from znodes import batch

    paths = ["/a", "/brokers/topics/t/partitions/3/state", "/x/../y", "/x/./y", "/x/", "/é", "/a b", "", "a", "/",
             "/a/.b", "/a/..c", None, 5]
    datas = [b"", b"abc", "str", None, bytearray(b"x")]
    versions = [-2, -1, 0, 5, True, 1.0, "1", None]
    taken = 0
    for chroot in ("", "/chroot", "/ch/é"):
        for path in paths:
            for data in datas:
                for version in versions:
                    for op in (Create(path, data), Create(path, data, sequential=True), SetData(path, data, version),
                               Delete(path, version), Check(path, version)):
                        fast = batch._plain_op_size(op, len(chroot.encode()))
                        if fast is None:
                            continue
                        taken += 1
                        batch.check_op(op)  # accepted
                        assert fast == batch.multi_op_size(op, chroot), op
    assert taken > 50
    assert batch._plain_op_size("not an op", 0) is None
