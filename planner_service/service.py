"""The planner service: the KIP-6 planner as a long-running Spark driver over a live cluster
model (``reassignd planner serve``, :mod:`reassignd.planner`).

One process is one Spark driver holding ONE SparkSession for its lifetime. The cluster model
(:mod:`planner_service.model`) is read from ZooKeeper once and kept current from watches
(:mod:`planner_service.zk_feed`: brokers, topics, partition states, reassignment znodes) and a
DescribeLogDirs poll (:mod:`planner_service.sizes`); a proposal is planned from it with no snapshot file and no new session.
Clusters under ``--spark-min-partitions`` partitions run the per-topic tasks in-process through
the same function Spark runs (``spark_jobs.realize.realize_chunk``), so there is one algorithm. A
lost executor costs a plan nothing: Spark runs its tasks again on the other executors and the
cluster manager starts a new one (on ``--master local-cluster[N,cores,memMB]`` each executor is a
JVM of its own, which tests/planner/test_lost_executor.py kills). If a Spark job fails all the
same (its tasks failed too often, a context the JVM stopped) the proposal is planned in-process
instead, the failure is shown in ``/state``, and a stopped session is started again.

The service writes nothing to ZooKeeper. Executing a plan (``dryrun=false``) sends it, wave by
wave (:mod:`spark_jobs.batching`), to the active controller's admin listener through the
project's AdminClient (:mod:`planner_service.execution`), with ``--throttle``; several instances
may run, they share nothing but what they read. The REST API is :mod:`planner_service.endpoints`.

Usage::

    service = PlannerService(Options(zookeeper="127.0.0.1:2181", port=0, master="local[2]",
                                     api_security=ApiSecurity(ApiAuth.from_files("users.txt", None),
                                                              ApiSecurity.tls("server.pem"))))
    await service.start()            # the HTTP server, the feed, proposals, sizes, Spark
    service.address                  # host:port of the REST API
    await service.stop()

``api_security`` None serves the API open (plain HTTP, no authentication: every caller is an
ADMIN), with a warning at start; ``reassignd planner serve`` allows that only with
``--insecure-no-auth``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import logging
import time
from dataclasses import dataclass

from planner_service.clock import now_ms
from planner_service.endpoints import RestApi
from planner_service.execution import Execution, cap_waves, run_waves
from planner_service.http_server import ApiServer, HttpError, audit_line
from planner_service.model import ClusterModel
from planner_service.scope import Scope, ScopeError, restore, restrict
from planner_service.zk_feed import DEFAULT_STATE_WATCH_LIMIT, ZkFeed
from spark_jobs import api, batching, demote, disks
from spark_jobs.capacity import DEFAULT_THRESHOLD
from spark_jobs.errors import PlanError, SnapshotError

log = logging.getLogger("reassignd.planner")

HEALING_KINDS = ("broker-failure", "goal-violation")
# Below this many partitions a plan's per-topic tasks run in-process (a Spark job's fixed cost,
# ~0.1-0.5 s, is more than the work); above it they run on the session.
DEFAULT_SPARK_MIN_PARTITIONS = 20_000
# A burst of watch events (a topic created with its states, a broker with its replicas) is
# one model change: the cached proposal is recomputed once the burst has settled this long.
PROPOSAL_DEBOUNCE_S = 0.2
HISTORY = 20
# Planned proposals kept for ``dryrun=false&proposal_id=N`` (each holds its whole plan: a
# million-partition plan is tens of MB, so a handful).
PROPOSALS_KEPT = 10
# An execution's deadline unless the request gives one (deadline_s): past it the execution
# ends and lists what is still moving. Six hours covers a large drain at a modest throttle.
DEFAULT_EXECUTION_DEADLINE_S = 6 * 3600
# Retry-After (seconds) of an execution refused while the ZooKeeper session is down: kazoo
# reconnects a suspended session, and the feed opens a lost one again, within a few seconds.
ZK_RETRY_AFTER_S = 5
# How long a demoted broker is remembered (Cruise Control's demotion.history.retention.time.ms,
# 14 days): a plan asked with exclude_recently_demoted_brokers=true makes it lead nothing.
DEFAULT_DEMOTION_RETENTION_S = 14 * 24 * 3600


@dataclass
class Options:
    zookeeper: str
    host: str = "127.0.0.1"
    port: int = 9300
    master: str | None = None  # None: no Spark session, per-topic tasks in-process
    spark_min_partitions: int = DEFAULT_SPARK_MIN_PARTITIONS
    sizes: bool = True
    sizes_interval_s: float = 30.0
    self_healing: tuple = ()
    broker_failure_grace_s: float = 300.0
    healing_min_interval_s: float = 600.0
    throttle: int | None = None
    bootstrap: str | None = None
    max_in: int = batching.DEFAULT_MAX_IN
    max_out: int = batching.DEFAULT_MAX_OUT
    wave_poll_s: float = 1.0
    execution_deadline_s: float = DEFAULT_EXECUTION_DEADLINE_S
    # the active controller's operations port (--ops-listen): its per-broker move caps clamp a
    # request's concurrent_partition_movements_per_broker; None: not read
    controller_ops: str | None = None
    session_timeout_s: float = 10.0
    state_watch_limit: int = DEFAULT_STATE_WATCH_LIMIT
    zk_security: object | None = None  # znodes.security.ZkSecurity (--zk-config); None: unauthenticated
    security: object | None = None  # client.security.ClientSecurity (--command-config); None: PLAINTEXT
    admin_timeout_ms: int = 30_000  # the AdminClient's request timeout for executions
    # planner_service.http_server.ApiSecurity: the REST API's TLS and authentication; None: open
    api_security: object | None = None
    # disk capacities (spark_jobs.capacity.CapacitySpec, --capacity) and the share of a disk no
    # plan may fill past (--disk-threshold); brokers reporting total_bytes count without a file
    capacity: object | None = None
    disk_threshold: float = DEFAULT_THRESHOLD
    demotion_retention_s: float = DEFAULT_DEMOTION_RETENTION_S


class PlannerService(RestApi):
    def __init__(self, opts: Options):
        self.opts = opts
        self.model = ClusterModel()
        self.model.source = opts.zookeeper
        self.model.capacity = opts.capacity
        self.model.disk_threshold = opts.disk_threshold
        self.changed = asyncio.Event()
        self.feed = ZkFeed(opts.zookeeper, self.model, self.changed.set, opts.session_timeout_s,
                           opts.state_watch_limit, opts.zk_security)
        # Spark's calls run on this one thread: the event loop (and the API) never waits on Spark.
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="planner")
        self.spark = None
        self.spark_state = {"master": opts.master, "app_id": None, "ready": False, "jobs": 0, "failures": 0,
                            "last_error": None, "restarts": 0}
        self.proposal: dict | None = None  # the cached rebalance proposal and its model version
        self._proposal_lock = asyncio.Lock()
        self.execution: Execution | None = None
        self.executions: list[dict] = []
        self._ids = itertools.count(1)
        self.proposals: dict[int, dict] = {}  # proposal id -> planned (the last PROPOSALS_KEPT)
        self._proposal_ids = itertools.count(1)
        self.healing: list[dict] = []
        self.last_healing_at: float | None = None
        # broker -> when an executed demotion named it (ms); in memory, as Cruise Control keeps it
        self.demoted_at: dict[int, int] = {}
        # secured_brokers: those the last poll asked with --command-config's security
        self.sizes_state = {"enabled": opts.sizes, "interval_s": opts.sizes_interval_s, "last_poll_ms": None,
                            "warnings": [], "secured_brokers": []}
        self.server = None
        self._tasks: list[asyncio.Task] = []

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self.server = ApiServer(self.handle, self.opts.host, self.opts.port, security=self.opts.api_security)
        await self.server.start()
        sec = self.opts.api_security
        if sec is None or sec.auth is None:
            log.warning("the REST API at %s://%s is OPEN: no authentication, anyone who reaches the port may "
                        "execute plans%s", self.server.scheme, self.server.address,
                        "" if sec is not None else " and nothing is encrypted")
        else:
            log.info("the REST API at %s://%s authenticates by %s", self.server.scheme, self.server.address,
                     sec.auth.describe())
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.feed.run(), name="zk-feed"),
                       loop.create_task(self._proposals(), name="proposals")]
        self._tasks.append(loop.create_task(self._poll_sizes(), name="sizes"))
        if self.opts.self_healing:
            self._tasks.append(loop.create_task(self._self_heal(), name="self-healing"))
        if self.opts.master:
            self._tasks.append(loop.create_task(self._start_spark(), name="spark"))

    @property
    def address(self) -> str:
        return self.server.address

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.feed.store is not None:
            await self.feed.store.close()
        if self.spark is not None:
            await asyncio.get_running_loop().run_in_executor(self.executor, self.spark.stop)
        self.executor.shutdown(wait=False)

    async def _start_spark(self) -> None:
        def start():
            self.spark = api.get_spark(self.opts.master, app_name="reassignd-planner-service")
            # One throwaway job: the Python workers are up before the first proposal needs them.
            self.spark.sparkContext.parallelize([0], 1).map(lambda x: x).collect()

        try:
            # Not on the planner thread: plans in-process go on while the JVM starts.
            await asyncio.get_running_loop().run_in_executor(None, start)
            self.spark_state["app_id"] = self.spark.sparkContext.applicationId
            self.spark_state["ready"] = True
            log.info("Spark session on %s ready (%s)", self.opts.master, self.spark_state["app_id"])
        except Exception as e:  # noqa: BLE001 - without Spark, plans run in-process
            self.spark_state["last_error"] = f"start: {type(e).__name__}: {e}"
            log.error("cannot start Spark on %s: %s; planning in-process", self.opts.master, e)

    # ---- planning -------------------------------------------------------------------------

    def _plan_sync(self, snap: dict, kwargs: dict, scope: Scope | None = None) -> tuple[api.PlanResult, str]:
        """Runs on the planner thread. Returns the result and where its tasks ran. With a
        ``scope``, the planner sees what it may move (planner_service.scope) and the plan is put
        back together over the whole cluster."""
        if scope is None or scope.empty:
            return self._plan_snapshot(snap, kwargs)
        r = restrict(snap, scope, kwargs["mode"], kwargs.get("brokers"), kwargs.get("broker_list"), kwargs.get("topics"))
        inner = dict(kwargs, broker_list=r.broker_list, topics=r.topics)
        result, where = self._plan_snapshot(r.snapshot, inner)
        return restore(result, r, max_in=kwargs["max_in"], max_out=kwargs["max_out"],
                       throttle=kwargs["throttle"]), where

    def _plan_snapshot(self, snap: dict, kwargs: dict) -> tuple[api.PlanResult, str]:
        n = sum(len(t["partitions"]) for t in snap["topics"])
        spark = self.spark if self.spark_state["ready"] and n >= self.opts.spark_min_partitions else None
        if spark is not None:
            try:
                self.spark_state["jobs"] += 1
                return api.plan(snap, spark=spark, assume_valid=True, **kwargs), "spark"
            except (PlanError, SnapshotError):
                raise
            except Exception as e:  # noqa: BLE001 - a lost executor or a dead context
                self.spark_state["failures"] += 1
                self.spark_state["last_error"] = f"{type(e).__name__}: {str(e)[:500]}"
                log.error("Spark job failed (%s); planning in-process", str(e)[:200])
                self._revive_spark()
        return api.plan(snap, spark=None, assume_valid=True, **kwargs), "in-process"

    def _spark_alive(self) -> bool:
        """Whether the session's SparkContext can still run jobs. The JVM stops a context behind
        Python's back (the standalone Master removing an application whose executors keep
        failing, a fatal error in the driver): pyspark's handle stays set, so the JVM is asked."""
        sc = self.spark.sparkContext if self.spark is not None else None
        if sc is None or getattr(sc, "_jsc", None) is None:
            return False
        try:
            return not sc._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - the driver's JVM is gone
            return False

    def _revive_spark(self) -> None:
        """A stopped SparkContext cannot run jobs again: start a new session for later plans."""
        if self._spark_alive():
            return  # a lost executor: Spark starts another and the next plan runs on the session
        try:
            # Python's side of the dead session goes first: getOrCreate would hand it back.
            self.spark.stop()
        except Exception:  # noqa: BLE001 - already stopped, or its JVM is gone
            pass
        try:
            self.spark = api.get_spark(self.opts.master, app_name="reassignd-planner-service")
            self.spark_state["restarts"] += 1
            self.spark_state["app_id"] = self.spark.sparkContext.applicationId
        except Exception as e:  # noqa: BLE001
            self.spark_state["ready"] = False
            self.spark_state["last_error"] = f"restart: {type(e).__name__}: {e}"

    async def plan(self, mode: str, scope: Scope | None = None, request: dict | None = None, **kwargs) -> dict:
        """Plan from the model as it is now; the result with its model version and timing, kept
        under a new proposal id (with the layout version it was planned at and ``request``, the
        endpoint and parameters that asked for it)."""
        self._require_ready()
        version, layout = self.model.version, self.model.layout_version
        snap = self.model.snapshot(now_ms())
        kwargs = {"max_in": self.opts.max_in, "max_out": self.opts.max_out, "throttle": self.opts.throttle,
                  "capacity": self.opts.capacity, "disk_threshold": self.opts.disk_threshold, **kwargs}
        t0 = time.perf_counter()
        try:
            result, where = await asyncio.get_running_loop().run_in_executor(
                self.executor, self._plan_sync, snap, {"mode": mode, **kwargs}, scope)
        except (PlanError, SnapshotError, ScopeError) as e:
            raise HttpError(400, str(e)) from None
        self.model.set_planned(result.report.get("per_broker", []))
        planned = {"mode": mode, "model_version": version, "computed_ms": now_ms(),
                   "seconds": round(time.perf_counter() - t0, 4), "tasks_ran": where, "result": result,
                   "layout_version": layout, "request": request or {"path": "/rebalance", "params": {}}}
        return self._keep(planned)

    def _keep(self, planned: dict) -> dict:
        """Keep ``planned`` under a new proposal id (the last PROPOSALS_KEPT are kept)."""
        planned["proposal_id"] = next(self._proposal_ids)
        self.proposals[planned["proposal_id"]] = planned
        for old in sorted(self.proposals)[:-PROPOSALS_KEPT]:
            del self.proposals[old]
        return planned

    def demote(self, brokers: list[int], request: dict) -> dict:
        """A demotion of ``brokers`` from the model as it is now (spark_jobs.demote: replica
        lists reordered, then preferred elections; no Spark, nothing copied), kept like a plan;
        its ``elect`` is what the execution elects once the reorders are done."""
        self._require_ready()
        version, layout = self.model.version, self.model.layout_version
        t0 = time.perf_counter()
        try:
            d = demote.plan_demotion(self.model.snapshot(now_ms()), brokers)
        except PlanError as e:
            raise HttpError(400, str(e)) from None
        result = api.PlanResult(d.reassignment(), d.report(), d.batches(), d.moves())
        return self._keep({"mode": "demote", "model_version": version, "computed_ms": now_ms(),
                           "seconds": round(time.perf_counter() - t0, 4), "tasks_ran": "in-process",
                           "result": result, "layout_version": layout, "request": request, "elect": list(d.elect)})

    async def rebalance_disk(self, brokers: list[int] | None, request: dict) -> dict:
        """Cruise Control's rebalance_disk: intra-broker moves that even out each broker's log
        directories (spark_jobs.disks), from the brokers' DescribeLogDirs asked now (the model
        keeps sizes per broker, not per directory) and the model's assignments; kept like a
        plan. Executed, the moves are AlterReplicaLogDirs to the brokers
        (planner_service.disk_execution), not a reassignment."""
        self._require_ready()
        version, layout = self.model.version, self.model.layout_version
        unknown = sorted(set(brokers or ()) - set(self.model.brokers))
        if unknown:
            raise HttpError(400, f"broker(s) {', '.join(map(str, unknown))} not registered "
                                 f"(registered: {', '.join(map(str, sorted(self.model.brokers)))})")
        t0 = time.perf_counter()
        wanted = brokers or sorted(self.model.brokers)
        layouts = await self._query_layouts({b: self.model.brokers[b] for b in wanted})
        assignments = {(t, p): list(a.replicas) for t, parts in self.model.topics.items() for p, a in parts.items()}
        try:
            plan = disks.plan_disks(layouts, assignments, brokers=wanted,
                                    threshold=self.opts.disk_threshold)
        except PlanError as e:
            raise HttpError(400, str(e)) from None
        reassignment, report = plan.reassignment(), plan.report()
        wave = {"wave": 0, "kind": "intra-broker", "moves": report["moves"], "bytes": report["bytes_moved"],
                "partitions": reassignment["partitions"]}
        batches = {"waves": [wave] if plan.moves else [], "max_in": None, "max_out": None,
                   "estimated_seconds": None, "lower_bound_seconds": None}
        report["waves"] = len(batches["waves"])
        result = api.PlanResult(reassignment, report, batches, list(plan.moves))
        return self._keep({"mode": "rebalance_disk", "model_version": version, "computed_ms": now_ms(),
                           "seconds": round(time.perf_counter() - t0, 4), "tasks_ran": "in-process",
                           "result": result, "layout_version": layout, "request": request})

    async def disk_proposal_stands(self, planned: dict, proposal_id: int) -> None:
        """409 unless every move of the reviewed disk proposal still fits its broker's
        directories, asked again now (spark_jobs.disks.moves_out_of_date): the layout version
        covers brokers and replica lists, not directories."""
        moves = planned["result"].moves
        asked = {b: self.model.brokers[b] for b in sorted({m.broker for m in moves}) if b in self.model.brokers}
        layouts = await self._query_layouts(asked)
        stale = disks.moves_out_of_date(moves, layouts)
        if stale:
            shown = "; ".join(stale[:5]) + (f"; and {len(stale) - 5} more" if len(stale) > 5 else "")
            raise HttpError(409, f"the log directories changed since proposal {proposal_id} was planned: "
                                 f"{shown}; review a new proposal", proposal_id=proposal_id)

    async def _query_layouts(self, brokers: dict) -> dict:
        """Each broker's log directories (spark_jobs.disks.LogDir list) or why it has none,
        asked as the sizes poll asks (PLAINTEXT, or --command-config's protocol where a broker
        registered an endpoint of it)."""
        from planner_service.sizes import secured_broker_answer
        from spark_jobs.logdirs import query_layouts

        timeout = min(10.0, self.opts.sizes_interval_s)
        plain = {b: (r.host, r.port) if r.port >= 0 else None for b, r in brokers.items()}
        protocol = self._security_protocol()
        if protocol == "PLAINTEXT":
            return await query_layouts(plain, timeout=timeout)
        secured = {b: e for b, e in (await self.feed.broker_endpoints(protocol)).items() if b in brokers}
        fetch = functools.partial(secured_broker_answer, security=self.opts.security)
        rest = {b: e for b, e in plain.items() if b not in secured}
        mine, theirs = await asyncio.gather(query_layouts(rest, timeout=timeout),
                                            query_layouts(secured, timeout=timeout, fetch=fetch))
        return {**mine, **theirs}

    def reviewed(self, proposal_id: int, path: str) -> dict:
        """The proposal ``proposal_id`` to execute as reviewed: 400 if it is unknown (or no
        longer kept) or was planned by another endpoint, 409 if the brokers or any replica list
        changed since it was planned."""
        planned = self.proposals.get(proposal_id)
        if planned is None:
            kept = sorted(self.proposals)
            raise HttpError(400, f"no proposal {proposal_id} (the service keeps the last {PROPOSALS_KEPT}: "
                                 f"{', '.join(map(str, kept)) or 'none'}); plan it again")
        if planned["request"]["path"] != path:
            raise HttpError(400, f"proposal {proposal_id} was planned by {planned['request']['path']}, not {path}")
        if planned["layout_version"] != self.model.layout_version:
            raise HttpError(409, f"the cluster changed since proposal {proposal_id} was planned (brokers or replicas: "
                                 f"layout version {planned['layout_version']}, now {self.model.layout_version}); "
                                 "review a new proposal", proposal_id=proposal_id)
        return planned

    async def current_proposal(self) -> dict:
        """The rebalance proposal for the model's current version (computed if stale)."""
        async with self._proposal_lock:
            if self.proposal is None or self.proposal["model_version"] != self.model.version:
                self.proposal = await self.plan("rebalance")
            return self.proposal

    async def _proposals(self) -> None:
        """Recompute the cached proposal whenever the model changes (after a short settle)."""
        while True:
            await self.changed.wait()
            await asyncio.sleep(PROPOSAL_DEBOUNCE_S)
            self.changed.clear()
            if not self.feed.ready:
                continue
            try:
                await self.current_proposal()
            except HttpError as e:
                log.warning("proposal: %s", e)
            except Exception:  # noqa: BLE001 - the next model change tries again
                log.exception("proposal failed")

    def _require_ready(self) -> None:
        if not self.feed.ready:
            raise HttpError(503, "the cluster model is not ready (first read from ZooKeeper not done)",
                            zookeeper=self.opts.zookeeper, last_error=self.feed.last_error)

    # ---- sizes ----------------------------------------------------------------------------

    async def _poll_sizes(self) -> None:
        while True:
            if self.feed.ready and self.feed.bulk_states and self.feed.connected:
                try:
                    await self.feed.read_states_bulk()
                except Exception as e:  # noqa: BLE001 - the next poll tries again
                    log.warning("bulk state read failed: %s", e)
            if self.feed.ready and self.opts.sizes:
                endpoints = {b: (r.host, r.port) for b, r in self.model.brokers.items() if r.port >= 0}
                try:
                    sizes, warnings = await self._query_sizes(endpoints, min(10.0, self.opts.sizes_interval_s))
                    if self.model.set_sizes(sizes, warnings, time.time()):
                        self.changed.set()
                    self.sizes_state["last_poll_ms"] = now_ms()
                    self.sizes_state["warnings"] = warnings
                except Exception as e:  # noqa: BLE001 - the next poll tries again
                    self.sizes_state["warnings"] = [f"poll failed: {e}"]
            await asyncio.sleep(self.opts.sizes_interval_s)

    async def _query_sizes(self, endpoints: dict[int, tuple[str, int]], timeout: float) -> tuple[dict, list[str]]:
        """Every broker's sizes over PLAINTEXT at its registered endpoint; with --command-config
        of another protocol, a broker registered with an endpoint of that protocol is asked there
        with those settings instead, the executing AdminClient's (planner_service.sizes)."""
        from planner_service.sizes import poll_sizes
        from spark_jobs.logdirs import query_sizes

        protocol = self._security_protocol()
        if protocol == "PLAINTEXT":
            return await query_sizes(endpoints, timeout=timeout)
        secured = await self.feed.broker_endpoints(protocol)
        self.sizes_state["secured_brokers"] = sorted(secured)
        return await poll_sizes(endpoints, secured, self.opts.security, timeout)

    # ---- executing ------------------------------------------------------------------------

    def _conflict(self) -> str | None:
        if self.execution is not None and self.execution.state == "running":
            return f"execution {self.execution.id} ({self.execution.mode}) is running"
        if self.model.reassignment_running():
            moving = self.model.moving_partitions()
            return (f"a reassignment is running in the cluster ({len(moving)} partitions moving"
                    f"{', /admin/reassign_partitions pending' if self.model.request_pending else ''})")
        return None

    async def refusal(self) -> str | None:
        """Why an execution would be refused now (409), or None: :meth:`_conflict`, with the
        cluster's part confirmed by a fresh read first (ZkFeed.confirm_running), so a request
        made just after a reassignment ended is not refused on the model's last view of it."""
        from znodes.api import ZkError

        if self._conflict() and self.model.reassignment_running():
            try:
                await self.feed.confirm_running()
            except ZkError as e:  # the model's view stands: the refusal says so
                log.warning("could not confirm a running reassignment: %s", e)
        return self._conflict()

    async def refuse_execution(self) -> None:
        """503 while the ZooKeeper session is down, else 409 with :meth:`refusal`'s reason, if
        there is one. An execution follows its waves through the model's watches (and finds the
        controller in ZooKeeper): started blind it would fail or wait out its deadline, and the
        model's view of a running reassignment is stale meanwhile."""
        if not self.feed.connected:
            raise HttpError(503, f"ZooKeeper is not connected: the service's session to {self.opts.zookeeper} is "
                                 "down or being re-established, and an execution is followed through it; nothing "
                                 "was started, retry when it is (GET /state shows model.connected)",
                            headers={"Retry-After": str(ZK_RETRY_AFTER_S)}, zookeeper=self.opts.zookeeper,
                            last_error=self.feed.last_error)
        why = await self.refusal()
        if why:
            raise HttpError(409, why)

    async def execute(self, planned: dict, reason: str, started_by: str, throttle: int | None,
                      cluster_cap: int | None = None, deadline_s: float | None = None, *,
                      movement_strategies: tuple[str, ...] | None = None) -> Execution:
        """Start executing ``planned``: its waves, cut to at most ``cluster_cap`` partitions
        each, until the deadline (``deadline_s``, default --execution-deadline), each wave's
        moves started in the order of ``movement_strategies`` (None: the controller's setting)."""
        await self.refuse_execution()
        result = planned["result"]
        waves = cap_waves([w for w in result.batches["waves"] if w["partitions"]], cluster_cap)
        deadline = now_ms() + int(1000 * (deadline_s if deadline_s is not None else self.opts.execution_deadline_s))
        caps = {"per_broker_in": result.batches["max_in"], "per_broker_out": result.batches["max_out"],
                "cluster": cluster_cap}
        # a disk proposal's moves (spark_jobs.disks.DiskMove): replica -> directory, sent as
        # AlterReplicaLogDirs by _run_execution
        log_dir_moves = ({(m.topic, m.partition, m.broker): m.target for m in result.moves}
                         if planned["mode"] == "rebalance_disk" else None)
        ex = Execution(next(self._ids), planned["mode"], reason, started_by, waves, throttle, deadline_ms=deadline,
                       proposal_id=planned.get("proposal_id"), caps=caps, elect=list(planned.get("elect", ())),
                       movement_strategies=movement_strategies)
        if planned["mode"] == "demote":  # Cruise Control remembers it as the execution starts
            self.demoted_at.update({b: ex.started_ms for b in result.report["demoted_brokers"]})
        if not waves and not ex.elect:
            ex.state, ex.finished_ms = "done", now_ms()
        else:
            self.execution = ex
            # One of the service's tasks: stop() cancels it (the execution ends "service stopped").
            self._tasks.append(asyncio.get_running_loop().create_task(self._run_execution(ex, log_dir_moves),
                                                                      name=f"execution-{ex.id}"))
        self.executions = ([ex.view()] + self.executions)[:HISTORY]
        log.info("execution %d (%s, %s): %d partitions in %d waves: %s", ex.id, ex.mode, started_by,
                 ex.partitions_total, len(waves), reason)
        return ex

    def recently_demoted(self) -> list[int]:
        """The brokers an executed demotion named within --demotion-history-retention (Cruise
        Control's recently demoted brokers); older ones are forgotten here."""
        oldest = now_ms() - int(self.opts.demotion_retention_s * 1000)
        for b in [b for b, at in self.demoted_at.items() if at < oldest]:
            del self.demoted_at[b]
        return sorted(self.demoted_at)

    def drop_recently_demoted(self, brokers: list[int]) -> list[int]:
        """Cruise Control's admin drop_recently_demoted_brokers: forget these; the ones dropped."""
        return [b for b in brokers if self.demoted_at.pop(b, None) is not None]

    def stop_execution(self, force: bool) -> Execution | None:
        """Cruise Control's stop_proposal_execution: the running execution starts no more
        waves; with ``force`` its running wave is also cancelled at the controller (KIP-236
        rollback). None when nothing runs."""
        ex = self.execution
        if ex is None or ex.state != "running":
            return None
        ex.request_stop(force)
        log.warning("execution %d: stop asked (%s)", ex.id, "force: rolling the running wave back" if force
                    else "the running wave finishes, no more start")
        return ex

    def _security_protocol(self) -> str:
        return getattr(self.opts.security, "protocol", "PLAINTEXT")

    async def _run_execution(self, ex: Execution, log_dir_moves: dict | None = None) -> None:
        bootstrap = None
        try:
            bootstrap = self.opts.bootstrap or ",".join(await self.feed.controllers())
            if not bootstrap:
                raise RuntimeError("no controller admin listener registered under /reassignd/controllers")
            if log_dir_moves is not None:  # the brokers' own moves: the controller only bootstraps
                from planner_service.disk_execution import run_disk_moves

                await run_disk_moves(bootstrap, ex, log_dir_moves, self.opts.wave_poll_s,
                                     self.opts.admin_timeout_ms, self.opts.security)
                return
            await run_waves(bootstrap, ex, self.opts.wave_poll_s, self.model, self.opts.admin_timeout_ms,
                            self.opts.security)
        except asyncio.CancelledError:
            ex.state, ex.error = "failed", "service stopped"
            raise
        except Exception as e:  # noqa: BLE001 - reported in /state
            ex.state, ex.error = "failed", self._execution_error(e, bootstrap)
            log.error("execution %d failed: %s", ex.id, ex.error, exc_info=True)
        finally:
            ex.finished_ms = now_ms()
            self.executions = [ex.view() if v["id"] == ex.id else v for v in self.executions]
            log.info("execution %d %s (%d/%d waves, %d partitions unmoved)", ex.id, ex.state, ex.waves_done,
                     len(ex.waves), len(ex.unmoved))

    def _execution_error(self, e: Exception, bootstrap: str | None) -> str:
        """The error an execution failed with, as /state shows it; a connection that failed or
        broke over PLAINTEXT names the likely cause (a listener with security, no
        --command-config)."""
        from client.errors import ConnectionFailedError, RequestTimedOutError

        text = f"{type(e).__name__}: {e}"
        if bootstrap and self._security_protocol() == "PLAINTEXT" and isinstance(
                e, (ConnectionFailedError, RequestTimedOutError, ConnectionError, asyncio.TimeoutError)):
            text += (f" (the service spoke PLAINTEXT to {bootstrap}: if that admin listener has security "
                     "(SSL, SASL_SSL, SASL_PLAINTEXT), give `reassignd planner serve` --command-config FILE)")
        return text

    # ---- self-healing ---------------------------------------------------------------------

    def healing_decision(self, now: float) -> tuple[str, str, dict] | None:
        """(kind, reason, plan arguments) of the self-healing action due now, if any."""
        m = self.model
        gone = m.gone_holders()
        if "broker-failure" in self.opts.self_healing:
            due = [b for b in gone if now - m.departed.get(b, now) >= self.opts.broker_failure_grace_s]
            if due:
                ago = ", ".join(f"{b} ({now - m.departed[b]:.0f}s)" for b in due)
                return ("broker-failure", f"brokers gone longer than {self.opts.broker_failure_grace_s:g}s "
                        f"still hold replicas: {ago}", {"mode": "decommission", "brokers": due})
        if "goal-violation" in self.opts.self_healing and not gone and not m.counts_fair():
            return "goal-violation", "replica counts are not R/R+1 on every broker", {"mode": "rebalance"}
        return None

    async def _self_heal(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.opts.broker_failure_grace_s / 4 or 1.0))
            if not self.feed.ready or not self.feed.connected:
                continue
            now = time.time()
            decision = self.healing_decision(now)
            if decision is None or self._conflict():
                continue  # never while any reassignment runs, ours or anyone's
            if self.last_healing_at is not None and now - self.last_healing_at < self.opts.healing_min_interval_s:
                continue
            kind, reason, args = decision
            self.last_healing_at = now
            entry = {"kind": kind, "reason": reason, "at_ms": now_ms(), "execution": None, "moves": None,
                     "error": None}
            status = 200
            try:
                # kept under a path no endpoint has: a self-healing plan cannot be approved by id
                planned = await self.plan(args.pop("mode"), request={"path": f"self-healing {kind}", "params": {}},
                                          **args)
                entry["moves"] = planned["result"].report["moves"]
                ex = await self.execute(planned, f"self-healing {kind}: {reason}", "self-healing", self.opts.throttle)
                entry["execution"] = ex.id
            except HttpError as e:
                entry["error"], status = str(e), e.status  # 409 a reassignment runs, 503 ZooKeeper down, ...
            log.warning("self-healing %s: %s -> %s", kind, reason,
                        f"execution {entry['execution']}" if entry["execution"] else entry["error"])
            # the service's own decision, audited like an API request (its principal: itself)
            audit_line("self-healing", "-", None, f"{kind}: {reason}", status,
                       f"execution {entry['execution']}" if entry["execution"] else entry["error"] or "nothing")
            self.healing = ([entry] + self.healing)[:HISTORY]
