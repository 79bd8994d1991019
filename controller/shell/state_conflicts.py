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
    events = retaken(newer, events)                    # what the step is taken again with

A state read here may also be older than the one the step wrote from: the step then held a
state that an ISR change notification carried with a version its znode never had (a
malformed or forged notification: a leader writes the znode before it notifies). The read
is taken over it, and over what the step's own events carried for those partitions, so that
the notification is deleted with the retaken step instead of being believed again after
every reload (an outside probe's loop; a forged ISR let a move finish and delete the only
full copies once a reload's leader-epoch write brought the znode up to the claimed version).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dataclasses import replace

from controller.core.events import Event, StatesRead
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


def ahead_of_znodes(newer: Mapping[TopicPartition, LeaderIsr], expected: Mapping[TopicPartition, int]) -> list[TopicPartition]:
    """The partitions whose znode is at an older zkVersion than the step wrote from."""
    return sorted(tp for tp, s in newer.items() if s.zk_version < expected[tp])


def retaken(newer: Mapping[TopicPartition, LeaderIsr], events: Sequence[Event]) -> list[Event]:
    """The events a step is taken again with: ``newer`` first, as a fresh read (taken over any
    state held), and the step's own StatesRead events without their states of those
    partitions (their notifications still listed, so deleted with the step)."""
    out: list[Event] = [StatesRead(dict(newer), fresh=True)]
    for e in events:
        if isinstance(e, StatesRead) and any(tp in newer for tp in e.states):
            e = replace(e, states={tp: s for tp, s in e.states.items() if tp not in newer})
        out.append(e)
    return out
