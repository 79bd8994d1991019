"""controller.shell.journal: each partition's move by door - counts in /metrics and structured
log lines - from engine steps (pure, with the engine), then end to end: a controller process
with JSON logs and simulated brokers, reassignments through every door."""

from __future__ import annotations

import json
import logging
import re
import socket
import struct
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import protocol
from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import (
    CancelRequested,
    QueueRead,
    ReassignRequested,
    RequestsRead,
    ScheduleDue,
    StatesRead,
    StopReplicaSent,
)
from controller.shell.journal import ALTER_PARTITION_REASSIGNMENTS, MoveJournal
from controller.shell.metrics import Metrics
from tests.controller.helpers import cluster, req, state
from tests.controller.test_copy_progress import ready
from tests.e2e.processes import running_cluster, wait_for

CFG = ControllerConfig()


def counts(metrics: Metrics) -> dict:
    return {(s.labels["outcome"], s.labels["door"]): s.value for f in text_string_to_metric_families(metrics.scrape().decode())
            if f.name == "reassignd_reassignments" for s in f.samples if s.name.endswith("_total")}


def run(journal: MoveJournal, s, *events):
    step = engine.step(s, list(events), CFG)
    journal.observe(list(events), step, s)
    s.apply(step.delta)
    return step


def moves(caplog) -> list[dict]:
    keys = ("move", "topic", "partition", "door", "target", "reason", "reassignment_id")
    return [{k: getattr(r, k) for k in keys if hasattr(r, k)} for r in caplog.records if hasattr(r, "move")]


def test_doors_outcomes_and_fields_from_engine_steps(caplog):
    caplog.set_level(logging.INFO, logger="reassignd.controller")
    metrics = Metrics()
    journal = MoveJournal(metrics)
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3), 2: (1, 2, 3), 3: (1, 2, 3), 4: (1, 2, 3)}})
    for p in range(5):
        s.states[("t", p)] = state(1, (1, 2, 3))
    journal.created("/admin/reassignments/t/0", 4242)  # as RecordIds reports the start's multi
    # t-0 through the API (its engine event names its door), the others a tool's entries; the
    # request's move starts in the next step, once its entry landed.
    run(journal, s, RequestsRead(0, (req("t", 1, (5, 2, 3)), req("t", 2, (1, 2, 3)), req("t", 3, (1, 2, 42)))),
        ReassignRequested(((("t", 0), (4, 2, 3)),), ALTER_PARTITION_REASSIGNMENTS, token="api"))
    run(journal, s, ScheduleDue((("t", 0),)))
    lines = moves(caplog)
    assert {"move": "started", "topic": "t", "partition": 0, "door": ALTER_PARTITION_REASSIGNMENTS,
            "target": [4, 2, 3], "reassignment_id": 4242} in lines
    assert {"move": "started", "topic": "t", "partition": 1, "door": "znode", "target": [5, 2, 3]} in lines
    assert {"move": "skipped", "topic": "t", "partition": 2, "door": "znode", "target": [1, 2, 3],
            "reason": "already the assignment"} in lines
    refused = next(line for line in lines if line["move"] == "refused")
    assert (refused["partition"], refused["door"]) == (3, "znode") and "42" in refused["reason"]
    assert counts(metrics) == {("skipped", "znode"): 1, ("refused", "znode"): 1}
    assert journal.door(("t", 0)) == ALTER_PARTITION_REASSIGNMENTS and journal.door(("t", 1)) == "znode"
    # the same znode read again (its write conflicted, say) counts nothing twice
    caplog.clear()
    run(journal, s, RequestsRead(1, tuple(s.requests.values())))
    assert counts(metrics) == {("skipped", "znode"): 1, ("refused", "znode"): 1} and not moves(caplog)
    # t-0 completes: TRS in the ISR, then the StopReplica sent
    run(journal, s, StatesRead({("t", 0): state(1, (1, 2, 3, 4), zk_version=1, leader_epoch=1)}))
    run(journal, s, StopReplicaSent((("t", 0),)))
    assert counts(metrics)[("completed", ALTER_PARTITION_REASSIGNMENTS)] == 1
    assert {"move": "completed", "topic": "t", "partition": 0, "door": ALTER_PARTITION_REASSIGNMENTS,
            "target": [4, 2, 3], "reassignment_id": 4242} in moves(caplog)
    # a queued batch: its door is the queue's
    caplog.clear()
    run(journal, s, QueueRead(0, (req("t", 4, (6, 2, 3)),)))
    assert {"move": "started", "topic": "t", "partition": 4, "door": "queue", "target": [6, 2, 3]} in moves(caplog)
    # t-1 (the tool's) cancelled through the API: rolled back, counted under its own door
    caplog.clear()
    step = run(journal, s, CancelRequested((("t", 1),), token="tok", source="api"))
    if ("t", 1) in s.tasks:  # the rollback's StopReplica to the added replica, then it ends
        run(journal, s, StopReplicaSent((("t", 1),)))
    assert ("t", 1) not in s.tasks, step.log
    assert counts(metrics)[("cancelled", "znode")] == 1
    assert [line["move"] for line in moves(caplog) if line["partition"] == 1] == ["cancelled"]
    # a move still waiting for a slot, withdrawn from the znode by its writer: dropped
    tight = ControllerConfig(max_incoming_per_broker=1)
    entries = tuple(s.requests.values())
    step = engine.step(s, [RequestsRead(5, entries + (req("t", 1, (6, 2, 3)),))], tight)
    journal.observe([RequestsRead(5, entries + (req("t", 1, (6, 2, 3)),))], step, s)
    s.apply(step.delta)
    assert not s.tasks[("t", 1)].started  # broker 6 is busy with t-4
    step = engine.step(s, [RequestsRead(6, entries)], tight)
    journal.observe([RequestsRead(6, entries)], step, s)
    s.apply(step.delta)
    assert ("t", 1) not in s.tasks and counts(metrics)[("dropped", "znode")] == 1


