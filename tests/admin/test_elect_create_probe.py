"""ElectLeaders (43, KIP-183/KIP-460) and CreatePartitions (37, KIP-195) probed against what a
Kafka operator gets from Kafka's own ZooKeeper-mode brokers (KafkaApis.handleElectLeaders,
KafkaController.processReplicaLeaderElection, ReplicaManager.electLeaders / DelayedElectLeader,
KafkaApis.handleCreatePartitionsRequest, ZkAdminManager.createPartitions,
AdminZkClient.createNewPartitionsAssignment / validateReplicaAssignment). Each test says how sure
we are of Kafka's behaviour where that is not certain. Every request mixes bad input with good
input: the bad entry gets its own error, the good one is served."""

from __future__ import annotations

import dataclasses
import json

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.elections import PREFERRED, UNCLEAN
from controller.core.events import ElectionRequested, TopicsRequested
from controller.core.task import Move, Phase
from controller.core.topic_creation import PartitionsRequest
from controller.core.topic_deletion import TopicDeletion
from controller.shell.admin.create_partitions import handle_create_partitions
from controller.shell.admin.elect_leaders import handle_elect
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from tests.controller.test_elections import _state
from znodes import paths
from znodes.values import Assignment, LeaderIsr

TOKEN = object()


# ---- ElectLeaders -----------------------------------------------------------------------------

h = harness_fixture("t:3:3:64KiB", "u:2:2:64KiB")


def _listed(answer) -> dict:
    return {(t["topic"], p["partition_id"]): (p["error_code"], p["error_message"])
            for t in answer["replica_election_results"] for p in t["partition_result"]}


async def _lead_elsewhere(h: Harness, tp) -> dict:
    """The leader moves to the second replica (as after the first one failed and came back):
    the state znode as a broker's ISR change leaves it. Returns the state written."""
    path = paths.partition_state(*tp)
    state = h.json(path)
    moved = dict(state, leader=h.assignments[tp][1], leader_epoch=state["leader_epoch"] + 1)
    await h.admin.set(path, json.dumps(moved).encode())
    return moved


async def test_v0_answers_none_where_v1_answers_election_not_needed(h):
    """KIP-183's v0 predates ELECTION_NOT_NEEDED (84, KIP-460, Kafka 2.4): a preferred replica
    that already leads was NONE in Kafka 2.2/2.3's PreferredLeaderElection, and a v0-only client
    cannot read 84 (it becomes UnknownServerException). Confidence: medium - we are sure of
    2.2's NONE and of 84 for v1+, not sure that Kafka 2.4+ maps 84 back to NONE for v0; NONE
    is what every v0 client can read."""
    await h.start_controller(101)
    await h.tick()
    body = {"topic_partitions": [{"topic": "t", "partitions": [1]}], "timeout_ms": 5000}
    assert _listed(await handle_elect(context(h), 0, body))[("t", 1)][0] == ErrorCode.NONE
    v1 = _listed(await handle_elect(context(h), 1, dict(body, election_type=PREFERRED)))
    assert v1[("t", 1)][0] == ErrorCode.ELECTION_NOT_NEEDED


