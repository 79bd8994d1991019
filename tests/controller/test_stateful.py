"""Hypothesis stateful test: the controller on the ZooKeeper twin with simulated brokers.

Rules submit reassignments (Kafka's plain format, as a third-party tool writes them), crash the
active controller after any number of its ZooKeeper ops (a flush cut at any op boundary),
depose it in the middle of a flush (another controller elected), expire its session, start new
controllers, stop and restart brokers, and let time pass. After every
step DESIGN.md section 7 invariants 1, 2, 4 and 5 are checked in the form that holds at every
moment; at the end (brokers back, a controller running) the quiescent forms.

Targets only use brokers 1-4, which are never stopped, so every submitted entry is valid and
must complete (invariant 2); brokers 5 and 6 host original replicas and leaders and come and
go.
"""

from __future__ import annotations

import asyncio

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.controller.harness import Harness
from znodes import paths

TARGET_BROKERS = (1, 2, 3, 4)
FLAKY_BROKERS = (5, 6)
PARTITIONS = 6
MAX_CONTROLLERS = 2


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.h = Harness(topics=(f"t:{PARTITIONS}:3:64KiB",))
        self.next_id = 101
        # Per partition: (replicas before the batch, target) of the latest submitted batch.
        self.moves: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        self.final: dict[tuple[str, int], list[int]] = {}

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    @initialize()
    def start(self):
        self.run(self.h.start())
        self.final = dict(self.h.assignments)
        self.run(self.h.start_controller(self.new_id()))

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def alive(self):
        return [c for c in self.h.controllers if c.alive]

    def teardown(self):
        try:
            if hasattr(self.h, "admin"):
                self.run(self.quiesce())
        finally:
            self.run(self.h.close())
            self.loop.close()

    async def quiesce(self):
        for b in FLAKY_BROKERS:
            if not self.h.cluster.brokers[b].running:
                await self.h.cluster.start_broker(b)
        if not self.alive():
            await self.h.start_controller(self.new_id())
        for c in self.alive():
            c.store.remaining = None
            c.store.depose_after = None
        await self.h.run_until_quiet(max_seconds=300)
        self.h.check_invariants(self.final)

    # ---- rules -----------------------------------------------------------------------------

    @precondition(lambda self: self.h.server.exists(paths.REASSIGN_PARTITIONS) is None)
    @rule(data=st.data())
    def submit(self, data):
        partitions = data.draw(st.sets(st.integers(0, PARTITIONS - 1), min_size=1, max_size=PARTITIONS))
        current = self.h.current()
        batch = {}
        for p in sorted(partitions):
            target = data.draw(st.permutations(TARGET_BROKERS).map(lambda b: list(b[:3])))
            batch[("t", p)] = target
        self.h.requested = dict(batch)
        self.moves = {tp: (current[tp], target) for tp, target in batch.items()}
        self.final.update(batch)
        self.run(self.h.submit(batch))

    @precondition(lambda self: any(c.active is not None for c in self.alive()))
    @rule(k=st.integers(0, 8))
    def crash_active_after(self, k):
        for c in self.alive():
            if c.active is not None:
                c.store.remaining = k

    @precondition(lambda self: any(c.active is not None for c in self.alive()))
    @rule(k=st.integers(0, 8))
    def depose_active_after(self, k):
        for c in self.alive():
            if c.active is not None:
                c.store.depose_after = k

    @precondition(lambda self: any(c.active is not None for c in self.alive()))
    @rule()
    def expire_active(self):
        for c in self.alive():
            if c.active is not None:
                self.h.server.expire_session(c.store.session_id)
        self.run(self.h.settle())

    @precondition(lambda self: len(self.alive()) < MAX_CONTROLLERS)
    @rule()
    def start_controller(self):
        self.run(self.h.start_controller(self.new_id()))

    @rule(b=st.sampled_from(FLAKY_BROKERS))
    def toggle_broker(self, b):
        broker = self.h.cluster.brokers[b]
        if broker.running:
            self.run(self.h.cluster.stop_broker(b))
        else:
            self.run(self.h.cluster.start_broker(b))
        self.run(self.h.settle())

    @rule(n=st.integers(1, 8))
    def tick(self, n):
        for _ in range(n):
            self.run(self.h.tick())

    # ---- invariants after every step ------------------------------------------------------

    @invariant()
    def never_a_mix(self):
        """1: each partition is at its start, at its target, or exactly mid-move between them."""
        if not hasattr(self.h, "admin"):
            return
        znode = self.h.json(paths.topic("t"))
        adding, removing = znode.get("adding_replicas", {}), znode.get("removing_replicas", {})
        for p, replicas in znode["partitions"].items():
            tp = ("t", int(p))
            a, r = adding.get(p, []), removing.get(p, [])
            if tp not in self.moves:
                assert (replicas, a, r) == (self.final[tp], [], []), (tp, replicas, a, r)
                continue
            before, target = self.moves[tp]
            plain = ([], [])
            allowed = [
                (before, *plain),
                (target, *plain),
                (target + [b for b in before if b not in target], [b for b in target if b not in before],
                 [b for b in before if b not in target]),
            ]
            assert (replicas, a, r) in [tuple(x) for x in allowed], (tp, replicas, a, r, before, target)

    @invariant()
    def no_request_lost(self):
        """2: a move that is under way is recorded (so a failover cannot lose it)."""
        if not hasattr(self.h, "admin"):
            return
        znode = self.h.json(paths.topic("t"))
        for p, a in znode.get("adding_replicas", {}).items():
            if a:
                assert self.h.server.exists(paths.reassignment("t", int(p))) is not None, p

    @invariant()
    def removal_and_fencing(self):
        """4 and 5, recorded as they happen by the harness."""
        assert not self.h.violations, self.h.violations


ControllerMachine.TestCase.settings = settings(ControllerMachine.TestCase.settings, stateful_step_count=25)
TestControllerMachine = ControllerMachine.TestCase
