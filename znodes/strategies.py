"""The movement strategy names an entry of ``/admin/reassign_partitions`` may carry
(reassignd's ``"movement_strategies"`` key; Cruise Control's replica_movement_strategies) and
how a list of them is read. Below the controller, which orders moves by them
(controller.core.move_order, where each is defined), and the tools that write them
(``kafka-reassign --movement-strategy``).

    parse("smallest_first, under_replicated_last")   # ("smallest_first", "under_replicated_last")
    parse("fastest")                                 # StrategyError: unknown ...; known: ...
"""

from __future__ import annotations

from collections.abc import Iterable

ORDER_GIVEN = "order_given"
SMALLEST_FIRST = "smallest_first"
LARGEST_FIRST = "largest_first"
UNDER_REPLICATED_LAST = "under_replicated_last"
LEADER_MOVES_FIRST = "leader_moves_first"
STRATEGIES = (ORDER_GIVEN, SMALLEST_FIRST, LARGEST_FIRST, UNDER_REPLICATED_LAST, LEADER_MOVES_FIRST)


class StrategyError(ValueError):
    """A strategy list that is not one: unknown names (listed with the known ones), a name
    twice, or no name."""


def parse(value: str | Iterable[str]) -> tuple[str, ...]:
    """``"smallest_first,under_replicated_last"`` (or a sequence of names) -> the tuple;
    StrategyError naming what is wrong. Each name at most once: a second one could never decide."""
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    if not names or any(not isinstance(n, str) or not n for n in names):
        raise StrategyError(f"expected a comma-separated list of movement strategies ({', '.join(STRATEGIES)}), got {value!r}")
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise StrategyError(f"unknown movement strateg{'y' if len(unknown) == 1 else 'ies'} "
                            f"{', '.join(map(repr, unknown))}; known: {', '.join(STRATEGIES)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise StrategyError(f"movement strateg{'y' if len(twice) == 1 else 'ies'} {', '.join(twice)} listed twice")
    return tuple(names)
