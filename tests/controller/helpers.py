"""Builders shared by the controller tests."""

from __future__ import annotations

import json

from controller.core.state import ClusterState
from znodes.values import Assignment, Broker, LeaderIsr, Request

EPOCH = 3


def cluster(brokers=range(1, 7), topics=None, controller_id=101, epoch=EPOCH) -> ClusterState:
    """A ClusterState with live brokers and topics {name: {partition: replicas}}."""
    s = ClusterState(controller_id=controller_id, epoch=epoch)
    s.brokers = {b: Broker(b, "127.0.0.1", 9090 + b, None, 1000 + b) for b in brokers}
    for name, parts in (topics or {}).items():
        s.topic_versions[name] = 0
        s.topic_partitions[name] = tuple(sorted(parts))
        for p, replicas in parts.items():
            s.assignments[(name, p)] = Assignment(tuple(replicas))
    return s


def state(leader, isr, zk_version=0, leader_epoch=0, controller_epoch=1) -> LeaderIsr:
    return LeaderIsr(leader, leader_epoch, controller_epoch, tuple(isr), zk_version)


def req(topic, partition, replicas, original=None) -> Request:
    return Request(topic, partition, tuple(replicas), None if original is None else tuple(original))


def body_partitions(command) -> dict:
    """{(topic, partition): partition entry} of a LeaderAndIsr/StopReplica/UpdateMetadata body."""
    out = {}
    for t in command.body["topic_states"]:
        for e in t["partition_states"]:
            out[(t["topic_name"], e["partition_index"])] = e
    return out


def loads(data: bytes):
    return json.loads(data)


def leader_and_isr_sent(step, fields: tuple[str, ...]) -> dict:
    """The LeaderAndIsr entries an engine step sends: {partition: {broker: (the entry's
    ``fields``, in order)}}."""
    from protocol import ApiKey

    out: dict = {}
    for c in step.commands:
        if c.api_key == ApiKey.LEADER_AND_ISR:
            for t in c.body["topic_states"]:
                for ps in t["partition_states"]:
                    out.setdefault((t["topic_name"], ps["partition_index"]), {})[c.broker_id] = tuple(ps[f] for f in fields)
    return out
