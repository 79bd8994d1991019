"""DescribeClientQuotas (48) and AlterClientQuotas (49): KIP-546, served by every instance, as
every ZooKeeper-mode Kafka broker serves them (Kafka's clients send them to any node). The
requests are znodes.client_quotas' (the simulated brokers serve the same), the rules
protocol.client_quotas'; who may call them (DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster) is
the handler's check (controller.shell.authorizer)."""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.client_quotas import alter_failure, describe_failure
from protocol.errors import ErrorCode
from znodes import client_quotas as zquotas


async def handle_describe(ctx: AdminContext, version: int, body: dict) -> dict:
    return await zquotas.describe(ctx.store, body)


async def handle_alter(ctx: AdminContext, version: int, body: dict) -> dict:
    return await zquotas.alter(ctx.store, body)


def describe_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return describe_failure(code, message)


def alter_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return alter_failure(body, code, message)


APIS = [
    Api(ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, controller_only=False,
        handle=handle_describe, error_response=describe_error),
    Api(ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, controller_only=False,
        handle=handle_alter, error_response=alter_error),
]
