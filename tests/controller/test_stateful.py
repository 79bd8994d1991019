"""Hypothesis stateful test: the controller on the ZooKeeper twin with simulated brokers.

Rules submit reassignments (Kafka's plain format, as a third-party tool writes them), write
new targets over running ones (KIP-455's override, as AlterPartitionReassignments does), cancel
every reassignment (KIP-236: create ``/admin/cancel_reassignment_in_progress``) or some through
the API door (controller.shell.admin.cancel.cancel_partitions), queue a batch
(``/admin/reassign_partitions_queue``, possibly naming partitions that are moving), crash the
active controller after any number of its ZooKeeper ops (a flush cut at any op boundary),
depose it in the middle of a flush (another controller elected), cut a chosen kind of flush
just before a chosen op (crash-point coverage: tests/controller/crashpoints.py), expire its
session, start new controllers, stop and restart brokers (some with a controlled shutdown:
ControlledShutdown first, as Kafka's brokers stop), submit with auto-removable throttles
(KIP-179: gone at the end, invariant 3), move a replica between the two log directories of its
broker (KIP-113's AlterReplicaLogDirs, to the broker: a future log copies, then takes over),
fail a broker's log directory (its replicas there go offline until the broker restarts; the
controller takes them out of leadership and ISRs), and let time pass. After every
step docs/DESIGN.md section 7 invariants 1, 2, 4 and 5 are checked in the form that holds at every
moment; at the end (brokers back, a controller running) the quiescent forms and invariant 3.
Schedules run by the thousand through tests/controller/soak.py (``make soak``; the pytest
entry is :func:`test_schedules`), which sums :data:`STATS`.

Targets only use brokers 1-4, which are never stopped, so every submitted entry is valid and
must complete (invariant 2) unless a cancel came after it; brokers 5 and 6 host original
replicas and leaders and come and go. With cancels and queues a partition may legitimately
sit at any replica list it was ever sent to or started from (its "endpoints"): invariant 1
allows exactly those, plain, moving forward between two of them, or rolling back between two
of them - never a mix.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from types import SimpleNamespace

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from controller.core.config import ControllerConfig
from controller.core.flush import CREATE, DELETE, ELECT, THROTTLE_REMOVAL
from controller.shell import throttle_configs as tc
from controller.shell.admin.base import AdminContext, ApiError
from controller.shell.admin.cancel import cancel_partitions
from controller.shell.admin.controlled_shutdown import handle_shutdown
from controller.shell.admin.kip179 import handle_reassign
from protocol import ApiKey
from protocol.errors import ErrorCode
from sim.inprocess import InProcessTransport
from tests import figures
from tests.controller import crash_schedules, soak
from tests.controller.crashpoints import POINTS, SHAPES, Coverage
from tests.controller.harness import Crashed, Harness
from znodes import paths
from znodes.api import BadVersionError, NoNodeError, ZkError
from znodes.batch import FlushError

TARGET_BROKERS = (1, 2, 3, 4)
LOG_DIRS = ("/data/d1", "/data/d2")  # every broker's (KIP-113): replicas move between them
FLAKY_BROKERS = (5, 6)
PARTITIONS = 6
MAX_CONTROLLERS = 2
# Built once: a strategy built per draw costs Hypothesis its validation every time.
PARTITION_SETS = st.sets(st.integers(0, PARTITIONS - 1), min_size=1, max_size=PARTITIONS)
TARGETS = st.permutations(TARGET_BROKERS).map(lambda b: list(b[:3]))
ALL_BROKERS = (*TARGET_BROKERS, *FLAKY_BROKERS)
# What this process's schedules did, summed by their teardowns (read by tests/controller/soak.py):
# complete schedules, their steps after the initial one, crash points, a digest of how each ended.
STATS = {"schedules": 0, "steps": 0, "coverage": Coverage(), "digest": hashlib.sha256(), "isr_alters": 0}
# The move caps the controller runs with (tests/controller/soak.py sets them per shard): None is
# the defaults (10 per broker, 1,000 in all: they never bind on 6 partitions, so the caps
# invariant can only fail in shards run at TIGHT_CAPS, where moves wait for slots: one shard in
# soak.TIGHT_CAPS_EVERY, 4 by default).
CAPS: dict | None = None
# replica.alter.log.dirs.io.max.bytes.per.second on every broker: a 64 KiB replica's future log
# copies in 4 ticks (harness.TICK_S), so failovers, restarts and moves overlap with it.
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
DIR_COPY_RATE = 64 * 1024
# Ticks the end of a schedule allows future logs to take over (all brokers' copies share each
# broker's rate: at most 6 replicas of 64 KiB each, 24 ticks).
DIR_MOVE_TICKS = 60
# ReassignPartitions' throttle (bytes/s): far above the copy bandwidth (the schedule's timing
# stays), and unlike submit_throttled's, so its config writes are never no-ops.
API_THROTTLE = 200 * 1_000_000
TIGHT_CAPS = {"max_incoming_per_broker": 1, "max_outgoing_per_broker": 2, "max_cluster_moves": 2}
# Topic t's unclean.leader.election.enable from the start (tests/controller/soak.py sets it per
# shard): leaders then come from any online replica once no ISR member is online - after a
# broker failure, a failed directory, or a move that ends with its ISR offline (engine step
# 12c) - and invariant 5c's unclean form checks every settled partition has one.
UNCLEAN = False
# How the simulated leaders change ISRs (tests/controller/soak.py sets it per shard): "zookeeper",
# writing the state znode and a notification (pre-2.7 brokers), or "alter_partition", asking the
# active controller (KIP-497; controller.core.alter_partition), whose answers step 4 then waits on.
ISR_VIA = "zookeeper"
UNCLEAN_KEY = "unclean.leader.election.enable"
# cut_flush's points: all but those of the kinds only the topics machine writes and made flush
# kinds after the rule was written (create, delete, elect; tests/controller/test_stateful_topics.py
# draws them): this machine never writes them, and drawing them would change every seed's schedules.
CUT_POINTS = tuple(p for p in POINTS if p[0] not in (CREATE, DELETE, ELECT))


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.loop = asyncio.new_event_loop()
        config = ControllerConfig(retry_backoff_s=0.0, request_retries=0, **(CAPS or {}))
        self.h = Harness(topics=(f"t:{PARTITIONS}:3:64KiB",), config=config, log_dirs=LOG_DIRS, isr_via=ISR_VIA)
        self.h.check_leader_epochs = True  # on every LeaderAndIsr sent (harness.check_leader_epoch)
        self.next_id = 101
        # Per partition: every replica list it started from or was sent to (see the docstring).
        self.endpoints: dict[tuple[str, int], list[list[int]]] = {}
        # The replicas each partition must end with; None: any endpoint (a cancel came after
        # its last request, and whether that cancel caught it depends on timing).
        self.final: dict[tuple[str, int], list[int] | None] = {}
        self.last_queue: dict = {}
        self.steps = 0  # steps run, the initial one included (counted by the first invariant)
        self.throttled = False  # auto-removable throttles were set: invariant 3 at the end
        # broker -> the leader rate an operator set on it while nothing listed it, which every
        # removal must give back (invariant 3: the removal znode's restore); a tool's throttles
        # written over it (submit_throttled) take it away, as KIP-179's tools do.
        self.operator_rates: dict[int, str] = {}
        # (partition, broker) -> (the directory an accepted AlterReplicaLogDirs moves it into,
        # the replica it moves, how many requests the controllers had sent then), while that
        # replica lives (intra_broker_moves)
        self.dir_moves: dict[tuple[tuple[str, int], int], tuple] = {}
        # Entities listed for automatic throttle removal that a settled step saw busy (a move
        # or an entry involved them) while listed (throttles_follow_moves).
        self.seen_busy: set[tuple[str, object]] = set()
        self.unclean = False  # topic t allows unclean leader elections (UNCLEAN, set at start)
        # (partition, topic znode RS, broker) of added replicas seen in the ISR: copies made (caps).
        self.copied: set[tuple[str, tuple, int]] = set()

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    @initialize()
    def start(self):
        self.run(self.h.start())
        # Copies between a broker's directories take a few ticks, so controllers fail over
        # while future logs copy (the cluster default, as kafka-reassign's throttle sets it).
        self.run(self.set_dir_copy_rate())
        self.unclean = UNCLEAN
        if self.unclean:
            self.run(self.set_topic_config({UNCLEAN_KEY: "true"}))
        self.final = dict(self.h.assignments)
        self.endpoints = {tp: [list(r)] for tp, r in self.h.assignments.items()}
        self.run(self.start_new_controller())

    async def set_dir_copy_rate(self) -> None:
        admin = self.h.admin
        await admin.multi(await tc.configs_ops(admin, [
            (("brokers", "<default>"), tc.set_keys({ALTER_LOG_DIRS_RATE: str(DIR_COPY_RATE)}))]))
        await self.h.settle()

    async def set_topic_config(self, keys: dict) -> None:
        """Topic t's config keys, with the change notification every config door writes."""
        admin = self.h.admin
        await admin.multi(await tc.configs_ops(admin, [(("topics", "t"), tc.set_keys(keys))]))
        await self.h.settle()

    async def start_new_controller(self):
        # As the daemon runs it: KIP-179 throttle removal on completion and as moves end.
        return await self.h.start_controller(self.new_id(), throttle_removal=("all", "idle"))

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    @staticmethod
    def complete_steps() -> int:
        return soak.STEPS + 1

    def alive(self):
        return [c for c in self.h.controllers if c.alive]

    def teardown(self):
        try:
            if hasattr(self.h, "admin"):
                self.run(self.quiesce())
                if self.steps >= self.complete_steps():
                    STATS["schedules"] += 1
                    STATS["steps"] += self.steps - 1
                    # ISRs the controller wrote on a leader's AlterPartition (ISR_VIA's shards):
                    # the runs must show some, or those shards checked nothing of it.
                    STATS["isr_alters"] += sum(p["error_code"] == 0 for _, a in self.h.isr_requests
                                               for t in a["topics"] for p in t["partitions"])
                    STATS["coverage"].add(self.h.points)
                    # How it ended, wall-clock stamps (/controller, brokers) and the random
                    # cluster id aside: the same seed must end the same way (soak.py).
                    STATS["digest"].update(re.sub(rb'"timestamp":"\d+"|"id":"[\w-]+"', b"", self.h.server.dump().encode()))
        finally:
            self.run(self.h.close())
            self.loop.close()

    async def quiesce(self):
        self.h.cut_at.clear()  # first: a controller started below must not be cut (harness.py)
        for b, broker in self.h.cluster.brokers.items():  # the flaky ones, and any that fail_dir halted
            if not broker.running:
                await self.h.cluster.start_broker(b)
        for b, broker in self.h.cluster.brokers.items():
            if broker.running and broker.core.log_dirs.any_offline:
                await self.h.cluster.restart_broker(b)  # its failed directories come back (fail_dir)
        if not self.alive():
            await self.start_new_controller()
        for c in self.alive():
            c.store.remaining = None
            c.store.depose_after = None
        await self.h.run_until_quiet(max_seconds=300)
        await self.finish_dir_moves()
        assert self.h.server.exists(paths.CANCEL_REASSIGNMENT) is None
        assert self.h.server.exists(paths.REASSIGN_QUEUE) is None
        self.h.check_invariants({tp: r for tp, r in self.final.items() if r is not None})
        now = self.h.current()
        for tp, r in self.final.items():
            if r is None:
                assert now[tp] in self.endpoints[tp], (tp, now[tp], self.endpoints[tp])
        # Every broker (all running now) hosts exactly the replicas assigned to it: a finished
        # move's or rollback's removed replicas are deleted, strays included, none missing.
        topics = {t for t, _ in now}  # the harness's own topics (a subclass may create others)
        for b, broker in self.h.cluster.brokers.items():
            hosted = {(r.topic, r.partition) for r in broker.core.replicas() if r.topic in topics}
            assigned = {tp for tp, replicas in now.items() if b in replicas}
            assert hosted == assigned, ("broker hosts other than its replicas", b, sorted(hosted ^ assigned))
        if self.throttled:  # invariant 3: no reassignment runs, so the auto-removable went
            assert self.h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
            assert self.h.server.exists(paths.THROTTLED_RATES_REMOVAL) is None
        # ... and the operator's own throttles are what the operator set.
        configs = [(paths.topic_config("t"), tc.REPLICA_KEYS, {})]
        configs += [(paths.broker_config(b), tc.RATE_KEYS, {tc.LEADER_RATE: self.operator_rates[b]} if b in self.operator_rates else {})
                    for b in ALL_BROKERS]
        for path, keys, own in configs:
            config = self.h.json(path)["config"] if self.h.server.exists(path) is not None else {}
            assert {k: v for k, v in config.items() if k in keys} == own, (path, config, own)

    async def finish_dir_moves(self) -> None:
        """Quiescent: every future log has taken over (each broker running and told its roles,
        a copy of these sizes takes a tick), and each accepted move whose broker still hosts
        the replica ended in its directory."""
        for _ in range(DIR_MOVE_TICKS):
            if not any(r.future for b in self.h.cluster.brokers.values() for r in b.core.replicas()):
                break
            await self.h.tick()
        futures = [(b, r.key, r.future.log_dir) for b, broker in self.h.cluster.brokers.items()
                   for r in broker.core.replicas() if r.future is not None]
        assert not futures, ("future logs left at quiescence", futures)
        for (tp, b), (target, moved, _) in sorted(self.dir_moves.items(), key=lambda kv: kv[0]):
            replica = self.h.cluster.brokers[b].core.model.get(*tp, b)
            assert replica is not moved or replica.log_dir == target, ("intra-broker move not done", tp, b, target,
                                                                       replica.log_dir)

    # ---- rules -----------------------------------------------------------------------------

    def draw_batch(self, data) -> dict:
        partitions = data.draw(PARTITION_SETS)
        batch = {}
        for p in sorted(partitions):
            batch[("t", p)] = data.draw(TARGETS)
        for tp, target in batch.items():
            if target not in self.endpoints[tp]:
                self.endpoints[tp].append(target)
        self.final.update(batch)
        self.h.requested.update(batch)
        return batch

    def draw_requested(self, data) -> dict:
        """A batch for /admin/reassign_partitions, with what must become of it."""
        untaken_queue = self.h.server.exists(paths.REASSIGN_QUEUE) is not None
        untaken_cancel = self.h.server.exists(paths.CANCEL_REASSIGNMENT) is not None
        before = dict(self.final)
        batch = self.draw_batch(data)
        if untaken_cancel:
            # The next controller reads the requests, then the cancel: whether the cancel
            # catches these depends on whether they started in between.
            self.final.update({tp: None for tp in batch})
        if untaken_queue:
            # A queue not taken yet goes on top of whatever /admin/reassign_partitions holds.
            self.final.update({tp: before[tp] for tp in batch if tp in self.last_queue})
        return batch

    @precondition(lambda self: self.h.server.exists(paths.REASSIGN_PARTITIONS) is None)
    @rule(data=st.data())
    def submit(self, data):
        self.run(self.h.submit(self.draw_requested(data)))

    @precondition(lambda self: self.h.server.exists(paths.REASSIGN_PARTITIONS) is not None)
    @rule(data=st.data())
    def retarget(self, data):
        """KIP-455: new targets written over running entries (as AlterPartitionReassignments
        or a tool does): a replicating move takes its new target in place. A partition whose
        entry already asks for the drawn target is asked nothing new: a rollback keeps its
        entry until it ends, and the same entry written again reads exactly like it (an active
        controller lets the rollback finish too), so what must become of it stays as it was.
        Likewise, while a rollback runs, an entry asking for the target it undoes reads like
        the one a cancel leaves (the znode keeps no history: rewritten X and then that target
        again while no controller ran, it is byte for byte the cancel's): the partition may
        end at either (docs/DESIGN.md 4, "Queue")."""
        before = dict(self.final)
        asked = self.asked()
        batch = self.draw_requested(data)
        for tp, target in batch.items():
            if asked.get(tp) == target:
                self.final[tp] = before.get(tp)
            elif target == self.undone_by_rollback(tp):
                self.final[tp] = None
        self.run(self.rewrite_requests(batch))

    def asked(self) -> dict:
        """What ``/admin/reassign_partitions`` asks for now, by partition ({} when absent)."""
        try:
            return {(e["topic"], e["partition"]): e["replicas"]
                    for e in self.h.json(paths.REASSIGN_PARTITIONS)["partitions"]}
        except NoNodeError:
            return {}

    def undone_by_rollback(self, tp) -> list[int] | None:
        """The target a KIP-236 rollback of ``tp`` is undoing (one begun: its record flagged,
        or its topic znode in the rollback's shape), or None."""
        record_path = paths.reassignment(*tp)
        if self.h.server.exists(record_path) is None:
            return None
        record = self.h.json(record_path)
        if record.get("cancelling"):
            return record["replicas"]
        topic = self.h.json(paths.topic(tp[0]))
        removing = topic.get("removing_replicas", {}).get(str(tp[1]), [])
        added = [b for b in record["replicas"] if b not in record["original_replicas"]]
        if removing and sorted(removing) == sorted(added):
            return record["replicas"]
        return None

    async def rewrite_requests(self, batch: dict) -> None:
        while True:
            try:
                data, stat = await self.h.admin.get(paths.REASSIGN_PARTITIONS)
            except NoNodeError:
                await self.h.submit(batch)
                return
            body = json.loads(data)
            entries = {(e["topic"], e["partition"]): e for e in body["partitions"]}
            for (t, p), r in batch.items():
                entries[(t, p)] = {**entries.get((t, p), {"topic": t, "partition": p}), "replicas": r}
            body["partitions"] = list(entries.values())
            try:
                await self.h.admin.set(paths.REASSIGN_PARTITIONS, json.dumps(body).encode(), stat.version)
            except (BadVersionError, NoNodeError):
                continue
            await self.h.settle()
            return

    @precondition(
        lambda self: self.h.server.exists(paths.REASSIGN_PARTITIONS) is None
        and self.h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        and self.h.server.exists(paths.THROTTLED_RATES_REMOVAL) is None
    )
    @rule(data=st.data())
    def submit_throttled(self, data):
        """KIP-179: a reassignment with auto-removable throttles, written as ReassignPartitions
        with a throttle writes them (the removal znodes first, then the configs), then the
        request."""
        self.throttled = True
        self.run(self.set_throttles())
        self.run(self.h.submit(self.draw_requested(data)))

    async def set_throttles(self) -> None:
        self.operator_rates.clear()  # the tool's rates go over them, listed without restore
        admin = self.h.admin
        await admin.create(paths.THROTTLED_REPLICAS_REMOVAL, json.dumps({"version": 1, "topics": ["t"]}).encode())
        await admin.create(paths.THROTTLED_RATES_REMOVAL, json.dumps({"version": 1, "brokers": list(ALL_BROKERS)}).encode())
        rate = str(100 * 1_000_000)  # far above the copy bandwidth: the schedule's timing stays
        updates = [(("topics", "t"), tc.set_keys({k: tc.WILDCARD for k in tc.REPLICA_KEYS}))]
        updates += [(("brokers", b), tc.set_keys({k: rate for k in tc.RATE_KEYS})) for b in ALL_BROKERS]
        await admin.multi(await tc.configs_ops(admin, updates))

    @rule(broker=st.sampled_from(ALL_BROKERS))
    def operator_rate(self, broker):
        """An operator throttles a broker by hand (no removal znode lists it): whatever
        reassignments throttle it later and remove their throttles, this rate comes back
        (invariant 3; the admin requests record it as the removal znode's restore)."""
        if ("broker", broker) in self.listed_for_removal():
            return  # what the operator changes on a listed broker is not kept (DESIGN invariant 3)
        rate = str(API_THROTTLE + broker)  # far above the copy bandwidth, as the tool's
        ops = self.run(tc.configs_ops(self.h.admin, [(("brokers", broker), tc.set_keys({tc.LEADER_RATE: rate}))]))
        self.run(self.h.admin.multi(ops))
        self.operator_rates[broker] = rate
        self.run(self.h.settle())

    @precondition(lambda self: self.h.server.exists(paths.REASSIGN_QUEUE) is None)
    @rule(data=st.data())
    def queue(self, data):
        """KIP-236 queue: a moving partition in it is cancelled, then sent to the new target."""
        batch = self.draw_batch(data)
        self.last_queue = batch
        entries = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(batch.items())]
        self.run(self.h.admin.create(paths.REASSIGN_QUEUE, json.dumps({"version": 1, "partitions": entries}).encode()))
        self.run(self.h.settle())

    @precondition(lambda self: any(c.active is not None and c.active.state is not None for c in self.alive()))
    @rule(data=st.data())
    def reassign_api(self, data):
        """KIP-179's ReassignPartitions (v1, with an auto-removable throttle) through the API door:
        an engine event (controller.core.admin_requests) whose throttles and entries the
        controller's own flush writes. Answered NONE, it holds as a tool's entry does (the
        retarget rule's exceptions included); refused, nothing of it; unanswered (the
        controller crashed or was deposed first), it may or may not have been taken."""
        handle = next(c for c in self.alive() if c.active is not None and c.active.state is not None)
        ctx = AdminContext(SimpleNamespace(active=handle.active, store=handle.store, controller_id=handle.id), self.h.config)
        before = dict(self.final)
        asked = self.asked()
        batch = self.draw_requested(data)
        undone = {tp: self.undone_by_rollback(tp) for tp in batch}
        self.throttled = True
        body = {"topic_reassignments": [{"topic": "t", "partition_reassignments": [
            {"partition_id": p, "broker": list(r)} for (_, p), r in sorted(batch.items())]}],
            "timeout": 1000, "validate_only": False, "throttle": API_THROTTLE, "remove_throttle": True}
        try:
            answer = self.run(handle_reassign(ctx, 1, body))
            codes = {("t", p["partition_id"]): p["error_code"] for t in answer["reassign_partition_result"]
                     for p in t["partition_error"]}
        except ApiError:
            codes = {tp: None for tp in batch}
        for tp, target in batch.items():
            code = codes.get(tp)
            if code is None:
                self.final[tp] = None  # in doubt: either endpoint
            elif code != ErrorCode.NONE:
                assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT, (tp, code)  # a target broker is down
                self.final[tp] = before.get(tp)
            elif asked.get(tp) == target:
                self.final[tp] = before.get(tp)
            elif target == undone[tp]:
                self.final[tp] = None
        self.run(self.h.settle())

    @precondition(lambda self: any(c.active is not None and c.active.state is not None for c in self.alive()))
    @rule(partitions=PARTITION_SETS)
    def cancel_api(self, partitions):
        """KIP-236 through the API door: an answered cancel holds (the partition ends at an
        endpoint it was at or sent to); an unanswered one may or may not have been taken."""
        handle = next(c for c in self.alive() if c.active is not None and c.active.state is not None)
        ctx = AdminContext(SimpleNamespace(active=handle.active, store=handle.store, controller_id=handle.id), self.h.config)
        tps = [("t", p) for p in sorted(partitions)]
        try:
            results = self.run(cancel_partitions(ctx, tps, timeout_s=0.0))
        except ApiError:
            results = {tp: (None, "not answered") for tp in tps}
        for tp, (code, _) in results.items():
            if code is None or code == ErrorCode.NONE:
                self.final[tp] = None
            else:
                assert code in (
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.REASSIGNMENT_IN_PROGRESS,
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                ), (tp, code)
        self.run(self.h.settle())

    @precondition(lambda self: self.h.server.exists(paths.CANCEL_REASSIGNMENT) is None)
    @rule()
    def cancel_all(self):
        """KIP-236: every reassignment pending or running is rolled back (or skipped)."""
        self.final = {tp: None for tp in self.final}
        self.run(self.h.admin.create(paths.CANCEL_REASSIGNMENT, b""))
        self.run(self.h.settle())

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
    @rule(point=st.sampled_from(CUT_POINTS), deposing=st.booleans())
    def cut_flush(self, point, deposing):
        """Crash (or depose) the controller writing the next op of that kind of flush with
        that role just before it: steers the cuts to every crash point (crashpoints.SHAPES).
        The cut waits for its kind (one per kind), across controllers, until the schedule ends."""
        kind, op = point
        self.h.cut_at[kind] = (op, deposing)

    @precondition(
        lambda self: self.h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is not None
        or self.h.server.exists(paths.THROTTLED_RATES_REMOVAL) is not None
    )
    @rule(op=st.sampled_from(SHAPES[THROTTLE_REMOVAL]), deposing=st.booleans())
    def cut_throttle_removal(self, op, deposing):
        """cut_flush for the throttle removal, while throttles are listed: its flush comes only
        in that short window, which the cuts cut_flush draws rarely hit (the removal znodes,
        last in the flush, were never cut in 1,000 schedules)."""
        self.h.cut_at[THROTTLE_REMOVAL] = (op, deposing)

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
        self.run(self.start_new_controller())

    @rule(b=st.sampled_from(FLAKY_BROKERS))
    def toggle_broker(self, b):
        broker = self.h.cluster.brokers[b]
        if broker.running:
            self.run(self.h.cluster.stop_broker(b))
        else:
            self.run(self.h.cluster.start_broker(b))
        self.run(self.h.settle())

    @precondition(lambda self: any(c.active is not None and c.active.state is not None for c in self.alive()))
    @rule(b=st.sampled_from(FLAKY_BROKERS))
    def controlled_stop(self, b):
        """A running flaky broker stops as a Kafka broker does with controlled.shutdown.enable:
        ControlledShutdown (with its registration's epoch) through the admin door of the active
        controller (controller.shell.admin.controlled_shutdown), then it stops whatever the
        answer (as Kafka's broker does once its retries are spent). Answered NONE, once the
        answer settled (the brokers' ISRs change only when time passes): it leads no partition
        the answer does not list (its other leaderships moved to ISR members), and each listed
        one had no other ISR member up or a move owns it. Refused or unanswered (the controller
        crashed, was deposed), or another controller elected meanwhile (it knows nothing of the
        shutdown, as Kafka's): nothing is asserted. Later steps check the rest: no election
        picks it while it is registered, and the usual invariants once it is gone."""
        broker = self.h.cluster.brokers[b]
        if not broker.running:
            return
        handle = next(c for c in self.alive() if c.active is not None and c.active.state is not None)
        ctx = AdminContext(SimpleNamespace(active=handle.active, store=handle.store, controller_id=handle.id), self.h.config)
        registration = self.h.server.exists(paths.broker(b))
        body = {"broker_id": b, "broker_epoch": registration.czxid if registration is not None else -1}
        epoch = self.h.json(paths.CONTROLLER_EPOCH)
        answer = self.run(self.answered(handle_shutdown(ctx, 3, body)))
        # Judged only if the controller that answered is still the one: a new one (a crash or a
        # deposition while the answer settled) knows nothing of the shutdown, as Kafka's does.
        if answer is not None and answer["error_code"] == ErrorCode.NONE and self.h.json(paths.CONTROLLER_EPOCH) == epoch:
            remaining = {(r["topic_name"], r["partition_index"]) for r in answer["remaining_partitions"]}
            states = {tp: self.h.json(paths.partition_state(*tp)) for tp in self.h.assignments}
            led = {tp for tp, state in states.items() if state["leader"] == b}
            assert led <= remaining, ("still leads partitions the answer does not list", b, sorted(led - remaining))
            # ... and each it still leads had nobody else to take it: no other ISR member up
            # (with all its directories online), or a move owns the partition.
            for tp in remaining:
                others = [r for r in states[tp]["isr"] if r != b and self.h.cluster.brokers[r].running
                          and not self.h.cluster.brokers[r].core.log_dirs.any_offline]
                moving = self.h.server.exists(paths.reassignment(*tp)) is not None
                assert moving or not others, ("kept a leadership another ISR member could take", b, tp, states[tp])
        self.run(self.h.cluster.stop_broker(b))
        self.run(self.h.settle())

    async def answered(self, request) -> dict | None:
        """The answer of an admin ``request`` once everything settled, or None: cut by a crash,
        refused as a whole, or not taken (its controller went before taking it)."""
        task = asyncio.ensure_future(request)
        await self.h.settle()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if task.cancelled() or isinstance(task.exception(), (Crashed, ZkError, FlushError, ApiError)):
            return None
        return task.result()

    @rule(p=st.integers(0, PARTITIONS - 1), i=st.integers(0, 3), directory=st.sampled_from(LOG_DIRS))
    def move_log_dir(self, p, i, directory):
        """KIP-113: AlterReplicaLogDirs to broker ``b`` moves its replica of t-``p`` into
        ``directory`` (as kafka-reassign and the planner send it, straight to the broker): hosted,
        a future log copies there and takes over; not hosted (or not started since a restart),
        REPLICA_NOT_AVAILABLE and the broker remembers the directory for the replica's
        creation. The controller is not involved and must not be disturbed by it. ``i`` picks
        the broker: the partition's i-th replica now, or (past the list) one that holds none."""
        tp = ("t", p)
        replicas = self.h.json(paths.topic("t"))["partitions"][str(p)]
        b = replicas[i] if i < len(replicas) else next(x for x in ALL_BROKERS if x not in replicas)
        body = {"dirs": [{"path": directory, "topics": [{"name": "t", "partitions": [p]}]}]}
        try:
            answer = self.run(InProcessTransport(self.h.cluster).request(b, ApiKey.ALTER_REPLICA_LOG_DIRS, 2, body))
        except ConnectionRefusedError:  # a stopped broker
            return
        (code,) = [q["error_code"] for r in answer["results"] for q in r["partitions"]]
        if code == ErrorCode.NONE:  # the replica it moves (kept: a new one is another), and from when
            self.dir_moves[(tp, b)] = (directory, self.h.cluster.brokers[b].core.model.get(*tp, b), len(self.h.sent))
        else:  # a request refused still stops a copy into another directory, as Kafka's does
            # KAFKA_STORAGE_ERROR: a directory of the broker is offline (fail_dir), as Kafka refuses
            refused = {ErrorCode.REPLICA_NOT_AVAILABLE}
            if self.h.cluster.brokers[b].core.log_dirs.any_offline:
                refused.add(ErrorCode.KAFKA_STORAGE_ERROR)
            assert code in refused, (tp, b, directory, code)
            self.dir_moves.pop((tp, b), None)
        self.run(self.h.settle())

    @rule(b=st.sampled_from(ALL_BROKERS), directory=st.sampled_from(LOG_DIRS))
    def fail_dir(self, b, directory):
        """KIP-113: broker ``b``'s ``directory`` fails as a disk does (sim.cluster.fail_log_dir):
        its replicas there go offline, its future logs there are lost, and the broker writes a
        log directory event notification; the controller, active or next, asks it which replicas
        are offline and takes them out of leadership and ISRs (controller.core.log_dir_failure),
        while controllers fail over. The directory comes back when its broker restarts:
        toggle_broker for 5 and 6, the end of the schedule for every broker. A broker whose
        last online directory fails halts, as Kafka's does (5 and 6 only: 1-4 keep one), and
        stays down until then. An intra-broker move into or out of it is over (its future log
        went with it)."""
        broker = self.h.cluster.brokers[b]
        if not broker.running or directory in broker.core.log_dirs.offline:
            return
        if b in TARGET_BROKERS and broker.core.log_dirs.live == [directory]:
            # It would halt: the model keeps the target brokers registered, so that no target
            # is dropped for naming an unregistered broker (the chaos checker's case).
            return
        for (tp, mb), (target, moved, _) in list(self.dir_moves.items()):
            if mb == b and (target == directory or moved.log_dir == directory):
                del self.dir_moves[(tp, mb)]
        self.run(self.h.cluster.fail_log_dir(b, directory))
        self.run(self.h.settle())

    @rule(n=st.integers(1, 8))
    def tick(self, n):
        for _ in range(n):
            self.run(self.h.tick())

    # ---- invariants after every step ------------------------------------------------------

    @invariant()
    def count_step(self):
        """Bookkeeping, not a check: invariants run once after each step (STATS)."""
        self.steps += 1

    @invariant()
    def never_a_mix(self):
        """1: each partition is at an endpoint, or exactly mid-move (forward or rolling back)
        between two of them."""
        if not hasattr(self.h, "admin"):
            return
        znode = self.h.json(paths.topic("t"))
        adding, removing = znode.get("adding_replicas", {}), znode.get("removing_replicas", {})
        for p, replicas in znode["partitions"].items():
            tp = ("t", int(p))
            shape = (replicas, adding.get(p, []), removing.get(p, []))
            assert any(self.shape_between(shape, before, target, tp) for before in self.endpoints[tp] for target in self.endpoints[tp]), (
                tp, shape, self.endpoints[tp],
            )

    def shape_between(self, shape, before, target, tp) -> bool:
        """Plain at ``before``, moving from ``before`` to ``target``, or rolling back to
        ``before``; a move whose target was overridden (KIP-455) also keeps, at the end of
        RR, replicas an earlier target added (``dropped``: from other endpoints, in neither
        ``before`` nor ``target``)."""
        replicas, adding, removing = shape
        if shape == (before, [], []):
            return True
        added = [b for b in target if b not in before]
        removed = [b for b in before if b not in target]
        earlier = {b for e in self.endpoints[tp] for b in e} - set(before) - set(target)

        def dropped_after(head: list) -> bool:
            dropped = removing[len(head):]
            return removing[: len(head)] == head and set(dropped) <= earlier and len(set(dropped)) == len(dropped)

        forward = replicas == target + removing and adding == added and dropped_after(removed)
        rolling_back = replicas == before + added + removing[len(added):] and adding == [] and dropped_after(added)
        return forward or rolling_back

    @invariant()
    def no_request_lost(self):
        """2: a move that is under way (forward or rolling back) is recorded, so a failover
        cannot lose it."""
        if not hasattr(self.h, "admin"):
            return
        znode = self.h.json(paths.topic("t"))
        for key in ("adding_replicas", "removing_replicas"):
            for p, a in znode.get(key, {}).items():
                if a:
                    assert self.h.server.exists(paths.reassignment("t", int(p))) is not None, p

    @invariant()
    def leaders(self):
        """5c: a partition's leader is in its ISR or is -1; once a step settled with a controller
        active and loaded, a partition with an online ISR member (its broker live, its replica
        not on a failed log directory) has an online leader (the controller elected one when the
        last leader's broker or directory went), and beside an online leader the ISR names no
        stopped broker and no replica on a failed directory, bar a moving partition's (its move
        owns its ISR). Where topic t allows unclean elections (UNCLEAN), a settled partition no
        move runs for with an online replica has an online leader."""
        if not hasattr(self.h, "admin"):
            return
        registered = {int(b) for b in self.h.server.children(paths.BROKER_IDS)}
        live = {b for b, broker in self.h.cluster.brokers.items() if broker.running} & registered
        offline = {(r.partition, b) for b, broker in self.h.cluster.brokers.items() if b in live
                   for r in broker.core.replicas() if r.storage_error and r.topic == "t"}
        # A broker whose every log directory failed hosts no replica online, though it has no
        # replica object to say so for one it was asked to create afterwards (it answers
        # KAFKA_STORAGE_ERROR; Kafka's broker would halt): each of its ISR places is offline.
        offline |= {(p, b) for b in live if not self.h.cluster.brokers[b].core.log_dirs.live for p in range(PARTITIONS)}
        settled = any(c.active is not None and c.active.state is not None for c in self.alive())
        # Moving: a KIP-240 record exists (a move that only reorders its replicas has no
        # adding or removing in its topic znode).
        moving = {p for p in range(PARTITIONS) if self.h.server.exists(paths.reassignment("t", p)) is not None}
        for p in range(PARTITIONS):
            state = self.h.json(paths.partition_state("t", p))
            leader, isr = state["leader"], state["isr"]
            assert leader == -1 or leader in isr, ("leader outside the ISR", p, state)
            if not settled:
                continue
            online = {b for b in isr if b in live and (p, b) not in offline}
            if online:
                assert leader in live, ("no live leader with a live ISR member", p, state, sorted(live))
                assert (p, leader) not in offline, ("a leader on a failed log directory", p, state, sorted(offline))
                if p not in moving:
                    assert not {b for b in isr if (p, b) in offline}, (
                        "a replica on a failed log directory in the ISR", p, state, sorted(offline))
                    # Kafka's OfflineReplica: a stopped broker leaves every ISR it is in, even
                    # one it rejoined a moment before (its leader's notification still to come).
                    assert set(isr) <= live, ("a stopped broker in the ISR beside a live leader", p, state, sorted(live))
            elif self.unclean and p not in moving:
                # Unclean allowed: any online replica of the partition leads once none of the
                # ISR is online (a move's partition once its move ended).
                replicas = self.h.json(paths.topic("t"))["partitions"][str(p)]
                if any(b in live and (p, b) not in offline for b in replicas):
                    assert leader in live and (p, leader) not in offline, (
                        "no online leader with an online replica, unclean allowed", p, state, sorted(live), sorted(offline))

    @invariant()
    def caps(self):
        """The move caps as ZooKeeper shows the moves: partitions copying a replica to a broker
        (incoming), removing one from it while they copy (outgoing), copying at all (the
        cluster cap)."""
        if not hasattr(self.h, "admin"):
            return
        cfg = self.h.config
        znode = self.h.json(paths.topic("t"))
        adding, removing = znode.get("adding_replicas", {}), znode.get("removing_replicas", {})
        moving = {p for p in (*adding, *removing) if adding.get(p) or removing.get(p)}
        # The caps bound copies, in Kafka's sense: a move copies while a replica it adds is not
        # yet in its ISR. So a rollback, which adds nothing, copies nothing, even while a
        # stopped broker of its original replicas keeps them out of the ISR (a follower
        # catching up, not a copy a move started): a crash that cuts its finish after a new
        # move started in the slot it freed shows both to the next controller (seed 382528750
        # shard 3, tight caps: a false positive). Likewise a move whose added replicas are all
        # in the ISR (only its finish is left, maybe cut short beside the move started in its
        # slot). Once in the ISR, a copy is made for that move shape (its topic znode's RS): a
        # replica that falls out again later (its directory failed) is a failure's, not a copy
        # the controller started, and it does not count again while the shape stays (seed
        # 1600000019 shard 3, twice: a false positive).
        isr = {p: set(self.h.json(paths.partition_state("t", int(p)))["isr"]) for p in moving}
        shape = {p: tuple(znode["partitions"][p]) for p in moving}
        self.copied |= {(p, shape[p], b) for p in moving for b in adding.get(p, []) if b in isr[p]}
        adding = {p: [b for b in a if (p, shape[p], b) not in self.copied] for p, a in adding.items() if p in moving}
        copying = {p for p, a in adding.items() if a}
        removing = {p: r for p, r in removing.items() if p in copying}
        assert len(copying) <= cfg.max_cluster_moves, ("cluster cap", sorted(copying), cfg.max_cluster_moves)
        for b in ALL_BROKERS:
            incoming = sorted(p for p, a in adding.items() if b in a)
            outgoing = sorted(p for p, r in removing.items() if b in r)
            assert len(incoming) <= cfg.max_incoming_per_broker, ("incoming cap", b, incoming, znode)
            assert len(outgoing) <= cfg.max_outgoing_per_broker, ("outgoing cap", b, outgoing, znode)

    @invariant()
    def intra_broker_moves(self):
        """KIP-113 moves: a future log is its replica's, on the replica's broker, in another
        directory; an accepted move is done or copying into its directory (visible as the
        future log) for as long as its replica lives; and the controller never deletes a
        replica for it: a replica that was moving goes only by a StopReplica(delete) sent to its
        broker (which invariant 4 judged when it was sent, harness.check_removal), after which
        the move is over (a replica created there again is a new one)."""
        if not hasattr(self.h, "admin"):
            return
        for (tp, b), (target, moved, since) in sorted(self.dir_moves.items(), key=lambda kv: kv[0]):
            replica = self.h.cluster.brokers[b].core.model.get(*tp, b)
            if replica is not moved:
                assert any(to == b and api == ApiKey.STOP_REPLICA and any(
                    t["topic_name"] == tp[0] and e["partition_index"] == tp[1] and e.get("delete_partition")
                    for t in body["topic_states"] for e in t["partition_states"])
                    for to, api, body in self.h.sent[since:]), (
                    "a replica moving between directories went without a StopReplica(delete)", tp, b)
                del self.dir_moves[(tp, b)]
                continue
            future = replica.future.log_dir if replica.future is not None else None
            assert replica.log_dir == target or future == target, (
                "an accepted intra-broker move is neither done nor copying", tp, b, target, replica.log_dir, future)
        for b, broker in self.h.cluster.brokers.items():
            for r in broker.core.replicas():
                if r.future is not None:
                    assert r.future.log_dir != r.log_dir and r.future.log_dir in LOG_DIRS, (b, r.key, r.log_dir)

    @invariant()
    def throttles_follow_moves(self):
        """6(a), KIP-179 beyond completion: once a settled step (a controller active and loaded)
        sees a topic or broker listed for automatic throttle removal that no move and no entry
        involves any more, although one did earlier while it was listed, its throttle is gone
        (and it with it from the list); when nothing moves and nothing is asked at all, nothing
        listed is left. An entity listed but never involved (a tool lists every broker, its
        reassignment moves some) is left until one of those two holds, as the engine decides
        only after moves end or all is done (controller.core.throttle_removal)."""
        if not hasattr(self.h, "admin"):
            return
        listed = self.listed_for_removal()
        self.seen_busy &= listed
        if not listed:
            return
        busy = self.busy_entities()
        self.seen_busy |= listed & busy
        if not any(c.active is not None and c.active.state is not None for c in self.alive()):
            return
        stale = listed - busy if not busy else (listed - busy) & self.seen_busy
        assert not stale, ("throttles kept for what no move or entry involves", sorted(stale, key=str), sorted(busy, key=str))

    def listed_for_removal(self) -> set[tuple[str, object]]:
        out = set()
        for path, kind, key in ((paths.THROTTLED_REPLICAS_REMOVAL, "topic", "topics"),
                                (paths.THROTTLED_RATES_REMOVAL, "broker", "brokers")):
            if self.h.server.exists(path) is not None:
                out |= {(kind, m) for m in self.h.json(path).get(key, [])}
        return out

    def busy_entities(self) -> set[tuple[str, object]]:
        """What the running moves (the topic znode's adding/removing) and the entries of
        /admin/reassign_partitions involve: their topics, and the brokers of their replica
        sets, targets and originals (controller.core.throttle_removal.busy_in_state, read
        from ZooKeeper)."""
        znode = self.h.json(paths.topic("t"))
        adding, removing = znode.get("adding_replicas", {}), znode.get("removing_replicas", {})
        busy: set[tuple[str, object]] = set()
        for p, replicas in znode["partitions"].items():
            if adding.get(p) or removing.get(p):
                busy |= {("topic", "t")} | {("broker", b) for b in replicas}
        if self.h.server.exists(paths.REASSIGN_PARTITIONS) is not None:
            for e in self.h.json(paths.REASSIGN_PARTITIONS).get("partitions", []):
                current = znode["partitions"].get(str(e["partition"]), []) if e["topic"] == "t" else []
                busy.add(("topic", e["topic"]))
                busy |= {("broker", b) for b in [*e["replicas"], *(e.get("original_replicas") or []), *current]}
        return busy

    @invariant()
    def removal_and_fencing(self):
        """4 and 5, recorded as they happen by the harness."""
        assert not self.h.violations, self.h.violations


