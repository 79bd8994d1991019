"""The admin audit log: one entry per state-changing admin request, after it was answered.

    handler = AuditedHandler(handler)                  # wraps the admin RequestHandler
    open_audit_file("/var/log/reassignd/admin-audit.jsonl")    # optional: JSON lines there too

Entries go to the logger ``reassignd.audit`` at INFO (so into the process log, as JSON lines
with ``--log-format json``) with these fields:

    {"audit": "admin", "client": "10.0.0.7:51234", "principal": null,
     "api": "AlterPartitionReassignments", "api_key": 45, "api_version": 0, "validate_only": false,
     "partitions": ["orders-0", "orders-1"], "brokers": [], "outcome": {"NONE": 2}}

``principal`` is the connection's authenticated principal (``User:alice``; ``User:ANONYMOUS`` on
a PLAINTEXT listener with security configured), null on a listener without security. ``outcome`` counts the answer's
error codes by name (a request refused as a whole has one, NOT_CONTROLLER on a standby).
Read-only APIs (Metadata, Describe*, List*) are not audited. This is not the write audit of
controller.shell.audit, which records ZooKeeper writes for the invariant checks.
"""

from __future__ import annotations

import logging
from collections import Counter

from controller.shell.listener import CLIENT, SESSION, WrappedHandler
from controller.shell.logs import JsonFormatter
from protocol.errors import ErrorCode

audit_log = logging.getLogger("reassignd.audit")
# Recorded whatever the process log level (the level of what else is logged).
audit_log.setLevel(logging.INFO)

# The admin APIs that change the cluster (key -> name).
STATE_CHANGING = {
    45: "AlterPartitionReassignments",
    10000: "ReassignPartitions",
    10001: "AlterInterbrokerThrottledRates",
    10002: "AlterInterbrokerThrottledReplicas",
    10005: "CancelReassignments",
}
_TOPIC_KEYS = ("topic", "name")
_PARTITION_KEYS = ("partition_id", "partition_index")


class AuditedHandler(WrappedHandler):

    async def handle(self, header: dict, body: dict):
        response = await self.inner.handle(header, body)
        key = header["request_api_key"]
        if key in STATE_CHANGING:
            record(key, header["request_api_version"], body, response)
        return response


def record(key: int, version: int, body: dict, response) -> None:
    partitions, brokers = named(body)
    outcome = dict(Counter(_code_name(c) for c in codes(response))) if response is not None else {"connection closed": 1}
    client = CLIENT.get()
    session = SESSION.get()  # a listener with security: who authenticated on this connection
    fields = {
        "audit": "admin",
        "client": client,
        "principal": session.current_principal() if session is not None else None,
        "api": STATE_CHANGING[key],
        "api_key": key,
        "api_version": version,
        "validate_only": bool(body.get("validate_only", False)),
        "partitions": partitions,
        "brokers": brokers,
        "outcome": outcome,
    }
    audit_log.info(
        "%s v%d from %s: %d partition(s), %d broker(s): %s",
        fields["api"], version, client, len(partitions), len(brokers),
        ", ".join(f"{k} x{n}" for k, n in outcome.items()),
        extra=fields,
    )


def named(body: dict) -> tuple[list[str], list[int]]:
    """The partitions ("topic-N") and brokers a request names, whatever its shape."""
    partitions: list[str] = []
    brokers: list[int] = []

    def walk(node, topic=None):
        if isinstance(node, dict):
            topic = next((node[k] for k in _TOPIC_KEYS if isinstance(node.get(k), str)), topic)
            part = next((node[k] for k in _PARTITION_KEYS if isinstance(node.get(k), int)), None)
            if part is not None and topic is not None:
                partitions.append(f"{topic}-{part}")
            for p in node.get("partition_ids") or ():
                partitions.append(f"{topic}-{p}")
            if isinstance(node.get("broker_id"), int) and part is None:
                brokers.append(node["broker_id"])
            for value in node.values():
                if isinstance(value, list):
                    for item in value:
                        walk(item, topic)
        return None

    walk(body)
    return partitions, brokers


def codes(response) -> list[int]:
    """Every error code in an answer (entries' codes; the top-level one when there are none)."""
    found: list[int] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, list):
                    for item in value:
                        walk(item)
            if "error_code" in node and not found_below(node):
                found.append(int(node["error_code"] or 0))

    def found_below(node) -> bool:
        return any(isinstance(v, list) and any(isinstance(i, dict) and _has_code(i) for i in v) for v in node.values())

    walk(response)
    return found or [0]


def _has_code(node) -> bool:
    if "error_code" in node:
        return True
    return any(isinstance(v, list) and any(isinstance(i, dict) and _has_code(i) for i in v) for v in node.values())


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def open_audit_file(path: str, role=None) -> logging.Handler:
    """Also write the audit entries to ``path`` as JSON lines (appended)."""
    from controller.shell.logs import RoleFilter

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    if role is not None:
        handler.addFilter(RoleFilter(role))
    audit_log.addHandler(handler)
    audit_log.setLevel(logging.INFO)
    return handler
