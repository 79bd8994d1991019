"""ListGroups (16) on a controller instance: no groups.

Clients list consumer groups by asking every node Metadata lists and merging the answers
(kafka-python's ``list_groups``, aiokafka's and confluent-kafka's ``list_consumer_groups``);
a controller instance coordinates no group, so it answers as a Kafka broker coordinating none:
no error, no groups (``protocol.no_groups``).

No request-wide authorisation: Kafka lists every group to a principal with DESCRIBE on the
cluster and, to any other, the groups it may DESCRIBE; with no groups both are empty.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.no_groups import list_groups, list_groups_error


async def handle_list_groups(ctx: AdminContext, version: int, body: dict) -> dict:
    return list_groups(version, body)


APIS = [
    Api(ApiKey.LIST_GROUPS, "ListGroups", 0, 5, controller_only=False,
        handle=handle_list_groups, error_response=list_groups_error),
]
