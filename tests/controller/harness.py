"""A deterministic cluster for controller tests: the ZooKeeper twin, simulated brokers driven by
a manual clock (sim.cluster + sim.inprocess), and controllers that can be crashed after any
ZooKeeper write.

    h = Harness(brokers=6, topics=["t:4:3:64KiB"])
    await h.start()
    c = await h.start_controller(101, crash_after=7)   # dies after its 7th written op
    await h.submit({("t", 0): [4, 5, 6]})
    await h.run_until_quiet()
    h.check_invariants()
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from types import SimpleNamespace

from controller.core.config import ControllerConfig
from controller.shell.active import ActiveController
from controller.shell.election import campaign
from controller.shell.inbox import Inbox
from protocol import ApiKey
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.inprocess import InProcessTransport
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.controller.crashpoints import Points, role
from tests.chaos.checker import controller_owned
from znodes import paths, values
from znodes.api import Create, Delete, MultiOpError, SessionExpiredError, SetData
from znodes.batch import FlushError
from znodes.twin import TwinServer

MB = 1_000_000
TICK_S = 0.25
# Settling runs the event loop until every task (controller loop, dispatcher, in-process
# brokers) waits on something only a later step gives (the manual clock, a crashed peer, a
# real-time backoff): the twin and the in-process transport never block, so a loop with no
# ready callback for two turns running is settled. The cap only stops a task that never waits.
SETTLE_TURNS = 2_000


class Crashed(Exception):
    pass


class CrashingStore:
    """A store whose fenced writes go through one op at a time (a flush cut at ANY op
    boundary) and whose session expires right after its ``crash_after``-th op lands."""

    def __init__(self, inner, server: TwinServer, crash_after: int | None, violations: list[str] | None = None):
        self._inner = inner
        self._server = server
        self.remaining = crash_after
        self.ops_applied = 0
        self.crashed = False
        self.violations = violations if violations is not None else []
        # Depose this controller just before its n-th next op: another session wins an
        # election (bumping the epoch) while this one's flush is under way.
        self.depose_after: int | None = None
        # Called with each op before it is written (ops then go one at a time).
        self.before_op = None
        # kind -> (role, depose): cut the next op written for that kind of flush with that role
        # (tests/controller/crashpoints.py): crash there, or depose this controller there.
        # One per kind, so a cut waiting for a rare kind is not replaced by a common one's.
        self.cut_at: dict[str, tuple[str, bool]] = {}
        # The kinds of flush an op is written for (set by ControllerHandle), and where the
        # crash points written and cut are recorded.
        self.labels = lambda op: frozenset({"unlabelled"})
        self.points = Points()
        self.on_landed = None  # called with the ops of each write that landed

    def _landed(self, ops) -> None:
        """Invariant 5: a controller write only lands while that controller holds /controller.
        Then ``on_landed`` sees what landed."""
        holder = self._server.exists(paths.CONTROLLER)
        if holder is None or holder.ephemeral_owner != self._inner.session_id:
            self.violations.append(f"invariant 5: session {self._inner.session_id:#x} wrote while not the controller")
        if self.on_landed is not None:
            self.on_landed(ops)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def multi(self, ops):
        if ops and getattr(ops[0], "path", None) == paths.CONTROLLER:
            return await self._inner.multi(ops)  # the election
        # Any other multi of a controller is a write that must be fenced: treat it as one.
        return await self.fenced_multi(ops, None)

    async def fenced_multi(self, ops, epoch_zkversion):
        if epoch_zkversion is None:
            # Invariant 5's other half, on every write whoever sends it: a znode only the
            # active controller writes is written only in a multi fenced by its epoch (the
            # chaos checker's rule). Checked on the attempt: a fence missing is a bug even on
            # a write that happens to come from the controller of the day.
            owned = [op.path for op in ops if controller_owned(getattr(op, "path", ""))]
            if owned:
                self.violations.append(
                    f"unfenced write: session {self._inner.session_id:#x} wrote {owned} without the epoch check"
                )
            inner = lambda chunk, _: self._inner.multi(chunk)  # noqa: E731
        else:
            inner = self._inner.fenced_multi
        return await self._write(inner, ops, epoch_zkversion)

    async def _write(self, inner, ops, epoch_zkversion):
        for op in ops:
            self.points.flushed(self.labels(op), op)
        if self.cut_at:
            return await self._steered_multi(inner, ops, epoch_zkversion)
        if self.before_op is not None:
            results = []
            for unit in _units(ops):
                await self.before_op(unit[0])
                results += await self._land(inner, unit, epoch_zkversion, ops, results)
                self._landed(unit)
                self.ops_applied += len(unit)
            return results
        if self.depose_after is not None:
            return await self._deposing_multi(inner, ops, epoch_zkversion)
        if self.remaining is None:
            results = await inner(ops, epoch_zkversion)
            self._landed(ops)
            self.ops_applied += len(ops)
            return results
        results = []
        for unit in _units(ops):
            op = unit[0]
            if self.remaining <= 0:
                self.points.cut(self.labels(op), op)
                self.crashed = True
                self._server.expire_session(self._inner.session_id)
                raise SessionExpiredError("crashed by the test")
            results += await self._land(inner, unit, epoch_zkversion, ops, results)
            self._landed(unit)
            self.remaining -= 1
            self.ops_applied += len(unit)
        return results


    @staticmethod
    async def _land(inner, unit, epoch_zkversion, ops, results):
        """One unit of a write landed op by op. A unit failing after ops of the same write
        landed (``results``: theirs) is reported as a flush's later chunk would be, a
        znodes.batch.FlushError with those ops applied: the harness lands a multi one op at a
        time to cut it anywhere, as between the chunks of a large flush, while ZooKeeper applies
        each multi whole or not at all; a plain MultiOpError would pass them off as unapplied
        (and a step that met a stale partition state would be taken again over its own
        half-landed writes, controller.shell.state_conflicts)."""
        try:
            return await inner(unit, epoch_zkversion)
        except MultiOpError as e:
            if not results:
                raise
            index = len(results) + e.index
            raise FlushError(f"op {index} failed after {len(results)} ops landed: {e.cause!r}",
                             MultiOpError(index, e.cause, list(ops)), index=index, results=list(results),
                             in_doubt=[], unsent=list(ops)[len(results):]) from e

    async def _deposing_multi(self, inner, ops, epoch_zkversion):
        results = []
        for unit in _units(ops):
            op = unit[0]
            if self.depose_after <= 0:
                self.points.cut(self.labels(op), op)
                self.depose_after = None
                await depose(self._server)
            results += await self._land(inner, unit, epoch_zkversion, ops, results)
            self._landed(unit)
            self.ops_applied += len(unit)
            if self.depose_after is not None:
                self.depose_after -= 1
        return results

    async def _steered_multi(self, inner, ops, epoch_zkversion):
        results = []
        for unit in _units(ops):
            op = unit[0]
            kinds = self.labels(op)
            armed = [k for k in kinds if k in self.cut_at and self.cut_at[k][0] == role(op)]
            if armed:
                deposing = self.cut_at.pop(armed[0])[1]
                self.points.cut(kinds, op)
                if not deposing:
                    self.crashed = True
                    self._server.expire_session(self._inner.session_id)
                    raise SessionExpiredError("crashed by the test")
                await depose(self._server)
            results += await self._land(inner, unit, epoch_zkversion, ops, results)
            self._landed(unit)
            self.ops_applied += len(unit)
        return results


def _units(ops):
    """``ops`` as the harness lands them, one at a time (a cut can fall between any two, as
    between the chunks of a large flush), except the throttle removal's guard: its create and
    delete of /admin/reassign_partitions (controller.core.throttle_removal step 3) are one unit,
    as the rule writes the whole removal as one multi - split, a cut between them would leave a
    znode the real write never can."""
    ops = list(ops)
    i = 0
    while i < len(ops):
        op = ops[i]
        nxt = ops[i + 1] if i + 1 < len(ops) else None
        if isinstance(op, Create) and op.path == paths.REASSIGN_PARTITIONS and isinstance(nxt, Delete) and nxt.path == op.path:
            yield [op, nxt]
            i += 2
        else:
            yield [op]
            i += 1


async def depose(server: TwinServer) -> None:
    """Take /controller away from whoever holds it: an operator deletes it and another session
    wins an election (epoch + 1), then that session dies (its /controller goes with it)."""
    from controller.shell.election import try_elect

    admin = server.connect()
    await admin.delete(paths.CONTROLLER)
    usurper = server.connect()
    await try_elect(usurper, 999)
    server.expire_session(usurper.session_id)
    await admin.close()


class WatchingTransport:
    """InProcessTransport that checks invariant 4 at every StopReplica(delete): the partition's
    state znode must hold every target replica in its ISR (and the target be the znode's RS)."""

    def __init__(self, harness: Harness):
        self.inner = InProcessTransport(harness.cluster)
        self.harness = harness

    async def request(self, broker_id, api_key, api_version, body):
        self.harness.sent.append((broker_id, api_key, body))
        if api_key == ApiKey.LEADER_AND_ISR and self.harness.check_leader_epochs:
            for topic in body["topic_states"]:
                for entry in topic["partition_states"]:
                    self.harness.check_leader_epoch(body["controller_epoch"], broker_id, topic["topic_name"], entry)
        if api_key == ApiKey.STOP_REPLICA:
            for topic in body["topic_states"]:
                for entry in topic["partition_states"]:
                    if entry.get("delete_partition"):
                        self.harness.check_removal(topic["topic_name"], entry["partition_index"], broker_id)
        return await self.inner.request(broker_id, api_key, api_version, body)

    async def close(self):
        await self.inner.close()


class ControllerHandle:
    def __init__(self, harness: Harness, controller_id: int, store: CrashingStore, throttle_removal=()):
        self.throttle_removal = tuple(throttle_removal)
        self.harness = harness
        self.id = controller_id
        self.store = store
        self.inbox = Inbox(store)
        self.active: ActiveController | None = None
        store.labels = self.labels
        self.task = asyncio.create_task(self._run())
        self.outcomes: list[str] = []

    async def _run(self):
        while not self.inbox.lost:
            won = await campaign(self.store, self.inbox, self.id)
            if won is None:
                break
            self.active = ActiveController(
                self.store,
                self.inbox,
                controller_id=self.id,
                epoch=won.epoch,
                epoch_zkversion=won.epoch_zkversion,
                transport=WatchingTransport(self.harness),
                config=self.harness.config,
                throttle_removal=self.throttle_removal,
            )
            reason = await self.active.run()
            self.outcomes.append(reason)
            self.active = None
            if reason == "session lost":
                break

    def labels(self, op) -> frozenset[str]:
        """The kinds of flush ``op`` is written for: its step's (engine.Step.kinds; throttle
        removal's write is the step's too), or a topic deletion's."""
        step = self.active.flushing if self.active is not None else None
        if self.active is not None and self.active.own_flush is not None:
            return frozenset({self.active.own_flush})  # a topic deletion's znodes
        if step is not None:
            for written, kinds in zip(step.writes, step.kinds):
                if written is op:
                    return kinds
        return frozenset({"unlabelled"})

    @property
    def alive(self) -> bool:
        return not self.task.done()

    async def stop(self):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.inbox.close()
        try:
            await self.store.close()
        except Exception:
            pass


class Harness:
    def __init__(self, brokers: int = 6, topics=("t:4:3:64KiB",), config: ControllerConfig | None = None,
                 log_dirs: tuple[str, ...] = (), isr_via: str = "zookeeper"):
        """``log_dirs``: every broker's log directories (KIP-113; default one). ``isr_via``: how
        the leaders change ISRs (sim.cluster.ClusterSettings.isr_via); "alter_partition" sends
        their AlterPartition requests to the active controller's handler in this process
        (:meth:`controller_request`)."""
        self.server = TwinServer()
        self.clock = ManualClock()
        settings = ClusterSettings(
            brokers=brokers,
            copy=CopySettings(bandwidth=2 * MB, produce_bytes=0, produce_messages=0),
            broker=BrokerConfig(replica_lag_time_max=3.0, isr_notification_quiet=0.25, isr_notification_max_delay=1.0,
                                log_dirs=log_dirs),
            isr_via=isr_via,
        )
        self.cluster = SimulatedCluster(self.server.connect, settings, clock=self.clock, serve=False,
                                        controller_request=self.controller_request)
        self.isr_requests: list[tuple[dict, dict]] = []  # (AlterPartition request, its answer) answered
        self.topic_specs = [parse_topic_spec(t) for t in topics]
        self.config = config or ControllerConfig(retry_backoff_s=0.0, request_retries=0)
        self.controllers: list[ControllerHandle] = []
        self.violations: list[str] = []
        self.assignments: dict = {}
        self.requested: dict[tuple[str, int], list[int]] = {}
        self.sent: list[tuple[int, int, dict]] = []  # (broker, api key, body) every controller sent
        self.points = Points()  # crash points every controller wrote and cut (crashpoints.py)
        # Cuts armed for whichever controller writes next (CrashingStore.cut_at): a cut waiting
        # for a kind of flush outlives the controller that was active when it was armed.
        self.cut_at: dict[str, tuple[str, bool]] = {}
        # Leader epochs checked on every LeaderAndIsr sent (check_leader_epoch; the stateful
        # suite turns it on): per partition, the (leader, replicas) last sent and the highest
        # leader epoch sent, from the state the topics were created with.
        self.check_leader_epochs = False
        # (broker, partition) -> (leader, replicas) last sent to that broker, the highest epoch
        # sent it, and the czxid of the state znode then (a partition deleted and created again
        # starts over at epoch 0).
        self.lai_sent: dict[tuple[int, tuple[str, int]], tuple[int, tuple[int, ...], int, int]] = {}
        self.lai_initial: dict[tuple[str, int], tuple[int, tuple[int, ...], int, int]] = {}
        # Per partition, every leader epoch its state znode was written with (by a controller's
        # landed write, or at creation); brokers' ISR changes keep the leader epoch.
        self.state_epochs: dict[tuple[str, int], set[int]] = {}

    async def start(self):
        # Topic ids CreateTopics draws (znodes.values.new_topic_id) from a seeded source: the
        # same schedule writes the same topic znodes (the stateful suite's digest of how
        # schedules end). Given back at close.
        ids = random.Random(0)
        self._uuid_bytes = values.random_uuid_bytes
        values.random_uuid_bytes = lambda: uuid.UUID(int=ids.getrandbits(128), version=4).bytes
        await self.cluster.start()
        created = await self.cluster.create_topics(self.topic_specs)
        self.assignments = {(t, p): list(r) for t, parts in created.items() for p, r in parts.items()}
        self.admin = self.server.connect()
        for tp, replicas in self.assignments.items():
            data, stat = self.server.read(paths.partition_state(*tp))
            state = json.loads(data)
            self.lai_initial[tp] = (state["leader"], tuple(replicas), state["leader_epoch"], stat.czxid)
            self.state_epochs[tp] = {state["leader_epoch"]}

    async def close(self):
        try:
            for c in self.controllers:
                await c.stop()
            await self.cluster.close()
        finally:
            values.random_uuid_bytes = getattr(self, "_uuid_bytes", values.random_uuid_bytes)

    async def start_controller(
        self, controller_id: int, crash_after: int | None = None, throttle_removal=()
    ) -> ControllerHandle:
        """A controller candidate; ``throttle_removal``: the throttle checks it reads for ("all",
        "idle"; none: throttles stay, as a test of something else wants)."""
        store = CrashingStore(self.server.connect(), self.server, crash_after, self.violations)
        store.points = self.points
        store.cut_at = self.cut_at
        store.on_landed = self._state_epochs_landed
        handle = ControllerHandle(self, controller_id, store, throttle_removal)
        self.controllers.append(handle)
        await self.settle()
        return handle

    async def settle(self, turns: int = SETTLE_TURNS):
        """Run the loop until nothing is ready to run (at most ``turns`` turns)."""
        loop = asyncio.get_running_loop()
        idle = 0
        for _ in range(turns):
            await asyncio.sleep(0)
            # Our own wake-up has been taken off the ready queue; anything left there is
            # another task's work (or a timer that just fell due) still to run.
            idle = 0 if loop._ready else idle + 1  # noqa: SLF001 (asyncio's ready queue)
            if idle >= 2:
                return

    async def controller_request(self, broker_id: int, api_key: int, version: int, body: dict) -> dict:
        """A broker's request to the controller ``/controller`` names (AlterPartition), handled
        by that instance's admin handler as its listener would; NoAnswer when no instance is
        active there, or it crashed, resigned or was deposed before answering (the broker
        proposes again at a later advance, as after a lost connection)."""
        from controller.shell.admin.alter_partition import handle_alter
        from controller.shell.admin.base import AdminContext
        from sim.controller_link import NoAnswer

        assert api_key == ApiKey.ALTER_PARTITION, api_key
        if self.server.exists(paths.CONTROLLER) is None:
            raise NoAnswer("no /controller")
        cid = self.json(paths.CONTROLLER)["brokerid"]
        handle = next((c for c in self.controllers if c.id == cid and c.alive and c.active is not None
                       and c.active.state is not None), None)
        if handle is None:
            raise NoAnswer(f"controller {cid} is not taking requests")
        active = handle.active
        ctx = AdminContext(SimpleNamespace(active=active, store=handle.store, controller_id=cid), self.config)
        task = asyncio.ensure_future(handle_alter(ctx, version, body))
        # Waits only while that instance is still the active one: a crash between the request
        # and its step (the step's future is then failed by nobody) must not hold the tick.
        while not task.done():
            if not handle.alive or handle.active is not active:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise NoAnswer(f"controller {cid} went before answering")
            await asyncio.sleep(0)
        if task.exception() is not None:
            raise NoAnswer(f"controller {cid}: {task.exception()!r}")
        answer = task.result()
        self.isr_requests.append((body, answer))
        return answer

    async def tick(self, seconds: float = TICK_S):
        self.clock.advance(seconds)
        await self.cluster.advance()
        await self.settle()
        self.raise_crashed()

    def raise_crashed(self) -> None:
        """A controller whose task died of an exception fails the test with it, at once: left
        alone it reads as a controller doing nothing ("not quiet" two minutes later)."""
        for c in self.controllers:
            if c.task.done() and not c.task.cancelled() and c.task.exception() is not None:
                raise AssertionError(f"controller {c.id} died") from c.task.exception()

    async def submit(self, targets: dict[tuple[str, int], list[int]]):
        """Write /admin/reassign_partitions in Kafka's plain format (no original_replicas)."""
        self.requested.update(targets)
        entries = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())]
        await self.admin.create(paths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": entries}).encode())
        await self.settle()

    def busy(self) -> bool:
        srv = self.server
        if srv.exists("/admin/reassign_partitions") is not None:
            return True
        return bool(srv.exists(paths.REASSIGNMENTS) and srv.children(paths.REASSIGNMENTS))

    async def run_until_quiet(self, max_seconds: float = 120.0) -> float:
        """Tick until nothing is pending or running; returns the simulated seconds it took."""
        start = self.clock()
        while self.busy():
            if self.clock() - start > max_seconds:
                raise AssertionError(f"not quiet after {max_seconds}s:\n{self.server.dump()[:4000]}")
            await self.tick()
        await self.tick()
        return self.clock() - start

    # ---- invariants (docs/DESIGN.md section 7) --------------------------------------------------

    def json(self, path):
        return json.loads(self.server.read(path)[0])

    def check_removal(self, topic, partition, broker_id):
        if self.server.exists(paths.delete_topic(topic)) is not None:
            return  # the topic is being deleted (DeleteTopics): every replica goes, invariant 4 is moot
        state = self.json(paths.partition_state(topic, partition))
        record_path = paths.reassignment(topic, partition)
        record = self.json(record_path) if self.server.exists(record_path) is not None else None
        if record is not None and record.get("cancelling"):
            # KIP-236 rollback: an added replica goes only once leader and ISR are back in ORS.
            original = record["original_replicas"]
            if (
                broker_id in original
                or state["leader"] not in [*original, -1]
                or not set(state["isr"]) <= set(original)
            ):
                self.violations.append(
                    f"invariant 4: rollback of {topic}-{partition} removed {broker_id} with state {state}, ORS {original}"
                )
            return
        # A replica no move keeps and holding no in-sync copy - an override's dropped replica
        # outside the ISR, a stray a registering broker still hosts, a finished move's removed
        # replica that the ISR lost since - goes at once. Invariant 4 protects in-sync copies
        # and the original replicas a rollback returns to; while a move can still roll back its
        # topic znode lists them (RS = TRS + ORS - TRS), and once its finish wrote RS = TRS (a
        # cut before the record delete leaves the record: the next controller resumes it
        # STOPPING, which no cancel rolls back) none is left to return to.
        replicas = self.json(paths.topic(topic))["partitions"].get(str(partition), [])
        if broker_id not in replicas and broker_id not in state["isr"]:
            return
        # The move's own target: its KIP-240 record while it runs (a later target may be queued).
        target = record["replicas"] if record is not None else self.requested.get((topic, partition))
        if target is None or not set(target) <= set(state["isr"]):
            self.violations.append(
                f"invariant 4: replica {topic}-{partition} on {broker_id} removed with ISR {state['isr']}, target {target}"
            )

    def _state_epochs_landed(self, ops) -> None:
        for op in ops:
            if isinstance(op, (Create, SetData)) and op.data:
                match = paths.classify(op.path)
                if match is not None and match.kind is paths.ZnodeKind.PARTITION_STATE:
                    tp = (match.topic, match.partition)
                    epoch = json.loads(op.data)["leader_epoch"]
                    if isinstance(op, Create):  # a new partition (or one created again): its own epochs
                        self.state_epochs[tp] = {epoch}
                    else:
                        self.state_epochs.setdefault(tp, set()).add(epoch)

    def check_leader_epoch(self, controller_epoch: int, broker_id: int, topic: str, entry: dict) -> None:
        """A LeaderAndIsr partition state that changes the partition's leader or replicas (from
        what that broker was last sent for it) carries a leader epoch above every one sent to
        that broker for it before, and one its state znode was written with: a broker takes a
        new leader or replica set only with a new epoch, and that epoch is ZooKeeper's. (Per
        broker: each broker's requests go out in order, while one broker's may trail another's
        by a step - by then the znode may hold the next epoch already.) A deposed controller's
        requests (a controller epoch below the current one) are left out: brokers refuse them."""
        if controller_epoch < int(self.server.read(paths.CONTROLLER_EPOCH)[0]):
            return
        tp = (topic, entry["partition_index"])
        leader, replicas, epoch = entry["leader"], tuple(entry["replicas"]), entry["leader_epoch"]
        stat = self.server.exists(paths.partition_state(*tp))
        incarnation = stat.czxid if stat is not None else None
        # What this broker was last sent of this incarnation of the partition, else its state at
        # start; nothing for a partition created since (its first request is its first epoch).
        last = next((c for c in (self.lai_sent.get((broker_id, tp)), self.lai_initial.get(tp))
                     if c is not None and c[3] == incarnation), None)
        if last is not None and (leader, replicas) != last[:2]:
            if epoch <= last[2]:
                self.violations.append(
                    f"leader epoch: LeaderAndIsr to {broker_id} for {topic}-{tp[1]} changes leader/replicas "
                    f"{last[:2]} -> {(leader, replicas)} with leader epoch {epoch}, not above {last[2]} sent before"
                )
            if epoch not in self.state_epochs.get(tp, ()):
                self.violations.append(
                    f"leader epoch: LeaderAndIsr to {broker_id} for {topic}-{tp[1]} (leader {leader}, replicas "
                    f"{list(replicas)}) carries leader epoch {epoch}, never written to its state znode "
                    f"({sorted(self.state_epochs.get(tp, ()))})"
                )
        if incarnation is not None:
            self.lai_sent[(broker_id, tp)] = (leader, replicas, max(epoch, last[2]) if last is not None else epoch, incarnation)

    def current(self) -> dict[tuple[str, int], list[int]]:
        out = {}
        for spec in self.topic_specs:
            znode = self.json(paths.topic(spec.name))
            for p, replicas in znode["partitions"].items():
                out[(spec.name, int(p))] = replicas
        return out

    def check_invariants(self, expected: dict | None = None):
        """1, 2, 4 at quiescence; ``expected`` maps partitions to the replicas they must have."""
        assert not self.violations, self.violations
        assert self.server.exists(paths.REASSIGN_PARTITIONS) is None
        reassignments = self.server.children(paths.REASSIGNMENTS) if self.server.exists(paths.REASSIGNMENTS) else []
        assert reassignments == [], reassignments
        for spec in self.topic_specs:
            znode = self.json(paths.topic(spec.name))
            assert not znode.get("adding_replicas") and not znode.get("removing_replicas"), znode
        now = self.current()
        for tp, replicas in (self.requested if expected is None else expected).items():
            assert now[tp] == list(replicas), (tp, now[tp], replicas)
        for tp, replicas in now.items():
            state = self.json(paths.partition_state(*tp))
            assert set(state["isr"]) <= set(replicas), (tp, state, replicas)
