"""The wall clock in the planner service's units: milliseconds since the epoch, as ``/state``
shows every time (the model is given its clock by the caller and never reads one)."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
