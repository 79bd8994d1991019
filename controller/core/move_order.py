"""The order pending moves start in (issue 24 item 4; Cruise Control's
``replica_movement_strategies``): engine step 2c. Pure.

A strategy list is an ordered tuple of names; the first strategy decides, the next breaks its
ties, and so on; what every strategy leaves tied keeps the order given (the order the moves
became pending: the znode's order, then later entries after earlier ones), as Cruise Control
chains its strategies and ends with its base strategy.

* ``order_given``: no reordering (the default; Cruise Control's BaseReplicaMovementStrategy).
  Listed first it decides everything, so a list starting with it is the order given.
* ``smallest_first``: fewest bytes to copy first (PrioritizeSmallReplicaMovementStrategy).
  Bytes to copy = the partition's size x the replicas the move adds; a move adding none (a
  reorder, or one that only drops replicas) copies 0 bytes whatever the size. The size is
  the controller's: each broker's DescribeLogDirs answer to the controller (at its election,
  at the broker's registration; and, while a list in force orders by size, the pending moves'
  leaders' at every copy-progress sample) gives each replica's size; an in-sync replica's size
  is taken as the partition's, another replica's (a copy under way) only if it is larger. A
  move of unknown size goes after every known one: nothing says it is small.
* ``largest_first``: most bytes to copy first (PrioritizeLargeReplicaMovementStrategy);
  unknown sizes last too.
* ``under_replicated_last``: partitions whose ISR is full first, those whose ISR is shorter
  than their replicas after (PostponeUrpReplicaMovementStrategy); a partition whose state the
  controller does not hold yet counts as full.
* ``leader_moves_first``: moves that add no replica (they reorder replicas to change the
  preferred leader, or only drop replicas: nothing to copy) before the moves that copy data.

The setting ``replica_movement_strategies`` is the list for every move; an entry of
``/admin/reassign_partitions`` may carry its own (``"movement_strategies": [...]``, written by
ReassignPartitions v1's tagged ``MovementStrategies`` and ``kafka-reassign
--movement-strategy``). Moves with different lists are not comparable, so the pending queue is
cut into runs of consecutive moves with the same list, each run sorted by its own list, the
runs in the order given: a request's list orders that request's moves and never lets them
overtake moves asked for before them with another list. Names a controller does not know (a
newer tool's) are skipped in an entry - the order is advice, never a reason to refuse a move;
the shell warns of them once, when the entry becomes a move (controller.core.reassignment step 1) -
while the settings and the admin API refuse them with the list of known names.

Worked table: four pending moves in the order given, ISR of 3 replicas each unless said.

    move  size     adds  ISR  bytes to copy
    a-0   10 GB    1     3    10 GB
    b-0   1 GB     2     2    2 GB       (under-replicated)
    c-0   unknown  1     3    unknown
    d-0   5 GB     0     3    0          (a reorder: adds no replica)

    strategies                               start order
    order_given                              a b c d
    smallest_first                           d b a c
    largest_first                            a b d c
    under_replicated_last                    a c d b
    leader_moves_first                       d a b c
    leader_moves_first,largest_first         d a b c
    under_replicated_last,largest_first      a d c b
    under_replicated_last,smallest_first     d a c b
    order_given,smallest_first               a b c d   (order_given decides all)

    mixed: a, b with smallest_first; c, d with order_given  ->  b a c d
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from znodes.strategies import (  # noqa: F401 - the names and parse are this module's too
    LARGEST_FIRST,
    LEADER_MOVES_FIRST,
    ORDER_GIVEN,
    SMALLEST_FIRST,
    STRATEGIES,
    UNDER_REPLICATED_LAST,
    StrategyError,
    parse,
)
from znodes.values import TopicPartition

SIZED = frozenset({SMALLEST_FIRST, LARGEST_FIRST})  # the strategies that need partition sizes


@functools.lru_cache(maxsize=16)
def setting(text: str) -> tuple[str, ...]:
    """The ``replica_movement_strategies`` setting as a tuple (validated when it was read;
    parsed once per value, not in every step)."""
    return parse(text)


def needs_sizes(setting: tuple[str, ...], own_lists: Iterable[tuple[str, ...]]) -> bool:
    """Whether a list in force orders by size (the setting's, or an entry's own): only then are
    pending moves' sizes worth asking the brokers for."""
    def sized(names) -> bool:
        for n in names:
            if n == ORDER_GIVEN:
                return False  # nothing after it decides
            if n in SIZED:
                return True
        return False

    return sized(setting) or any(sized(known(names)) for names in own_lists if names)