# ---- end to end ---------------------------------------------------------------------------------


def admin_call(address: str, api_key: int, version: int, body: dict) -> dict:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(protocol.encode_request(api_key, version, 1, "journal-test", body))
        head = s.recv(4, socket.MSG_WAITALL)
        (size,) = struct.unpack(">i", head)
        frame = head + s.recv(size, socket.MSG_WAITALL)
    return protocol.decode_response(api_key, version, frame)[1]


def ops_port(log) -> int | None:
    """The operations port from a JSON log's start-up line."""
    for line in log.read_text().splitlines():
        found = re.search(r"operations port on http://[^:]+:(\d+)", json.loads(line)["message"])
        if found:
            return int(found.group(1))
    return None


def scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def outcome(m: dict, what: str, door: str) -> float:
    return m.get(("reassignd_reassignments_total", (("door", door), ("outcome", what))), 0)


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(180)
def test_every_door_counted_and_logged_as_json(zk_hosts, tmp_path):
    sim = ["--brokers", "4", "--topics", "t:6:1:64KiB", "--topic-brokers", "1", "--produce-rate", "0", "--tick-ms", "20"]
    config = {"ops_listen": "127.0.0.1:0", "log_format": "json"}
    with running_cluster(zk_hosts, tmp_path, sim_args=sim, controller_ids=(71,), controller_config=config) as c:
        port = wait_for(lambda: ops_port(c.controller_log(71)), 20, "the operations port")
        wait_for(lambda: ready(port), 20, "the controller ready")
        admin = c.listeners[71]
        # a third-party tool's write of /admin/reassign_partitions
        c.submit({("t", 0): [2]})
        wait_for(c.reassignments_done, 30, "the tool's move", interval=0.1)
        # AlterPartitionReassignments: one moved, one refused (unknown broker), one already there
        answer = admin_call(admin, 45, 0, {"timeout_ms": 10000, "topics": [{"name": "t", "partitions": [
            {"partition_index": 1, "replicas": [3]}, {"partition_index": 2, "replicas": [42]},
            {"partition_index": 3, "replicas": [1]}]}]})
        codes = {p["partition_index"]: p["error_code"] for p in answer["responses"][0]["partitions"]}
        assert codes == {1: 0, 2: 39, 3: 0}, answer  # 39: INVALID_REPLICA_ASSIGNMENT
        wait_for(c.reassignments_done, 30, "the API's move", interval=0.1)
        # ReassignPartitions (KIP-179, v1)
        answer = admin_call(admin, 10000, 1, {"timeout": 10000, "throttle": 2**63 - 1, "remove_throttle": True,
                                               "validate_only": False, "topic_reassignments": [{"topic": "t", "partition_reassignments": [
                                                   {"partition_id": 4, "broker": [4]}]}]})
        results = [p for t in answer["reassign_partition_result"] for p in t["partition_error"]]
        assert [p["error_code"] for p in results] == [0], answer
        wait_for(c.reassignments_done, 30, "the KIP-179 move", interval=0.1)
        # the KIP-236 queue
        c.submit({("t", 5): [3]}, path="/admin/reassign_partitions_queue")
        wait_for(lambda: c.zk.exists("/admin/reassign_partitions_queue") is None and c.reassignments_done(), 30,
                 "the queued move", interval=0.1)

        def counted():
            m = scrape(port)
            return m if outcome(m, "completed", "queue") == 1 else None

        m = wait_for(counted, 10, "the queued completion in /metrics")
        assert outcome(m, "completed", "znode") == 1
        assert outcome(m, "completed", "AlterPartitionReassignments") == 1
        assert outcome(m, "refused", "AlterPartitionReassignments") == 1
        assert outcome(m, "skipped", "AlterPartitionReassignments") == 1
        assert outcome(m, "completed", "ReassignPartitions") == 1
        assert sum(v for (name, _), v in m.items() if name == "reassignd_reassignments_running") == 0
        assert m[("reassignd_reassignments_pending", (("door", "znode"),))] == 0

        records = [json.loads(line) for line in c.controller_log(71).read_text().splitlines()]
        lines = {(r["move"], r["partition"]): r for r in records if "move" in r}
        for p, door in ((0, "znode"), (1, "AlterPartitionReassignments"), (4, "ReassignPartitions"), (5, "queue")):
            for what in ("started", "completed"):
                r = lines[(what, p)]
                assert r["topic"] == "t" and r["door"] == door and r["controller_id"] == 71, r
                assert isinstance(r["reassignment_id"], int) and r["reassignment_id"] > 0, r
            assert lines[("started", p)]["reassignment_id"] == lines[("completed", p)]["reassignment_id"]
        assert lines[("skipped", 3)]["door"] == "AlterPartitionReassignments"
        ids = {lines[("started", p)]["reassignment_id"] for p in (0, 1, 4, 5)}
        assert len(ids) == 4  # one record each, created by different multis


