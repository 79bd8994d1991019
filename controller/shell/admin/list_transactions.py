"""ListTransactions (66, KIP-664) on a controller instance: no transactions.

Clients list transactions by asking every node Metadata lists (kafka-python's
``list_transactions``); a controller instance coordinates no transaction, so it answers as a
Kafka broker coordinating none (``protocol.no_transactions``): no error, no transactions, the
state filters that name no state listed as unknown.

No request-wide authorisation: Kafka lists only the transactions whose transactional id the
principal may DESCRIBE; with none, nothing is left out.
"""

from __future__ import annotations

from controller.shell.admin.base import AdminContext, Api
from protocol import ApiKey
from protocol.no_transactions import list_transactions, list_transactions_error


async def handle_list_transactions(ctx: AdminContext, version: int, body: dict) -> dict:
    return list_transactions(version, body)


APIS = [
    Api(ApiKey.LIST_TRANSACTIONS, "ListTransactions", 0, 2, controller_only=False,
        handle=handle_list_transactions, error_response=list_transactions_error),
]
