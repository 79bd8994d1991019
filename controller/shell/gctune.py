"""Garbage-collector settings for a controller that holds a large cluster in memory.

The active controller keeps every partition's assignment, and every running move and its
partition state, as small long-lived objects: hundreds of thousands on a large cluster. With
CPython's default thresholds (a collection every 700 net allocations, a full one every 100
of those) the collector walks them again and again while a step allocates its effects: in
bench/controller.py that was a third of the controller's CPU. The controller makes almost no
reference cycles (its objects are freed by reference counting), so collecting less often
costs only a little memory.

    tune()          # once per process, before the controller loads the cluster
    with paused():  # around one engine step
        step = engine.step(state, events, config)

An engine step is pure and makes no reference cycles (tests/controller/test_step_garbage.py),
yet everything it builds lives until it returns: the step's ops, messages and overlays, up to
hundreds of thousands of objects. Each young collection during it walked them all again and
found nothing to free (in bench/controller.py about 35 collections of ~13 ms each at 30,000
partitions; in a pure-engine loop 15% of the step's CPU), so :func:`paused` holds the collector
off for the step; whatever the step allocated is looked at once, by the first collection after.
"""

from __future__ import annotations

import contextlib
import gc

# Allocations between young collections: 70x CPython's 700, a few MB of short-lived objects.
YOUNG_THRESHOLD = 50_000
# Young collections per middle one, middle ones per full one (CPython: 10, 10).
MIDDLE_EVERY = 20
FULL_EVERY = 100

_tuned = False


def tune() -> None:
    """Raise the thresholds (idempotent; never lowers thresholds someone set higher)."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    young, middle, full = gc.get_threshold()
    if young == 0:
        return  # collection is disabled on purpose: leave it so
    gc.set_threshold(max(young, YOUNG_THRESHOLD), max(middle, MIDDLE_EVERY), max(full, FULL_EVERY))



@contextlib.contextmanager
def paused():
    """No automatic collection inside the block (the collector as it was after it, also when the
    block raises; a block inside another, or with collection off already, changes nothing)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
