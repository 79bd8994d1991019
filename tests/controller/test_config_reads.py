"""How often the active controller reads a topic's ``/config/topics/T``: once per topic per step
(controller.shell.active.ActiveController.topic_configs), however many of the step's readers -
a moving topic's view (min.insync.replicas, unclean setting), an unclean setting turned on, an
offline check's candidates - want it."""

from __future__ import annotations

import json

from tests.controller.fixtures import harness_fixture
from znodes import paths

h = harness_fixture("t:2:3:64MiB")  # t-0 on 4,2,3 and t-1 on 5,3,4; copies take half a minute


class ConfigReads:
    """Records the ``/config/topics/T`` znodes a controller's store reads (the twin's bulk reads
    are single gets)."""

    def __init__(self, store):
        self.paths: list[str] = []
        inner = store._inner
        assert not hasattr(inner, "get_many")
        get = inner.get

        async def counting_get(path, watch=False):
            if path.startswith(paths.CONFIG_TOPICS + "/"):
                self.paths.append(path)
            return await get(path, watch=watch)

        inner.get = counting_get


async def test_a_config_change_of_a_moving_topic_with_a_leaderless_partition_reads_its_config_once(h):
    """t-0 moves (its topic's view is held) and t-1 is leaderless (ISR [3], broker 3 down, 4
    live outside it). A config change notification naming t, turning unclean elections on,
    wants t's config twice in one step - the moving topic's view and the unclean setting
    turned on - and reads it once: both act on that read (t-1 elects 4, the view says True)."""
    c = await h.start_controller(101)
    await h.tick()
    for b in (4, 5, 3):  # 4 first: out of t-1's ISR; 3 is its last member
        await h.cluster.stop_broker(b)
        await h.settle()
    await h.cluster.start_broker(4)  # live, not in the ISR
    await h.settle()
    state = h.json(paths.partition_state("t", 1))
    assert (state["leader"], state["isr"]) == (-1, [3]), state
    await h.submit({("t", 0): [2, 1, 6]})
    await h.tick()
    assert ("t", 0) in c.active.state.tasks
    reads = ConfigReads(c.store)
    data = json.dumps({"version": 1, "config": {"unclean.leader.election.enable": "true"}}).encode()
    await h.admin.set(paths.topic_config("t"), data)
    note = json.dumps({"version": 2, "entity_path": "topics/t"}).encode()
    await h.admin.create(paths.config_change_prefix(), note, sequential=True, makepath=True)
    await h.settle()
    assert reads.paths == [paths.topic_config("t")]
    state = h.json(paths.partition_state("t", 1))
    assert (state["leader"], state["isr"]) == (4, [4]), state
    assert c.active.state.unclean == {"t": True}
