"""pytest fixtures shared by the controller tests.

:func:`harness_fixture` builds the fixture many test modules had written out alike: a started
Harness (tests/controller/harness.py) of the module's topics, closed after each test.

    h = harness_fixture("t:4:3:64KiB")                  # in the test module: fixture ``h``
    h = harness_fixture(TOPICS, setup=lambda mp: mp.setattr(full_metadata, "CHUNK", 3))
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.controller.harness import Harness


def harness_fixture(*topics: str, setup: Callable[[pytest.MonkeyPatch], None] | None = None):
    """A fixture named ``h``: a Harness of ``topics`` (``name:partitions:rf:size`` specs),
    started, and closed after the test whether it passed or not. ``setup(monkeypatch)`` runs
    before the harness starts (a module setting patched for the test only)."""

    @pytest.fixture
    async def h(monkeypatch):
        if setup is not None:
            setup(monkeypatch)
        harness = Harness(topics=topics)
        await harness.start()
        try:
            yield harness
        finally:
            await harness.close()

    return h
