"""The planner service's ZooKeeper feed: keeps a :class:`~planner_service.model.ClusterModel`
current from watches, and reconnects forever.

One full read (brokers, topics, partition states through znodes.cluster_reader, the reader the
controller and the snapshot share; ``/admin/reassign_partitions`` and ``/admin/reassignments``)
fills the model; watch events then re-read only what they name.
Above ``state_watch_limit`` partitions, partition states carry no watch: they are read in bulk
(multiRead) when their topic changes and at every sizes poll (``read_states_bulk``). After a
suspension the model is served as it was and everything is read again on reconnection (kazoo
drops every watch); after an expired session a new one is opened. The feed writes nothing.

Usage::

    m = ClusterModel()
    feed = ZkFeed("127.0.0.1:2181", m, on_change=changed.set, security=ZkSecurity.from_file(path))
    task = asyncio.create_task(feed.run())
    feed.ready                       # a full read has completed at least once
    await feed.controllers()         # every controller instance's admin listener, host:port
    await feed.broker_endpoints("SASL_SSL")   # broker id -> its endpoint of that protocol
"""

from __future__ import annotations

import asyncio
import logging
import time

from planner_service.clock import now_ms
from planner_service.model import ClusterModel

log = logging.getLogger("reassignd.planner")

STATE_READ_CHUNK = 2000
# Above this many partitions, partition states are read in bulk (multiRead) when their topic
# changes and at every sizes poll instead of each carrying a watch: a million watches cost a
# million round trips at every resync, and a plan reads no leader or ISR (only sizes use them).
DEFAULT_STATE_WATCH_LIMIT = 100_000
RECONNECT_MAX_S = 5.0


def endpoint_of(path: str, data: bytes, protocol: str) -> tuple[str, int] | None:
    """(host, port) of a broker registration's first endpoint whose security protocol is
    ``protocol`` (Kafka's ``endpoints``, named through ``listener_security_protocol_map``), or
    None when it has none or the registration cannot be read."""
    from znodes.errors import ZnodeFormatError
    from znodes.models import BrokerRegistration

    try:
        registration = BrokerRegistration.from_bytes(path, data)
    except ZnodeFormatError:
        return None
    return next(((e.host, e.port) for e in registration.parsed_endpoints() if e.security_protocol == protocol), None)


class ZkFeed:
    """Keeps a :class:`ClusterModel` current from ZooKeeper watches; reconnects forever."""

    def __init__(self, hosts: str, m: ClusterModel, on_change, session_timeout: float = 10.0,
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
        self.last_sync_ms = now_ms()
        self.on_change()

    async def _read_brokers(self) -> None:
        from znodes import cluster_reader

        brokers, bad = await cluster_reader.brokers(self.store, watch=True)
        for u in bad:
            log.warning("ignoring %s", u)
        if self.model.set_brokers(brokers, time.time()):
            self.on_change()

    async def _read_topic_list(self) -> list[str]:
        from znodes import cluster_reader

        names, bad = await cluster_reader.topic_names(self.store, watch=True)
        for u in bad:
            log.warning("ignoring topic %s", u)
        return names

    async def _read_topic(self, name: str, states: bool = True) -> tuple[str, list[int]]:
        """Read (and watch) a topic znode; its new partitions' states too unless ``states`` is
        false, in which case they are returned for the caller to read."""
        from znodes import cluster_reader

        found, bad = await cluster_reader.topics(self.store, [name], watch=True)
        for u in bad:
            log.warning("ignoring %s", u)
        if name not in found:  # unreadable: the model keeps what it had
            return name, []
        read = found[name]
        if read is None:
            if self.model.set_topic(name, None, time.time()):
                self.on_change()
            return name, []
        parts = read.partitions
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
        from znodes import cluster_reader

        if keys is None:
            keys = [(t, p) for t, parts in list(self.model.topics.items()) for p in parts]
        changed = False
        for i in range(0, len(keys), 50_000):
            chunk = keys[i : i + 50_000]
            states, bad = await cluster_reader.partition_states(self.store, chunk)
            for u in bad:
                log.warning("ignoring %s", u)
            now = time.time()
            for t, p in chunk:  # absent or unreadable: no state
                changed |= self.model.set_state(t, p, states.get((t, p)), now)
        if changed:
            self.on_change()

    async def _read_state(self, topic: str, partition: int) -> None:
        from znodes import cluster_reader

        # absent: watched, so the feed hears when the controller creates it
        states, bad = await cluster_reader.partition_states(self.store, [(topic, partition)], watch=True)
        for u in bad:
            log.warning("ignoring %s", u)
        if self.model.set_state(topic, partition, states.get((topic, partition)), time.time()):
            self.on_change()

    async def confirm_running(self) -> None:
        """Read again what says a reassignment runs (both admin znodes, the topics the model
        lists as moving): their watches may trail ZooKeeper a moment, as right after a
        reassignment ends, and a refusal to execute must not rest on such a read. Not
        connected: the model stays as it is."""
        from znodes import paths
        from znodes.api import ConnectionLossError

        if not self.connected or self.store is None:
            return
        try:
            await self._read_admin(paths.REASSIGN_PARTITIONS)
            await self._read_admin(paths.REASSIGNMENTS)
            for t in sorted({t for t, _ in self.model.moving_partitions()}):
                await self._read_topic(t)
        except AttributeError:  # the session ended meanwhile and run() dropped its store
            if self.store is not None:
                raise
            raise ConnectionLossError("the ZooKeeper session ended while reading") from None

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
        read: set[tuple[str, int]] = set()
        for t in sorted(topics):
            _, fresh = await self._read_topic(t)
            read.update((t, p) for p in fresh)
        # Every state event is read again (re-arming its one-shot watch) unless its topic's read
        # just read that state: a controller writes a move's topic znode and state in one
        # multi-op, so their events often come in one batch, and skipping the state because its
        # topic changed lost the watch, leaving the model on that leader and ISR for good.
        for t, p in sorted(states - read):
            if not self.bulk_states:
                await self._read_state(t, p)
        for path in sorted(admin):
            await self._read_admin(path)

    async def controllers(self) -> list[str]:
        """Every controller instance's admin listener, ``host:port``, from ZooKeeper."""
        from znodes import paths
        from znodes.errors import ZnodeFormatError
        from znodes.payloads import decode_listener
        from znodes.reads import children_or_empty, get_many
        from znodes.secure_paths import CONTROLLERS as base

        if self.store is None:
            return []
        names = sorted(await children_or_empty(self.store, base))
        out = []
        for name, read in zip(names, await get_many(self.store, [paths.join(base, n) for n in names])):
            if read is None:
                continue
            try:
                host, port = decode_listener(paths.join(base, name), read[0])
            except ZnodeFormatError as e:
                log.warning("ignoring a controller registration: %s", e)  # the others still serve
                continue
            out.append(paths.host_port(host, port))  # an IPv6 host bracketed, as bootstraps are
        return out

    async def broker_endpoints(self, protocol: str) -> dict[int, tuple[str, int]]:
        """broker id -> (host, port) of its registered endpoint of security protocol ``protocol``,
        for the model's brokers that have one (read now, without a watch; the model keeps only
        each broker's PLAINTEXT endpoint)."""
        from znodes import paths
        from znodes.reads import get_many

        if self.store is None:
            return {}
        ids = sorted(self.model.brokers)
        out = {}
        for b, read in zip(ids, await get_many(self.store, [paths.broker(b) for b in ids])):
            if read is not None:
                endpoint = endpoint_of(paths.broker(b), read[0], protocol)
                if endpoint is not None:
                    out[b] = endpoint
        return out
