"""DescribeReassignments answers matched to the partitions asked about when ids are shared.

Moves started in one step share a reassignment id (one multi-op, one czxid). A v1 answer names
each description's partition (tagged Topic / PartitionId); a v0 answer (or a v1 sender that
leaves the tags out) is matched by request order, and only where the order pins it down.
Pure tests of client.wire.describe_results, then the AdminClient and ``--describe`` against a
codec-built wire server that answers as the controller does.
"""

from __future__ import annotations

import pytest

from client import commands, wire
from client.admin import AdminClient
from client.admin_backend import AdminBackend
from client.errors import InputError, KafkaApiError, ProtocolViolationError
from client.metadata import Reassignment
from protocol import ApiKey
from tests.client.wire_cluster import WireCluster

UNTHROTTLED = 2**63 - 1
SHARED = 9001  # the czxid of one multi-op that started several moves


def desc(rid, leader, brokers=(4,), tp=None):
    """A description as the wire carries it; ``tp`` fills v1's tags."""
    d = {"reassignment_id": rid, "start_time": 1_000 + leader, "leader_id": leader, "leader_throttle": UNTHROTTLED,
         "new_assigned": [{"broker_id": b, "follower_throttle": 100 * b} for b in brokers]}
    if tp is not None:
        d.update(topic=tp[0], partition_id=tp[1])
    return d


def answer(*descriptions):
    return {"error_code": 0, "error_message": None, "description": list(descriptions)}


def leaders(match):
    return {tp: None if d is None else d.current_leader for tp, d in match.described.items()}


A0, A1, A2, B0 = (Reassignment("a", 0, SHARED), Reassignment("a", 1, SHARED), Reassignment("a", 2, SHARED),
                  Reassignment("b", 0, 77))


# ---- client.wire.describe_results --------------------------------------------------------------


def test_v1_tags_match_each_description_to_its_partition_whatever_the_order():
    match = wire.describe_results(answer(desc(SHARED, 3, tp=("a", 2)), desc(SHARED, 1, tp=("a", 0))), [A0, A1, A2])
    assert leaders(match) == {("a", 0): 1, ("a", 1): None, ("a", 2): 3}
    assert match.ambiguous == []
    d = match.described[("a", 2)]
    assert d.reassignment == A2 and d.new_assigned_throttles == {4: 400} and d.start_time == 1_003


def test_v0_order_matches_when_every_entry_came_back():
    match = wire.describe_results(answer(desc(SHARED, 1), desc(SHARED, 2), desc(SHARED, 3)), [A0, A1, A2])
    assert leaders(match) == {("a", 0): 1, ("a", 1): 2, ("a", 2): 3} and match.ambiguous == []


def test_v0_order_says_when_it_cannot_pin_a_description_down():
    # one of three moves sharing an id finished: which one cannot be told from order alone
    match = wire.describe_results(answer(desc(SHARED, 1), desc(SHARED, 2)), [A0, A1, A2])
    assert match.ambiguous == [A0, A1, A2] and match.described == {}
    # other ids around it are still pinned, and one that did not come back is None
    match = wire.describe_results(answer(desc(SHARED, 1), desc(77, 5)), [A0, A1, B0, Reassignment("c", 0, 88)])
    assert match.ambiguous == [A0, A1]
    assert leaders(match) == {("b", 0): 5, ("c", 0): None}


def test_v0_order_across_ids_pins_what_one_id_alone_would_not():
    # a-0 and a-2 share an id; the only SHARED description comes before b-0's, so it is a-0's
    asked = [A0, B0, A2]
    match = wire.describe_results(answer(desc(SHARED, 1), desc(77, 5)), asked)
    assert leaders(match) == {("a", 0): 1, ("b", 0): 5, ("a", 2): None} and match.ambiguous == []
    match = wire.describe_results(answer(desc(77, 5), desc(SHARED, 3)), asked)
    assert leaders(match) == {("a", 0): None, ("b", 0): 5, ("a", 2): 3}


