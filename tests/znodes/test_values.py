"""znodes.values: Request.with_replicas is dataclasses.replace for the replica fields, every
other field kept (a field added to Request and left out of it fails here)."""

from __future__ import annotations

import dataclasses

import pytest

from znodes.values import Request

FULL = Request("t", 3, (1, 2), (4, 5), ("/d1", "/d2"), True, ("smallest_first",))


def test_every_field_is_set_in_the_example():
    defaults = Request("t", 3, (1, 2))
    assert all(getattr(FULL, f.name) != getattr(defaults, f.name) for f in dataclasses.fields(Request)
               if f.name not in ("topic", "partition", "replicas"))


@pytest.mark.parametrize("changes", [
    {"original_replicas": (7, 8)},
    {"replicas": (9,)},
    {"replicas": (9,), "original_replicas": (7, 8)},
    {},
])
def test_with_replicas_is_replace(changes):
    assert FULL.with_replicas(**changes) == dataclasses.replace(FULL, **changes)
