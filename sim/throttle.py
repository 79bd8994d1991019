"""Replication throttles as a broker sees them (KIP-73 configs, driven by KIP-179).

Topic configs name the throttled replicas, broker configs the shared rates:

* ``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas`` in
  ``/config/topics/T``: ``"P:B,P:B"`` (partition:broker pairs) or ``"*"`` (every replica);
* ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate`` in
  ``/config/brokers/N`` (or the cluster default ``/config/brokers/<default>``), bytes/s.

A follower's copy of partition P on broker F is capped by F's follower rate when (P, F) is in
the topic's follower list; a leader serving P from broker L is capped by L's leader rate when
(P, L) is in the leader list. Pure: callers feed it the config dicts they read from ZooKeeper.

    >>> t = Throttles()
    >>> t.update_topic("orders", {"follower.replication.throttled.replicas": "0:3,1:3"})
    >>> t.update_broker("3", {"follower.replication.throttled.rate": "1000000"})
    >>> t.follower_throttled("orders", 0, 3), t.follower_rate(3)
    (True, 1000000.0)
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import throttled_replicas
from protocol.throttled_replicas import NONE, ThrottledReplicas
from znodes.throttle_keys import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS

DEFAULT_BROKER = "<default>"  # Kafka's entity name for the cluster-wide broker default
# KIP-113: the broker-wide cap on copying future logs between its own log dirs (a dynamic
# broker config, read like the two rates above; unset: unlimited).
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


class ThrottleConfigError(ValueError):
    """A throttle config value that Kafka would reject; the previous value stays in force."""


def parse_rate(value: str) -> float:
    """A throttled rate in bytes/s: a non-negative integer string (0 stops throttled copies)."""
    text = value.strip() if isinstance(value, str) else None
    if not text or not text.isdigit():
        raise ThrottleConfigError(f"throttled rate must be a non-negative integer (bytes/s), got {value!r}")
    return float(int(text))


@dataclass(frozen=True, slots=True)
class _TopicThrottles:
    leader: ThrottledReplicas = NONE
    follower: ThrottledReplicas = NONE


@dataclass(frozen=True, slots=True)
class _BrokerRates:
    leader: float | None = None
    follower: float | None = None
    alter_log_dirs: float | None = None


class Throttles:
    """The throttle configs currently in force, by topic and by broker entity."""

    def __init__(self) -> None:
        self._topics: dict[str, _TopicThrottles] = {}
        self._brokers: dict[str, _BrokerRates] = {}

    def update_topic(self, topic: str, config: dict[str, str] | None) -> None:
        """Replace one topic's throttle lists from its whole config (None: config deleted).

        Raises ThrottleConfigError, changing nothing, when a value is malformed.
        """
        config = config or {}
        try:
            entry = _TopicThrottles(
                leader=throttled_replicas.parse(config.get(LEADER_REPLICAS)),
                follower=throttled_replicas.parse(config.get(FOLLOWER_REPLICAS)),
            )
        except throttled_replicas.ThrottledReplicasError as exc:
            raise ThrottleConfigError(str(exc)) from exc
        if entry == _TopicThrottles():
            self._topics.pop(topic, None)
        else:
            self._topics[topic] = entry

    def update_broker(self, entity: str, config: dict[str, str] | None) -> None:
        """Replace one broker entity's rates (``"3"`` or ``"<default>"``); None: deleted."""
        config = config or {}
        leader = config.get(LEADER_RATE)
        follower = config.get(FOLLOWER_RATE)
        alter = config.get(ALTER_LOG_DIRS_RATE)
        entry = _BrokerRates(
            leader=None if leader is None else parse_rate(leader),
            follower=None if follower is None else parse_rate(follower),
            alter_log_dirs=None if alter is None else parse_rate(alter),
        )
        if entry == _BrokerRates():
            self._brokers.pop(entity, None)
        else:
            self._brokers[entity] = entry

    def leader_throttled(self, topic: str, partition: int, leader: int) -> bool:
        entry = self._topics.get(topic)
        return entry is not None and (partition, leader) in entry.leader

    def follower_throttled(self, topic: str, partition: int, follower: int) -> bool:
        entry = self._topics.get(topic)
        return entry is not None and (partition, follower) in entry.follower

    def leader_rate(self, broker: int) -> float | None:
        """Bytes/s a broker may send as leader to throttled followers; None: unlimited."""
        return self._rate(broker, "leader")

    def follower_rate(self, broker: int) -> float | None:
        """Bytes/s a broker may fetch for throttled replicas; None: unlimited."""
        return self._rate(broker, "follower")

    def alter_log_dirs_rate(self, broker: int) -> float | None:
        """Bytes/s a broker may copy into its future logs (KIP-113); None: unlimited."""
        return self._rate(broker, "alter_log_dirs")

    def _rate(self, broker: int, side: str) -> float | None:
        own = self._brokers.get(str(broker))
        if own is not None and getattr(own, side) is not None:
            return getattr(own, side)
        default = self._brokers.get(DEFAULT_BROKER)
        return None if default is None else getattr(default, side)

    def snapshot(self) -> dict:
        """What is in force, for status output and tests."""
        return {
            "topics": {
                t: {"leader": str(e.leader), "follower": str(e.follower)} for t, e in sorted(self._topics.items())
            },
            "brokers": {b: {"leader": r.leader, "follower": r.follower, "alter_log_dirs": r.alter_log_dirs}
                        for b, r in sorted(self._brokers.items())},
        }