def test_tagged_and_untagged_descriptions_in_one_answer():
    # the tagged one is placed first; the untagged ones by order among what is left
    match = wire.describe_results(answer(desc(SHARED, 1), desc(SHARED, 2, tp=("a", 1)), desc(SHARED, 3)), [A0, A1, A2])
    assert leaders(match) == {("a", 0): 1, ("a", 1): 2, ("a", 2): 3} and match.ambiguous == []


@pytest.mark.parametrize("bad,why", [
    (answer(desc(SHARED, 1, tp=("a", 9))), "not asked about"),
    (answer(desc(SHARED, 1, tp=("zzz", 0))), "not asked about"),
    (answer(desc(77, 1, tp=("a", 0))), "asked: 9001"),
    (answer(desc(SHARED, 1, tp=("a", 0)), desc(SHARED, 2, tp=("a", 0))), "twice"),
    (answer({**desc(SHARED, 1), "topic": "a"}), "not asked about"),        # half the tags
    (answer({**desc(SHARED, 1), "partition_id": 0}), "not asked about"),
    (answer(desc(12345, 1)), "not among the reassignments asked about"),     # an id never asked about
    (answer(desc(77, 5), desc(77, 6)), "in request order"),                 # more than asked
    (answer(desc(77, 5), desc(SHARED, 1), desc(SHARED, 2)), "in request order"),  # out of order
])
def test_answers_that_cannot_be_about_the_request_are_refused(bad, why):
    with pytest.raises(ProtocolViolationError, match=why):
        wire.describe_results(bad, [A0, A1, B0])


def test_a_top_level_error_is_raised():
    with pytest.raises(KafkaApiError) as exc:
        wire.describe_results({"error_code": 41, "error_message": "standby", "description": []}, [A0])
    assert exc.value.code == 41


# ---- AdminClient and --describe against a wire server ---------------------------------------


class Controller:
    """Answers DescribeReassignments as kip240.handle_describe does: request order, an entry
    described only when its partition runs with that id, tags in v1 when ``tags``."""

    def __init__(self, running: dict, leaders: dict, tags: bool = True):
        self.running = running  # (topic, partition) -> id
        self.leaders = leaders  # (topic, partition) -> leader
        self.tags = tags

    def describe(self, version: int, body: dict) -> dict:
        out = []
        for entry in body["topic_reassignment"]:
            tp = (entry["topic"], entry["reassignment"]["partition_id"])
            rid = entry["reassignment"]["reassignment_id"]
            if self.running.get(tp) == rid:
                out.append(desc(rid, self.leaders[tp], tp=tp if self.tags and version >= 1 else None))
        return answer(*out)


@pytest.fixture
async def cluster():
    c = await WireCluster.start()
    c.topics = {"a": {0: [1, 2], 1: [2, 3], 2: [3, 1]}, "b": {0: [1, 3]}}
    c.running = {("a", 0): SHARED, ("a", 1): SHARED, ("a", 2): SHARED, ("b", 0): 77}
    try:
        yield c
    finally:
        await c.stop()


def serve(c: WireCluster, controller: Controller, version: int) -> None:
    server = c.controllers[c.controller_id]
    server.handlers[ApiKey.DESCRIBE_REASSIGNMENTS] = controller.describe
    server.offered[ApiKey.DESCRIBE_REASSIGNMENTS] = (0, version)


async def test_v1_answers_are_matched_by_their_tags(cluster):
    ctl = Controller(dict(cluster.running), {("a", 0): 1, ("a", 1): 2, ("a", 2): 3, ("b", 0): 4})
    serve(cluster, ctl, 1)
    del ctl.running[("a", 1)]  # finished after the list
    async with AdminClient(cluster.bootstrap) as admin:
        listed = await admin.list_reassignments()
        described = await admin.describe_reassignments(listed.values())
    assert {tp: d and d.current_leader for tp, d in described.items()} == {
        ("a", 0): 1, ("a", 1): None, ("a", 2): 3, ("b", 0): 4}
    assert described[("a", 2)].reassignment == Reassignment("a", 2, SHARED)
    assert [v for v, _ in cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)] == [1]  # one request: the tags leave nothing to guess


