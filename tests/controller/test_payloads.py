"""The hot encoders of znodes.payloads write exactly what the znode models write."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from znodes import models, payloads
from znodes.payloads import (
    _Record,
    decode_record_full,
    decode_requests,
    decode_state,
    decode_topic,
    encode_record,
    encode_requests,
    encode_state,
    decode_topic_with_id,
    encode_topic,
)
from znodes.values import Assignment, LeaderIsr, Request


@pytest.mark.parametrize(
    "state",
    [
        LeaderIsr(1, 0, 1, (1, 2, 3), 0),
        LeaderIsr(-1, 7, 12, (), 3),
        LeaderIsr(1004, 2**31 - 1, 2**31 - 1, (1004,), 9),
    ],
)
def test_encode_state_is_the_models_bytes(state):
    expected = models.PartitionState(
        version=1, leader=state.leader, leader_epoch=state.leader_epoch,
        controller_epoch=state.controller_epoch, isr=list(state.isr),
    ).to_bytes()
    assert encode_state(state) == expected
    assert decode_state("/s", encode_state(state), state.zk_version) == state


@pytest.mark.parametrize("queued", [None, (4, 5, 6)])
@pytest.mark.parametrize("cancelling", [False, True])
@pytest.mark.parametrize("target, original", [((4, 5, 6), (1, 2, 3)), ((7,), (1, 2)), ((10, 2), (2, 10, 3))])
def test_encode_record_is_the_models_bytes(target, original, cancelling, queued):
    expected = _Record(version=1, replicas=list(target), original_replicas=list(original), cancelling=cancelling,
                       next_replicas=None if queued is None else list(queued)).to_bytes()
    assert encode_record(target, original, cancelling, queued) == expected
    assert decode_record_full("/r", encode_record(target, original, cancelling, queued)) == (
        target, original, cancelling, queued)


_ids = st.integers(min_value=0, max_value=2**31 - 1)
_replicas = st.lists(_ids, min_size=1, max_size=6, unique=True).map(tuple)


@st.composite
def _assignments(draw) -> dict[int, Assignment]:
    out = {}
    for p in draw(st.lists(st.integers(min_value=0, max_value=100_000), max_size=12, unique=True)):
        replicas = draw(_replicas)
        adding = draw(st.lists(st.sampled_from(replicas), unique=True).map(tuple))
        removing = tuple(b for b in draw(st.lists(st.sampled_from(replicas), unique=True)) if b not in adding)
        out[p] = Assignment(replicas, adding, removing)
    return out


@settings(max_examples=300, deadline=None)
@given(_assignments())
def test_encode_topic_is_the_models_bytes(assignments):
    # In any order of the dict: the model writes the partitions sorted.
    expected = models.TopicAssignment(
        version=2,
        partitions={p: list(a.replicas) for p, a in assignments.items()},
        adding_replicas={p: list(a.adding) for p, a in assignments.items() if a.adding},
        removing_replicas={p: list(a.removing) for p, a in assignments.items() if a.removing},
    ).to_bytes()
    shuffled = dict(reversed(list(assignments.items())))
    assert encode_topic(assignments) == encode_topic(shuffled) == expected
    assert decode_topic("/brokers/topics/t", expected) == dict(sorted(assignments.items()))
    # Kafka 2.8+'s version 3 with its topic_id: the same bytes as the model's, id read back.
    with_id = models.TopicAssignment(
        version=3, topic_id="bxssPU5fSmuMfZ4PGis8TQ",
        partitions={p: list(a.replicas) for p, a in assignments.items()},
        adding_replicas={p: list(a.adding) for p, a in assignments.items() if a.adding},
        removing_replicas={p: list(a.removing) for p, a in assignments.items() if a.removing},
    ).to_bytes()
    assert encode_topic(shuffled, "bxssPU5fSmuMfZ4PGis8TQ") == with_id
    assert decode_topic_with_id("/brokers/topics/t", with_id) == (dict(sorted(assignments.items())), "bxssPU5fSmuMfZ4PGis8TQ")
    assert decode_topic_with_id("/brokers/topics/t", expected)[1] is None


_topics = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def _requests(draw) -> list[Request]:
    return [
        Request(
            draw(_topics), draw(_ids), draw(_replicas), draw(st.none() | _replicas),
            draw(st.none() | st.lists(st.text(max_size=8), min_size=1, max_size=3).map(tuple)),
            draw(st.booleans()), draw(st.lists(st.sampled_from(["smallest-first", "leaderless-first"]), max_size=2).map(tuple)),
        )
        for _ in range(draw(st.integers(min_value=0, max_value=6)))
    ]


def _requests_by_json(requests) -> bytes:
    """The entries as the model writes them (``ReassignEntry.to_json``, unvalidated: any
    topic string), through json.dumps: what the znode held before encode_requests formatted it
    directly."""
    entries = [
        models.ReassignEntry.model_construct(
            topic=r.topic, partition=r.partition, replicas=list(r.replicas),
            original_replicas=None if r.original_replicas is None else list(r.original_replicas),
            log_dirs=None if r.log_dirs is None else list(r.log_dirs), skip_isr_check=r.skip_isr_check,
            movement_strategies=list(r.movement_strategies),
        ).to_json()
        for r in requests
    ]
    return json.dumps({"version": 1, "partitions": entries}, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None)
@given(_requests())
def test_encode_requests_is_json_dumps(requests):
    assert encode_requests(requests) == _requests_by_json(requests)
    assert encode_requests(requests) == encode_requests(requests)  # again, from the caches


def test_encoded_requests_read_back():
    requests = [Request("t.a-b_c", 0, (1, 2), (3, 4), skip_isr_check=True), Request("u", 7, (5, 6), log_dirs=("any", "/d"))]
    assert decode_requests("/admin/reassign_partitions", encode_requests(requests)) == (requests, [])


def test_replica_list_cache_is_bounded_and_holds_ints_only(monkeypatch):
    monkeypatch.setattr(payloads, "_INT_LISTS", {})
    monkeypatch.setattr(payloads, "_INT_LISTS_MAX", 3)
    for i in range(10):
        assert payloads._int_list((i, i + 1)) == f"[{i},{i + 1}]"
    assert len(payloads._INT_LISTS) == 3
    assert payloads._int_list((True, 2.0)) == "[1,2]"  # written as ints, never kept
    assert payloads._int_list([4, 5]) == "[4,5]"  # a list: formatted, not kept
    assert set(payloads._INT_LISTS) == {(0, 1), (1, 2), (2, 3)}
