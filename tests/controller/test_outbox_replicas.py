"""Outbox.leader_and_isr_replicas (controller.core.commands): one call tells every live replica
what one leader_and_isr call per replica would, with at most two entries shared by them."""

from __future__ import annotations

from controller.core.commands import Outbox
from znodes.values import Broker, LeaderIsr

BROKERS = {b: Broker(b, "h", 9000 + b, epoch=10 + b) for b in (1, 2, 3, 4, 5)}  # 6 is down
STATE = LeaderIsr(1, 7, 3, (1, 2, 3), 11)


def _entries(box: Outbox) -> dict:
    return {b: entries for b, entries in box._lai.items()}


def test_same_entries_as_one_call_per_replica():
    replicas, adding, removing = (4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)
    one_by_one = Outbox(101, 3, BROKERS)
    for b in replicas:
        if b in BROKERS:
            one_by_one.leader_and_isr(b, ("t", 0), STATE, replicas=replicas, adding=adding, removing=removing,
                                      is_new=b in adding)
    at_once = Outbox(101, 3, BROKERS)
    at_once.leader_and_isr_replicas(("t", 0), STATE, replicas=replicas, adding=adding, removing=removing, new=adding)
    assert _entries(at_once) == _entries(one_by_one)
    assert [c.body for c in at_once.commands()] == [c.body for c in one_by_one.commands()]
    assert 6 not in _entries(at_once)  # not live
    got = _entries(at_once)
    assert got[4][("t", 0)]["is_new"] and not got[1][("t", 0)]["is_new"]
    # two entries in all, shared by the brokers of each kind
    assert got[4][("t", 0)] is got[5][("t", 0)] and got[1][("t", 0)] is got[2][("t", 0)] is got[3][("t", 0)]


def test_nothing_new_and_a_later_call_replacing_an_entry():
    box = Outbox(101, 3, BROKERS)
    box.leader_and_isr_replicas(("t", 0), STATE, replicas=(1, 2), adding=(), removing=())
    newer = LeaderIsr(2, 8, 3, (1, 2), 12)
    box.leader_and_isr_replicas(("t", 0), newer, replicas=(1, 2), adding=(), removing=())
    got = _entries(box)
    assert got[1][("t", 0)]["leader_epoch"] == got[2][("t", 0)]["leader_epoch"] == 8
    assert not got[1][("t", 0)]["is_new"]
