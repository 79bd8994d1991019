"""Kafka 2.8+ topic znodes (version 3) carry a ``topic_id`` (KIP-516). The controller rewrites
a topic znode whole at every step that moves one of its partitions (engine ``finish``) and
when CreatePartitions grows it: the id must survive every rewrite, or Kafka's brokers, which
keep it in each partition's ``partition.metadata``, would find their logs' id changed (Kafka's
controller gives a topic without one a new id at its next election).

Topics CreateTopics creates get an id too, as Kafka 2.8+ gives them (drawn by the shell, written
by the engine in a version 3 znode, answered in v7): the tests after the first three; and a topic
written without one gets one at the next election (Kafka's processTopicIds): the last two."""

from __future__ import annotations

import base64
import json
import uuid

from controller.core import acl, engine
from controller.core.admin_requests import Answer
from controller.core.config import ControllerConfig
from controller.core.events import RequestsRead, TopicsRequested
from controller.core.topic_creation import PartitionsRequest, TopicRequest
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.create_topics import handle_create
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.harness import Harness
from tests.controller.helpers import cluster, req
from tests.controller.test_topic_creation import TopicGrants, create_body, topic
from znodes import paths
from znodes.api import Create, SetData
from znodes.values import topic_uuid

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


# ---- topics created here: CreateTopics gives each an id --------------------------------------

NEW_ID = "kyYmI5ZgSk6RVzIw8JqaCQ"
ZERO = uuid.UUID(int=0)


def run(s, event):
    step = engine.step(s, event, ControllerConfig())
    s.apply(step.delta)
    return step


def topic_write(step, name: str):
    [op] = [op for op in step.writes if op.path == paths.topic(name)]
    return op, json.loads(op.data)


def test_the_engine_writes_a_new_topic_znode_as_version_3_with_the_requests_id_and_keeps_it():
    s = cluster(brokers=range(1, 7))
    op, doc = topic_write(run(s, TopicsRequested("create", (TopicRequest("n", 2, 3, topic_id=NEW_ID),))), "n")
    assert isinstance(op, Create) and (doc["version"], doc["topic_id"]) == (3, NEW_ID)
    assert s.topic_ids == {"n": NEW_ID}
    # CreatePartitions rewrites it with its id.
    op, doc = topic_write(run(s, TopicsRequested("partitions", (PartitionsRequest("n", 3),))), "n")
    assert isinstance(op, SetData) and (doc["version"], doc["topic_id"], len(doc["partitions"])) == (3, NEW_ID, 3)
    # So does a move's start (the state is known: it starts in the step that reads the entry).
    target = tuple(b for b in range(1, 7) if b not in s.assignments[("n", 0)].replicas)
    op, doc = topic_write(run(s, RequestsRead(0, (req("n", 0, target),))), "n")
    assert doc["adding_replicas"] == {"0": list(target)} and (doc["version"], doc["topic_id"]) == (3, NEW_ID)


def test_validate_only_writes_nothing_and_keeps_no_id():
    s = cluster(brokers=range(1, 7))
    step = run(s, TopicsRequested("create", (TopicRequest("n", 2, 3, topic_id=NEW_ID),), validate_only=True))
    assert step.writes == [] and s.topic_ids == {}


def znode_id(h: Harness, name: str) -> uuid.UUID:
    doc = h.json(paths.topic(name))
    assert doc["version"] == 3
    return topic_uuid(doc["topic_id"])


async def test_create_topics_v7_answers_the_id_its_znode_carries_and_moves_failovers_keep_it():
    h = Harness()
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        answer = await handle_create(context(h), 7, create_body(topic("n", 2, 2), topic("t", 1, 1), topic("m", 1, 2)))
        n, t, m = answer["topics"]
        assert (n["error_code"], t["error_code"], m["error_code"]) == (0, ErrorCode.TOPIC_ALREADY_EXISTS, 0)
        assert n["topic_id"] != ZERO and n["topic_id"] == znode_id(h, "n")
        assert m["topic_id"] not in (ZERO, n["topic_id"]) and m["topic_id"] == znode_id(h, "m")
        assert t["topic_id"] == ZERO  # refused: Kafka's zero Uuid
        # timeout_ms 0: under way (REQUEST_TIMED_OUT), with its id, as Kafka answers it.
        [q] = (await handle_create(context(h), 7, create_body(topic("q", 1, 1), timeout_ms=0)))["topics"]
        assert q["error_code"] == ErrorCode.REQUEST_TIMED_OUT and q["topic_id"] == znode_id(h, "q") != ZERO
        # validate_only: no id, nothing written.
        [v] = (await handle_create(context(h), 7, create_body(topic("v", 1, 1), validate_only=True)))["topics"]
        assert (v["error_code"], v["topic_id"]) == (0, ZERO) and h.server.exists(paths.topic("v")) is None
        # A move of n, a failover, then CreatePartitions: every rewrite keeps the id.
        await h.submit({("n", 0): [b for b in range(1, 7) if b not in h.json(paths.topic("n"))["partitions"]["0"]][:2]})
        await h.run_until_quiet()
        assert znode_id(h, "n") == n["topic_id"] and h.json(paths.topic("n"))["partitions"]["0"] == h.requested[("n", 0)]
        await h.controllers[0].stop()
        second = await h.start_controller(102)
        for _ in range(100):
            if second.active is not None:
                break
            await h.tick()
        grown = await handle_create_partitions(context(h, second), 3, {
            "topics": [{"name": "n", "count": 3, "assignments": None}], "timeout_ms": 0, "validate_only": False})
        assert grown["results"][0]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        await h.settle()
        assert znode_id(h, "n") == n["topic_id"] and len(h.json(paths.topic("n"))["partitions"]) == 3
    finally:
        await h.close()


