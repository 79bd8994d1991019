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
* an unclean election of every partition elects none: every leader is live
  (check_unclean_elections);
* a preferred election of every partition leaves each one whose preferred replica is live and
  in its ISR led by it, the others with their leaders (check_preferred_leaders).

After every election answered: a partition answered NONE had its new leader written with a
higher leader epoch (elect); an unclean one's leader was not online and the new one is an
online replica, alone in the ISR when no ISR member was online (check_unclean). Random
schedules reach an unclean election that elects about once in 300, so a scripted one runs with
the crash-point schedules too (crash_schedules.unclean_election), whole and cut in its flush.

Requests a crash cut (the handler raised) may or may not have landed: either outcome must
satisfy the invariants. ``STATEFUL_TOPIC_SCHEDULES`` schedules (default 30) run under pytest;
this machine is not in tests/controller/soak.py's sharded run, but its scripted crash-point
schedules are (tests/controller/crash_schedules.py), and test_crash_points_of_topic_flushes runs
them here with their coverage check.

    STATEFUL_TOPIC_SCHEDULES=200 pytest tests/controller/test_stateful_topics.py
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

from controller.core.elections import PREFERRED, UNCLEAN
from controller.core.flush import ELECT
from controller.shell.admin.base import ApiError
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.create_topics import handle_create
from controller.shell.admin.delete_topics import handle_delete
from controller.shell.admin.elect_leaders import handle_elect
from controller.shell.role import Role
from controller.shell.admin.base import AdminContext
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.controller import crash_schedules, test_stateful
from tests.controller.crashpoints import POINTS, Coverage
from tests.controller.harness import Crashed
from znodes import paths
from znodes.api import Create, SetData, ZkError
from znodes.batch import FlushError

NAMES = ("n0", "n1", "n2")
QUIET_TICKS = 60
# The requests ask for no wait (timeout_ms 0): what got under way is answered REQUEST_TIMED_OUT
# at once (Kafka's ZooKeeper-mode answer); NONE is validate_only's.
UNDER_WAY = (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT)
# ElectLeaders' timeout_ms: never reached (a request the step does not answer within one settle
# is given up: the controller went first), only there so that the handler waits for its step.
ELECT_TIMEOUT_MS = 60_000
# What an ElectLeaders answer may say of a partition here (controller.core.elections; the
# handler's UNKNOWN_SERVER_ERROR when the step's writes failed, NOT_CONTROLLER when the
# controller resigned with the request queued).
ELECTION_CODES = {ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                  ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ErrorCode.REASSIGNMENT_IN_PROGRESS,
                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NOT_CONTROLLER,
                  ErrorCode.INVALID_TOPIC_EXCEPTION}  # a topic being deleted (Kafka's)
# Crash points the random schedules of this module wrote (test_topic_schedules checks their shapes).
SEEN = Coverage()