# soak.TEST_SCHEDULES (2,000) take about 2 minutes on 2 cores (some 60 ms of CPU each on a quiet
# machine); the timeout leaves room for a loaded one and for a larger STATEFUL_SCHEDULES.
@pytest.mark.timeout(3600)
def test_schedules():
    """docs/DESIGN.md section 7.2: STATEFUL_SCHEDULES (default soak.TEST_SCHEDULES) schedules of
    soak.STEPS steps, from a seed fixed under CI (random otherwise, printed either way), over
    every core, plus the scripted schedules that cut every crash point
    (tests/controller/crash_schedules.py); a failing schedule fails this with its seed, its
    shrunk steps and the ``make soak`` line that replays it. At any schedule count every flush
    kind must be written and every crash point written must be cut."""
    schedules = int(os.environ.get("STATEFUL_SCHEDULES", soak.TEST_SCHEDULES))
    seed = soak.default_seed()
    print(f"\nstateful: seed {seed}, {schedules} schedules (replay: make soak SEED={seed} SCHEDULES={schedules})")
    result = soak.run(seed, schedules)
    coverage = result.coverage
    figures.table("stateful crash points (schedules that cut each flush kind before each op)", coverage.table())
    figures.record(
        "stateful",
        seed=seed,
        seconds=round(result.seconds, 1),
        cpu_seconds=round(result.cpu_seconds, 1),
        crash_points=len(coverage.required()),
        schedules=result.schedules,
        steps=result.steps,
        scripted_schedules=result.scripted,
        crash_points_covered_by_random=result.random_coverage.covered(),
        crash_points_covered=coverage.covered(),
        alter_partition_isr_changes=result.isr_alters,
    )
    if result.failure is not None:
        pytest.fail(result.failure, pytrace=False)
    assert result.schedules >= schedules, result
    assert result.steps >= schedules * soak.STEPS, result
    assert result.scripted == crash_schedules.COUNT, result
    if soak.ALTER_PARTITION_EVERY and len(soak.shard_counts(schedules)) > 2:
        assert result.isr_alters > 0, "no leader's AlterPartition was answered in the shards that send them"
    problems = soak.problems(result)
    assert not problems, "\n".join(problems)


