"""Kafka's replication-throttle config keys (docs/DESIGN.md section 3), in one place for everyone
who reads or writes them: the controller, the tools and the simulated brokers.

Topic configs (``/config/topics/T``) name the throttled replicas, as ``"P:B,P:B"`` or ``"*"``;
broker configs (``/config/brokers/N``) carry the rates in bytes/s.

    from znodes.throttle_keys import FOLLOWER_RATE, REPLICA_KEYS

The lists' format itself (parse, format, WILDCARD) is protocol.throttled_replicas'.
"""

from protocol.throttled_replicas import WILDCARD  # noqa: F401 (re-exported beside the keys)

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
REPLICA_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
RATE_KEYS = (LEADER_RATE, FOLLOWER_RATE)
