"""Automatic topic creation on a simulated broker, as a ZooKeeper-mode Kafka broker does it with
``auto.create.topics.enable`` (Kafka's default is on; the simulation's is off unless
``reassignd sim --auto-create-topics``): a Metadata request that allows it (v4+'s
``allow_auto_topic_creation``, always before v4) naming a legal topic that does not exist makes
the broker write the topic itself - ``/config/topics/T`` and ``/brokers/topics/T`` in one multi,
no states (AdminZkClient.createTopicWithAssignment; the controller creates them) - with
``num.partitions`` partitions of ``default.replication.factor`` replicas placed by Kafka's
AdminUtils over the broker's own metadata cache (ZkAdminManager.createTopics:
``metadataCache.getAliveBrokers``: the live brokers of the last UpdateMetadata, which a reassignd
controller fills with its instances too - engine step 10a places such partitions again). The
answer names each such topic LEADER_NOT_AVAILABLE, as Kafka's does while its leaders are
elected; a topic created meanwhile by another writer is left as it is.

    answer = await auto_create(store, core, partitions=1, replication_factor=1, version=4, body=body, rng=rng)
"""

from __future__ import annotations

import json
import random

from protocol import ApiKey
from protocol.errors import ErrorCode
from sim.metadata import INTERNAL_TOPICS
from znodes import paths
from znodes.api import Create, MultiOpError, NodeExistsError, Store
from znodes.assignment import AssignmentError, assign_replicas
from znodes.paths import validate_topic_name


def _wanted(core, version: int, body: dict) -> list[str]:
    """The topics a Metadata request names that it may create and that the broker does not know."""
    if version >= 4 and not body.get("allow_auto_topic_creation"):
        return []
    known = core.metadata.partitions
    out = []
    for entry in body.get("topics") or ():
        name = entry.get("name")
        if name is None or name in known or name in INTERNAL_TOPICS or name in out:
            continue
        try:
            validate_topic_name(name)
        except ValueError:
            continue  # answered INVALID_TOPIC_EXCEPTION by the cache
        out.append(name)
    return out


async def auto_create(store: Store, core, partitions: int, replication_factor: int, version: int, body: dict,
                      rng: random.Random) -> dict:
    """The Metadata answer, after writing the topics the request may create (see the module)."""
    created: set[str] = set()
    live = sorted(core.metadata.brokers) or sorted(core.view.registered)
    racks = {b: info.rack for b, info in core.metadata.brokers.items() if info.rack is not None}
    for name in _wanted(core, version, body):
        try:
            assignment = assign_replicas(live, partitions, replication_factor, start=rng.randrange(len(live)),
                                         shift=rng.randrange(len(live)), racks=racks or None)
        except (AssignmentError, ValueError):
            continue  # too few brokers for the factor: Kafka answers INVALID_REPLICATION_FACTOR
        topic = {"version": 2, "partitions": {str(p): rs for p, rs in sorted(assignment.items())},
                 "adding_replicas": {}, "removing_replicas": {}}
        ops = [Create(paths.topic(name), json.dumps(topic).encode())]
        if await store.exists(paths.topic_config(name)) is None:  # a deleted topic's config may stay
            ops.insert(0, Create(paths.topic_config(name), json.dumps({"version": 1, "config": {}}).encode()))
        try:
            await store.multi(ops)
        except MultiOpError as e:
            if not isinstance(e.cause, NodeExistsError):
                raise
        created.add(name)
    answer = core.handle(ApiKey.METADATA, version, body)
    for topic in answer["topics"]:
        if topic.get("name") in created and topic["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            topic["error_code"] = int(ErrorCode.LEADER_NOT_AVAILABLE)
    return answer
