"""Benchmark: the controller reassigning 100,000 partitions on a real local ZooKeeper.

Starts its own ZooKeeper (znodes.launcher, Debian's server, fsync on as in production),
registers brokers and creates topics the way Kafka lays them out, then runs the controller
in this process (the real ActiveController over KazooStore, election, recovery, batched fenced
writes, the production TcpTransport) against INSTANT BROKERS: brokers whose replicas catch up
the moment a LeaderAndIsr names them, and which answer DescribeLogDirs with the replicas
they host (those laid out, plus those a LeaderAndIsr made, minus those a StopReplica deleted).
They run in a process of their own (bench/instant_brokers.py), as brokers do in production:
one TCP port per broker on 127.0.0.1, the Kafka wire protocol with the project's codec, and
the broker registrations they write carry those ports. That process also creates the cluster
and runs the feeder (the third-party tool below), so neither their CPU nor their ZooKeeper
sessions' threads are this process's: they used to share it (and its GIL) with the
controller, about 8% of its CPU in a profile at 30,000 partitions, more with their kazoo
threads. A leader told of adding replicas writes the grown ISR
to the state znode (conditional on its zkVersion) and announces it in an ISR change
notification; these writes are batched, many partitions per multi and per notification, on
the brokers' own ZooKeeper session (not counted as controller operations). Requests are
encoded with the wire codec, framed and sent over TCP, and the answers read and decoded, so
the controller pays for all of it (an UpdateMetadata, the same for every broker but its
epoch, is encoded once per step: controller.core.shared_body). With brokers that take
no time, what is measured is the controller and ZooKeeper. The bench drives the other
process through a line protocol on its stdin (feed, the failover wave's hold, wave and
release, resume, the stall watchdog's status: bench/instant_brokers.py).

The controller is elected (and has read every partition's state for its full UpdateMetadata,
sent it, and had every broker's DescribeLogDirs answer) before the work arrives, as on a
running cluster. The work arrives as a third-party tool
would give it: a feeder keeps ``/admin/reassign_partitions`` topped up in Kafka's plain format (the znode must stay under ZooKeeper's 1 MiB limit, so
100,000 entries cannot be written at once), appending with conditional writes while the
controller works. Every partition moves all three replicas (RR = 3 brokers), so every move
goes the whole way: start, ISR growth, leader change and ISR shrink, StopReplica, finish.

Half-way, the failover wave: the feeder stops after the first half of the partitions and
every move fed finishes (``/admin/reassign_partitions`` gone); then the feeder writes the next
KILL_IN_FLIGHT (3,000) entries in one write while the instant brokers hold their ISR growth
(the copies are running), the controller starts all of them, and once every one is started
(its KIP-240 record, state and topic znodes written) the active controller is killed (task
cancelled, its session closed so its ``/controller`` goes at once). The brokers' held ISR
writes are dropped (the copies had not caught up) and they catch up at once again from then
on; a second controller is elected and recovers from ZooKeeper. The feeder resumes once the
new controller has completed a move (the failover figure is taken then), so the figure times
the resumption of those moves, not the start of new ones.

The peer is the same controller with coalescing off: every partition's every change is its
own engine step and its own fenced multi-op (the write pattern of Kafka 2.x's ZooKeeper
controller, which rewrites the topic znode and ``/admin/reassign_partitions`` partition by
partition), on a smaller run of ``--peer-partitions`` partitions and without the failover;
the ratio compares partitions per second.

Figures (printed last, one per line):

* ``partitions_per_second``: partitions completed per second, wall clock from the first
  submission, failover included (the new controller's election, recovery and resumption),
  except the benchmark's own work between the kill and the next election, when the clocks
  (wall and CPU) stop: its reads of what the dead controller left (the moves in flight, the
  partitions its last step finished) and the collection of the dead controller's garbage, which
  in production dies with its process (about 0.5 s of a run at 30,000 partitions).
* ``zk_ops_per_partition``: controller ZooKeeper operations per reassigned partition: every
  op inside a multi counts (the ``/controller_epoch`` check of each fenced multi too), plus
  every read (get, exists, children) - everything the controller's sessions sent, elections,
  failover and recovery included, except the reads each election makes for its full
  UpdateMetadata. ``zk_writes_per_partition`` and
  ``zk_reads_per_partition`` split it. Reads through ``get_many`` (ZooKeeper 3.6+ multiRead,
  hundreds of gets per request) count one read per znode, exactly like single gets: fewer
  round trips, not fewer operations.
* ``zk_election_reads_per_partition``: those full-metadata reads (controller.core.full_metadata):
  every partition's state once per election, reassigned or not, as Kafka's controller reads
  them at failover; the run's two elections make it 2. They are reported apart because they
  do not grow with the work: a cluster of a million partitions reassigning a hundred pays
  them all the same. ``zk_all_ops_per_partition`` adds them back.
* Per moved partition the algorithm (docs/DESIGN.md section 4) needs 4 writes: create
  ``/admin/reassignments/T/P`` at the start and delete it at the end (the KIP-240 record),
  the start's state write (leader epoch + 1: every LeaderAndIsr with a new replica set
  carries a new leader epoch, as Kafka's ``updateLeaderEpochAndSendRequest`` writes first)
  and the completion's (new leader epoch, ISR shrunk to TRS), both conditional on the
  zkVersion the controller holds. The target is ``zk_ops_per_partition <= 5`` with that
  start write counted (it was 4 before the leader epoch was bumped at the start; correctness
  first). It reads nothing of its own: the state it starts from is
  the one its election read (kept fresh by ISR notifications and its own writes, like
  Kafka's controller context), and the grown ISR comes in the leader's notification, which
  carries the state written and its zkVersion (znodes.models.NotifiedState); the conditional
  completion write lands only if the znode is still exactly that state, so invariant 4
  holds as with a read. Everything else is amortised (epoch checks: one per multi of up to
  1,000 ops; topic znodes and ``/admin/reassign_partitions``: once per step; notification
  reads and deletes: one per 5,000 partitions; after the failover, re-reading the states of
  the moves in flight and of moves the new controller starts before its election read
  reached them).
* ``failover_resume_seconds``: the median over the runs of record (``failover_rounds`` of
  them, the slowest as ``failover_resume_seconds_max``). "Resume" is the new controller
  completing a move again: from
  the moment its election returns (``/controller`` created and ``/controller_epoch`` bumped
  in one multi) to the end of its first engine step that completes a partition, that step's
  writes landed (recovery's reads of the brokers, the topic znodes, the KIP-240 records and
  the resumed moves' states, the resumed moves' new leader epochs and LeaderAndIsr, the
  brokers' ISR writes and notifications, the completion's writes and StopReplica included).
  ``failover_resume_cpu_seconds`` (median; ``_max`` the largest) is this process's CPU over
  the same window: the new controller's own work (its threads too), which a slower machine
  makes longer; the rest of the window is waiting (ZooKeeper's fsyncs, the brokers' ISR writes,
  the scheduler), which a busy disk or neighbour makes longer.
  ``in_flight_at_failover`` is how many moves had started and not finished (KIP-240 records)
  when the old controller died: the failover wave's KILL_IN_FLIGHT on a cluster of 100,000
  partitions (a tenth of the partitions on smaller runs), every other partition idle, half
  of them already moved, nothing else in ``/admin/reassign_partitions``. The wave is needed
  because moves otherwise start in waves of up to FEED_HIGH (10,000: the feeder's window, an
  ``/admin/reassign_partitions`` of ~880 KB once the controller added ``original_replicas``,
  under ZooKeeper's 1 MiB limit as in Kafka) that instant brokers finish within a second, so
  a kill at a random moment finds anything from none to 10,000 in flight.
  ``--profile-failover FILE`` writes cProfile's stats of that window (this process: the new
  controller alone).
* The run of record counts Prometheus metrics as the daemon does (controller.shell.metrics:
  every ZooKeeper call timed, every step's results counted by door through the journal, whose
  RecordIds writes each move's door into its record, a scrape every 5 s);
  ``partitions_per_second_metrics_off`` is the same run without them,
  ``metrics_on_off_ratio`` the one over the other and ``metrics_cost_percent`` the difference
  (the budget is 3%; the runs follow each other, so a machine shared with other work may stray
  either way: ``--rounds N`` runs N pairs, alternating which goes first, and reports the
  medians); ``metrics_cpu_cost_percent``
  compares the run's process's CPU seconds, which other work on the machine barely touches.
  Every one of these runs has a fresh process of its own (``run_in_process``), as a controller
  has in production: in one process, a later run paid for the earlier runs' heap, and the
  order alone made metrics look 10% dearer;
  ``metrics_timed_calls_per_partition`` is how many ZooKeeper calls the metrics timed (about
  2 us each) per partition: the store is called per batch, not per partition.

* ``controller_fraction_of_zk_limit``: ``partitions_per_second`` over the ceiling ZooKeeper
  allows at the measured ``zk_ops_per_partition``. The ceiling is measured in the same run on
  the same ZooKeeper (bench/zk_writes.py's ``multi_ceiling``: 20,000 partition-state-sized
  creates in multi-ops of the BatchedWriter's size, all in flight at once; a round after each
  controller run, at least CEILING_ROUNDS, on a JVM the runs warmed; the median):
  ``zk_multi_op_ceiling_ops_per_second``, and ``zk_limit_partitions_per_second`` is that over
  the ops per partition. The rounds stray with the disk's fsync rate, so the best round is
  reported too (``zk_multi_op_ceiling_best_ops_per_second``,
  ``controller_fraction_of_zk_best_round``: the fraction against it). The controller's ops are creates, conditional sets, deletes and checks
  of about that size, so the ceiling is approximate, and it holds for instant brokers only: with
  real brokers, copying data is the limit long before ZooKeeper is.

* ``partitions_per_second_steady``, ``zk_ops_per_partition_steady``,
  ``process_cpu_ms_per_partition_steady`` and ``controller_fraction_of_zk_limit_steady``: the
  same figures for the run's first half alone (from the first submission until every move of
  the first half of the partitions finished, before the failover wave): one controller at work,
  without the kill, the second election's full read and the recovery that the whole-run figures
  include. The goal's figure is ``controller_fraction_of_zk_limit`` (the whole run); these say
  how much of the gap is the failover's. ``controller_busy_fraction_steady`` is the
  controller's process's CPU over the half's wall clock, and ``zk_flush_wait_fraction_steady``
  the part of the wall clock it sat waiting inside its flushes (each multi-op sent once the
  last landed: their wall clock minus the process's CPU meanwhile, CountingStore); the rest of
  the idle time it waited for news (the brokers' ISR changes, the feeder's entries) and for
  its reads.

* The machine's share (bench.machine), over the same steady half: the controller shares
  ``machine_cores`` cores with the ZooKeeper server it writes to and the instant brokers'
  process. ``zk_server_cpu_ms_per_partition_steady`` and ``brokers_cpu_ms_per_partition_steady``
  are their CPU per partition (ZooKeeper's JVM whole: its request threads, log syncs, collector
  and compiler, serving the controller's ops, the brokers' ISR writes and notifications and the
  feeder's writes); ``machine_busy_cores_steady`` is every process's CPU over the half's wall
  clock. ``zk_server_cpu_us_per_op_ceiling`` is ZooKeeper's CPU per op in the ceiling's rounds
  (median): its cost per op with nothing else to do. From these, at the goal's rate
  (GOAL_FRACTION_OF_ZK_LIMIT of ``zk_limit_partitions_per_second``, the whole run's ops per
  partition; the others' cost from the steady half, which is the generous reading):
  ``controller_cpu_budget_ms_per_partition_at_goal`` is the CPU per partition the cores leave
  the controller, at most what its one core gives at that rate (it decides on one thread;
  negative: the others alone need more than the machine),
  ``controller_cpu_budget_ms_per_partition_at_goal_brokers_elsewhere`` the same with the brokers
  on machines of their own, as in production, and ``free_controller_fraction_of_zk_limit`` the
  fraction a controller costing no CPU at all could reach on this machine.

* ``process_cpu_ms_per_partition``: the controller's process's CPU seconds per partition in
  the run of record, from the first submission to the last completion: the controller alone
  (its threads, its sockets to the brokers and ZooKeeper; the instant brokers and the feeder
  are another process, and the benchmark's own bookkeeping in this one is a few polls). It
  runs on one core, so 1,000 over this is the most partitions per second the run could reach
  with ZooKeeper and the brokers answering instantly.

* ``partitions_per_second_sockets``, ``zk_ops_per_partition_sockets`` and
  ``controller_fraction_of_zk_limit_sockets`` (the same ceiling at this run's ops per
  partition): the same coalescing controller, in this process, against ``reassignd sim``'s
  brokers over real sockets (12 brokers started as the end-to-end tests start them, replicas
  of 1 KiB fetched at 1 GiB/s and nothing produced, so copies are unthrottled and done within
  a tick), on ``--socket-partitions`` partitions fed the same way, without the failover.
  LeaderAndIsr, StopReplica, UpdateMetadata and DescribeLogDirs are framed, sent and answered
  over TCP, and the new replicas' ISR growth comes from the leaders' own ISR writes and
  notifications. This rate is bound by the sim's latency per move, not by the controller:
  the sim's leaders write the grown ISR a third to half a second after the LeaderAndIsr (once
  a second, until the sim stopped walking every replica per replica created and per copy
  step; what is left is mostly the ISR writes queueing on the sim's one Python ZooKeeper
  client for 12 brokers), announce it after half a second without ISR changes (Kafka's 5 s
  quiet period scaled down), and the feeder keeps a fifth to two fifths of the partitions in
  the znode (feed_window), so moves go in rounds of a few hundred. Its brokers write their ISR
  changes side by side (sim.cluster.ISR_WRITES_IN_FLIGHT). ``controller_cpu_ms_per_partition_sockets``
  is the controller's own CPU per partition in that run.

The default sizes finish in about a minute on a shared 2-core machine (``DEFAULT_SIZES``);
``--full`` runs the issue's 100,000 partitions (``FULL_SIZES``; sizes given on the command line
win over both).

All figures go to bench/results.json through bench.results.

A run that completes no partition for STALL_S seconds prints where the controller, the
instant brokers and every task stand and fails, rather than hanging. Completed partitions are
counted as a set: those of the killed controller's last step, whose writes may have landed
without it seeing them, are read back from the topic znodes after the kill.

    .venv/bin/python bench/controller.py [--partitions 10000] [--peer-partitions 500] [--socket-partitions 2000]
                                         [--rounds 1] [--full] [--profile-failover FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import cProfile
import gc
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import results as bench_results  # noqa: E402
from bench.instant_brokers import (  # noqa: E402,F401  (re-exported: the tests and run_sockets use them)
    BROKERS,
    FEED_HIGH,
    FEED_LOW,
    PARTITIONS_PER_TOPIC,
    RF,
    Feeder,
    InstantBrokersProcess,
    at_target,
    feed_window,
)
from bench.machine import (  # noqa: E402
    controller_budget_ms,
    free_controller_fraction,
    machine_busy_seconds,
    process_cpu_seconds,
    processes_cpu_seconds,
)
from bench.zk_writes import multi_ceiling, workload  # noqa: E402
from controller.core.config import ControllerConfig  # noqa: E402
from controller.core.events import StatesRead, StopReplicaSent  # noqa: E402
from controller.shell.active import ActiveController  # noqa: E402
from controller.shell.election import try_elect  # noqa: E402
from controller.shell.inbox import Inbox  # noqa: E402
from controller.shell.journal import MoveJournal, RecordIds  # noqa: E402
from controller.shell.metrics import MeteredInbox, MeteredStore, Metrics  # noqa: E402
from controller.shell.role import Role  # noqa: E402
from controller.shell.transport import TcpTransport  # noqa: E402
from znodes.launcher import LocalZooKeeper  # noqa: E402
from znodes.store import connect  # noqa: E402

# The failover goal of the issue: this many moves in flight when the controller dies (the
# failover wave of run(); a tenth of the partitions on smaller runs).
KILL_IN_FLIGHT = 3000
# No partition completed for this long: the run is stuck (a whole run takes seconds); say where
# everything is and fail instead of hanging.
STALL_S = 60.0


# ---- counting the controller's operations ------------------------------------------------------

READS_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("reads_kind", default="reads")


class CountingStore:
    """Wraps a store and counts every operation sent to ZooKeeper."""

    def __init__(self, inner, counts: dict):
        self._inner = inner
        self.counts = counts

    @property
    def reads_kind(self) -> str:
        # "metadata_reads" while the full UpdateMetadata reads (CountedController.read_metadata);
        # a context variable, so that the next chunk's read, which that call starts ahead in a
        # task of its own (controller.shell.metadata_reads), counts as what it is.
        return READS_KIND.get()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def _add(self, kind: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n

    async def get(self, path, watch=False):
        self._add(self.reads_kind)
        return await self._inner.get(path, watch=watch)

    async def exists(self, path, watch=False):
        self._add(self.reads_kind)
        return await self._inner.exists(path, watch=watch)

    async def children(self, path, watch=False):
        self._add(self.reads_kind)
        return await self._inner.children(path, watch=watch)

    async def get_many(self, path_list):
        # One multiRead request carries many gets: each get still counts as one read.
        path_list = list(path_list)
        self._add(self.reads_kind, len(path_list))
        return await self._inner.get_many(path_list)

    async def create(self, *a, **kw):
        self._add("writes")
        return await self._inner.create(*a, **kw)

    async def set(self, *a, **kw):
        self._add("writes")
        return await self._inner.set(*a, **kw)

    async def delete(self, *a, **kw):
        self._add("writes")
        return await self._inner.delete(*a, **kw)

    async def ensure_path(self, path):
        self._add("writes")
        return await self._inner.ensure_path(path)

    async def multi(self, ops):
        self._add("writes", len(ops))
        self._add("multis")
        return await self._inner.multi(ops)

    async def fenced_multi(self, ops, epoch_zkversion):
        self._add("writes", len(ops) + 1)  # + the /controller_epoch check
        self._add("multis")
        # The writer's chunks go one after the other, each once the last landed: the wall
        # clock they take, and this process's CPU meanwhile (its ZooKeeper client's thread
        # included), say how long the controller sits waiting for ZooKeeper.
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return await self._inner.fenced_multi(ops, epoch_zkversion)
        finally:
            self._add("flush_wall", time.perf_counter() - wall)
            self._add("flush_cpu", time.process_time() - cpu)


class CountedController(ActiveController):
    """Tells the reads of the full UpdateMetadata (every partition's state, at each election
    and to each registering broker) apart from the rest."""

    async def read_metadata(self, dues):
        token = READS_KIND.set("metadata_reads")
        try:
            return await super().read_metadata(dues)
        finally:
            READS_KIND.reset(token)


class UncoalescedController(CountedController):
    """The peer: one engine step (and one flush) per partition per change."""

    async def execute(self, events):
        for event in events:
            for single in split(event):
                await super().execute([single])


def split(event):
    if isinstance(event, StatesRead) and len(event.states) > 1:
        items = list(event.states.items())
        yield StatesRead(dict(items[:1]), event.notifications)
        for tp, state in items[1:]:
            yield StatesRead({tp: state})
    elif isinstance(event, StopReplicaSent) and len(event.partitions) > 1:
        for tp in event.partitions:
            yield StopReplicaSent((tp,))
    else:
        yield event


# ---- one run ------------------------------------------------------------------------------------------


# The default run finishes in about a minute on a shared 2-core machine; --full is the issue's
# 100,000 partitions (the sockets run too: the sim then ticks over 300,000 replicas).
DEFAULT_SIZES = {"partitions": 10_000, "peer_partitions": 500, "socket_partitions": 2_000}
# The sockets run stays at 2,000 in --full: ``reassignd sim`` creates its topics in one
# multi-op (sim/topics.py), which ZooKeeper refuses past ~3,000 partitions (over 1 MiB), and
# at the sim's ~60 partitions/s (its ISR writes, see the docstring) 100,000 would take ~30 min.
FULL_SIZES = {"partitions": 100_000, "peer_partitions": 1_000, "socket_partitions": 2_000}

# Prometheus scrapes this often in docker/prometheus.yml: the metrics-on run is scraped too.
SCRAPE_INTERVAL_S = 5.0


async def run(hosts: str, n_partitions: int, *, coalesce: bool, failover: bool, metrics: bool = False,
              profile_failover: str | None = None, profile_steady: str | None = None,
              zk_pids: tuple[int, ...] = ()) -> dict:
    """One run; ``profile_failover``: a file for cProfile's stats of this process from the new
    controller's election to its first completed move; ``profile_steady``: one for the steady
    first half (from the first entry fed to the half's last move finished); ``zk_pids``: the
    ZooKeeper servers' processes, whose CPU over the steady half the result carries beside the
    instant brokers' and the whole machine's (bench.machine).

    The instant brokers and the feeder are a process of their own (bench.instant_brokers), which
    creates the cluster on ``hosts``; this process is the controller's, reaching the brokers
    through the production TcpTransport, so its CPU time is the controller's."""
    profiler = cProfile.Profile()
    brokers = await InstantBrokersProcess.start(hosts, n_partitions)
    counts: dict = {}
    config = ControllerConfig(
        max_incoming_per_broker=10**6,
        max_outgoing_per_broker=10**6,
        max_cluster_moves=FEED_HIGH,
    )
    # Partitions at their target. A set, not a count: the killed controller's last step may
    # have landed its writes without reaching on_step, so those are read back from ZooKeeper
    # after the kill, and a partition the next controller finishes again counts once.
    completed: set = set()
    done = asyncio.Event()
    # (wall clock, this process's CPU) when the new controller first completed a move
    first_step_after_failover: list[tuple[float, float]] = []
    resumed: list[asyncio.Future] = []

    def on_step(step):
        completed.update(step.completed)
        if not first_step_after_failover and elected_at and step.completed:
            first_step_after_failover.append((time.perf_counter(), time.process_time()))
            if profile_failover:
                profiler.disable()
                profiler.dump_stats(profile_failover)
            resumed.append(brokers.send("resume"))  # the figure is taken: the rest of the work arrives again
        if len(completed) >= n_partitions:
            done.set()

    async def start_controller(cid):
        store = CountingStore(await connect(hosts, session_timeout=10), counts)
        step_hook = on_step
        if metrics:
            # As the daemon wires them (controller.shell.daemon): store, inbox, step results and
            # the moves' doors (the journal, whose RecordIds puts each door in its record).
            registry = Metrics()
            journal = MoveJournal(registry)
            store = RecordIds(MeteredStore(store, registry), journal)
            role = Role(cid)
            registry.watch(role=role)

            def step_hook(step, observe=registry.observe_step):
                observe(step)
                on_step(step)

        won = await try_elect(store, cid)
        assert won is not None, "another controller is active"
        inbox = MeteredInbox(store, registry) if metrics else Inbox(store)
        kind = CountedController if coalesce else UncoalescedController
        # Each controller its own connections to the brokers, as its own process would have.
        transport = SettlingTransport(brokers.endpoints.get)
        active = kind(
            store, inbox, controller_id=cid, epoch=won.epoch, epoch_zkversion=won.epoch_zkversion,
            transport=transport, config=config, on_step=step_hook,
        )
        actives.append(active)
        if metrics:
            journal.begin_term()
            active.journal = journal
            role.active = active
            registry.elected(won.epoch)
            registries.append(registry)
            scrapers.append(asyncio.create_task(scrape_forever(registry)))
        return store, inbox, transport, asyncio.create_task(active.run())

    scrapers: list[asyncio.Task] = []
    registries: list[Metrics] = []

    elected_at = elected_cpu_at = 0.0
    in_flight_at_failover = 0
    first_half: dict | None = None
    paused_wall = paused_cpu = 0.0  # the benchmark's own work between the kill and the next election
    actives: list = []
    try:
        store, inbox, transport, task = await start_controller(1)
        # As on a running cluster, the controller was elected before the work arrives: it has
        # read every partition's state for its full UpdateMetadata (the reads at an election),
        # sent it, and had every broker's DescribeLogDirs answer (what each hosts, checked
        # against the assignments: engine step 9b) - answered over TCP, these come after the
        # reads, and the first half's figures would otherwise pay for the election's end.
        began_election = time.perf_counter()
        settled = 0
        while settled < 2:  # idle at two looks in a row
            if task.done():
                task.result()  # raises what stopped it
            await asyncio.sleep(0.01)
            loaded = actives[0].state is not None and len(actives[0].state.states) >= n_partitions
            settled = settled + 1 if loaded and idle(actives[0], transport) else 0
        election_seconds = time.perf_counter() - began_election
        started = time.perf_counter()
        cpu_started = time.process_time()
        others_started = others_cpu(zk_pids, brokers.proc.pid)
        flushes_started = {k: counts.get(k, 0.0) for k in ("flush_wall", "flush_cpu")}
        steady_profiler = cProfile.Profile() if profile_steady else None
        if steady_profiler is not None:
            steady_profiler.enable()
        await brokers.call("feed", {"pause_at": n_partitions // 2 if failover else None})
        if failover:
            def running() -> int:
                state = actives[0].state
                return 0 if state is None else sum(1 for _ in state.running())

            # Half-way, the failover wave (see the docstring): the feeder pauses after the first
            # half and every move fed finishes; then one write of the next `wave` entries, which the
            # controller starts while the brokers' copies run, and the kill once all are started.
            await brokers.call("wait_paused")
            while actives[0].state.tasks or not await brokers.call("drained"):
                await asyncio.sleep(0.01)  # the controller deletes the znode once every entry is done
            # The first half, done: one controller at work and nothing else (the steady figures).
            first_half = {"elapsed": time.perf_counter() - started, "cpu": time.process_time() - cpu_started,
                          "partitions": len(completed), "counts": dict(counts)}
            others = others_cpu(zk_pids, brokers.proc.pid)
            first_half.update({k: others[k] - others_started[k] for k in others})
            first_half.update({k: counts.get(k, 0.0) - flushes_started[k] for k in flushes_started})
            if not zk_pids:
                del first_half["zk_cpu"]
            if steady_profiler is not None:
                steady_profiler.disable()
                steady_profiler.dump_stats(profile_steady)
            await brokers.call("hold")
            wave = await brokers.call("wave", {"n": min(KILL_IN_FLIGHT, n_partitions // 10)})
            while running() < wave:
                await asyncio.sleep(0.001)
            print(f"killing with {running()} moves running", file=sys.stderr)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            inbox.close()
            await store.close()  # the session ends: /controller goes now
            await transport.close()  # and its connections to the brokers, as with its process
            for scraper in scrapers:
                scraper.cancel()  # the killed controller's process would be gone, /metrics with it
            # The copies had not caught up when the controller died: the leaders' ISR writes for
            # them would name the dead controller's leader epochs; the new one's LeaderAndIsr
            # (a new leader epoch for every resumed move) lets them catch up at once. (The
            # brokers first handle everything the dead controller's connections carried.)
            await brokers.call("release")
            # From here to the next election the clocks stop: this is the benchmark's own
            # bookkeeping (its reads of what the dead controller left) and the dead controller's
            # garbage, neither of which a controller pays for in production (nothing else runs
            # meanwhile: the feeder is paused and the brokers hold nothing).
            paused_at, paused_cpu_at = time.perf_counter(), time.process_time()
            # Before the next election: the moves in flight, and what the killed controller's last
            # step finished without telling on_step.
            left = await brokers.call("after_kill")
            in_flight_at_failover = left["in_flight"]
            completed.update((t, p) for t, parts in left["at_target"].items() for p in parts)
            # The killed controller's objects die with its process in production; here they are
            # this process's garbage (reference cycles of its tasks and state: a collection of
            # ~400,000 objects took 0.7 s inside the window in a run at 100,000 partitions).
            gc.collect()
            paused_wall += time.perf_counter() - paused_at
            paused_cpu += time.process_time() - paused_cpu_at
            store, inbox, transport, task = await start_controller(2)  # elected when this returns
            elected_at, elected_cpu_at = time.perf_counter(), time.process_time()
            if profile_failover:
                profiler.enable()
            if len(completed) >= n_partitions:
                done.set()
        await until_done(done, lambda: len(completed), actives, brokers)
        elapsed = time.perf_counter() - started - paused_wall
        cpu = time.process_time() - cpu_started - paused_cpu
        await brokers.call("stop_feeding")
        await asyncio.gather(*resumed)  # raises if the feeder did not resume
        # every partition at its target, nothing left running
        unfinished = await brokers.call("check")
        assert not unfinished, f"topics not at their targets: {unfinished[:5]}"
        brokers_status = await brokers.call("status")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for scraper in scrapers:
            scraper.cancel()
        inbox.close()
        await transport.close()
        await store.close()
    finally:
        await brokers.close()
    return {
        "elapsed": elapsed,
        "cpu": cpu,
        # ZooKeeper calls the metrics timed: what their cost grows with
        "timed_calls": sum(sum(t[0]) for r in registries for t in r.zk.calls.values()),
        "partitions": n_partitions,
        "counts": counts,
        # None: the new controller completed nothing (every move had finished before the kill).
        "failover": (first_step_after_failover[0][0] - elected_at) if failover and first_step_after_failover else None,
        "failover_cpu": (first_step_after_failover[0][1] - elected_cpu_at) if failover and first_step_after_failover else None,
        "in_flight_at_failover": in_flight_at_failover,
        "election_seconds": election_seconds,
        "first_half": first_half,
        "paused_seconds": paused_wall,
        # The instant brokers' and feeder's process, its whole life (cluster creation included):
        # not in "cpu", which is the controller's process alone.
        "brokers_cpu": brokers_status["cpu_seconds"],
    }


def others_cpu(zk_pids: tuple[int, ...], brokers_pid: int) -> dict:
    """CPU seconds so far of what shares the machine with the controller: the ZooKeeper
    servers, the instant brokers' process, and the whole machine's busy time."""
    return {"zk_cpu": processes_cpu_seconds(zk_pids),
            "brokers_cpu": process_cpu_seconds(brokers_pid), "machine_busy": machine_busy_seconds()}


class SettlingTransport(TcpTransport):
    """TcpTransport that counts its requests waiting for their answers (:func:`idle`)."""

    in_flight = 0

    async def request(self, *args, **kwargs) -> dict:
        self.in_flight += 1
        try:
            return await super().request(*args, **kwargs)
        finally:
            self.in_flight -= 1


def idle(active, transport: SettlingTransport) -> bool:
    """The controller waits for its next event (its loop parked on an empty inbox) and no request
    to a broker waits for its answer."""
    return transport.in_flight == 0 and active.inbox.waiting


async def until_done(done: asyncio.Event, completed, actives, brokers) -> None:
    """Wait for ``done``; raise what :func:`stall_watchdog` finds if the moves stop first."""
    watchdog = asyncio.create_task(stall_watchdog(completed, actives, brokers))
    finished = asyncio.create_task(done.wait())
    await asyncio.wait([finished, watchdog], return_when=asyncio.FIRST_COMPLETED)
    if not finished.done():
        finished.cancel()
        watchdog.result()  # raises the stall
    watchdog.cancel()


async def stall_watchdog(completed, actives, brokers) -> None:
    """Raise (after printing where the controller, the brokers and every task are) when no
    partition has completed for STALL_S seconds."""
    last, since = completed(), time.perf_counter()
    while True:
        await asyncio.sleep(1.0)
        now = completed()
        if now != last:
            last, since = now, time.perf_counter()
            continue
        if time.perf_counter() - since < STALL_S:
            continue
        out = sys.stderr
        print(f"STALL: {now} partitions completed, none for {STALL_S:.0f}s", file=out)
        state = actives[-1].state if actives else None
        if state is not None:
            print(f"active controller {len(actives)}: {len(state.tasks)} moves, {len(state.pending)} pending, "
                  f"{len(state.requests)} requests, {len(state.states)} states held", file=out)
            for tp, move in list(state.tasks.items())[:5]:
                print(f"  {tp}: {move!r}; state {state.states.get(tp)!r}", file=out)
        if brokers is not None:
            try:
                async with asyncio.timeout(10):
                    print(f"instant brokers: {json.dumps(await brokers.call('status'))}", file=out)
            except (TimeoutError, RuntimeError) as e:
                print(f"instant brokers: no status ({e!r})", file=out)
        for task in asyncio.all_tasks():
            task.print_stack(limit=6, file=out)
        raise RuntimeError(f"stalled: no partition completed for {STALL_S:.0f}s")


async def scrape_forever(registry: Metrics) -> None:
    while True:
        await asyncio.sleep(SCRAPE_INTERVAL_S)
        registry.scrape()


# ---- simulated brokers over real sockets ------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
# Each replica holds this much and every broker fetches at this rate, with nothing produced:
# a copy is done within one tick of the simulation, unthrottled, so what the figure adds to
# the instant brokers' is the brokers' side over TCP (LeaderAndIsr, StopReplica and
# UpdateMetadata framed, sent and answered; DescribeLogDirs at the election; ISR changes
# written by the leaders' own sessions when the new replicas have caught up).
SOCKET_PARTITION_SIZE = "1KiB"
SOCKET_SIM_ARGS = ["--bandwidth", "1GiB", "--produce-rate", "0", "--tick-ms", "20"]
# The sim creates its topics and registers its brokers before it prints its ready line.
SIM_START_TIMEOUT_S = 300


def socket_topics(n_partitions: int) -> list[str]:
    """``--topics`` specs for the sim: topics of PARTITIONS_PER_TOPIC partitions, RF 3."""
    specs, left, i = [], n_partitions, 0
    while left > 0:
        count = min(PARTITIONS_PER_TOPIC, left)
        specs.append(f"topic{i:04d}:{count}:{RF}:{SOCKET_PARTITION_SIZE}")
        left, i = left - count, i + 1
    return specs


def moved_targets(assignments: dict[str, dict[str, list[int]]], brokers: list[int]) -> dict[tuple[str, int], list[int]]:
    """Every replica moves, as with the instant brokers: a partition's target is the first RF
    brokers after its last replica (in id order, wrapping) that do not hold it."""
    out = {}
    for topic, parts in assignments.items():
        for p, replicas in parts.items():
            start = brokers.index(replicas[-1])
            ring = brokers[start + 1:] + brokers[:start + 1]
            out[(topic, int(p))] = [b for b in ring if b not in replicas][:RF]
    return out


def start_sim(hosts: str, n_partitions: int, log_path: Path) -> tuple[subprocess.Popen, dict]:
    """``reassignd sim`` on ``hosts``, as the end-to-end tests start it; its ready line."""
    args = [sys.executable, "-m", "reassignd", "sim", "--zookeeper", hosts, "--brokers", str(BROKERS),
            "--topics", *socket_topics(n_partitions), *SOCKET_SIM_ARGS]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=log,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()  # the sim prints nothing else on stdout
    if not line:
        proc.wait(SIM_START_TIMEOUT_S)
        raise RuntimeError(f"reassignd sim did not start: {log_path.read_text()[-2000:]}")
    return proc, json.loads(line)


def stop_sim(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def run_sockets(hosts: str, n_partitions: int, workdir: Path) -> dict:
    """The coalescing controller in this process, its brokers the sim's over TCP: election,
    the work fed as for the instant brokers, until every partition is at its target. No
    failover (the instant-broker run measures that)."""
    feeder_store = await connect(hosts, session_timeout=30, create_chroot=True)
    proc, ready = await asyncio.to_thread(start_sim, hosts, n_partitions, workdir / "sim.log")
    try:
        brokers = sorted(int(b) for b in ready["brokers"])
        endpoints = {int(b): (a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for b, a in ready["brokers"].items()}
        targets = moved_targets(ready["topics"], brokers)
        topics = sorted(ready["topics"])
        counts: dict = {}
        completed: set = set()
        done = asyncio.Event()

        def on_step(step):
            completed.update(step.completed)
            if len(completed) >= n_partitions:
                done.set()

        store = CountingStore(await connect(hosts, session_timeout=10), counts)
        won = await try_elect(store, 1)
        assert won is not None, "another controller is active"
        inbox = Inbox(store)
        transport = TcpTransport(endpoints.get)
        active = CountedController(
            store, inbox, controller_id=1, epoch=won.epoch, epoch_zkversion=won.epoch_zkversion, transport=transport,
            config=ControllerConfig(max_incoming_per_broker=10**6, max_outgoing_per_broker=10**6,
                                    max_cluster_moves=FEED_HIGH),
            on_step=on_step,
        )
        task = asyncio.create_task(active.run())
        while active.state is None or len(active.state.states) < n_partitions:
            if task.done():
                task.result()  # raises what stopped it
            await asyncio.sleep(0.01)
        stop_feeding = asyncio.Event()
        started, cpu_started = time.perf_counter(), time.process_time()
        feeder = asyncio.create_task(Feeder(feeder_store, targets).run(stop_feeding))
        await until_done(done, lambda: len(completed), [active], None)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        stop_feeding.set()
        await feeder
        assert await at_target(feeder_store, topics, targets) == set(targets), "not every partition at its target"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        inbox.close()
        await transport.close()
        await store.close()
    finally:
        await asyncio.to_thread(stop_sim, proc)
        await feeder_store.close()
    return {"elapsed": elapsed, "cpu": cpu, "partitions": n_partitions, "counts": counts}


# ZooKeeper ops the ceiling measurement writes: 20 multi-ops of 1,000, as bench/zk_writes.py,
# each round under its own parent; the ceiling is the median rate. One round takes a fraction
# of a second and this disk's fsync rate varies, so single rounds strayed by 4x between runs
# (20,229 ops/s after a 10,000-partition run, 88,628 after a 100,000-partition one, the JVM
# warmer; 24k-98k within one run): a round follows every controller run (the ZooKeeper then
# as the runs found it), at least CEILING_ROUNDS of them.
CEILING_OPS = 20_000
# Issue 25's goal for the controller: this fraction of the ceiling ZooKeeper allows at its ops
# per partition (controller_fraction_of_zk_limit), against which the machine's budget is taken.
GOAL_FRACTION_OF_ZK_LIMIT = 0.5
CEILING_ROUNDS = 5


async def run_in_process(hosts: str, n_partitions: int, *, metrics: bool, profile_failover: str | None,
                         debug: bool, profile_steady: str | None = None, zk_pids: tuple[int, ...] = ()) -> dict:
    """One instant-broker run (:func:`run`, coalescing, failover) in a fresh Python process.

    Each run of record gets a process of its own, as a controller has in production: run one
    after another in one process, a later run paid for the earlier runs' heap (the collector
    walking more, a fragmented allocator), so the run order alone moved a pair's figures by
    10% (metrics_cost_percent=9.4 recorded that way; the same pairs in fresh processes differ
    by under the noise)."""
    with tempfile.NamedTemporaryFile(prefix="bench-controller-run-", suffix=".json") as out:
        argv = [sys.executable, str(Path(__file__).resolve()), "--one-run", hosts, "--partitions", str(n_partitions),
                "--one-run-out", out.name, "--one-run-metrics", "on" if metrics else "off"]
        if zk_pids:
            argv += ["--one-run-zk-pids", ",".join(map(str, zk_pids))]
        if profile_failover:
            argv += ["--profile-failover", profile_failover]
        if profile_steady:
            argv += ["--profile-steady", profile_steady]
        if debug:
            argv.append("--debug")
        proc = await asyncio.create_subprocess_exec(*argv)
        if await proc.wait() != 0:
            raise RuntimeError(f"the run in its own process failed (exit {proc.returncode}): {' '.join(argv)}")
        return json.loads(Path(out.name).read_text())


async def ceiling_round(hosts: str, root: str, zk_pids: tuple[int, ...] = ()) -> tuple[float, float]:
    """One round of the ZooKeeper multi-op ceiling under ``root``: (ops per second, the
    servers' CPU microseconds per op over the round, 0 without ``zk_pids``)."""
    items = workload(root, CEILING_OPS)
    zk_cpu = processes_cpu_seconds(zk_pids)
    ceiling_s, _ = await multi_ceiling(hosts, root, items)
    zk_cpu = processes_cpu_seconds(zk_pids) - zk_cpu
    return CEILING_OPS / ceiling_s, zk_cpu * 1e6 / CEILING_OPS


async def main_async(args) -> dict:
    results = {}
    rates: list[float] = []
    zk_us_per_op: list[float] = []  # the ZooKeeper servers' CPU per op in each ceiling round
    with tempfile.TemporaryDirectory(prefix="bench-controller-") as tmp:
        # 100,000 partitions are 200,000 znodes plus multi-ops of up to 1 MiB in flight: the
        # launcher's default 256 MB heap runs out.
        zk = LocalZooKeeper(port=0, data_dir=Path(tmp) / "zk", heap_mb=1536, stop_with_parent=True)
        zk.start(timeout=60)
        zk_pids = tuple(s["pid"] for s in zk.status()["servers"])

        async def ceiling(root: str) -> None:
            rate, us_per_op = await ceiling_round(zk.connect_string, root, zk_pids)
            rates.append(rate)
            zk_us_per_op.append(us_per_op)

        try:
            # The controller as deployed counts its metrics; the same run without them shows
            # what they cost. Rounds alternate which of the two goes first (a later run meets a
            # ZooKeeper holding the earlier runs' znodes, and a shared machine's load drifts).
            results["ours"], results["ours_metrics_off"] = [], []
            for i in range(args.rounds):
                order = (True, False) if i % 2 else (False, True)
                for metrics in order:
                    if not metrics and not args.metrics_off_run:
                        continue
                    name = "ours" if metrics else "ours_metrics_off"
                    one = await run_in_process(
                        f"{zk.connect_string}/{name.replace('_', '-')}-{i}", args.partitions, metrics=metrics,
                        profile_failover=args.profile_failover if (i, metrics) == (0, True) else None, debug=args.debug,
                        profile_steady=args.profile_steady if (i, metrics) == (0, True) else None, zk_pids=zk_pids)
                    results[name].append(one)
                    await ceiling(f"/ceiling-{len(rates)}")
                    print(f"round {i + 1}: metrics {'on' if metrics else 'off'}: "
                          f"{one['partitions'] / one['elapsed']:.0f} partitions/s, cpu {one['cpu']:.1f}s "
                          f"(the instant brokers' process: {one['brokers_cpu']:.1f}s, cluster creation included); "
                          f"ZooKeeper ceiling after it {rates[-1]:.0f} ops/s", file=sys.stderr)
            if not results["ours_metrics_off"]:
                del results["ours_metrics_off"]
            if args.peer_partitions:
                results["peer"] = await run(
                    zk.connect_string + "/peer", args.peer_partitions, coalesce=False, failover=False
                )
            if args.socket_partitions:
                results["sockets"] = await run_sockets(zk.connect_string + "/sockets", args.socket_partitions, Path(tmp))
                one = results["sockets"]
                print(f"sockets: {one['partitions'] / one['elapsed']:.0f} partitions/s", file=sys.stderr)
            # The limit, on the same ZooKeeper in the same run: partition-state-sized creates in
            # multi-ops of the controller's size (BatchedWriter), every multi-op in flight at once.
            while len(rates) < CEILING_ROUNDS:
                await ceiling(f"/ceiling-{len(rates)}")
            print(f"ZooKeeper multi-op ceiling, {len(rates)} rounds: "
                  + ", ".join(f"{r:.0f}" for r in rates) + " ops/s", file=sys.stderr)
            results["ceiling_ops_per_second"] = statistics.median(rates)
            results["ceiling_rounds"] = rates
            results["ceiling_zk_cpu_us_per_op"] = zk_us_per_op
        finally:
            zk.stop()
    return results


def one_run(args) -> int:
    """``--one-run HOSTS``: one instant-broker run in this process, its result as JSON to
    ``--one-run-out`` (run_in_process)."""
    result = asyncio.run(run(args.one_run, args.partitions, coalesce=True, failover=True,
                             metrics=args.one_run_metrics == "on", profile_failover=args.profile_failover,
                             profile_steady=args.profile_steady,
                             zk_pids=tuple(int(p) for p in args.one_run_zk_pids.split(",") if p)))
    Path(args.one_run_out).write_text(json.dumps(result))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=None,
                        help=f"partitions of the instant-broker runs (default {DEFAULT_SIZES['partitions']:,})")
    parser.add_argument("--peer-partitions", type=int, default=None,
                        help=f"partitions of the uncoalesced peer's run (default {DEFAULT_SIZES['peer_partitions']:,})")
    parser.add_argument("--socket-partitions", type=int, default=None,
                        help="partitions of the run with simulated brokers over real sockets "
                             f"(default {DEFAULT_SIZES['socket_partitions']:,}; 0 skips it)")
    parser.add_argument("--full", action="store_true",
                        help="the issue's sizes: " + ", ".join(f"--{k.replace('_', '-')} {v:,}" for k, v in FULL_SIZES.items()))
    parser.add_argument("--debug", action="store_true", help="log every controller step")
    parser.add_argument("--profile-failover", metavar="FILE", default=None,
                        help="write cProfile stats of the first run's window from the new controller's election to "
                             "its first completed move to FILE (read them with python -m pstats)")
    parser.add_argument("--profile-steady", metavar="FILE", default=None,
                        help="write cProfile stats of the first run's steady half (one controller, from the first "
                             "entry fed to the half's last move finished) to FILE")
    parser.add_argument("--no-metrics-off-run", dest="metrics_off_run", action="store_false",
                        help="skip the second run without metrics (partitions_per_second_metrics_off)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="pairs of runs with metrics on and off, alternating which goes first; the figures "
                             "are the medians (default 1)")
    # Internal: run_in_process's child.
    parser.add_argument("--one-run", metavar="HOSTS", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--one-run-out", metavar="FILE", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--one-run-metrics", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    parser.add_argument("--one-run-zk-pids", metavar="PIDS", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.full:
        for name, value in FULL_SIZES.items():
            if getattr(args, name) is None:  # a size given on the command line wins
                setattr(args, name, value)
    for name, value in DEFAULT_SIZES.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    if args.debug:
        logging.getLogger("reassignd.controller").setLevel(logging.DEBUG)
    if args.one_run:
        return one_run(args)
    started = bench_results.begin()
    results = asyncio.run(main_async(args))
    runs = results["ours"]
    ours = runs[0]  # operation counts: the same in every round
    n = ours["partitions"]
    writes = ours["counts"].get("writes", 0)
    reads = ours["counts"].get("reads", 0)
    metadata_reads = ours["counts"].get("metadata_reads", 0)
    rate = statistics.median(n / r["elapsed"] for r in runs)
    print(f"controller: elected and read the cluster in {ours['election_seconds']:.1f}s; "
          f"{n} partitions in {ours['elapsed']:.1f}s, failover half-way; "
          f"{ours['counts'].get('multis', 0)} multi-ops, {writes} ops written, {reads} reads, "
          f"{metadata_reads} reads for the full UpdateMetadata of the two elections")
    ratio = None
    if "peer" in results:
        peer = results["peer"]
        peer_rate = peer["partitions"] / peer["elapsed"]
        ratio = rate / peer_rate
        print(f"peer (one step and one flush per partition change): {peer['partitions']} partitions in {peer['elapsed']:.1f}s = "
              f"{peer_rate:.0f}/s, {(peer['counts'].get('writes', 0) + peer['counts'].get('reads', 0)) / peer['partitions']:.2f} "
              "ZooKeeper ops per partition")
    print("zk_ops_per_partition counts every op inside a multi (the epoch check too) and every read the "
          "reassignment causes; zk_election_reads_per_partition the full-metadata reads each election makes "
          "of every partition, reassigned or not; zk_all_ops_per_partition both")
    figures: dict = {"partitions_per_second": round(rate)}
    # The controller's process's CPU per partition in the run of record (the instant brokers and
    # the feeder are another process; median over rounds): the run is CPU-bound on one core, so
    # this is what bounds it.
    figures["process_cpu_ms_per_partition"] = round(statistics.median(r["cpu"] for r in runs) * 1000 / n, 3)
    if "ours_metrics_off" in results:
        offs = results["ours_metrics_off"]
        off_rate = statistics.median(r["partitions"] / r["elapsed"] for r in offs)
        figures["partitions_per_second_metrics_off"] = round(off_rate)
        figures["metrics_on_off_ratio"] = round(rate / off_rate, 3)
        figures["metrics_cost_percent"] = round((off_rate - rate) / off_rate * 100, 1)
        # The controller's process's CPU seconds: what the metrics add, with little of the wall
        # clock's noise from other work on the machine.
        cpu_on, cpu_off = statistics.median(r["cpu"] for r in runs), statistics.median(r["cpu"] for r in offs)
        figures["metrics_cpu_cost_percent"] = round((cpu_on - cpu_off) / cpu_off * 100, 1)
        figures["metrics_timed_calls_per_partition"] = round(ours["timed_calls"] / n, 4)
        figures["metrics_rounds"] = len(runs)
    ops_per_partition = (writes + reads) / n
    figures["zk_ops_per_partition"] = round(ops_per_partition, 2)
    figures["zk_writes_per_partition"] = round(writes / n, 2)
    figures["zk_reads_per_partition"] = round(reads / n, 2)
    figures["zk_election_reads_per_partition"] = round(metadata_reads / n, 2)
    figures["zk_all_ops_per_partition"] = round((writes + reads + metadata_reads) / n, 2)
    # The ceiling ZooKeeper allows at the measured ops per partition: its multi-op rate over
    # the ops each partition costs. The ceiling is measured with creates; the controller's ops
    # are creates, conditional sets, deletes and checks of similar size.
    limit = results["ceiling_ops_per_second"] / ops_per_partition
    figures["zk_multi_op_ceiling_ops_per_second"] = round(results["ceiling_ops_per_second"])
    figures["zk_limit_partitions_per_second"] = round(limit)
    figures["controller_fraction_of_zk_limit"] = round(rate / limit, 2)
    # The ceiling's rounds stray (this disk's fsync rate): against the best round as well.
    figures["zk_multi_op_ceiling_rounds"] = len(results["ceiling_rounds"])
    figures["zk_multi_op_ceiling_best_ops_per_second"] = round(max(results["ceiling_rounds"]))
    figures["controller_fraction_of_zk_best_round"] = round(rate / (max(results["ceiling_rounds"]) / ops_per_partition), 2)
    halves = [r["first_half"] for r in runs if r.get("first_half")]
    if halves:
        # The steady state: the first half, before the failover wave (one controller, nothing
        # but moves), at its own ops per partition against the same ceiling.
        half_rate = statistics.median(h["partitions"] / h["elapsed"] for h in halves)
        half = halves[0]
        half_ops = (half["counts"].get("writes", 0) + half["counts"].get("reads", 0)) / half["partitions"]
        figures["partitions_per_second_steady"] = round(half_rate)
        figures["zk_ops_per_partition_steady"] = round(half_ops, 2)
        figures["process_cpu_ms_per_partition_steady"] = round(
            statistics.median(h["cpu"] / h["partitions"] for h in halves) * 1000, 3)
        figures["controller_fraction_of_zk_limit_steady"] = round(half_rate / (results["ceiling_ops_per_second"] / half_ops), 2)
        # How much of the half the controller's process worked, and how much of it it sat
        # waiting inside its flushes' multi-ops (wall clock minus its CPU meanwhile).
        figures["controller_busy_fraction_steady"] = round(statistics.median(h["cpu"] / h["elapsed"] for h in halves), 2)
        if all("flush_wall" in h for h in halves):
            figures["zk_flush_wait_fraction_steady"] = round(statistics.median(
                max(0.0, h["flush_wall"] - h["flush_cpu"]) / h["elapsed"] for h in halves), 2)
        if all("zk_cpu" in h for h in halves):
            # What shares this machine's cores with the controller, per partition over the
            # steady half, and what that leaves a controller at the goal (bench.machine). The
            # goal's rate is taken at the whole run's ops per partition (more than the steady
            # half's, so fewer partitions per second) and the others' cost from the steady half
            # (the failover's election reads cost ZooKeeper more): the generous reading.
            cores = os.cpu_count() or 1
            zk_ms = statistics.median(h["zk_cpu"] / h["partitions"] for h in halves) * 1000
            brokers_ms = statistics.median(h["brokers_cpu"] / h["partitions"] for h in halves) * 1000
            goal_rate = GOAL_FRACTION_OF_ZK_LIMIT * limit
            figures["machine_cores"] = cores
            figures["machine_busy_cores_steady"] = round(statistics.median(h["machine_busy"] / h["elapsed"] for h in halves), 2)
            figures["zk_server_cpu_ms_per_partition_steady"] = round(zk_ms, 3)
            figures["brokers_cpu_ms_per_partition_steady"] = round(brokers_ms, 3)
            figures["free_controller_fraction_of_zk_limit"] = free_controller_fraction(cores, zk_ms + brokers_ms, limit)
            figures["controller_cpu_budget_ms_per_partition_at_goal"] = controller_budget_ms(cores, goal_rate, zk_ms + brokers_ms)
            figures["controller_cpu_budget_ms_per_partition_at_goal_brokers_elsewhere"] = controller_budget_ms(
                cores, goal_rate, zk_ms)
    if any(results["ceiling_zk_cpu_us_per_op"]):
        figures["zk_server_cpu_us_per_op_ceiling"] = round(statistics.median(results["ceiling_zk_cpu_us_per_op"]), 1)
    figures["in_flight_at_failover"] = ours["in_flight_at_failover"]
    failovers = [r["failover"] for r in runs if r["failover"] is not None]
    if failovers:
        # The median over the runs of record (metrics on), and the slowest beside it.
        figures["failover_resume_seconds"] = round(statistics.median(failovers), 2)
        figures["failover_resume_seconds_max"] = round(max(failovers), 2)
        figures["failover_rounds"] = len(failovers)
        cpus = [r["failover_cpu"] for r in runs if r.get("failover_cpu") is not None]
        if cpus:
            figures["failover_resume_cpu_seconds"] = round(statistics.median(cpus), 2)
            figures["failover_resume_cpu_seconds_max"] = round(max(cpus), 2)
    else:
        print("failover_resume_seconds not measured: every move had finished before the kill", file=sys.stderr)
    if ratio is not None:
        figures["speedup_vs_uncoalesced"] = round(ratio, 1)
    if "sockets" in results:
        sock = results["sockets"]
        sock_rate = sock["partitions"] / sock["elapsed"]
        sock_ops = (sock["counts"].get("writes", 0) + sock["counts"].get("reads", 0)) / sock["partitions"]
        print(f"simulated brokers over sockets: {sock['partitions']} partitions in {sock['elapsed']:.1f}s, "
              f"{sock['counts'].get('multis', 0)} multi-ops, {sock['counts'].get('metadata_reads', 0)} reads for the "
              "election's full UpdateMetadata (not counted, as above)")
        figures["partitions_per_second_sockets"] = round(sock_rate)
        figures["zk_ops_per_partition_sockets"] = round(sock_ops, 2)
        # The same ceiling, at the ops per partition this run paid.
        figures["controller_fraction_of_zk_limit_sockets"] = round(sock_rate / (results["ceiling_ops_per_second"] / sock_ops), 2)
        # This process's CPU (the controller and the feeder; the sim is its own process) per
        # partition: how much of the wall clock the controller itself accounts for.
        figures["controller_cpu_ms_per_partition_sockets"] = round(sock["cpu"] * 1000 / sock["partitions"], 2)
    bench_results.finish(
        "controller", figures,
        peer="this controller with coalescing off (one engine step and one flush per partition change), "
             "on --peer-partitions; both sides with instant brokers",
        sizes={"partitions": args.partitions, "peer_partitions": args.peer_partitions, "rounds": args.rounds,
               "socket_partitions": args.socket_partitions,
               "brokers": "instant (own process, TCP); *_sockets: reassignd sim over TCP"},
        notes=["instant brokers: a process of their own (bench/instant_brokers.py, with the feeder) whose replicas "
               "catch up the moment a LeaderAndIsr names them, reached over TCP by the production transport; no "
               "copying; process_cpu_ms_per_partition* is the controller's process alone",
               f"*_sockets: the same controller against {BROKERS} reassignd sim brokers over TCP (replicas of "
               f"{SOCKET_PARTITION_SIZE}, 1 GiB/s fetches: copies unthrottled), on --socket-partitions, no failover"],
        started=started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
