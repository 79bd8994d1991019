"""DescribeLogDirs (35, KIP-113) on a controller instance: no log directories.

Clients send DescribeLogDirs to every node Metadata lists (kafka-python's
``describe_log_dirs()``, Kafka's ``kafka-log-dirs.sh --describe``), and Metadata lists every
controller instance (docs/DESIGN.md section 5.5), so each instance answers as a Kafka node that
holds no replica would: no error, no directories. A client merging the answers sees the
simulated brokers' directories and nothing from the controllers.

DESCRIBE on the cluster is checked before this handler (controller.shell.authorizer's table):
refused, the answer is Kafka's - no directories and, from v3, CLUSTER_AUTHORIZATION_FAILED as the
request's error code.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.errors import ErrorCode



async def handle_describe_log_dirs(ctx: AdminContext, version: int, body: dict) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(ErrorCode.NONE), "results": []}


def describe_log_dirs_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    # v0-2 have no request-wide code: an empty answer, as Kafka sends them.
    return {"throttle_time_ms": 0, "error_code": int(code), "results": []}


APIS = [
    Api(ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirs", 0, 5, controller_only=False,
        handle=handle_describe_log_dirs, error_response=describe_log_dirs_error),
]
