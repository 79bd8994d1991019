"""Full UpdateMetadata, as Kafka's controller sends it: at election and to a (re)started broker.

Kafka's controller sends every partition's state to every live broker when it is elected
(``onControllerFailover``), the whole metadata to a broker that registers
(``onBrokerStartup``), and a new topic's partitions to every live broker, so that every
broker's metadata cache - and so the Metadata answer a client gets from any broker - is
complete. The engine itself only speaks of partitions a step touches; the shell
(controller.shell.active) sends the rest with this module, without delaying resumed moves:

 1. Plan: a :class:`MetadataDue` names the partitions (every one the controller knows, or a
    new topic's) and the brokers (None: every live one; else the brokers that just
    registered or re-registered), and the planner's generation.
 2. The shell puts it on its inbox queue after the resume work, so the resumed moves'
    partition states are read and acted on first; a loop turn that takes a chunk with other
    events steps those first (controller.shell.active.process).
 3. When the loop takes it, :meth:`Planner.take` gives the next ``CHUNK`` partitions; the
    shell reads their states in bulk (``store.get_many``, a pipelined multiRead) and hands
    them to the engine as a :class:`controller.core.events.MetadataRead`, in a step of its own
    after whatever else the turn took (engine step 8). The rest goes back at the END of the queue:
    other events are processed between chunks, so the loop never stalls for a whole
    100,000-partition read, and a state read in the loop is dispatched before any later one.
 4. A reload (failover recovery) starts a new generation and a full send to everyone:
    items of older generations are dropped, the new send covers them. Its chunks also give
    every live replica LeaderAndIsr with the state read (engine step 8b, Kafka's
    ``replicaStateMachine.startup``): a broker that restarted while no controller was active
    registered before this one read the brokers, so nothing else would ever tell it its role.

    planner = Planner()
    queue.put_nowait(planner.everyone(list(state.assignments)))      # after election
    queue.put_nowait(planner.brokers((4,), list(state.assignments)))  # broker 4 registered
    chunk, rest = planner.take(item)     # rest: None when done, else put it back on the queue
    planner.peek(rest)                   # the next chunk, read ahead by the shell
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from znodes.values import Broker, TopicPartition

# Partitions read and sent per loop turn: one bulk read of four multiRead requests (250 gets
# each) and ~100 KB of UpdateMetadata. What arrives while a chunk is read waits for that chunk
# (the shell steps other events before the next one): at 100,000 partitions after a failover a
# chunk of 2,000 held each step of the resumed moves up by 0.05-0.15 s; 1,000 halves that,
# and 100,000 partitions still take 100 turns, not 1,000 (the per-turn cost is small).
CHUNK = 1000
# Generations unique in the process: an item left on an inbox by an earlier controller term
# never matches a later term's planner.
_GENERATIONS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class MetadataDue:
    """Partitions still to be sent in a full UpdateMetadata (``partitions[offset:]``)."""

    generation: int
    partitions: tuple[TopicPartition, ...]
    brokers: tuple[int, ...] | None  # None: every live broker
    offset: int = 0
    # A (re)load's send: the partitions' live replicas get LeaderAndIsr with the state too
    # (engine step 8b, Kafka's replicaStateMachine.startup).
    leader_and_isr: bool = False


class Planner:
    """Hands out the chunks of the full UpdateMetadata sends under way (steps 1, 3, 4)."""

    def __init__(self) -> None:
        self.generation = next(_GENERATIONS)
        self.sent_partitions = 0  # for logs, tests and benchmarks

    def everyone(self, partitions: list[TopicPartition]) -> MetadataDue:
        """A new full send to every live broker, with LeaderAndIsr to every live replica
        (after a (re)load); older sends are dropped (step 4)."""
        self.generation = next(_GENERATIONS)
        return MetadataDue(self.generation, tuple(partitions), None, leader_and_isr=True)

    def brokers(self, brokers: tuple[int, ...], partitions: list[TopicPartition]) -> MetadataDue:
        """Every partition to the brokers named (they just registered)."""
        return MetadataDue(self.generation, tuple(partitions), tuple(sorted(brokers)))

    def new_partitions(self, partitions: list[TopicPartition]) -> MetadataDue:
        """A new topic's (or new partitions') states to every live broker."""
        return MetadataDue(self.generation, tuple(partitions), None)

    def peek(self, item: MetadataDue | None) -> tuple[TopicPartition, ...]:
        """The partitions :meth:`take` would give for ``item`` now, nothing counted (the shell
        reads them ahead: controller.shell.metadata_reads)."""
        if item is None or item.generation != self.generation:
            return ()
        return item.partitions[item.offset : item.offset + CHUNK]

    def take(self, item: MetadataDue) -> tuple[tuple[TopicPartition, ...], MetadataDue | None]:
        """(the partitions to read and send now, what is left or None); nothing for an item
        of an older generation."""
        if item.generation != self.generation:
            return (), None
        end = item.offset + CHUNK
        chunk = item.partitions[item.offset : end]
        self.sent_partitions += len(chunk)
        rest = None if end >= len(item.partitions) else replace(item, offset=end)
        return chunk, rest


def registered(old: dict[int, Broker], new: dict[int, Broker]) -> tuple[int, ...]:
    """Brokers in ``new`` that are not in ``old`` or registered again (another epoch)."""
    return tuple(b for b, info in new.items() if b not in old or old[b].epoch != info.epoch)
