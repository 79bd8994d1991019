"""CreateTopics (19) and DeleteTopics (20) probed against what kafka-topics.sh or an Admin client
gets from Kafka's own ZooKeeper-mode brokers (KafkaApis.handleCreateTopicsRequest /
handleDeleteTopicsRequest, ZkAdminManager.createTopics / deleteTopics, AdminZkClient
.validateTopicCreate / deleteTopic, Topic.validate). Each test says how sure we are of Kafka's
behaviour where that is not certain. Requests mix bad entries with good ones: the bad entry gets
its own error, the good one is served."""

from __future__ import annotations

import pytest

from controller.shell.admin.create_topics import handle_create
from controller.shell.admin.delete_topics import handle_delete
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.fixtures import harness_fixture
from tests.controller.test_topic_creation import assert_created, create_body, topic
from tests.controller.test_topic_deletion import assert_gone
from znodes import paths

# Six live brokers (1-6); "t" 4 x 3, "a_b" for the '.'/'_' collision.
h = harness_fixture("t:4:3:64KiB", "a_b:1:1:64KiB")


def _codes(answer) -> dict:
    return {t["name"]: t["error_code"] for t in answer["topics"]}


async def _started(h):
    await h.start_controller(101)
    await h.tick()


# ---- CreateTopics -------------------------------------------------------------------------------


async def test_minus_one_takes_the_broker_defaults_at_every_version(h):
    """KIP-464: -1 is num.partitions / default.replication.factor (Kafka's defaults 1 and 1).
    ZkAdminManager.createTopics resolves -1 whatever the request version: only the Java
    client refuses to send -1 below v4 (CreateTopicsRequest.Builder, UnsupportedVersionException);
    a pre-2.4 broker answered INVALID_PARTITIONS. Confidence: medium-high that a 2.4+ broker
    does not check the version."""
    await _started(h)
    answer = await handle_create(context(h), 0, create_body(topic("d0"), topic("d0rf", 2, -1)))
    assert _codes(answer) == {"d0": 0, "d0rf": 0}
    assert len(h.json(paths.topic("d0"))["partitions"]) == 1
    assert {len(rs) for rs in h.json(paths.topic("d0rf"))["partitions"].values()} == {1}
    v5 = await handle_create(context(h), 5, create_body(topic("d5")))
    [out] = v5["topics"]
    assert (out["error_code"], out["num_partitions"], out["replication_factor"]) == (0, 1, 1)


async def test_each_bad_topic_gets_kafkas_code_and_the_good_one_is_created(h):
    """Codes are Kafka's (high confidence): both counts and an assignment INVALID_REQUEST
    (ZkAdminManager); gaps or not starting at 0, unequal lengths, a broker twice
    INVALID_REPLICA_ASSIGNMENT (AdminZkClient.validateTopicCreate); a factor above the live
    brokers INVALID_REPLICATION_FACTOR (AdminUtils); an existing name TOPIC_ALREADY_EXISTS; a
    name equal to one once '.' and '_' are alike INVALID_TOPIC_EXCEPTION; Topic.validate's
    illegal names INVALID_TOPIC_EXCEPTION. An unknown broker in an assignment: Kafka's
    ZooKeeper mode does NOT check it (a comment in ZkAdminManager says so: the partitions stay
    offline), KRaft refuses it with INVALID_REPLICA_ASSIGNMENT; we refuse as KRaft does."""
    await _started(h)
    before = h.server.dump()
    bad = [
        topic("both", 2, -1, assignments=[(0, [1])]),
        topic("gap", assignments=[(0, [1]), (2, [2])]),
        topic("from1", assignments=[(1, [1]), (2, [2])]),
        topic("uneven", assignments=[(0, [1, 2]), (1, [3])]),
        topic("twice", assignments=[(0, [1, 1])]),
        topic("ghost", assignments=[(0, [1, 99])]),
        topic("wide", 1, 7),
        topic("t", 1, 1),
        topic("a.b", 1, 1),
        topic("x" * 250, 1, 1),
        topic("bad/name", 1, 1),
        topic(".", 1, 1),
        topic("..", 1, 1),
    ]
    answer = await handle_create(context(h), 4, create_body(*bad))
    E = ErrorCode
    assert _codes(answer) == {
        "both": E.INVALID_REQUEST, "gap": E.INVALID_REPLICA_ASSIGNMENT, "from1": E.INVALID_REPLICA_ASSIGNMENT,
        "uneven": E.INVALID_REPLICA_ASSIGNMENT, "twice": E.INVALID_REPLICA_ASSIGNMENT,
        "ghost": E.INVALID_REPLICA_ASSIGNMENT, "wide": E.INVALID_REPLICATION_FACTOR, "t": E.TOPIC_ALREADY_EXISTS,
        "a.b": E.INVALID_TOPIC_EXCEPTION, "x" * 250: E.INVALID_TOPIC_EXCEPTION,
        "bad/name": E.INVALID_TOPIC_EXCEPTION, ".": E.INVALID_TOPIC_EXCEPTION, "..": E.INVALID_TOPIC_EXCEPTION,
    }
    assert h.server.dump() == before  # nothing of a refused topic is written
    # A 249-character name is legal, and refusals beside it do not stop it.
    answer = await handle_create(context(h), 4, create_body(topic("y" * 249, 1, 1), topic("wide", 1, 7)))
    assert _codes(answer) == {"y" * 249: 0, "wide": E.INVALID_REPLICATION_FACTOR}
    await assert_created(h, "y" * 249, 1)


