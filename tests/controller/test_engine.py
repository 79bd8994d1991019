"""The pure engine, step by step against the worked state table in controller.core.engine."""

from __future__ import annotations

import copy

import pytest

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import BrokersRead, CancelRequested, MetadataRead, RequestsRead, StatesRead, StopReplicaSent
from controller.core.task import IllegalTransition, Move, Phase
from protocol import ApiKey
from tests.controller.helpers import EPOCH, body_partitions, cluster, loads, req, state
from znodes.api import Create, Delete, SetData
from znodes.values import Assignment, Broker

TP = ("t", 0)
CFG = ControllerConfig()


def run(s, events, config=CFG):
    """One step, checked for purity, then applied (as the shell does after its writes)."""
    before = copy.deepcopy(s)
    step = engine.step(s, events, config)
    assert s == before, "engine.step mutated its input state"
    s.apply(step.delta)
    return step


def row(s, tp=TP):
    """(RS, AR, RR, ISR, leader, phase) - one row of the worked state table."""
    a = s.assignments[tp]
    st = s.states.get(tp)
    move = s.tasks.get(tp)
    return (
        a.replicas,
        a.adding,
        a.removing,
        st.isr if st else None,
        st.leader if st else None,
        move.phase if move else None,
    )


def by_kind(step, api_key):
    return {c.broker_id: c for c in step.commands if c.api_key == api_key}


def test_worked_state_table_ors_123_to_trs_456():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    # 0 initial
    assert row(s) == ((1, 2, 3), (), (), None, None, None)

    # 1-2 accepted and scheduled: a slot is taken, the state is read first
    step = run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)),)))
    assert step.writes == [] and step.reads == {TP}
    assert s.tasks[TP].phase is Phase.LOADING

    # 3 start: record, state (leader epoch + 1), topic znode (+ original_replicas) in one
    # flush, then LeaderAndIsr to RS with the new leader epoch
    step = run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=0)}))
    assert row(s) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (1, 2, 3), 1, Phase.REPLICATING)
    parent, create, bump, topic, requests = step.writes
    assert parent == Create("/admin/reassignments/t")
    assert create == Create("/admin/reassignments/t/0", create.data)
    assert loads(create.data) == {"version": 1, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3]}
    assert bump == SetData("/brokers/topics/t/partitions/0/state", bump.data, 0)
    assert loads(bump.data) == {"controller_epoch": EPOCH, "leader": 1, "version": 1, "leader_epoch": 1, "isr": [1, 2, 3]}
    assert isinstance(topic, SetData) and topic.path == "/brokers/topics/t" and topic.version == 0
    assert loads(topic.data) == {
        "version": 2,
        "partitions": {"0": [4, 5, 6, 1, 2, 3]},
        "adding_replicas": {"0": [4, 5, 6]},
        "removing_replicas": {"0": [1, 2, 3]},
    }
    assert isinstance(requests, SetData) and requests.path == "/admin/reassign_partitions" and requests.version == 0
    assert loads(requests.data)["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3]}
    ]
    lai = by_kind(step, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [1, 2, 3, 4, 5, 6]
    for b, command in lai.items():
        entry = body_partitions(command)[TP]
        assert entry["replicas"] == [4, 5, 6, 1, 2, 3]
        assert entry["adding_replicas"] == [4, 5, 6] and entry["removing_replicas"] == [1, 2, 3]
        assert entry["is_new"] is (b in (4, 5, 6))
        assert entry["leader"] == 1 and entry["leader_epoch"] == 1 and entry["zk_version"] == 1
        assert command.body["controller_epoch"] == EPOCH and command.body["controller_id"] == 101
    assert not by_kind(step, ApiKey.STOP_REPLICA)

    # 4 AR catching up: partial ISR growth changes nothing but the cache
    note = "/isr_change_notification/isr_change_0000000000"
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=2, leader_epoch=1)}, (note,)))
    assert step.writes == [Delete(note)]
    assert row(s) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (1, 2, 3, 4), 1, Phase.REPLICATING)

    # 4 -> 5 TRS inside the ISR: leader 4, ISR shrunk to TRS, epoch+1, conditional on zkVersion 3
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 5, 6), zk_version=3, leader_epoch=1)}))
    assert row(s) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (4, 5, 6), 4, Phase.STOPPING)
    (write,) = step.writes
    assert write.path == "/brokers/topics/t/partitions/0/state" and write.version == 3
    assert loads(write.data) == {"controller_epoch": EPOCH, "leader": 4, "version": 1, "leader_epoch": 2, "isr": [4, 5, 6]}
    assert sorted(by_kind(step, ApiKey.LEADER_AND_ISR)) == [4, 5, 6]
    entry = body_partitions(by_kind(step, ApiKey.LEADER_AND_ISR)[5])[TP]
    assert entry["replicas"] == [4, 5, 6] and entry["adding_replicas"] == [] and entry["zk_version"] == 4
    assert entry["leader_epoch"] == 2
    stops = by_kind(step, ApiKey.STOP_REPLICA)
    assert sorted(stops) == [1, 2, 3]
    for command in stops.values():
        assert command.partitions == (TP,)
        assert body_partitions(command)[TP] == {"partition_index": 0, "leader_epoch": 2, "delete_partition": True}

    # 6 StopReplica sent: one flush writes RS = TRS, deletes the record, drops the entry
    step = run(s, StopReplicaSent((TP,)))
    assert row(s) == ((4, 5, 6), (), (), (4, 5, 6), 4, None)  # the state it wrote stays known
    topic, record, parent, requests = step.writes
    assert loads(topic.data)["partitions"] == {"0": [4, 5, 6]} and topic.version == 1
    assert loads(topic.data)["adding_replicas"] == {} and loads(topic.data)["removing_replicas"] == {}
    assert record == Delete("/admin/reassignments/t/0") and parent == Delete("/admin/reassignments/t")
    assert requests == Delete("/admin/reassign_partitions", 1)
    assert step.finished
    assert sorted(by_kind(step, ApiKey.UPDATE_METADATA)) == [1, 2, 3, 4, 5, 6]
    assert s.tasks == {} and s.requests == {} and s.requests_version is None and s.record_counts == {}


