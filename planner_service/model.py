"""The planner service's cluster model: what ZooKeeper and the brokers said, kept in memory.

Pure: no I/O, no asyncio. The service's shells (:mod:`planner_service.zk_feed`, the sizes poll
of :mod:`planner_service.service`) read znodes and DescribeLogDirs answers and apply them here;
the model turns them into the planner's input (a validated snapshot, :mod:`spark_jobs.snapshot`'s
schema) and into the ``/load`` view. Every change that can alter a plan bumps ``version``, which
is what a cached proposal is keyed by.

Usage::

    m = ClusterModel()
    m.set_brokers({1: Broker(1, "h", 9092, "r1")}, now=0.0)
    m.set_topic("orders", {0: Assignment((1, 2))})
    m.set_state("orders", 0, LeaderIsr(1, 0, 1, (1, 2), 0))
    m.set_sizes({1: {("orders", 0): 1024}})
    snap = m.snapshot()          # plan with spark_jobs.api.plan(snap, ..., assume_valid=True)
    m.load()                     # per broker: replicas, leaders, bytes, rack, disk use

A snapshot is assembled from per-topic entries cached until that topic, one of its partition
states or one of its replica sizes changes, so a warm model with a million partitions costs
list building, not a million dicts, per proposal.
"""

from __future__ import annotations

from spark_jobs import capacity as capacities
from znodes.values import Assignment, Broker, LeaderIsr

SNAPSHOT_VERSION = 1


