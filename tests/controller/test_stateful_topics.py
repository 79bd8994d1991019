"""Hypothesis stateful test of topic administration (issue 14): the reassignment machine of
tests/controller/test_stateful.py (reassignments, overrides, cancels, queues, controller crashes
and depositions at any op, cut flushes, session expiry, brokers stopping) gains rules that
create topics (CreateTopics), delete them (DeleteTopics) and add partitions
(CreatePartitions), through the admin handlers of whichever controller is active, interleaved
with all of those.

Invariants at quiescence (every broker back, a controller running), beside the machine's own:

* no partition of a deleted topic remains on any broker's disk, nor its znodes or marker
  (a DeleteTopics acknowledged with NONE), and no broker hosts a replica of a partition
  ZooKeeper does not assign to it;
* no created partition is left without a leader: every partition of every topic has a state
  whose leader is one of its replicas, and its replicas are hosted exactly by its brokers.

Requests a crash cut (the handler raised) may or may not have landed: either outcome must
satisfy the invariants. ``STATEFUL_TOPIC_SCHEDULES`` schedules (default 30) run under pytest;
this machine is not in tests/controller/soak.py's sharded run (yet).

    STATEFUL_TOPIC_SCHEDULES=200 pytest tests/controller/test_stateful_topics.py
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

from controller.shell.admin.base import ApiError
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.create_topics import handle_create
from controller.shell.admin.delete_topics import handle_delete
from controller.shell.role import Role
from controller.shell.admin.base import AdminContext
from tests.controller import test_stateful
from tests.controller.harness import Crashed
from znodes import paths
from znodes.api import ZkError
from znodes.batch import FlushError

NAMES = ("n0", "n1", "n2")
QUIET_TICKS = 60


class TopicsMachine(test_stateful.ControllerMachine):
    def __init__(self):
        super().__init__()
        self.deleted: set[str] = set()  # acknowledged deletions not followed by a creation

    def active_context(self) -> AdminContext | None:
        for c in self.alive():
            if c.active is not None and c.active.state is not None:
                role = Role(c.id)
                role.active, role.store = c.active, c.store
                return AdminContext(role, self.h.config)
        return None

    def call(self, handler, version: int, body: dict) -> dict | None:
        ctx = self.active_context()
        if ctx is None:
            return None
        try:
            return self.run(handler(ctx, version, body))
        except (Crashed, ZkError, FlushError, ApiError):
            return None  # cut by a crash, or the controller lost its place: may or may not have landed

    @rule(name=st.sampled_from(NAMES), partitions=st.integers(1, 3), rf=st.integers(1, 3))
    def create_topic(self, name, partitions, rf):
        body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": rf,
                            "assignments": [], "configs": []}], "timeout_ms": 0, "validate_only": False}
        answer = self.call(handle_create, 7, body)
        if answer is None or answer["topics"][0]["error_code"] == 0:
            self.deleted.discard(name)  # created (or maybe): no longer expected gone
        self.run(self.h.settle())

    def existing(self) -> list[str]:
        return [n for n in NAMES if self.h.server.exists(paths.topic(n)) is not None]

    @precondition(lambda self: self.existing())
    @rule(data=st.data())
    def delete_topic(self, data):
        name = data.draw(st.sampled_from(self.existing()))
        answer = self.call(handle_delete, 6, {"topics": [{"name": name}], "timeout_ms": 0})
        if answer is not None and answer["responses"][0]["error_code"] == 0:
            self.deleted.add(name)
        self.run(self.h.settle())

    @precondition(lambda self: self.existing())
    @rule(data=st.data(), more=st.integers(1, 2))
    def add_partitions(self, data, more):
        name = data.draw(st.sampled_from(self.existing()))
        have = len(self.h.json(paths.topic(name))["partitions"])
        self.call(handle_create_partitions, 3, {"topics": [{"name": name, "count": have + more, "assignments": None}],
                                                "timeout_ms": 0, "validate_only": False})
        self.run(self.h.settle())

    async def quiesce(self):
        await super().quiesce()
        srv = self.h.server
        for _ in range(QUIET_TICKS):  # deletions and late leaders after every broker came back
            marked = srv.children(paths.DELETE_TOPICS) if srv.exists(paths.DELETE_TOPICS) is not None else []
            if not marked and all(srv.exists(paths.partition_state(t, p)) is not None
                                  for t, p in self.zk_partitions()):
                break
            await self.h.tick()
        self.check_topics()

    def zk_partitions(self) -> set[tuple[str, int]]:
        out = set()
        for t in self.h.server.children(paths.TOPICS):
            for p in self.h.json(paths.topic(t))["partitions"]:
                out.add((t, int(p)))
        return out

    def check_topics(self) -> None:
        srv = self.h.server
        assert not (srv.exists(paths.DELETE_TOPICS) is not None and srv.children(paths.DELETE_TOPICS))
        for name in self.deleted:
            assert srv.exists(paths.topic(name)) is None, name
            assert srv.exists(paths.topic_config(name)) is None, name
        assigned = {}
        for t, p in self.zk_partitions():
            replicas = self.h.json(paths.topic(t))["partitions"][str(p)]
            assigned[(t, p)] = set(replicas)
            state = self.h.json(paths.partition_state(t, p))  # no created partition without a state
            assert state["leader"] in replicas, (t, p, state, replicas)
        hosted: dict = {}
        for b, broker in self.h.cluster.brokers.items():
            for r in broker.core.replicas():
                hosted.setdefault((r.topic, r.partition), set()).add(b)
        for tp, brokers in hosted.items():
            assert tp[0] not in self.deleted, (tp, brokers)  # nothing of a deleted topic on a disk
            assert brokers <= assigned.get(tp, set()), (tp, brokers, assigned.get(tp))
        for tp, brokers in assigned.items():
            assert hosted.get(tp, set()) == brokers, (tp, hosted.get(tp), brokers)


def test_topic_schedules():
    count = int(os.environ.get("STATEFUL_TOPIC_SCHEDULES", "30"))
    config = settings(max_examples=count, stateful_step_count=30, deadline=None,
                      suppress_health_check=list(HealthCheck), database=None)
    run_state_machine_as_test(TopicsMachine, settings=config)
