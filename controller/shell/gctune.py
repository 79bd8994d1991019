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
    sweeper = asyncio.create_task(sweep())  # beside the controller's loop, cancelled with it
    freeze()        # once the election loaded the cluster: out of every later walk
    thaw()          # when the term ends

An engine step is pure and makes no reference cycles (tests/controller/test_step_garbage.py),
yet everything it builds lives until it returns: the step's ops, messages and overlays, up to
hundreds of thousands of objects. Each young collection during it walked them all again and
found nothing to free (in bench/controller.py about 35 collections of ~13 ms each at 30,000
partitions; in a pure-engine loop 15% of the step's CPU), so :func:`paused` holds the collector
off for the step; whatever the step allocated is looked at once, by the first collection after.

That first collection came too soon all the same: a young collection walks the objects
allocated since the last one that are still alive, and right after a step that is most of what
it made (its writes in flight, its requests queued for the brokers), all freed by reference
counting a moment later. At a threshold of 50,000 the collections after steps cost 1.9 s of a
100,000-partition run's 23.7 s of CPU and freed 1,624 objects in all. So the young threshold is
far above a step's allocations, and the few cycles the libraries do make (an exception's
traceback, a closed connection's callbacks) are collected by :func:`sweep` on a clock instead:
one that dies young lives at most SWEEP_EVERY_S (one that outlived a sweep waits for the next
middle collection, every MIDDLE_EVERY sweeps), and a sweep walks only what survived since the
last one (not what the election loaded: :func:`freeze`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc

# Net allocations of tracked objects between automatic young collections: above what the
# largest step keeps alive until it is done (~40 objects per partition in a step of 10,000),
# so that no collection walks a step's objects just before they are freed. The objects are
# net: what reference counting frees is not counted, so only long-lived growth and
# uncollected cycles bring the next collection.
YOUNG_THRESHOLD = 1_000_000
# Young collections per middle one, middle ones per full one (CPython: 10, 10).
MIDDLE_EVERY = 20
FULL_EVERY = 100

# How long a reference cycle may wait for a collection (:func:`sweep`): the libraries' few
# cycles hold what their frames held (a request body in a traceback), so they go on a clock
# rather than after YOUNG_THRESHOLD allocations, which an idle controller may take hours to make.
SWEEP_EVERY_S = 10.0

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


async def sweep(every_s: float | None = None) -> None:
    """A young collection every ``every_s`` seconds (SWEEP_EVERY_S) until cancelled (none while
    collection is off). Taken between the loop's callbacks, so never inside an engine step."""
    while True:
        await asyncio.sleep(SWEEP_EVERY_S if every_s is None else every_s)
        if gc.isenabled():
            gc.collect(0)


def freeze() -> None:
    """Everything alive now out of the collector's walks (``gc.freeze``) until :func:`thaw`.

    An election loads the cluster, and most of it lives as long as the term. A sweep walks
    what survived since the last one: the first after an election walked all it had loaded,
    0.2-0.3 s inside the failover's resumption at 100,000 partitions. Frozen objects are still
    freed by reference counting; only a cycle among them that dies waits for the thaw."""
    gc.freeze()


def thaw() -> None:
    """The frozen objects back to the collector (``gc.unfreeze``), the oldest generation: a
    term that ended leaves its cycles to be collected."""
    gc.unfreeze()
