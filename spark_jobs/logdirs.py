"""Replica sizes from brokers through DescribeLogDirs (API key 35, KIP-113), over asyncio TCP.

Usage::

    sizes, warnings = await query_sizes({1: ("127.0.0.1", 9092), 2: ("127.0.0.1", 9093)})
    sizes[1][("orders", 0)]        # bytes of broker 1's replica of orders-0

Each broker is asked ApiVersions first, then DescribeLogDirs for every partition (``topics``
null) at the highest version both sides speak. A broker that cannot be reached, answers with
an error or sends garbage is skipped with a warning; its replicas simply have no size.
"""

from __future__ import annotations

import asyncio

from protocol import ApiKey
from protocol_aio import ClientConnection

OUR_LOG_DIRS_VERSIONS = (0, 4)  # the versions of DescribeLogDirs our codec speaks
CLIENT_ID = "reassignd-snapshot"


class LogDirsError(Exception):
    """One broker's size query failed (unreachable, error code, malformed answer)."""


class BrokerLogDirs(dict):
    """(topic, partition) -> bytes of one broker's replicas, and ``disk_bytes``: the broker's
    disk, total_bytes summed over its online log dirs (DescribeLogDirs v4+, KIP-827); None when
    the answer is older or any online dir reports -1 (unknown)."""

    disk_bytes: int | None = None


def sizes_from_answer(answer: dict) -> BrokerLogDirs:
    """(topic, partition) -> bytes from one broker's DescribeLogDirs answer (future logs and
    offline log dirs excluded); LogDirsError when the answer carries an error code."""
    if answer.get("error_code", 0) != 0:
        raise LogDirsError(f"DescribeLogDirs error code {answer['error_code']}")
    out = BrokerLogDirs()
    totals = []
    for result in answer.get("results", []):
        if result.get("error_code", 0) != 0:
            continue  # an offline log dir holds nothing we can count
        totals.append(result.get("total_bytes", -1))
        for topic in result.get("topics", []):
            for part in topic.get("partitions", []):
                if part.get("is_future_key"):
                    continue
                key = (topic["name"], part["partition_index"])
                out[key] = out.get(key, 0) + max(0, int(part["partition_size"]))
    if totals and all(isinstance(t, int) and t > 0 for t in totals):
        out.disk_bytes = sum(totals)
    return out


async def broker_answer(host: str, port: int, timeout: float = 10.0) -> dict:
    """One broker's whole DescribeLogDirs answer (every partition, every directory), at the
    highest version both sides speak; LogDirsError when it cannot be had or carries an error."""

    async def run():
        # A DescribeLogDirs answer lists every replica a broker holds (~40 bytes each); its size
        # is checked against protocol.wire_limits before it is read (a FrameError is a ValueError).
        conn = await ClientConnection.open(host, port, connect_timeout_s=timeout, client_id=CLIENT_ID,
                                           name=f"{host}:{port}")
        try:
            versions = await conn.request(ApiKey.API_VERSIONS, 0, {})
            if versions.get("error_code", 0) != 0:
                raise LogDirsError(f"ApiVersions error code {versions['error_code']}")
            theirs = {k["api_key"]: (k["min_version"], k["max_version"]) for k in versions.get("api_keys", [])}
            if ApiKey.DESCRIBE_LOG_DIRS not in theirs:
                raise LogDirsError("broker does not support DescribeLogDirs")
            lo, hi = theirs[ApiKey.DESCRIBE_LOG_DIRS]
            version = min(hi, OUR_LOG_DIRS_VERSIONS[1])
            if version < max(lo, OUR_LOG_DIRS_VERSIONS[0]):
                raise LogDirsError(f"no common DescribeLogDirs version (broker {lo}-{hi})")
            answer = await conn.request(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": None})
        finally:
            await conn.close()
        if answer.get("error_code", 0) != 0:
            raise LogDirsError(f"DescribeLogDirs error code {answer['error_code']}")
        return answer

    try:
        return await asyncio.wait_for(run(), timeout)
    except LogDirsError:
        raise
    except asyncio.TimeoutError:
        raise LogDirsError(f"no answer within {timeout:g}s") from None
    except (OSError, asyncio.IncompleteReadError) as e:
        raise LogDirsError(f"connection failed: {e}") from None
    except ValueError as e:  # protocol.DecodeError and friends: a broker sending garbage
        raise LogDirsError(f"malformed response: {e}") from None


async def broker_sizes(host: str, port: int, timeout: float = 10.0) -> dict[tuple[str, int], int]:
    """(topic, partition) -> bytes for every replica one broker holds (future logs excluded)."""
    return sizes_from_answer(await broker_answer(host, port, timeout))


async def query_sizes(
    endpoints: dict[int, tuple[str, int]], timeout: float = 10.0, fetch=None
) -> tuple[dict[int, dict[tuple[str, int], int]], list[str]]:
    """Ask every broker in parallel. Returns (broker id -> sizes, warnings).

    ``fetch(host, port, timeout=)`` asks one broker, raising LogDirsError when it cannot;
    :func:`broker_sizes` (PLAINTEXT) unless given (the planner service passes one that speaks
    TLS and SASL; :func:`query_layouts` one that returns the whole answer, which is then what
    the result maps each broker to)."""
    fetch = fetch or broker_sizes
    ids = sorted(endpoints)
    results = await asyncio.gather(
        *(fetch(*endpoints[b], timeout=timeout) for b in ids), return_exceptions=True
    )
    sizes: dict[int, dict[tuple[str, int], int]] = {}
    warnings: list[str] = []
    for b, r in zip(ids, results):
        if isinstance(r, LogDirsError):
            warnings.append(f"broker {b} ({endpoints[b][0]}:{endpoints[b][1]}): DescribeLogDirs failed: {r}")
        elif isinstance(r, BaseException):
            raise r
        else:
            sizes[b] = r
    return sizes, warnings


async def query_layouts(endpoints: dict[int, tuple[str, int] | None], timeout: float = 10.0, fetch=None) -> dict:
    """Every broker's log directories (:func:`spark_jobs.disks.dirs_from_answer`), asked in
    parallel: broker id -> its directories, or the reason it has none (no endpoint: not
    registered; an answer that failed) - what :func:`spark_jobs.disks.plan_disks` takes.
    ``fetch(host, port, timeout=)`` returns one broker's answer (default :func:`broker_answer`)."""
    from spark_jobs.disks import dirs_from_answer

    reachable = {b: e for b, e in endpoints.items() if e is not None}
    answers, warnings = await query_sizes(reachable, timeout=timeout, fetch=fetch or broker_answer)
    out: dict = {b: "not registered (no endpoint to ask)" for b in endpoints if endpoints[b] is None}
    for b in reachable:
        out[b] = dirs_from_answer(answers[b]) if b in answers else next(
            w.split("DescribeLogDirs failed: ", 1)[-1] for w in warnings if w.startswith(f"broker {b} "))
    return out