# ---- the checks themselves: each fails on what it exists to catch --------------------------


def test_the_leader_epoch_check_flags_a_change_without_a_new_written_epoch():
    """harness.check_leader_epoch on hand-made LeaderAndIsr entries: a new leader or replica
    set needs an epoch above the last one that broker was sent and one the state znode was
    written with; a resend of the same leader and replicas needs neither; a deposed
    controller's requests are not judged."""
    m = ControllerMachine()
    try:
        m.start()
        h = m.h
        h.violations.clear()
        state = h.json(paths.partition_state("t", 0))
        epoch, current = state["leader_epoch"], int(h.server.read(paths.CONTROLLER_EPOCH)[0])
        replicas = h.assignments[("t", 0)]

        def entry(leader, reps, leader_epoch):
            return {"partition_index": 0, "leader": leader, "leader_epoch": leader_epoch, "replicas": reps}

        h.check_leader_epoch(current, 1, "t", entry(state["leader"], replicas, epoch))  # the state held
        assert h.violations == []
        h.check_leader_epoch(current, 1, "t", entry(replicas[1], replicas, epoch))  # new leader, same epoch
        assert len(h.violations) == 1 and "not above" in h.violations[0]
        h.violations.clear()
        h.check_leader_epoch(current, 2, "t", entry(replicas[1], replicas, epoch + 7))  # an epoch never written
        assert len(h.violations) == 1 and "never written" in h.violations[0]
        h.violations.clear()
        h.check_leader_epoch(current - 1, 3, "t", entry(replicas[2], replicas, 0))  # a deposed controller's
        assert h.violations == []
    finally:
        m.run(m.h.close())
        m.loop.close()


