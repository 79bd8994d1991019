"""Clocks a simulation can run on: the event loop's for real runs, a manual one for tests.

    clock = ManualClock()
    clock.advance(2.5)
    clock()            # -> 2.5
"""

from __future__ import annotations

import asyncio


class ManualClock:
    """Time that moves only when told to; deterministic tests drive it."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self.now += seconds
        return self.now


def loop_clock() -> float:
    """The running event loop's monotonic time (seconds)."""
    return asyncio.get_running_loop().time()