@pytest.mark.zk
async def test_record_ids_are_the_records_czxids(zk_hosts):
    """RecordIds on a real ZooKeeper: a multi with a setData (its stat carries the zxid) and a
    multi of creates only (one read of one of its records)."""
    import uuid

    from controller.shell.journal import RecordIds
    from znodes.api import Create, SetData
    from znodes.store import connect

    store = await connect(f"{zk_hosts}/journal_{uuid.uuid4().hex[:8]}", create_chroot=True)
    try:
        await store.create("/controller_epoch", b"1")
        epoch = (await store.exists("/controller_epoch")).version
        await store.ensure_path("/admin/reassignments/t")
        await store.create("/brokers/topics/t", b"{}", makepath=True)
        journal = MoveJournal()
        ids = RecordIds(store, journal)
        await ids.fenced_multi([Create("/admin/reassignments/t/0", b"{}"), Create("/admin/reassignments/t/1", b"{}"),
                                SetData("/brokers/topics/t", b"{}", -1)], epoch)
        await ids.fenced_multi([Create("/admin/reassignments/t/2", b"{}"), Create("/admin/reassignments/u", b"{}")], epoch)
        czxids = {p: (await store.exists(f"/admin/reassignments/t/{p}")).czxid for p in (0, 1, 2)}
        assert journal.ids == {("t", p): czxids[p] for p in (0, 1, 2)}
        assert czxids[0] == czxids[1] != czxids[2]  # one multi, one zxid
    finally:
        await store.close()


# ---- the door across a failover: kept in the KIP-240 record ------------------------------------


class _Capture:
    """A store that keeps what fenced multi-ops would write and serves it to bulk reads."""

    def __init__(self):
        self.data: dict[str, bytes] = {}

    async def fenced_multi(self, ops, epoch_zkversion):
        from znodes.api import Create, SetData

        for op in ops:
            if isinstance(op, (Create, SetData)):
                self.data[op.path] = op.data
        return [None] * len(ops)

    async def exists(self, path, watch=False):
        return None

    async def get_many(self, path_list):
        return [(self.data[p], None) if p in self.data else None for p in path_list]  # (data, stat)


