"""controller.core.topic_policy through plan_topics / plan_partitions (pure), and the admin
handler's incremental cluster counts (equal to a full recount after any change)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from controller.core.placement import cluster_counts
from controller.core.topic_creation import (
    CreationView,
    PartitionsRequest,
    Planned,
    TopicRequest,
    plan_partitions,
    plan_topics,
)
from controller.core.topic_policy import TopicPolicy
from controller.core.placement_counts import PlacementCounts
from protocol.errors import ErrorCode
from znodes.values import Assignment

BROKERS = {1: None, 2: None, 3: None, 4: None}


def _plan(policy, *requests):
    return plan_topics(list(requests), CreationView(frozenset({"old"}), brokers=BROKERS, policy=policy))


def test_each_rule_refuses_with_policy_violation_after_kafkas_own_checks():
    policy = TopicPolicy(min_replication_factor=2, max_replication_factor=3, max_partitions=4, name_pattern=r"a\..+")
    ok, name, low, high, many, given = _plan(
        policy, TopicRequest("a.ok", 4, 2), TopicRequest("b.x", 1, 2), TopicRequest("a.low", 1, 1),
        TopicRequest("a.high", 1, 4), TopicRequest("a.many", 5, 2), TopicRequest("a.given", assignments=((0, (1,)),)))
    assert isinstance(ok, Planned)
    for refused, rule in ((name, "name_pattern"), (low, "min_replication"), (high, "max_replication"),
                          (many, "max_partitions"), (given, "min_replication")):
        assert refused.code == ErrorCode.POLICY_VIOLATION and rule in refused.message
    # Kafka's own errors come first.
    (bad,) = _plan(policy, TopicRequest("a.zero", 0, 2))
    assert bad.code == ErrorCode.INVALID_PARTITIONS
    (taken,) = _plan(policy, TopicRequest("old", 1, 2))
    assert taken.code == ErrorCode.TOPIC_ALREADY_EXISTS


def test_a_refused_topic_does_not_count_for_the_next_placement():
    policy = TopicPolicy(max_partitions=4)
    _, after = _plan(policy, TopicRequest("big", 40, 3), TopicRequest("t", 4, 1))
    (alone,) = _plan(TopicPolicy(), TopicRequest("t", 4, 1))
    assert after == alone


def test_create_partitions_is_held_to_the_partition_maximum_only():
    view = CreationView(frozenset(), brokers=BROKERS, policy=TopicPolicy(max_partitions=3, min_replication_factor=3))
    current = {0: (1, 2)}  # RF 2 < the minimum: not CreatePartitions' to judge
    assert plan_partitions(PartitionsRequest("t", 4), current, view, moving=False).code == ErrorCode.POLICY_VIOLATION
    assert sorted(plan_partitions(PartitionsRequest("t", 3), current, view, moving=False)) == [1, 2]


def test_incremental_counts_equal_a_full_recount():
    creations = PlacementCounts()
    state = SimpleNamespace(topic_versions={}, topic_partitions={}, assignments={}, generation=0)
    rnd = random.Random(7)
    for step in range(400):
        names = list(state.topic_versions)
        roll = rnd.random()
        if roll < 0.4 or not names:
            name, parts = f"t{step}", tuple(range(rnd.randint(1, 5)))
            state.topic_versions[name], state.topic_partitions[name] = 0, parts
            for p in parts:
                state.assignments[(name, p)] = Assignment(tuple(rnd.sample(range(1, 8), 3)))
        elif roll < 0.7:  # a move rewrites the topic znode: new version
            name = rnd.choice(names)
            state.assignments[(name, rnd.choice(state.topic_partitions[name]))] = Assignment(tuple(rnd.sample(range(1, 8), 2)))
            state.topic_versions[name] += 1
        elif roll < 0.85:  # deleted
            name = rnd.choice(names)
            for p in state.topic_partitions.pop(name):
                del state.assignments[(name, p)]
            del state.topic_versions[name]
        else:  # deleted and created again with the same version
            name = rnd.choice(names)
            parts = tuple(range(rnd.randint(1, 3)))
            for p in state.topic_partitions[name]:
                del state.assignments[(name, p)]
            state.topic_partitions[name] = parts
            for p in parts:
                state.assignments[(name, p)] = Assignment(tuple(rnd.sample(range(1, 8), 3)))
        state.generation += 1
        assert creations.counts(state) == cluster_counts(a.replicas for a in state.assignments.values()), step
    state.assignments[("hand", 0)] = Assignment((9, 1))  # no topic version: counted by the full recount
    state.generation += 1
    assert creations.counts(state) == cluster_counts(a.replicas for a in state.assignments.values())