def test_a_state_known_from_the_election_read_starts_a_move_without_a_read():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    run(s, MetadataRead({TP: state(1, (1, 2, 3), zk_version=7)}))
    assert s.states[TP].zk_version == 7
    step = run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)), req("t", 1, (1, 5, 3)))))
    assert step.reads == {("t", 1)}  # only the partition whose state is not known
    assert s.tasks[TP].phase is Phase.REPLICATING and s.tasks[("t", 1)].phase is Phase.LOADING
    assert [w.path for w in step.writes][:3] == [
        "/admin/reassignments/t", "/admin/reassignments/t/0", "/brokers/topics/t/partitions/0/state",
    ]
    assert step.writes[2].version == 7  # the new leader epoch, conditional on the state known
    entry = body_partitions(by_kind(step, ApiKey.LEADER_AND_ISR)[4])[TP]
    assert (entry["zk_version"], entry["leader_epoch"]) == (8, 1)


def test_notified_states_keep_the_known_state_fresh_and_a_newer_known_one_wins():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    note = "/isr_change_notification/isr_change_0000000000"
    run(s, StatesRead({TP: state(1, (1, 2), zk_version=3)}, (note,)))
    assert s.states[TP] == state(1, (1, 2), zk_version=3)  # no move: kept all the same
    run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=2)}, (note,)))
    assert s.states[TP].zk_version == 3  # an older one (a leftover notification) is ignored
    run(s, MetadataRead({TP: state(1, (1, 2, 3), zk_version=4)}))
    assert s.states[TP] == state(1, (1, 2, 3), zk_version=4)


