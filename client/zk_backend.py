"""``--zookeeper`` mode: kafka-reassign's actions as direct znode reads and writes (the way
Kafka's tool worked before KIP-179, with KIP-236's and KIP-240's znodes added).

Every change is ONE ZooKeeper multi-op, with version checks on what it read: the reassignment
znode, the throttle configs and their change notifications land together or not at all, and a
concurrent writer makes it fail cleanly (ConflictError) instead of being overwritten.

Usage::

    backend = await ZkBackend.open("127.0.0.1:2181/kafka")
    state = await backend.cluster_state()
    outcome = await backend.execute(plan.assignments, state, throttle=10_000_000)
    await backend.close()
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol import throttled_replicas
from znodes import paths
from znodes.api import (
    BadVersionError,
    ConnectionLossError,
    Create,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SetData,
    ZkError,
)

from client import zk_formats as fmt
from client.cluster import ClusterAssignment
from client.errors import (
    ClusterDataError,
    ConflictError,
    ConnectionFailedError,
    InputError,
    ReassignError,
)
from client.outcomes import (
    COMPLETE,
    FAILED,
    IN_PROGRESS,
    QUEUED,
    CancelOutcome,
    Described,
    ExecuteOutcome,
    Listed,
    VerifyOutcome,
    tp_name,
)
from znodes.values import TopicPartition


DEFAULT_ZK_TIMEOUT_S = 15.0


def _wrap(exc: ZkError) -> ReassignError:
    if isinstance(exc, (ConnectionLossError, SessionExpiredError)):
        return ConnectionFailedError(f"ZooKeeper: {exc}")
    return ConnectionFailedError(f"ZooKeeper error: {exc}")


def _throttled_replicas(path: str, key: str, value: str | None) -> throttled_replicas.ThrottledReplicas:
    """A list to merge into: one that is not Kafka's format stops the command, nothing written
    (merging around it would drop the operator's entries)."""
    try:
        return throttled_replicas.parse(value)
    except throttled_replicas.ThrottledReplicasError as exc:
        raise ClusterDataError(f"{path}: {key}: {exc}") from None


def _applied_replicas(value: str | None) -> throttled_replicas.ThrottledReplicas:
    """A list as a broker applies it: one that is not Kafka's format throttles nothing, as the
    controller's DescribePartitionReassignments reports it too."""
    try:
        return throttled_replicas.parse(value)
    except throttled_replicas.ThrottledReplicasError:
        return throttled_replicas.NONE


class ZkBackend:
    name = "zookeeper"

    def __init__(self, store, hosts: str | None = None):
        self.store = store
        self.hosts = hosts

    @classmethod
    async def open(cls, hosts: str, timeout: float = DEFAULT_ZK_TIMEOUT_S, zk_security=None) -> "ZkBackend":
        """``zk_security``: a znodes.security.ZkSecurity (digest identity, TLS, secure ACLs)."""
        from znodes.store import connect

        try:
            paths.split_connect_string(hosts)
        except ValueError as exc:
            raise InputError(str(exc), "--zookeeper") from None
        try:
            if zk_security is not None:
                store = await zk_security.connect(hosts, timeout=timeout)
            else:
                store = await connect(hosts, timeout=timeout)
        except NoNodeError as exc:
            raise ConnectionFailedError(f"ZooKeeper: {exc}") from None
        except ValueError as exc:
            raise InputError(str(exc), "--zookeeper") from None
        except ZkError as exc:
            raise ConnectionFailedError(f"cannot connect to ZooKeeper at {hosts}: {exc}") from None
        return cls(store, hosts)

    async def close(self) -> None:
        await self.store.close()

    # ---- reads ----------------------------------------------------------------------------

    async def _get(self, path: str):
        """(data, stat) or None when absent."""
        try:
            return await self.store.get(path)
        except NoNodeError:
            return None
        except ZkError as exc:
            raise _wrap(exc) from None

    async def _children(self, path: str) -> list[str]:
        try:
            return sorted(await self.store.children(path))
        except NoNodeError:
            return []
        except ZkError as exc:
            raise _wrap(exc) from None

    async def brokers(self) -> dict[int, fmt.BrokerRegistration]:
        out: dict[int, fmt.BrokerRegistration] = {}
        for name in await self._children(paths.BROKER_IDS):
            try:
                broker_id = paths.parse_id(name, "broker id")
            except ValueError:
                continue
            got = await self._get(paths.broker(broker_id))
            if got is not None:  # gone between listing and reading: not alive
                out[broker_id] = fmt.parse_broker(paths.broker(broker_id), got[0])
        return out

    async def topics(self, names: Iterable[str] | None = None) -> dict[str, fmt.TopicZnode]:
        wanted = await self._children(paths.TOPICS) if names is None else sorted(set(names))
        out: dict[str, fmt.TopicZnode] = {}
        for name in wanted:
            try:
                path = paths.topic(name)
            except ValueError:
                continue
            got = await self._get(path)
            if got is not None:
                out[name] = fmt.parse_topic(path, got[0])
        return out

    async def reassign_entries(self, path: str = paths.REASSIGN_PARTITIONS):
        """(entries, stat) of /admin/reassign_partitions (or the queue), or (None, None)."""
        got = await self._get(path)
        if got is None:
            return None, None
        return fmt.parse_reassign_partitions(path, got[0]), got[1]

    async def cluster_state(self, topics: Iterable[str] | None = None) -> ClusterAssignment:
        brokers = await self.brokers()
        znodes = await self.topics(topics)
        entries, _ = await self.reassign_entries()
        return ClusterAssignment(
            brokers={b: r.rack for b, r in brokers.items()},
            topics={t: dict(z.partitions) for t, z in znodes.items()},
            in_flight={tp: e.replicas for tp, e in (entries or {}).items()},
        )

    async def _config(self, path: str) -> tuple[dict[str, str] | None, int]:
        """(config, version) or (None, -1) when the znode is absent."""
        got = await self._get(path)
        if got is None:
            return None, -1
        return fmt.parse_config(path, got[0]), got[1].version

    # ---- writes ---------------------------------------------------------------------------

    async def _ensure_parents(self, *parents: str) -> None:
        # Kafka creates these at start-up; a fresh or test cluster may lack them.
        for p in parents:
            try:
                await self.store.ensure_path(p)
            except ZkError as exc:
                raise _wrap(exc) from None

    async def _commit(self, ops: list, what: str) -> None:
        try:
            await self.store.multi(ops)
        except MultiOpError as exc:
            op = ops[exc.index] if 0 <= exc.index < len(ops) else None
            path = getattr(op, "path", "?")
            if isinstance(exc.cause, (NodeExistsError, BadVersionError, NoNodeError)):
                raise ConflictError(
                    f"{what}: {path} changed while this command ran ({type(exc.cause).__name__}); "
                    "nothing was written - re-run the command"
                ) from None
            raise _wrap(exc.cause) from None
        except ZkError as exc:
            # The connection went mid-write: the multi may have been applied.
            error = _wrap(exc)
            error.request_sent = True
            raise error from None

    async def _config_ops(
        self, entity: str, path: str, change, writes: dict[str, str]
    ) -> list:
        """Ops to apply ``change(config) -> config`` to one config znode, plus its change
        notification; [] when nothing changes."""
        config, version = await self._config(path)
        new = change(dict(config or {}))
        if config is not None and new == config:
            return []
        if config is None and not new:
            return []
        data = fmt.encode_config(new)
        writes[path] = data.decode()
        op = Create(path, data) if config is None else SetData(path, data, version)
        return [op, Create(paths.config_change_prefix(), fmt.encode_config_change(entity), sequential=True)]

    async def _throttle_ops(
        self,
        requested: dict[TopicPartition, list[int]],
        current: dict[TopicPartition, list[int]],
        throttle: int,
        merge: bool,
        writes: dict[str, str],
    ) -> tuple[list, list[int]]:
        """Kafka's tool: leaders throttled on the moving partitions' current replicas,
        followers on the replicas being added, the rate on every broker involved."""
        moving = {tp: r for tp, r in requested.items() if r != current.get(tp)}
        by_topic: dict[str, tuple[set, set]] = {}
        brokers: set[int] = set()
        for (topic, p), target in moving.items():
            before = current.get((topic, p), [])
            leaders, followers = by_topic.setdefault(topic, (set(), set()))
            leaders.update((p, b) for b in before)
            followers.update((p, b) for b in target if b not in before)
            brokers.update(before)
            brokers.update(target)
        ops: list = []
        for topic in sorted(by_topic):
            leaders, followers = by_topic[topic]

            def change(config, leaders=leaders, followers=followers, path=paths.topic_config(topic)):
                for key, pairs in ((fmt.LEADER_THROTTLED_REPLICAS, leaders),
                                   (fmt.FOLLOWER_THROTTLED_REPLICAS, followers)):
                    old = _throttled_replicas(path, key, config.get(key)) if merge else throttled_replicas.NONE
                    merged = old.merged(pairs)
                    if not merged.empty:
                        config[key] = str(merged)
                return config

            ops += await self._config_ops(f"topics/{topic}", paths.topic_config(topic), change, writes)
        for b in sorted(brokers):
            def change(config):
                for key in fmt.THROTTLED_RATE_KEYS:
                    config[key] = str(throttle)
                return config

            ops += await self._config_ops(f"brokers/{b}", paths.broker_config(b), change, writes)
        return ops, sorted(brokers)

    async def execute(
        self,
        requested: dict[TopicPartition, list[int]],
        state: ClusterAssignment,
        *,
        throttle: int | None = None,
        additional: bool = False,
        dry_run: bool = False,
        skip_isr_check: bool = False,
        movement_strategies: tuple[str, ...] = (),
    ) -> ExecuteOutcome:
        """Write /admin/reassign_partitions with original_replicas (KIP-236), and the throttle
        configs when ``throttle`` is given, in one multi-op. ``skip_isr_check``: each entry says
        so (reassignd's controller then starts it even at its ISR's floor);
        ``movement_strategies``: each entry carries them (the order its moves start in)."""
        current = state.current(requested)
        outcome = ExecuteOutcome(dict(requested), current, throttle=throttle, dry_run=dry_run)
        entries, stat = await self.reassign_entries()
        new_entries = {tp: fmt.Entry(list(r), list(current[tp]), skip_isr_check, tuple(movement_strategies))
                       for tp, r in requested.items()}
        ops: list = []
        if entries is not None:
            if not additional:
                raise ConflictError(
                    f"There is an existing assignment running ({len(entries)} partition(s) in "
                    f"{paths.REASSIGN_PARTITIONS}). Wait for it (--verify), cancel it (--cancel), "
                    "add partitions that are not moving with --additional, or queue this one "
                    "with --execute-queue."
                )
            overlap = sorted(set(entries) & set(requested))
            if overlap:
                raise ConflictError(
                    "--additional: already being reassigned: "
                    + ", ".join(tp_name(tp) for tp in overlap)
                    + " (use --execute-queue to replace a running reassignment)"
                )
            merged = dict(entries)
            merged.update(new_entries)
            data = fmt.encode_reassign_partitions(merged)
            ops.append(SetData(paths.REASSIGN_PARTITIONS, data, stat.version))
        else:
            data = fmt.encode_reassign_partitions(new_entries)
            ops.append(Create(paths.REASSIGN_PARTITIONS, data))
        outcome.writes[paths.REASSIGN_PARTITIONS] = data.decode()
        if throttle is not None:
            t_ops, outcome.throttled_brokers = await self._throttle_ops(
                requested, current, throttle, merge=entries is not None, writes=outcome.writes
            )
            # Throttles first: a reader never sees the reassignment without its throttle.
            ops = t_ops + ops
        if dry_run:
            return outcome
        await self._ensure_parents(paths.ADMIN, paths.CONFIG_TOPICS, paths.CONFIG_BROKERS, paths.CONFIG_CHANGES)
        await self._commit(ops, "--execute")
        outcome.started = sorted(requested)
        return outcome

    async def update_throttle_rate(self, brokers: Iterable[int], throttle: int, dry_run: bool = False) -> dict[str, str]:
        """Kafka's way to change the rate of a running reassignment: re-run --execute with a
        new --throttle. Sets both rates on ``brokers``."""
        writes: dict[str, str] = {}
        ops: list = []
        for b in sorted(set(brokers)):
            def change(config):
                for key in fmt.THROTTLED_RATE_KEYS:
                    config[key] = str(throttle)
                return config

            ops += await self._config_ops(f"brokers/{b}", paths.broker_config(b), change, writes)
        if ops and not dry_run:
            await self._ensure_parents(paths.CONFIG_BROKERS, paths.CONFIG_CHANGES)
            await self._commit(ops, "--throttle")
        return writes

    async def verify(
        self, requested: dict[TopicPartition, list[int]], state: ClusterAssignment, *, dry_run: bool = False,
        preserve_throttles: bool = False,
    ) -> VerifyOutcome:
        """Each partition: in progress (still in /admin/reassign_partitions), complete
        (current == requested) or failed. When none is in progress, remove the throttles as
        Kafka's tool did: the replica lists of the plan's topics, the rates of every broker
        (not with ``preserve_throttles``: Kafka's --preserve-throttles)."""
        statuses: dict[TopicPartition, str] = {}
        current: dict[TopicPartition, list[int] | None] = {}
        for tp, target in requested.items():
            now = state.topics.get(tp[0], {}).get(tp[1])
            current[tp] = now
            if tp in state.in_flight:
                statuses[tp] = IN_PROGRESS
            elif now == target:
                statuses[tp] = COMPLETE
            else:
                statuses[tp] = FAILED
        outcome = VerifyOutcome(statuses, current, dict(requested))
        if any(s == IN_PROGRESS for s in statuses.values()):
            outcome.throttle_note = "Throttles are kept until every reassignment in the file completes."
            return outcome
        if preserve_throttles:
            outcome.throttle_note = "Throttles are kept (--preserve-throttles)."
            return outcome
        writes: dict[str, str] = {}
        ops: list = []
        topics_cleared: list[str] = []
        brokers_cleared: list[int] = []

        def drop(keys):
            def change(config):
                for k in keys:
                    config.pop(k, None)
                return config
            return change

        for topic in sorted({t for t, _ in requested}):
            got = await self._config_ops(f"topics/{topic}", paths.topic_config(topic),
                                         drop(fmt.THROTTLED_REPLICA_KEYS), writes)
            if got:
                topics_cleared.append(topic)
                ops += got
        broker_ids = set(state.brokers)
        for name in await self._children(paths.CONFIG_BROKERS):
            if name.isdigit():
                broker_ids.add(int(name))
        for b in sorted(broker_ids):
            got = await self._config_ops(f"brokers/{b}", paths.broker_config(b),
                                         drop(fmt.THROTTLED_RATE_KEYS), writes)
            if got:
                brokers_cleared.append(b)
                ops += got
        outcome.throttle_removed = {"topics": topics_cleared, "brokers": brokers_cleared}
        if ops and not dry_run:
            await self._commit(ops, "--verify")
        return outcome

    async def cancel(self, partitions: list[TopicPartition] | None, *, dry_run: bool = False) -> CancelOutcome:
        """KIP-236: create /admin/cancel_reassignment_in_progress; the controller rolls every
        pending reassignment back to its original replicas."""
        if partitions is not None:
            raise InputError(
                "with --zookeeper, --cancel rolls back every pending reassignment (KIP-236); "
                "to cancel only the partitions in a file use --bootstrap-server",
                "--reassignment-json-file",
            )
        outcome = CancelOutcome(dry_run=dry_run)
        entries, _ = await self.reassign_entries()
        if not entries:
            outcome.nothing_pending = True
            return outcome
        if await self._get(paths.CANCEL_REASSIGNMENT) is not None:
            raise ConflictError(f"a cancellation is already in progress ({paths.CANCEL_REASSIGNMENT} exists)")
        for tp, e in sorted(entries.items()):
            outcome.pending[tp] = (e.replicas, e.original_replicas)
            if e.original_replicas is None:
                outcome.unsafe.append(tp)
        if not dry_run:
            await self._ensure_parents(paths.ADMIN)
            await self._commit([Create(paths.CANCEL_REASSIGNMENT, b"")], "--cancel")
            outcome.submitted = True
        return outcome

    async def queue(
        self, requested: dict[TopicPartition, list[int]], state: ClusterAssignment, *, dry_run: bool = False
    ) -> ExecuteOutcome:
        """KIP-236: write the batch to /admin/reassign_partitions_queue; refused while a queued
        batch is still waiting. The controller adds original_replicas when it takes an entry
        (a partition still moving has no settled assignment to record yet)."""
        current = state.current(requested)
        outcome = ExecuteOutcome(dict(requested), current, dry_run=dry_run, queued=True)
        if await self._get(paths.REASSIGN_QUEUE) is not None:
            raise ConflictError(
                f"a queued batch is still waiting ({paths.REASSIGN_QUEUE} exists); "
                "check it with --verify-queue and retry once the controller has taken it"
            )
        data = fmt.encode_reassign_partitions({tp: fmt.Entry(list(r)) for tp, r in requested.items()})
        outcome.writes[paths.REASSIGN_QUEUE] = data.decode()
        if not dry_run:
            await self._ensure_parents(paths.ADMIN)
            await self._commit([Create(paths.REASSIGN_QUEUE, data)], "--execute-queue")
            outcome.started = sorted(requested)
        return outcome

    async def verify_queue(self, requested: dict[TopicPartition, list[int]], state: ClusterAssignment) -> VerifyOutcome:
        queued, _ = await self.reassign_entries(paths.REASSIGN_QUEUE)
        outcome = await self.verify(requested, state, dry_run=True)
        outcome.throttle_removed = None
        outcome.throttle_note = None
        for tp in requested:
            if queued and tp in queued:
                outcome.statuses[tp] = QUEUED
        return outcome

    # ---- KIP-240 ---------------------------------------------------------------------------

    async def list_reassignments(self) -> list[Listed]:
        """Running reassignments (/admin/reassignments/T/P, id = czxid), then entries of
        /admin/reassign_partitions the controller has not started yet ("pending")."""
        out: list[Listed] = []
        seen: set[TopicPartition] = set()
        for topic in await self._children(paths.REASSIGNMENTS):
            try:
                topic_path = paths.reassignment_topic(topic)
            except ValueError:
                continue
            for name in await self._children(topic_path):
                try:
                    p = paths.parse_id(name, "partition")
                except ValueError:
                    continue
                path = paths.reassignment(topic, p)
                got = await self._get(path)
                if got is None:
                    continue
                record = fmt.parse_reassignment_record(path, got[0])
                out.append(Listed(topic, p, got[1].czxid, record.replicas, record.original_replicas))
                seen.add((topic, p))
        entries, _ = await self.reassign_entries()
        for tp, e in sorted((entries or {}).items()):
            if tp not in seen:
                out.append(Listed(tp[0], tp[1], None, e.replicas, e.original_replicas, state="pending"))
        return out

    async def describe_reassignments(self) -> list[Described]:
        out: list[Described] = []
        topic_configs: dict[str, dict[str, str]] = {}
        broker_configs: dict[int, dict[str, str]] = {}

        async def broker_rate(b: int, key: str) -> int | None:
            if b not in broker_configs:
                broker_configs[b] = (await self._config(paths.broker_config(b)))[0] or {}
            value = broker_configs[b].get(key)
            return int(value) if value is not None and value.isdigit() else None

        for item in await self.list_reassignments():
            if item.reassignment_id is None:
                continue
            path = paths.reassignment(item.topic, item.partition)
            got = await self._get(path)
            if got is None:
                continue
            state = await self._get(paths.partition_state(item.topic, item.partition))
            leader = fmt.parse_partition_leader(paths.partition_state(item.topic, item.partition), state[0]) if state else -1
            if item.topic not in topic_configs:
                topic_configs[item.topic] = (await self._config(paths.topic_config(item.topic)))[0] or {}
            config = topic_configs[item.topic]
            leaders = _applied_replicas(config.get(fmt.LEADER_THROTTLED_REPLICAS))
            followers = _applied_replicas(config.get(fmt.FOLLOWER_THROTTLED_REPLICAS))
            p = item.partition
            leader_throttle = await broker_rate(leader, fmt.LEADER_THROTTLED_RATE) if (p, leader) in leaders else None
            new = [b for b in (item.replicas or []) if b not in (item.original_replicas or [])]
            follower_throttles = {
                b: (await broker_rate(b, fmt.FOLLOWER_THROTTLED_RATE) if (p, b) in followers else None)
                for b in new
            }
            out.append(Described(item, got[1].ctime, leader, leader_throttle, new, follower_throttles))
        return out