def known(names: Sequence[str]) -> tuple[str, ...]:
    """An entry's list with the names this controller does not know skipped (see above)."""
    return tuple(n for n in names if n in STRATEGIES)


def unknown(names: Sequence[str]) -> tuple[str, ...]:
    """The names :func:`known` skips: the shell warns of them when the entry becomes a move."""
    return tuple(n for n in names if n not in STRATEGIES)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the ordering knows of one pending move."""

    bytes_to_copy: int | None  # None: the partition's size is unknown and the move copies
    under_replicated: bool
    adds_replicas: bool


def facts(size: int | None, adding: int, isr: int | None, replicas: int) -> Facts:
    """A pending move's facts: the partition's ``size`` (None unknown), how many replicas it
    adds, its ISR's length (None: no state held) and its current replica count."""
    if not adding:
        copy = 0
    else:
        copy = None if size is None else size * adding
    return Facts(copy, isr is not None and isr < replicas, adding > 0)


def _key(strategy: str, f: Facts) -> tuple:
    if strategy == SMALLEST_FIRST:
        return (1, 0) if f.bytes_to_copy is None else (0, f.bytes_to_copy)
    if strategy == LARGEST_FIRST:
        return (1, 0) if f.bytes_to_copy is None else (0, -f.bytes_to_copy)
    if strategy == UNDER_REPLICATED_LAST:
        return (f.under_replicated,)
    if strategy == LEADER_MOVES_FIRST:
        return (f.adds_replicas,)
    return ()  # order_given: never decides


def sort_key(strategies: Sequence[str], f: Facts) -> tuple:
    """The move's key under ``strategies``, the first deciding (a stable sort keeps the order
    given for ties). Nothing after ``order_given`` counts: it leaves nothing tied."""
    out: list = []
    for s in strategies:
        if s == ORDER_GIVEN:
            break
        out.append(_key(s, f))
    return tuple(out)


def reorders(strategies: Sequence[str]) -> bool:
    """False for a list whose order is the order given (empty, or starting with order_given)."""
    return bool(strategies) and strategies[0] != ORDER_GIVEN


def ordered(
    pending: Iterable[TopicPartition],
    strategies_of: Callable[[TopicPartition], tuple[str, ...]],
    facts_of: Callable[[TopicPartition], Facts],
) -> list[TopicPartition]:
    """Step 2c: the pending moves in the order they may start. ``strategies_of`` gives each
    move's list (its entry's, else the setting's); ``facts_of`` is called only for moves of a
    run that reorders."""
    out: list[TopicPartition] = []
    run: list[TopicPartition] = []
    current: tuple[str, ...] | None = None

    def close() -> None:
        if current is not None and reorders(current) and len(run) > 1:
            run.sort(key=lambda tp: sort_key(current, facts_of(tp)))
        out.extend(run)
        run.clear()

    for tp in pending:
        strategies = strategies_of(tp)
        if strategies != current:
            close()
            current = strategies
        run.append(tp)
    close()
    return out


def size_after(old: int | None, reported: int, in_sync: bool) -> int:
    """The partition's size once a replica reported ``reported``: an in-sync replica holds the
    whole log (its size replaces, retention may have shrunk it); another replica may be a copy
    under way, so it only raises what is known."""
    if old is None or in_sync:
        return reported
    return max(old, reported)

