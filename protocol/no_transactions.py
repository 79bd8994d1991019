"""ListTransactions (66, KIP-664) from a node that coordinates no transaction: every controller
instance, and every simulated broker (the simulation has no ``__transaction_state``).

Clients list transactions by asking every node Metadata lists and merging the answers
(kafka-python's ``list_transactions``, Kafka's ``kafka-transactions.sh list``). Kafka's
transaction coordinator answers with the transactions matching the filters, naming in
``unknown_state_filters`` each state filter that is no transaction state; a node with none
lists nothing:

    list_transactions(0, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": []})
    # error 0, unknown_state_filters ["Bogus"], no transactions

Version 2's ``transactional_id_pattern`` (KIP-1152) must compile, else the whole request is
INVALID_REGULAR_EXPRESSION. Kafka compiles it as a Java regular expression; Python's ``re``
is checked here instead: the two agree on everything but a few constructs (possessive
quantifiers and ``\\p{..}`` classes are Java's; ``(?P<name>..)`` is Python's), so such a
pattern may be judged otherwise than Kafka would. Pure: no I/O.
"""

from __future__ import annotations

import re

from protocol import ApiKey
from protocol.errors import ErrorCode

# Kafka's TransactionState names, the values a state filter may take.
TRANSACTION_STATES = frozenset({
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
    "PrepareEpochFence",
})
PATTERN_VERSION = 2  # KIP-1152


def _answer(code: ErrorCode, unknown: list[str]) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "unknown_state_filters": unknown,
            "transaction_states": []}


def list_transactions(version: int, body: dict) -> dict:
    pattern = body.get("transactional_id_pattern") if version >= PATTERN_VERSION else None
    if pattern:
        try:
            re.compile(pattern)
        except re.error:
            return list_transactions_error(version, body, ErrorCode.INVALID_REGULAR_EXPRESSION, None)
    # Kafka takes the filters as a set (TransactionCoordinator.handleListTransactions): an
    # unknown state named twice is listed once, first occurrence's place kept.
    unknown = [s for s in dict.fromkeys(body.get("state_filters") or []) if s not in TRANSACTION_STATES]
    return _answer(ErrorCode.NONE, unknown)


def list_transactions_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    return _answer(code, [])
