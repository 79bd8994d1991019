"""controller.shell.gctune raises the collector's thresholds once and never lowers them."""

from __future__ import annotations

import gc

import pytest

from controller.shell import gctune


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
