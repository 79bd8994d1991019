"""AlterReplicaLogDirs (34, KIP-113) on a controller instance: it has no log directory.

A client sends AlterReplicaLogDirs to the broker that hosts the replicas it moves, never to a
controller; but every controller instance is a Metadata node (docs/DESIGN.md section 5.5) and so
answers what a broker answers, as a Kafka node with none of the named directories would: every
replica LOG_DIR_NOT_FOUND.

ALTER on the cluster is checked before this handler (controller.shell.authorizer's table);
refused, every replica gets CLUSTER_AUTHORIZATION_FAILED, as Kafka answers.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.errors import ErrorCode


def _every_replica(body: dict, code: ErrorCode) -> dict:
    # A Kafka node's answer goes through ReplicaManager.alterReplicaLogDirs over the request
    # flattened into a map: each partition once (a repeat is one entry), grouped by topic.
    wanted: dict[tuple[str, int], None] = {}
    for entry in body.get("dirs") or []:
        for topic in entry.get("topics") or []:
            for index in topic.get("partitions") or []:
                wanted[(topic["name"], index)] = None
    by_topic: dict[str, list[dict]] = {}
    for name, index in wanted:
        by_topic.setdefault(name, []).append({"partition_index": index, "error_code": int(code)})
    return {"throttle_time_ms": 0, "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}


async def handle_alter_replica_log_dirs(ctx: AdminContext, version: int, body: dict) -> dict:
    return _every_replica(body, ErrorCode.LOG_DIR_NOT_FOUND)


def alter_replica_log_dirs_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    # Kafka's AlterReplicaLogDirsRequest.getErrorResponse: one topic entry per (dir, topic) of
    # the request as sent, its partitions as listed - nothing merged or dropped.
    results = [{"topic_name": topic["name"],
                "partitions": [{"partition_index": index, "error_code": int(code)}
                               for index in topic.get("partitions") or []]}
               for entry in body.get("dirs") or [] for topic in entry.get("topics") or []]
    return {"throttle_time_ms": 0, "results": results}


APIS = [
    Api(ApiKey.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirs", 0, 2, controller_only=False,
        handle=handle_alter_replica_log_dirs, error_response=alter_replica_log_dirs_error),
]
