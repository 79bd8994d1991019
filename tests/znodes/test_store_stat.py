"""KazooStore's conversion of kazoo's Stat (znodes.store._stat): filled through the slots in
kazoo's field order, it gives what converting field by field by name gives."""

from __future__ import annotations

from kazoo.protocol.states import ZnodeStat as KazooStat

from znodes import store
from znodes.api import ZnodeStat


def test_the_fast_conversion_equals_the_one_by_name():
    raw = KazooStat(*range(101, 112))
    fast, by_name = store._stat(raw), store._stat_by_name(raw)
    assert type(fast) is ZnodeStat and fast == by_name and hash(fast) == hash(by_name)
    assert (fast.pzxid, fast.ephemeral_owner, fast.num_children) == (raw.pzxid, raw.ephemeralOwner, raw.numChildren)
    assert store._stat is not store._stat_by_name  # kazoo's order is the one the fast path knows


def test_anything_else_is_converted_by_name():
    class Stat:  # a stat-like object that is not kazoo's tuple
        czxid, mzxid, pzxid, ctime, mtime, version = 1, 2, 3, 4, 5, 6
        cversion, aversion, ephemeralOwner, dataLength, numChildren = 7, 8, 9, 10, 11

    assert store._stat(Stat()) == store._stat_by_name(Stat())
