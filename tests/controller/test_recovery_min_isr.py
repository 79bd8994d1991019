"""Failover and min.insync.replicas (engine step 2a's floor): the entries the new controller
finds in /admin/reassign_partitions are judged by their topics' overrides from the step that
takes them, as the entries a running controller reads are (controller.shell.active.reload)."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths


async def test_the_floors_of_the_topics_entries_name_are_read_before_a_failover_takes_them():
    h = Harness(topics=("t:2:3:64MiB", "u:1:3:64KiB"))  # t's copies take half a minute
    await h.start()
    try:
        config = {"version": 1, "config": {"min.insync.replicas": "2"}}
        await h.admin.set(paths.topic_config("t"), json.dumps(config).encode(), -1)
        c1 = await h.start_controller(101)
        await h.tick()
        h.server.expire_session(c1.store.session_id)  # no controller while the entry is written
        await h.settle()
        ors = h.assignments[("t", 0)]
        await h.submit({("t", 0): [*ors[:-1], next(b for b in range(1, 7) if b not in ors)]})
        c2 = await h.start_controller(102)
        assert c2.active.state.min_isr.get("t") == 2
        assert "u" not in c2.active.state.min_isr  # no entry names it: not read
        await h.run_until_quiet()
        h.check_invariants()
    finally:
        await h.close()
