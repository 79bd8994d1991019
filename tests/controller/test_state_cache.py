"""The controller's partition states through the real shell (controller.shell.active) on the twin:
read once at election, kept fresh by ISR notifications (which reassignd's brokers fill with
the state they wrote) and by the controller's own writes, so moves read no state znode; a
notification in Kafka's plain format is still read back."""

from __future__ import annotations

import json

import pytest

from tests.controller.fixtures import harness_fixture
from znodes import paths

TOPIC = "t:3:3:1MiB"  # t-0 on 4,2,3, t-1 on 5,3,4, t-2 on 6,4,5
MOVES = {("t", 0): [1, 5, 6], ("t", 1): [5, 3, 2]}


class StateReads:
    """Records the partition-state znodes a store reads (single gets and bulk reads)."""

    def __init__(self, store):
        self.paths: list[str] = []
        inner = store._inner
        assert not hasattr(inner, "get_many")  # the twin: bulk reads are single gets
        get = inner.get

        async def counting_get(path, watch=False):
            self._note([path])
            return await get(path, watch=watch)

        inner.get = counting_get

    def _note(self, path_list):
        self.paths += [p for p in path_list if p.endswith("/state")]


h = harness_fixture(TOPIC)


async def test_moves_read_no_state_after_the_election_read(h):
    c = await h.start_controller(101)
    await h.tick()
    assert len(c.active.state.states) == 3  # the election's full UpdateMetadata read them all
    reads = StateReads(c.store)
    await h.submit(MOVES)
    await h.run_until_quiet()
    h.check_invariants(MOVES)
    assert reads.paths == []
    for tp, target in MOVES.items():  # what it holds is what ZooKeeper holds
        data, stat = await h.admin.get(paths.partition_state(*tp))
        held = c.active.state.states[tp]
        assert (held.leader, list(held.isr), held.zk_version) == (json.loads(data)["leader"], json.loads(data)["isr"], stat.version)
        assert set(held.isr) == set(target)


async def test_a_notification_in_kafkas_format_is_read_back(h):
    c = await h.start_controller(101)
    await h.tick()
    reads = StateReads(c.store)
    # A Kafka broker's ISR shrink: the state znode, then a notification naming the partition only.
    path = paths.partition_state("t", 2)
    data, stat = await h.admin.get(path)
    state = json.loads(data)
    state["isr"] = state["isr"][:2]
    await h.admin.set(path, json.dumps(state).encode(), stat.version)
    await h.admin.create(
        paths.ISR_CHANGE_PREFIX, b'{"version":1,"partitions":[{"topic":"t","partition":2}]}', sequential=True
    )
    await h.tick()
    assert reads.paths == [path]
    held = c.active.state.states[("t", 2)]
    assert list(held.isr) == state["isr"] and held.zk_version == stat.version + 1
    assert h.server.children(paths.ISR_CHANGE_NOTIFICATION) == []


# A leftover notification whose carried state is older than the znode (the previous controller
# wrote after it and died before deleting it) is not trusted by a controller that holds no state
# of the partition yet: the crash-after-every-op tests of test_cancel_flow fail
# with a reload loop without that rule.


@pytest.mark.parametrize("ahead", [0, 1, 50])
async def test_a_notification_claiming_a_state_its_znode_never_had_is_not_believed(h, ahead):
    """An outside probe's forgery: a notification carrying an ISR with the move's targets in it
    and a zkVersion the znode has not reached. Believed, it let the move finish and delete the
    only full copies once a reload's leader-epoch write brought the znode up to that version
    (ahead=1), or made the controller reload every few seconds for as long as the znode stayed
    below it (ahead=50). Now the conditional write it leads to fails, the znode is read, taken
    over the claim, and the notification deleted with the retaken step."""
    c = await h.start_controller(101)
    await h.tick()
    await h.submit({("t", 0): [1, 5, 6]})  # all new replicas: they copy only as time passes
    await h.settle()
    path = paths.partition_state("t", 0)
    data, stat = await h.admin.get(path)
    real = json.loads(data)
    assert sorted(h.json(paths.topic("t"))["adding_replicas"]["0"]) == [1, 5, 6]
    claim = {k: real[k] for k in ("leader", "leader_epoch", "controller_epoch")}
    claim |= {"isr": [1, 5, 6, *real["isr"]], "zk_version": stat.version + ahead}
    reloads = c.active.stats.reloads
    note = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "state": claim}]}
    await h.admin.create(paths.ISR_CHANGE_PREFIX, json.dumps(note).encode(), sequential=True)
    await h.settle()
    assert h.server.children(paths.ISR_CHANGE_NOTIFICATION) == []
    assert sorted(h.json(paths.topic("t"))["adding_replicas"]["0"]) == [1, 5, 6]  # still moving
    data, stat = await h.admin.get(path)
    assert json.loads(data)["isr"] == real["isr"]
    held = c.active.state.states[("t", 0)]
    assert (list(held.isr), held.zk_version) == (real["isr"], stat.version)
    assert c.active.stats.reloads == reloads
    await h.run_until_quiet()  # and the move then finishes as copies catch up
    h.check_invariants({("t", 0): [1, 5, 6]})
