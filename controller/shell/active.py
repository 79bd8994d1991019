"""The active controller's shell: feeds the pure engine and carries out its effects.

One loop, one queue (controller.shell.inbox): take every item queued (up to a cap), turn watch
events into reads, fold the reads and the other events into ONE engine step, then

  1. write the step's ZooKeeper ops as batched multi-ops, each fenced by the
     ``/controller_epoch`` zkVersion won at election (znodes.batch.BatchedWriter);
  2. only then apply the step's state changes to memory (ZooKeeper before memory);
  3. hand the broker requests to the dispatcher, read the partition states the step asked
     for (they come back through the queue).

Draining the queue before a step is what coalesces writes: 10,000 completions that arrive
together rewrite ``/admin/reassign_partitions`` and each topic znode once.

Brokers learn every partition, not only those a move touches: after each (re)load, to a broker
that registers and for a new topic's partitions, the shell queues a full UpdateMetadata that
goes out chunk by chunk between the other events (controller.core.full_metadata); a (re)load's
chunks also give every live replica its partition's LeaderAndIsr (engine step 8b).

Failures: a fenced write or an expired session ends the loop (``run`` returns why: the
controller resigns and stops writing at once). A lost connection (SUSPENDED) pauses
everything until CONNECTED; then, as after any other failed write or read, the state is
rebuilt from ZooKeeper by failover recovery (controller.shell.recovery), which finishes whatever
the failed flush left half-written - except a flush that landed nothing and failed only at a
partition state changed since it was held: that step is taken again with the state read anew
(controller.shell.state_conflicts).

    active = ActiveController(store, inbox, controller_id=101, epoch=4, epoch_zkversion=3,
                              transport=transport, config=config)
    reason = await active.run()      # "fenced ...", "session lost", "/controller deleted"
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import ChainMap
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from controller.core import engine, full_metadata, isr_health
from controller.core.config import ControllerConfig
from controller.core.events import (
    BrokersRead,
    CancelRequested,
    ControllersRead,
    ScheduleDue,
    DeletionsRead,
    ElectionRequested,
    Event,
    IsrAlterRequested,
    LogDirEventsRead,
    ProducerIdsRequested,
    MetadataRead,
    OfflineCheck,
    PreferredElectionRead,
    ReplicasOffline,
    RequestsRead,
    Resume,
    ShutdownRequested,
    StatesRead,
    TopicConfigsRead,
    TopicsRead,
    offline_check,
)
from controller.core import log_dir_failure
from controller.core.broker_failure import unclean_candidates, unclean_enabled
from controller.core.elections import PREFERRED, imbalanced
from controller.core.flush import DELETE
from controller.core.topic_deletion import deletion_ops
from controller.core.full_metadata import MetadataDue
from controller.core.placement_counts import PlacementCounts
from controller.core.state import ClusterState
from controller.core.throttle_removal import Mode
from controller.shell import admin_events, gctune, recovery, state_conflicts
from controller.shell.config_watch import ConfigChanges
from controller.shell.dispatch import Dispatcher
from controller.shell.inbox import Inbox
from controller.shell.metadata_reads import ChunkReads
from controller.shell.throttles import read_removal
from controller.shell.zkread import (
    missing_parents,
    read_move_states,
    read_log_dir_events,
    read_preferred_election,
    read_notifications,
    read_queue,
    read_requests,
    read_states,
    read_topic_names,
    read_topics,
    topic_ids_to_give,
)
from znodes import cluster_reader, paths
from znodes.api import (
    BadVersionError,
    ConnectionLossError,
    FencedError,
    NodeExistsError,
    NoNodeError,
    SessionEvent,
    SessionExpiredError,
    SessionState,
    Store,
    WatchEvent,
    ZkError,
    ZnodeStat,
)
from znodes.batch import BatchedWriter, FlushError, RequestTooLargeError
from znodes.reads import children_or_empty, get_many, read_brokers, read_controller_nodes
from znodes.values import Broker, LeaderIsr, TopicPartition

log = logging.getLogger("reassignd.controller")

WATCHED = {
    paths.BROKER_IDS: "brokers",
    paths.TOPICS: "topics",
    paths.REASSIGN_PARTITIONS: "requests",
    paths.ISR_CHANGE_NOTIFICATION: "notifications",
    paths.CONTROLLER: "controller",
    paths.CANCEL_REASSIGNMENT: "cancel",  # KIP-236 (controller.core.cancel)
    paths.REASSIGN_QUEUE: "queue",  # KIP-236 (controller.core.queue)
    paths.DELETE_TOPICS: "deletes",  # KIP-4 DeleteTopics (controller.core.topic_deletion)
    paths.CONFIG_CHANGES: "configs",  # min.insync.replicas changed (controller.shell.config_watch)
    paths.LOG_DIR_EVENT_NOTIFICATION: "logdirs",  # KIP-113 (controller.core.log_dir_failure)
    paths.PREFERRED_REPLICA_ELECTION: "preferred",  # Kafka's ZooKeeper door (controller.core.elections step 5)
    paths.CONTROLLER_INSTANCES: "controllers",  # the instances, nodes of UpdateMetadata (engine step 8)
}
# Written last in a step, in this order, by the controller and by tools alike: a conflict on
# them costs a re-read, not a reload (controller.core.engine, "Writes are coalesced").
SHARED_TAIL = (paths.REASSIGN_PARTITIONS, paths.CANCEL_REASSIGNMENT, paths.PREFERRED_REPLICA_ELECTION,
               paths.REASSIGN_QUEUE)
# After a failed reload, wait this long before the next (doubling up to the cap): a write that
# can never succeed must not spin the loop or hammer ZooKeeper.
RELOAD_BACKOFF_S = 0.1
RELOAD_BACKOFF_MAX_S = 5.0
# Loop turns for a store's SUSPENDED event to reach the inbox after one of its calls failed.
SESSION_NEWS_TURNS = 3


def keep_held(found, held: dict[int, Broker]) -> dict[int, Broker]:
    """The brokers read, each whose registration did not decode replaced by the one held for
    the same registration (its epoch, the czxid), as Kafka's controller keeps what it had when a
    broker's change does not parse: its requests keep reaching it. Without one held (a new
    controller's first read, a new session) it stays alive and unreachable."""
    brokers = found.brokers
    kept = {b: held[b] for b in found.undecodable if b in held and held[b].epoch == brokers[b].epoch}
    for b in sorted(kept):
        log.warning("broker %d: keeping its last registration read (%s:%d) while its znode does not decode",
                    b, kept[b].host, kept[b].port)
    return {**brokers, **kept} if kept else brokers


class CancelNotRecorded(Exception):
    """A cancellation's writes did not land (the controller reloads or resigns): not taken."""


@dataclass(frozen=True)
class _Retried:
    """A cancel taken again after a conflict on the shared znodes, with the first results."""

    future: object
    first: dict


