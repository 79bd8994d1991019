"""Kafka 2.8+ topic znodes (version 3) carry a ``topic_id`` (KIP-516). The controller rewrites
a topic znode whole at every step that moves one of its partitions (engine ``finish``) and
when CreatePartitions grows it: the id must survive every rewrite, or Kafka's brokers, which
keep it in each partition's ``partition.metadata``, would find their logs' id changed (Kafka's
controller gives a topic without one a new id at its next election)."""

from __future__ import annotations

import base64
import json
import uuid

from controller.shell.admin.create_partitions import handle_create_partitions
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.harness import Harness
from znodes import paths

TOPIC_ID = base64.urlsafe_b64encode(uuid.UUID("6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d").bytes).decode().rstrip("=")


async def with_topic_id(h: Harness, topic: str = "t") -> None:
    doc = h.json(paths.topic(topic))
    doc.update(version=3, topic_id=TOPIC_ID)
    await h.admin.set(paths.topic(topic), json.dumps(doc).encode())


def moved(h: Harness, tp) -> list[int]:
    return [b for b in range(1, 7) if b not in h.assignments[tp]][:3]


async def test_a_reassignment_keeps_the_topic_id():
    h = Harness()
    await h.start()
    try:
        await with_topic_id(h)
        await h.start_controller(101)
        await h.submit({("t", 0): moved(h, ("t", 0)), ("t", 1): moved(h, ("t", 1))})
        await h.run_until_quiet()
        doc = h.json(paths.topic("t"))
        assert (doc["version"], doc.get("topic_id")) == (3, TOPIC_ID)
        assert doc["partitions"]["0"] == moved(h, ("t", 0))
        h.check_invariants()
    finally:
        await h.close()


async def test_a_failover_mid_move_keeps_the_topic_id():
    h = Harness()
    await h.start()
    try:
        await with_topic_id(h)
        first = await h.start_controller(101)
        await h.submit({("t", 0): moved(h, ("t", 0))})
        for _ in range(400):
            if h.json(paths.topic("t")).get("adding_replicas"):
                break
            await h.tick()
        doc = h.json(paths.topic("t"))
        assert doc["adding_replicas"] and doc.get("topic_id") == TOPIC_ID  # the start's rewrite kept it
        await first.stop()
        await h.start_controller(102)
        await h.run_until_quiet()
        doc = h.json(paths.topic("t"))
        assert (doc["version"], doc.get("topic_id"), doc["partitions"]["0"]) == (3, TOPIC_ID, moved(h, ("t", 0)))
    finally:
        await h.close()


async def test_create_partitions_keeps_the_topic_id():
    h = Harness()
    await h.start()
    try:
        await with_topic_id(h)
        await h.start_controller(101)
        grown = await handle_create_partitions(context(h), 3, {
            "topics": [{"name": "t", "count": 6, "assignments": None}], "timeout_ms": 0, "validate_only": False})
        assert [r["error_code"] for r in grown["results"]] == [ErrorCode.REQUEST_TIMED_OUT]  # under way
        await h.settle()
        doc = h.json(paths.topic("t"))
        assert (doc["version"], doc.get("topic_id"), sorted(doc["partitions"], key=int)) == (
            3, TOPIC_ID, ["0", "1", "2", "3", "4", "5"])
    finally:
        await h.close()
