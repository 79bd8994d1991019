"""The admin audit log: one entry per state-changing admin request, after it was answered.

    handler = AuditedHandler(handler)                  # wraps the admin RequestHandler
    open_audit_file("/var/log/reassignd/admin-audit.jsonl")    # optional: JSON lines there too

Entries go to the logger ``reassignd.audit`` at INFO (so into the process log, as JSON lines
with ``--log-format json``) with these fields:

    {"audit": "admin", "client": "10.0.0.7:51234", "principal": null,
     "api": "AlterPartitionReassignments", "api_key": 45, "api_version": 0, "validate_only": false,
     "partitions": ["orders-0", "orders-1"], "brokers": [], "resources": [], "outcome": {"NONE": 2}}

``principal`` is the connection's authenticated principal (``User:alice``; ``User:ANONYMOUS`` on
a PLAINTEXT listener with security configured), null on a listener without security. ``outcome`` counts the answer's
error codes by name, one per entry (a request refused as a whole counts its code for every
entry, NOT_CONTROLLER on a standby, CLUSTER_AUTHORIZATION_FAILED without the ACL); a request
the listener closes the connection on has ``{"connection closed": 1}``. ``resources`` names
what else it acts on (``Topic:orders``, ``Broker:1``, an ACL binding, ``upsert User:alice
mechanism 2``; never a credential). Every state-changing API is audited (:data:`STATE_CHANGING`).
Read-only APIs (Metadata, Describe*, List*) are not audited. This is not the write audit of
controller.shell.audit, which records ZooKeeper writes for the invariant checks.
"""

from __future__ import annotations

import logging
from collections import Counter

from controller.core.acl import OPERATION_NAMES, PATTERN_NAMES, PERMISSION_NAMES, RESOURCE_NAMES
from controller.shell.listener import CLIENT, SESSION, WrappedHandler
from controller.shell.logs import JsonFormatter
from protocol.errors import ErrorCode

audit_log = logging.getLogger("reassignd.audit")
# Recorded whatever the process log level (the level of what else is logged).
audit_log.setLevel(logging.INFO)

# Every admin API that changes the cluster or its security (key -> name): each request gets one
# entry, refused ones included. AlterPartition (56) is left out: a leader's routine ISR changes,
# many a second on a busy cluster, not an operator's act; each ISR it writes is in the write
# audit (controller.shell.audit) like every fenced write.
STATE_CHANGING = {
    45: "AlterPartitionReassignments",
    10000: "ReassignPartitions",
    10001: "AlterInterbrokerThrottledRates",
    10002: "AlterInterbrokerThrottledReplicas",
    10005: "CancelReassignments",
    19: "CreateTopics",
    20: "DeleteTopics",
    37: "CreatePartitions",
    33: "AlterConfigs",
    44: "IncrementalAlterConfigs",
    43: "ElectLeaders",
    7: "ControlledShutdown",  # a broker's leaderships moved away
    30: "CreateAcls",
    31: "DeleteAcls",
    51: "AlterUserScramCredentials",
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
        "resources": resources(key, body),
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
            # ElectLeaders: {"topic": t, "partitions": [0, 1]}
            for p in node.get("partitions") or ():
                if isinstance(p, int) and topic is not None:
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
    """Every error code in an answer: one per entry, the innermost ones (the top-level code when
    there are none). An entry answered NONE inside an answer refused as a whole (a non-zero code
    around it) counts as that refusal: it was not done."""
    found: list[int] = []

    def walk(node, around: int):
        if isinstance(node, dict):
            own = int(node.get("error_code") or 0)
            here = own or around
            for value in node.values():
                if isinstance(value, list):
                    for item in value:
                        walk(item, here)
            if "error_code" in node and not found_below(node):
                found.append(here)

    def found_below(node) -> bool:
        return any(isinstance(v, list) and any(isinstance(i, dict) and _has_code(i) for i in v) for v in node.values())

    walk(response, 0)
    return found or [0]


# ConfigResource type codes, and the filters' ANY codes, for the entry's resource names.
_CONFIG_TYPES = {2: "Topic", 4: "Broker", 8: "BrokerLogger"}
_ANY = 1  # ANY resource type, pattern, operation or permission in a DeleteAcls filter


def resources(key: int, body: dict) -> list[str]:
    """What a request acts on beyond partitions and brokers, by name: topics, config resources,
    ACL bindings (filters), SCRAM users (never their salts or salted passwords)."""
    if key in (19, 37):  # CreateTopics, CreatePartitions
        return [f"Topic:{t.get('name')}" for t in body.get("topics") or ()]
    if key == 20:  # DeleteTopics: names (v0-5) or name/id pairs (v6+)
        names = list(body.get("topic_names") or ())
        names += [t.get("name") if t.get("name") is not None else f"id={t.get('topic_id')}" for t in body.get("topics") or ()]
        return [f"Topic:{n}" for n in names]
    if key in (33, 44):
        return [f"{_CONFIG_TYPES.get(r.get('resource_type'), r.get('resource_type'))}:{r.get('resource_name')}"
                for r in body.get("resources") or ()]
    if key == 30:
        return [_binding(c.get("resource_type"), c.get("resource_pattern_type"), c.get("resource_name"), c.get("principal"),
                         c.get("host"), c.get("operation"), c.get("permission_type")) for c in body.get("creations") or ()]
    if key == 31:
        return [_binding(f.get("resource_type_filter"), f.get("pattern_type_filter"), f.get("resource_name_filter"),
                         f.get("principal_filter"), f.get("host_filter"), f.get("operation"), f.get("permission_type"))
                for f in body.get("filters") or ()]
    if key == 51:
        return ([f"delete User:{d.get('name')} mechanism {d.get('mechanism')}" for d in body.get("deletions") or ()]
                + [f"upsert User:{u.get('name')} mechanism {u.get('mechanism')}" for u in body.get("upsertions") or ()])
    return []


def _binding(rtype, pattern, name, principal, host, operation, permission) -> str:
    """An ACL (or a filter) as one line; None or ANY is '*any*'."""

    def label(code, names):
        return "*any*" if code in (None, _ANY) else names.get(code, str(code))

    return (f"{label(rtype, RESOURCE_NAMES)}:{label(pattern, PATTERN_NAMES | {2: 'MATCH'})}:"
            f"{'*any*' if name is None else name} {label(permission, PERMISSION_NAMES)} {principal or '*any*'} "
            f"from {host or '*any*'} to {label(operation, OPERATION_NAMES)}")


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