class Resign(Exception):
    """This controller must stop acting: ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Stats:
    steps: int = 0
    flushes: int = 0
    ops_written: int = 0
    reloads: int = 0
    state_retries: int = 0  # steps taken again with newer partition states (state_conflicts)
    moves_finished: int = 0


class ActiveController:
    def __init__(
        self,
        store: Store,
        inbox: Inbox,
        *,
        controller_id: int,
        epoch: int,
        epoch_zkversion: int,
        transport,
        config: ControllerConfig,
        throttle_removal: Iterable[str] = (),
        on_step: Callable[[engine.Step], None] | None = None,
    ):
        self.store = store
        self.inbox = inbox
        self.controller_id = controller_id
        self.epoch = epoch
        self.epoch_zkversion = epoch_zkversion
        self.config = config
        # KIP-179 throttle removal (controller.core.throttle_removal): the checks the engine's steps
        # ask for that this controller reads for - "all" when no reassignment is left, "idle"
        # (going past KIP-179) as soon as moves end; the daemon runs both.
        self.throttle_removal = frozenset(Mode(m) for m in throttle_removal)
        self.on_step = on_step  # observation hook for tests and benchmarks
        # Told each step with its events and the state before it, once its writes landed:
        # per-partition log lines and counts by door (controller.shell.journal), set by the daemon.
        self.journal = None
        # Called with each step's newly created partitions (engine step 10) once its broker
        # requests went to the dispatcher: CreateTopics answers then (admin/create_topics.py).
        self.created_listeners: list[Callable[[list], None]] = []
        # Called with each step's deleted topics once their znodes are gone (admin/delete_topics.py).
        self.deleted_listeners: list[Callable[[list], None]] = []
        # The step whose writes are being flushed (tests map a write cut short to the kinds of
        # flush it was for: engine.Step.kinds).
        self.flushing: engine.Step | None = None
        # The kind of a flush of the shell's own (a deleted topic's znodes: "delete"), if one runs.
        self.own_flush: str | None = None
        self.state: ClusterState | None = None
        self._requests_mzxid: int | None = None  # of this controller's last write of the znode
        self.config_changes = ConfigChanges()  # topics' config change notifications (step 2a's floors)
        # The brokers' cluster-wide dynamic config, /config/brokers/<default> (read at each
        # (re)load and on its change notification): its min.insync.replicas and
        # unclean.leader.election.enable stand for a topic without its own, over the settings,
        # as a Kafka broker's dynamic config overrides its server.properties.
        self.broker_defaults: dict[str, str] = {}
        self._engine_config: tuple[object, int, object] | None = None  # (config, floor, config with the floor)
        # The step's /config/topics/T reads by topic, while a step takes its batch (_process):
        # each topic's read once in a step (topic_configs).
        self.step_configs: dict[str, dict[str, str] | None] | None = None
        # Topic znodes whose data watch fired (Kafka's PartitionModificationsHandler): read again
        # in the step unless at the version this controller holds (its own write fired it).
        self.changed_topics: set[str] = set()
        self.placement_counts = PlacementCounts()  # what topic requests place against (admin_events)
        # Read caches of this term, by user (the admin handlers' record ids and encoded list,
        # the throttle check's parsed /admin/reassign_partitions): gone with the term.
        self.caches: dict[str, dict] = {}
        self.stats = Stats()
        self.writer = BatchedWriter(store)
        # Full UpdateMetadata sends under way (election, registered brokers, new topics).
        self.metadata = full_metadata.Planner()
        self.chunk_reads = ChunkReads(store)  # the next chunk's states, read ahead
        self.dispatcher = Dispatcher(
            transport, inbox.queue, config, is_live=lambda b: self.state is not None and b in self.state.brokers,
            offline_of=lambda b: self.state.offline_replicas.get(b, frozenset()) if self.state is not None else frozenset(),
        )

    # ---- the loop --------------------------------------------------------------------------

    async def run(self) -> str:
        """Act until resigning; return the reason."""
        gctune.tune()
        rebalancer = None
        sweeper = asyncio.create_task(gctune.sweep(), name="gc-sweep")
        try:
            await self._safely(self.reload)
            gctune.freeze()  # the cluster just loaded lives as long as the term
            if self.config.auto_leader_rebalance_enable:
                rebalancer = asyncio.create_task(self._rebalance_leaders(), name="leader-rebalance")
            while True:
                first = await self.inbox.next()
                batch = [first, *self.inbox.drain(self.config.max_events_per_step - 1)]
                try:
                    await self._safely(lambda: self.process(batch))
                except Resign as r:
                    # Admin requests of the batch not answered yet: NOT_CONTROLLER, at once.
                    fail_waiting(batch, r.reason)
                    raise
        except Resign as r:
            log.warning("controller %d resigns (epoch %d): %s", self.controller_id, self.epoch, r.reason)
            return r.reason
        finally:
            sweeper.cancel()
            gctune.thaw()
            if rebalancer is not None:
                rebalancer.cancel()
            # Admin requests nobody will take now: NOT_CONTROLLER, at once; those the engine held
            # back for a failover's states too (they go with this state).
            for item in fail_waiting(self.inbox.drain(self.inbox.queue.qsize())):
                self.inbox.queue.put_nowait(item)
            if self.state is not None:
                fail_waiting(self.state.deferred)
            self.chunk_reads.cancel()
            await self.dispatcher.close()

    async def _rebalance_leaders(self) -> None:
        """Kafka's automatic preferred-leader rebalance: every check interval, the partitions
        controller.core.elections.imbalanced picks are elected back through the engine (step 12),
        as an ElectLeaders request would be, nobody waiting for the answer."""
        while True:
            await asyncio.sleep(self.config.leader_imbalance_check_interval_s)
            state = self.state
            if state is None:
                continue
            due = imbalanced(state.assignments, state.states, state.tasks, state.brokers,
                             self.config.leader_imbalance_per_broker_percentage)
            if due:
                log.info("leader imbalance: electing the preferred leaders of %d partition(s)", len(due))
                self.inbox.queue.put_nowait(ElectionRequested(tuple(due), PREFERRED, {}))

    async def _safely(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run ``action``; on a store failure wait for the session and rebuild from ZooKeeper."""
        # A rebuild after a lost connection waits for the connection to come back; any other
        # rebuild backs off, the first one immediately (a lost reply or a raced write is
        # usually over at once). The store reports SUSPENDED through the inbox a few loop turns
        # after its call failed, so a connection loss first yields to let that news in.
        failures = 0
        while True:
            try:
                await action()
                return
            except FencedError as e:
                raise Resign(f"fenced: another controller has a newer epoch ({e})") from None
            except SessionExpiredError:
                raise Resign("session lost") from None
            except FlushError as e:
                if isinstance(e.cause, SessionExpiredError):
                    raise Resign("session lost") from None
                if isinstance(e.cause, ConnectionLossError):
                    await self._wait_for_connection()
                log.warning("write failed, rebuilding from ZooKeeper: %s", e)
            except ConnectionLossError:
                log.warning("connection to ZooKeeper lost: pausing until it is back")
                await self._wait_for_connection()
            except (ZkError, RequestTooLargeError) as e:
                log.warning("ZooKeeper operation failed, rebuilding from ZooKeeper: %r", e)
            self.stats.reloads += 1
            action = self.reload
            if failures:
                await asyncio.sleep(min(RELOAD_BACKOFF_S * 2 ** (failures - 1), RELOAD_BACKOFF_MAX_S))
            failures += 1

    async def _wait_for_connection(self) -> None:
        for _ in range(SESSION_NEWS_TURNS):
            await asyncio.sleep(0)
        if not await self.inbox.wait_connected():
            raise Resign("session lost")

    async def reload(self) -> None:
        """Failover recovery (also after any failed write): rebuild the state and resume."""
        self.chunk_reads.cancel()  # of the send this reload replaces
        await self.store.exists(paths.CONTROLLER, watch=True)
        # The resumed moves' states with the records: Resume announces them in its own step.
        recovered = await recovery.recover(self.store, self.controller_id, self.epoch, states=True,
                                           listener=self.config.broker_listener)
        for line in recovered.log:
            log.warning("recovery: %s", line)
        self.state = recovered.state
        log.info(
            "controller %d (epoch %d) resumes: %s",
            self.controller_id,
            self.epoch,
            recovery.running_summary(self.state) or "nothing running",
        )
        # The floors (step 2a) and unclean settings (step 12c) of the topics the recovered
        # entries name and of the resumed moves (a rollback's entry may be gone), before they
        # schedule or end; changes notified from here on are read again as they come.
        await self.config_changes.arm(self.store)
        await self.read_broker_defaults()
        # (The entries are the RequestsRead's: the rebuilt state holds none until its step.)
        entries = next((e.requests for e in recovered.events if isinstance(e, RequestsRead)), None)
        names = {r.topic for r in entries or ()} | {tp[0] for tp in self.state.tasks}
        await self.execute(await self.read_move_configs(sorted(names)) + recovered.events)
        # The deletion markers before the full metadata: a marked topic's partitions whose state
        # a cut deletion removed must not be given one again (engine step 10).
        await self.execute(await self.read_changes({"notifications", "cancel", "queue", "deletes", "logdirs", "preferred",
                                                    "controllers"}))
        # After the resume work (its states are read and queued already): every partition to
        # every live broker, chunk by chunk between other events (controller.core.full_metadata).
        self.inbox.queue.put_nowait(self.metadata.everyone(list(self.state.assignments)))

    async def process(self, batch: list) -> None:
        dues = [item for item in batch if isinstance(item, MetadataDue)]
        if dues and len(dues) < len(batch):
            # What else came first, in a step of its own, then the full send's chunks in the
            # same turn: a chunk (thousands of states read and sent) must not hold up what
            # arrived meanwhile - after a failover, the resumed moves' ISR changes and
            # StopReplica answers waited for a chunk's read at every step (issue 25 item 3).
            await self._process([item for item in batch if not isinstance(item, MetadataDue)])
            await self._process(dues)
        else:
            await self._process(batch)

    async def _process(self, batch: list) -> None:
        """One step of ``batch``, reading each topic's ``/config/topics/T`` at most once
        (topic_configs): a moving topic's view, an unclean setting turned on and an offline
        check's candidates may each want the same topic's in one step (a config change
        notification naming a topic with a move and a leaderless partition read it twice). A
        later read in the step is no fresher news: the watch that brought a change fired
        before the step took its batch, and a change written since comes with a notification
        of its own, read in a later step."""
        self.step_configs = {}
        try:
            await self._step(batch)
        finally:
            self.step_configs = None

    async def _step(self, batch: list) -> None:
        kinds: set[str] = set()
        engine_events: list[Event] = []
        dues: list[MetadataDue] = []
        reload = False
        for item in batch:
            if isinstance(item, MetadataDue):
                dues.append(item)
            elif isinstance(item, SessionEvent):
                if item.state is SessionState.LOST:
                    raise Resign("session lost")
                if item.state is SessionState.SUSPENDED:
                    log.warning("ZooKeeper connection suspended: writing nothing until it is back")
                    if not await self.inbox.wait_connected():
                        raise Resign("session lost")
                    reload = True  # watches may not have survived the reconnection
            elif isinstance(item, WatchEvent):
                kind = WATCHED.get(item.path)
                if kind == "controller":
                    # Re-arm and look: the event may be left over from an earlier term.
                    holder = await self.store.exists(paths.CONTROLLER, watch=True)
                    if holder is None or holder.ephemeral_owner != self.store.session_id:
                        raise Resign("/controller was deleted or taken over")
                elif kind is not None:
                    kinds.add(kind)
                elif paths.parent(item.path) == paths.BROKER_IDS:
                    kinds.add("brokers")  # a registration rewritten in place (its data watch)
                elif paths.parent(item.path) == paths.TOPICS:
                    self.changed_topics.add(item.path.rsplit("/", 1)[1])
                    kinds.add("topic data")
            else:
                engine_events.append(item)
        if reload:
            self.stats.reloads += 1
            await self.reload()
        # Admin requests: the throttle znodes they change, topics they name (controller.shell.admin_events).
        try:
            engine_events = await admin_events.prepare(self, engine_events)
        except BaseException as e:
            # Their reads failed (the controller reloads or resigns): taken again from scratch.
            admin_events.fail_taken(engine_events, e)
            raise
        # Read before the changes: a state read later (an ISR change's) must win in the step.
        metadata = await self.read_metadata(dues)
        events = await self.read_changes(kinds)
        first = [e for e in events if isinstance(e, (TopicsRead, BrokersRead))]
        rest = [e for e in events if not isinstance(e, (TopicsRead, BrokersRead))]
        fresh = await self.states_for_offline(engine_events, first)
        # The states the unclean candidates are judged from: those read now over those held.
        held = ChainMap(fresh, self.state.states) if fresh else self.state.states
        # Every replica this step may take offline (the held ones and its LeaderAndIsr answers'),
        # and the brokers it knows: both unclean checks judge their candidates against all of
        # them, as the engine applies them in one step (two answers each taking one ISR member
        # offline left a partition without a leader, unclean allowed: each alone left the other).
        step_offline = self.step_offline(engine_events)
        step_brokers = brokers_read(first, self.state.brokers)
        engine_events = await self.offline_replica_configs(engine_events, held, step_offline, step_brokers)
        brokers_before = self.state.brokers
        partitions_before = {
            # CreatePartitions puts its TopicsRead in the queue (engine_events): new partitions too.
            name: set(self.state.topic_partitions.get(name, ()))
            for e in first + engine_events if isinstance(e, TopicsRead) for name in e.topics
        }
        offline = await self.offline_checks(first + metadata, held, step_offline)
        # Admin requests after the reads: a read of /admin/reassign_partitions in the step is
        # older than the write a request makes of it, and must not undo it.
        admin = [e for e in engine_events if isinstance(e, admin_events.ADMIN_EVENTS)]
        if admin:
            engine_events = [e for e in engine_events if not isinstance(e, admin_events.ADMIN_EVENTS)]
        # The fresh states before the events that take replicas offline (the ISR changes read
        # earlier in the step come after them, and on_states keeps the higher zkVersion).
        fresh_read = [StatesRead(fresh)] if fresh else []
        await self.execute(first + metadata + fresh_read + engine_events + rest + admin + offline)
        self.plan_metadata(brokers_before, partitions_before)

    async def states_for_offline(self, events: list[Event], changes: list[Event]) -> dict[TopicPartition, LeaderIsr]:
        """The states of the partitions this step may take replicas out of, read now, as Kafka's
        ``removeReplicasFromIsr`` reads them: the state held may predate a leader's ISR change
        whose notification has not come yet (broker_failure and log_dir_failure decide from the
        state held), so a replica that rejoined an ISR and then lost its broker or directory would
        stay in that ISR. The partitions a ReplicasOffline names, and those with a replica on a
        broker the step's BrokersRead no longer lists; absent or unreadable ones are left out."""
        state = self.state
        wanted: set[TopicPartition] = set()
        for e in events:
            if isinstance(e, ReplicasOffline):
                wanted |= e.partitions
        brokers = brokers_read(changes)
        gone = set(state.brokers) - set(brokers) if brokers is not None else set()
        if gone:
            wanted |= {tp for tp, a in state.assignments.items() if not gone.isdisjoint(a.replicas)}
        wanted = {tp for tp in wanted if tp in state.assignments}
        if not wanted:
            return {}
        states, lines = await read_states(self.store, sorted(wanted))
        _warn(lines)
        return {tp: st for tp, st in states.items() if st is not None}

    async def offline_checks(self, events: list[Event], held: Mapping,
                             offline: Mapping[int, frozenset[TopicPartition]] | None = None) -> list[Event]:
        """controller.core.broker_failure's check, last in the step: every partition held after a
        change of ``/brokers/ids`` (a broker gone or back), the partitions of a full-metadata
        chunk (at election and after every recovery: brokers that died while no controller was
        active), with the ``unclean.leader.election.enable`` of the topics whose partitions only
        an unclean election can lead (their ``/config/topics/T``, read for those only), and the
        brokers that registered in the step (not yet in the state: they get LeaderAndIsr).
        ``held``: the states to judge from (this step's fresh reads over the state's);
        ``offline``: the replicas on offline directories to judge with (default: the state's)."""
        brokers = brokers_read(events)
        chunks = [e for e in events if isinstance(e, MetadataRead)]
        if brokers is None and not chunks:
            return []
        state = self.state
        live = brokers if brokers is not None else state.brokers
        read = {tp: st for e in chunks for tp, st in e.states.items() if st is not None}
        if offline is None:
            offline = state.offline_replicas  # replicas on offline log dirs are not live either
        if brokers is None:
            partitions = tuple(read)
            topics = unclean_candidates(read, state.assignments, live, offline=offline)
        else:
            partitions = None
            topics = unclean_candidates(held, state.assignments, live, offline=offline) | unclean_candidates(
                read, state.assignments, live, offline=offline)
        unclean: set[str] = set()
        if topics:
            for name, config in (await self.topic_configs(sorted(topics))).items():
                if self.unclean_allowed(config):
                    unclean.add(name)
        registered = full_metadata.registered(state.brokers, brokers) if brokers is not None else ()
        return [offline_check(partitions, unclean, registered)]

    def step_offline(self, events: list[Event]) -> Mapping[int, frozenset[TopicPartition]]:
        """The replicas held on offline directories with those the step's ReplicasOffline name."""
        answers = [e for e in events if isinstance(e, ReplicasOffline)]
        if not answers:
            return self.state.offline_replicas
        merged = dict(self.state.offline_replicas)
        for e in answers:
            # ``online``: replicas the answer says are back (log_dir_failure step 3) are not
            # offline any more, and overstating would cost a config read for nothing.
            merged[e.broker_id] = (merged.get(e.broker_id, frozenset()) - e.online) | e.partitions
        return merged

    async def offline_replica_configs(self, events: list[Event], held: Mapping,
                                      offline: Mapping[int, frozenset[TopicPartition]], brokers) -> list[Event]:
        """Each ReplicasOffline (a broker's LeaderAndIsr answer, controller.shell.dispatch) with
        the ``unclean.leader.election.enable`` of the topics only an unclean election can lead
        once the step's offline replicas (``offline``, every answer of the step's included) are
        offline (controller.core.log_dir_failure step 4), judged from ``held`` (this step's
        fresh reads over the state's) and ``brokers``."""
        state = self.state
        candidates = {i: log_dir_failure.unclean_candidates(held, state.assignments, brokers, offline, e)
                      for i, e in enumerate(events) if isinstance(e, ReplicasOffline)}
        wanted = set().union(*candidates.values())
        if not wanted:
            return events
        # One read for every answer of the step: their candidates overlap (one partition's replicas).
        allowed = {n for n, c in (await self.topic_configs(sorted(wanted))).items() if self.unclean_allowed(c)}
        return [replace(e, unclean_topics=frozenset(candidates[i] & allowed)) if candidates.get(i) else e
                for i, e in enumerate(events)]

    async def read_metadata(self, dues: list[MetadataDue]) -> list[Event]:
        """The next chunk of each full UpdateMetadata send under way (the rest is queued again)."""
        out: list[Event] = []
        for item in dues:
            chunk, rest = self.metadata.take(item)
            if rest is not None:
                self.inbox.queue.put_nowait(rest)
            if chunk:
                states, lines = await self.chunk_reads.read(item, chunk, rest, self.metadata.peek(rest))
                _warn(lines)
                unborn = [tp for tp, st in states.items() if st is None]
                parents = await missing_parents(self.store, unborn) if unborn else frozenset()
                # The last chunk of a (re)load's send asks every broker what it hosts (step 9).
                probe = item.leader_and_isr and rest is None
                out.append(MetadataRead(states, item.brokers, parents, item.leader_and_isr, probe))
        return out

    def plan_metadata(self, brokers_before: dict, partitions_before: dict[str, set[int]]) -> None:
        """Full UpdateMetadata to brokers that (re-)registered, new partitions to everyone."""
        state = self.state
        back = full_metadata.registered(brokers_before, state.brokers)
        if back:
            log.info("broker(s) %s registered: sending them the full metadata", list(back))
            self.inbox.queue.put_nowait(self.metadata.brokers(back, list(state.assignments)))
        new = [
            (name, p)
            for name, before in partitions_before.items()
            for p in state.topic_partitions.get(name, ())
            if p not in before
        ]
        if new:
            self.inbox.queue.put_nowait(self.metadata.new_partitions(new))

    async def _read_named_topics(self, entries, topic_reads: dict) -> None:
        """Read the topic znodes of topics ``entries`` name that neither the state nor
        ``topic_reads`` knows yet (a tool may name a topic created a moment ago)."""
        unknown = {r.topic for r in entries or ()} - set(self.state.topic_versions) - set(topic_reads)
        if unknown:
            reads, lines = await read_topics(self.store, sorted(unknown), watch=True)
            topic_reads.update({n: r for n, r in reads.items() if r is not None})
            _warn(lines)

    async def _read_entry_configs(self, entries) -> list[Event]:
        """The config view of the topics ``entries`` name, read with the entries, so a move is
        judged by the topic's config as it was when the move was asked for."""
        return await self.read_move_configs(sorted({r.topic for r in entries or ()}))

    async def unclean_turned_on(self, named: set[str]) -> list[Event]:
        """The broker-failure check, unclean, for the leaderless partitions of topics a config
        change notification named whose ``unclean.leader.election.enable`` is now true (Kafka's
        ZooKeeper-mode ``TopicUncleanLeaderElectionEnable``, KAFKA-6835): turning it on is how an
        operator gives a partition whose every ISR member is gone a leader from its live
        replicas, without waiting for another broker to come or go."""
        state = self.state
        partitions = [(name, p) for name in sorted(named) for p in state.topic_partitions.get(name, ())]
        topics = unclean_candidates(state.states, state.assignments, state.brokers, partitions,
                                    offline=state.offline_replicas)
        if not topics:
            return []
        unclean = {n for n, config in (await self.topic_configs(sorted(topics))).items() if self.unclean_allowed(config)}
        if not unclean:
            return []
        log.info("unclean.leader.election.enable turned on for %s: electing their leaderless partitions",
                 sorted(unclean))
        return [offline_check(tuple(tp for tp in partitions if tp[0] in unclean), unclean, ())]

    async def read_broker_defaults(self) -> None:
        """``/config/brokers/<default>``, the brokers' cluster-wide dynamic config ({} when
        absent or not a config, logged)."""
        path = paths.broker_config(paths.BROKER_DEFAULT_CONFIG)
        found, bad = await cluster_reader.configs(self.store, [path])
        for unreadable in bad:
            log.warning("ignoring %s: %s", unreadable.path, unreadable.reason)
        read = found.get(path)
        self.broker_defaults = dict(read.config) if read is not None else {}
        raw = self.broker_defaults.get(isr_health.MIN_ISR_CONFIG)
        if raw is not None and self.min_isr_default is None:  # Kafka refuses such a value when it is set
            log.warning("ignoring min.insync.replicas=%r of %s: not a positive integer (the setting %d applies)",
                        raw, path, self.config.min_insync_replicas)

    @property
    def unclean_default(self) -> bool:
        """``unclean.leader.election.enable`` for a topic without its own: the brokers'
        cluster-wide dynamic default, else Kafka's false."""
        return unclean_enabled(self.broker_defaults)

    def unclean_allowed(self, config: Mapping[str, str] | None) -> bool:
        """A topic's ``unclean.leader.election.enable``: its own, else the cluster-wide default."""
        return unclean_enabled(config, self.unclean_default)

    @property
    def min_isr_default(self) -> int | None:
        """The brokers' cluster-wide dynamic ``min.insync.replicas`` (None: not set, or not a
        positive integer, logged when read: read_broker_defaults)."""
        return isr_health.parse_min_isr(self.broker_defaults)

    @property
    def engine_config(self) -> ControllerConfig:
        """The settings the engine decides with: ``self.config`` (which a SIGHUP may replace)
        with the cluster-wide dynamic ``min.insync.replicas`` over the setting (step 2a's floor
        for a topic without its own)."""
        floor = self.min_isr_default
        if floor is None or floor == self.config.min_insync_replicas:
            return self.config
        cached = self._engine_config
        if cached is None or cached[0] is not self.config or cached[1] != floor:
            cached = self._engine_config = (self.config, floor, self.config.model_copy(update={"min_insync_replicas": floor}))
        return cached[2]

    async def read_move_configs(self, names: list[str]) -> list[Event]:
        """The config view of moving topics, from ``/config/topics/T``: ``min.insync.replicas``
        (engine step 2a's floor, controller.core.isr_health) and ``unclean.leader.election.enable``
        (step 12c's election for a move that ends with no online ISR member; the engine cannot
        know before a step which moves end in it, so the view is kept for every move's topic)."""
        if not names:
            return []
        configs = await self.topic_configs(names)
        found = {name: isr_health.parse_min_isr(config) for name, config in configs.items()}
        for name, config in configs.items():
            raw = (config or {}).get(isr_health.MIN_ISR_CONFIG)
            if raw is not None and found[name] is None:  # Kafka refuses such a value when it is set
                log.warning("ignoring min.insync.replicas=%r of topic %r: not a positive integer (the default %d applies)",
                            raw, name, self.engine_config.min_insync_replicas)
        return [TopicConfigsRead(found, {name: self.unclean_allowed(config) for name, config in configs.items()})]

    async def topic_configs(self, names: list[str]) -> dict[str, dict[str, str] | None]:
        """Each topic's ``/config/topics/T`` map (None: absent or not a config, logged); in a
        step, those it read already are not read again (``step_configs``)."""
        memo = self.step_configs
        if memo is None:
            return await self._read_topic_configs(names)
        unread = [n for n in dict.fromkeys(names) if n not in memo]
        if unread:
            memo.update(await self._read_topic_configs(unread))
        return {n: memo[n] for n in names}

    async def _read_topic_configs(self, names: list[str]) -> dict[str, dict[str, str] | None]:
        found, bad = await cluster_reader.configs(self.store, [paths.topic_config(n) for n in names])
        for unreadable in bad:
            log.warning("ignoring %s: %s", unreadable.path, unreadable.reason)
        return {n: (r.config if (r := found.get(paths.topic_config(n))) is not None else None) for n in names}

    async def read_changes(self, kinds: set[str]) -> list[Event]:
        """Re-read (and re-watch) what the watches said changed."""
        state = self.state
        out: list[Event] = []
        if "brokers" in kinds:
            found = await read_brokers(self.store, watch=True, listener=self.config.broker_listener)
            _warn(found.lines)
            out.append(BrokersRead(keep_held(found, self.state.brokers)))
        if "controllers" in kinds:
            nodes, lines = await read_controller_nodes(self.store, watch=True)
            _warn(lines)
            if not nodes:  # the parent may not exist yet: its existence watch says when it does
                await self.store.exists(paths.CONTROLLER_INSTANCES, watch=True)
            out.append(ControllersRead(nodes))
        topic_reads: dict = {}
        if "topics" in kinds:
            names = await read_topic_names(self.store, watch=True)
            new = [n for n in names if n not in state.topic_versions]
            listed = set(names)  # once: a set per known topic made every topic read O(topics^2)
            gone = [n for n in state.topic_versions if n not in listed]
            if new:
                reads, lines = await read_topics(self.store, new, watch=True)
                topic_reads.update(reads)
                _warn(lines)
            for name in gone:
                topic_reads[name] = None
        if "topic data" in kinds:
            # Topic znodes changed under their data watch (a tool added partitions: Kafka's
            # PartitionModificationsHandler): re-armed, and read again unless at the version
            # held (this controller's own write fired it); a deleted one is the listing's news.
            changed, self.changed_topics = self.changed_topics, set()
            known = [n for n in sorted(changed) if n in state.topic_versions and n not in topic_reads]
            stats = await asyncio.gather(*(self.store.exists(paths.topic(n), watch=True) for n in known))
            moved = [n for n, stat in zip(known, stats) if stat is not None and stat.version != state.topic_versions[n]]
            if moved:
                reads, lines = await read_topics(self.store, moved, watch=True)
                topic_reads.update({n: r for n, r in reads.items() if r is not None})
                _warn(lines)
        if "requests" in kinds:
            stat = await self.store.exists(paths.REASSIGN_PARTITIONS, watch=True)
            # Skip the read (and the parse of up to 1 MiB) only when the znode is exactly what
            # this controller last wrote; a version alone would miss a tool's delete + create.
            if stat is None and state.requests_version is not None or (
                stat is not None and stat.mzxid != self._requests_mzxid
            ):
                requests = await read_requests(self.store)
                await self._read_named_topics(requests.requests, topic_reads)
                out += await self._read_entry_configs(requests.requests)
                out.append(requests)
        if "cancel" in kinds:
            stat = await self.store.exists(paths.CANCEL_REASSIGNMENT, watch=True)
            if stat is not None:
                out.append(CancelRequested(None, source="znode", znode_version=stat.version))
        if "queue" in kinds:
            await self.store.exists(paths.REASSIGN_QUEUE, watch=True)
            queue = await read_queue(self.store)
            await self._read_named_topics(queue.requests, topic_reads)
            if queue.version is not None:
                out += await self._read_entry_configs(queue.requests)
                out.append(queue)
        if "deletes" in kinds:
            # Exists-watch for the parent's creation, children watch once it is there.
            if await self.store.exists(paths.DELETE_TOPICS, watch=True) is not None:
                marked = await children_or_empty(self.store, paths.DELETE_TOPICS, watch=True)
            else:
                marked = []
            if marked or state.deleting:
                out.append(DeletionsRead(frozenset(marked)))
        if "configs" in kinds:
            # A topic's config changed (a notification names it): read again for the topics
            # whose entries or moves the controller holds or whose floor or unclean setting it
            # keeps, so a waiting move is judged by the new floor and a move that ends elects
            # by the new setting.
            named, default_named = await self.config_changes.named(self.store)
            held = {tp[0] for tp in state.requests} | {tp[0] for tp in state.tasks}
            held |= set(state.min_isr) | set(state.unclean)
            if default_named:
                unclean_before, floor_before = self.unclean_default, self.min_isr_default
                await self.read_broker_defaults()
                if (self.unclean_default, self.min_isr_default) != (unclean_before, floor_before):
                    # Every held topic's view again: one without its own value takes the new
                    # default, and the step that takes the view schedules (step 2a's floors).
                    named |= held
                if self.unclean_default and not unclean_before:
                    # Kafka's UncleanLeaderElectionEnable: every topic may now have one.
                    named |= set(state.topic_partitions)
            if named:
                out += await self.read_move_configs(sorted(named & held))
                out += await self.unclean_turned_on(named)
        if "preferred" in kinds:
            found = await read_preferred_election(self.store)
            if found is not None:
                version, partitions, error = found
                # Read as an ElectLeaders request's are (controller.shell.admin.elect_leaders 3).
                states, lines = await read_states(self.store, [tp for tp in partitions if tp in state.assignments])
                _warn(lines)
                out.append(PreferredElectionRead(partitions, version, states, error))
        if "logdirs" in kinds:
            notes, named, lines = await read_log_dir_events(self.store, watch=True)
            _warn(lines)
            if notes:
                out.append(LogDirEventsRead(named, tuple(notes)))
        if topic_reads:
            out.insert(0, TopicsRead(topic_reads, topic_ids_to_give(topic_reads, state.topic_versions)))
        if "notifications" in kinds:
            notes, partitions, lines = await read_notifications(self.store, watch=True)
            _warn(lines)
            if notes:
                # A state the leader put in its notification needs no read when this
                # controller already holds a state of the partition (read or written since it
                # became active): the newer of the two is as fresh as a read, and what the
                # engine does with it is conditional on its zkVersion. Without one (just after
                # a reload) the carried state may be older than the znode - a leftover
                # notification from before a write - and acting on it would fail the same
                # conditional write after every reload; so it is read. So is one that claims
                # the version held with other contents: a version has one content, so the claim
                # is forged, and a write conditional on that version would land on its word
                # (a forged ISR with the targets in it would complete the move and delete the
                # only full copies).
                held = state.states
                states = {
                    tp: s for tp, s in partitions.items()
                    if s is not None and tp in state.assignments and (was := held.get(tp)) is not None
                    and (s.zk_version != was.zk_version or s == was)
                }
                _warn([f"an ISR change notification claims {tp[0]}-{tp[1]}'s state at version {s.zk_version} with "
                       f"other contents than that version's: reading the znode instead"
                       for tp, s in partitions.items() if s is not None and tp not in states
                       and (was := held.get(tp)) is not None and s.zk_version == was.zk_version])
                unread = [tp for tp in sorted(partitions) if tp not in states and tp in state.assignments]
                unreadable: tuple = ()
                if unread:
                    read, unreadable = await read_move_states(self.store, unread)
                    states.update(read)
                out.append(StatesRead(states, tuple(notes), unreadable=unreadable))
        return out

    async def execute(self, events: list[Event], retries: int = state_conflicts.STALE_STATE_RETRIES) -> None:
        """One engine step and its effects. ``retries``: how many more times a step whose own
        flush met newer partition states may be taken again with them (controller.shell.state_conflicts)."""
        if not events:
            return
        began = time.perf_counter()
        with gctune.paused():  # a step makes no garbage, only objects that live until it ends
            step = engine.step(self.state, events, self.engine_config)
        computed = time.perf_counter()
        self.stats.steps += 1
        for line in step.log:
            log.info("%s", line)
        _warn(step.warnings)
        conflict = False
        removal_raced = False
        self.flushing = step
        if self.journal is not None:
            self.journal.prepare(events, step, self.state)  # each move's door, which its record carries
        if step.writes:
            split = step.shared_from
            if split is None:
                split = len(step.writes)
                while split > 0 and step.writes[split - 1].path in SHARED_TAIL:
                    split -= 1
            # The znodes others write too go last and alone, so that a concurrent change by a
            # tool fails those writes only.
            end = step.removal_from if step.removal_from is not None else len(step.writes)
            own, shared, removal = step.writes[:split], step.writes[split:end], step.writes[end:]
            if own:
                self.writer.extend(own)
                try:
                    await self.writer.flush(self.epoch_zkversion)
                except FlushError as e:
                    if retries and await self._retake_with_newer_states(events, own, e, retries):
                        return
                    raced = isinstance(getattr(e.cause, "cause", None), (BadVersionError, NoNodeError, NodeExistsError))
                    if raced:
                        # A partition state changed under the step (a leader's ISR change):
                        # the reload that follows rebuilds the state; take the cancels again
                        # after it rather than failing them.
                        for c in step.cancels:
                            if c.source == "api":
                                self.inbox.queue.put_nowait(CancelRequested(tuple(c.results), c.token, c.source))
                    else:
                        self._fail_cancels(step, e)
                    self._fail_elections(step, e)
                    admin_events.fail(step, e, retry=raced)  # raced: taken again after the reload
                    raise
                except BaseException as e:
                    self._fail_cancels(step, e)
                    self._fail_elections(step, e)
                    admin_events.fail(step, e, retry=False)
                    raise
                self.stats.flushes += 1
            if shared:
                self.writer.extend(shared)
                self._requests_mzxid = None
                try:
                    results = await self.writer.flush(self.epoch_zkversion)
                    if shared[0].path == paths.REASSIGN_PARTITIONS and isinstance(results[0], ZnodeStat):
                        self._requests_mzxid = results[0].mzxid
                except FlushError as e:
                    if not isinstance(getattr(e.cause, "cause", None), (BadVersionError, NoNodeError, NodeExistsError)):
                        self._fail_cancels(step, e)
                        admin_events.fail(step, e, retry=False)
                        raise
                    # Keep the step (its other writes landed), then re-read and merge the znode;
                    # admin requests are taken again on the merged znode.
                    conflict = True
                    admin_events.fail(step, e, retry=True)
                    log.info("/admin/reassign_partitions changed under this controller: re-reading it")
                self.stats.flushes += 1
            if removal:
                # Throttle removal's write: one multi, its guard first (controller.core.throttle_removal).
                self.writer.extend(removal)
                try:
                    await self.writer.flush(self.epoch_zkversion)
                except FlushError as e:
                    if not isinstance(getattr(e.cause, "cause", None), (BadVersionError, NoNodeError, NodeExistsError)):
                        raise
                    removal_raced = True  # a tool wrote what it was decided from: read and decide again
                    log.info("throttle removal: what it was decided from changed; deciding again")
                else:
                    written = len(removal) - sum(1 for op in removal if op.path == paths.REASSIGN_PARTITIONS)
                    log.info("removed auto-removable throttles (%d znode writes)", written)
                self.stats.flushes += 1
            self.stats.ops_written += len(step.writes) - conflict
        if step.topics_deleted or step.markers_dropped:
            await self._delete_topic_znodes(step)  # ZooKeeper before memory
        self.flushing = None
        if self.journal is not None:
            self.journal.observe(events, step, self.state)
        brokers_before = self.state.brokers
        self.state.apply(step.delta)
        self._answer_elections(step)  # their writes are the step's own: landed even on a conflict
        if not conflict:
            self._answer_cancels(step)
        if self.on_step is not None:
            self.on_step(step)
        for broker_id in ended_sessions(brokers_before, self.state.brokers):
            await self.dispatcher.forget(broker_id)  # before this step's requests to its new session
        self.dispatcher.send(step.commands)
        if step.created:
            for listener in list(self.created_listeners):
                listener(step.created)
        if step.topics_deleted:
            for listener in list(self.deleted_listeners):
                listener(step.topics_deleted)
        # Admin requests, once their writes landed and the step's broker requests went out -
        # CreateTopics' LeaderAndIsr and UpdateMetadata included (a conflict failed them above:
        # those are taken again).
        admin_events.answer(step.answers)
        if step.held:
            self.inbox.queue.put_nowait(ScheduleDue(step.held))  # held until the entries landed
        if step.reads:
            states, unreadable = await read_move_states(self.store, sorted(step.reads))
            self.inbox.queue.put_nowait(StatesRead(states, unreadable=unreadable))
        self.stats.moves_finished += len(step.completed)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "step %d: %d events, %d writes, %d requests, %d reads, %d completed; engine %.3fs, total %.3fs",
                self.stats.steps, len(events), len(step.writes), len(step.commands), len(step.reads),
                len(step.completed), computed - began, time.perf_counter() - began,
            )
        if conflict:
            # Cancels are taken again on the merged znode, by partition, and answered then.
            retry = [
                CancelRequested(tuple(c.results), _Retried(c.token, c.results), c.source, withdraw_any=True)
                for c in step.cancels
                if c.source == "api"
            ]
            if step.cancelled:
                # Rolled-back moves' records go in the failed multi with their entries: memory
                # is ahead of ZooKeeper there, so rebuild (recovery finishes those rollbacks).
                self.stats.reloads += 1
                await self.reload()
                await self.execute(retry)
            else:
                await self.execute(await self.read_changes({"requests", "cancel", "queue", "preferred"}) + retry)
            return
        check = Mode.IDLE if removal_raced else step.throttle_check
        if check is not None and (check in self.throttle_removal or (removal_raced and self.throttle_removal)):
            read = await read_removal(self.store, self.state, check, self.caches.setdefault("throttles", {}))
            if read is not None:
                self.inbox.queue.put_nowait(read)  # the engine decides in the next step

    async def _retake_with_newer_states(self, events: list[Event], ops: list, error: FlushError, retries: int) -> bool:
        """The step's own flush failed at a conditional partition-state write and landed nothing:
        read the states it wrote, and where any changed (a leader's ISR change whose notification
        has not come yet), take the same events again after them, as a notification just in
        would put them - nothing of the step is in memory yet, so it is decided anew. False (the
        caller fails the step and reloads) for any other failure, and for recovery's own step
        (Resume), which recovery rebuilds from its own reads."""
        if any(isinstance(e, Resume) for e in events):
            return False
        expected = state_conflicts.written_states_if_stale(error, ops)
        if not expected:
            return False
        newer, lines = await state_conflicts.read_changed(self.store, expected)
        _warn(lines)
        if not newer:
            return False
        self.flushing = None
        log.info("partition state(s) changed under the step (%s): taking it again with them read",
                 ", ".join(f"{t}-{p}" for t, p in sorted(newer)))
        ahead = state_conflicts.ahead_of_znodes(newer, expected)
        if ahead:
            log.warning("an ISR change notification claimed a partition state newer than its znode holds (%s): "
                        "not believed, the znode read instead", ", ".join(f"{t}-{p}" for t, p in ahead))
        self.stats.state_retries += 1
        events = await self._unclean_again(newer, events)
        await self.execute(state_conflicts.retaken(newer, events), retries - 1)
        return True

    async def _unclean_again(self, newer: Mapping[TopicPartition, LeaderIsr], events: list[Event]) -> list[Event]:
        """A retaken step's unclean elections (its OfflineCheck and ReplicasOffline, whose
        ``unclean_topics`` were judged from the states the step first held): the topics that
        only an unclean election can lead once ``newer`` are held (say, a dead leader had shrunk
        the ISR to itself) and whose ``unclean.leader.election.enable`` is true join them, read
        as :meth:`offline_checks` and :meth:`offline_replica_configs` read them. Only added: a
        topic already there was read true in this step, and the engine elects uncleanly only a
        partition no clean election can lead."""
        offline = self.step_offline(events)
        live = brokers_read(events, self.state.brokers)
        assignments = self.state.assignments
        wanted: dict[int, set[str]] = {}
        for i, e in enumerate(events):
            if isinstance(e, ReplicasOffline):
                found = log_dir_failure.unclean_candidates(newer, assignments, live, offline, e)
            elif isinstance(e, OfflineCheck):
                named = None if e.partitions is None else [tp for tp in e.partitions if tp in newer]
                found = unclean_candidates(newer, assignments, live, named, offline=offline)
            else:
                continue
            if found - e.unclean_topics:
                wanted[i] = found - e.unclean_topics
        if not wanted:
            return events
        configs = await self.topic_configs(sorted(set().union(*wanted.values())))
        allowed = {name for name, config in configs.items() if self.unclean_allowed(config)}
        return [replace(e, unclean_topics=e.unclean_topics | (wanted[i] & allowed)) if wanted.get(i, set()) & allowed else e
                for i, e in enumerate(events)]

    async def _delete_topic_znodes(self, step: engine.Step) -> None:
        """controller.core.topic_deletion step 5: what exists of each deleted topic's znodes,
        bottom-up, and its marker last, in one fenced flush (Kafka's recursive deletes)."""
        ops = []
        for name, whole in [(n, True) for n in step.topics_deleted] + [(n, False) for n in step.markers_dropped]:
            partitions = set(self.state.topic_partitions.get(name, ()))
            if whole:
                for child in await children_or_empty(self.store, paths.partitions(name)):
                    if child.isdigit():
                        partitions.add(int(child))
            wanted = [paths.delete_topic_marker(name)]
            if whole:
                wanted += [paths.topic(name), paths.partitions(name), paths.topic_config(name)]
                wanted += [x for p in partitions for x in (paths.partition(name, p), paths.partition_state(name, p))]
            present = {path for path, read in zip(wanted, await get_many(self.store, wanted)) if read is not None}
            ops += deletion_ops(name, sorted(partitions), present, whole=whole)
        if ops:
            self.writer.extend(ops)
            self.own_flush = DELETE
            try:
                await self.writer.flush(self.epoch_zkversion)
            finally:
                self.own_flush = None
            self.stats.flushes += 1
            self.stats.ops_written += len(ops)

    @staticmethod
    def _answer_elections(step: engine.Step) -> None:
        """ElectLeaders (controller.shell.admin.elect_leaders): the new states landed."""
        for future, results in step.elections:
            if isinstance(future, asyncio.Future) and not future.done():
                future.set_result(results)

    @staticmethod
    def _fail_elections(step: engine.Step, error: BaseException) -> None:
        for future, _ in step.elections:
            if isinstance(future, asyncio.Future) and not future.done():
                future.set_exception(RuntimeError(f"the controller could not record the election: {error!r}"))

    @staticmethod
    def _answer_cancels(step: engine.Step) -> None:
        """The writes recording the step's cancellations landed: answer who waits for them
        (an acknowledged cancel is never lost)."""
        for outcome in step.cancels:
            future, results = outcome.token, outcome.results
            if isinstance(future, _Retried):
                # What the first try cancelled stays cancelled, whatever the merged znode says.
                results = results | {tp: r for tp, r in future.first.items() if r[0] == 0}
                future = future.future
            if isinstance(future, asyncio.Future) and not future.done():
                future.set_result(results)

    @staticmethod
    def _fail_cancels(step: engine.Step, error: BaseException) -> None:
        """A step's writes did not land: its cancels were not taken; say so to who waits."""
        for outcome in step.cancels:
            future = outcome.token.future if isinstance(outcome.token, _Retried) else outcome.token
            if isinstance(future, asyncio.Future) and not future.done():
                future.set_exception(CancelNotRecorded(f"the controller could not record the cancellation: {error!r}"))