async def test_a_topic_twice_is_invalid_request_with_kafkas_message_and_the_rest_is_created(h):
    """KafkaApis.handleCreateTopicsRequest (2.4+): every entry of a name given more than once is
    INVALID_REQUEST "Found multiple entries for this topic.", checked before authorization, and
    the topic is not created; the other topics are. Kafka 1.x-2.3 said "Create topics request
    from client `id` contains multiple entries for the following topics: ..." (KRaft:
    "Duplicate topic name."). Confidence: medium-high for the 2.4+ message."""
    await _started(h)
    answer = await handle_create(context(h), 5, create_body(topic("dup", 1, 1), topic("ok", 1, 1), topic("dup", 2, 1)))
    assert [(t["name"], t["error_code"], t["error_message"]) for t in answer["topics"]] == [
        ("dup", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."),
        ("ok", 0, None),
        ("dup", ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."),
    ]
    assert [(t["num_partitions"], t["replication_factor"], t["configs"]) for t in answer["topics"][::2]] == [
        (-1, -1, None), (-1, -1, None)]
    assert h.server.exists(paths.topic("dup")) is None
    await assert_created(h, "ok", 1)


async def test_validate_only_writes_nothing_and_answers_the_plan(h):
    """validate_only (v1+): checked, placed, answered NONE with the plan in v5+, nothing
    written (high confidence)."""
    await _started(h)
    before = h.server.dump()
    answer = await handle_create(context(h), 5, create_body(topic("v", 3, 2), topic("t", 1, 1), validate_only=True))
    v, t = answer["topics"]
    assert (v["error_code"], v["num_partitions"], v["replication_factor"]) == (0, 3, 2) and v["configs"]
    assert (t["error_code"], t["num_partitions"], t["replication_factor"], t["configs"]) == (
        ErrorCode.TOPIC_ALREADY_EXISTS, -1, -1, None)
    assert h.server.dump() == before


async def test_a_topic_answered_with_an_error_carries_no_metadata_even_request_timed_out(h):
    """KafkaApis.handleCreateTopicsRequest's callback resets a topic whose answer is not NONE
    - REQUEST_TIMED_OUT included, so ``timeout_ms`` 0 too - to num_partitions -1,
    replication_factor -1, no configs and topic_config_error_code NONE ("Reset any configs in
    the response if Create failed", KIP-525). Confidence: medium-high. Kafka sends an empty
    config list there where we send null (both read as "none" by the Java client and
    librdkafka), and with ACLs Kafka also resets topic_config_error_code to NONE
    (tests/admin/test_topic_acls.py holds that); the topic is still created, as in Kafka."""
    await _started(h)
    answer = await handle_create(context(h), 7, create_body(topic("q", 3, 2), timeout_ms=0))
    [q] = answer["topics"]
    assert q["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    assert (q["num_partitions"], q["replication_factor"], q["configs"], q["topic_config_error_code"]) == (
        -1, -1, None, 0)
    await h.tick()
    await assert_created(h, "q", 3)


# ---- DeleteTopics -------------------------------------------------------------------------------


async def test_delete_unknown_illegal_and_twice(h):
    """An unknown topic or an illegal name: UNKNOWN_TOPIC_OR_PARTITION (KafkaApis checks the
    metadata cache; high confidence). The same name twice: Kafka's ZooKeeper mode does not
    check (its topics go into a Set; the first entry gets the deletion's answer, the second
    stays NONE), KRaft answers INVALID_REQUEST "Duplicate topic name." for it; we answer as
    KRaft and mark nothing for it (medium confidence about ZooKeeper mode)."""
    await _started(h)
    answer = await handle_delete(context(h), 4, {"topic_names": ["nope", "bad/name", "a_b", "a_b", "t"],
                                                 "timeout_ms": 10_000})
    assert [r["error_code"] for r in answer["responses"]] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, 0]
    assert_gone(h, "t")
    assert h.server.exists(paths.topic("a_b")) is not None


async def test_delete_timeout_zero_answers_timed_out_and_the_deletion_goes_on(h):
    """ZkAdminManager.deleteTopics: ``timeout_ms`` <= 0 answers REQUEST_TIMED_OUT for every
    topic marked, the deletion going on (high confidence); > 0 waits until the topic is gone."""
    await _started(h)
    answer = await handle_delete(context(h), 5, {"topic_names": ["t", "nope"], "timeout_ms": 0})
    assert [r["error_code"] for r in answer["responses"]] == [
        ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    for _ in range(4):
        await h.tick()
    await h.settle()
    assert_gone(h, "t")


async def test_an_internal_topic_is_deleted_like_any_other(h):
    """Kafka's brokers do not refuse deleting __consumer_offsets (neither KafkaApis nor
    AdminZkClient.deleteTopic checks; kafka-topics.sh refuses on the client side, "is a kafka
    internal topic and is not allowed to be marked for deletion"). Confidence: medium."""
    await _started(h)
    created = await handle_create(context(h), 5, create_body(topic("__consumer_offsets", 2, 2)))
    assert _codes(created) == {"__consumer_offsets": 0}
    answer = await handle_delete(context(h), 5, {"topic_names": ["__consumer_offsets"], "timeout_ms": 10_000})
    assert [r["error_code"] for r in answer["responses"]] == [0]
    assert_gone(h, "__consumer_offsets")


async def test_a_topic_whose_deletion_started_is_unknown_to_a_second_delete(h):
    """Kafka's KafkaApis.handleDeleteTopicsRequest answers UNKNOWN_TOPIC_OR_PARTITION for a topic
    its metadata cache lacks, and the controller's deletion start (onTopicDeletion) sends
    UpdateMetadata with leader -2, which drops the topic from every broker's cache: a second
    DeleteTopics once the deletion started is UNKNOWN_TOPIC_OR_PARTITION, as our Metadata then
    answers too (DESIGN 4.5). Only a marker the controller has not taken yet is NONE again
    (ZkAdminManager swallows TopicAlreadyMarkedForDeletionException). Confidence: medium -
    we are sure of both code paths, less of how often the window between them is hit."""
    await _started(h)
    victim = h.assignments[("t", 0)][0]
    await h.cluster.stop_broker(victim)  # the deletion cannot finish while it is down
    await h.tick()
    first = await handle_delete(context(h), 5, {"topic_names": ["t"], "timeout_ms": 0})
    assert first["responses"][0]["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    await h.tick()
    again = await handle_delete(context(h), 5, {"topic_names": ["t"], "timeout_ms": 200})
    assert again["responses"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert h.server.exists(paths.delete_topic("t")) is not None  # the deletion goes on
    await h.cluster.start_broker(victim)
    for _ in range(3):
        await h.tick()
    assert_gone(h, "t")



async def test_refusals_carry_kafkas_own_messages(h):
    """Operators and tools grep for Kafka's words (ZkAdminManager, AdminZkClient, AdminUtils)."""
    await _started(h)
    answer = await handle_create(context(h), 4, create_body(
        topic("t", 1, 1), topic("a.b", 1, 1), topic("wide", 1, 7), topic("both", 2, -1, assignments=[(0, [1])]),
        topic("uneven", assignments=[(0, [1, 2]), (1, [3])])))
    messages = {t["name"]: t["error_message"] for t in answer["topics"]}
    assert messages == {
        "t": "Topic 't' already exists.",
        "a.b": "Topic 'a.b' collides with existing topics: a_b",
        "wide": "Replication factor: 7 larger than available brokers: 6.",
        "both": "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the "
                "same time.",
        "uneven": "All partitions should have the same number of replicas",
    }


async def test_an_existing_topic_is_already_exists_before_the_requests_own_checks(h):
    # ZkAdminManager.createTopics: the metadata cache's "already exists" comes before "both
    # counts and an assignment" and the null-config check (medium-high confidence).
    await _started(h)
    answer = await handle_create(context(h), 4, create_body(topic("t", 2, -1, assignments=[(0, [1])])))
    assert _codes(answer) == {"t": ErrorCode.TOPIC_ALREADY_EXISTS}