class TopicsMachine(test_stateful.ControllerMachine):
    def __init__(self):
        super().__init__()
        self.deleted: set[str] = set()  # acknowledged deletions not followed by a creation
        # Every partition state a controller's write landed with, in order: (partition, state).
        self.states_landed: list[tuple[tuple[str, int], dict]] = []
        # Unclean elections answered NONE: (partition, its state before, the state elected).
        self.unclean_elected: list[tuple[tuple[str, int], dict | None, dict]] = []
        # Every election the rule asked for: (type, partition -> code), None when unanswered.
        self.election_answers: list[tuple[int, dict | None]] = []

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
        if answer is None or answer["topics"][0]["error_code"] in UNDER_WAY:
            self.deleted.discard(name)  # created (or maybe): no longer expected gone
        self.run(self.h.settle())

    def existing(self) -> list[str]:
        return [n for n in NAMES if self.h.server.exists(paths.topic(n)) is not None]

    @precondition(lambda self: self.existing())
    @rule(data=st.data())
    def delete_topic(self, data):
        name = data.draw(st.sampled_from(self.existing()))
        answer = self.call(handle_delete, 6, {"topics": [{"name": name}], "timeout_ms": 0})
        if answer is not None and answer["responses"][0]["error_code"] in UNDER_WAY:
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
        return await self.answered(handler(ctx, version, body))

    @precondition(lambda self: self.active_context() is not None)
    @rule(data=st.data(), election_type=st.sampled_from((PREFERRED, UNCLEAN)))
    def elect(self, data, election_type):
        """KIP-460 ElectLeaders, preferred or unclean, of a few partitions or (None) of every one,
        through the active controller. A partition answered NONE had a state written with its
        new leader and a higher leader epoch: the preferred replica, in that state's ISR;
        unclean (check_unclean), a replica online, its leader was not; every other answer is
        one the rules allow."""
        asked = data.draw(st.none() | st.lists(st.sampled_from(sorted(self.zk_partitions())), min_size=1, max_size=3,
                                               unique=True))
        topics = None if asked is None else [
            {"topic": t, "partitions": [p for u, p in asked if u == t]} for t in sorted({t for t, _ in asked})]
        replicas = {tp: self.h.json(paths.topic(tp[0]))["partitions"][str(tp[1])] for tp in self.zk_partitions()}
        before = {tp: self.h.json(paths.partition_state(*tp)) for tp in replicas
                  if self.h.server.exists(paths.partition_state(*tp)) is not None}
        online = self.online_replicas()
        since = len(self.states_landed)
        answer = self.run(self.ask(handle_elect, 2, {"election_type": election_type, "topic_partitions": topics,
                                                     "timeout_ms": ELECT_TIMEOUT_MS}))
        self.election_answers.append((election_type, None if answer is None else self.election_codes(answer)))
        if answer is not None:
            for tp, code in self.election_codes(answer).items():
                assert code in ELECTION_CODES, (tp, code, answer)
                if code != ErrorCode.NONE:
                    continue
                was = before.get(tp)
                written = [s for t, s in self.states_landed[since:] if t == tp
                           and (was is None or s["leader_epoch"] > was["leader_epoch"])]
                if election_type == PREFERRED:
                    ok = [s for s in written if s["leader"] == replicas[tp][0] and s["leader"] in s["isr"]]
                else:
                    ok = [s for s in written if self.check_unclean(was, s, replicas[tp], online.get(tp, set()))]
                    if ok:
                        self.unclean_elected.append((tp, was, ok[0]))
                assert ok, ("an election answered NONE without its leader written", tp, election_type, replicas[tp],
                            was, written, sorted(online.get(tp, ())))
        self.run(self.h.settle())

    @rule(data=st.data())
    def elect_by_znode(self, data):
        """Kafka's ZooKeeper door: a tool creates /admin/preferred_replica_election naming a few
        partitions (a topic being deleted or gone included: skipped), whether or not a controller
        is active; Kafka's tool writes nothing while one exists. The controller elects them and
        deletes it in its elect flush (controller.core.elections step 5); at quiescence it is gone
        (check_preferred_znode)."""
        partitions = sorted(self.zk_partitions() | {("gone", 0)})
        asked = data.draw(st.lists(st.sampled_from(partitions), min_size=1, max_size=3, unique=True))
        payload = json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in asked]}).encode()
        if self.h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None:
            self.run(self.h.admin.create(paths.PREFERRED_REPLICA_ELECTION, payload))
            self.run(self.h.settle())

    @staticmethod
    def check_unclean(was: dict | None, elected: dict, replicas: list[int], online: set[int]) -> bool:
        """An unclean election's state (KIP-460's UNCLEAN, Kafka's offline election with unclean
        allowed; controller.core.elections step 3): the partition's leader was not online, the
        new one is an online replica; from an online ISR member (clean) the ISR keeps its online
        members, else the new leader is alone in it."""
        leader, isr = elected["leader"], elected["isr"]
        if leader not in replicas or leader not in online or (was is not None and was["leader"] in online):
            return False
        if was is not None and not set(was["isr"]) & online:
            return isr == [leader]
        return leader in isr and set(isr) <= online and (was is None or set(isr) <= set(was["isr"]))

    def online_replicas(self) -> dict[tuple[str, int], set[int]]:
        """Per partition, the brokers whose replica of it is online: running, registered, and
        not on a failed log directory (the leaders invariant's online)."""
        registered = {int(b) for b in self.h.server.children(paths.BROKER_IDS)}
        out: dict[tuple[str, int], set[int]] = {}
        for b, broker in self.h.cluster.brokers.items():
            if not broker.running or b not in registered:
                continue
            for r in broker.core.replicas():
                if not r.storage_error:
                    out.setdefault((r.topic, r.partition), set()).add(b)
        return out

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
        await self.check_preferred_znode()
        await self.check_unclean_elections()
        await self.check_preferred_leaders()
        SEEN.add(self.h.points)

    async def check_preferred_znode(self) -> None:
        """At quiescence no /admin/preferred_replica_election is left: the active controller took
        it (at its write, or at its election after a crash cut the delete) and deleted it."""
        for _ in range(QUIET_TICKS):
            if self.h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None:
                return
            await self.h.tick()
        raise AssertionError(("/admin/preferred_replica_election left at quiescence",
                              self.h.server.read(paths.PREFERRED_REPLICA_ELECTION)[0]))

    async def check_unclean_elections(self) -> None:
        """At quiescence every replica is online and every partition led (check_topics), so an
        unclean election of each partition, named, elects none: ELECTION_NOT_NEEDED for all
        (KIP-460: an unclean election only replaces a leader that is not live), and no state
        is written."""
        wanted = sorted(self.zk_partitions())
        topics = [{"topic": t, "partitions": [p for u, p in wanted if u == t]} for t in sorted({t for t, _ in wanted})]
        since = len(self.states_landed)
        answer = await self.ask(handle_elect, 2, {"election_type": UNCLEAN, "topic_partitions": topics,
                                                  "timeout_ms": ELECT_TIMEOUT_MS})
        assert answer is not None and answer["error_code"] == 0, ("an unclean election at quiescence", answer)
        codes = self.election_codes(answer)
        assert set(codes) == set(wanted), (codes, wanted)
        assert set(codes.values()) == {ErrorCode.ELECTION_NOT_NEEDED} or not codes, codes
        assert self.states_landed[since:] == [], ("an unclean election at quiescence wrote", self.states_landed[since:])

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


