"""Replicas and the copy model: producers append to leaders, followers copy at capped rates.

Pure and clock-free: :meth:`ReplicationModel.advance` moves simulated time forward to ``now``
(any monotonic float, seconds) in steps of at most ``max_step``. Brokers of one simulation
share one model, so a follower reads its leader replica's state directly (there is no Fetch
API between simulated brokers).

Per step, in this order:

1. every online leader replica grows by the produce rate (bytes/s and messages/s), then
   deletes the whole segments past its topic's retention (:mod:`sim.logconfig`; its followers
   drop the same prefix);
2. every online follower whose leader replica is online and leading wants the bytes it lacks;
   the wants are granted max-min fairly within these shared pools (:mod:`sim.fairshare`):
   the follower broker's ``bandwidth`` (all its copies), its follower throttle rate (its
   throttled copies) and the leader broker's leader throttle rate (throttled copies it
   serves). As in Kafka, a copy is throttled only while the follower is outside the ISR;
3. a follower that now holds all of its leader's log is "caught up" at the step's end time;
   the leader remembers that time per follower (``replica.lag.time.max.ms`` uses it);
4. every future log (KIP-113, :mod:`sim.logdirs`) of a replica that leads or follows copies
   the bytes its current log has and it lacks, within the broker's
   ``replica.alter.log.dirs.io.max.bytes.per.second`` and its disk rate (both shared by all
   of the broker's future logs); one that now holds the whole current log replaces it: the
   replica's directory becomes the future's.

Offsets follow bytes: a follower copying ``b`` of the ``d`` bytes it lacks moves ``b/d`` of
the way from its log end offset to the leader's.

    >>> model = ReplicationModel(CopySettings(bandwidth=1e6, produce_bytes=0, produce_messages=0))
    >>> leader = model.add(Replica("t", 0, 1, size=10e6, leo=10_000))
    >>> leader.become_leader(leader_epoch=0, isr=(1,), replicas=(1, 2), zk_version=0, now=0.0)
    >>> follower = model.add(Replica("t", 0, 2))
    >>> follower.become_follower(leader=1, leader_epoch=0, replicas=(1, 2))
    >>> model.advance(5.0); follower.size_bytes, model.lag(follower)
    (5000000, 5000)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from sim.fairshare import EPSILON, allocate
from sim.logconfig import LogConfigs
from sim.logdirs import FutureLog
from sim.throttle import Throttles

# Simulated time advances in steps no longer than this (seconds): short enough that a
# follower and the producers interleave as they would with Kafka's fetch loop (~100 ms).
DEFAULT_MAX_STEP = 0.1

NO_LEADER = -1


class Role(enum.Enum):
    NONE = "none"  # hosted but neither leading nor following (before LeaderAndIsr, after StopReplica)
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(eq=False)
class Replica:
    """One broker's copy of one partition, and the partition state that broker holds."""

    topic: str
    partition: int
    broker: int
    size: float = 0.0  # bytes held
    leo: float = 0.0  # log end offset (messages)
    role: Role = Role.NONE
    leader: int = NO_LEADER
    leader_epoch: int = -1
    controller_epoch: int = -1
    zk_version: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    # Leader only: follower id -> the last time it held all of this leader's log.
    caught_up: dict[int, float] = field(default_factory=dict)
    log_dir: str = ""  # the directory of the current log on its broker
    future: FutureLog | None = None  # an intra-broker move in progress (AlterReplicaLogDirs)
    storage_error: bool = False  # its directory went offline: it neither leads nor follows

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def size_bytes(self) -> int:
        return int(self.size)

    @property
    def log_end_offset(self) -> int:
        return int(self.leo)

    def become_leader(
        self,
        *,
        leader_epoch: int,
        isr: tuple[int, ...],
        replicas: tuple[int, ...],
        zk_version: int,
        now: float,
        controller_epoch: int = -1,
        adding: tuple[int, ...] = (),
        removing: tuple[int, ...] = (),
    ) -> None:
        """Lead: followers already in the ISR count as caught up now (as Kafka's makeLeader)."""
        if self.role is not Role.LEADER or leader_epoch != self.leader_epoch:
            self.caught_up = {}
        for follower in isr:
            if follower != self.broker:
                self.caught_up.setdefault(follower, now)
        self.role = Role.LEADER
        self.leader = self.broker
        self._set_state(leader_epoch, controller_epoch, zk_version, replicas, isr, adding, removing)

    def become_follower(
        self,
        *,
        leader: int,
        leader_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...] = (),
        zk_version: int = -1,
        controller_epoch: int = -1,
        adding: tuple[int, ...] = (),
        removing: tuple[int, ...] = (),
    ) -> None:
        self.role = Role.FOLLOWER
        self.leader = leader
        self.caught_up = {}
        self._set_state(leader_epoch, controller_epoch, zk_version, replicas, isr, adding, removing)

    def go_offline(self) -> None:
        """Stop leading and following; the log and the epochs stay (StopReplica without delete)."""
        self.role = Role.NONE
        self.caught_up = {}

    def _set_state(self, leader_epoch, controller_epoch, zk_version, replicas, isr, adding, removing) -> None:
        self.leader_epoch = leader_epoch
        self.controller_epoch = controller_epoch
        self.zk_version = zk_version
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.adding = tuple(adding)
        self.removing = tuple(removing)


