"""A malformed ``/admin/reassign_partitions`` is input an operator must fix: the controller
says so at WARNING, as Kafka warns ("Ignoring partition reassignment due to invalid json"),
for the whole znode and for each entry it drops; the good entries go on."""

from __future__ import annotations

import json
import logging

from tests.controller.fixtures import harness_fixture
from znodes import paths

h = harness_fixture("t:2:3:64KiB")


def _levels(caplog, text: str) -> set[int]:
    return {r.levelno for r in caplog.records if r.name == "reassignd.controller" and text in r.getMessage()}


async def test_a_junk_znode_and_its_bad_entries_are_warnings(h, caplog):
    await h.start_controller(101)
    await h.tick()
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await h.admin.create(paths.REASSIGN_PARTITIONS, b"this is not json")
        await h.tick()
        assert _levels(caplog, "ignoring /admin/reassign_partitions") == {logging.WARNING}
        await h.admin.delete(paths.REASSIGN_PARTITIONS)
        await h.tick()
        bad = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1, 2]},
                                            {"topic": "t", "partition": 1, "replicas": [1, 2, 3]}]}
        await h.admin.create(paths.REASSIGN_PARTITIONS, json.dumps(bad).encode())
        await h.run_until_quiet()
    dropped = [r for r in caplog.records if r.name == "reassignd.controller" and "t-0" in r.getMessage()
               and r.levelno == logging.WARNING]
    assert dropped, [r.getMessage() for r in caplog.records]
    h.check_invariants({("t", 1): [1, 2, 3]})


async def test_a_min_insync_replicas_that_is_no_positive_integer_is_a_warning(h, caplog):
    """It falls back to the default, as before, but no longer silently."""
    await h.start_controller(101)
    await h.tick()
    await h.admin.set(paths.topic_config("t"), json.dumps({"version": 1, "config": {"min.insync.replicas": "abc"}}).encode())
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await h.submit({("t", 0): [4, 5, 6]})
        await h.run_until_quiet()
    assert _levels(caplog, "ignoring min.insync.replicas='abc' of topic 't'") == {logging.WARNING}
    h.check_invariants({("t", 0): [4, 5, 6]})


async def test_unknown_movement_strategies_of_an_entry_are_a_warning(h, caplog):
    """A newer tool's strategy names are skipped (the order is advice, the move goes on), but
    an operator who misspelled one hears of it once, when the entry becomes a move."""
    await h.start_controller(101)
    await h.tick()
    entry = {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [4, 5, 6], "movement_strategies": ["smalest_first", "largest_first"]},
        {"topic": "t", "partition": 1, "replicas": [4, 5, 6], "movement_strategies": ["largest_first"]}]}
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await h.admin.create(paths.REASSIGN_PARTITIONS, json.dumps(entry).encode())
        await h.run_until_quiet()
    warned = [r.getMessage() for r in caplog.records if r.name == "reassignd.controller"
              and r.levelno == logging.WARNING and "movement strateg" in r.getMessage()]
    assert len(warned) == 1 and "'smalest_first'" in warned[0] and "t-0" in warned[0], warned
    h.check_invariants({("t", 0): [4, 5, 6], ("t", 1): [4, 5, 6]})


async def test_a_move_whose_partition_state_is_unreadable_is_dropped_with_a_warning(h, caplog):
    """As Kafka drops a reassignment that failed from /admin/reassign_partitions: left LOADING,
    the move held its slots for ever, listed nowhere, and a repaired znode was never re-read."""
    await h.admin.set(paths.partition_state("t", 0), b"{not a state")
    c = await h.start_controller(101)
    await h.tick()
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await h.submit({("t", 0): [4, 5, 6], ("t", 1): [4, 5, 6]})
        await h.run_until_quiet()
    warned = [r.getMessage() for r in caplog.records if r.name == "reassignd.controller"
              and r.levelno == logging.WARNING and "t-0" in r.getMessage()]
    assert any("dropping reassignment" in w and "unreadable" in w for w in warned), warned
    assert not await h.admin.exists(paths.REASSIGN_PARTITIONS)
    assert ("t", 0) not in c.active.state.tasks
    assert c.active.state.assignments[("t", 1)].replicas == (4, 5, 6)