def fail_waiting(items, why: str = "") -> list:
    """A resigning controller's requests someone waits for, queued, in the batch it was taking or
    held back for a failover's states (admin requests: admin_events.fail_queued;
    CancelReassignments, ElectLeaders, ControlledShutdown, AlterPartition, AllocateProducerIds): failed at
    once, so that their handlers answer NOT_CONTROLLER as Kafka's would, instead of the client
    waiting out its timeout; the other items are returned."""
    kept = []
    message = f"this controller resigned before taking the request {why}".strip()
    for item in admin_events.fail_queued(items, why):
        token = getattr(item, "token", None)
        if isinstance(item, CancelRequested) and isinstance(token, _Retried):
            token = token.future
        if isinstance(item, CancelRequested) and isinstance(token, asyncio.Future):
            if not token.done():
                token.set_exception(CancelNotRecorded(message))
        elif (isinstance(item, (ElectionRequested, ShutdownRequested, IsrAlterRequested, ProducerIdsRequested))
              and isinstance(token, asyncio.Future)):
            if not token.done():
                token.set_exception(NotTheController(message))
        else:
            kept.append(item)
    return kept


class NotTheController(Exception):
    """The controller resigned before taking the request (ElectLeaders: NOT_CONTROLLER)."""


def ended_sessions(before: Mapping[int, Broker], after: Mapping[int, Broker]) -> list[int]:
    """Brokers whose session ``before`` held has ended by ``after``: gone, or registered again
    under a new one (its czxid, the broker epoch). A registration rewritten in its session
    (KIP-226) keeps its epoch, and its connection (controller.shell.transport re-addresses it)."""
    if before is after:
        return []
    return sorted(b for b, info in before.items() if b not in after or after[b].epoch != info.epoch)


def brokers_read(events, default=None):
    """The live brokers the last BrokersRead of ``events`` names (``/brokers/ids`` read in the
    step), else ``default``."""
    return next((e.brokers for e in reversed(events) if isinstance(e, BrokersRead)), default)


def _warn(lines) -> None:
    """Log what a read skipped or found malformed (the reads return it rather than log it)."""
    for line in lines:
        log.warning("%s", line)
