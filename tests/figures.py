"""Figures a test run reports: ``name=value`` lines printed last, after pytest's summary.

The long suites (the stateful failover schedules, the chaos run) record what they measured
here; ``tests/conftest.py`` prints every block at the end of the run, one figure per line,
whatever pytest's verbosity, so ``make test``'s last lines are the figures.

    from tests import figures
    figures.record("stateful", schedules=10_000, steps=412_345)
    figures.table("stateful crash points", ["kind op role schedules", "start 0 state write 812"])

Tables (a suite's longer report, e.g. the stateful crash-point coverage) print before the
figures, each under its title, so the figures stay the run's last lines.
"""

from __future__ import annotations

import json

# block name -> {figure name: value}, in recording order.
BLOCKS: dict[str, dict[str, object]] = {}
# title -> lines, in recording order.
TABLES: dict[str, list[str]] = {}


def record(block: str, **values: object) -> None:
    BLOCKS.setdefault(block, {}).update(values)


def table(title: str, rows: list[str]) -> None:
    TABLES[title] = list(rows)


def dump() -> str:
    """Everything recorded, as JSON: how a pytest-xdist worker hands it to the controller."""
    return json.dumps({"blocks": BLOCKS, "tables": TABLES}, default=str)


def merge(dumped: str) -> None:
    """Add what :func:`dump` gave (another process's records) to this process's."""
    data = json.loads(dumped)
    for block, values in data["blocks"].items():
        record(block, **values)
    for title, rows in data["tables"].items():
        table(title, rows)


def lines() -> list[str]:
    out: list[str] = []
    for title, rows in TABLES.items():
        out.append(f"# {title}")
        out.extend(rows)
    for block, values in BLOCKS.items():
        out.append(f"# {block}")
        out.extend(f"{name}={value}" for name, value in values.items())
    return out