async def test_without_describe_configs_the_answer_carries_no_id():
    """Kafka's ZooKeeper-mode brokers fill the id (ZkAdminManager.populateIds) only in answers
    that may show the topic's configs: CREATE alone creates the topic, id and all, answered
    with the zero Uuid."""
    h = Harness()
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        ctx = context(h)
        ctx.authorizer = TopicGrants(acl.CREATE, {"mine"})
        [mine] = (await handle_create(ctx, 7, create_body(topic("mine", 1, 1))))["topics"]
        assert (mine["error_code"], mine["topic_id"], mine["topic_config_error_code"]) == (
            0, ZERO, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        assert znode_id(h, "mine") != ZERO
    finally:
        await h.close()


async def test_a_request_taken_again_writes_the_id_it_drew_once():
    """A request that lost a race is taken again (controller.shell.admin_events.submit): each
    attempt carries the ids drawn when the request came, so ZooKeeper and the answer agree
    whichever attempt wrote."""
    h = Harness()
    await h.start()
    try:
        handle = await h.start_controller(101)
        await h.tick()
        queue = handle.active.inbox.queue
        put, taken = queue.put_nowait, []

        def racing_once(item):
            if isinstance(item, TopicsRequested):
                taken.append(item)
                if len(taken) == 1:  # the first attempt lost a race: taken again
                    item.token.set_result(Answer(item.token, retry=True))
                    return
            put(item)

        queue.put_nowait = racing_once
        [n] = (await handle_create(context(h), 7, create_body(topic("n", 2, 2))))["topics"]
        first, second = ([r.topic_id for r in e.requests] for e in taken)
        assert first == second and first[0] is not None
        assert n["error_code"] == 0 and n["topic_id"] == znode_id(h, "n") == topic_uuid(first[0])
    finally:
        await h.close()


async def test_an_election_gives_a_topic_without_an_id_one_and_keeps_it_after():
    """Kafka 2.8+'s processTopicIds: a topic znode without a topic_id (written by an older tool,
    or the simulator, Kafka 2.4's layout) gets one at the election, in the Resume step's fenced
    flush (flush kind resume), conditional on the version read; the next controller keeps it,
    and a topic with an id keeps its own."""
    h = Harness(topics=("t:2:3:64KiB", "u:1:3:64KiB"))
    await h.start()
    try:
        await with_topic_id(h, "u")
        assert "topic_id" not in h.json(paths.topic("t"))
        first = await h.start_controller(101)
        await h.settle()
        doc = h.json(paths.topic("t"))
        given = doc.get("topic_id")
        assert doc["version"] == 3 and given is not None and given != TOPIC_ID
        assert topic_uuid(given) != uuid.UUID(int=0) and not given.startswith("-")
        assert sorted(doc["partitions"]) == ["0", "1"]
        assert h.json(paths.topic("u"))["topic_id"] == TOPIC_ID
        await first.stop()
        await h.start_controller(102)
        await h.settle()
        assert h.json(paths.topic("t"))["topic_id"] == given and h.json(paths.topic("u"))["topic_id"] == TOPIC_ID
    finally:
        await h.close()


def test_resume_gives_ids_only_to_known_topics_without_one_not_being_deleted():
    from controller.core.events import Resume
    from controller.core.topic_deletion import TopicDeletion

    s = cluster(topics={name: {0: [1, 2, 3]} for name in ("t", "kept", "marked")})
    s.topic_ids["kept"] = TOPIC_ID
    s.deleting["marked"] = TopicDeletion()
    ids = {"t": "q" * 22, "kept": "r" * 22, "marked": "s" * 22, "unknown": "x" * 22}
    st = engine.step(s, Resume(topic_ids=ids), ControllerConfig())
    writes = {w.path: w for w in st.writes if isinstance(w, SetData) and w.path.startswith("/brokers/topics/")}
    assert set(writes) == {paths.topic("t")}
    assert json.loads(writes[paths.topic("t")].data)["topic_id"] == "q" * 22
    assert st.kinds[st.writes.index(writes[paths.topic("t")])] == frozenset({"resume"})
    s.apply(st.delta)
    assert s.topic_ids == {"t": "q" * 22, "kept": TOPIC_ID}


async def test_a_topic_a_tool_creates_without_an_id_while_the_controller_runs_gets_one():
    """Kafka 2.8+'s processTopicIds on a topic change: a new topic znode written without a
    topic_id (kafka-topics.sh before 2.8 writes version 1) gets one in the step that reads it,
    written with the topic znode (flush kind topics); one written with an id keeps it."""
    h = Harness()
    await h.start()
    try:
        await h.start_controller(101)
        await h.settle()
        plain = {"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}}
        await h.admin.create(paths.topic("v"), json.dumps(plain).encode())
        await h.admin.create(paths.topic("w"), json.dumps({**plain, "version": 3, "topic_id": TOPIC_ID}).encode())
        for _ in range(50):
            await h.tick()
            if "topic_id" in h.json(paths.topic("v")):
                break
        doc = h.json(paths.topic("v"))
        assert doc["version"] == 3 and doc["partitions"] == plain["partitions"]
        assert doc["topic_id"] not in (None, TOPIC_ID) and topic_uuid(doc["topic_id"]) != uuid.UUID(int=0)
        assert h.json(paths.topic("w"))["topic_id"] == TOPIC_ID
        assert h.server.exists(paths.partition_state("v", 1)) is not None  # and its partitions got their states
    finally:
        await h.close()


def test_leader_and_isr_v5_and_update_metadata_v7_carry_each_topics_id_and_answers_come_back_by_name():
    """Kafka 2.8+'s controller tells brokers the topic ids (KIP-516): LeaderAndIsr v5 and
    UpdateMetadata v7 name each topic with its id (zero for a topic without one), and a v5
    answer, per topic id, is read back by name (a replica on a failed directory must be found)."""
    from controller.core.commands import LEADER_AND_ISR_VERSION, UPDATE_METADATA_VERSION, answer_by_name
    from controller.core.elections import PREFERRED
    from controller.core.events import ElectionRequested
    from protocol import ApiKey
    from protocol.messages import decode_response, encode_response
    from tests.controller.helpers import state

    s = cluster(topics={"t": {0: [1, 2]}, "plain": {0: [2, 1]}})
    s.topic_ids["t"] = TOPIC_ID
    s.states[("t", 0)] = state(2, [1, 2], zk_version=3)
    s.states[("plain", 0)] = state(1, [1, 2], zk_version=3)
    st = engine.step(s, ElectionRequested(None, PREFERRED, {}, object()), ControllerConfig())
    lai = next(c for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR and c.broker_id == 1)
    um = next(c for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA and c.broker_id == 1)
    assert (lai.api_version, um.api_version) == (LEADER_AND_ISR_VERSION, UPDATE_METADATA_VERSION) == (5, 7)
    ids = {t["topic_name"]: t["topic_id"] for t in lai.body["topic_states"]}
    assert ids == {"t": topic_uuid(TOPIC_ID), "plain": uuid.UUID(int=0)}
    assert {t["topic_name"]: t["topic_id"] for t in um.body["topic_states"]} == ids
    # a broker's v5 answer, through the codec, per topic id: back by name
    answer = {"error_code": 0, "topics": [{"topic_id": topic_uuid(TOPIC_ID),
                                           "partition_errors": [{"partition_index": 0, "error_code": 56}]}]}
    _, decoded = decode_response(4, 5, encode_response(4, 5, 1, answer))
    named = answer_by_name(lai.body, decoded)
    assert [(e["topic_name"], e["partition_index"], e["error_code"]) for e in named["partition_errors"]] == [("t", 0, 56)]
    v4 = {"error_code": 0, "partition_errors": [{"topic_name": "t", "partition_index": 0, "error_code": 0}]}
    assert answer_by_name(lai.body, v4) is v4


async def test_a_tool_rewriting_a_topic_without_its_id_gets_the_id_written_back():
    """An older kafka-topics adding partitions rewrites the topic znode without the topic_id: the
    controller keeps the id it holds and writes it back with the tool's partitions (flush kind
    topics), so the next election does not give the topic a new one."""
    h = Harness()
    await h.start()
    try:
        await with_topic_id(h)
        await h.start_controller(101)
        await h.settle()
        doc = h.json(paths.topic("t"))
        grown = {"version": 1, "partitions": {**doc["partitions"], "6": [1, 2, 3]}}
        await h.admin.set(paths.topic("t"), json.dumps(grown).encode())
        for _ in range(50):
            await h.tick()
            if h.json(paths.topic("t")).get("topic_id") == TOPIC_ID:
                break
        after = h.json(paths.topic("t"))
        assert (after["version"], after["topic_id"]) == (3, TOPIC_ID) and after["partitions"]["6"] == [1, 2, 3]
        assert h.server.exists(paths.partition_state("t", 6)) is not None
    finally:
        await h.close()
