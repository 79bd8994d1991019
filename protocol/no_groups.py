"""The group APIs' answers from a node that coordinates no group: every controller instance, and
every simulated broker (the simulation has no ``__consumer_offsets`` and so no coordinator).

Kafka clients send ListGroups (16) to every node Metadata lists and merge the answers
(kafka-python's ``list_groups``, aiokafka's and confluent-kafka's ``list_consumer_groups``), and
DescribeGroups (15) to the node FindCoordinator named. Both are answered as a Kafka broker
answers them for groups it does not coordinate (KafkaApis over its GroupCoordinator):

    list_groups(5, {})                        # error 0, no groups
    describe_groups(6, {"groups": ["g"]})     # g: NOT_COORDINATOR (16), state "", no members
    describe_groups(6, body, refused={"g"})   # g: GROUP_AUTHORIZATION_FAILED (30)

``refused`` holds the groups the principal may not DESCRIBE (the caller asks its authorizer):
Kafka answers those first, then the coordinator's answers for the rest in request order.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection

from protocol import ApiKey
from protocol.errors import ErrorCode

# KIP-430: "authorised operations not requested" is INT32_MIN on the wire.
OPERATIONS_OMITTED = -(2**31)
NOT_COORDINATOR_MESSAGE = "this node coordinates no consumer group"
REFUSED_MESSAGE = "DESCRIBE on the group is not allowed"


def list_groups(version: int, body: dict) -> dict:
    """No groups, no error, whatever the state or type filters (v4+, v5+) ask for."""
    return {"throttle_time_ms": 0, "error_code": int(ErrorCode.NONE), "groups": []}


# DescribeGroups v6 (KIP-1043) is the first with a per-group error message.
MESSAGE_VERSION = 6


def group_error(version: int, group_id: str, code: ErrorCode, message: str | None) -> dict:
    """One group's entry carrying only an error, as Kafka's ``DescribeGroupsResponse.groupError``
    builds it: empty state, protocol type and data, no members (v6 adds the message)."""
    return {
        "error_code": int(code),
        "error_message": message if version >= MESSAGE_VERSION else None,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": OPERATIONS_OMITTED,
    }


def describe_groups(version: int, body: dict, refused: Collection[str] = ()) -> dict:
    asked = body.get("groups") or []
    denied = [g for g in asked if g in refused]
    others = [g for g in asked if g not in refused]
    return {
        "throttle_time_ms": 0,
        "groups": [group_error(version, g, ErrorCode.GROUP_AUTHORIZATION_FAILED, REFUSED_MESSAGE) for g in denied]
        + [group_error(version, g, ErrorCode.NOT_COORDINATOR, NOT_COORDINATOR_MESSAGE) for g in others],
    }


def describe_groups_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    """The whole request failing with one code: every group asked for carries it."""
    return {"throttle_time_ms": 0,
            "groups": [group_error(version, g, code, message) for g in body.get("groups") or []]}


def list_groups_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "groups": []}
