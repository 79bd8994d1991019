"""`reassignd planner serve`: the KIP-6 planner as a long-running service with a REST API.

Usage::

    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 --master local[2]
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 \\
        --self-healing broker-failure,goal-violation --broker-failure-grace 300 --throttle 10485760
    reassignd planner serve --zookeeper 127.0.0.1:2181 --zk-config zk.properties --listen 127.0.0.1:9300
    reassignd planner serve --zookeeper 127.0.0.1:2181 --command-config client.properties --listen 127.0.0.1:9300

    curl 127.0.0.1:9300/state                       # model freshness, last proposal, execution
    curl 127.0.0.1:9300/load                        # per broker: replicas, leaders, bytes, rack
    curl 127.0.0.1:9300/proposals                   # the cached rebalance proposal
    curl -X POST '127.0.0.1:9300/remove_broker?brokerid=3&dryrun=false'

One process is one Spark driver holding ONE SparkSession for its lifetime. The cluster model
(:mod:`spark_jobs.model`) is read from ZooKeeper once and kept current from watches (brokers,
topics, partition states, reassignment znodes) and a DescribeLogDirs poll; a proposal is planned
from it with no snapshot file and no new session. Clusters under ``--spark-min-partitions``
partitions run the per-topic tasks in-process through the same function Spark runs
(``spark_jobs.realize.realize_chunk``), so there is one algorithm. A lost executor costs a plan
nothing: Spark runs its tasks again on the other executors and the cluster manager starts a new
one (on ``--master local-cluster[N,cores,memMB]`` each executor is a JVM of its own, which
tests/planner/test_lost_executor.py kills). If a Spark job fails all the same (its tasks failed
too often, a context the JVM stopped) the proposal is planned in-process instead, the failure is
shown in ``/state``, and a stopped session is started again.

``--zk-config FILE`` gives the ZooKeeper identity and security, the keys the controller's
``--security-config``, ``reassignd users`` and ``reassignd sim`` read (``znodes.security``):
``zookeeper.auth.digest`` or ``zookeeper.sasl.jaas.config``, ``zookeeper.ssl.*``. Without it the
session is unauthenticated: a ZooKeeper requiring authentication closes it, and ``/state`` shows
the model not ready with the refusal as ``model.last_error``.

The service writes nothing to ZooKeeper. Executing a plan (``dryrun=false``) sends it, wave by
wave (:mod:`spark_jobs.batching`), to the active controller's admin listener through the
project's AdminClient, with ``--throttle``; several instances may run, they share nothing but
what they read.

``--command-config FILE`` gives that AdminClient's listener security, Kafka's client properties
read by the loader ``kafka-reassign --command-config`` uses (:class:`client.security.ClientSecurity`):
``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` or ``sasl.username``/``sasl.password``,
``ssl.truststore.location``/``ssl.ca.location``, client certificate and key. A bad file (or TLS file
it names) exits 2 before anything starts. Its ``zookeeper.*`` keys are not read (``--zk-config``
is ZooKeeper's). Without it the AdminClient speaks PLAINTEXT: an execution against a secured
listener fails at once (the POST has answered with it running), and its ``error`` in
``/state``'s ``execution`` and ``executions`` names the protocol spoken and ``--command-config``.

Endpoints (docs/DESIGN.md section 6.1 has the contract): GET /state, GET /load, GET /proposals,
POST /rebalance, POST /remove_broker?brokerid=, POST /add_broker?brokerid=,
POST /fix_rack_violations. POSTs are dry runs unless ``dryrun=false``. Errors are JSON:
400 bad parameter, 404 unknown path, 405 wrong method, 409 a reassignment is running,
503 the model is not ready.

Exit codes: 0 stopped by SIGTERM/SIGINT, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import itertools
import json
import logging
import signal
import sys
import time
from dataclasses import dataclass, field

from spark_jobs import api, batching, model as cluster_model, rest
from spark_jobs.errors import PlanError, SnapshotError
from spark_jobs.rest import HttpError

log = logging.getLogger("reassignd.planner")

PROG = "reassignd planner serve"
HEALING_KINDS = ("broker-failure", "goal-violation")
# Below this many partitions a plan's per-topic tasks run in-process (a Spark job's fixed cost,
# ~0.1-0.5 s, is more than the work); above it they run on the session.
DEFAULT_SPARK_MIN_PARTITIONS = 20_000
# A burst of watch events (a topic created with its states, a broker with its replicas) is
# one model change: the cached proposal is recomputed once the burst has settled this long.
PROPOSAL_DEBOUNCE_S = 0.2
STATE_READ_CHUNK = 2000
# Above this many partitions, partition states are read in bulk (multiRead) when their topic
# changes and at every sizes poll instead of each carrying a watch: a million watches cost a
# million round trips at every resync, and a plan reads no leader or ISR (only sizes use them).
DEFAULT_STATE_WATCH_LIMIT = 100_000
RECONNECT_MAX_S = 5.0
HISTORY = 20


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---- the ZooKeeper feed ---------------------------------------------------------------------


class ZkFeed:
    """Keeps a :class:`ClusterModel` current from ZooKeeper watches; reconnects forever."""

    def __init__(self, hosts: str, m: cluster_model.ClusterModel, on_change, session_timeout: float = 10.0,
                 state_watch_limit: int = DEFAULT_STATE_WATCH_LIMIT, security=None):
        from znodes.security import ZkSecurity

        self.hosts = hosts
        self.security = security or ZkSecurity()  # the session's identity and TLS (--zk-config)
        self.state_watch_limit = state_watch_limit
        self.bulk_states = False
        self.model = m
        self.on_change = on_change
        self.session_timeout = session_timeout
        self.store = None
        self.connected = False
        self.ready = False  # a full read has completed at least once
        self.last_sync_ms: int | None = None
        self.syncs = 0
        self.disconnects = 0
        self.last_error: str | None = None
        self._known_topics: set[str] = set()

    async def run(self) -> None:
        from znodes.api import ZkError
        from znodes.security import auth_hint

        delay = 0.1
        while True:
            try:
                self.store = await self.security.connect(self.hosts, timeout=self.session_timeout,
                                                         session_timeout=self.session_timeout)
            except (ZkError, ValueError, OSError) as e:
                self.last_error = f"connect: {e}{auth_hint(e, self.security)}"
                log.warning("cannot connect to ZooKeeper at %s: %s", self.hosts, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            delay = 0.1
            try:
                await self._follow()
            except ZkError as e:
                self.last_error = f"{type(e).__name__}: {e}{auth_hint(e, self.security)}"
                log.warning("ZooKeeper session ended (%s); reconnecting", e)
            finally:
                self.connected = False
                self.disconnects += 1
                store, self.store = self.store, None
                try:
                    await store.close()
                except Exception:  # noqa: BLE001 - an expired store may refuse; it is gone either way
                    pass

    async def _follow(self) -> None:
        from znodes.api import ConnectionLossError, SessionEvent, SessionExpiredError, SessionState, WatchEvent

        store = self.store
        await self.resync()
        while True:
            event = await store.events.get()
            batch = [event]
            while not store.events.empty():
                batch.append(store.events.get_nowait())
            watch = [e for e in batch if isinstance(e, WatchEvent)]
            resync = False
            for e in batch:
                if isinstance(e, SessionEvent):
                    if e.state is SessionState.LOST:
                        raise SessionExpiredError("session expired")
                    if e.state is SessionState.SUSPENDED:
                        self.connected = False
                        log.warning("ZooKeeper connection suspended; serving the last model")
                    elif e.state is SessionState.CONNECTED:
                        resync = True  # kazoo drops every watch on suspension: read it all again
            try:
                if resync:
                    await self.resync()
                elif watch and self.connected:
                    await self._apply(watch)
            except ConnectionLossError as e:
                # Suspended mid-read: the CONNECTED event that follows re-reads everything.
                self.connected = False
                self.last_error = f"read: {e}"

    # ---- reads --------------------------------------------------------------------------

    async def resync(self) -> None:
        """Read everything (with watches) into the model."""
        from znodes import paths

        await self._read_brokers()
        names = await self._read_topic_list()
        for t in set(self.model.topics) - set(names):
            self.model.set_topic(t, None, time.time())
        self._known_topics = set()
        fresh: list[tuple[str, list[int]]] = []
        for i in range(0, len(names), 200):
            fresh += await asyncio.gather(*(self._read_topic(t, states=False) for t in names[i : i + 200]))
        self.bulk_states = self.model.n_partitions > self.state_watch_limit
        await self._read_states([(t, p) for t, ps in fresh for p in ps])
        await self._read_admin(paths.REASSIGN_PARTITIONS)
        await self._read_admin(paths.REASSIGNMENTS)
        now = time.time()
        for b in self.model.gone_holders():
            # Holders already gone when first seen: their grace period starts now.
            self.model.departed.setdefault(b, now)
        self.connected = True
        self.ready = True
        self.syncs += 1
        self.last_sync_ms = _now_ms()
        self.on_change()

    async def _read_brokers(self) -> None:
        from znodes.reads import read_brokers

        brokers, problems = await read_brokers(self.store, watch=True)
        for p in problems:
            log.warning("%s", p)
        if self.model.set_brokers(brokers, time.time()):
            self.on_change()

    async def _read_topic_list(self) -> list[str]:
        from znodes import paths
        from znodes.reads import children_or_empty

        if await self.store.exists(paths.TOPICS, watch=True) is None:
            return []
        names = sorted(await children_or_empty(self.store, paths.TOPICS, watch=True))
        good = []
        for n in names:
            try:
                paths.validate_topic_name(n)
                good.append(n)
            except ValueError as e:
                log.warning("ignoring topic %r: %s", n, e)
        return good

    async def _read_topic(self, name: str, states: bool = True) -> tuple[str, list[int]]:
        """Read (and watch) a topic znode; its new partitions' states too unless ``states`` is
        false, in which case they are returned for the caller to read."""
        from znodes import paths
        from znodes.errors import ZnodeFormatError
        from znodes.payloads import decode_topic

        path = paths.topic(name)
        read = await self._get_or_watch(path)
        if read is None:
            if self.model.set_topic(name, None, time.time()):
                self.on_change()
            return name, []
        try:
            parts = decode_topic(path, read[0])
        except ZnodeFormatError as e:
            log.warning("ignoring %s: %s", path, e)
            return name, []
        old = self.model.topics.get(name, {})
        changed = self.model.set_topic(name, parts, time.time())
        new_parts = [p for p in parts if p not in old or name not in self._known_topics]
        self._known_topics.add(name)
        if states:
            await self._read_states([(name, p) for p in new_parts])
        if changed:
            self.on_change()
        return name, new_parts

    async def _read_states(self, keys: list[tuple[str, int]]) -> None:
        if self.bulk_states:
            await self.read_states_bulk(keys)
            return
        for i in range(0, len(keys), STATE_READ_CHUNK):
            await asyncio.gather(*(self._read_state(t, p) for t, p in keys[i : i + STATE_READ_CHUNK]))

    async def read_states_bulk(self, keys: list[tuple[str, int]] | None = None) -> None:
        """Read partition states without watches (multiRead); all of them when ``keys`` is None."""
        from znodes import paths
        from znodes.errors import ZnodeFormatError
        from znodes.payloads import decode_state
        from znodes.reads import get_many

        if keys is None:
            keys = [(t, p) for t, parts in list(self.model.topics.items()) for p in parts]
        changed = False
        for i in range(0, len(keys), 50_000):
            chunk = keys[i : i + 50_000]
            reads = await get_many(self.store, [paths.partition_state(t, p) for t, p in chunk])
            for (t, p), read in zip(chunk, reads):
                state = None
                if read is not None:
                    try:
                        state = decode_state(paths.partition_state(t, p), read[0], read[1].version)
                    except ZnodeFormatError as e:
                        log.warning("ignoring the state of %s-%d: %s", t, p, e)
                changed |= self.model.set_state(t, p, state, time.time())
        if changed:
            self.on_change()

    async def _read_state(self, topic: str, partition: int) -> None:
        from znodes import paths
        from znodes.errors import ZnodeFormatError
        from znodes.payloads import decode_state

        path = paths.partition_state(topic, partition)
        read = await self._get_or_watch(path)  # absent: the watch fires when the controller creates it
        state = None
        if read is not None:
            try:
                state = decode_state(path, read[0], read[1].version)
            except ZnodeFormatError as e:
                log.warning("ignoring %s: %s", path, e)
        if self.model.set_state(topic, partition, state, time.time()):
            self.on_change()

    async def _get_or_watch(self, path: str):
        """(data, stat) of ``path`` with a watch on it; None if it does not exist, with a watch
        that fires when it is created.

        ZooKeeper sets no watch on a getData that finds no node, so an absent znode is watched
        with exists - and it may be created between the two (the controller writes a new
        partition's state as the feed reads the new topic): exists then finds it, and with a
        watch only on its next change, so it is read again rather than taken as absent."""
        from znodes.reads import get_or_none

        while True:
            read = await get_or_none(self.store, path, watch=True)
            if read is not None or await self.store.exists(path, watch=True) is None:
                return read

    async def _read_admin(self, path: str) -> None:
        from znodes import paths
        from znodes.reads import children_or_empty

        exists = await self.store.exists(path, watch=True) is not None
        if path == paths.REASSIGN_PARTITIONS:
            changed = self.model.set_request_pending(exists)
        else:
            kids = await children_or_empty(self.store, path, watch=True) if exists else []
            changed = self.model.set_records(len(kids))
        if changed:
            self.on_change()

    async def _apply(self, events) -> None:
        from znodes import paths

        brokers = topic_list = False
        topics: set[str] = set()
        states: set[tuple[str, int]] = set()
        admin: set[str] = set()
        for e in events:
            if e.path == paths.BROKER_IDS:
                brokers = True
            elif e.path == paths.TOPICS:
                topic_list = True
            elif e.path in (paths.REASSIGN_PARTITIONS, paths.REASSIGNMENTS):
                admin.add(e.path)
            else:
                match = paths.classify(e.path)
                if match is None:
                    continue
                if match.kind is paths.ZnodeKind.TOPIC:
                    topics.add(match.topic)
                elif match.kind is paths.ZnodeKind.PARTITION_STATE:
                    states.add((match.topic, match.partition))
        if brokers:
            await self._read_brokers()
        if topic_list:
            names = await self._read_topic_list()
            for t in set(self.model.topics) - set(names):
                self._known_topics.discard(t)
                if self.model.set_topic(t, None, time.time()):
                    self.on_change()
            topics |= set(names) - set(self.model.topics)
        for t in sorted(topics):
            await self._read_topic(t)
        for t, p in sorted(states):
            if t not in topics and not self.bulk_states:
                await self._read_state(t, p)
        for path in sorted(admin):
            await self._read_admin(path)

    async def controllers(self) -> list[str]:
        """Every controller instance's admin listener, ``host:port``, from ZooKeeper."""
        from znodes import paths
        from znodes.payloads import decode_listener
        from znodes.reads import children_or_empty, get_many

        if self.store is None:
            return []
        base = "/reassignd/controllers"
        names = sorted(await children_or_empty(self.store, base))
        out = []
        for name, read in zip(names, await get_many(self.store, [paths.join(base, n) for n in names])):
            if read is not None:
                host, port = decode_listener(paths.join(base, name), read[0])
                out.append(f"{host}:{port}")
        return out


# ---- executions -----------------------------------------------------------------------------


@dataclass
class Execution:
    id: int
    mode: str
    reason: str
    started_by: str  # "api" or "self-healing"
    waves: list
    throttle: int | None
    started_ms: int = field(default_factory=_now_ms)
    finished_ms: int | None = None
    state: str = "running"  # running, done, failed
    waves_done: int = 0
    partitions_done: int = 0
    error: str | None = None

    @property
    def partitions_total(self) -> int:
        return sum(len(w["partitions"]) for w in self.waves)

    def view(self) -> dict:
        return {
            "id": self.id, "mode": self.mode, "reason": self.reason, "started_by": self.started_by,
            "state": self.state, "started_ms": self.started_ms, "finished_ms": self.finished_ms,
            "waves_total": len(self.waves), "waves_done": self.waves_done,
            "partitions_total": self.partitions_total, "partitions_done": self.partitions_done,
            "throttle": self.throttle, "error": self.error,
        }


async def run_waves(bootstrap: str, ex: Execution, poll_s: float, reached, timeout_ms: int = 30_000,
                    security=None) -> None:
    """Send each wave to the controller and wait until it is done: the controller lists none of
    its partitions as running and ``reached(targets)`` (the model shows every target in place;
    a request the controller has not started yet is not listed as running either).
    ``security``: the listener's client.security.ClientSecurity (``--command-config``); None is
    PLAINTEXT."""
    from client.admin import AdminClient

    async with AdminClient(bootstrap, request_timeout_ms=timeout_ms, security=security) as admin:
        for i, wave in enumerate(ex.waves):
            targets = {(p["topic"], p["partition"]): list(p["replicas"]) for p in wave["partitions"]}
            # The first wave is refused if anything else is running; later ones join our own
            # (the controller may still be tidying the previous wave's request znode).
            result = await admin.reassign_partitions(targets, throttle=ex.throttle, additional=i > 0)
            result.all()
            while True:
                running = await admin.list_reassignments(list(targets))
                if not running and reached(targets):
                    break
                await asyncio.sleep(poll_s)
            ex.waves_done += 1
            ex.partitions_done += len(targets)


# ---- the service ----------------------------------------------------------------------------


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
    session_timeout_s: float = 10.0
    state_watch_limit: int = DEFAULT_STATE_WATCH_LIMIT
    zk_security: object | None = None  # znodes.security.ZkSecurity (--zk-config); None: unauthenticated
    security: object | None = None  # client.security.ClientSecurity (--command-config); None: PLAINTEXT
    admin_timeout_ms: int = 30_000  # the AdminClient's request timeout for executions


class PlannerService:
    def __init__(self, opts: Options):
        self.opts = opts
        self.model = cluster_model.ClusterModel()
        self.model.source = opts.zookeeper
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
        self.healing: list[dict] = []
        self.last_healing_at: float | None = None
        self.sizes_state = {"enabled": opts.sizes, "interval_s": opts.sizes_interval_s, "last_poll_ms": None,
                            "warnings": []}
        self.server = None
        self._tasks: list[asyncio.Task] = []

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self.server = await rest.serve(self.handle, self.opts.host, self.opts.port)
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
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
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

    def _plan_sync(self, snap: dict, kwargs: dict) -> tuple[api.PlanResult, str]:
        """Runs on the planner thread. Returns the result and where its tasks ran."""
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

    async def plan(self, mode: str, **kwargs) -> dict:
        """Plan from the model as it is now; the result with its model version and timing."""
        self._require_ready()
        version = self.model.version
        snap = self.model.snapshot(_now_ms())
        kwargs = {"max_in": self.opts.max_in, "max_out": self.opts.max_out,
                  "throttle": self.opts.throttle, **kwargs}
        t0 = time.perf_counter()
        try:
            result, where = await asyncio.get_running_loop().run_in_executor(
                self.executor, self._plan_sync, snap, {"mode": mode, **kwargs})
        except (PlanError, SnapshotError) as e:
            raise HttpError(400, str(e)) from None
        return {"mode": mode, "model_version": version, "computed_ms": _now_ms(),
                "seconds": round(time.perf_counter() - t0, 4), "tasks_ran": where, "result": result}

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
        from spark_jobs.logdirs import query_sizes

        while True:
            if self.feed.ready and self.feed.bulk_states and self.feed.connected:
                try:
                    await self.feed.read_states_bulk()
                except Exception as e:  # noqa: BLE001 - the next poll tries again
                    log.warning("bulk state read failed: %s", e)
            if self.feed.ready and self.opts.sizes:
                endpoints = {b: (r.host, r.port) for b, r in self.model.brokers.items() if r.port >= 0}
                try:
                    sizes, warnings = await query_sizes(endpoints, timeout=min(10.0, self.opts.sizes_interval_s))
                    if self.model.set_sizes(sizes, warnings, time.time()):
                        self.changed.set()
                    self.sizes_state["last_poll_ms"] = _now_ms()
                    self.sizes_state["warnings"] = warnings
                except Exception as e:  # noqa: BLE001 - the next poll tries again
                    self.sizes_state["warnings"] = [f"poll failed: {e}"]
            await asyncio.sleep(self.opts.sizes_interval_s)

    # ---- executing ------------------------------------------------------------------------

    def _conflict(self) -> str | None:
        if self.execution is not None and self.execution.state == "running":
            return f"execution {self.execution.id} ({self.execution.mode}) is running"
        if self.model.reassignment_running():
            moving = self.model.moving_partitions()
            return (f"a reassignment is running in the cluster ({len(moving)} partitions moving"
                    f"{', /admin/reassign_partitions pending' if self.model.request_pending else ''})")
        return None

    async def execute(self, planned: dict, reason: str, started_by: str, throttle: int | None) -> Execution:
        why = self._conflict()
        if why:
            raise HttpError(409, why)
        result = planned["result"]
        waves = [w for w in result.batches["waves"] if w["partitions"]]
        ex = Execution(next(self._ids), planned["mode"], reason, started_by, waves, throttle)
        if not waves:
            ex.state, ex.finished_ms = "done", _now_ms()
        else:
            self.execution = ex
            asyncio.get_running_loop().create_task(self._run_execution(ex), name=f"execution-{ex.id}")
        self.executions = ([ex.view()] + self.executions)[:HISTORY]
        log.info("execution %d (%s, %s): %d partitions in %d waves: %s", ex.id, ex.mode, started_by,
                 ex.partitions_total, len(waves), reason)
        return ex

    def _security_protocol(self) -> str:
        return getattr(self.opts.security, "protocol", "PLAINTEXT")

    async def _run_execution(self, ex: Execution) -> None:
        bootstrap = None
        try:
            bootstrap = self.opts.bootstrap or ",".join(await self.feed.controllers())
            if not bootstrap:
                raise RuntimeError("no controller admin listener registered under /reassignd/controllers")
            await run_waves(bootstrap, ex, self.opts.wave_poll_s, self.model.reached, self.opts.admin_timeout_ms,
                            self.opts.security)
            ex.state = "done"
        except asyncio.CancelledError:
            ex.state, ex.error = "failed", "service stopped"
            raise
        except Exception as e:  # noqa: BLE001 - reported in /state
            ex.state, ex.error = "failed", self._execution_error(e, bootstrap)
            log.error("execution %d failed: %s", ex.id, ex.error)
        finally:
            ex.finished_ms = _now_ms()
            self.executions = [ex.view() if v["id"] == ex.id else v for v in self.executions]
            log.info("execution %d %s (%d/%d waves)", ex.id, ex.state, ex.waves_done, len(ex.waves))

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
            entry = {"kind": kind, "reason": reason, "at_ms": _now_ms(), "execution": None, "moves": None,
                     "error": None}
            try:
                planned = await self.plan(args.pop("mode"), **args)
                entry["moves"] = planned["result"].report["moves"]
                ex = await self.execute(planned, f"self-healing {kind}: {reason}", "self-healing", self.opts.throttle)
                entry["execution"] = ex.id
            except HttpError as e:
                entry["error"] = str(e)
            log.warning("self-healing %s: %s -> %s", kind, reason,
                        f"execution {entry['execution']}" if entry["execution"] else entry["error"])
            self.healing = ([entry] + self.healing)[:HISTORY]

    # ---- the REST API ---------------------------------------------------------------------

    def state_view(self) -> dict:
        m, f = self.model, self.feed
        p = self.proposal
        proposal = None
        if p is not None:
            r = p["result"].report
            proposal = {"model_version": p["model_version"], "current": p["model_version"] == m.version,
                        "computed_ms": p["computed_ms"], "seconds": p["seconds"], "tasks_ran": p["tasks_ran"],
                        "moves": r["moves"], "lower_bound": r["lower_bound"], "fair": r["fair"],
                        "partitions_changed": r["partitions_changed"], "waves": r["waves"]}
        ex = self.execution.view() if self.execution is not None else None
        return {
            "model": {
                "ready": f.ready, "connected": f.connected, "version": m.version,
                "changed_ms": int(m.changed_at * 1000) if m.changed_at else None,
                "last_sync_ms": f.last_sync_ms, "syncs": f.syncs, "disconnects": f.disconnects,
                "last_error": f.last_error, "brokers": sorted(m.brokers), "topics": len(m.topics),
                "partitions": m.n_partitions, "gone_brokers_with_replicas": m.gone_holders(),
                "reassignment_running": m.reassignment_running(), "counts_fair": m.counts_fair(),
                "sizes": self.sizes_state, "states_in_bulk": f.bulk_states,
            },
            "proposal": proposal,
            "execution": ex,
            "executions": self.executions,
            "self_healing": {"enabled": list(self.opts.self_healing),
                             "broker_failure_grace_s": self.opts.broker_failure_grace_s,
                             "min_interval_s": self.opts.healing_min_interval_s, "actions": self.healing},
            "spark": self.spark_state,
            "admin": self.admin_view(),
        }

    def admin_view(self) -> dict:
        """How executions reach the controller (never the password)."""
        sec = self.opts.security
        return {"bootstrap": self.opts.bootstrap, "security_protocol": self._security_protocol(),
                "sasl_mechanism": getattr(sec, "mechanism", None), "sasl_username": getattr(sec, "username", None)}

    @staticmethod
    def _proposal_view(p: dict) -> dict:
        r = p["result"]
        return {"mode": p["mode"], "model_version": p["model_version"], "computed_ms": p["computed_ms"],
                "seconds": p["seconds"], "tasks_ran": p["tasks_ran"], "reassignment": r.reassignment,
                "report": r.report, "waves": [{"wave": w["wave"], "kind": w["kind"], "moves": w["moves"],
                                               "bytes": w["bytes"], "partitions": len(w["partitions"])}
                                              for w in r.batches["waves"]]}

    async def handle(self, method: str, path: str, query: dict) -> tuple[int, dict]:
        routes = {"/state": ("GET", set()), "/load": ("GET", set()), "/proposals": ("GET", set()),
                  "/rebalance": ("POST", {"dryrun", "throttle", "brokerid", "topics"}),
                  "/remove_broker": ("POST", {"brokerid", "dryrun", "throttle"}),
                  "/add_broker": ("POST", {"brokerid", "dryrun", "throttle"}),
                  "/fix_rack_violations": ("POST", {"dryrun", "throttle"})}
        if path not in routes:
            raise HttpError(404, f"no endpoint {path} (endpoints: {', '.join(sorted(routes))})")
        want, allowed = routes[path]
        if method != want:
            raise HttpError(405, f"{path} takes {want}, not {method}")
        unknown = sorted(set(query) - allowed)
        if unknown:
            raise HttpError(400, f"unknown parameter {unknown[0]!r} for {path}"
                            f" (allowed: {', '.join(sorted(allowed)) or 'none'})")
        if path == "/state":
            return 200, self.state_view()
        self._require_ready()
        if path == "/load":
            return 200, {"model_version": self.model.version, "brokers": self.model.load()}
        if path == "/proposals":
            return 200, self._proposal_view(await self.current_proposal())
        dryrun = _bool(query.get("dryrun", "true"), "dryrun")
        throttle = _positive(query["throttle"], "throttle") if "throttle" in query else self.opts.throttle
        if path == "/rebalance":
            mode, kwargs = "rebalance", {}
            if "brokerid" in query:  # the broker set to balance over (default: every broker)
                kwargs["broker_list"] = _ids(query["brokerid"])
            if "topics" in query:
                kwargs["topics"] = [t for t in query["topics"].split(",") if t]
                if not kwargs["topics"]:
                    raise HttpError(400, "topics must name at least one topic")
        elif path == "/fix_rack_violations":
            mode, kwargs = "rebalance", {"fix_racks": True}
        else:
            if "brokerid" not in query:
                raise HttpError(400, f"{path} needs brokerid=ID[,ID...]")
            ids = _ids(query["brokerid"])
            mode = "decommission" if path == "/remove_broker" else "add-brokers"
            kwargs = {"brokers": ids}
        if not dryrun:
            why = self._conflict()  # before planning: a refused request costs no plan
            if why:
                raise HttpError(409, why)
        if path == "/rebalance" and not kwargs and throttle == self.opts.throttle:
            planned = await self.current_proposal()
        else:
            planned = await self.plan(mode, throttle=throttle, **kwargs)
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if not dryrun:
            body["execution"] = (await self.execute(planned, f"POST {path}", "api", throttle)).view()
        return 200, body


def _bool(text: str, name: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise HttpError(400, f"{name} must be true or false, got {text!r}")


def _positive(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise HttpError(400, f"{name} must be a positive integer, got {text!r}")
    return int(text)


def _ids(text: str) -> list[int]:
    out = []
    for x in text.split(","):
        x = x.strip()
        if not x.isdigit():
            raise HttpError(400, f"brokerid must be comma-separated non-negative integers, got {text!r}")
        if int(x) in out:
            raise HttpError(400, f"brokerid lists broker {x} twice")
        out.append(int(x))
    return out


# ---- command line ---------------------------------------------------------------------------


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.format_usage()}{PROG}: error: {message}")


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _healing(text: str) -> tuple:
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    bad = [k for k in kinds if k not in HEALING_KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(HEALING_KINDS)}, got {text!r}")
    return kinds


def _pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def _pos_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Serve KIP-6 proposals from a live cluster model (REST, JSON).")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--zk-config", metavar="FILE",
                   help="ZooKeeper security properties (zookeeper.auth.digest or zookeeper.sasl.jaas.config, "
                        "zookeeper.ssl.*), as the controller's, `reassignd users`' and `reassignd sim`'")
    p.add_argument("--listen", required=True, type=_listen, metavar="HOST:PORT", help="port 0 picks a free one")
    p.add_argument("--master", metavar="URL", help="Spark master for the session (default: local[*])",
                   default="local[*]")
    p.add_argument("--spark-min-partitions", type=int, default=DEFAULT_SPARK_MIN_PARTITIONS, metavar="N",
                   help=f"plan smaller clusters in-process (default {DEFAULT_SPARK_MIN_PARTITIONS})")
    p.add_argument("--self-healing", type=_healing, default=(), metavar="KINDS",
                   help="opt in to broker-failure and/or goal-violation")
    p.add_argument("--broker-failure-grace", type=_pos_float, default=300.0, metavar="S",
                   help="seconds a broker holding replicas may be gone before it is drained (default 300)")
    p.add_argument("--healing-min-interval", type=_pos_float, default=600.0, metavar="S",
                   help="at most one self-healing action per this many seconds (default 600)")
    p.add_argument("--sizes-interval", type=_pos_float, default=30.0, metavar="S",
                   help="seconds between DescribeLogDirs polls (default 30)")
    p.add_argument("--no-sizes", action="store_true", help="do not poll replica sizes")
    p.add_argument("--state-watch-limit", type=int, default=DEFAULT_STATE_WATCH_LIMIT, metavar="N",
                   help="above N partitions, read partition states in bulk at each poll instead of "
                        f"watching each (default {DEFAULT_STATE_WATCH_LIMIT})")
    p.add_argument("--throttle", type=_pos_int, metavar="BYTES_PER_S", help="throttle for executed plans")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="controller admin listener "
                   "(default: the instances registered under /reassignd/controllers)")
    p.add_argument("--command-config", metavar="FILE",
                   help="Kafka client properties for executing plans on a secured admin listener "
                        "(security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username/sasl.password, "
                        "ssl.truststore.location or ssl.ca.location, ssl.keystore.location, ssl.key.location), "
                        "as kafka-reassign --command-config")
    p.add_argument("--max-in", type=_pos_int, default=batching.DEFAULT_MAX_IN, metavar="N")
    p.add_argument("--max-out", type=_pos_int, default=batching.DEFAULT_MAX_OUT, metavar="N")
    p.add_argument("--session-timeout", type=_pos_float, default=10.0, metavar="S")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