def test_a_partition_moved_again_right_after_its_move_ended_reads_its_state_first():
    # The ended move's record is deleted late in its flush; the next move's record create
    # must not come first in that same flush, so the next move waits for a read.
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (1, 2, 4)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=1)}, ("/isr_change_notification/isr_change_0000000000",)))
    assert s.tasks[TP].phase is Phase.STOPPING
    run(s, RequestsRead(2, (req("t", 0, (1, 2, 5), original=(1, 2, 3)),)))  # a newer target, queued behind
    step = run(s, StopReplicaSent((TP,)))
    assert s.tasks[TP].phase is Phase.LOADING and step.reads == {TP}
    assert Delete("/admin/reassignments/t/0") in step.writes
    assert not any(isinstance(w, Create) and w.path == "/admin/reassignments/t/0" for w in step.writes)
    step = run(s, StatesRead({TP: state(1, (1, 2, 4), zk_version=2, leader_epoch=1)}))
    assert s.tasks[TP].phase is Phase.REPLICATING and Create("/admin/reassignments/t/0", step.writes[1].data) in step.writes


def test_first_record_of_a_topic_creates_its_parent():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)), req("t", 1, (1, 5, 3)))))
    step = run(s, StatesRead({("t", 0): state(1, (1, 2, 3)), ("t", 1): state(1, (1, 2, 3))}))
    assert step.writes[0] == Create("/admin/reassignments/t")
    assert [w.path for w in step.writes[1:5]] == [
        "/admin/reassignments/t/0", "/brokers/topics/t/partitions/0/state",
        "/admin/reassignments/t/1", "/brokers/topics/t/partitions/1/state",
    ]
    assert s.record_counts == {"t": 2}


@pytest.mark.parametrize(
    "entry, reason",
    [
        (req("nope", 0, (1, 2, 3)), "unknown topic"),
        (req("t", 9, (1, 2, 3)), "unknown partition"),
        (req("t", 1, (1, 2, 99)), "unknown broker"),
        (req("t", 1, (1, 2, 2)), "duplicate broker"),
        (req("t", 1, ()), "empty replica list"),
    ],
)
def test_invalid_entries_are_dropped_with_a_reason_and_the_rest_proceed(entry, reason):
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    step = run(s, RequestsRead(5, (req("t", 0, (4, 5, 6)), entry)))
    assert any(reason in line for line in step.log), step.log
    (rewrite,) = step.writes
    assert rewrite.path == "/admin/reassign_partitions" and rewrite.version == 5
    assert [e["partition"] for e in loads(rewrite.data)["partitions"]] == [0]
    assert s.tasks[("t", 0)].phase is Phase.LOADING


def test_an_entry_may_keep_a_replica_on_a_dead_broker_but_not_add_one():
    """Kafka's liveness check covers only the replicas a target adds (validateReplicas): broker
    3 is down, a target keeping its replica is taken and waits for it; one adding 3 is refused."""
    s = cluster(brokers=(1, 2, 4, 5, 6), topics={"t": {0: (1, 2, 3), 1: (1, 2, 4)}})
    step = run(s, RequestsRead(5, (req("t", 0, (4, 2, 3)), req("t", 1, (1, 2, 3)))))
    assert any("unknown broker(s) [3]" in line for line in step.log), step.log
    assert s.tasks[("t", 0)].phase is Phase.LOADING and ("t", 1) not in s.tasks
    run(s, StatesRead({("t", 0): state(1, (1, 2))}))
    assert s.tasks[("t", 0)].phase is Phase.REPLICATING
    run(s, StatesRead({("t", 0): state(1, (1, 2, 4), zk_version=1)}, ("/isr_change_notification/isr_change_0000000000",)))
    assert s.tasks[("t", 0)].phase is Phase.REPLICATING  # 3 is not back in the ISR: TRS not in ISR


def test_entries_that_do_not_parse_are_dropped_too():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    step = run(s, RequestsRead(2, (req("t", 0, (4, 5, 6)),), rejected=("dropping entry 1 (x-1): bad",)))
    assert "dropping entry 1 (x-1): bad" in step.warnings  # input to fix: logged at WARNING
    assert [w.path for w in step.writes] == ["/admin/reassign_partitions"]


def test_a_malformed_znode_changes_nothing():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    before = copy.deepcopy(s)
    step = run(s, RequestsRead(3, None, error="payload is not JSON"))
    assert step.writes == [] and step.commands == [] and step.reads == frozenset()
    assert any("not JSON" in line for line in step.warnings)
    # Only that it exists, at which version: a v0 request is refused while it does, and a
    # write of it is conditional on that version.
    assert s.requests_version == 3
    s.requests_version = before.requests_version
    assert s == before


