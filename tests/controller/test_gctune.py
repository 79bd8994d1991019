"""controller.shell.gctune raises the collector's thresholds once and never lowers them, and
pauses it around each engine step."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from controller.shell import gctune
from tests.controller.harness import Harness


@pytest.fixture
def thresholds(monkeypatch):
    saved = gc.get_threshold()
    monkeypatch.setattr(gctune, "_tuned", False)
    yield
    gc.set_threshold(*saved)


def test_tune_raises_default_thresholds(thresholds):
    gc.set_threshold(700, 10, 10)
    gctune.tune()
    assert gc.get_threshold() == (gctune.YOUNG_THRESHOLD, gctune.MIDDLE_EVERY, gctune.FULL_EVERY)


def test_tune_keeps_higher_thresholds_and_a_disabled_collector(thresholds):
    gc.set_threshold(10**6, 50, 500)
    gctune.tune()
    assert gc.get_threshold() == (10**6, 50, 500)
    gc.set_threshold(0, 10, 10)
    gctune._tuned = False
    gctune.tune()
    assert gc.get_threshold() == (0, 10, 10)


def test_tune_acts_once_per_process(thresholds):
    gc.set_threshold(700, 10, 10)
    gctune.tune()
    gc.set_threshold(700, 10, 10)
    gctune.tune()
    assert gc.get_threshold() == (700, 10, 10)


def test_the_collector_is_paused_inside_the_block_and_back_after_it_even_on_an_error():
    assert gc.isenabled()
    with gctune.paused():
        assert not gc.isenabled()
        with gctune.paused():  # nested: the outer block still owns it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gctune.paused():
            raise RuntimeError("a step that fails")
    assert gc.isenabled()


def test_collection_switched_off_by_someone_stays_off():
    gc.disable()
    try:
        with gctune.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_a_step_runs_with_the_collector_paused(monkeypatch):
    """controller.shell.active takes each engine step inside gctune.paused()."""
    from controller.shell import active as active_module

    seen = []
    real = active_module.engine.step

    def step(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(active_module.engine, "step", step)
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        await h.settle()
    finally:
        await h.close()
    assert seen and not any(seen)  # every step, none with the collector on
    assert gc.isenabled()


class _Node:
    def __init__(self):
        self.other = self  # a reference cycle: only the collector frees it


async def test_sweep_collects_cycles_on_its_clock(thresholds):
    """With the young threshold out of reach, a cycle goes at the next sweep, not never."""
    gc.collect()
    gc.set_threshold(10**9, 10, 10)
    freed = asyncio.Event()
    node = _Node()
    weakref.finalize(node, freed.set)
    del node
    await asyncio.sleep(0.05)
    assert not freed.is_set()  # nothing collects it by itself
    sweeper = asyncio.create_task(gctune.sweep(0.05))
    try:
        await asyncio.wait_for(freed.wait(), timeout=10)
    finally:
        sweeper.cancel()


async def test_sweep_leaves_a_disabled_collector_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(gctune.gc, "collect", lambda *a: calls.append(a))
    gc.disable()
    try:
        sweeper = asyncio.create_task(gctune.sweep(0.01))
        await asyncio.sleep(0.1)
        sweeper.cancel()
    finally:
        gc.enable()
    assert calls == []
    sweeper = asyncio.create_task(gctune.sweep(0.01))
    for _ in range(500):
        if calls:
            break
        await asyncio.sleep(0.01)
    sweeper.cancel()
    assert calls and calls[0] == (0,)


async def test_the_active_controller_sweeps_and_freezes_its_cluster_while_it_acts():
    def sweepers():
        return [t for t in asyncio.all_tasks() if t.get_name() == "gc-sweep" and not t.done()]

    gc.unfreeze()
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        await h.settle()
        assert len(sweepers()) == 1
        assert gc.get_freeze_count() > 0  # what the election loaded is out of the walks
    finally:
        await h.close()
    await asyncio.sleep(0)
    assert sweepers() == []
    assert gc.get_freeze_count() == 0  # the term's end gave it back to the collector


def test_freeze_and_thaw():
    gc.unfreeze()
    gctune.freeze()
    try:
        assert gc.get_freeze_count() > 0
    finally:
        gctune.thaw()
    assert gc.get_freeze_count() == 0
