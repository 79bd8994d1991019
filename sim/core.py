"""BrokerCore: one simulated broker's state machine. No I/O; time comes from an injected clock.

It answers the requests a Kafka broker gets from a controller and from admin clients, and does
a partition leader's ISR duty. Its replicas live in the simulation's shared
:class:`sim.replica.ReplicationModel`; the shell (:mod:`sim.cluster`) advances that model, then
each core, and carries out the ISR changes the cores return: ZooKeeper writes, or AlterPartition
requests to the controller (:mod:`sim.alter_partition`).

    core = BrokerCore(1, model, clock=lambda: model.now)
    response = core.handle(4, 4, leader_and_isr_body)      # LeaderAndIsr v4 -> response body
    for effect in core.advance(model.now):                  # IsrWrite / IsrChangeNotification
        ...                                                  # shell writes, then reports back:
    core.isr_write_done(write, new_zk_version, now)          # or isr_write_conflict / _failed
    core.isr_altered(write, leader_epoch, isr, partition_epoch, now)   # AlterPartition way: or
                                                             # isr_change_refused / isr_write_failed

Epoch rules (Kafka 2.4+'s ZooKeeper-mode brokers, docs/DESIGN.md section 5): a request from
an older controller epoch than this broker has seen is answered STALE_CONTROLLER_EPOCH whole
and changes nothing. A LeaderAndIsr partition state whose leader epoch is not newer than the
one the replica holds - older *or equal* - is answered STALE_CONTROLLER_EPOCH for that
partition and not applied (the controller bumps the epoch for every new replica set or
leader, so an equal epoch is a resend of what the replica already has); the request's other
partitions are applied. A replica with no local state (not hosted yet, or its broker
restarted: epoch -1) takes any epoch, so a resend still reaches it. A StopReplica (v3)
partition with an older leader epoch is answered FENCED_LEADER_EPOCH.

    core.handle(4, 4, lai(epoch=5))   # partition_errors: NONE (newer than what it held)
    core.handle(4, 4, lai(epoch=5))   # partition_errors: STALE_CONTROLLER_EPOCH (a resend)

Log directories (KIP-113, :mod:`sim.logdirs`): a broker has ``config.log_dirs`` (default one,
``log_dir_template``); a new replica goes where Kafka's LogManager would put it; DescribeLogDirs
answers per directory (an offline one with KAFKA_STORAGE_ERROR), AlterReplicaLogDirs starts a
future log that the copy model moves; :meth:`BrokerCore.fail_log_dir` takes a directory
offline with its replicas, which then answer LeaderAndIsr with KAFKA_STORAGE_ERROR until the
broker restarts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.no_authorizer import create_acls, delete_acls, describe_acls
from protocol.no_groups import describe_groups, list_groups
from protocol.no_transactions import list_transactions
from protocol.scram_users import not_controller
from sim.describeconfigs import describe_configs, static_settings
from sim.effects import Effect, IsrChangeNotification, IsrWrite
from sim.logdirs import FutureLog, LogDirs, future_name_too_long
from sim.metadata import LISTENER, MetadataCache
from sim.replica import Replica, ReplicationModel, Role
from sim.zookeeper_view import ZooKeeperView
from znodes import paths


# What a simulated broker can answer, (min, max) per API key. ApiVersions advertises the part
# of this the codec also supports (sim.versions).
SERVED_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (0, 13),
    # Kafka 3.9's ranges, the last release with these ZooKeeper-mode APIs. Topic ids (LeaderAndIsr
    # v5+, UpdateMetadata v7+) are not kept: a LeaderAndIsr answer names each topic by the id its
    # request gave. KIP-866's IsKRaftController and Type, and v6's LeaderRecoveryState, come only
    # from a KRaft controller migrating a cluster (or an unclean election there); they are read
    # and ignored, as reassignd's controller never sends them.
    ApiKey.LEADER_AND_ISR: (0, 7),
    ApiKey.STOP_REPLICA: (0, 4),
    ApiKey.UPDATE_METADATA: (0, 8),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 5),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    # Answered by the broker's shell, which writes ZooKeeper (sim.alterconfigs, sim.cluster).
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    # Client quotas (KIP-546), which clients also send to any node (znodes.client_quotas).
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # SCRAM credentials (KIP-554), sent to any node too: Describe is answered from ZooKeeper by
    # the shell (znodes.scram_users), Alter NOT_CONTROLLER here, as a ZooKeeper-mode broker that
    # is not the controller answers it (protocol.scram_users).
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # The ACL APIs, answered as a Kafka broker without an authorizer (protocol.no_authorizer).
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
    # Clients send ListGroups and ListTransactions to every node; the simulation coordinates no
    # group and no transaction (protocol.no_groups, protocol.no_transactions).
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
}

UNKNOWN_BROKER_EPOCH = -1  # a control request that does not name the broker epoch
NO_EPOCH = -1  # StopReplica v3: "no leader epoch" ...
EPOCH_DURING_DELETE = -2  # ... and "topic being deleted": both always stop the replica
# ApiVersions v3+ client software name/version (KIP-511).
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


class UnsupportedRequest(Exception):
    """An API key or version this broker does not serve."""


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Per-broker settings; times in seconds of the injected clock."""

    # replica.lag.time.max.ms analogue: a follower not caught up for this long leaves the ISR.
    replica_lag_time_max: float = 10.0
    # ISR change notifications are batched: one goes out once no change came for `quiet`
    # seconds, or once `max_delay` passed since the last one (Kafka: 5 s and 60 s; shorter
    # here so a simulated reassignment completes promptly).
    isr_notification_quiet: float = 0.5
    isr_notification_max_delay: float = 5.0
    log_dir_template: str = "/var/sim/kafka-logs-{broker}"
    # The broker's log.dirs (absolute paths, "{broker}" replaced by its id); empty: the one
    # directory of log_dir_template.
    log_dirs: tuple[str, ...] = ()
    disk_bytes: int = 1 << 40  # DescribeLogDirs v4 total_bytes of each log dir's volume