async def test_a_partition_named_twice_is_elected_once_and_answered_once(h):
    """Kafka's ElectLeadersRequest.topicPartitions() collects into a Set: duplicates (within a
    topic's list, or the topic given twice) are one partition, not INVALID_REQUEST (high
    confidence). The new leader epoch is the state's + 1, written and sent in LeaderAndIsr."""
    await h.start_controller(101)
    await h.tick()
    moved = await _lead_elsewhere(h, ("t", 0))
    sent = len(h.sent)
    body = {"election_type": PREFERRED, "timeout_ms": 5000,
            "topic_partitions": [{"topic": "t", "partitions": [0, 0, 7]}, {"topic": "t", "partitions": [0]}]}
    answer = await handle_elect(context(h), 2, body)
    assert [len(t["partition_result"]) for t in answer["replica_election_results"]] == [2]
    assert {tp: c for tp, (c, _) in _listed(answer).items()} == {
        ("t", 0): ErrorCode.NONE, ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    now = h.json(paths.partition_state("t", 0))
    assert now["leader"] == h.assignments[("t", 0)][0] and now["leader_epoch"] == moved["leader_epoch"] + 1
    epochs = {(b, e["leader_epoch"]) for b, key, body in h.sent[sent:] if key == ApiKey.LEADER_AND_ISR
              for t in body["topic_states"] for e in t["partition_states"] if (t["topic_name"], e["partition_index"]) == ("t", 0)}
    assert epochs == {(b, now["leader_epoch"]) for b in h.assignments[("t", 0)]}
    told = {b for b, key, _ in h.sent[sent:] if key == ApiKey.UPDATE_METADATA}
    assert told == set(h.cluster.settings.broker_ids)


async def test_timeout_zero_still_answers_what_was_decided(h):
    """Kafka: the controller decides whatever the timeout (KafkaController.electLeaders has no
    deadline); timeout_ms bounds only the wait for the new leaders to show (DelayedElectLeader),
    so with 0 an elected partition is REQUEST_TIMED_OUT - the election still happens - and the
    partitions that failed keep their own errors (high confidence). Ours waited 1 ms: every
    partition REQUEST_TIMED_OUT, unknown ones included, or - when the step landed within it -
    the elected one NONE, past its deadline."""
    await h.start_controller(101)
    await h.tick()
    await _lead_elsewhere(h, ("t", 0))
    body = {"election_type": PREFERRED, "timeout_ms": 0, "topic_partitions": [{"topic": "t", "partitions": [0, 1, 9]}]}
    codes = {tp: c for tp, (c, _) in _listed(await handle_elect(context(h), 2, body)).items()}
    assert codes == {("t", 0): ErrorCode.REQUEST_TIMED_OUT, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
                     ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    await h.settle()
    assert h.json(paths.partition_state("t", 0))["leader"] == h.assignments[("t", 0)][0]  # elected all the same


def _with_deleting_topic():
    s = _state()  # t-0 electable, t-1 led by its preferred replica, t-2/t-3 preferred not available
    for p in (0, 1):
        s.assignments[("gone", p)] = Assignment((1, 2))
        s.states[("gone", p)] = LeaderIsr(2, 3, 4, (1, 2), 5)  # preferred 1 in sync, 2 leads
    s.topic_partitions["gone"], s.topic_versions["gone"] = (0, 1), 0
    s.deleting["gone"] = TopicDeletion()
    return s


def test_a_topic_being_deleted_is_invalid_topic_and_not_part_of_every_partition():
    """Kafka's processReplicaLeaderElection answers a partition of a topic queued for deletion
    INVALID_TOPIC_EXCEPTION "The topic is being deleted" (high confidence); ours said
    UNKNOWN_TOPIC_OR_PARTITION, which reads as a typo. A null list is the partitions of the
    broker's metadata cache, from which a topic being deleted is gone (its UpdateMetadata with
    leader -2): not listed (medium-high confidence). Either way nothing of it is elected."""
    named = engine.step(_with_deleting_topic(), ElectionRequested(
        (("gone", 0), ("t", 0)), PREFERRED, {}, TOKEN), ControllerConfig())
    [(_, results)] = named.elections
    assert results[("gone", 0)] == (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    assert results[("t", 0)][0] == ErrorCode.NONE
    assert [w.path for w in named.writes] == [paths.partition_state("t", 0)]
    every = engine.step(_with_deleting_topic(), ElectionRequested(None, UNCLEAN, {}, TOKEN), ControllerConfig())
    [(_, results)] = every.elections
    assert not [tp for tp in results if tp[0] == "gone"] and ("t", 3) in results


def test_unclean_answers_per_partition():
    """UNCLEAN: a live leader -> ELECTION_NOT_NEEDED; no live replica -> ELIGIBLE_LEADERS_NOT_AVAILABLE;
    a dead leader with a live replica out of the ISR -> that replica alone, leader epoch + 1
    (Kafka's OfflinePartitionLeaderElectionStrategy(allowUnclean = true); high confidence)."""
    s = _state(live=(1, 2))
    s.assignments[("t", 4)] = Assignment((3,))
    s.states[("t", 4)] = LeaderIsr(3, 2, 3, (3,), 1)
    s.topic_partitions["t"] = (0, 1, 2, 3, 4)
    st = engine.step(s, ElectionRequested((("t", 3), ("t", 0), ("t", 4)), UNCLEAN, {}, TOKEN), ControllerConfig())
    [(_, results)] = st.elections
    assert {tp: c for tp, (c, _) in results.items()} == {
        ("t", 3): ErrorCode.NONE, ("t", 0): ErrorCode.ELECTION_NOT_NEEDED, ("t", 4): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
    [write] = st.writes
    assert json.loads(write.data) == {"controller_epoch": 4, "leader": 2, "version": 1, "leader_epoch": 5, "isr": [2]}


# ---- CreatePartitions -------------------------------------------------------------------------


def _body(*topics, validate_only=False, timeout_ms=10_000) -> dict:
    return {"topics": [{"name": n, "count": c, "assignments": None if a is None else [{"broker_ids": list(x)} for x in a]}
                       for n, c, a in topics], "timeout_ms": timeout_ms, "validate_only": validate_only}


def _answers(answer) -> list[tuple[int, str | None]]:
    return [(r["error_code"], r["error_message"]) for r in answer["results"]]


async def test_create_partitions_errors_carry_kafkas_messages_and_spare_the_other_topics(h):
    """Kafka's codes and messages (ZkAdminManager.createPartitions, AdminZkClient
    .validateReplicaAssignment; high confidence for the texts, which operators grep for):
    unknown brokers are checked before the number of assignments, an empty list before the
    replication factor; the partition ids named are the new partitions'. Each request grows u
    besides: a bad topic costs nothing else."""
    await h.start_controller(101)
    await h.tick()
    ctx = context(h)
    grow = iter(range(3, 20))

    async def ask(topic) -> tuple[int, str | None]:
        n = next(grow)
        answer = await handle_create_partitions(ctx, 3, _body(topic, ("u", n, None)))
        assert answer["results"][1]["error_code"] == 0, answer
        assert len(h.json(paths.topic("u"))["partitions"]) == n
        return _answers(answer)[0]

    INVALID_PARTITIONS, ASSIGNMENT = ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert await ask(("t", 2, None)) == (INVALID_PARTITIONS, "Topic currently has 3 partitions, which is higher than the requested 2.")
    assert await ask(("t", 3, None)) == (INVALID_PARTITIONS, "Topic already has 3 partitions.")
    assert await ask(("nope", 4, None)) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")
    assert await ask(("t", 5, [(1, 2, 3)])) == (ASSIGNMENT, "Increasing the number of partitions by 2 but 1 assignments provided.")
    assert await ask(("t", 5, [(1, 2, 9)])) == (ASSIGNMENT, "Unknown broker(s) in replica assignment: 9.")
    assert await ask(("t", 4, [()])) == (ASSIGNMENT, "Cannot have replication factor of 0 for partition id 3.")
    assert await ask(("t", 4, [(1, 1, 2)])) == (
        ASSIGNMENT, "Duplicate brokers not allowed in replica assignment: 1, 1, 2 for partition id 3.")
    assert await ask(("t", 5, [(1, 2, 3), (4, 5)])) == (
        ASSIGNMENT, "Inconsistent replication factor between partitions, partition 0 has 3 while partitions [4] "
                    "have replication factors [2], respectively.")
    # A name given twice: INVALID_REQUEST "Duplicate topic in request." (Kafka lists the name once,
    # its response being a map; we answer each entry, which a client matching by name reads alike).
    answer = await handle_create_partitions(ctx, 3, _body(("t", 4, None), ("u", 30, None), ("t", 5, None)))
    assert _answers(answer) == [(ErrorCode.INVALID_REQUEST, "Duplicate topic in request."), (0, None),
                                (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")]
    assert len(h.json(paths.topic("t"))["partitions"]) == 3  # t never grew
    # validate_only: the same answers, nothing written.
    before = h.server.dump()
    answer = await handle_create_partitions(ctx, 3, _body(("u", 40, None), ("t", 2, None), validate_only=True))
    assert [c for c, _ in _answers(answer)] == [0, INVALID_PARTITIONS] and h.server.dump() == before


def _two_topics():
    s = _state()
    s.assignments[("u", 0)] = Assignment((1, 2))
    s.states[("u", 0)] = LeaderIsr(1, 0, 4, (1, 2), 0)
    s.topic_partitions["u"], s.topic_versions["u"] = (0,), 0
    return s


def test_create_partitions_of_a_topic_being_deleted_or_moving():
    """A topic queued for deletion: INVALID_TOPIC_EXCEPTION "The topic is queued for deletion."
    (KafkaApis, before any other check). A topic with a partition being reassigned:
    REASSIGNMENT_IN_PROGRESS "A partition reassignment is in progress for the topic 'u'.",
    found while the existing assignment is read - before the count is looked at, so a count that
    is no increase still gets it (high confidence). The other topic grows."""
    s = _two_topics()
    s.deleting["u"] = TopicDeletion()
    st = engine.step(s, TopicsRequested("partitions", (PartitionsRequest("u", 3), PartitionsRequest("t", 5)), token=TOKEN),
                     ControllerConfig())
    [answer] = st.answers
    assert answer.results["u"][:2] == (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
    assert answer.results["t"][0] == ErrorCode.NONE and answer.results["t"][2] == {4: answer.results["t"][2][4]}
    s = _two_topics()
    s.tasks[("u", 0)] = Move(("u", 0), (3, 2), Phase.REPLICATING, original=(1, 2))
    st = engine.step(s, TopicsRequested("partitions", (PartitionsRequest("u", 1), PartitionsRequest("t", 5)), token=TOKEN),
                     ControllerConfig())
    [answer] = st.answers
    assert answer.results["u"][:2] == (ErrorCode.REASSIGNMENT_IN_PROGRESS, "A partition reassignment is in progress for the topic 'u'.")
    assert answer.results["t"][0] == ErrorCode.NONE


async def test_new_partitions_are_rack_aware_led_and_announced():
    """No assignment: each new partition spans min(RF, racks) racks (DESIGN 4.4 step 2: the
    placement's own rack rule where Kafka's AdminUtils round-robins over racks; both are
    rack-aware). Each new partition gets a state znode (leader its first replica, epoch 0),
    LeaderAndIsr with is_new to every replica and UpdateMetadata to every live broker
    (Kafka's onNewPartitionCreation)."""
    h = Harness(topics=("t:2:3:64KiB", "u:2:2:64KiB"))
    h.cluster.settings = dataclasses.replace(h.cluster.settings, racks=3)
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        sent = len(h.sent)
        answer = await handle_create_partitions(context(h), 3, _body(("t", 8, None), ("u", 6, None)))
        assert [c for c, _ in _answers(answer)] == [0, 0]
        await h.settle()
        rack = h.cluster.settings.rack_of
        for name, have, want, rf in (("t", 2, 8, 3), ("u", 2, 6, 2)):
            parts = h.json(paths.topic(name))["partitions"]
            assert len(parts) == want
            for p in range(have, want):
                rs = parts[str(p)]
                assert len(rs) == rf and len({rack(b) for b in rs}) == rf, (name, p, rs)
                state = h.json(paths.partition_state(name, p))
                assert (state["leader"], state["leader_epoch"], state["isr"]) == (rs[0], 0, rs)
                lai = {b for b, key, body in h.sent[sent:] if key == ApiKey.LEADER_AND_ISR
                       for t in body["topic_states"] if t["topic_name"] == name
                       for e in t["partition_states"] if e["partition_index"] == p and e["is_new"]}
                assert lai == set(rs), (name, p)
                told = {b for b, key, body in h.sent[sent:] if key == ApiKey.UPDATE_METADATA
                        for e in body["topic_states"] if e["topic_name"] == name
                        for ps in e["partition_states"] if ps["partition_index"] == p}
                assert told == set(h.cluster.settings.broker_ids), (name, p)
    finally:
        await h.close()
