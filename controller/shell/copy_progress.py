"""Per-broker copy progress of the running moves, sampled from the brokers for /metrics.

While a controller is active, every ``interval`` seconds it asks the brokers involved in the
moves that are replicating (each move's leader and the brokers it adds) for their log sizes
(DescribeLogDirs, KIP-113, as ``kafka-reassign --progress`` does) and sets two gauges per
adding broker:

* ``reassignd_broker_bytes_remaining``: over the moves adding a replica to the broker, the
  leader's log size minus the new replica's (the whole leader size before it has one);
* ``reassignd_broker_copy_rate_bytes_per_second``: how fast the broker's new replicas grew
  between the last two samples (partitions present in both).

A broker that does not answer is left out of that sample. The same sampler sets
``reassignd_throttles_in_force{kind="topic"|"broker"}`` from the KIP-179 removal znodes (the
throttles set through the admin API or ``--execute --throttle``, which the controller removes
when their moves end; throttles an operator set by hand are not listed). It runs beside the
active loop, never inside the engine.

    sampler = CopyProgress(metrics, interval=10.0)
    task = asyncio.create_task(sampler.run(active, transport))     # cancelled with the term
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

from controller.core.task import Phase
from controller.shell.throttles import read_listed
from znodes import paths
from znodes.api import ZkError

log = logging.getLogger("reassignd.controller")

DESCRIBE_LOG_DIRS = 35
DESCRIBE_LOG_DIRS_VERSION = 1
REQUEST_TIMEOUT_S = 5.0


def moving(state) -> list[tuple[tuple[str, int], int, tuple[int, ...]]]:
    """(partition, leader, brokers being added) of each replicating move whose leader is known."""
    out = []
    for move in state.tasks.values():
        if move.phase is not Phase.REPLICATING or not move.adding:
            continue
        leader_isr = state.states.get(move.tp)
        if leader_isr is None or leader_isr.leader < 0:
            continue
        out.append((move.tp, leader_isr.leader, move.adding))
    return out


def remaining(moves, sizes: dict[int, dict[tuple[str, int], int]]) -> tuple[dict[int, int], dict[int, dict]]:
    """Bytes left per adding broker, and each adding broker's new-replica sizes (for the rate).
    Moves whose leader did not answer are left out."""
    left: dict[int, int] = defaultdict(int)
    copied: dict[int, dict] = defaultdict(dict)
    for tp, leader, adding in moves:
        leader_size = sizes.get(leader, {}).get(tp)
        if leader_size is None:
            continue
        for b in adding:
            if b not in sizes:
                continue
            have = sizes[b].get(tp, 0)
            left[b] += max(0, leader_size - have)
            copied[b][tp] = have
    return dict(left), dict(copied)


def rates(before: dict[int, dict], after: dict[int, dict], seconds: float) -> dict[int, float]:
    out = {}
    for b, now in after.items():
        then = before.get(b, {})
        common = [tp for tp in now if tp in then]
        if common and seconds > 0:
            out[b] = max(0, sum(now[tp] - then[tp] for tp in common)) / seconds
    return out


class CopyProgress:
    def __init__(self, metrics, interval: float):
        self.metrics = metrics
        self.interval = interval
        self._last: tuple[float, dict] | None = None

    async def run(self, active, transport) -> None:
        try:
            while True:
                await asyncio.sleep(self.interval)
                if active.state is not None:
                    await self.sample(active.state, transport)
                await self.sample_throttles(active.store)
        finally:
            self.metrics.bytes_remaining.clear()
            self.metrics.copy_rate.clear()
            self.metrics.throttled.clear()

    async def sample_throttles(self, store) -> None:
        try:
            topics = await read_listed(store, paths.THROTTLED_REPLICAS_REMOVAL)
            brokers = await read_listed(store, paths.THROTTLED_RATES_REMOVAL)
        except ZkError as e:  # the active loop handles the session; try again next time
            log.debug("copy progress: cannot read the throttle removal znodes: %r", e)
            return
        self.metrics.throttled.labels("topic").set(len(topics.members))
        self.metrics.throttled.labels("broker").set(len(brokers.members))

    async def sample(self, state, transport) -> None:
        moves = moving(state)
        wanted: dict[int, set] = defaultdict(set)
        for tp, leader, adding in moves:
            for b in (leader, *adding):
                wanted[b].add(tp)
        sizes = dict(zip(wanted, await asyncio.gather(*(self._sizes(transport, b, tps) for b, tps in wanted.items()))))
        sizes = {b: s for b, s in sizes.items() if s is not None}
        left, copied = remaining(moves, sizes)
        now = time.monotonic()
        per_second = rates(self._last[1], copied, now - self._last[0]) if self._last else {}
        self._last = (now, copied)
        self.metrics.bytes_remaining.clear()
        self.metrics.copy_rate.clear()
        for b, n in left.items():
            self.metrics.bytes_remaining.labels(str(b)).set(n)
        for b, r in per_second.items():
            self.metrics.copy_rate.labels(str(b)).set(r)

    @staticmethod
    async def _sizes(transport, broker: int, tps) -> dict | None:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, p in sorted(tps):
            by_topic[topic].append(p)
        body = {"topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                answer = await transport.request(broker, DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION, body)
        except (OSError, TimeoutError, ConnectionError) as e:
            log.debug("copy progress: broker %d did not answer DescribeLogDirs: %r", broker, e)
            return None
        except Exception as e:  # a garbled answer: that broker is left out of this sample
            log.debug("copy progress: broker %d: %r", broker, e)
            return None
        out = {}
        for result in answer.get("results") or []:
            if result.get("error_code", 0):
                continue
            for topic in result.get("topics") or []:
                for p in topic.get("partitions") or []:
                    if not p.get("is_future_key"):
                        tp = (topic["name"], p["partition_index"])
                        out[tp] = max(out.get(tp, 0), p["partition_size"])
        return out
