"""An engine step leaves no reference cycle: everything it made and nobody keeps is freed by
reference counting when the step ends, not left for the cyclic collector. A working set whose op
lists pointed back at it kept every step's ops, overlays and messages alive until a collection
found them (in bench/controller.py the collector's middle generation took about a tenth of the
CPU, collecting ~20 objects per partition moved)."""

from __future__ import annotations

import gc

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import RequestsRead, StatesRead
from controller.core.flush import Writes
from controller.core.working_set import WorkingSet
from tests.controller.helpers import cluster, req, state

TOPICS = {"t": {p: (1, 2, 3) for p in range(20)}}


def _left_by(take_step) -> dict[str, int]:
    """The working sets and op lists still tracked after ``take_step`` ran with the collector
    off and its result dropped (only a cycle keeps them)."""
    gc.collect()
    gc.disable()
    try:
        take_step()
        left = {"WorkingSet": 0, "Writes": 0}
        for o in gc.get_objects():
            if isinstance(o, WorkingSet):
                left["WorkingSet"] += 1
            elif isinstance(o, Writes):
                left["Writes"] += 1
        return left
    finally:
        gc.enable()


def test_a_step_that_starts_moves_leaves_no_cycle():
    s = cluster(topics=TOPICS)
    config = ControllerConfig()
    s.apply(engine.step(s, [RequestsRead(0, tuple(req("t", p, (4, 5, 6)) for p in range(20)))], config).delta)
    states = StatesRead({("t", p): state(1, (1, 2, 3), zk_version=0) for p in range(20)})

    def start() -> None:
        step = engine.step(s, [states], config)
        # The step wrote ops of several kinds and has requests for the brokers (the outbox).
        assert step.writes and step.commands
        s.apply(step.delta)

    assert _left_by(start) == {"WorkingSet": 0, "Writes": 0}
