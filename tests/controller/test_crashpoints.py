"""Crash-point bookkeeping of the stateful suite (tests/controller/crashpoints.py) and the flush
kinds the engine labels its writes with (controller/core/flush.py, engine.Step.kinds)."""

from __future__ import annotations

from controller.core import flush
from tests.controller.crashpoints import POINTS, SHAPES, Coverage, Points, role
from tests.controller.harness import Harness
from znodes import paths
from znodes.api import Create, Delete, SetData


def test_role_names_the_znode_and_a_records_verb():
    assert role(Create(paths.reassignment("t", 0), b"{}")) == "record create"
    assert role(SetData(paths.reassignment("t", 0), b"{}", 0)) == "record write"
    assert role(Delete(paths.reassignment("t", 0))) == "record delete"
    assert role(Create(paths.reassignment_topic("t"))) == "records parent"
    assert role(SetData(paths.topic("t"), b"{}", 3)) == "topic"
    assert role(SetData(paths.partition_state("t", 2), b"{}", 1)) == "state"
    for op in (Create(paths.REASSIGN_PARTITIONS, b"{}"), SetData(paths.REASSIGN_PARTITIONS, b"{}", 1), Delete(paths.REASSIGN_PARTITIONS, 1)):
        assert role(op) == "requests"
    assert role(Create(paths.config_change_prefix(), b"{}", sequential=True)) == "config change"
    assert role(Delete(paths.THROTTLED_RATES_REMOVAL, 0)) == "rates removal"
    assert role(SetData(paths.topic_config("t"), b"{}", 0)) == "topic config"
    for name in ("t", "orders.eu"):  # a state znode's parents: one name for every topic
        assert role(Create(paths.partitions(name))) == role(Delete(paths.partitions(name))) == "partitions parent"
        assert role(Create(paths.partition(name, 7))) == role(Delete(paths.partition(name, 7))) == "partition parent"
    assert role(Create(paths.TOPICS)) == paths.TOPICS  # neither


def test_the_topic_kinds_shapes_are_what_their_code_writes():
    """SHAPES for create, delete and elect follow controller.core.topic_creation.state_ops,
    topic_deletion.deletion_ops (one partition, every znode present) and the elected state."""
    from controller.core.topic_creation import state_ops
    from controller.core.topic_deletion import deletion_ops
    from znodes.values import LeaderIsr

    state = LeaderIsr(1, 0, 1, (1, 2), 0)
    created = state_ops(("n", 0), state, frozenset({paths.partitions("n"), paths.partition("n", 0)}))
    assert tuple(role(op) for op in created) == SHAPES[flush.CREATE]
    present = {paths.partition_state("n", 0), paths.partition("n", 0), paths.partitions("n"), paths.topic_config("n"),
               paths.topic("n"), paths.delete_topic("n")}
    assert tuple(role(op) for op in deletion_ops("n", [0], present, whole=True)) == SHAPES[flush.DELETE]
    assert [role(op) for op in deletion_ops("n", [0], present, whole=False)] == ["deletion marker"]
    assert SHAPES[flush.ELECT] == (role(SetData(paths.partition_state("n", 0), b"{}", 3)),
                                   role(Delete(paths.PREFERRED_REPLICA_ELECTION, 0)))


def test_every_shape_role_is_a_role_name_and_every_flush_kind_has_a_shape():
    assert set(SHAPES) == set(flush.FLUSH_KINDS)
    assert len(POINTS) == len(set(POINTS))


def test_coverage_requires_what_was_written_and_flags_unknown_shapes():
    one, two = Points(), Points()
    topic = SetData(paths.topic("t"), b"{}", 0)
    one.flushed(frozenset({flush.START, flush.FINISH}), topic)
    one.cut(frozenset({flush.START, flush.FINISH}), topic)
    two.flushed(frozenset({flush.COMPLETE}), topic)  # not in SHAPES: the complete flush has no topic write
    two.flushed(frozenset({flush.ISR_CHANGE}), Delete("/isr_change_notification/isr_change_0000000001"))
    total = Coverage()
    total.add(one)
    total.add(two)
    assert total.required() == {(flush.START, "topic"), (flush.FINISH, "topic"), (flush.COMPLETE, "topic")}
    assert total.missing() == [(flush.COMPLETE, "topic")]
    assert total.unexpected() == [(flush.COMPLETE, "topic")]
    assert total.covered() == 2
    assert flush.QUEUE in total.kinds_unwritten()
    assert Coverage.from_json(total.to_json()).cut == total.cut
    assert any(line.split()[:3] == ["start", "3", "topic"] for line in total.table())


async def test_a_move_writes_its_kinds_and_a_cut_is_recorded_and_recovered():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        # Cut the first start just before its topic znode write: the record is created, the
        # topic znode is not; the next controller finishes the move (crash-after-every-op
        # tests cover the rest).
        h.cut_at[flush.START] = ("topic", False)
        await h.submit({("t", 0): [4, 5, 6]})
        assert (flush.START, "topic") in h.points.cuts
        assert h.controllers[0].store.crashed
        await h.start_controller(102)
        await h.run_until_quiet()
        h.check_invariants()
        written = h.points.written
        for point in [(flush.START, "record create"), (flush.START, "topic"), (flush.COMPLETE, "state"),
                      (flush.FINISH, "record delete"), (flush.FINISH, "topic"), (flush.FINISH, "requests")]:
            assert point in written, (point, sorted(written))
        assert not any(kind == "unlabelled" for kind, _ in written)
    finally:
        await h.close()
