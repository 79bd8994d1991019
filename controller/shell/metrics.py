"""Prometheus metrics of one controller process, in its own CollectorRegistry.

Counted where the I/O happens, never inside the engine: ZooKeeper calls through
:class:`MeteredStore`, admin requests through :class:`MeteredHandler`, reassignment outcomes by
door from each engine step's results (controller.shell.journal), cancellations through
:meth:`Metrics.observe_step` (the ActiveController's ``on_step``), session changes through
:class:`MeteredInbox`. Gauges of what the active
controller holds (pending and running moves, slots per broker, admin connections) are read
at scrape time from the live objects, so they cost nothing between scrapes.

    metrics = Metrics()                               # a registry per process (tests run several)
    store = MeteredStore(store, metrics)
    handler = MeteredHandler(handler, metrics)
    metrics.watch(role=role, listeners=listeners)      # the scrape-time gauges
    text = metrics.scrape()                           # Prometheus text format

Names follow Prometheus conventions (``reassignd_`` prefix, ``_total`` counters, ``_seconds``,
``_bytes``); the README's "Deploying as a sidecar" section lists them.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import Counter as Tally
from itertools import repeat
from operator import attrgetter
from time import perf_counter
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.utils import floatToGoString

from controller.core import engine
from controller.shell.inbox import Inbox
from controller.shell.journal import DOORS, RECOVERED
from controller.shell.listener import WrappedHandler
from znodes.api import FencedError, SessionEvent

if TYPE_CHECKING:
    from controller.core.engine import Step
    from controller.shell.listener import AdminListener
    from controller.shell.role import Role

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# ZooKeeper calls take ~0.1 ms (a cached local read) to seconds (a 1 MiB multi on a loaded
# ensemble).
ZK_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Ops per multi: the epoch check alone up to BatchedWriter's 1,000-op chunks.
MULTI_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)
ADMIN_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0)
_READS = ("get", "exists", "children", "get_many")
_WRITES = ("create", "set", "delete", "ensure_path")


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        r = self.registry = registry or CollectorRegistry()
        self.active = Gauge("reassignd_controller_active", "1 while this instance is the active controller", registry=r)
        self.epoch = Gauge("reassignd_controller_epoch", "controller epoch this instance last won (0: never)", registry=r)
        self.elections = Counter("reassignd_elections", "elections this instance won", registry=r)
        self.resignations = Counter(
            "reassignd_resignations", "times this instance stopped being active, by reason", ["reason"], registry=r
        )
        self.outcomes = Counter(
            "reassignd_reassignments",
            "partition reassignments ended, by outcome (completed, cancelled, dropped; skipped: the target was already the "
            "assignment; refused: an invalid target) and door (controller.shell.journal)",
            ["outcome", "door"], registry=r,
        )
        self.cancels = Counter(
            "reassignd_cancellations",
            "partitions named by a cancellation, by door (znode: KIP-236 znode, api: admin API) and result (accepted, skipped)",
            ["door", "result"],
            registry=r,
        )
        # ZooKeeper calls are the hot path: counted in plain loop-local tallies (every call is
        # on the event loop thread, so no lock) and exported at scrape time (_ZkCollector).
        self.zk = ZkTally()
        r.register(_ZkCollector(self.zk))
        self.fence_failures = Counter("reassignd_fence_failures", "fenced writes refused: another controller holds a newer epoch", registry=r)
        self.zk_errors = Counter("reassignd_zookeeper_errors", "ZooKeeper calls that failed, by call", ["op"], registry=r)
        self.sessions = Counter(
            "reassignd_zookeeper_session_events", "ZooKeeper session state changes, by new state", ["state"], registry=r
        )
        self.admin_seconds = Histogram(
            "reassignd_admin_request_duration_seconds", "admin requests handled and their latency, by API",
            ["api_key"], buckets=ADMIN_BUCKETS, registry=r,
        )
        self.admin_requests = Counter(
            "reassignd_admin_requests", "admin requests, by API key, version and error code", ["api_key", "api_version", "error_code"],
            registry=r,
        )
        self.loop_lag = Gauge("reassignd_event_loop_lag_seconds", "latest measured event loop lag", registry=r)
        # Sampled while active (controller.shell.copy_progress).
        self.throttled = Gauge(
            "reassignd_throttles_in_force",
            "replication throttles the controller will remove, by kind (topic: throttled replicas, broker: throttled rates), "
            "as listed in the KIP-179 removal znodes",
            ["kind"], registry=r,
        )
        self.bytes_remaining = Gauge(
            "reassignd_broker_bytes_remaining", "bytes the broker's new replicas still have to copy", ["broker"], registry=r
        )
        self.copy_rate = Gauge(
            "reassignd_broker_copy_rate_bytes_per_second", "how fast the broker's new replicas grew between the last two samples",
            ["broker"], registry=r,
        )
        for state in ("CONNECTED", "SUSPENDED", "LOST"):
            self.sessions.labels(state)

    def scrape(self) -> bytes:
        return generate_latest(self.registry)

    def watch(self, *, role: Role | None = None, listener: AdminListener | None = None,
              listeners: list[AdminListener] | None = None) -> None:
        """Gauges read from ``role`` (the active controller's state) and every admin listener
        (``listeners``, or the one ``listener``) at scrape time, labelled by listener name."""
        if listeners is None:
            listeners = [listener] if listener is not None else []
        self.registry.register(_LiveCollector(role, list(listeners)))

    # ---- events the shell reports -----------------------------------------------------------

    def elected(self, epoch: int) -> None:
        self.elections.inc()
        self.epoch.set(epoch)
        self.active.set(1)

    def resigned(self, reason: str) -> None:
        self.active.set(0)
        self.resignations.labels(_reason_label(reason)).inc()

    def observe_step(self, step: Step) -> None:
        """One engine step's cancellations (the ActiveController's ``on_step``; its moves'
        outcomes are counted by door in controller.shell.journal)."""
        for outcome in step.cancels:
            for code, _ in outcome.results.values():
                self.cancels.labels(outcome.source, "accepted" if code == 0 else "skipped").inc()


def _reason_label(reason: str) -> str:
    """A resignation reason (ActiveController.run's) as a small label set."""
    for prefix, label in (("fenced", "fenced"), ("session lost", "session_lost"), ("/controller", "controller_deleted")):
        if reason.startswith(prefix):
            return label
    return reason if reason in ("shutdown",) else "other"


_TP = attrgetter("tp")


class _LiveCollector:
    def __init__(self, role: Role | None, listeners: list[AdminListener]):
        self.role = role
        self.listeners = listeners

    def collect(self):
        pending = GaugeMetricFamily("reassignd_reassignments_pending", "reassignments accepted and waiting for a slot, by door",
                                    labels=["door"])
        running = GaugeMetricFamily("reassignd_reassignments_running", "reassignments holding a slot (started or starting), "
                                    "by door", labels=["door"])
        slots = GaugeMetricFamily(
            "reassignd_broker_move_slots_in_use", "concurrent moves per broker, by direction (incoming, outgoing)",
            labels=["broker", "direction"],
        )
        caps = GaugeMetricFamily("reassignd_broker_move_slots", "per-broker cap on concurrent moves, by direction", labels=["direction"])
        isr_waits = GaugeMetricFamily(
            "reassignd_moves_waiting_for_isr",
            "pending moves held back because their partition's ISR is at or under its min.insync.replicas "
            "(or a replica is offline, with isr_wait_offline_replicas): controller.core.isr_health",
        )
        shutting = GaugeMetricFamily(
            "reassignd_brokers_shutting_down",
            "brokers in a controlled shutdown: asked (ControlledShutdown) and still registered; "
            "no leader is elected onto them (controller.core.controlled_shutdown)",
        )
        active = self.role.active if self.role is not None else None
        state = active.state if active is not None else None
        shutting.add_metric([], len(state.shutting_down) if state is not None else 0)
        if state is not None:
            journal = getattr(active, "journal", None)
            doors = journal.doors if journal is not None else {}
            # Counted in C over the moves holding slots (10,000 at a scrape, every few seconds):
            # one Python call per move, none per count.
            holding = (move for move in state.tasks.values() if move.holds_slot)
            held = Tally(map(doors.get, map(_TP, holding), repeat(RECOVERED)))
            # The brokers each move holds its slots on, as the scheduler counts them (a LOADING
            # move's are its target against the assignment: it has no AR or RR yet).
            _, incoming, outgoing = engine.slot_usage(state)
            waiting = Tally(map(doors.get, state.pending, repeat(RECOVERED)))
            isr_waits.add_metric([], sum(1 for tp in state.pending if state.tasks[tp].waiting is not None))
            for d in DOORS:
                pending.add_metric([d], waiting[d])
                running.add_metric([d], held[d])
            for broker in sorted(set(incoming) | set(outgoing) | set(state.brokers)):
                slots.add_metric([str(broker), "incoming"], incoming.get(broker, 0))
                slots.add_metric([str(broker), "outgoing"], outgoing.get(broker, 0))
            caps.add_metric(["incoming"], active.config.max_incoming_per_broker)
            caps.add_metric(["outgoing"], active.config.max_outgoing_per_broker)
        else:
            for d in DOORS:
                pending.add_metric([d], 0)
                running.add_metric([d], 0)
            isr_waits.add_metric([], 0)
        yield from (pending, running, slots, caps, isr_waits, shutting)
        if self.listeners:
            # One sample per listener (--listen may name several), labelled by its name.
            families = (
                (GaugeMetricFamily, "reassignd_admin_connections_open", "admin listener connections open, by listener",
                 lambda lis: lis.connections),
                (CounterMetricFamily, "reassignd_admin_connections_accepted", "admin connections accepted, by listener",
                 lambda lis: lis.stats.accepted),
                (CounterMetricFamily, "reassignd_admin_connections_refused",
                 "admin connections refused over the connection limits, by listener", lambda lis: lis.stats.refused),
                # Requests with bytes after their body, which are ignored as Kafka ignores them
                # (docs/DESIGN.md section 5.2; librdkafka sends some).
                (CounterMetricFamily, "reassignd_admin_requests_left_over",
                 "admin requests with bytes after their body (ignored), by listener", lambda lis: lis.stats.left_over_requests),
                (CounterMetricFamily, "reassignd_admin_request_bytes_left_over",
                 "bytes after admin request bodies (ignored), by listener", lambda lis: lis.stats.left_over_bytes),
            )
            for kind, name, doc, value in families:
                family = kind(name, doc, labels=["listener"])
                for lis in self.listeners:
                    family.add_metric([listener_label(lis)], value(lis))
                yield family


def listener_label(listener) -> str:
    """The ``listener`` label: the listener's name (``--listen NAME://HOST:PORT``, PLAINTEXT
    without a name), else its bound address for a listener built without one."""
    name = getattr(listener, "name", None)
    return name if name else f"{listener.host}:{listener.port}"


class ZkTally:
    """Latency histogram per call, op counts and multi sizes, as plain numbers (cheap to add to)."""

    def __init__(self) -> None:
        self.calls: dict[str, list] = {op: [[0] * (len(ZK_BUCKETS) + 1), 0.0] for op in (*_READS, *_WRITES, "multi", "fenced_multi")}
        self.ops = {"read": 0, "write": 0}
        self.multi = [[0] * (len(MULTI_BUCKETS) + 1), 0.0]

    def observe(self, op: str, seconds: float) -> None:
        entry = self.calls[op]
        entry[0][bisect_left(ZK_BUCKETS, seconds)] += 1
        entry[1] += seconds

    def multi_size(self, n: int) -> None:
        self.multi[0][bisect_left(MULTI_BUCKETS, n)] += 1
        self.multi[1] += n


def _histogram(family: HistogramMetricFamily, labels: list[str], bounds, tally) -> None:
    counts, total = tally
    cumulative, acc = [], 0
    for bound, n in zip((*bounds, float("inf")), counts):
        acc += n
        cumulative.append((floatToGoString(bound), acc))
    family.add_metric(labels, cumulative, total)


class _ZkCollector:
    def __init__(self, tally: ZkTally):
        self.tally = tally

    def collect(self):
        seconds = HistogramMetricFamily(
            "reassignd_zookeeper_request_duration_seconds", "ZooKeeper calls and their latency, by call", labels=["op"]
        )
        for op, tally in self.tally.calls.items():
            _histogram(seconds, [op], ZK_BUCKETS, tally)
        yield seconds
        ops = CounterMetricFamily("reassignd_zookeeper_ops", "ZooKeeper operations (each op of a multi counts)", labels=["kind"])
        for kind, n in self.tally.ops.items():
            ops.add_metric([kind], n)
        yield ops
        multi = HistogramMetricFamily("reassignd_zookeeper_multi_ops", "operations per multi-op sent (flush sizes)")
        _histogram(multi, [], MULTI_BUCKETS, self.tally.multi)
        yield multi


class MeteredStore:
    """A Store that times every call (everything else passes through)."""

    def __init__(self, inner, metrics: Metrics):
        self._inner = inner
        self._m = metrics
        self._zk = metrics.zk

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def _timed(self, op: str, call, n_read: int = 0, n_write: int = 0):
        began = perf_counter()
        try:
            result = await call
        except FencedError:
            self._m.fence_failures.inc()
            self._m.zk_errors.labels(op).inc()
            raise
        except BaseException as e:
            if not isinstance(e, asyncio.CancelledError):
                self._m.zk_errors.labels(op).inc()
            raise
        finally:
            self._zk.observe(op, perf_counter() - began)
        ops = self._zk.ops
        if n_read:
            ops["read"] += n_read
        if n_write:
            ops["write"] += n_write
        return result

    def get(self, path, watch=False):
        return self._timed("get", self._inner.get(path, watch=watch), n_read=1)

    def exists(self, path, watch=False):
        return self._timed("exists", self._inner.exists(path, watch=watch), n_read=1)

    def children(self, path, watch=False):
        return self._timed("children", self._inner.children(path, watch=watch), n_read=1)

    def get_many(self, path_list, *a, **kw):
        return self._timed("get_many", self._inner.get_many(path_list, *a, **kw), n_read=len(path_list))

    def create(self, *a, **kw):
        return self._timed("create", self._inner.create(*a, **kw), n_write=1)

    def set(self, *a, **kw):
        return self._timed("set", self._inner.set(*a, **kw), n_write=1)

    def delete(self, *a, **kw):
        return self._timed("delete", self._inner.delete(*a, **kw), n_write=1)

    def ensure_path(self, path):
        return self._timed("ensure_path", self._inner.ensure_path(path), n_write=1)

    def multi(self, ops):
        self._zk.multi_size(len(ops))
        return self._timed("multi", self._inner.multi(ops), n_write=len(ops))

    def fenced_multi(self, ops, epoch_zkversion):
        self._zk.multi_size(len(ops) + 1)  # the epoch check travels in the same multi
        return self._timed("fenced_multi", self._inner.fenced_multi(ops, epoch_zkversion), n_write=len(ops) + 1)


class MeteredInbox(Inbox):
    """The controller's inbox, counting session state changes and telling readiness whether
    the session is connected."""

    def __init__(self, store, metrics: Metrics):
        self._metrics = metrics
        super().__init__(store)

    @property
    def connected(self) -> bool:
        return self._connected.is_set() and not self.lost

    def note(self, item) -> None:
        if isinstance(item, SessionEvent):
            self._metrics.sessions.labels(item.state.name).inc()
        super().note(item)


class MeteredHandler(WrappedHandler):
    """An admin RequestHandler that counts and times each request by API key, version and
    error code (the top-level one, else the first non-zero one of the answer's entries)."""

    def __init__(self, inner, metrics: Metrics):
        super().__init__(inner)
        self._m = metrics

    async def handle(self, header: dict, body: dict):
        began = time.perf_counter()
        key, version = header["request_api_key"], header["request_api_version"]
        response = await self.inner.handle(header, body)
        self._m.admin_seconds.labels(str(key)).observe(time.perf_counter() - began)
        code = "closed" if response is None else str(error_code(response))
        self._m.admin_requests.labels(str(key), str(version), code).inc()
        return response


def error_code(response) -> int:
    """The answer's top-level error code, else the first non-zero one found in its entries."""
    if isinstance(response, dict):
        if "error_code" in response:
            return int(response["error_code"] or 0)
        for value in response.values():
            if isinstance(value, list):
                for item in value:
                    code = error_code(item)
                    if code:
                        return code
    return 0