class ClusterModel:
    def __init__(self) -> None:
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, dict[int, Assignment]] = {}
        self.states: dict[str, dict[int, LeaderIsr]] = {}
        # topic -> partition -> broker -> bytes, from the last DescribeLogDirs poll
        self.sizes: dict[str, dict[int, dict[int, int]]] = {}
        self.size_warnings: list[str] = []
        # broker -> its disk, DescribeLogDirs v4 total_bytes (KIP-827), from the last poll
        self.disk_bytes: dict[int, int] = {}
        # the capacity file (--capacity) and threshold plans are held to, and what the last
        # proposal leaves on each broker (bytes), for /load's before and after
        self.capacity: capacities.CapacitySpec | None = None
        self.disk_threshold = capacities.DEFAULT_THRESHOLD
        self.planned_bytes: dict[int, int] = {}
        self.request_pending = False  # /admin/reassign_partitions exists
        self.records = 0  # KIP-240 records under /admin/reassignments
        # broker id -> when it left /brokers/ids (the clock the caller passes); kept while
        # the broker is gone, for self-healing's grace period
        self.departed: dict[int, float] = {}
        self.version = 0
        # Bumped only when the brokers or a topic's replicas change (not sizes, not leaders):
        # a reviewed proposal executes only while this is what it was planned at.
        self.layout_version = 0
        # topic -> how many times its znode changed (or it went): an execution tells from it
        # that something happened to a wave's partitions between two of its polls.
        self.topic_changes: dict[str, int] = {}
        self.changed_at: float | None = None
        self.source: str | None = None
        self._entries: dict[str, dict] = {}  # topic -> its cached snapshot entry
        # Whole-cluster tallies kept as topics change (a million partitions take seconds to
        # scan, and /state asks for them on every request): replicas per broker (all, and
        # targets only, without removing ones), each topic's moving partitions, partitions.
        self._held: dict[int, int] = {}
        self._targets: dict[int, int] = {}
        self._moving: dict[str, list[int]] = {}
        self._n = 0

    # ---- applying reads -------------------------------------------------------------------

    def _bump(self, now: float | None) -> None:
        self.version += 1
        if now is not None:
            self.changed_at = now

    def set_brokers(self, brokers: dict[int, Broker], now: float) -> bool:
        """The registered brokers (``/brokers/ids``) as read now; True when they changed."""
        if brokers == self.brokers:
            return False
        for b in self.brokers:
            if b not in brokers:
                self.departed.setdefault(b, now)
        for b in brokers:
            self.departed.pop(b, None)
        self.brokers = dict(sorted(brokers.items()))
        self.layout_version += 1
        self._bump(now)
        return True

    def set_topic(self, name: str, assignments: dict[int, Assignment] | None, now: float | None = None) -> bool:
        """A topic znode's partitions, or None when the topic is gone."""
        if assignments is None:
            if name not in self.topics:
                return False
            self._tally(name, -1)
            del self.topics[name]
            self.states.pop(name, None)
            self._entries.pop(name, None)
            self.layout_version += 1
            self.topic_changes[name] = self.topic_changes.get(name, 0) + 1
            self._bump(now)
            return True
        if self.topics.get(name) == assignments:
            return False
        if name in self.topics:
            self._tally(name, -1)
        self.topics[name] = dict(sorted(assignments.items()))
        self._tally(name, +1)
        states = self.states.get(name)
        if states:
            for p in [p for p in states if p not in assignments]:
                del states[p]
        self._entries.pop(name, None)
        self.layout_version += 1
        self.topic_changes[name] = self.topic_changes.get(name, 0) + 1
        self._bump(now)
        return True

    def _tally(self, name: str, sign: int) -> None:
        parts = self.topics[name]
        held, targets = self._held, self._targets
        for a in parts.values():
            for r in a.replicas:
                held[r] = held.get(r, 0) + sign
                if r not in a.removing:
                    targets[r] = targets.get(r, 0) + sign
        self._n += sign * len(parts)
        if sign > 0:
            moving = [p for p, a in parts.items() if a.moving]
            if moving:
                self._moving[name] = moving
        else:
            self._moving.pop(name, None)

    def set_state(self, topic: str, partition: int, state: LeaderIsr | None, now: float | None = None) -> bool:
        if topic not in self.topics or partition not in self.topics[topic]:
            return False
        states = self.states.setdefault(topic, {})
        old = states.get(partition)
        # The zkVersion alone changing changes nothing a plan reads.
        if (old is None) == (state is None) and (old is None or (old.leader, old.isr) == (state.leader, state.isr)):
            if state is not None:
                states[partition] = state
            return False
        if state is None:
            states.pop(partition, None)
        else:
            states[partition] = state
        self._entries.pop(topic, None)
        self._bump(now)
        return True

    def set_sizes(self, by_broker: dict[int, dict[tuple[str, int], int]], warnings: list[str] | None = None,
                  now: float | None = None) -> bool:
        """One DescribeLogDirs poll: broker -> (topic, partition) -> bytes. Brokers missing from
        it keep no sizes (an unreachable broker's replicas become size-unknown)."""
        new: dict[str, dict[int, dict[int, int]]] = {}
        disks = {b: d for b in by_broker if (d := getattr(by_broker[b], "disk_bytes", None)) is not None}
        disks_changed = disks != self.disk_bytes
        self.disk_bytes = disks
        for b in sorted(by_broker):
            for (t, p), size in by_broker[b].items():
                new.setdefault(t, {}).setdefault(p, {})[b] = size
        self.size_warnings = list(warnings or [])
        changed = [t for t in set(new) | set(self.sizes) if new.get(t) != self.sizes.get(t)]
        if not changed and not disks_changed:
            return False
        self.sizes = new
        for t in changed:
            self._entries.pop(t, None)
        self._bump(now)
        return True

    def set_request_pending(self, pending: bool) -> bool:
        if pending == self.request_pending:
            return False
        self.request_pending = pending
        return True  # not a plan input: no version bump

    def set_records(self, count: int) -> bool:
        if count == self.records:
            return False
        self.records = count
        return True

    # ---- views ----------------------------------------------------------------------------

    @property
    def n_partitions(self) -> int:
        return self._n

    def moving_partitions(self) -> list[tuple[str, int]]:
        """Partitions whose topic znode lists adding or removing replicas (Kafka 2.4+)."""
        return [(t, p) for t in sorted(self._moving) for p in self._moving[t]]

    def reassignment_running(self) -> bool:
        return self.request_pending or self.records > 0 or bool(self._moving)

    def _holders(self) -> set[int]:
        return {b for b, c in self._held.items() if c > 0}

    def reached(self, targets: dict[tuple[str, int], list[int]]) -> bool:
        """Every partition of ``targets`` holds exactly its target replicas, not moving."""
        for (t, p), want in targets.items():
            a = self.topics.get(t, {}).get(p)
            if a is None or a.moving or list(a.replicas) != list(want):
                return False
        return True

    def replicas_of(self, tp: tuple[str, int]) -> tuple[list[int] | None, bool]:
        """A partition's replicas as its topic znode lists them (None: no such partition) and
        whether it is moving (adding or removing replicas)."""
        a = self.topics.get(tp[0], {}).get(tp[1])
        return (None, False) if a is None else (list(a.replicas), a.moving)

    def bytes_to_copy(self, targets: dict) -> int | None:
        """Bytes the brokers still have to copy to put each partition on its target: for every
        replica a target adds, the leader's size less what that replica holds already (a copy
        under way counts what is left of it). None while a size it needs is unknown (sizes come
        from the DescribeLogDirs poll)."""
        total = 0
        for (t, p), want in targets.items():
            a = self.topics.get(t, {}).get(p)
            sizes = self.sizes.get(t, {}).get(p, {})
            st = self.states.get(t, {}).get(p)
            if a is None or st is None:
                return None
            adding = [b for b in want if b not in a.replicas or a.moving]
            if not adding:
                continue
            full = sizes.get(st.leader)
            if full is None:
                return None
            total += sum(max(0, full - sizes.get(b, 0)) for b in adding)
        return total

    def gone_holders(self) -> list[int]:
        """Brokers that hold replicas but are not registered."""
        return sorted(self._holders() - set(self.brokers))

    def _entry(self, name: str) -> dict:
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        states = self.states.get(name, {})
        sizes = self.sizes.get(name, {})
        parts = []
        for p, a in self.topics[name].items():
            target = [r for r in a.replicas if r not in a.removing]
            st = states.get(p)
            leader = st.leader if st is not None and st.leader in target else -1
            by_b = sizes.get(p)
            parts.append({
                "partition": p,
                "replicas": target,
                "leader": leader,
                "isr": list(st.isr) if st is not None else None,
                "reassigning": a.moving or len(target) != len(a.replicas),
                "sizes": [by_b.get(r) for r in target] if by_b else None,
            })
        entry = {"name": name, "partitions": parts}
        self._entries[name] = entry
        return entry

    def snapshot(self, taken_at_ms: int | None = None) -> dict:
        """The planner's input, in the shape :func:`spark_jobs.snapshot.validate` returns."""
        brokers = {
            b: {"id": b, "host": r.host, "port": r.port if r.port >= 0 else None, "rack": r.rack, "alive": True}
            for b, r in self.brokers.items()
        }
        topics = [self._entry(t) for t in sorted(self.topics)]
        for r in self._holders():
            if r not in brokers:
                brokers[r] = {"id": r, "host": None, "port": None, "rack": None, "alive": False}
        for b, disk in self.disk_bytes.items():
            if b in brokers:
                brokers[b]["disk_bytes"] = disk
        return {
            "version": SNAPSHOT_VERSION,
            "cluster": {"source": self.source, "taken_at_ms": taken_at_ms, "warnings": list(self.size_warnings)},
            "brokers": [brokers[b] for b in sorted(brokers)],
            "topics": topics,
        }

    def set_planned(self, per_broker: list[dict]) -> None:
        """A proposal's report.per_broker: what it leaves on each broker (bytes_after)."""
        self.planned_bytes = {int(b["broker"]): int(b["bytes_after"]) for b in per_broker}

    def load(self) -> list[dict]:
        """Per broker (registered, or holding replicas): replicas, leaders, bytes, rack; its disk
        capacity (capacity file entry, else DescribeLogDirs total_bytes, else the file's default),
        the threshold's limit, use now and after the last proposal (None where unknown)."""
        rows: dict[int, dict] = {}

        def row(b: int) -> dict:
            if b not in rows:
                reg = self.brokers.get(b)
                rows[b] = {"broker": b, "alive": reg is not None, "rack": reg.rack if reg else None,
                           "replicas": 0, "leaders": 0, "bytes": 0, "bytes_unknown": 0}
            return rows[b]

        for b in self.brokers:
            row(b)
        for t, parts in self.topics.items():
            states = self.states.get(t, {})
            sizes = self.sizes.get(t, {})
            for p, a in parts.items():
                st = states.get(p)
                by_b = sizes.get(p, {})
                for r in a.replicas:
                    x = row(r)
                    x["replicas"] += 1
                    size = by_b.get(r)
                    if size is None:
                        x["bytes_unknown"] += 1
                    else:
                        x["bytes"] += size
                if st is not None and st.leader >= 0 and st.leader in a.replicas:
                    row(st.leader)["leaders"] += 1
        ids = sorted(rows)
        caps, sources = capacities.resolve(ids, self.disk_bytes, self.capacity)
        for b, cap, source in zip(ids, caps.tolist(), sources):
            x = rows[b]
            planned = self.planned_bytes.get(b)
            known = cap > 0
            x["disk_capacity"] = cap if known else None
            x["disk_capacity_source"] = source
            x["disk_limit"] = int(cap * self.disk_threshold) if known else None
            x["disk_use"] = round(x["bytes"] / cap, 4) if known else None
            x["bytes_planned"] = planned
            x["disk_use_planned"] = round(planned / cap, 4) if known and planned is not None else None
        return [rows[b] for b in ids]

    def counts_fair(self) -> bool:
        """Every registered broker holds R or R+1 replicas and no unregistered one holds any
        (R = replicas // registered brokers): the KIP-6 goal the planner keeps."""
        if not self.brokers:
            return True
        counts = self._targets
        if any(b not in self.brokers for b, c in counts.items() if c):
            return False
        cnt = {b: counts.get(b, 0) for b in self.brokers}
        low = sum(cnt.values()) // len(cnt)
        return all(c in (low, low + 1) for c in cnt.values())