async def _serve(opts: Options) -> int:
    service = PlannerService(opts)
    await service.start()
    print(json.dumps({"event": "ready", "listen": service.address}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await service.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "serve":
        print("usage: reassignd planner serve --zookeeper HOST:PORT --listen HOST:PORT [options]", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    from client.errors import InputError
    from client.security import ClientSecurity
    from znodes.security import ZkSecurity

    try:
        p = parser()
        args = p.parse_args(argv[1:])
        try:
            zk_security = ZkSecurity.from_file(args.zk_config)
        except (ValueError, OSError) as e:
            p.error(f"--zk-config: {e}")
        security = None
        if args.command_config is not None:
            try:
                security = ClientSecurity.from_file(args.command_config)
                security.ssl_context()  # the TLS files are read now: a bad one is a usage error too
            except InputError as e:
                p.error(str(e))
    except _UsageError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if security is not None and security.zookeeper:
        log.warning("--command-config: %s not read (the service's ZooKeeper security is --zk-config's)",
                    ", ".join(sorted(security.zookeeper)))
    opts = Options(
        zookeeper=args.zookeeper, host=args.listen[0], port=args.listen[1], master=args.master,
        spark_min_partitions=args.spark_min_partitions, sizes=not args.no_sizes, sizes_interval_s=args.sizes_interval,
        self_healing=args.self_healing, broker_failure_grace_s=args.broker_failure_grace,
        healing_min_interval_s=args.healing_min_interval, throttle=args.throttle, bootstrap=args.bootstrap_server,
        max_in=args.max_in, max_out=args.max_out, session_timeout_s=args.session_timeout,
        state_watch_limit=args.state_watch_limit, zk_security=zk_security, security=security,
    )
    return asyncio.run(_serve(opts))


if __name__ == "__main__":
    sys.exit(main())