def test_record_door_round_trip_and_old_records():
    from controller.shell.journal import record_door, record_with_door
    from znodes.models import ReassignmentRecord
    from znodes.payloads import decode_record_full, encode_record

    plain = encode_record((4, 2, 3), (1, 2, 3), cancelling=True)
    with_door = record_with_door(plain, "queue")
    assert with_door.endswith(b',"door":"queue"}') and record_door(with_door) == "queue"
    assert record_with_door(with_door, "znode") == with_door  # a door is written once
    # readers of the record read it as before; a record without a door (an older version's) too
    assert decode_record_full("/admin/reassignments/t/0", with_door)[:3] == ((4, 2, 3), (1, 2, 3), True)
    assert list(ReassignmentRecord.from_bytes("/admin/reassignments/t/0", with_door).replicas) == [4, 2, 3]
    assert record_door(plain) is None
    assert record_door(b'{"version":1,"replicas":[1],"original_replicas":[1],"door":"nonsense"}') is None


async def test_a_move_keeps_its_door_across_a_failover():
    """The first controller's record writes carry each move's door; the second one's recovery
    reads them: moves it resumes are counted and logged under their real door, a move that had
    not started (only its /admin/reassign_partitions entry names it) under ``recovered``."""
    from controller.core.events import Resume
    from controller.shell.journal import RecordIds
    from controller.shell.recovery import Snapshot, rebuild
    from znodes import paths
    from znodes.payloads import decode_record_full

    tight = ControllerConfig(max_incoming_per_broker=1)
    zk = _Capture()
    first = MoveJournal(Metrics())
    store = RecordIds(zk, first)
    s = cluster(topics={"t": {p: (1, 2, 3) for p in range(4)}})
    for p in range(4):
        s.states[("t", p)] = state(1, (1, 2, 3))
    entries = (req("t", 0, (4, 2, 3)), req("t", 1, (5, 2, 3)), req("t", 2, (6, 2, 3)), req("t", 3, (4, 1, 2)))
    # t-0 and t-3 through the API (their engine event names the door), t-1 and t-2 a tool's; the
    # request's moves start in the step after its entries landed.
    api = ReassignRequested(((("t", 0), (4, 2, 3)), (("t", 3), (4, 1, 2))), ALTER_PARTITION_REASSIGNMENTS, token="api")
    for events in ([RequestsRead(0, (entries[1], entries[2])), api], [ScheduleDue((("t", 0), ("t", 3)))]):
        step = engine.step(s, events, tight)
        first.prepare(events, step, s)  # as the ActiveController does before the flush
        await store.fenced_multi(step.writes, 0)
        first.observe(events, step, s)
        s.apply(step.delta)
    # t-3 waits for broker 4 (the cap); the other three started: their records say their door
    assert not s.tasks[("t", 3)].started and all(s.tasks[("t", p)].started for p in range(3))
    doors = {p: json.loads(zk.data[paths.reassignment("t", p)]).get("door") for p in range(3)}
    assert doors == {0: ALTER_PARTITION_REASSIGNMENTS, 1: "znode", 2: "znode"}
    assert paths.reassignment("t", 3) not in zk.data
    # t-2's record as an older version wrote it: no door
    zk.data[paths.reassignment("t", 2)] = zk.data[paths.reassignment("t", 2)].replace(b',"door":"znode"', b"")

    # failover: the new controller reads every record (through RecordIds) and rebuilds
    metrics = Metrics()
    second = MoveJournal(metrics)
    second.begin_term()
    reader = RecordIds(zk, second)
    record_paths = [paths.reassignment("t", p) for p in range(3)]
    reads = await reader.get_many(record_paths)
    records = {("t", p): decode_record_full(path, read[0])[:2] for p, (path, read) in enumerate(zip(record_paths, reads))}
    topics = {"t": (1, {p: s.assignments[("t", p)] for p in range(4)})}
    recovered = rebuild(Snapshot(dict(s.brokers), topics, RequestsRead(1, entries), records, {}), 101, 2)
    assert isinstance(recovered.events[-1], Resume)
    r = recovered.state
    for tp in r.tasks:
        r.states[tp] = s.states[tp]
    step = engine.step(r, recovered.events, tight)
    second.prepare(recovered.events, step, r)
    second.observe(recovered.events, step, r)
    r.apply(step.delta)
    assert {p: second.door(("t", p)) for p in range(4)} == {
        0: ALTER_PARTITION_REASSIGNMENTS, 1: "znode", 2: "recovered", 3: "recovered"}
    scraped = {(s_.name, s_.labels.get("door")): s_.value for f in text_string_to_metric_families(metrics.scrape().decode())
               for s_ in f.samples}
    assert ("reassignd_reassignments_running", "unknown") not in scraped
    # t-0 completes on the new controller: counted under the door it came through
    now = r.states[("t", 0)]
    grown = state(now.leader, (1, 2, 3, 4), zk_version=now.zk_version + 1, leader_epoch=now.leader_epoch,
                  controller_epoch=now.controller_epoch)
    run(second, r, StatesRead({("t", 0): grown}))
    run(second, r, StopReplicaSent((("t", 0),)))
    assert counts(metrics)[("completed", ALTER_PARTITION_REASSIGNMENTS)] == 1


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(180)
def test_doors_survive_a_failover(zk_hosts, tmp_path):
    """Two controller processes: a move started through AlterPartitionReassignments and one
    waiting for a slot when the active one stops. The new active controller counts the first
    under its real door (from the move's KIP-240 record) and the second as ``recovered``."""
    sim = ["--brokers", "3", "--topics", "t:2:1:2MiB", "--topic-brokers", "1", "--produce-rate", "0",
           "--tick-ms", "20", "--bandwidth", "256KiB"]
    config = {"ops_listen": "127.0.0.1:0", "log_format": "json", "max_incoming_per_broker": 1}
    with running_cluster(zk_hosts, tmp_path, sim_args=sim, controller_ids=(73, 74), controller_config=config) as c:
        first = c.active_controller()
        second = ({73, 74} - {first}).pop()
        ports = {cid: wait_for(lambda cid=cid: ops_port(c.controller_log(cid)), 20, "the operations ports") for cid in (73, 74)}
        # /controller is written at the election, before the state is loaded; until it is, the
        # winner answers every request NOT_CONTROLLER (41): wait for it to be ready
        wait_for(lambda: ready(ports[first]), 10, "the active controller ready")
        # t-0's copy must still run when the standby takes over, however long the hand-over
        # takes on a loaded machine: broker 2 copies nothing (a throttled rate of 0) until the
        # checks below are done
        c.set_dynamic_config("brokers/2", {"follower.replication.throttled.rate": "0"})
        c.set_dynamic_config("topics/t", {"follower.replication.throttled.replicas": "*"})
        # both partitions to broker 2: t-0 starts, t-1 waits for broker 2's one incoming slot
        answer = admin_call(c.listeners[first], 45, 0, {"timeout_ms": 10000, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "replicas": [2]}, {"partition_index": 1, "replicas": [2]}]}]})
        assert [p["error_code"] for p in answer["responses"][0]["partitions"]] == [0, 0], answer
        wait_for(lambda: c.zk.exists("/admin/reassignments/t/0"), 10, "t-0's record")
        record = json.loads(c.zk.get("/admin/reassignments/t/0")[0])
        assert record["door"] == "AlterPartitionReassignments" and record["replicas"] == [2], record
        assert c.zk.exists("/admin/reassignments/t/1") is None  # waiting: no record yet
        # the planned hand-over (SIGTERM), t-0 still copying (held at rate 0)
        c.processes.running[f"controller-{first}"].send_signal(15)
        wait_for(lambda: c.new_active_controller(first), 10, "the standby elected")
        wait_for(lambda: ready(ports[second]), 10, "the new active controller ready")

        def resumed():
            m = scrape(ports[second])
            return m if m.get(("reassignd_reassignments_running", (("door", "AlterPartitionReassignments"),))) == 1 else None

        m = wait_for(resumed, 10, "t-0 running under its door on the new controller")
        assert m[("reassignd_reassignments_pending", (("door", "recovered"),))] == 1
        assert all(labels != (("door", "unknown"),) for _, labels in m)
        c.set_dynamic_config("brokers/2", {})
        c.set_dynamic_config("topics/t", {})
        wait_for(c.reassignments_done, 60, "both moves", interval=0.2)

        def ended():
            m = scrape(ports[second])
            return m if outcome(m, "completed", "recovered") == 1 else None

        m = wait_for(ended, 10, "both completions counted")
        assert outcome(m, "completed", "AlterPartitionReassignments") == 1
        records = [json.loads(line) for line in c.controller_log(second).read_text().splitlines()]
        lines = {(r["move"], r["partition"]): r for r in records if "move" in r}
        assert lines[("completed", 0)]["door"] == "AlterPartitionReassignments"
        assert lines[("started", 1)]["door"] == lines[("completed", 1)]["door"] == "recovered"
