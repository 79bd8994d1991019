"""N simulated brokers in one process over one ZooKeeper (real, or the in-memory twin).

Each broker has its own ZooKeeper session (its ephemeral ``/brokers/ids/N`` lives and dies
with it), its own TCP listener (unless ``serve=False``) and a :class:`sim.core.BrokerCore`.
The listener speaks PLAINTEXT, or TLS with ``ClusterSettings(tls=SimTls(...))`` (Kafka's SSL
listener, :mod:`sim.tls`), and is registered under ``ClusterSettings.listener_name`` with
that protocol.
All brokers share one :class:`sim.replica.ReplicationModel` and one view of the throttle
configs, kept current by a :class:`sim.configwatch.ConfigWatcher` on the cluster's own
session. On that session too a :class:`sim.clusterwatch.ClusterWatcher` keeps the brokers'
shared :class:`sim.zookeeper_view.ZooKeeperView` (active controller, controller instances'
listeners, registrations, topics, dynamic configs): what lets a client that asks a broker
find the controller, and the brokers serve DescribeConfigs.

Time: :meth:`SimulatedCluster.advance` handles the session events that came in (config changes,
expired sessions), moves the copy model to ``clock()`` and lets every running broker do its
leader duties, carrying out the ISR changes they ask for: by default as Kafka brokers before 2.7
(inter.broker.protocol.version < 2.7) do, each leader writing the partition's state znode and an
``/isr_change_notification``; with ``ClusterSettings(isr_via="alter_partition")`` as 2.7+ brokers
do, in AlterPartition requests to the active controller (:mod:`sim.alter_partition`): at most one
per broker in flight, which the advance starts and never waits for (its answer is applied when it
comes), except through the in-process ``controller_request`` hook, answered within the advance.
``reassignd sim`` calls it every ``tick`` seconds (:meth:`start_ticker`); deterministic tests
pass a :class:`sim.clock.ManualClock` and call it themselves.

    cluster = SimulatedCluster(lambda: znodes.store.connect("127.0.0.1:2181/kafka"), ClusterSettings(brokers=3))
    await cluster.start([parse_topic_spec("orders:6:3:10MiB")])   # or create_topics() later
    cluster.start_ticker()
    await cluster.stop_broker(2)        # its session ends: /brokers/ids/2 goes, others keep running
    await cluster.controlled_stop_broker(3)   # Kafka's controlled shutdown first (sim.controlled_shutdown)
    await cluster.start_broker(2)       # a restarted broker: logs kept, roles forgotten
    await cluster.fail_log_dir(1, "/data/d2")   # a failed disk: its replicas go offline (KIP-113)
    await cluster.close()
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import logging
import random
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from protocol import ApiKey
from sim.alter_partition import AlterPartitionManager, ControllerRequest
from sim.controller_link import LOOKUP_ZOOKEEPER, LOOKUPS
from sim.alterconfigs import alter_configs
from sim.autocreate import auto_create
from sim.clock import loop_clock
from sim.clusterwatch import ClusterWatcher
from sim.configwatch import ConfigWatcher
from sim.controlled_shutdown import Outcome, controlled_shutdown
from sim.core import BrokerConfig, BrokerCore, UnsupportedRequest
from sim.effects import IsrChangeNotification, IsrWrite
from sim.replica import CopySettings, ReplicationModel
from sim.throttle import Throttles
from sim.tls import SECURITY_PROTOCOL as SSL_PROTOCOL
from sim.tls import SimTls, client_context, server_context
from sim.topics import TopicSpec, check_new_topics, create_topics
from sim.versions import served_versions
from sim.zookeeper_view import ZooKeeperView
from znodes import client_quotas, models, paths, scram_users
from znodes.api import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    SessionEvent,
    SessionState,
    Store,
    ZkError,
)
from znodes.errors import ZnodeFormatError

if TYPE_CHECKING:
    from sim.server import BrokerServer

log = logging.getLogger(__name__)

CLUSTER_ID_PATH = "/cluster/id"
# Requests a broker answers from ZooKeeper on its own session, not from its core, as Kafka's do:
# api key -> answer(store, api key, version, body), a coroutine.
ZOOKEEPER_APIS = {
    ApiKey.ALTER_CONFIGS: alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: lambda store, key, version, body: client_quotas.describe(store, body),
    ApiKey.ALTER_CLIENT_QUOTAS: lambda store, key, version, body: client_quotas.alter(store, body),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: lambda store, key, version, body: scram_users.describe(store, body),
}
DEFAULT_PORT = 9092  # registered when brokers do not listen (serve=False) and no base port is set
# Kafka's log directory failure notification (LogDirEventNotificationZNode, event 1: failure).
LOG_DIR_EVENT_PATH = "/log_dir_event_notification/log_dir_event_"
LOG_DIR_FAILURE = 1
# A leader retries a conflicting ISR write at most this often per advance, then waits for the
# next advance (the znode keeps changing under it: someone else is writing it).
MAX_ISR_WRITE_ATTEMPTS = 5
# ISR writes one broker has in flight at once. Each broker is its own process in Kafka, and a
# ZooKeeper-mode broker expands an ISR on the request handler thread serving the fetch that
# caught the follower up (num.io.threads, default 8), so brokers write side by side and each
# up to 8 at a time, not every broker's changes one after another in this one process (which
# was not what bounded bench/controller.py's sockets rate: that is the sim's latency per move).
ISR_WRITES_IN_FLIGHT = 8
# How brokers change an ISR (ClusterSettings.isr_via): writing ZooKeeper themselves (Kafka before
# 2.7, and 2.7+ with an older inter.broker.protocol.version), or asking the controller (KIP-497).
ISR_VIA_ZOOKEEPER = "zookeeper"
ISR_VIA_ALTER_PARTITION = "alter_partition"
ISR_VIAS = (ISR_VIA_ZOOKEEPER, ISR_VIA_ALTER_PARTITION)
PLAINTEXT = "PLAINTEXT"  # Kafka's security protocol without TLS or SASL, and its default listener name


class BrokerRegistrationError(Exception):
    """A broker id is already registered (another broker, or a session not yet expired)."""


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    brokers: int = 3
    first_id: int = 1
    racks: int = 0  # K > 0: broker i (0-based) is in rack "rack-{i % K}"
    host: str = "127.0.0.1"
    base_port: int = 0  # broker i listens on base_port + i; 0 = any free port
    copy: CopySettings = field(default_factory=CopySettings)
    broker: BrokerConfig = field(default_factory=BrokerConfig)
    message_bytes: int = 1024  # average message size: offsets of pre-filled replicas
    tick: float = 0.1  # real seconds between advances when the ticker runs
    seed: int = 0  # replica assignment start/shift, as Kafka's random ones but reproducible
    # Brokers the pre-filled topics are placed on (default: all); the others start empty,
    # like brokers just added to a cluster.
    topic_brokers: tuple[int, ...] = ()
    # Per-broker log.dirs overriding broker.log_dirs (KIP-113: a broker with other disks).
    broker_log_dirs: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # The name the brokers register their one listener under: a cluster whose brokers have no
    # listener named PLAINTEXT, e.g. INTERNAL or SSL (Kafka's inter.broker.listener.name).
    listener_name: str = "PLAINTEXT"
    # TLS on every broker's listener (Kafka's SSL listener; registered with protocol SSL);
    # None: PLAINTEXT. The same settings let the brokers reach a controller listener that
    # speaks SSL (sim.controller_link, sim.tls.client_context).
    tls: SimTls | None = None
    # How a leader changes an ISR: ISR_VIA_ZOOKEEPER (the state znode, then an ISR change
    # notification) or ISR_VIA_ALTER_PARTITION (AlterPartition to the active controller).
    isr_via: str = ISR_VIA_ZOOKEEPER
    # How a broker finds the active controller for its requests to it (AlterPartition,
    # ControlledShutdown): sim.controller_link.LOOKUPS.
    controller_lookup: str = LOOKUP_ZOOKEEPER
    # Kafka's auto.create.topics.enable (on by default in Kafka, off here unless asked), with its
    # num.partitions and default.replication.factor (sim.autocreate).
    auto_create_topics: bool = False
    num_partitions: int = 1
    default_replication_factor: int = 1

    def __post_init__(self):
        if self.isr_via not in ISR_VIAS:
            raise ValueError(f"isr_via must be one of {ISR_VIAS}, got {self.isr_via!r}")
        if self.controller_lookup not in LOOKUPS:
            raise ValueError(f"controller_lookup must be one of {LOOKUPS}, got {self.controller_lookup!r}")

    @property
    def security_protocol(self) -> str:
        """What the brokers' listener speaks, as listener_security_protocol_map names it."""
        return SSL_PROTOCOL if self.tls is not None else PLAINTEXT

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.first_id, self.first_id + self.brokers))

    def rack_of(self, broker_id: int) -> str | None:
        if not self.racks:
            return None
        return f"rack-{(broker_id - self.first_id) % self.racks}"