def test_the_leaders_invariant_flags_a_leader_outside_its_isr_and_a_dead_leader():
    m = ControllerMachine()
    try:
        m.start()
        path = paths.partition_state("t", 0)
        state, stat = m.h.server.read(path)
        state = json.loads(state)
        m.leaders()  # as the controller left it
        outside = {**state, "leader": next(b for b in ALL_BROKERS if b not in state["isr"])}
        m.run(m.h.admin.set(path, json.dumps(outside).encode(), stat.version))
        with pytest.raises(AssertionError, match="leader outside the ISR"):
            m.leaders()
        # A leader on a stopped broker while other ISR members live, a controller active and
        # loaded: broker 5 leads and is then seen as stopped (nothing told the controller).
        dead = {**state, "leader": 5, "isr": [5, *[b for b in state["isr"] if b != 5]]}
        m.run(m.h.admin.set(path, json.dumps(dead).encode(), stat.version + 1))
        m.leaders()  # broker 5 lives: fine
        m.h.cluster.brokers[5].running = False
        try:
            with pytest.raises(AssertionError, match="no live leader"):
                m.leaders()
        finally:
            m.h.cluster.brokers[5].running = True
    finally:
        m.run(m.h.close())
        m.loop.close()


def test_the_intra_broker_moves_invariant_flags_a_lost_move_and_a_replica_gone_unasked():
    """intra_broker_moves on a hand-made state: an accepted move copying, then done, holds; a
    future log dropped while the replica stays is a lost move; a moving replica removed from
    its broker with no StopReplica(delete) sent is one deleted behind the controller's rules."""
    m = ControllerMachine()
    try:
        m.start()
        replicas = m.h.json(paths.topic("t"))["partitions"]["0"]
        b = replicas[0]
        replica = m.h.cluster.brokers[b].core.model.get("t", 0, b)
        other = next(d for d in LOG_DIRS if d != replica.log_dir)
        m.move_log_dir(p=0, i=0, directory=other)
        assert m.dir_moves[(("t", 0), b)][0] == other and replica.future is not None
        m.intra_broker_moves()  # copying into its directory
        replica.future = None  # the copy lost: neither done nor copying
        with pytest.raises(AssertionError, match="neither done nor copying"):
            m.intra_broker_moves()
        replica.log_dir = other  # done
        m.intra_broker_moves()
        m.h.cluster.brokers[b].core.model.remove("t", 0, b)  # gone, and nothing asked for it
        with pytest.raises(AssertionError, match="without a StopReplica"):
            m.intra_broker_moves()
    finally:
        m.run(m.h.close())
        m.loop.close()


def test_the_leaders_invariant_flags_a_leader_or_an_isr_member_on_a_failed_log_directory():
    """5c with log directories: marked offline behind the controller's back (nothing told it),
    a leader's replica fails the check, and so does a follower's left in the ISR."""
    m = ControllerMachine()
    try:
        m.start()
        state = m.h.json(paths.partition_state("t", 0))
        leader, follower = state["leader"], next(b for b in state["isr"] if b != state["leader"])
        m.leaders()  # as the controller left it
        replica = m.h.cluster.brokers[follower].core.model.get("t", 0, follower)
        replica.storage_error = True
        with pytest.raises(AssertionError, match="a replica on a failed log directory in the ISR"):
            m.leaders()
        replica.storage_error = False
        m.h.cluster.brokers[leader].core.model.get("t", 0, leader).storage_error = True
        with pytest.raises(AssertionError, match="a leader on a failed log directory"):
            m.leaders()
    finally:
        m.run(m.h.close())
        m.loop.close()