def test_duplicate_partition_entries_keep_the_first():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    step = run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)), req("t", 0, (1, 5, 6)))))
    assert any("duplicate entry" in line for line in step.log)
    assert s.tasks[TP].target == (4, 5, 6)
    assert len(loads(step.writes[0].data)["partitions"]) == 1


def test_an_entry_already_at_its_target_is_dropped_as_done():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    step = run(s, RequestsRead(0, (req("t", 0, (1, 2, 3)),)))
    assert step.writes == [Delete("/admin/reassign_partitions", 0)]
    assert s.tasks == {} and step.finished


def test_plain_kafka_format_gets_original_replicas_when_taken():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (2, 3, 4)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)), req("t", 1, (1, 5, 6), original=(2, 3, 4)))))
    step = run(s, StatesRead({("t", 0): state(1, (1, 2, 3)), ("t", 1): state(2, (2, 3, 4))}))
    entries = loads(step.writes[-1].data)["partitions"]
    assert entries == [
        {"topic": "t", "partition": 0, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3]},
        {"topic": "t", "partition": 1, "replicas": [1, 5, 6], "original_replicas": [2, 3, 4]},
    ]


def test_per_broker_caps_and_no_batch_barrier():
    parts = {p: (1, 2, 3) for p in range(4)}
    s = cluster(topics={"t": parts})
    config = ControllerConfig(max_incoming_per_broker=1, max_outgoing_per_broker=10)
    # every move adds broker 4: one at a time
    step = run(s, RequestsRead(0, tuple(req("t", p, (4, 2, 3)) for p in range(4))), config)
    assert step.reads == {("t", 0)}
    run(s, StatesRead({("t", 0): state(1, (1, 2, 3))}), config)
    assert [s.tasks[("t", p)].phase for p in range(4)] == [Phase.REPLICATING] + [Phase.PENDING] * 3
    # the moment one completes, the next starts - in the same step
    run(s, StatesRead({("t", 0): state(1, (1, 2, 3, 4), zk_version=1)}), config)
    step = run(s, StopReplicaSent((("t", 0),)), config)
    assert ("t", 0) not in s.tasks
    assert step.reads == {("t", 1)} and s.tasks[("t", 1)].phase is Phase.LOADING


def test_outgoing_and_cluster_caps():
    parts = {p: (1, 2, 3) for p in range(6)}
    s = cluster(topics={"t": parts})
    config = ControllerConfig(max_outgoing_per_broker=2)
    step = run(s, RequestsRead(0, tuple(req("t", p, (4, 2, 3)) for p in range(6))), config)
    assert len(step.reads) == 2  # broker 1 loses a replica in every move
    s2 = cluster(topics={"t": parts})
    config = ControllerConfig(max_cluster_moves=3)
    step = run(s2, RequestsRead(0, tuple(req("t", p, (p % 3 + 4, 2, 3)) for p in range(6))), config)
    assert len(step.reads) == 3
    assert engine.slot_usage(s2)[0] == 3


def test_completions_in_one_step_write_shared_znodes_once():
    n = 50
    s = cluster(topics={"t": {p: (1, 2, 3) for p in range(n)}})
    config = ControllerConfig(max_incoming_per_broker=n, max_outgoing_per_broker=n)
    run(s, RequestsRead(0, tuple(req("t", p, (4, 2, 3)) for p in range(n))), config)
    run(s, StatesRead({("t", p): state(1, (1, 2, 3)) for p in range(n)}), config)
    run(s, StatesRead({("t", p): state(1, (1, 2, 3, 4), zk_version=1) for p in range(n)}), config)
    step = run(s, StopReplicaSent(tuple(("t", p) for p in range(n))), config)
    paths = [w.path for w in step.writes]
    assert paths.count("/brokers/topics/t") == 1
    assert paths.count("/admin/reassign_partitions") == 1
    assert sum(p.startswith("/admin/reassignments/t/") for p in paths) == n
    # order keeps every prefix recoverable: topic first, then record deletes, then the znode
    assert paths[0] == "/brokers/topics/t" and paths[-1] == "/admin/reassign_partitions"
    assert sum(c.api_key == ApiKey.UPDATE_METADATA for c in step.commands) == 6  # one per broker, not per partition