def registration_payload(host: str, port: int, rack: str | None, listener: str = PLAINTEXT,
                         protocol: str = PLAINTEXT) -> bytes:
    """Kafka's /brokers/ids/N (version 4): one listener named ``listener`` speaking ``protocol``
    (PLAINTEXT, or SSL for a TLS listener). The top-level ``host``/``port`` (what pre-0.10
    readers use) are null and -1 unless that is the PLAINTEXT listener speaking PLAINTEXT:
    Kafka fills them from a PLAINTEXT endpoint only, so never for a TLS one. (Kafka looks at
    the protocol alone; the sim leaves them out for a PLAINTEXT listener named otherwise too,
    as it always has.)"""
    plain = listener == PLAINTEXT and protocol == PLAINTEXT
    return models.BrokerRegistration(
        version=4,
        host=host if plain else None,
        port=port if plain else -1,
        jmx_port=-1,
        timestamp=str(int(time.time() * 1000)),
        endpoints=[f"{listener}://{host}:{port}"],
        rack=rack,
        listener_security_protocol_map={listener: protocol},
    ).to_bytes()


class SimBroker:
    """One broker's process-level state: session, listener, core."""

    def __init__(self, broker_id: int, rack: str | None, core: BrokerCore, port: int):
        self.id = broker_id
        self.rack = rack
        self.core = core
        self.port = port
        self.store: Store | None = None
        self.server: BrokerServer | None = None
        self.running = False
        self.started_before = False
        self.lost_session = False
        # Its AlterPartition sender when ISR changes go to the controller (isr_via), else None.
        self.alter_partition: AlterPartitionManager | None = None
        self.controller_lookup = LOOKUP_ZOOKEEPER  # ClusterSettings.controller_lookup
        # How it reaches a controller listener that speaks SSL (sim.controller_link): the
        # cluster's TLS settings and the client context made from them; None: PLAINTEXT only.
        self.tls: SimTls | None = None
        self.controller_ssl: ssl.SSLContext | None = None