class BrokerCore:
    def __init__(
        self,
        broker_id: int,
        model: ReplicationModel,
        clock: Callable[[], float],
        config: BrokerConfig | None = None,
        *,
        cluster_id: str | None = None,
        api_versions: dict[int, tuple[int, int]] | None = None,
        view: ZooKeeperView | None = None,
        listener: str = LISTENER,
    ):
        """``listener``: the name of the listener requests come in on (the cluster's one),
        whose peers' endpoints Metadata answers with."""
        self.broker_id = broker_id
        self.listener = listener
        self.model = model
        self.clock = clock
        self.config = config or BrokerConfig()
        self.api_versions = dict(api_versions if api_versions is not None else SERVED_VERSIONS)
        self.cluster_id = cluster_id
        self.broker_epoch = UNKNOWN_BROKER_EPOCH  # czxid of the registration, set by the shell
        # What the simulation reads from ZooKeeper (controllers, registrations, configs);
        # shared by every broker of a cluster, empty and unwatched for a core on its own.
        self.view = view if view is not None else ZooKeeperView()
        names = self.config.log_dirs or (self.config.log_dir_template,)
        self.log_dirs = LogDirs(n.replace("{broker}", str(broker_id)) for n in names)
        self._handlers = {
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.METADATA: self._metadata,
            ApiKey.LEADER_AND_ISR: self._leader_and_isr,
            ApiKey.STOP_REPLICA: self._stop_replica,
            ApiKey.UPDATE_METADATA: self._update_metadata,
            ApiKey.DESCRIBE_LOG_DIRS: self._describe_log_dirs,
            ApiKey.ALTER_REPLICA_LOG_DIRS: self._alter_replica_log_dirs,
            ApiKey.DESCRIBE_CONFIGS: self._describe_configs,
            ApiKey.LIST_GROUPS: list_groups,
            ApiKey.DESCRIBE_GROUPS: describe_groups,
            ApiKey.LIST_TRANSACTIONS: list_transactions,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: not_controller,
            ApiKey.DESCRIBE_ACLS: describe_acls,
            ApiKey.CREATE_ACLS: create_acls,
            ApiKey.DELETE_ACLS: delete_acls,
        }
        self._reset(clock())

    def _reset(self, now: float) -> None:
        self.controller_epoch = 0
        self.metadata = MetadataCache(self.cluster_id, self.listener)
        self._isr_in_flight: dict[tuple[str, int], IsrWrite] = {}
        # Partitions whose ISR this broker changed since its last notification, with the
        # write that landed and its zkVersion (the notification carries them).
        self._isr_changes: dict[tuple[str, int], tuple[IsrWrite, int]] = {}
        self._last_isr_change = float("-inf")
        self._last_propagation = now

    @property
    def log_dir(self) -> str:
        """The first log directory (the only one unless several are configured)."""
        return self.log_dirs.names[0]

    def replicas(self) -> list[Replica]:
        return self.model.hosted_by(self.broker_id)

    # ---- lifecycle -----------------------------------------------------------------------

    def restart(self) -> None:
        """A broker process restart: logs stay, everything held in memory is forgotten."""
        self._reset(self.clock())
        self.log_dirs.reset()  # the directories are opened again (a failed disk was replaced)
        for replica in self.replicas():
            replica.storage_error = False
            replica.go_offline()
            replica.leader_epoch = -1
            replica.controller_epoch = -1
            replica.zk_version = -1
            replica.leader = -1
            replica.isr = replica.replicas = replica.adding = replica.removing = ()

    def adopt(
        self,
        topic: str,
        partition: int,
        *,
        size: float,
        leo: float,
        leader: int,
        leader_epoch: int,
        controller_epoch: int,
        isr: tuple[int, ...],
        replicas: tuple[int, ...],
        zk_version: int,
    ) -> Replica:
        """Host a pre-filled replica in the given state (a topic the simulation creates)."""
        replica = self.model.get(topic, partition, self.broker_id)
        if replica is None:
            log_dir = self._place((topic, partition))
            if log_dir is None:
                raise ValueError(f"broker {self.broker_id}: every log directory is offline")
            replica = self.model.add(Replica(topic, partition, self.broker_id, log_dir=log_dir))
        replica.size, replica.leo = float(size), float(leo)
        self._apply_state(replica, leader, leader_epoch, controller_epoch, isr, replicas, (), (), zk_version)
        return replica

    # ---- requests ------------------------------------------------------------------------

    def handle(self, api_key: int, api_version: int, body: dict) -> dict:
        """The response body for one request; raises UnsupportedRequest if not served."""
        handler = self._handlers.get(api_key)
        lo, hi = self.api_versions.get(api_key, (0, -1))
        if handler is None or not lo <= api_version <= hi:
            raise UnsupportedRequest(f"broker {self.broker_id} does not serve api {api_key} v{api_version}")
        return handler(api_version, body)

    def _api_versions(self, version: int, body: dict) -> dict:
        error = ErrorCode.NONE
        if version >= 3:
            for name in ("client_software_name", "client_software_version"):
                value = body.get(name) or ""
                if not _SOFTWARE.match(value):
                    error = ErrorCode.INVALID_REQUEST
        return {
            "error_code": int(error),
            "api_keys": [
                {"api_key": key, "min_version": lo, "max_version": hi}
                for key, (lo, hi) in sorted(self.api_versions.items())
            ],
            "throttle_time_ms": 0,
        }

    def _metadata(self, version: int, body: dict) -> dict:
        return self.metadata.metadata(version, body, self.view)

    def _describe_configs(self, version: int, body: dict) -> dict:
        static = static_settings(self.broker_id, ",".join(self.log_dirs.names), self.config.replica_lag_time_max)
        return describe_configs(self.broker_id, version, body, self.view, static)

    def _control_error(self, body: dict) -> ErrorCode | None:
        """The error a control request gets for its epochs, if any (Kafka's order)."""
        if body.get("controller_epoch", 0) < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        broker_epoch = body.get("broker_epoch", UNKNOWN_BROKER_EPOCH)
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < self.broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        return None

    def _leader_and_isr(self, version: int, body: dict) -> dict:
        states = list(_leader_and_isr_states(body))
        error = self._control_error(body)
        if error is not None:
            return _by_topic_id(version, body, _partition_errors(error, [(t, s["partition_index"], error) for t, s in states]))
        self.controller_epoch = body["controller_epoch"]
        results = []
        for topic, state in states:
            index = state["partition_index"]
            results.append((topic, index, self._become(topic, index, state)))
        return _by_topic_id(version, body, _partition_errors(ErrorCode.NONE, results))

    def _become(self, topic: str, index: int, state: dict) -> ErrorCode:
        if not _valid_topic(topic):
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        if index < 0:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        replica = self.model.get(topic, index, self.broker_id)
        if replica is not None and replica.storage_error:
            return ErrorCode.KAFKA_STORAGE_ERROR  # Kafka: the partition is offline on this broker
        current_epoch = replica.leader_epoch if replica is not None else NO_EPOCH
        epoch = state["leader_epoch"]
        if current_epoch != NO_EPOCH and epoch <= current_epoch:
            # Kafka: older, or equal ("matches the current leader epoch"): not applied.
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if self.broker_id not in state["replicas"]:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        zk_version, isr = _zk_version(state), tuple(state["isr"])
        if replica is None:
            # Kafka creates an empty log for a partition it is told to host, in the directory
            # its LogManager picks.
            log_dir = self._place((topic, index))
            if log_dir is None:
                return ErrorCode.KAFKA_STORAGE_ERROR
            replica = self.model.add(Replica(topic, index, self.broker_id, log_dir=log_dir))
        self._apply_state(
            replica,
            state["leader"],
            epoch,
            state.get("controller_epoch", self.controller_epoch),
            isr,
            tuple(state["replicas"]),
            tuple(state.get("adding_replicas") or ()),
            tuple(state.get("removing_replicas") or ()),
            zk_version,
        )
        # The controller's state replaces whatever ISR change was pending on the old one (Kafka's
        # makeLeader / makeFollower reset the partition state), refused ones included.
        self._isr_in_flight.pop((topic, index), None)
        return ErrorCode.NONE

    def _apply_state(self, replica, leader, leader_epoch, controller_epoch, isr, replicas, adding, removing, zk_version):
        common = dict(
            leader_epoch=leader_epoch,
            controller_epoch=controller_epoch,
            isr=isr,
            replicas=replicas,
            zk_version=zk_version,
            adding=adding,
            removing=removing,
        )
        if leader == self.broker_id:
            replica.become_leader(now=self.clock(), **common)
        else:
            replica.become_follower(leader=leader, **common)

    def _stop_replica(self, version: int, body: dict) -> dict:
        targets = list(_stop_replica_targets(version, body))
        error = self._control_error(body)
        if error is not None:
            return _partition_errors(error, [(t, p, error) for t, p, _, _ in targets])
        self.controller_epoch = body["controller_epoch"]
        results = []
        for topic, index, epoch, delete in targets:
            replica = self.model.get(topic, index, self.broker_id)
            if replica is not None and epoch not in (NO_EPOCH, EPOCH_DURING_DELETE) and epoch < replica.leader_epoch:
                results.append((topic, index, ErrorCode.FENCED_LEADER_EPOCH))
                continue
            if replica is not None:
                if delete:
                    self.model.remove(topic, index, self.broker_id)
                else:
                    replica.go_offline()
            self._isr_in_flight.pop((topic, index), None)
            results.append((topic, index, ErrorCode.NONE))
        return _partition_errors(ErrorCode.NONE, results)

    def _update_metadata(self, version: int, body: dict) -> dict:
        error = self._control_error(body)
        if error is not None:
            return {"error_code": int(error)}
        self.controller_epoch = body["controller_epoch"]
        self.metadata.update(version, body)
        return {"error_code": int(ErrorCode.NONE)}

    def _describe_log_dirs(self, version: int, body: dict) -> dict:
        requested = body.get("topics")
        wanted = None
        if requested is not None:
            wanted = {(t["topic"], p) for t in requested for p in t.get("partitions") or []}
        # dir -> topic -> partition entries, and dir -> bytes held (current and future logs)
        listed: dict[str, dict[str, list[dict]]] = {name: {} for name in self.log_dirs.names}
        used = dict.fromkeys(self.log_dirs.names, 0)
        for replica in self.replicas():
            logs = [(replica.log_dir, replica.size_bytes, self.model.lag(replica), False)]
            if replica.future is not None:
                f = replica.future
                # Kafka: a future log's lag is how far it is behind the current log's end.
                logs.append((f.log_dir, f.size_bytes, max(0, replica.log_end_offset - f.log_end_offset), True))
            for log_dir, size, lag, is_future in logs:
                if log_dir not in used:
                    continue
                used[log_dir] += size
                if wanted is not None and replica.key not in wanted:
                    continue
                listed[log_dir].setdefault(replica.topic, []).append(
                    {"partition_index": replica.partition, "partition_size": size, "offset_lag": lag,
                     "is_future_key": is_future}
                )
        results = []
        for name in self.log_dirs.names:
            if name in self.log_dirs.offline:
                # Kafka: an offline directory is listed with its error and nothing else.
                results.append({"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR), "log_dir": name, "topics": [],
                                "total_bytes": -1, "usable_bytes": -1, "is_cordoned": False})
                continue
            results.append({
                "error_code": int(ErrorCode.NONE),
                "log_dir": name,
                "topics": [{"name": t, "partitions": ps} for t, ps in sorted(listed[name].items())],
                "total_bytes": self.config.disk_bytes,
                # an unknown volume size (-1) leaves the free space unknown too, not 0
                "usable_bytes": max(0, self.config.disk_bytes - used[name]) if self.config.disk_bytes >= 0 else -1,
                "is_cordoned": False,  # v5 (KIP-1066): a simulated log dir is never cordoned
            })
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.NONE), "results": results}

    # ---- log directories (KIP-113) -----------------------------------------------------------

    def _place(self, key: tuple[str, int]) -> str | None:
        """The directory for a new replica of ``key`` (Kafka's nextLogDirs), None if all offline.

        The broker's logs are counted per directory only when there is a choice to make: with
        one directory online (the default) the count decides nothing, and counting walked all
        of the broker's replicas for every replica a LeaderAndIsr created (most of the sim's
        CPU in a reassignment of thousands of partitions)."""
        counts: dict[str, int] = {}
        dirs = self.log_dirs
        if len(dirs.live) <= 1:
            return dirs.place(key, counts)
        for replica in self.model.hosted(self.broker_id):
            counts[replica.log_dir] = counts.get(replica.log_dir, 0) + 1
            if replica.future is not None:
                counts[replica.future.log_dir] = counts.get(replica.future.log_dir, 0) + 1
        return self.log_dirs.place(key, counts)

    def _alter_replica_log_dirs(self, version: int, body: dict) -> dict:
        # Kafka flattens the request into a map (AlterReplicaLogDirsRequest.partitionDirs): a
        # partition named twice is moved once, to the last path naming it, and answered once.
        wanted: dict[tuple[str, int], str] = {}
        for entry in body.get("dirs") or []:
            for topic in entry.get("topics") or []:
                for index in topic.get("partitions") or []:
                    wanted[(topic["name"], index)] = entry["path"]
        by_topic: dict[str, list[dict]] = {}
        for (name, index), path in wanted.items():
            code = self._move(name, index, path)
            by_topic.setdefault(name, []).append({"partition_index": index, "error_code": int(code)})
        return {"throttle_time_ms": 0,
                "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}

    def _move(self, topic: str, index: int, path: str) -> ErrorCode:
        """One replica's AlterReplicaLogDirs, in the order Kafka's ReplicaManager checks."""
        if future_name_too_long(topic, index):
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        refused = self.log_dirs.check_destination(path)
        if refused is not None:
            return refused
        replica = self.model.get(topic, index, self.broker_id)
        if replica is not None and replica.storage_error:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if replica is not None and replica.future is not None and replica.future.log_dir != path:
            replica.future = None  # a new destination: the running copy stops and is deleted
        if replica is None or (replica.log_dir != path and (replica.future is None or replica.future.log_dir != path)):
            # Remembered for a replica created later (LeaderAndIsr): it starts in ``path``. Not
            # when a log of it is already there (Kafka's LogManager.maybeUpdatePreferredLogDir).
            self.log_dirs.preferred[(topic, index)] = path
        if replica is None or replica.role is Role.NONE:
            return ErrorCode.REPLICA_NOT_AVAILABLE  # not hosted (yet): the caller retries
        if replica.log_dir == path:
            return ErrorCode.NONE
        if self.log_dirs.any_offline:
            # Kafka creates no future log while a directory is offline, so that one partition
            # cannot end with future logs in two directories.
            return ErrorCode.KAFKA_STORAGE_ERROR
        if replica.future is None:
            replica.future = FutureLog(path)
            # Creating the future log uses the preferred directory up (Kafka's getOrCreateLog):
            # a later re-creation of this replica is placed as any new one.
            self.log_dirs.preferred.pop((topic, index), None)
        return ErrorCode.NONE

    def fail_log_dir(self, path: str) -> list[tuple[str, int]]:
        """Take a directory offline as a failed disk does: its replicas stop leading and
        following (storage error), future logs in it are lost. Returns the partitions whose
        current log was there. Raises sim.logdirs.LogDirsError for an unknown directory."""
        self.log_dirs.go_offline(path)
        lost = []
        for replica in self.replicas():
            if replica.future is not None and replica.future.log_dir == path:
                replica.future = None
            if replica.log_dir == path:
                replica.go_offline()
                replica.storage_error = True
                replica.future = None
                self._isr_in_flight.pop(replica.key, None)
                lost.append(replica.key)
        return lost

    # ---- leader duties -------------------------------------------------------------------

    def advance(self, now: float) -> list[Effect]:
        """ISR changes this broker's leader replicas want, and a due ISR change notification.

        A follower joins the ISR once it follows this leader and its log end offset reached
        the high watermark, unless its broker is shutting down (KIP-841); it leaves once it was
        not caught up for ``replica_lag_time_max`` (a stopped broker's replicas stop fetching,
        so they leave that way too). At most one write per partition is in flight.
        """
        writes: list[IsrWrite] = []
        lag_max = self.config.replica_lag_time_max
        never = float("-inf")
        leader_role, in_flight = Role.LEADER, self._isr_in_flight
        for replica in self.model.hosted(self.broker_id):  # every tick: kept to a plain scan
            if replica.role is not leader_role or (replica.topic, replica.partition) in in_flight:
                continue
            caught_up = replica.caught_up
            isr = [b for b in replica.isr if b == self.broker_id or now - caught_up.get(b, never) <= lag_max]
            if self.broker_id not in isr:
                isr.insert(0, self.broker_id)
            high_watermark = None
            for follower_id in replica.replicas:
                if follower_id in isr:
                    continue
                if high_watermark is None:
                    high_watermark = min(self._leo(replica, member) for member in isr)
                follower = self.model.get(replica.topic, replica.partition, follower_id)
                if (
                    follower is not None
                    and self.model.online(follower_id)
                    and follower_id not in self.model.shutting_down
                    and self.model.leader_of(follower) is replica
                    and follower.leo >= high_watermark
                ):
                    isr.append(follower_id)
            if tuple(isr) != replica.isr:
                write = IsrWrite(
                    replica.topic,
                    replica.partition,
                    leader=self.broker_id,
                    leader_epoch=replica.leader_epoch,
                    controller_epoch=replica.controller_epoch,
                    isr=tuple(isr),
                    zk_version=replica.zk_version,
                )
                in_flight[replica.key] = write
                writes.append(write)
        writes.sort(key=_by_partition)  # in partition order, as when the scan went in that order
        effects: list[Effect] = list(writes)
        if self._isr_changes and (
            now - self._last_isr_change >= self.config.isr_notification_quiet
            or now - self._last_propagation >= self.config.isr_notification_max_delay
        ):
            effects.append(IsrChangeNotification(tuple(self._isr_changes[k] for k in sorted(self._isr_changes))))
            self._isr_changes.clear()
            self._last_propagation = now
        return effects

    def _leo(self, leader: Replica, member: int) -> float:
        replica = self.model.get(leader.topic, leader.partition, member)
        return replica.leo if replica is not None else 0.0

    def isr_write_done(self, write: IsrWrite, zk_version: int, now: float) -> None:
        """The state znode now holds ``write`` at ``zk_version`` (ZooKeeper way: this broker
        wrote it), so the next ISR change notification carries it to the controller."""
        self._settle(write)
        replica = self._leading(write.key, write.leader_epoch)
        if replica is not None:
            self._commit_isr(replica, write.isr, zk_version, now)
        self._isr_changes[write.key] = (write, zk_version)
        self._last_isr_change = now

    def isr_altered(self, write: IsrWrite, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int,
                    now: float) -> bool:
        """The controller answered ``write``'s AlterPartition with NONE: the state znode holds
        ``isr`` at ``partition_epoch`` (its zkVersion), written by the controller, which tells the
        other brokers itself, so no notification is queued.

        Adopted only while ``write`` is still the pending change and this broker leads the
        answer's leader epoch with no newer partition epoch (Kafka's
        Partition.handleAlterPartitionUpdate); otherwise the answer is out of date and the
        change stays pending, as a refused one (:meth:`isr_change_refused`). True if adopted."""
        replica = self._leading(write.key, leader_epoch)
        if self._isr_in_flight.get(write.key) != write or replica is None or partition_epoch < replica.zk_version:
            return False
        self._settle(write)
        self._commit_isr(replica, tuple(isr), partition_epoch, now)
        return True

    def isr_pending(self, write: IsrWrite) -> bool:
        """``write`` is still this broker's pending change of its partition, and the broker
        still leads the partition in ``write``'s leader epoch. False once a LeaderAndIsr (a new
        leader epoch), a StopReplica, a failed log directory or a restart ended it: an answer
        to it is then out of date whatever it says (Kafka's Partition drops it), and a change
        queued but not yet sent is not worth sending."""
        return self._isr_in_flight.get(write.key) == write and self._leading(write.key, write.leader_epoch) is not None

    def isr_change_refused(self, write: IsrWrite) -> None:
        """The controller refused ``write`` for a state this broker no longer has right (a
        fenced leader epoch, a stale partition epoch, a new leader, an unknown partition).

        The change stays pending, so no advance proposes another for the partition, until a
        LeaderAndIsr brings the controller's state (:meth:`_become` ends it); Kafka's Partition
        stays in its pending state until the next makeLeader alike. Nothing to undo here: the
        in-flight mark is that pending state."""

    def _leading(self, key: tuple[str, int], leader_epoch: int) -> Replica | None:
        """This broker's replica of ``key`` if it leads it in ``leader_epoch``."""
        replica = self.model.get(key[0], key[1], self.broker_id)
        if replica is not None and replica.role is Role.LEADER and replica.leader_epoch == leader_epoch:
            return replica
        return None

    def _commit_isr(self, replica: Replica, isr: tuple[int, ...], zk_version: int, now: float) -> None:
        """A leader's ISR change has landed: what both ways of making it share."""
        for member in isr:
            if member != self.broker_id and member not in replica.isr:
                replica.caught_up.setdefault(member, now)  # a new member counts as caught up now
        replica.isr = isr
        replica.zk_version = zk_version

    def isr_write_conflict(self, write: IsrWrite, current: dict, zk_version: int) -> IsrWrite | None:
        """The conditional set met a newer znode (``current`` at ``zk_version``).

        Retry only while this broker is still the leader of the same leader epoch, both here
        and in the znode; otherwise give up and wait for the controller's LeaderAndIsr.
        """
        replica = self.model.get(write.topic, write.partition, self.broker_id)
        still_leader = (
            replica is not None
            and replica.role is Role.LEADER
            and replica.leader_epoch == write.leader_epoch
            and current.get("leader") == self.broker_id
            and current.get("leader_epoch") == write.leader_epoch
        )
        if not still_leader:
            self.isr_write_failed(write)
            return None
        retry = IsrWrite(
            write.topic,
            write.partition,
            leader=self.broker_id,
            leader_epoch=write.leader_epoch,
            controller_epoch=current.get("controller_epoch", write.controller_epoch),
            isr=write.isr,
            zk_version=zk_version,
        )
        replica.zk_version = zk_version
        self._isr_in_flight[write.key] = retry
        return retry

    def isr_write_failed(self, write: IsrWrite) -> None:
        """``write`` did not land, or was not attempted: the next advance may propose again."""
        self._settle(write)

    def _settle(self, write: IsrWrite) -> None:
        """``write`` is no longer in flight (unless another change took its place meanwhile)."""
        if self._isr_in_flight.get(write.key) == write:
            del self._isr_in_flight[write.key]

    def notification_failed(self, note: IsrChangeNotification) -> None:
        """Put a batch back so the next advance sends it again."""
        for write, zk_version in note.written:
            known = self._isr_changes.get(write.key)
            if known is None or known[1] < zk_version:
                self._isr_changes[write.key] = (write, zk_version)


def _by_partition(write: IsrWrite) -> tuple[str, int]:
    return write.key


# ---- request layouts ---------------------------------------------------------------------


def _leader_and_isr_states(body: dict):
    """(topic, partition state) from v0-1 (ungrouped) and v2+ (per topic) layouts."""
    for state in body.get("ungrouped_partition_states") or []:
        yield state["topic_name"], state
    for topic in body.get("topic_states") or []:
        for state in topic.get("partition_states") or []:
            yield topic["topic_name"], state


def _valid_topic(name: str) -> bool:
    try:
        paths.validate_topic_name(name)
    except paths.InvalidTopicError:
        return False
    return True


def _zk_version(state: dict) -> int:
    """The state znode's zkVersion; newer Kafka specs call the field PartitionEpoch."""
    if "partition_epoch" in state:
        return state["partition_epoch"]
    return state.get("zk_version", -1)


def _stop_replica_targets(version: int, body: dict):
    """(topic, partition, leader epoch, delete) from every StopReplica layout."""
    delete = bool(body.get("delete_partitions", False))
    for entry in body.get("ungrouped_partitions") or []:  # v0
        yield entry["topic_name"], entry["partition_index"], NO_EPOCH, delete
    for topic in body.get("topics") or []:  # v1-2
        for index in topic.get("partition_indexes") or []:
            yield topic["name"], index, NO_EPOCH, delete
    for topic in body.get("topic_states") or []:  # v3
        for state in topic.get("partition_states") or []:
            yield topic["topic_name"], state["partition_index"], state.get("leader_epoch", NO_EPOCH), bool(
                state.get("delete_partition", False)
            )


def _by_topic_id(version: int, body: dict, response: dict) -> dict:
    """LeaderAndIsr v5+ answers per topic id (KIP-516): the ids the request gave, in its order."""
    if version < 5:
        return response
    ids = {t["topic_name"]: t["topic_id"] for t in body.get("topic_states") or []}
    topics: dict = {}
    for e in response.pop("partition_errors"):
        topics.setdefault(e["topic_name"], []).append({"partition_index": e["partition_index"], "error_code": e["error_code"]})
    response["topics"] = [{"topic_id": ids[name], "partition_errors": errors} for name, errors in topics.items()]
    return response


def _partition_errors(error: ErrorCode, results) -> dict:
    return {
        "error_code": int(error),
        "partition_errors": [
            {"topic_name": t, "partition_index": p, "error_code": int(e)} for t, p, e in results
        ],
    }
