"""The topic configs a simulated broker applies to its logs, from ZooKeeper's dynamic configs
(issue 23 item 3). Pure: :mod:`sim.configwatch` feeds it the config maps it reads.

A topic config's value on broker B is Kafka's: the topic's own (``/config/topics/T``), else its
broker synonym in ``/config/brokers/B``, then ``/config/brokers/<default>``, else Kafka's
default (``protocol.kafka_configs.topic_value``: ``retention.ms`` falls back to
``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``). A value a tool stored
that Kafka would refuse is not applied (the next level down is) and is logged once.

What the simulation does with them:

* ``retention.bytes``, ``retention.ms``, ``segment.bytes``, ``cleanup.policy``: a leader's log
  is cut to its retention, whole segments at a time, the active one never
  (:meth:`Retention.deletable`); followers drop the same prefix.
* ``min.insync.replicas``: reported per leader replica (the control channel's ``status``:
  ``under_min_isr``), for the tools that reason about ISR safety.

    configs = LogConfigs()
    configs.update_topic("orders", {"retention.bytes": "1000", "segment.bytes": "100"})
    configs.retention("orders", 1).deletable(1250, produce_bytes_per_s=0, now_s=60)   # -> 200
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from protocol.kafka_configs import TOPIC_CONFIGS, parse, problem, topic_value

log = logging.getLogger(__name__)

DEFAULT_ENTITY = "<default>"  # Kafka's entity name for the cluster-wide broker default


@dataclass(frozen=True, slots=True)
class Retention:
    """What bounds one log: bytes kept (None: no limit), time kept in ms (None: no limit), the
    segment size deletions are made of; ``delete`` False for a compact-only topic."""

    bytes: int | None
    ms: int | None
    segment_bytes: int
    delete: bool

    def deletable(self, size: float, produce_bytes_per_s: float, now_s: float) -> float:
        """Bytes to delete from the start of a log of ``size`` bytes at simulated time ``now_s``:
        the closed segments wholly beyond the bound. Kafka's rules: by size, while
        ``size - segment >= retention.bytes``; by time, a segment whose newest record is older
        than retention.ms. Records here come at a steady rate after the pre-filled bytes,
        written at time 0: so nothing is old before retention.ms has passed, and after that
        the newest ``rate x retention.ms`` bytes are young."""
        if not self.delete or size <= 0:
            return 0.0
        bounds = []
        if self.bytes is not None:
            bounds.append(self.bytes)
        if self.ms is not None and now_s * 1000 >= self.ms:
            bounds.append(produce_bytes_per_s * self.ms / 1000)
        if not bounds:
            return 0.0
        bound = min(bounds)
        if size <= bound:
            return 0.0
        segment = self.segment_bytes
        closed = max(0, math.ceil(size / segment) - 1)  # the last segment is the active one
        return min(closed, math.floor((size - bound) / segment)) * segment


NO_RETENTION = Retention(None, None, 1, False)
# The configs that can make a log lose bytes before Kafka's default retention.ms passes.
_RETENTION_KEYS = {"retention.bytes", "retention.ms"} | {
    name for key in ("retention.bytes", "retention.ms") for name, _ in TOPIC_CONFIGS[key].synonyms}
_DEFAULT_RETENTION_MS = int(TOPIC_CONFIGS["retention.ms"].default)


class LogConfigs:
    """Every topic's and broker's dynamic config, and what follows from them per (topic, broker)."""

    def __init__(self) -> None:
        self._topics: dict[str, dict[str, str]] = {}
        self._brokers: dict[str, dict[str, str]] = {}
        self._cache: dict[tuple[str, int], tuple[Retention, int]] = {}
        self._warned: set[tuple[str, str, str]] = set()
        self._configured = False  # some config sets a retention (topic or broker level)

    def update_topic(self, name: str, config: Mapping[str, str] | None) -> None:
        self._set(self._topics, name, config)

    def update_broker(self, name: str, config: Mapping[str, str] | None) -> None:
        self._set(self._brokers, name, config)

    def _set(self, where: dict, name: str, config: Mapping[str, str] | None) -> None:
        if config:
            where[name] = {k: v for k, v in config.items() if isinstance(v, str)}
        else:
            where.pop(name, None)
        self._cache.clear()
        self._configured = any(k in _RETENTION_KEYS for maps in (self._topics, self._brokers)
                               for config in maps.values() for k in config)

    def may_delete(self, now_s: float) -> bool:
        """False when no log can lose a byte at ``now_s``: no retention is configured anywhere
        and Kafka's default retention.ms has not passed (the copy model's fast path)."""
        return self._configured or now_s * 1000 >= _DEFAULT_RETENTION_MS

    def value(self, topic: str, broker: int, name: str):
        """A topic config's value on ``broker``, parsed. A bad value is skipped for the next
        level down (the broker defaults, then Kafka's default), logged once."""
        layers = [self._brokers.get(str(broker), {}), self._brokers.get(DEFAULT_ENTITY, {})]
        d = TOPIC_CONFIGS[name]
        own = self._topics.get(topic, {})
        for candidate in (own, {}, None):
            text = d.default if candidate is None else topic_value(name, candidate, layers)
            broken = problem(name, text, TOPIC_CONFIGS) if text is not None else "no value"
            if broken is None or candidate is None:
                return parse(d.type, text)[0]
            if (topic, name, text) not in self._warned:
                self._warned.add((topic, name, text))
                log.error("topic %s: not applying %s=%r (%s)", topic, name, text, broken)

    def _derived(self, topic: str, broker: int) -> tuple[Retention, int]:
        key = (topic, broker)
        got = self._cache.get(key)
        if got is None:
            by, ms = self.value(topic, broker, "retention.bytes"), self.value(topic, broker, "retention.ms")
            retention = Retention(by if by >= 0 else None, ms if ms >= 0 else None,
                                  self.value(topic, broker, "segment.bytes"),
                                  "delete" in self.value(topic, broker, "cleanup.policy"))
            got = self._cache[key] = (retention, self.value(topic, broker, "min.insync.replicas"))
        return got

    def retention(self, topic: str, broker: int) -> Retention:
        return self._derived(topic, broker)[0]

    def min_insync_replicas(self, topic: str, broker: int) -> int:
        return self._derived(topic, broker)[1]
