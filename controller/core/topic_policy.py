"""The controller's topic policy: what Kafka's ``create.topic.policy.class.name`` plug-in does
(KIP-108), as settings instead of a Java class. Pure.

A request that passes every other check (controller.core.topic_creation) is refused with
POLICY_VIOLATION (44) for that topic, and nothing of it is written, when it breaks a rule;
``validate_only`` reports the same. Rules, each off when unset (settings of
controller.core.config):

 1. ``topic_policy_min_replication_factor``: a new topic's replication factor is at least this.
 2. ``topic_policy_max_replication_factor``: ... at most this.
 3. ``topic_policy_max_partitions``: a topic has at most this many partitions, at creation and
    after CreatePartitions (the new total).
 4. ``topic_policy_name_pattern``: a new topic's whole name matches this regular expression
    (Python ``re.fullmatch``), e.g. ``(orders|payments)\\..+`` for a required prefix.

CreatePartitions is held to rule 3 only: the replication factor does not change, and an
existing topic's name is not the request's to judge. Kafka's message shape is kept: the
rule, the limit and the value.

    policy = TopicPolicy(max_partitions=100)
    policy.check_new_topic("orders", partitions=200, replication_factor=3)
    # -> "topic 'orders': 200 partitions is more than the policy's maximum of 100 (topic_policy_max_partitions)"
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TopicPolicy:
    min_replication_factor: int | None = None
    max_replication_factor: int | None = None
    max_partitions: int | None = None
    name_pattern: str | None = None

    @classmethod
    def from_config(cls, config) -> TopicPolicy:
        """The policy of a ControllerConfig (or anything with its fields; missing ones: off)."""
        return cls(
            min_replication_factor=getattr(config, "topic_policy_min_replication_factor", None),
            max_replication_factor=getattr(config, "topic_policy_max_replication_factor", None),
            max_partitions=getattr(config, "topic_policy_max_partitions", None),
            name_pattern=getattr(config, "topic_policy_name_pattern", None),
        )

    @property
    def enabled(self) -> bool:
        return any(v is not None for v in (self.min_replication_factor, self.max_replication_factor,
                                           self.max_partitions, self.name_pattern))

    def check_new_topic(self, name: str, partitions: int, replication_factor: int) -> str | None:
        """Rules 1-4 for a topic about to be created: the violation's message, or None."""
        if self.name_pattern is not None and re.fullmatch(self.name_pattern, name) is None:
            return (f"topic {name!r}: the name does not match the policy's pattern {self.name_pattern!r} "
                    "(topic_policy_name_pattern)")
        if self.min_replication_factor is not None and replication_factor < self.min_replication_factor:
            return (f"topic {name!r}: replication factor {replication_factor} is less than the policy's minimum of "
                    f"{self.min_replication_factor} (topic_policy_min_replication_factor)")
        if self.max_replication_factor is not None and replication_factor > self.max_replication_factor:
            return (f"topic {name!r}: replication factor {replication_factor} is more than the policy's maximum of "
                    f"{self.max_replication_factor} (topic_policy_max_replication_factor)")
        return self.check_partition_count(name, partitions)

    def check_partition_count(self, name: str, partitions: int) -> str | None:
        """Rule 3 (CreateTopics and CreatePartitions): the message, or None."""
        if self.max_partitions is not None and partitions > self.max_partitions:
            return (f"topic {name!r}: {partitions} partitions is more than the policy's maximum of "
                    f"{self.max_partitions} (topic_policy_max_partitions)")
        return None


NO_POLICY = TopicPolicy()
