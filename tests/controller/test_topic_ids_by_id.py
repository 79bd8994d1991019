"""ClusterState.topic_name_for_id: requests naming topics by id (AlterPartition v2+, which a
Kafka 3.3+ leader sends on every ISR change, and DeleteTopics v6+) are resolved against an
inverted map kept until a step changes an id, not one rebuilt from every topic per request."""

import base64
import uuid

import pytest

from controller.core.state import DELETED, ClusterState, Delta
from znodes.values import topic_uuid


def _id(i: int) -> str:  # as a topic znode holds it: url-safe base64 of 16 bytes, no padding
    return base64.urlsafe_b64encode(uuid.UUID(int=i + 1).bytes).decode().rstrip("=")


def _state(n: int) -> ClusterState:
    state = ClusterState(controller_id=1, epoch=1)
    for i in range(n):
        state.topic_ids[f"t{i}"] = _id(i)
    return state


def test_names_resolve_and_follow_the_steps():
    state = _state(3)
    assert state.topic_name_for_id(topic_uuid(_id(1))) == "t1"
    assert state.topic_name_for_id(uuid.UUID(int=999)) is None
    state.apply(Delta(topic_ids={"t1": DELETED, "new": _id(50)}))
    assert state.topic_name_for_id(topic_uuid(_id(1))) is None
    assert state.topic_name_for_id(topic_uuid(_id(50))) == "new"
    # An id replaced under the same count of topics (a topic deleted, another created).
    state.apply(Delta(topic_ids={"new": DELETED, "other": _id(60)}))
    assert state.topic_name_for_id(topic_uuid(_id(50))) is None
    assert state.topic_name_for_id(topic_uuid(_id(60))) == "other"


def test_a_load_writing_topic_ids_directly_is_seen():
    state = _state(2)
    assert state.topic_name_for_id(topic_uuid(_id(5))) is None
    state.topic_ids["t5"] = _id(5)  # recovery.rebuild fills the maps this way
    assert state.topic_name_for_id(topic_uuid(_id(5))) == "t5"


def test_lookups_do_not_rebuild_per_request(monkeypatch):
    state = _state(1000)
    calls = []
    import controller.core.state as module
    monkeypatch.setattr(module, "topic_uuid", lambda text: calls.append(text) or topic_uuid(text))
    for i in range(50):  # fifty requests, each naming one topic
        assert state.topic_name_for_id(topic_uuid(_id(i))) == f"t{i}"
    # Steps that change no id (the busy controller's usual step) keep the map.
    state.apply(Delta(states={("t0", 0): DELETED}))
    assert state.topic_name_for_id(topic_uuid(_id(7))) == "t7"
    assert len(calls) == 1000


@pytest.mark.parametrize("n", [0, 1])
def test_small_maps(n):
    state = _state(n)
    assert state.topic_name_for_id(uuid.UUID(int=0)) is None
