"""A step's flush that failed only because a partition state it wrote had changed meanwhile.

The controller decides from the partition states it holds, kept fresh by the leaders' ISR
change notifications (docs/DESIGN.md 4.2). A notification comes a moment after the leader's
write of the state znode, so a step can decide from a state the leader has already replaced;
its conditional state write (on the zkVersion decided from) then fails the whole multi, and
nothing of the step lands. Kafka's controller, on a failed conditional update (BADVERSION),
reads that partition's state again and retries (``PartitionStateMachine``'s
``partitionsToRetry``, ``KafkaController.updateLeaderEpoch``); so does this one: the shell reads
the states the step wrote and takes the same step again with them (controller.shell.active).
A full reload instead threw away the step's other work too, and its Resume gave every running
move a new leader epoch, upon which the leaders changed their ISRs again: two moves waiting on
each other's slot took turns failing each other's finish for ever (seed 1122334455, shard 3).

    expected = written_states_if_stale(error, ops)    # None: not that kind of failure
    newer, lines = await read_changed(store, expected)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.shell.zkread import read_states
from znodes import paths
from znodes.api import BadVersionError, SetData, Store
from znodes.batch import FlushError
from znodes.values import LeaderIsr, TopicPartition

# Times one step is taken again with the states it met read anew before the shell falls back
# to the full reload: each try reads what the last one met, so only a state changing again
# between every read and write (a leader whose ISR changes at every step) exhausts them.
STALE_STATE_RETRIES = 3


def written_states(ops: Sequence) -> dict[TopicPartition, int]:
    """The partitions whose state znode ``ops`` write conditionally, each with the zkVersion its
    first write there expects (a second write of the same znode in the flush expects the first's)."""
    expected: dict[TopicPartition, int] = {}
    for op in ops:
        if isinstance(op, SetData) and op.version >= 0:
            match = paths.classify(op.path)
            if match is not None and match.kind is paths.ZnodeKind.PARTITION_STATE:
                expected.setdefault((match.topic, match.partition), op.version)
    return expected


def written_states_if_stale(error: FlushError, ops: Sequence) -> dict[TopicPartition, int] | None:
    """When ``error`` (the flush of ``ops``) failed at a conditional partition-state write that
    met another zkVersion, with nothing of the flush applied: the states the flush wrote
    (:func:`written_states`). Otherwise None: a partly applied flush (a later chunk failed), a
    connection in doubt, a fence, or a conflict on another znode - recovery's case."""
    if error.applied or error.in_doubt or error.index is None or not 0 <= error.index < len(ops):
        return None
    if not isinstance(getattr(error.cause, "cause", None), BadVersionError):
        return None
    failed = ops[error.index]
    if not isinstance(failed, SetData):
        return None
    match = paths.classify(failed.path)
    if match is None or match.kind is not paths.ZnodeKind.PARTITION_STATE:
        return None
    return written_states(ops)


async def read_changed(store: Store, expected: Mapping[TopicPartition, int]) -> tuple[dict[TopicPartition, LeaderIsr], list[str]]:
    """The states of ``expected`` now at another zkVersion than the one expected, as read; and
    the log lines of the read (absent or unreadable ones are left out)."""
    states, lines = await read_states(store, sorted(expected))
    return {tp: s for tp, s in states.items() if s is not None and s.zk_version != expected[tp]}, lines
