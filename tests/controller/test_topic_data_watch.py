"""A tool that adds partitions by rewriting the topic znode (``kafka-topics.sh --zookeeper
--alter --partitions``, Kafka's AdminZkClient.addPartitions) is seen at once, as Kafka's
controller sees it through its PartitionModificationsHandler: the new partitions get their
state (leader the first live replica), LeaderAndIsr and UpdateMetadata (engine step 10). The
controller's own rewrites of the znode fire the same watch and are not read again."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths


async def test_partitions_added_by_a_tool_get_their_states_at_once():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        handle = await h.start_controller(101)
        await h.tick()
        doc = h.json(paths.topic("t"))
        doc["partitions"].update({"2": [4, 5, 6], "3": [5, 6, 1]})
        await h.admin.set(paths.topic("t"), json.dumps(doc).encode())
        for _ in range(20):
            await h.tick()
            if all(h.server.exists(paths.partition_state("t", p)) is not None for p in (2, 3)):
                break
        states = {p: h.json(paths.partition_state("t", p)) for p in (2, 3)}
        assert (states[2]["leader"], states[2]["isr"]) == (4, [4, 5, 6])
        assert (states[3]["leader"], states[3]["isr"]) == (5, [5, 6, 1])
        assert handle.active.state.topic_partitions["t"] == (0, 1, 2, 3)
        # The new partitions move like any other, and the controller's own rewrites of the topic
        # znode (which fire its watch) change nothing more.
        reads_before = handle.active.stats.reloads
        await h.submit({("t", 2): [1, 2, 3]})
        await h.run_until_quiet()
        assert h.json(paths.topic("t"))["partitions"]["2"] == [1, 2, 3]
        assert handle.active.stats.reloads == reads_before
        for b in (1, 2, 3):
            assert h.cluster.brokers[b].core.model.get("t", 2, b) is not None
        h.check_invariants()
    finally:
        await h.close()
