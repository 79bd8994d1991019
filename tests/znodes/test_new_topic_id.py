"""znodes.values.new_topic_id: Kafka's Uuid.randomUuid rules for the ids CreateTopics gives new
topics (KIP-516) - never the zero Uuid, never ONE_UUID (KRaft's METADATA_TOPIC_ID), never one
whose text starts with '-' - in the topic znode's form (Uuid.toString)."""

from __future__ import annotations

import base64
import random
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from znodes import models, values
from znodes.values import RESERVED_TOPIC_IDS, new_topic_id, topic_id_text, topic_uuid

ZERO = bytes(16)
ONE = bytes(15) + b"\x01"
DASH = b"\xf8" + bytes(15)  # first 6 bits 62: '-' in URL-safe base64
GOOD = uuid.UUID("6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d").bytes


def drawing(monkeypatch, draws: list[bytes]) -> list[bytes]:
    left = list(draws)
    monkeypatch.setattr(values, "random_uuid_bytes", lambda: left.pop(0))
    return left


def test_the_reserved_ids_are_kafkas():
    assert RESERVED_TOPIC_IDS == {topic_id_text(ZERO), topic_id_text(ONE)} == {
        "AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ"}
    assert topic_id_text(DASH).startswith("-")
    assert topic_uuid(None) == uuid.UUID(int=0) and topic_uuid("AAAAAAAAAAAAAAAAAAAAAQ") == uuid.UUID(int=1)


def test_a_reserved_or_dash_led_draw_is_drawn_again(monkeypatch):
    left = drawing(monkeypatch, [ZERO, ONE, DASH, DASH, GOOD, ZERO])
    assert new_topic_id() == topic_id_text(GOOD) == "bxssPU5fSmuMfZ4PGis8TQ"
    assert left == [ZERO]  # stopped at the first acceptable draw


@given(st.binary(min_size=16, max_size=16))
def test_any_draw_is_taken_unless_reserved_or_dash_led(raw):
    with pytest.MonkeyPatch.context() as m:
        left = drawing(m, [raw, GOOD])
        text = new_topic_id()
    acceptable = raw not in (ZERO, ONE) and not topic_id_text(raw).startswith("-")
    assert text == (topic_id_text(raw) if acceptable else topic_id_text(GOOD))
    assert len(left) == (1 if acceptable else 0)
    assert topic_uuid(text).bytes == (raw if acceptable else GOOD)  # the wire's uuid: the same 16 bytes


def test_seeded_draws_follow_the_rules_and_a_topic_znode_takes_every_id(monkeypatch):
    rng = random.Random(516)
    drawn = []

    def draw() -> bytes:
        drawn.append(rng.randbytes(16))
        return drawn[-1]

    monkeypatch.setattr(values, "random_uuid_bytes", draw)
    ids = [new_topic_id() for _ in range(3_000)]
    assert len(drawn) > len(ids)  # about 1 in 64 started with '-' and was drawn again
    assert len(set(ids)) == len(ids)
    for text in ids:
        assert len(text) == 22 and text not in RESERVED_TOPIC_IDS and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16
    doc = models.TopicAssignment(version=3, partitions={0: [1]}, topic_id=ids[0])  # the znode's own check
    assert doc.topic_id == ids[0]


def test_the_default_source_draws_version_4_uuids():
    ids = [new_topic_id() for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(topic_uuid(text).version == 4 and not text.startswith("-") for text in ids)
