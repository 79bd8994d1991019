"""Per-broker copy progress of the running moves, sampled from the brokers for /metrics.

While a controller is active, every ``interval`` seconds it asks the brokers involved in the
moves that are replicating (each move's leader and the brokers it adds) for their log sizes
(DescribeLogDirs, KIP-113, as ``kafka-reassign --progress`` does) and sets two gauges per
adding broker:

* ``reassignd_broker_bytes_remaining``: over the moves adding a replica to the broker, the
  leader's log size minus the new replica's (the whole leader size before it has one);
* ``reassignd_broker_copy_rate_bytes_per_second``: how fast the broker's new replicas grew
  between the last two samples (partitions present in both).

A broker that does not answer is left out of that sample. While a movement strategy in force
orders pending moves by size (engine step 2c, controller.core.move_order), it also asks the
leaders of pending moves for their sizes (those of unknown size first, at most
``SIZES_MAX_PARTITIONS`` a sample) and queues each answer for the engine as a
:class:`controller.core.events.ReplicaSizes`. The same sampler sets
``reassignd_throttles_in_force{kind="topic"|"broker"}`` from the KIP-179 removal znodes (the
throttles set through the admin API or ``--execute --throttle``, which the controller removes
when their moves end; throttles an operator set by hand are not listed). It runs beside the
active loop, never inside the engine.

Each sample is also kept in a :class:`ProgressHistory` (one per daemon, served by the
operations port as ``GET /progress/history``, which ``kafka-reassign --progress --chart`` draws):
a run begins at the first sample that finds a move pending or running after none was, and
replaces the previous run; it ends at the first sample that finds none, with every broker of the
run at 0. So a finished reassignment's history stays readable until the next one starts.

    history = ProgressHistory()
    sampler = CopyProgress(metrics, interval=10.0, history=history)
    task = asyncio.create_task(sampler.run(active, transport))     # cancelled with the term
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict, deque

from controller.core import move_order
from controller.core.commands import hosted_sizes
from controller.core.events import ReplicaSizes
from controller.core.task import Phase
from controller.shell.throttles import read_listed
from protocol import ApiKey
from znodes import paths
from znodes.api import ZkError

log = logging.getLogger("reassignd.controller")

DESCRIBE_LOG_DIRS_VERSION = 1
REQUEST_TIMEOUT_S = 5.0
# Samples one run keeps (the oldest go first): 12 hours at the default 10 s interval, so a
# long reassignment keeps its latest 12 hours; a sample is a dict of a few ints per broker, so a
# run of 100 brokers stays under ~20 MB even at the bound.
HISTORY_MAX_SAMPLES = 4320
# Pending partitions whose sizes one sample asks their leaders for, while a movement strategy
# orders by size (those of unknown size first): ~30 bytes each in a DescribeLogDirs answer, so
# at most ~300 KB per sample, 1,000 sizes/s at the default 10 s interval.
SIZES_MAX_PARTITIONS = 10_000


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


def sizes_wanted(state, setting: tuple[str, ...], limit: int = SIZES_MAX_PARTITIONS) -> dict[int, set]:
    """Leader -> pending partitions to ask the size of (engine step 2c): none unless a list in
    force orders by size; those of unknown size first, at most ``limit``."""
    if not state.pending or not move_order.needs_sizes(
        setting, (r.movement_strategies for r in state.requests.values())
    ):
        return {}
    unknown = [tp for tp in state.pending if tp not in state.sizes]
    known_ = [tp for tp in state.pending if tp in state.sizes]
    wanted: dict[int, set] = defaultdict(set)
    for tp in (unknown + known_)[:limit]:
        leader_isr = state.states.get(tp)
        if leader_isr is not None and leader_isr.leader >= 0:
            wanted[leader_isr.leader].add(tp)
    return dict(wanted)


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


class ProgressHistory:
    """Per-broker bytes remaining over time of the latest reassignment run (see the module
    docstring), at most ``max_samples`` samples of it."""

    def __init__(self, max_samples: int = HISTORY_MAX_SAMPLES):
        self.max_samples = max_samples
        self.run = 0  # runs begun by this process
        self.started: float | None = None  # wall clock, seconds
        self.finished: float | None = None
        self.interval: float | None = None
        self.brokers: set[int] = set()  # every broker that gained a replica in the run
        self.samples: deque[tuple[float, dict[int, int]]] = deque(maxlen=max_samples)
        self.dropped = 0  # samples the bound pushed out

    def record(self, when: float, busy: bool, left: dict[int, int], unanswered: set[int], interval: float) -> None:
        """One sample: ``busy`` when a move was pending or running; ``left`` the bytes remaining
        per broker in replicating moves; ``unanswered`` brokers that did not answer (left out of
        this sample rather than shown as done)."""
        if not busy:
            if self.started is not None and self.finished is None:
                self._append(when, {b: 0 for b in self.brokers})
                self.finished = when
            return
        if self.started is None or self.finished is not None:
            self.run += 1
            self.started, self.finished, self.interval = when, None, interval
            self.brokers = set()
            self.samples.clear()
            self.dropped = 0
        self.brokers.update(left)
        # A broker of the run with no replicating move left has nothing more to copy: 0.
        self._append(when, {b: left.get(b, 0) for b in self.brokers if b not in unanswered})

    def _append(self, when: float, values: dict[int, int]) -> None:
        if len(self.samples) == self.max_samples:
            self.dropped += 1
        self.samples.append((when, values))

    def as_json(self) -> dict:
        if self.started is None:
            return {"version": 1, "run": None}
        return {
            "version": 1,
            "run": {
                "number": self.run,
                "started": self.started,
                "finished": self.finished,
                "interval_s": self.interval,
                "max_samples": self.max_samples,
                "dropped_samples": self.dropped,
                "brokers": sorted(self.brokers),
                "samples": [
                    {"time": round(t, 3), "bytes_remaining": {str(b): v for b, v in sorted(values.items())}}
                    for t, values in self.samples
                ],
            },
        }


class CopyProgress:
    def __init__(self, metrics, interval: float, history: ProgressHistory | None = None):
        self.metrics = metrics
        self.interval = interval
        self.history = history
        self._last: tuple[float, dict] | None = None

    async def run(self, active, transport) -> None:
        try:
            while True:
                await asyncio.sleep(self.interval)
                if active.state is not None:
                    await self.sample(active.state, transport)
                    await self.sample_sizes(active, transport)
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
        unanswered = {b for b, s in sizes.items() if s is None}
        for _, leader, adding in moves:
            if leader in unanswered:  # its adding brokers' bytes are unknown, not 0
                unanswered.update(adding)
        sizes = {b: s for b, s in sizes.items() if s is not None}
        left, copied = remaining(moves, sizes)
        if self.history is not None:
            self.history.record(time.time(), bool(state.tasks), left, unanswered, self.interval)
        now = time.monotonic()
        per_second = rates(self._last[1], copied, now - self._last[0]) if self._last else {}
        self._last = (now, copied)
        self.metrics.bytes_remaining.clear()
        self.metrics.copy_rate.clear()
        for b, n in left.items():
            self.metrics.bytes_remaining.labels(str(b)).set(n)
        for b, r in per_second.items():
            self.metrics.copy_rate.labels(str(b)).set(r)

    async def sample_sizes(self, active, transport) -> None:
        """Pending moves' sizes from their leaders, while a strategy orders by size: each
        answer goes to the engine as a ReplicaSizes (the registration's sizes grow old, and a
        partition created since has none)."""
        wanted = sizes_wanted(active.state, move_order.setting(active.config.replica_movement_strategies))
        answers = await asyncio.gather(*(self._sizes(transport, b, tps) for b, tps in wanted.items()))
        for b, sizes in zip(wanted, answers):
            if sizes:
                active.inbox.queue.put_nowait(ReplicaSizes(b, sizes))

    @staticmethod
    async def _sizes(transport, broker: int, tps) -> dict | None:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, p in sorted(tps):
            by_topic[topic].append(p)
        body = {"topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                answer = await transport.request(broker, ApiKey.DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION, body)
        except (OSError, TimeoutError, ConnectionError) as e:
            log.debug("copy progress: broker %d did not answer DescribeLogDirs: %r", broker, e)
            return None
        except Exception as e:  # a garbled answer: that broker is left out of this sample
            log.debug("copy progress: broker %d: %r", broker, e)
            return None
        return hosted_sizes(answer)