def test_completion_waits_for_a_live_target_leader():
    s = cluster(brokers=(1, 2, 3, 4), topics={"t": {0: (1, 2)}})
    run(s, RequestsRead(0, (req("t", 0, (3, 4)),)))
    run(s, StatesRead({TP: state(1, (1, 2))}))
    run(s, BrokersRead({b: Broker(b, "h", 9000 + b, None, b) for b in (1, 2)}))
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=1)}))
    assert s.tasks[TP].phase is Phase.REPLICATING and step.writes[:1] == []
    step = run(s, BrokersRead({b: Broker(b, "h", 9000 + b, None, b) for b in (1, 2, 4)}))
    assert s.tasks[TP].phase is Phase.STOPPING and s.states[TP].leader == 4
    # the returning broker is told about the move, too
    assert any(c.api_key == ApiKey.LEADER_AND_ISR and c.broker_id == 4 for c in step.commands)


def test_replication_factor_increase_needs_no_stop_replica():
    s = cluster(topics={"t": {0: (1, 2)}})
    run(s, RequestsRead(0, (req("t", 0, (1, 2, 3)),)))
    run(s, StatesRead({TP: state(1, (1, 2))}))
    step = run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=2, leader_epoch=1)}))
    assert not by_kind(step, ApiKey.STOP_REPLICA)
    # nothing to remove and the ISR is already TRS: the completion's new leader epoch (Kafka
    # bumps it at every completion; the LeaderAndIsr says RS = TRS, nothing adding), then
    # straight to the final multi
    assert body_partitions(by_kind(step, ApiKey.LEADER_AND_ISR)[3])[TP]["leader_epoch"] == 2
    assert [w.path for w in step.writes] == [
        "/brokers/topics/t/partitions/0/state",
        "/brokers/topics/t",
        "/admin/reassignments/t/0",
        "/admin/reassignments/t",
        "/admin/reassign_partitions",
    ]
    assert s.assignments[TP] == Assignment((1, 2, 3)) and s.tasks == {}


def test_a_new_target_while_replicating_replaces_it_in_place():
    """KIP-455's override, the second table of controller.core.engine: ORS (1,2,3) -> TRS (4,5,6)
    replaced by (4,6,3) while only 4 is in sync. 5 is dropped: outside the ISR, it holds no
    in-sync copy and is deleted at once, as Kafka does; the new RS is announced with a new
    leader epoch."""
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=2, leader_epoch=1)}))
    assert row(s) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (1, 2, 3, 4), 1, Phase.REPLICATING)

    # 4b record, state (epoch + 1), topic znode; LeaderAndIsr to 1..4 and 6, none new;
    # StopReplica(delete) to 5, which nothing waits for
    step = run(s, RequestsRead(2, (req("t", 0, (4, 6, 3), (1, 2, 3)),)))
    move = s.tasks[TP]
    assert (move.target, move.original, move.dropped, move.next_target) == ((4, 6, 3), (1, 2, 3), (), None)
    assert row(s) == ((4, 6, 3, 1, 2), (4, 6), (1, 2), (1, 2, 3, 4), 1, Phase.REPLICATING)
    record, bump, topic = step.writes
    assert record == SetData("/admin/reassignments/t/0", record.data)
    assert loads(record.data) == {"version": 1, "replicas": [4, 6, 3], "original_replicas": [1, 2, 3]}
    assert bump == SetData("/brokers/topics/t/partitions/0/state", bump.data, 2)
    assert loads(bump.data)["leader_epoch"] == 2 and loads(bump.data)["isr"] == [1, 2, 3, 4]
    assert loads(topic.data)["partitions"] == {"0": [4, 6, 3, 1, 2]}
    assert loads(topic.data)["removing_replicas"] == {"0": [1, 2]}
    lai = by_kind(step, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [1, 2, 3, 4, 6]
    assert not any(body_partitions(c)[TP]["is_new"] for c in lai.values())
    assert {body_partitions(c)[TP]["leader_epoch"] for c in lai.values()} == {2}
    (stop,) = by_kind(step, ApiKey.STOP_REPLICA).values()
    assert stop.broker_id == 5 and stop.partitions == ()  # no move waits for it
    assert body_partitions(stop)[TP] == {"partition_index": 0, "leader_epoch": 2, "delete_partition": True}
    assert any("replaced by [4, 6, 3]; [5] deleted now" in line for line in step.log)

    # 5 6 catches up: leader 4, ISR shrunk to TRS; RR = 1, 2 are deleted
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 6), zk_version=4, leader_epoch=2)}))
    assert row(s) == ((4, 6, 3, 1, 2), (4, 6), (1, 2), (3, 4, 6), 4, Phase.STOPPING)
    assert sorted(by_kind(step, ApiKey.STOP_REPLICA)) == [1, 2]

    # 6 final multi
    run(s, StopReplicaSent((TP,)))
    assert s.assignments[TP] == Assignment((4, 6, 3)) and s.tasks == {} and TP not in s.requests