class SimulatedCluster:
    def __init__(
        self,
        connect: Callable[[], Awaitable[Store] | Store],
        settings: ClusterSettings | None = None,
        *,
        clock: Callable[[], float] | None = None,
        serve: bool = True,
        controller_request: ControllerRequest | None = None,
    ):
        """``controller_request``: how the brokers' requests to the controller (AlterPartition,
        with ``isr_via="alter_partition"``) reach it in deterministic tests, without sockets;
        None: over TCP to the active controller ZooKeeper names."""
        self.settings = settings or ClusterSettings()
        self.clock = clock or loop_clock
        self.serve = serve
        self.controller_request = controller_request
        self.throttles = Throttles()
        self.model = ReplicationModel(self.settings.copy, self.throttles)
        self.brokers: dict[int, SimBroker] = {}
        self.admin: Store | None = None
        self.cluster_id: str | None = None
        self._connect = connect
        self._rng = random.Random(self.settings.seed)
        self._lock = asyncio.Lock()
        self._ticker: asyncio.Task | None = None
        self._watcher: ConfigWatcher | None = None
        self.view = ZooKeeperView()
        self._view_watcher: ClusterWatcher | None = None
        self._admin_lost = False
        # The brokers' TLS contexts (settings.tls), made at start: one for every listener, and
        # one for every broker's connections to the controller.
        self._ssl = None
        self._controller_ssl = None

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self, topics: list[TopicSpec] = ()) -> dict[str, dict[int, list[int]]]:
        """Connect, lay out Kafka's persistent znodes, load configs, register every broker,
        then create ``topics`` (returns their assignments).

        ``topics`` are checked before any broker registers: a topic that exists already
        raises TopicExistsError with no broker registered and no topic written.
        """
        self.model.now = self.clock()
        if self.settings.tls is not None:
            # Before ZooKeeper: a bad keystore (TlsSettingError) leaves nothing registered.
            if self.serve:
                self._ssl = server_context(self.settings.tls)
            self._controller_ssl = client_context(self.settings.tls)
        self.admin = await self._new_store()
        try:
            for path in paths.PERSISTENT_PATHS:
                await self.admin.ensure_path(path)
            self.cluster_id = await ensure_cluster_id(self.admin)
            versions = served_versions()
            for index, broker_id in enumerate(self.settings.broker_ids):
                config = self.settings.broker
                if broker_id in self.settings.broker_log_dirs:
                    config = replace(config, log_dirs=self.settings.broker_log_dirs[broker_id])
                core = BrokerCore(
                    broker_id,
                    self.model,
                    self.clock,
                    config,
                    cluster_id=self.cluster_id,
                    api_versions=versions,
                    view=self.view,
                    listener=self.settings.listener_name,
                )
                port = self.settings.base_port + index if self.settings.base_port else 0
                sim_broker = SimBroker(broker_id, self.settings.rack_of(broker_id), core, port)
                sim_broker.controller_lookup = self.settings.controller_lookup
                sim_broker.tls, sim_broker.controller_ssl = self.settings.tls, self._controller_ssl
                if self.settings.isr_via == ISR_VIA_ALTER_PARTITION:
                    sim_broker.alter_partition = AlterPartitionManager(sim_broker, self.clock, self.controller_request)
                self.brokers[broker_id] = sim_broker
                self.model.offline.add(broker_id)
            self._watcher = ConfigWatcher(self.admin, self.throttles, self.view, self.model.log_configs)
            await self._watcher.load_all()
            self._view_watcher = ClusterWatcher(self.admin, self.view, self.settings.listener_name)
            await self._view_watcher.load_all()
            await check_new_topics(self.admin, list(topics))
            for broker_id in self.settings.broker_ids:
                await self.start_broker(broker_id)
            created = await self.create_topics(list(topics)) if topics else {}
            async with self._lock:
                await self._drain_events()  # the view shows the registrations and topics now
            return created
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop the ticker and every broker (their ephemeral nodes go), then the admin session."""
        await self.stop_ticker()
        for broker in self.brokers.values():
            if broker.running:
                await self.stop_broker(broker.id)
        if self.admin is not None:
            await self.admin.close()
            self.admin = None

    async def start_broker(self, broker_id: int) -> None:
        """Start (or restart) one broker: new session, listener, registration.

        A broker that ran before comes back as a restarted Kafka broker: its replicas keep
        their data, its roles and epochs are forgotten until the controller's LeaderAndIsr.
        """
        async with self._lock:  # never in the middle of an advance
            await self._start_broker(self._broker(broker_id))

    def _handler(self, broker: SimBroker):
        """A broker's request handler: its core's, but the config, client quota and SCRAM
        describe requests, which read and write ZooKeeper on the broker's own session as Kafka's
        do (sim.alterconfigs, znodes.client_quotas, znodes.scram_users)."""
        def handle(api_key: int, api_version: int, body: dict):
            if api_key in ZOOKEEPER_APIS:
                lo, hi = broker.core.api_versions.get(api_key, (0, -1))
                if broker.store is None or not lo <= api_version <= hi:
                    raise UnsupportedRequest(f"broker {broker.id} does not serve api {api_key} v{api_version}")
                return ZOOKEEPER_APIS[api_key](broker.store, api_key, api_version, body)
            if api_key == ApiKey.METADATA and self.settings.auto_create_topics and broker.store is not None:
                return auto_create(broker.store, broker.core, self.settings.num_partitions,
                                   self.settings.default_replication_factor, api_version, body, self._rng)
            return broker.core.handle(api_key, api_version, body)

        return handle

    async def _start_broker(self, broker: SimBroker) -> None:
        broker_id = broker.id
        if broker.running:
            raise ValueError(f"broker {broker_id} is already running")
        if broker.started_before:
            broker.core.restart()
        store = await self._new_store()
        server = None
        try:
            port = broker.port
            if self.serve:
                from sim.server import BrokerServer  # the codec loads only when brokers listen

                server = BrokerServer(
                    self._handler(broker),
                    lambda: broker.core.handle(18, 0, {})["api_keys"],
                    name=f"broker {broker_id}",
                    ssl=self._ssl,
                )
                try:
                    port = await server.start(self.settings.host, broker.port)
                except OSError:
                    if not broker.port or self.settings.base_port:
                        raise
                    port = await server.start(self.settings.host, 0)  # old port taken meanwhile
            elif not port:
                port = DEFAULT_PORT + broker_id
            await self._register(store, broker, port)
        except BaseException:
            if server is not None:
                await server.close()
            await store.close()
            raise
        broker.store, broker.server, broker.port = store, server, port
        broker.running = broker.started_before = True
        broker.lost_session = False
        self.model.offline.discard(broker_id)
        self.model.shutting_down.discard(broker_id)  # a new registration: the controller forgets it too
        log.info("broker %d up on %s:%d", broker_id, self.settings.host, port)

    async def stop_broker(self, broker_id: int) -> None:
        """Stop one broker as if its process died: listener closed, session ended."""
        async with self._lock:
            await self._stop_broker(self._broker(broker_id))

    async def controlled_stop_broker(self, broker_id: int) -> Outcome:
        """Kafka's controlled shutdown (sim.controlled_shutdown), then stop as stop_broker does.

        The exchange runs outside the lock: the brokers go on advancing meanwhile, applying the
        controller's LeaderAndIsr and writing ISRs, as the retries expect. From its start no
        leader takes the broker into an ISR (sim.replica.ReplicationModel.shutting_down)."""
        broker = self._broker(broker_id)
        if not broker.running:
            raise ValueError(f"broker {broker_id} is not running")
        self.model.shutting_down.add(broker_id)
        outcome = await controlled_shutdown(broker)
        await self.stop_broker(broker_id)
        return outcome

    async def _stop_broker(self, broker: SimBroker) -> None:
        broker_id = broker.id
        if not broker.running:
            raise ValueError(f"broker {broker_id} is not running")
        broker.running = False
        self.model.offline.add(broker_id)
        if broker.alter_partition is not None:
            # Its request to the controller dies with it: first, as it may be reading ZooKeeper on
            # the session closed below.
            await broker.alter_partition.close()
        if broker.server is not None:
            await broker.server.close()
            broker.server = None
        if broker.store is not None:
            await broker.store.close()
            broker.store = None
        log.info("broker %d stopped", broker_id)

    async def restart_broker(self, broker_id: int) -> None:
        async with self._lock:
            broker = self._broker(broker_id)
            if broker.running:
                await self._stop_broker(broker)
            await self._start_broker(broker)

    async def fail_log_dir(self, broker_id: int, path: str) -> list[tuple[str, int]]:
        """A disk of a running broker fails: the directory goes offline with its replicas
        (sim.core.BrokerCore.fail_log_dir) and the broker writes Kafka's log directory event
        notification. Returns the partitions that went offline; ValueError for an unknown
        broker or directory, or a stopped broker.

        When it was the broker's last online directory, the broker halts instead, as Kafka's
        does (LogManager.handleLogDirFailure: "Shutdown broker because all log dirs ... have
        failed", before any notification is written): a broker with nowhere to keep a log
        cannot serve, and its registration going is how the controller learns to move its
        leaders. A restart opens the directories again."""
        async with self._lock:
            broker = self._broker(broker_id)
            if not broker.running:
                raise ValueError(f"broker {broker_id} is not running")
            lost = broker.core.fail_log_dir(path)
            if not broker.core.log_dirs.live:
                log.error("broker %d: log dir %s offline, the last one: halting", broker_id, path)
                await self._stop_broker(broker)
                return lost
            payload = json.dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE}).encode()
            try:
                await broker.store.create(LOG_DIR_EVENT_PATH, payload, sequential=True, makepath=True)
            except ZkError as exc:
                log.warning("broker %d: log dir event notification failed: %s", broker_id, exc)
            log.warning("broker %d: log dir %s offline, %d replica(s) with it", broker_id, path, len(lost))
            return lost

    async def wait_alter_partition_answers(self) -> None:
        """Until no broker has an AlterPartition request in flight (tests: the answers to what
        the last advances proposed applied; an answer may start a request, waited for too)."""
        for broker in list(self.brokers.values()):
            if broker.alter_partition is not None:
                await broker.alter_partition.answered()

    def start_ticker(self) -> None:
        """Advance every ``settings.tick`` seconds until :meth:`stop_ticker`."""
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick_forever())

    async def stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
            self._ticker = None

    # ---- topics and time -----------------------------------------------------------------

    async def create_topics(self, specs: list[TopicSpec]) -> dict[str, dict[int, list[int]]]:
        """Create topics in ZooKeeper (all or none) and pre-fill their replicas on the brokers."""
        placement = list(self.settings.topic_brokers) or self.settings.broker_ids
        racks = {b: self.settings.rack_of(b) for b in placement} if self.settings.racks else None
        assignments, epoch = await create_topics(self.admin, specs, brokers=placement, racks=racks, rng=self._rng)
        for spec in specs:
            offsets = spec.size_bytes // self.settings.message_bytes
            for partition, replicas in assignments[spec.name].items():
                for broker_id in replicas:
                    self.brokers[broker_id].core.adopt(
                        spec.name,
                        partition,
                        size=spec.size_bytes,
                        leo=offsets,
                        leader=replicas[0],
                        leader_epoch=0,
                        controller_epoch=epoch,
                        isr=tuple(replicas),
                        replicas=tuple(replicas),
                        zk_version=0,
                    )
        return assignments

    async def advance(self) -> None:
        """Bring the copy model to ``clock()``; carry out what the running brokers ask for."""
        async with self._lock:
            await self._drain_events()
            now = self.clock()
            self.model.advance(now)
            due = [(broker, broker.core.advance(now)) for broker in list(self.brokers.values()) if broker.running]
            await asyncio.gather(*(self._carry_out(broker, effects) for broker, effects in due
                                   if effects or self._alter_partition_queued(broker)))

    @staticmethod
    def _alter_partition_queued(broker: SimBroker) -> bool:
        """Changes wait behind an unanswered AlterPartition: this advance sends them, even with
        nothing new of its own (the core proposes none again while they are pending)."""
        return broker.alter_partition is not None and broker.alter_partition.queued

    async def _tick_forever(self) -> None:
        while True:
            try:
                await self.advance()
            except Exception:  # one bad tick must not stop the simulation
                log.exception("simulation tick failed")
            await asyncio.sleep(self.settings.tick)

    # ---- what the brokers ask for ----------------------------------------------------------

    async def _carry_out(self, broker: SimBroker, effects: list) -> None:
        """One broker's effects of an advance: its ISR writes (one per partition, at most
        ISR_WRITES_IN_FLIGHT at once), then its notification (of writes of earlier advances).

        The AlterPartition way, the writes are proposed to the controller instead (queued, and
        sent unless a request is in flight; not waited for: sim.alter_partition), and there is
        never a notification: the core queues none for a change the controller made."""
        if broker.alter_partition is not None:
            await broker.alter_partition.propose([e for e in effects if isinstance(e, IsrWrite)])
            return
        gate = asyncio.Semaphore(ISR_WRITES_IN_FLIGHT)

        async def write_isr(write: IsrWrite) -> None:
            async with gate:
                await self._write_isr(broker, write)

        await asyncio.gather(*(write_isr(e) for e in effects if isinstance(e, IsrWrite)))
        for effect in effects:
            if not isinstance(effect, IsrWrite):
                await self._notify(broker, effect)

    async def _write_isr(self, broker: SimBroker, write: IsrWrite) -> None:
        core = broker.core
        for _ in range(MAX_ISR_WRITE_ATTEMPTS):
            if broker.store is None:
                break
            try:
                stat = await broker.store.set(write.path, write.payload(), write.zk_version)
            except BadVersionError:
                try:
                    data, stat = await broker.store.get(write.path)
                    current = models.PartitionState.from_bytes(write.path, data)
                except (ZkError, ZnodeFormatError) as exc:
                    log.warning("broker %d: cannot re-read %s: %s", broker.id, write.path, exc)
                    break
                fields = {k: getattr(current, k) for k in ("leader", "leader_epoch", "controller_epoch")}
                retry = core.isr_write_conflict(write, fields, stat.version)
                if retry is None:
                    log.info("broker %d: gave up ISR change of %s-%d: no longer its leader epoch",
                             broker.id, write.topic, write.partition)
                    return
                write = retry
                continue
            except ZkError as exc:
                log.warning("broker %d: ISR write to %s failed: %s", broker.id, write.path, exc)
                break
            core.isr_write_done(write, stat.version, self.clock())
            log.info("broker %d: %s-%d ISR -> %s", broker.id, write.topic, write.partition, list(write.isr))
            return
        core.isr_write_failed(write)

    async def _notify(self, broker: SimBroker, note: IsrChangeNotification) -> None:
        if broker.store is None:
            broker.core.notification_failed(note)
            return
        try:
            await broker.store.create(note.path, note.payload(), sequential=True, makepath=True)
        except ZkError as exc:
            log.warning("broker %d: ISR change notification failed: %s", broker.id, exc)
            broker.core.notification_failed(note)

    # ---- sessions --------------------------------------------------------------------------

    async def _register(self, store: Store, broker: SimBroker, port: int) -> None:
        path = paths.broker(broker.id)
        settings = self.settings
        payload = registration_payload(settings.host, port, broker.rack, settings.listener_name, settings.security_protocol)
        try:
            await store.create(path, payload, ephemeral=True)
        except NodeExistsError:
            raise BrokerRegistrationError(
                f"broker id {broker.id} is already registered at {path} (another broker, or an old session)"
            ) from None
        stat = await store.exists(path)
        broker.core.broker_epoch = stat.czxid if stat is not None else -1

    async def _drain_events(self) -> None:
        """React to what the sessions reported since the last advance.

        Config change notifications reach the throttles; a broker whose session expired
        registers again on a new session, as Kafka brokers do.
        """
        while self.admin is not None and not self.admin.events.empty():
            event = self.admin.events.get_nowait()
            if isinstance(event, SessionEvent) and event.state is SessionState.LOST:
                self._admin_lost = True
                continue
            for watcher in (self._watcher, self._view_watcher):
                try:
                    await watcher.on_event(event)
                except ZkError as exc:
                    log.warning("%s: %s", type(watcher).__name__, exc)
        if self._admin_lost:
            await self._renew_admin()
        for broker in list(self.brokers.values()):
            while broker.running and broker.store is not None and not broker.store.events.empty():
                event = broker.store.events.get_nowait()
                if isinstance(event, SessionEvent) and event.state is SessionState.LOST:
                    broker.lost_session = True
            if broker.running and broker.lost_session:
                await self._renew_session(broker)

    async def _renew_admin(self) -> None:
        """The cluster's own session expired: a new one, and every config read again."""
        store = None
        try:
            store = await self._new_store()
            watcher = ConfigWatcher(store, self.throttles, self.view, self.model.log_configs)
            await watcher.load_all()
            view_watcher = ClusterWatcher(store, self.view, self.settings.listener_name)
            await view_watcher.load_all()
        except ZkError as exc:
            log.warning("cannot renew the config session yet: %s", exc)
            if store is not None:
                await store.close()
            return
        old, self.admin, self._admin_lost = self.admin, store, False
        self._watcher, self._view_watcher = watcher, view_watcher
        await old.close()

    async def _renew_session(self, broker: SimBroker) -> None:
        """A new session and registration for a broker whose session expired (Kafka does so)."""
        old = broker.store
        try:
            store = await self._new_store()
        except ZkError as exc:
            log.warning("broker %d: cannot open a new session yet: %s", broker.id, exc)
            return
        try:
            await self._register(store, broker, broker.port)
        except (BrokerRegistrationError, ZkError) as exc:
            log.error("broker %d: re-registration failed, will retry: %s", broker.id, exc)
            await store.close()
            return
        broker.store, broker.lost_session = store, False
        if old is not None:
            await old.close()
        log.info("broker %d: session expired; registered again", broker.id)

    async def _new_store(self) -> Store:
        store = self._connect()
        if inspect.isawaitable(store):
            store = await store
        return store

    # ---- views -------------------------------------------------------------------------------

    def _broker(self, broker_id: int) -> SimBroker:
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise ValueError(f"no broker {broker_id} in this simulation (ids {self.settings.broker_ids})")
        return broker

    def broker(self, broker_id: int) -> SimBroker:
        return self._broker(broker_id)

    def status(self) -> dict:
        """Brokers, their replicas and the throttles in force (for the control channel)."""
        return {
            "cluster_id": self.cluster_id,
            "time": self.model.now,
            "brokers": {
                str(b.id): {
                    "running": b.running,
                    "host": self.settings.host,
                    "port": b.port,
                    "rack": b.rack,
                    "log_dirs": [{"path": d, "online": b.core.log_dirs.online(d)} for d in b.core.log_dirs.names],
                    "replicas": [
                        {
                            "topic": r.topic,
                            "partition": r.partition,
                            "role": r.role.value,
                            # The last LeaderAndIsr applied (-1: none since the broker started).
                            "leader_epoch": r.leader_epoch,
                            "size": r.size_bytes,
                            "log_end_offset": r.log_end_offset,
                            "lag": self.model.lag(r),
                            "isr": list(r.isr),
                            "log_dir": r.log_dir,
                            "future": None if r.future is None else {"log_dir": r.future.log_dir,
                                                                     "size": r.future.size_bytes},
                            "storage_error": r.storage_error,
                            # A leader's ISR under its topic's min.insync.replicas (acks=all writes would fail).
                            "under_min_isr": r.role.value == "leader"
                            and len(r.isr) < self.model.log_configs.min_insync_replicas(r.topic, b.id),
                        }
                        for r in b.core.replicas()
                    ],
                }
                for b in self.brokers.values()
            },
            "throttles": self.throttles.snapshot(),
        }


async def ensure_cluster_id(store: Store) -> str | None:
    """Kafka's ``/cluster/id`` (``{"version":"1","id":"<base64 uuid>"}``), created if absent."""
    for _ in range(2):
        try:
            data, _ = await store.get(CLUSTER_ID_PATH)
        except NoNodeError:
            new_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
            payload = json.dumps({"version": "1", "id": new_id}, separators=(",", ":")).encode()
            try:
                await store.create(CLUSTER_ID_PATH, payload, makepath=True)
                return new_id
            except NodeExistsError:
                continue
        try:
            doc = json.loads(data.decode("utf-8"))
            if isinstance(doc, dict) and isinstance(doc.get("id"), str):
                return doc["id"]
        except (UnicodeDecodeError, ValueError):
            pass
        log.error("ignoring malformed %s: %r", CLUSTER_ID_PATH, data[:100])
        return None
    return None
