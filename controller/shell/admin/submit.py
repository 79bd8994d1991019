"""The admin write APIs' request shapes: a request's topic -> partitions lists grouped per
partition (repeats refused as KIP-179 says) and results grouped back per topic.

The writes themselves are the engine's (controller.core.admin_requests, through
controller.shell.admin_events): nothing here reads or writes ZooKeeper.

    order, values, errors = group_partitions(body["topics"], "name", "partitions", "partition_index", "replicas")
    by_topic(order, results)          # [(topic, [(partition, (code, message)), ...]), ...]
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from znodes.values import TopicPartition

Result = tuple[ErrorCode, str | None]
OK: Result = (ErrorCode.NONE, None)


def group_partitions(
    topics: list[dict], name_key: str, parts_key: str, index_key: str, value_key: str, *, topic_once: bool = True
) -> tuple[list[TopicPartition], dict[TopicPartition, object], dict[TopicPartition, Result]]:
    """A request's topic -> partitions lists as (order, value per partition, errors).

    A partition named twice fails with INVALID_REQUEST and is not acted on; so does every
    partition of a topic named twice (KIP-179), unless ``topic_once`` is false (KIP-455: Kafka
    flattens the topics into one map, so a topic listed twice is taken whole).
    """
    order: list[TopicPartition] = []
    values: dict[TopicPartition, object] = {}
    errors: dict[TopicPartition, Result] = {}
    counts: dict[str, int] = {}
    for t in topics:
        counts[t[name_key]] = counts.get(t[name_key], 0) + 1
    for t in topics:
        name = t[name_key]
        for p in t[parts_key] or ():
            tp = (name, p[index_key])
            if tp in values or tp in errors:
                errors[tp] = (ErrorCode.INVALID_REQUEST, f"partition {name}-{tp[1]} appears more than once in the request")
                values.pop(tp, None)
                continue
            order.append(tp)
            if topic_once and counts[name] > 1:
                errors[tp] = (ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once in the request")
            else:
                values[tp] = p[value_key]
    return order, values, errors


def by_topic(order: list[TopicPartition], results: dict[TopicPartition, Result]) -> list[tuple[str, list[tuple[int, Result]]]]:
    """Results grouped by topic, in request order (each partition once)."""
    out: dict[str, list[tuple[int, Result]]] = {}
    get = results.get
    for tp in dict.fromkeys(order):
        parts = out.get(tp[0])
        if parts is None:
            parts = out[tp[0]] = []
        parts.append((tp[1], get(tp, OK)))
    return list(out.items())