def test_an_override_keeps_a_dropped_replica_in_the_isr_until_it_completes():
    """A dropped replica in the ISR holds an in-sync copy: deleting it before the new target
    is in sync would shrink the ISR, which invariant 4 protects. It stays at the end of RR."""
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 5), zk_version=2, leader_epoch=1)}))
    step = run(s, RequestsRead(2, (req("t", 0, (4, 6, 3), (1, 2, 3)),)))
    assert s.tasks[TP].dropped == (5,)
    assert row(s) == ((4, 6, 3, 1, 2, 5), (4, 6), (1, 2, 5), (1, 2, 3, 4, 5), 1, Phase.REPLICATING)
    assert by_kind(step, ApiKey.STOP_REPLICA) == {}
    assert any("[5] (in sync) go when it completes" in line for line in step.log)
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 5, 6), zk_version=4, leader_epoch=2)}))
    assert s.tasks[TP].phase is Phase.STOPPING and sorted(by_kind(step, ApiKey.STOP_REPLICA)) == [1, 2, 5]


def moving_to(target):
    """t-0 replicating from (1,2,3) to ``target``, nothing in sync yet."""
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, target),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    return s


def test_a_replica_new_to_an_override_is_told_it_is_new():
    s = moving_to((4, 5, 3))
    step = run(s, RequestsRead(2, (req("t", 0, (4, 6, 3), (1, 2, 3)),)))
    lai = by_kind(step, ApiKey.LEADER_AND_ISR)
    assert {b for b, c in lai.items() if body_partitions(c)[TP]["is_new"]} == {6}


def test_an_override_that_takes_back_a_dropped_replica_adds_it_again():
    s = moving_to((4, 5, 3))
    run(s, RequestsRead(2, (req("t", 0, (4, 6, 3), (1, 2, 3)),)))  # 5 deleted
    step = run(s, RequestsRead(3, (req("t", 0, (5, 6, 3), (1, 2, 3)),)))  # 4 deleted, 5 new again
    move = s.tasks[TP]
    assert (move.target, move.adding, move.dropped, move.removing) == ((5, 6, 3), (5, 6), (), (1, 2))
    assert body_partitions(by_kind(step, ApiKey.LEADER_AND_ISR)[5])[TP]["is_new"] is True
    assert sorted(by_kind(step, ApiKey.STOP_REPLICA)) == [4]


def test_an_override_back_to_the_original_replicas_is_a_cancel():
    s = moving_to((4, 5, 3))
    step = run(s, RequestsRead(2, (req("t", 0, (1, 2, 3), (1, 2, 3)),)))
    assert s.tasks[TP].phase is Phase.CANCELLING
    assert sorted(by_kind(step, ApiKey.STOP_REPLICA)) == [4, 5]
    run(s, StopReplicaSent((TP,)))
    assert s.assignments[TP] == Assignment((1, 2, 3)) and s.tasks == {} and TP not in s.requests


