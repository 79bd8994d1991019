"""Hypothesis stateful test of topic administration (issue 14): the reassignment machine of
tests/controller/test_stateful.py (reassignments, overrides, cancels, queues, controller crashes
and depositions at any op, cut flushes, session expiry, brokers stopping) gains rules that
create topics (CreateTopics), delete them (DeleteTopics), add partitions (CreatePartitions)
and elect leaders (ElectLeaders, preferred or unclean), through the admin handlers of whichever
controller is active, interleaved with all of those; its cut_flush draws every crash point,
those of the kinds only this machine writes (create, delete, elect) included.

Invariants at quiescence (every broker back, a controller running), beside the machine's own:

* no partition of a deleted topic remains on any broker's disk, nor its znodes or marker
  (a DeleteTopics acknowledged with NONE), and no broker hosts a replica of a partition
  ZooKeeper does not assign to it;
* no created partition is left without a leader: every partition of every topic has a state
  whose leader is one of its replicas, and its replicas are hosted exactly by its brokers;
* a preferred election of every partition leaves each one whose preferred replica is live and
  in its ISR led by it, the others with their leaders (check_preferred_leaders).

After every election answered: a partition answered NONE had its new leader written (elect).

Requests a crash cut (the handler raised) may or may not have landed: either outcome must
satisfy the invariants. ``STATEFUL_TOPIC_SCHEDULES`` schedules (default 30) run under pytest;
this machine is not in tests/controller/soak.py's sharded run, but its scripted crash-point
schedules are (tests/controller/crash_schedules.py), and test_crash_points_of_topic_flushes runs
them here with their coverage check.

    STATEFUL_TOPIC_SCHEDULES=200 pytest tests/controller/test_stateful_topics.py
"""

from __future__ import annotations

import asyncio
import json
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

from controller.core.elections import PREFERRED, UNCLEAN
from controller.shell.admin.base import ApiError
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.create_topics import handle_create
from controller.shell.admin.delete_topics import handle_delete
from controller.shell.admin.elect_leaders import handle_elect
from controller.shell.role import Role
from controller.shell.admin.base import AdminContext
from protocol.errors import ErrorCode
from tests.controller import crash_schedules, test_stateful
from tests.controller.crashpoints import POINTS, Coverage
from tests.controller.harness import Crashed
from znodes import paths
from znodes.api import Create, SetData, ZkError
from znodes.batch import FlushError

NAMES = ("n0", "n1", "n2")
QUIET_TICKS = 60
# ElectLeaders' timeout_ms: never reached (a request the step does not answer within one settle
# is given up: the controller went first), only there so that the handler waits for its step.
ELECT_TIMEOUT_MS = 60_000
# What an ElectLeaders answer may say of a partition here (controller.core.elections; the
# handler's UNKNOWN_SERVER_ERROR when the step's writes failed).
ELECTION_CODES = {ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                  ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ErrorCode.REASSIGNMENT_IN_PROGRESS,
                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_SERVER_ERROR}
# Crash points the random schedules of this module wrote (test_topic_schedules checks their shapes).
SEEN = Coverage()