def test_an_unclean_election_elects_an_online_replica_once_its_whole_isr_is_offline():
    """KIP-460's UNCLEAN, scripted (crash_schedules.unclean_election; random schedules reach it
    about once in 300): t-2 [6,4,5] is left leaderless with ISR [5] while 6 is online outside it
    (4's replica on a failed directory). The unclean election elects 6 alone in the ISR with the
    leader epoch + 1, and the LeaderAndIsr broker 6 gets says so; asked again, nothing to do."""
    made = []
    crash_schedules.replay(crash_schedules.unclean_election(), lambda: made.append(TopicsMachine()) or made[-1])
    [m] = made
    tp = crash_schedules.UNCLEAN_PARTITION
    assert m.election_answers == [(UNCLEAN, {tp: ErrorCode.NONE}), (UNCLEAN, {tp: ErrorCode.ELECTION_NOT_NEEDED})]
    [(elected_tp, was, elected)] = m.unclean_elected
    assert elected_tp == tp and was["leader"] == -1 and was["isr"] == [5], was
    assert elected["leader"] == 6 and elected["isr"] == [6] and elected["leader_epoch"] == was["leader_epoch"] + 1
    assert (6, elected["leader_epoch"]) in _leader_and_isr_sent(m, tp, 6)


def test_an_unclean_election_cut_in_its_flush_is_taken_again_by_the_next_controller():
    """The same schedule with the election's flush cut before its state write, the controller
    crashed there and then deposed there: nothing was elected (no answer, or not NONE), the
    partition stays leaderless (t's unclean setting is false, so no controller elects 6 by
    itself), and the request asked again of the controller that follows elects 6 alone in the
    ISR; every invariant after every step and at quiescence."""
    tp = crash_schedules.UNCLEAN_PARTITION
    for deposing in (False, True):
        made = []
        cut = crash_schedules.rule("cut_flush", point=(ELECT, "state"), deposing=deposing)
        points = crash_schedules.replay([cut, *crash_schedules.unclean_election()],
                                        lambda: made.append(TopicsMachine()) or made[-1])
        [m] = made
        assert (ELECT, "state") in points.cuts, deposing
        (first_type, first), (second_type, second) = m.election_answers
        assert first_type == second_type == UNCLEAN
        assert first is None or first[tp] != ErrorCode.NONE, (deposing, first)
        assert second == {tp: ErrorCode.NONE}, (deposing, second)
        [(_, was, elected)] = m.unclean_elected
        assert was["leader"] == -1 and was["isr"] == [5], (deposing, was)
        assert elected["leader"] == 6 and elected["isr"] == [6] and elected["leader_epoch"] == was["leader_epoch"] + 1
        assert (6, elected["leader_epoch"]) in _leader_and_isr_sent(m, tp, 6), deposing


def _leader_and_isr_sent(m, tp, broker: int) -> list[tuple[int, int]]:
    """(leader, leader epoch) of each LeaderAndIsr entry for ``tp`` sent to ``broker`` whose
    ISR is its leader alone."""
    out = []
    for b, key, body in m.h.sent:
        if b != broker or key != ApiKey.LEADER_AND_ISR:
            continue
        for topic in body["topic_states"]:
            for e in topic["partition_states"]:
                if (topic["topic_name"], e["partition_index"]) == tp and e["isr"] == [e["leader"]]:
                    out.append((e["leader"], e["leader_epoch"]))
    return out
