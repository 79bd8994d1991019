"""The full UpdateMetadata's chunk reads, one chunk ahead (controller.core.full_metadata step 3).

The loop reads a chunk's partition states when it takes the chunk, and whatever arrives
meanwhile waits for that read: after a failover, the resumed moves' ISR notifications waited
for a ZooKeeper round trip of a chunk at every step. Here the next chunk's read starts as soon
as the current chunk is taken, in the background, so that by the time the loop takes the next
chunk its states are usually in: the loop waits for ZooKeeper about once per send, not once per
chunk.

A state read ahead can be older than one the controller learnt between the read and the chunk's
step (its own write, a leader's ISR notification). The engine already settles that by zkVersion
(controller.core.replica_sync.on_metadata: a newer state held wins, as for any read that crosses
a write), and every write decided from a state is conditional on its zkVersion.

    reads = ChunkReads(store)
    chunk, rest = planner.take(item)
    states, lines = await reads.read(item, chunk, rest, planner.peek(rest))
    ...
    reads.cancel()       # the term ends, or a reload starts a new send
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from controller.core.full_metadata import MetadataDue
from controller.shell.zkread import read_states
from znodes.api import Store
from znodes.values import LeaderIsr, TopicPartition

StatesAndLines = tuple[dict[TopicPartition, LeaderIsr | None], list[str]]


def _key(item: MetadataDue, chunk: Sequence[TopicPartition]) -> tuple:
    # The partitions themselves too: two sends of one generation (two new topics' partitions,
    # each in several chunks) can have a chunk at the same offset for the same brokers.
    return item.generation, item.offset, item.brokers, tuple(chunk)


class ChunkReads:
    """At most one read ahead: the next chunk of the send whose chunk was taken last."""

    def __init__(self, store: Store):
        self.store = store
        self._ahead: tuple[tuple, asyncio.Task] | None = None

    async def read(self, item: MetadataDue, chunk: Sequence[TopicPartition], rest: MetadataDue | None,
                   upcoming: Sequence[TopicPartition]) -> StatesAndLines:
        """The states of ``chunk`` (``item``'s partitions taken now): the read made ahead for it
        if there is one, else read now. Starts the read of ``upcoming`` (``rest``'s next chunk)."""
        ahead, self._ahead = self._ahead, None
        task = None
        if ahead is not None:
            if ahead[0] == _key(item, chunk):
                task = ahead[1]
            else:
                ahead[1].cancel()  # another send's chunk came first: read that one again later
        if rest is not None and upcoming:
            self._ahead = (_key(rest, upcoming), _start(read_states(self.store, upcoming)))
        if task is None:
            return await read_states(self.store, chunk)
        return await task

    def cancel(self) -> None:
        """Drop the read ahead (the term is over, or a reload plans a new send)."""
        if self._ahead is not None:
            self._ahead[1].cancel()
            self._ahead = None

    @property
    def pending(self) -> bool:
        return self._ahead is not None


def _start(read) -> asyncio.Task:
    task = asyncio.ensure_future(read)
    # A read ahead that failed and is dropped unused must not warn "exception never retrieved";
    # one that is used raises its error where the chunk is taken, as a read made then would.
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task
