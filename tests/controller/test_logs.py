"""JSON log lines and the admin audit log (no ZooKeeper: the handler below the audit is a stub
answering as the real APIs do)."""

from __future__ import annotations

import io
import json
import logging

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
