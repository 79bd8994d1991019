"""Replica sizes for the planner service's model: every broker's DescribeLogDirs, with the
brokers' listener security when ``--command-config`` gives one.

Without ``--command-config`` (or with ``security.protocol=PLAINTEXT``) the poll is
:func:`spark_jobs.logdirs.query_sizes`: one plain connection per broker at its registered
PLAINTEXT endpoint, as ``reassignd snapshot`` asks. With SSL, SASL_PLAINTEXT or SASL_SSL, a
broker whose registration (``/brokers/ids/N``: ``endpoints`` and
``listener_security_protocol_map``) has an endpoint of that protocol is asked there with
``--command-config``'s settings, the ones the executing AdminClient logs in with, through the
client's connection (:class:`client.transport.NodeConnection`: TLS, then the SASL exchange). A
broker without one is asked at its PLAINTEXT endpoint as before (reassignd's simulated brokers
register only that one). A broker that cannot answer is a warning naming the protocol spoken;
its replicas simply have no size.

Usage::

    secured = await feed.broker_endpoints(security.protocol)     # {1: ("b1", 9093), ...}
    sizes, warnings = await poll_sizes({1: ("b1", 9092)}, secured, security, timeout=10.0)
"""

from __future__ import annotations

import asyncio
import functools

from protocol import ApiKey
from spark_jobs.logdirs import (
    OUR_LOG_DIRS_VERSIONS,
    LogDirsError,
    query_sizes,
    sizes_from_answer,
)

CLIENT_ID = "reassignd-planner"


async def secured_broker_answer(host: str, port: int, security, timeout: float = 10.0) -> dict:
    """One broker's whole DescribeLogDirs answer, asked over ``security`` (a
    client.security.ClientSecurity); LogDirsError, naming the protocol, when it cannot answer."""
    from client.errors import ReassignError
    from client.transport import NodeConnection

    async def run():
        conn = await NodeConnection.open(host, port, client_id=CLIENT_ID, request_timeout_ms=int(timeout * 1000),
                                         security=security)
        try:
            _, answer = await conn.request(ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}, OUR_LOG_DIRS_VERSIONS)
        finally:
            await conn.close()
        if answer.get("error_code", 0) != 0:
            raise LogDirsError(f"DescribeLogDirs error code {answer['error_code']}")
        return answer

    try:
        return await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError:
        raise LogDirsError(f"{security.protocol}: no answer within {timeout:g}s") from None
    except (LogDirsError, ReassignError) as e:  # refused, failed TLS or login, no DescribeLogDirs, garbage
        raise LogDirsError(f"{security.protocol}: {e}") from None


async def secured_broker_sizes(host: str, port: int, security, timeout: float = 10.0) -> dict[tuple[str, int], int]:
    """(topic, partition) -> bytes for every replica one broker holds, asked over ``security``;
    LogDirsError, naming the protocol, when it cannot answer."""
    return sizes_from_answer(await secured_broker_answer(host, port, security, timeout))


async def poll_sizes(
    plain: dict[int, tuple[str, int]], secured: dict[int, tuple[str, int]], security, timeout: float = 10.0
) -> tuple[dict[int, dict[tuple[str, int], int]], list[str]]:
    """Ask every broker in parallel: those in ``secured`` (broker id -> its endpoint of
    ``security``'s protocol) there with ``security``, the others at their ``plain`` (PLAINTEXT)
    endpoint. Returns (broker id -> sizes, warnings)."""
    rest = {b: e for b, e in plain.items() if b not in secured}
    fetch = functools.partial(secured_broker_sizes, security=security)
    (sizes, warnings), (more, more_warnings) = await asyncio.gather(
        query_sizes(rest, timeout=timeout), query_sizes(secured, timeout=timeout, fetch=fetch))
    return {**sizes, **more}, warnings + more_warnings