async def test_v0_answers_are_matched_by_order_and_ambiguous_ones_asked_again(cluster):
    ctl = Controller(dict(cluster.running), {("a", 0): 1, ("a", 1): 2, ("a", 2): 3, ("b", 0): 4})
    serve(cluster, ctl, 0)
    async with AdminClient(cluster.bootstrap) as admin:
        listed = await admin.list_reassignments()
        everything = await admin.describe_reassignments(listed.values())
        assert {tp: d.current_leader for tp, d in everything.items()} == {
            ("a", 0): 1, ("a", 1): 2, ("a", 2): 3, ("b", 0): 4}
        assert len(cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)) == 1  # all came back: order pins each one
        del ctl.running[("a", 1)]
        described = await admin.describe_reassignments(listed.values())
    assert {tp: d and d.current_leader for tp, d in described.items()} == {
        ("a", 0): 1, ("a", 1): None, ("a", 2): 3, ("b", 0): 4}
    # two SHARED descriptions for three SHARED entries: each of those asked about on its own
    again = [[(e["topic"], e["reassignment"]["partition_id"]) for e in b["topic_reassignment"]]
             for v, b in cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)[2:]]
    assert again == [[("a", 0)], [("a", 1)], [("a", 2)]]
    assert {v for v, _ in cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)} == {0}


async def test_v1_without_tags_falls_back_to_order(cluster):
    ctl = Controller(dict(cluster.running), {("a", 0): 1, ("a", 1): 2, ("a", 2): 3, ("b", 0): 4}, tags=False)
    serve(cluster, ctl, 1)
    del ctl.running[("a", 2)]
    async with AdminClient(cluster.bootstrap) as admin:
        described = await admin.describe_reassignments(
            [Reassignment("a", 2, SHARED), Reassignment("b", 0, 77), Reassignment("a", 0, SHARED)])
    # keyed by partition, in the order given; the one SHARED description follows b-0's, so it is a-0's
    assert list(described) == [("a", 2), ("b", 0), ("a", 0)]
    assert [d and d.current_leader for d in described.values()] == [None, 4, 1]
    assert len(cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)) == 1


async def test_bad_input_is_refused_before_anything_is_sent(cluster):
    async with AdminClient(cluster.bootstrap) as admin:
        with pytest.raises(InputError, match="two reassignments of a-0"):
            await admin.describe_reassignments([Reassignment("a", 0, 1), Reassignment("a", 0, 2)])
        with pytest.raises(InputError, match="not a Reassignment"):
            await admin.describe_reassignments([("a", 0)])
        assert await admin.describe_reassignments([]) == {}
        # the same reassignment twice is asked about once
        described = await admin.describe_reassignments([Reassignment("a", 0, SHARED)] * 2)
        assert list(described) == [("a", 0)]
    [(_, body)] = cluster.received(ApiKey.DESCRIBE_REASSIGNMENTS)
    assert len(body["topic_reassignment"]) == 1


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_command_shows_each_partition_with_its_own_leader(cluster, version):
    ctl = Controller(dict(cluster.running), {("a", 0): 1, ("a", 1): 2, ("a", 2): 3, ("b", 0): 4})
    serve(cluster, ctl, version)
    # the list the command makes first is answered before a-1 finishes; its description is not
    list_handler = cluster.controllers[cluster.controller_id].handlers[ApiKey.LIST_REASSIGNMENTS]

    def list_then_finish(v, body):
        out = list_handler(v, body)
        ctl.running.pop(("a", 1), None)
        return out

    cluster.controllers[cluster.controller_id].handlers[ApiKey.LIST_REASSIGNMENTS] = list_then_finish
    backend = AdminBackend(AdminClient(cluster.bootstrap))
    await backend.admin.start()
    try:
        report = await commands.describe_reassignments(backend)
    finally:
        await backend.close()
    shown = {(r["topic"], r["partition"]): (r["leader"], r["start_time_ms"]) for r in report.data["reassignments"]}
    assert shown == {("a", 0): (1, 1_001), ("a", 2): (3, 1_003), ("b", 0): (4, 1_004)}
    a2 = report.text.split("Reassignment of a-2 ")[1].split("Reassignment of")[0]
    assert a2.startswith(f"(id {SHARED})") and "leader:           3 (throttle none)" in a2
    assert "new brokers:      4 (throttle 400 B/s)" in a2