@dataclass(frozen=True, slots=True)
class CopySettings:
    """Rates of one simulation. ``bandwidth`` None means copies are limited by throttles only."""

    bandwidth: float | None = 100 * 1024 * 1024  # bytes/s a broker can fetch, all copies together
    produce_bytes: float = 1024.0  # bytes/s appended to each leader replica
    produce_messages: float = 1.0  # messages/s appended to each leader replica
    max_step: float = DEFAULT_MAX_STEP
    # bytes/s one broker can copy between its own log dirs, all future logs together: a local
    # disk-to-disk copy, bounded by the disk rather than the network (None: no bound).
    disk_copy_rate: float | None = 200 * 1024 * 1024


def _leading(hosts: dict[int, Replica], replica: Replica, offline) -> Replica | None:
    """The replica ``replica`` copies from among its partition's ``hosts`` (by broker), if that
    one is leading on a broker not ``offline``; None for a replica that follows nobody."""
    if replica.role is not Role.FOLLOWER or replica.leader == replica.broker:
        return None
    leader = hosts.get(replica.leader)
    if leader is None or leader.role is not Role.LEADER or leader.broker in offline:
        return None
    return leader


class ReplicationModel:
    """Every replica of one simulation, and the clock-free copy model over them."""

    def __init__(self, settings: CopySettings | None = None, throttles: Throttles | None = None, now: float = 0.0,
                 log_configs: LogConfigs | None = None):
        self.settings = settings or CopySettings()
        self.throttles = throttles if throttles is not None else Throttles()
        # Topic configs (retention, segments) as the config watcher learns them (sim.logconfig).
        self.log_configs = log_configs if log_configs is not None else LogConfigs()
        self.now = now
        self.offline: set[int] = set()  # brokers that are stopped: they neither copy nor serve
        # Brokers in a controlled shutdown: still copying, but no leader takes them into an ISR.
        # Kafka 3.3+ (KIP-841) has the controller refuse such an expansion; simulated leaders
        # write ISRs themselves, so they leave these brokers out.
        self.shutting_down: set[int] = set()
        self._replicas: dict[tuple[str, int], dict[int, Replica]] = {}
        self._by_broker: dict[int, dict[tuple[str, int], Replica]] = {}

    # ---- bookkeeping ---------------------------------------------------------------------

    def add(self, replica: Replica) -> Replica:
        hosts = self._replicas.setdefault(replica.key, {})
        if replica.broker in hosts:
            raise ValueError(f"broker {replica.broker} already hosts {replica.topic}-{replica.partition}")
        hosts[replica.broker] = replica
        self._by_broker.setdefault(replica.broker, {})[replica.key] = replica
        return replica

    def get(self, topic: str, partition: int, broker: int) -> Replica | None:
        return self._replicas.get((topic, partition), {}).get(broker)

    def remove(self, topic: str, partition: int, broker: int) -> Replica | None:
        hosts = self._replicas.get((topic, partition))
        if not hosts:
            return None
        replica = hosts.pop(broker, None)
        if not hosts:
            del self._replicas[(topic, partition)]
        if replica is not None:
            del self._by_broker[broker][replica.key]
        return replica

    def hosted_by(self, broker: int) -> list[Replica]:
        """A broker's replicas, ordered by topic and partition."""
        mine = self._by_broker.get(broker, {})
        return [mine[key] for key in sorted(mine)]

    def hosted(self, broker: int):
        """A broker's replicas in no particular order: what a scan that sorts its own findings
        walks every tick (hosted_by sorts them all first)."""
        return self._by_broker.get(broker, {}).values()

    def all(self) -> list[Replica]:
        return [r for _, hosts in sorted(self._replicas.items()) for _, r in sorted(hosts.items())]

    def online(self, broker: int) -> bool:
        return broker not in self.offline

    # ---- derived figures -----------------------------------------------------------------

    def leader_of(self, replica: Replica) -> Replica | None:
        """The replica ``replica`` copies from, if that one is online and leading."""
        return _leading(self._replicas.get((replica.topic, replica.partition), {}), replica, self.offline)

    def high_watermark(self, leader: Replica) -> float:
        """The smallest log end offset in the leader's ISR (the leader's own if alone)."""
        offsets = [leader.leo]
        for member in leader.isr:
            if member != leader.broker:
                replica = self.get(leader.topic, leader.partition, member)
                offsets.append(replica.leo if replica is not None else 0.0)
        return min(offsets)

    def lag(self, replica: Replica) -> int:
        """Messages this replica lacks against the partition's leader (0 for the leader)."""
        if replica.role is Role.LEADER:
            return 0
        leader = self.get(replica.topic, replica.partition, replica.leader)
        if leader is None or leader.role is not Role.LEADER:
            return 0
        return max(0, leader.log_end_offset - replica.log_end_offset)

    # ---- time ----------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Run producers and copies from ``self.now`` up to ``now`` (earlier ``now``: no-op)."""
        while self.now < now:
            end = min(now, self.now + self.settings.max_step)
            self._step(end - self.now, end)
            self.now = end

    def _retain(self, leader: Replica, hosts: dict[int, Replica], now: float) -> None:
        """Step 1b: the leader deletes the segments past its topic's retention; its followers
        drop the same prefix (Kafka's log start offset moves on every replica)."""
        cut = self.log_configs.retention(leader.topic, leader.broker).deletable(
            leader.size, self.settings.produce_bytes, now)
        if cut <= 0:
            return
        leader.size -= cut
        for replica in hosts.values():
            if replica.role is Role.FOLLOWER and replica.leader == leader.broker and self.online(replica.broker):
                replica.size = max(0.0, replica.size - cut)
        for replica in hosts.values():  # a future log starts where its current log starts
            if replica.future is not None:
                replica.future.size = max(0.0, replica.future.size - cut)

    def _step(self, dt: float, end: float) -> None:
        settings = self.settings
        offline = self.offline
        produce_bytes, produce_messages = settings.produce_bytes * dt, settings.produce_messages * dt
        leader_role, follower_role = Role.LEADER, Role.FOLLOWER
        # Followers with bytes to copy, and their leaders. One whose leader has nothing it lacks
        # is caught up here and now, as the allocation would leave it (it wants nothing): the
        # pass over every replica is what a step costs, so it does no more for those.
        copying: list[tuple[Replica, Replica]] = []
        futures: list[Replica] = []  # replicas with a future log, gathered in the pass made anyway
        retain = self.log_configs.may_delete(end)
        for hosts in self._replicas.values():
            # Per partition, its leaders first (producers, retention), then its followers: a
            # follower copies only from a replica of its own partition.
            for replica in hosts.values():
                if replica.broker in offline:
                    continue
                if replica.future is not None:
                    futures.append(replica)
                if replica.role is leader_role:
                    replica.size += produce_bytes
                    replica.leo += produce_messages
                    if retain:
                        self._retain(replica, hosts, end)
            for follower in hosts.values():
                if follower.role is not follower_role or follower.broker in offline:
                    continue
                leader = _leading(hosts, follower, offline)
                if leader is None:
                    continue
                if follower.leo > leader.leo or follower.size > leader.size:
                    # Diverged past the leader (an old leader's tail): truncate, as Kafka does.
                    follower.size, follower.leo = min(follower.size, leader.size), min(follower.leo, leader.leo)
                if leader.size - follower.size <= EPSILON:
                    follower.size, follower.leo = leader.size, leader.leo
                    leader.caught_up[follower.broker] = end
                else:
                    copying.append((follower, leader))
        if copying:
            self._copy(copying, dt, end)
        self._copy_futures(futures, dt)

    def _copy(self, copying: list[tuple[Replica, Replica]], dt: float, end: float) -> None:
        """Step 2-3 for the followers that lack bytes: their shares of the pools, then the copy."""
        settings = self.settings
        demands: dict[tuple[str, int, int], float] = {}
        pools: dict[tuple[str, int], tuple[float, list]] = {}

        def join(pool: tuple[str, int], rate: float | None, flow) -> None:
            if rate is None:
                return
            entry = pools.get(pool)
            if entry is None:
                entry = pools[pool] = (rate * dt, [])
            entry[1].append(flow)

        throttles = self.throttles
        for follower, leader in copying:
            flow = (follower.topic, follower.partition, follower.broker)
            demands[flow] = leader.size - follower.size
            join(("bandwidth", follower.broker), settings.bandwidth, flow)
            if follower.broker not in leader.isr:
                if throttles.follower_throttled(follower.topic, follower.partition, follower.broker):
                    join(("follower", follower.broker), throttles.follower_rate(follower.broker), flow)
                if throttles.leader_throttled(leader.topic, leader.partition, leader.broker):
                    join(("leader", leader.broker), throttles.leader_rate(leader.broker), flow)

        granted = allocate(demands, pools)
        for follower, leader in copying:
            flow = (follower.topic, follower.partition, follower.broker)
            want, got = demands[flow], granted[flow]
            if want - got <= EPSILON:
                follower.size, follower.leo = leader.size, leader.leo
                leader.caught_up[follower.broker] = end
            else:
                follower.leo += (leader.leo - follower.leo) * (got / want)
                follower.size += got

    def _copy_futures(self, replicas: list[Replica], dt: float) -> None:
        """Step 4: future logs copy from their current logs (Kafka's ReplicaAlterLogDirsThread)."""
        moving = [r for r in replicas if r.future is not None and r.role is not Role.NONE and not r.storage_error]
        if not moving:
            return
        demands: dict[tuple[str, int, int], float] = {}
        pools: dict[tuple[str, int], tuple[float, list]] = {}
        for replica in moving:
            future = replica.future
            if future.leo > replica.leo or future.size > replica.size:  # the current log was truncated
                future.size, future.leo = min(future.size, replica.size), min(future.leo, replica.leo)
            flow = (replica.topic, replica.partition, replica.broker)
            demands[flow] = replica.size - future.size
            for pool, rate in ((("disk", replica.broker), self.settings.disk_copy_rate),
                               (("alter_log_dirs", replica.broker), self.throttles.alter_log_dirs_rate(replica.broker))):
                if rate is not None:
                    pools.setdefault(pool, (rate * dt, []))[1].append(flow)
        granted = allocate(demands, pools)
        for replica in moving:
            future = replica.future
            flow = (replica.topic, replica.partition, replica.broker)
            want, got = demands[flow], granted[flow]
            if want - got <= EPSILON:
                # Caught up: the future log replaces the current one (replaceCurrentWithFutureLog).
                replica.log_dir, replica.future = future.log_dir, None
            else:
                future.leo += (replica.leo - future.leo) * (got / want)
                future.size += got
