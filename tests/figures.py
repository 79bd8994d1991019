"""Figures a test run reports: ``name=value`` lines printed last, after pytest's summary.

The long suites (the stateful failover schedules, the chaos run) record what they measured
here; ``tests/conftest.py`` prints every block at the end of the run, one figure per line,
whatever pytest's verbosity, so ``make test``'s last lines are the figures.

    from tests import figures
    figures.record("stateful", schedules=10_000, steps=412_345)
"""

from __future__ import annotations

# block name -> {figure name: value}, in recording order.
BLOCKS: dict[str, dict[str, object]] = {}


def record(block: str, **values: object) -> None:
    BLOCKS.setdefault(block, {}).update(values)


def lines() -> list[str]:
    out: list[str] = []
    for block, values in BLOCKS.items():
        out.append(f"# {block}")
        out.extend(f"{name}={value}" for name, value in values.items())
    return out