class TopicsMachine(test_stateful.ControllerMachine):
    def __init__(self):
        super().__init__()
        self.deleted: set[str] = set()  # acknowledged deletions not followed by a creation
        # Every partition state a controller's write landed with, in order: (partition, state).
        self.states_landed: list[tuple[tuple[str, int], dict]] = []

    async def start_new_controller(self):
        handle = await super().start_new_controller()
        recorded = handle.store.on_landed

        def landed(ops):
            recorded(ops)
            for op in ops:
                match = paths.classify(op.path)
                if isinstance(op, (Create, SetData)) and match is not None and match.kind is paths.ZnodeKind.PARTITION_STATE:
                    self.states_landed.append(((match.topic, match.partition), json.loads(op.data)))

        handle.store.on_landed = landed
        return handle

    @precondition(lambda self: any(c.active is not None for c in self.alive()))
    @rule(point=st.sampled_from(POINTS), deposing=st.booleans())
    def cut_flush(self, point, deposing):
        """The reassignment machine's rule over every crash point, this machine's kinds
        (topics, create, delete, elect) included."""
        kind, op = point
        self.h.cut_at[kind] = (op, deposing)

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

    async def ask(self, handler, version: int, body: dict) -> dict | None:
        """``handler``'s answer from the active controller, or None: no controller active, the
        request cut by a crash, or not answered once everything settled (its controller went
        before taking it from its queue)."""
        ctx = self.active_context()
        if ctx is None:
            return None
        task = asyncio.ensure_future(handler(ctx, version, body))
        await self.h.settle()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            return None
        if isinstance(task.exception(), (Crashed, ZkError, FlushError, ApiError)):
            return None
        return task.result()

    @precondition(lambda self: self.active_context() is not None)
    @rule(data=st.data(), election_type=st.sampled_from((PREFERRED, UNCLEAN)))
    def elect(self, data, election_type):
        """KIP-460 ElectLeaders, preferred or unclean, of a few partitions or (None) of every one,
        through the active controller. A partition answered NONE had a state written with its
        new leader (the preferred replica, which is in that state's ISR; unclean: a live
        replica of it, in that ISR); every other answer is one the rules allow."""
        asked = data.draw(st.none() | st.lists(st.sampled_from(sorted(self.zk_partitions())), min_size=1, max_size=3,
                                               unique=True))
        topics = None if asked is None else [
            {"topic": t, "partitions": [p for u, p in asked if u == t]} for t in sorted({t for t, _ in asked})]
        replicas = {tp: self.h.json(paths.topic(tp[0]))["partitions"][str(tp[1])] for tp in self.zk_partitions()}
        since = len(self.states_landed)
        answer = self.run(self.ask(handle_elect, 2, {"election_type": election_type, "topic_partitions": topics,
                                                     "timeout_ms": ELECT_TIMEOUT_MS}))
        if answer is not None:
            live = {b for b, broker in self.h.cluster.brokers.items() if broker.running}
            for tp, code in self.election_codes(answer).items():
                assert code in ELECTION_CODES, (tp, code, answer)
                if code != ErrorCode.NONE:
                    continue
                written = [s for t, s in self.states_landed[since:] if t == tp]
                if election_type == PREFERRED:
                    ok = [s for s in written if s["leader"] == replicas[tp][0] and s["leader"] in s["isr"]]
                else:
                    ok = [s for s in written if s["leader"] in replicas[tp] and s["leader"] in live and s["leader"] in s["isr"]]
                assert ok, ("an election answered NONE without its leader written", tp, election_type, replicas[tp], written)
        self.run(self.h.settle())

    @staticmethod
    def election_codes(answer: dict) -> dict:
        return {(r["topic"], p["partition_id"]): ErrorCode(p["error_code"])
                for r in answer["replica_election_results"] for p in r["partition_result"]}

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
        await self.check_preferred_leaders()
        SEEN.add(self.h.points)

    async def check_preferred_leaders(self) -> None:
        """At quiescence a preferred election of every partition (ElectLeaders, all partitions)
        leaves each partition whose preferred replica - the first of its replicas - is live and
        in its ISR led by it, as Kafka's PreferredReplicaPartitionLeaderElectionStrategy elects
        (controller.core.elections step 2), and every other partition with the leader it had."""
        before = {tp: self.h.json(paths.partition_state(*tp)) for tp in self.zk_partitions()}
        answer = await self.ask(handle_elect, 2, {"election_type": PREFERRED, "topic_partitions": None,
                                                  "timeout_ms": ELECT_TIMEOUT_MS})
        assert answer is not None and answer["error_code"] == 0, ("a preferred election at quiescence", answer)
        codes = self.election_codes(answer)
        assert set(codes.values()) <= {ErrorCode.NONE, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}, codes
        live = {b for b, broker in self.h.cluster.brokers.items() if broker.running}
        for tp, was in sorted(before.items()):
            preferred = self.h.json(paths.topic(tp[0]))["partitions"][str(tp[1])][0]
            state = self.h.json(paths.partition_state(*tp))
            if preferred in live and preferred in was["isr"]:
                assert state["leader"] == preferred, ("preferred replica live and in the ISR, not elected", tp, was, state)
            else:
                assert state["leader"] == was["leader"], ("leader changed by a preferred election that could not", tp, was, state)
        assert not self.h.violations, self.h.violations

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
    """Random schedules; whatever their flushes wrote is of a shape crashpoints.SHAPES knows
    (so test_crash_points_of_topic_flushes cuts it)."""
    count = int(os.environ.get("STATEFUL_TOPIC_SCHEDULES", "30"))
    config = settings(max_examples=count, stateful_step_count=30, deadline=None,
                      suppress_health_check=list(HealthCheck), database=None)
    SEEN.written.clear()
    SEEN.cut.clear()
    run_state_machine_as_test(TopicsMachine, settings=config)
    assert not SEEN.unexpected(), f"flushes of shapes not in crashpoints.SHAPES: {SEEN.unexpected()}"


def test_crash_points_of_topic_flushes():
    """docs/DESIGN.md 7.2: the scripted schedules of this machine's flush kinds (topics, create,
    delete, elect; tests/controller/crash_schedules.py) cut every crash point of theirs,
    crashing and deposing, with every invariant after every step and the quiescent ones at the
    end; every point of those kinds they wrote was cut, each kind was written, and no flush
    wrote a shape SHAPES lacks. (soak.py runs them too, with every other kind's.)"""
    failures, coverage = crash_schedules.run_all(kinds=crash_schedules.TOPIC_KINDS)
    assert not failures, "\n\n".join(failures)
    ours = crash_schedules.TOPIC_KINDS
    assert not coverage.unexpected(), f"flushes of shapes not in crashpoints.SHAPES: {coverage.unexpected()}"
    assert not [k for k in coverage.kinds_unwritten() if k in ours], coverage.kinds_unwritten()
    missing = [p for p in coverage.missing() if p[0] in ours]
    assert not missing, f"crash points written but never cut: {missing}\n" + "\n".join(coverage.table())


# ---- schedules the machine once found failing, replayed step by step ---------------------------


def test_a_preferred_election_of_every_partition_reads_the_states_from_zookeeper():
    """Broker 5 stops (t-1 [5,3,4] goes to 3) and the controller's session expires; at the end
    broker 5 is back and the new controller running. Broker 5 catches up and rejoins t-1's ISR
    in ZooKeeper before its leader's ISR change notification reaches the controller. An
    ElectLeaders naming no partition was decided from the states the controller held alone
    (only named partitions were read), so it answered PREFERRED_LEADER_NOT_AVAILABLE for t-1
    although ZooKeeper had 5 in its ISR and the same request naming t-1 elected 5; Kafka's
    controller reads every state of an election from ZooKeeper. Found by the quiescent
    preferred-election check (seed 1, shrunk)."""
    crash_schedules.replay([crash_schedules.rule("toggle_broker", b=5), crash_schedules.rule("expire_active")],
                           TopicsMachine)
