"""JSON log lines and the admin audit log (no ZooKeeper: the handler below the audit is a stub
answering as the real APIs do)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from controller.shell.admin_audit import AuditedHandler, codes, named
from controller.shell.listener import CLIENT, SESSION
from controller.shell.logs import JsonFormatter, RoleFilter, setup_logging
from controller.shell.role import Role


class _Active:
    epoch = 9


def test_json_lines_carry_time_level_logger_message_fields_and_role():
    stream = io.StringIO()
    role = Role(101)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging("INFO", "json", role=role, stream=stream)
        logging.getLogger("reassignd.controller").info("moved %s", "t-0", extra={"topic": "t", "partition": 0, "reassignment_id": 42})
        role.active = _Active()
        logging.getLogger("reassignd.x").warning("boom", exc_info=ValueError("bad"))
        logging.getLogger("reassignd.x").debug("not shown")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "moved t-0" and first["level"] == "INFO" and first["logger"] == "reassignd.controller"
    assert (first["topic"], first["partition"], first["reassignment_id"], first["controller_id"]) == ("t", 0, 42, 101)
    assert "epoch" not in first and second["epoch"] == 9
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert "ValueError: bad" in second["exception"]


def test_text_stays_the_default_format():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging("INFO", "text", stream=stream)
        logging.getLogger("reassignd.controller").info("hello")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    line = stream.getvalue().strip()
    assert line.endswith("INFO reassignd.controller: hello") and not line.startswith("{")


def test_the_partitions_and_brokers_each_state_changing_api_names():
    assert named({"timeout_ms": 1, "topics": [{"name": "o", "partitions": [{"partition_index": 2, "replicas": [4, 2]},
                                                                             {"partition_index": 7, "replicas": None}]}]}) == (["o-2", "o-7"], [])
    assert named({"topic_reassignments": [{"topic": "o", "partition_reassignments": [{"partition_id": 1, "broker": [1, 2]}]}],
                  "throttle": 5}) == (["o-1"], [])
    assert named({"partitions": [{"topic": "o", "partition_ids": [0, 3]}]}) == (["o-0", "o-3"], [])
    assert named({"broker_throttles": [{"broker_id": 4, "leader_rate": 1, "follower_rate": 1}]}) == ([], [4])
    assert named({"topic_throttles": [{"topic": "o", "partition_throttles": [{"partition_id": 0, "broker_id": [1, 2]}]}]}) == (["o-0"], [])


def test_codes_counts_entries_not_the_envelope():
    assert codes({"error_code": 0, "responses": [{"name": "o", "partitions": [{"error_code": 0}, {"error_code": 3}]}]}) == [0, 3]
    assert codes({"error_code": 41}) == [41]
    assert codes({"throttle_time_ms": 0}) == [0]


class _Stub:
    ctx = None

    def api_versions(self):
        return []

    async def handle(self, header, body):
        if header["request_api_key"] == 3:
            return {"topics": []}
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "responses": [{"name": "o", "partitions": [{"partition_index": 2, "error_code": 0},
                                                           {"partition_index": 7, "error_code": 3}]}]}


async def test_state_changing_requests_are_audited_with_client_and_outcome(caplog):
    handler = AuditedHandler(_Stub())
    CLIENT.set("10.0.0.7:51234")
    body = {"timeout_ms": 1, "topics": [{"name": "o", "partitions": [{"partition_index": 2, "replicas": [4, 2]},
                                                                       {"partition_index": 7, "replicas": [1]}]}]}
    with caplog.at_level(logging.INFO, logger="reassignd.audit"):
        await handler.handle({"request_api_key": 45, "request_api_version": 0}, body)
        await handler.handle({"request_api_key": 3, "request_api_version": 12}, {"topics": None})  # read-only
    entries = [r for r in caplog.records if r.name == "reassignd.audit"]
    assert len(entries) == 1
    e = entries[0]
    assert (e.client, e.principal, e.api, e.api_key, e.partitions) == ("10.0.0.7:51234", None, "AlterPartitionReassignments", 45, ["o-2", "o-7"])
    assert e.outcome == {"NONE": 1, "UNKNOWN_TOPIC_OR_PARTITION": 1} and e.validate_only is False
    line = json.loads(JsonFormatter().format(e))
    assert line["audit"] == "admin" and line["client"] == "10.0.0.7:51234"
    assert RoleFilter(Role(5)).filter(e) and e.controller_id == 5


class _Session:
    def current_principal(self):
        return "User:alice"


async def test_the_audit_names_the_authenticated_principal(caplog):
    CLIENT.set("10.0.0.8:1")
    SESSION.set(_Session())
    with caplog.at_level(logging.INFO, logger="reassignd.audit"):
        await AuditedHandler(_Stub()).handle({"request_api_key": 10005, "request_api_version": 0},
                                             {"partitions": [{"topic": "o", "partition_ids": [1]}]})
    (e,) = [r for r in caplog.records if r.name == "reassignd.audit"]
    assert (e.principal, e.api, e.partitions) == ("User:alice", "CancelReassignments", ["o-1"])


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(120)
def test_the_audit_log_file_of_a_controller_process(zk_hosts, tmp_path):
    """``audit_log``: a controller process at log level WARNING still writes every state-changing
    admin request's entry, to its log and as a JSON line to the file; a file it cannot open is
    a bad setting (exit 2 before ZooKeeper)."""
    import socket
    import struct
    import uuid

    import protocol
    from tests.e2e.processes import Processes, kazoo_client, wait_for

    bad = Processes(tmp_path)
    proc = bad.spawn("bad", ["controller", "--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "127.0.0.1:0",
                             "--audit-log", str(tmp_path / "no-such-dir" / "audit.jsonl")])
    assert proc.wait(60) == 2 and "audit_log: cannot open" in bad.log("bad").read_text()

    chroot = f"{zk_hosts}/audit_{uuid.uuid4().hex[:8]}"
    audit = tmp_path / "audit.jsonl"
    with Processes(tmp_path) as procs, kazoo_client(zk_hosts) as zk:
        procs.spawn("c", ["controller", "--zookeeper", chroot, "--id", "81", "--listen", "127.0.0.1:0",
                          "--log-level", "WARNING", "--log-format", "json", "--audit-log", str(audit)])
        node = f"/{chroot.rsplit('/', 1)[1]}/reassignd/controllers/81"
        wait_for(lambda: zk.exists(node), 30, "the controller registered")
        wait_for(lambda: zk.exists(f"/{chroot.rsplit('/', 1)[1]}/controller"), 30, "the controller active")
        doc = json.loads(zk.get(node)[0])
        body = {"timeout_ms": 5000, "topics": [{"name": "nope", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}

        def call():
            with socket.create_connection((doc["host"], doc["port"]), timeout=10) as s:
                s.sendall(protocol.encode_request(45, 0, 1, "audit-test", body))
                head = s.recv(4, socket.MSG_WAITALL)
                frame = head + s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                host, port = s.getsockname()[:2]
                client = f"{host}:{port}"
            answer = protocol.decode_response(45, 0, frame)[1]
            return None if answer["error_code"] == 41 else (answer, client)  # 41: still loading its state

        answer, client = wait_for(call, 30, "the active controller's answer")
        assert answer["responses"][0]["partitions"][0]["error_code"] == 3, answer  # UNKNOWN_TOPIC_OR_PARTITION
        entries = wait_for(lambda: [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else None,
                           10, "the audit file's entry")
        e = entries[-1]  # a standby's answer (41) while it loaded is audited too
        assert all(x["outcome"] == {"NOT_CONTROLLER": 1} for x in entries[:-1])
        assert (e["audit"], e["api"], e["client"], e["partitions"]) == ("admin", "AlterPartitionReassignments", client, ["nope-0"])
        assert e["outcome"] == {"UNKNOWN_TOPIC_OR_PARTITION": 1} and e["controller_id"] == 81 and e["epoch"] >= 1
        logged = [json.loads(line) for line in procs.log("c").read_text().splitlines()]
        assert [r["api"] for r in logged if r.get("audit") == "admin"] == ["AlterPartitionReassignments"] * len(entries)
        assert not any(r["level"] == "INFO" and r["logger"] != "reassignd.audit" for r in logged)  # WARNING: no others
