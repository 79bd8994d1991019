"""/admin/reassign_partitions written by others while the controller works on it."""

from __future__ import annotations

import json

from controller.core.config import ControllerConfig
from tests.controller.harness import Harness
from znodes import paths


def _doc(entries):
    return json.dumps({"version": 1, "partitions": entries}).encode()


async def test_a_tool_replacing_the_znode_is_noticed_even_at_the_same_version():
    h = Harness(topics=("t:3:3:64KiB",), config=ControllerConfig(max_cluster_moves=1, request_retries=0))
    await h.start()
    try:
        c = await h.start_controller(101)
        a = {"topic": "t", "partition": 0, "replicas": [4, 5, 6], "original_replicas": h.assignments[("t", 0)]}
        b = {"topic": "t", "partition": 1, "replicas": [1, 5, 2], "original_replicas": h.assignments[("t", 1)]}
        await h.admin.create(paths.REASSIGN_PARTITIONS, _doc([a, b]))
        await h.settle()
        # a started (cap 1), b pending; the controller had nothing to write to the znode
        assert h.server.exists(paths.REASSIGN_PARTITIONS).version == 0
        assert h.server.exists(paths.reassignment("t", 0)) is not None
        # the tool withdraws everything and submits something else: a new znode, version 0 again
        cc = {"topic": "t", "partition": 2, "replicas": [6, 1, 3]}
        await h.admin.delete(paths.REASSIGN_PARTITIONS)
        await h.admin.create(paths.REASSIGN_PARTITIONS, _doc([a, cc]))
        await h.run_until_quiet()
        now = h.current()
        assert now[("t", 0)] == [4, 5, 6] and now[("t", 2)] == [6, 1, 3]
        assert now[("t", 1)] == h.assignments[("t", 1)]  # withdrawn before it started
        assert c.active.stats.reloads == 0
    finally:
        await h.close()
