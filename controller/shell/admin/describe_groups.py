"""DescribeGroups (15) on a controller instance: every group NOT_COORDINATOR.

Clients send DescribeGroups to the node FindCoordinator named; a controller instance
coordinates no group, so each group asked for gets Kafka's answer from a broker that is not its
coordinator: NOT_COORDINATOR (16, retriable: the client looks the coordinator up again), empty
state, no members (``protocol.no_groups``).

Kafka's authorisation, per group: without DESCRIBE on the GROUP the group is answered
GROUP_AUTHORIZATION_FAILED (30), listed before the others (KafkaApis answers the refused ones
first).
"""

from __future__ import annotations

from controller.core import acl
from controller.shell.admin.base import AdminContext, Api, allows
from protocol import ApiKey
from protocol.no_groups import describe_groups, describe_groups_error


async def handle_describe_groups(ctx: AdminContext, version: int, body: dict) -> dict:
    refused = set()
    for group in body.get("groups") or []:
        if not await allows(ctx, acl.DESCRIBE, acl.GROUP, group):
            refused.add(group)
    return describe_groups(version, body, refused)


APIS = [
    Api(ApiKey.DESCRIBE_GROUPS, "DescribeGroups", 0, 6, controller_only=False,
        handle=handle_describe_groups, error_response=describe_groups_error),
]