def test_a_rollback_of_an_overridden_move_deletes_what_every_target_added():
    s = moving_to((4, 5, 3))
    run(s, StatesRead({TP: state(1, (1, 2, 3, 5), zk_version=2, leader_epoch=1)}))  # 5 in sync: kept
    run(s, RequestsRead(2, (req("t", 0, (4, 6, 3), (1, 2, 3)),)))
    step = run(s, CancelRequested((TP,), token="token"))
    assert s.assignments[TP] == Assignment((1, 2, 3, 4, 6, 5), (), (4, 6, 5))
    assert sorted(by_kind(step, ApiKey.STOP_REPLICA)) == [4, 5, 6]


def test_a_new_target_while_completing_is_queued_behind_the_move():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=1)}))
    assert s.tasks[TP].phase is Phase.STOPPING
    step = run(s, RequestsRead(2, (req("t", 0, (5, 2, 3)),)))
    assert any("queued" in line for line in step.log)
    assert s.tasks[TP].target == (4, 2, 3) and s.tasks[TP].next_target == (5, 2, 3)
    step = run(s, StopReplicaSent((TP,)))
    assert s.assignments[TP].replicas == (4, 2, 3)
    assert s.requests[TP].replicas == (5, 2, 3) and s.requests[TP].original_replicas == (4, 2, 3)
    assert s.tasks[TP].phase is Phase.LOADING and step.reads == {TP}


def test_a_pending_entry_withdrawn_from_the_znode_is_dropped():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    config = ControllerConfig(max_cluster_moves=1)
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)), req("t", 1, (5, 2, 3)))), config)
    assert s.tasks[("t", 1)].phase is Phase.PENDING
    step = run(s, RequestsRead(1, (req("t", 0, (4, 2, 3)),)), config)
    assert ("t", 1) not in s.tasks and any("withdrawn" in line for line in step.log)


def test_a_running_move_survives_its_entry_being_removed():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    run(s, RequestsRead(None, None))
    assert s.tasks[TP].phase is Phase.REPLICATING
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=1)}))
    step = run(s, StopReplicaSent((TP,)))
    assert s.assignments[TP].replicas == (4, 2, 3)
    assert "/admin/reassign_partitions" not in [w.path for w in step.writes]


def test_a_state_read_older_than_our_write_is_ignored():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=4)}))
    step = run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=3)}))
    assert s.states[TP].zk_version == 5 and s.tasks[TP].phase is Phase.REPLICATING and not step.writes


def test_a_partition_without_state_znode_is_dropped():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    step = run(s, StatesRead({TP: None}))
    assert s.tasks == {} and step.writes == [Delete("/admin/reassign_partitions", 0)]


def test_the_transition_map_refuses_illegal_changes():
    m = Move(TP, (4, 5, 6))
    with pytest.raises(IllegalTransition):
        m.to(Phase.STOPPING)
    with pytest.raises(IllegalTransition):
        m.to(Phase.LOADING).to(Phase.REPLICATING)  # no original replicas
    started = m.to(Phase.LOADING).to(Phase.REPLICATING, original=(1, 2, 3))
    with pytest.raises(IllegalTransition):
        started.with_changes(target=(7, 8, 9))
    with pytest.raises(IllegalTransition):
        started.to(Phase.DONE)
    assert started.replicas == (4, 5, 6, 1, 2, 3) and started.adding == (4, 5, 6) and started.removing == (1, 2, 3)
    with pytest.raises(IllegalTransition):
        started.with_changes(dropped=(4,))  # only an override changes what a started move drops
    with pytest.raises(IllegalTransition):
        started.to(Phase.REPLICATING)  # an override needs a new target
    overridden = started.to(Phase.REPLICATING, target=(4, 6, 3), dropped=(5,))
    assert overridden.replicas == (4, 6, 3, 1, 2, 5) and overridden.removing == (1, 2, 5)
    assert overridden.added == (4, 6, 5) and overridden.rollback_replicas == (1, 2, 3, 4, 6, 5)
