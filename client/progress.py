"""``--progress``: KIP-179's per-replica status table, bytes remaining and ETAs. Pure.

One :class:`Sample` is what the cluster said at one moment: the topics' current assignment
(Metadata), the brokers it knows, and each broker's DescribeLogDirs answer (size and offset lag
per replica it hosts). :func:`compute` turns the target assignment, a sample and optionally the
previous sample into :class:`ProgressReport` rows:

    Topic     Partition  Broker  Status                          Remaining   ETA
    my_topic  0          0       In sync                         0 B         -
    my_topic  0          1       Behind: 10456 messages behind   12.0 MiB    0:00:42
    asdf      0          1       Unknown topic
    my_topic  42         1       Unknown partition
    my_topic  0          42      Unknown broker
    my_topic  1          0       Broker does not host this partition   1.0 GiB   unknown

Bytes remaining for a replica are the leader's log size minus the replica's (the whole leader
size when the broker has no replica yet). A replica's rate is its growth between two samples;
when no growth could be measured its ETA falls back to the broker's follower throttle, if one is
known. Overall ETA is total bytes remaining over the summed rates.

Usage::

    report = compute(targets, sample, previous=None)
    print(render_table(report))
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from client.logdirs import LogDirMove
from client.wire import UNTHROTTLED
from znodes.values import TopicPartition


IN_SYNC = "In sync"
UNKNOWN_TOPIC = "Unknown topic"
UNKNOWN_PARTITION = "Unknown partition"
UNKNOWN_BROKER = "Unknown broker"
NOT_HOSTED = "Broker does not host this partition"
UNAVAILABLE = "Broker unavailable"
# Statuses that can never turn into "In sync" by waiting: --watch stops on them.
HOPELESS = (UNKNOWN_TOPIC, UNKNOWN_PARTITION, UNKNOWN_BROKER)
# --watch measures rates over about this long (RateWindow).
RATE_WINDOW_S = 10.0


def behind(lag: int) -> str:
    return f"Behind: {lag} messages behind"


def waiting(reason: str) -> str:
    """A replica of a partition whose move the controller holds back (ISR-aware execution)."""
    return f"Waiting: {reason}"


@dataclass(frozen=True)
class ReplicaLog:
    size: int
    offset_lag: int


@dataclass
class Sample:
    """The cluster at one moment. ``logs[b]`` is absent when broker b did not answer."""

    time: float
    brokers: set[int]
    # topic -> partition -> (leader, replicas)
    topics: dict[str, dict[int, tuple[int, list[int]]]]
    logs: dict[int, dict[TopicPartition, ReplicaLog]]
    # broker -> follower.replication.throttled.rate, where known
    follower_throttles: dict[int, int] = field(default_factory=dict)
    # partition -> why the controller holds its move back (ISR-aware execution), where known
    waiting: dict[TopicPartition, str] = field(default_factory=dict)
    # KIP-113: where each move between a broker's log directories stands
    log_dir_moves: list[LogDirMove] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    topic: str
    partition: int
    broker: int
    status: str
    lag: int | None = None
    remaining: int | None = None
    rate: float | None = None
    eta_s: float | None = None
    eta_from_throttle: bool = False

    def as_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "status": self.status,
            "offset_lag": self.lag,
            "bytes_remaining": self.remaining,
            "bytes_per_s": None if self.rate is None else round(self.rate, 1),
            "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
            "eta_from_throttle": self.eta_from_throttle,
        }


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    done: bool  # current replicas == target and every target replica in sync
    remaining: int | None
    eta_s: float | None
    waiting: str | None = None  # why the controller has not started its move yet


@dataclass(frozen=True)
class ProgressReport:
    rows: list[Row]
    partitions: list[PartitionState]
    total_remaining: int
    overall_rate: float | None
    overall_eta_s: float | None
    # receiving broker -> its follower.replication.throttled.rate, where one is set
    throttles: dict[int, int] = field(default_factory=dict)
    log_dir_moves: list[LogDirMove] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return all(p.done for p in self.partitions) and all(m.done for m in self.log_dir_moves)

    @property
    def hopeless(self) -> list[Row]:
        return [r for r in self.rows if r.status in HOPELESS]

    def as_json(self) -> dict:
        return {
            "replicas": [r.as_json() for r in self.rows],
            "partitions": [
                {
                    "topic": p.topic,
                    "partition": p.partition,
                    "done": p.done,
                    "bytes_remaining": p.remaining,
                    "eta_s": None if p.eta_s is None else round(p.eta_s, 1),
                    "waiting": p.waiting,
                }
                for p in self.partitions
            ],
            "bytes_remaining": self.total_remaining,
            "bytes_per_s": None if self.overall_rate is None else round(self.overall_rate, 1),
            "eta_s": None if self.overall_eta_s is None else round(self.overall_eta_s, 1),
            "follower_throttles": {str(b): rate for b, rate in sorted(self.throttles.items())},
            "log_dir_moves": [m.as_json() for m in self.log_dir_moves],
            "done": self.done,
        }


def _replica_status(tp: TopicPartition, broker: int, sample: Sample) -> tuple[str, ReplicaLog | None]:
    topic, partition = tp
    if topic not in sample.topics:
        return UNKNOWN_TOPIC, None
    if partition not in sample.topics[topic]:
        return UNKNOWN_PARTITION, None
    if broker not in sample.brokers:
        return UNKNOWN_BROKER, None
    if broker not in sample.logs:
        return UNAVAILABLE, None
    log = sample.logs[broker].get(tp)
    if log is None:
        return NOT_HOSTED, None
    return (IN_SYNC if log.offset_lag <= 0 else behind(log.offset_lag)), log


def _leader_size(tp: TopicPartition, sample: Sample) -> int | None:
    topic, partition = tp
    leader = sample.topics.get(topic, {}).get(partition, (-1, []))[0]
    log = sample.logs.get(leader, {}).get(tp)
    return None if log is None else log.size


def compute(
    targets: dict[TopicPartition, list[int]],
    sample: Sample,
    previous: Sample | None = None,
) -> ProgressReport:
    rows: list[Row] = []
    parts: list[PartitionState] = []
    total_remaining = 0
    measured_total = 0.0
    measured_any = False
    throttle_by_broker: dict[int, int] = {}
    # KIP-179's Long.MAX_VALUE means "not throttled": no rate to estimate from, none to show.
    throttled = {b: r for b, r in sample.follower_throttles.items() if r and r < UNTHROTTLED}
    dt = (sample.time - previous.time) if previous is not None else 0.0
    for tp in sorted(targets):
        leader_size = _leader_size(tp, sample)
        p_remaining: int | None = 0
        p_eta: float | None = 0.0
        all_in_sync = True
        held = sample.waiting.get(tp)
        for broker in targets[tp]:
            status, log = _replica_status(tp, broker, sample)
            if status != IN_SYNC:
                all_in_sync = False
                if held is not None and status not in HOPELESS:
                    status = waiting(held)
            if status in HOPELESS:
                rows.append(Row(tp[0], tp[1], broker, status))
                p_remaining = p_eta = None
                continue
            remaining: int | None = None
            if leader_size is not None and status != UNAVAILABLE:
                have = log.size if log is not None else 0
                remaining = max(0, leader_size - have)
            rate: float | None = None
            if previous is not None and dt > 0 and log is not None:
                before = previous.logs.get(broker, {}).get(tp)
                if before is not None:
                    rate = max(0.0, (log.size - before.size) / dt)
            eta: float | None = None
            from_throttle = False
            if remaining == 0:
                eta = 0.0
            elif remaining is not None and rate:
                eta = remaining / rate
            elif remaining is not None and throttled.get(broker):
                eta = remaining / throttled[broker]
                from_throttle = True
            if remaining:
                total_remaining += remaining
                if rate:
                    measured_total += rate
                    measured_any = True
                elif broker in throttled:
                    throttle_by_broker[broker] = throttled[broker]
            rows.append(
                Row(tp[0], tp[1], broker, status, None if log is None else log.offset_lag,
                    remaining, rate, eta, from_throttle)
            )
            p_remaining = None if (p_remaining is None or remaining is None) else p_remaining + remaining
            p_eta = None if (p_eta is None or eta is None) else max(p_eta, eta)
        current = sample.topics.get(tp[0], {}).get(tp[1], (-1, None))[1]
        done = all_in_sync and current == targets[tp]
        parts.append(PartitionState(tp[0], tp[1], done, p_remaining, 0.0 if done else p_eta, held))
    overall_rate: float | None = None
    if measured_any or throttle_by_broker:
        overall_rate = measured_total + sum(throttle_by_broker.values())
    if total_remaining == 0:
        overall_eta: float | None = 0.0
    elif overall_rate:
        overall_eta = total_remaining / overall_rate
    else:
        overall_eta = None
    receiving = {b for bs in targets.values() for b in bs}
    throttles = {b: r for b, r in throttled.items() if b in receiving}
    return ProgressReport(rows, parts, total_remaining, overall_rate, overall_eta, throttles, sample.log_dir_moves)


class RateWindow:
    """The sample to measure rates against while watching: the last one at least
    ``seconds`` old (or the first), not the previous one. Copying comes in bursts, so a rate
    over one redraw interval, and the ETA from it, jumps from one redraw to the next.

        window = RateWindow(first)
        report = compute(targets, current, window.push(current))
    """

    def __init__(self, first: Sample, seconds: float = RATE_WINDOW_S):
        self.seconds = seconds
        self.samples: collections.deque[Sample] = collections.deque([first])

    def push(self, sample: Sample) -> Sample:
        samples = self.samples
        samples.append(sample)
        while len(samples) > 2 and sample.time - samples[1].time >= self.seconds:
            samples.popleft()
        return samples[0]


# ---- rendering ----------------------------------------------------------------------------

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: int | float | None) -> str:
    if n is None:
        return "unknown"
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def human_eta(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}"


def render_table(report: ProgressReport) -> str:
    header = ("Topic", "Partition", "Broker", "Status", "Remaining", "ETA")
    lines = [header]
    for r in report.rows:
        if r.status in HOPELESS:
            lines.append((r.topic, str(r.partition), str(r.broker), r.status, "", ""))
            continue
        eta = "-" if r.eta_s == 0 else human_eta(r.eta_s) + (" (at throttle)" if r.eta_from_throttle else "")
        lines.append((r.topic, str(r.partition), str(r.broker), r.status, human_bytes(r.remaining), eta))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in lines]
    done = sum(1 for p in report.partitions if p.done)
    out.append("")
    if report.total_remaining == 0:
        # Nothing left to copy: a rate would be meaningless (and is usually unknown by then).
        out.append(f"Overall: {done}/{len(report.partitions)} partitions done, nothing left to copy")
    else:
        rate = "unknown" if report.overall_rate is None else f"{human_bytes(report.overall_rate)}/s"
        out.append(
            f"Overall: {done}/{len(report.partitions)} partitions done, "
            f"{human_bytes(report.total_remaining)} remaining at {rate}, ETA {human_eta(report.overall_eta_s)}"
        )
    if report.log_dir_moves:
        moved = sum(1 for m in report.log_dir_moves if m.done)
        out += ["", f"Log directory moves: {moved}/{len(report.log_dir_moves)} done"]
        rows = [("Topic", "Partition", "Broker", "Log dir", "Status")]
        rows += [(m.topic, str(m.partition), str(m.broker), m.target, _move_text(m)) for m in report.log_dir_moves]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        out += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(out)


def _move_text(move: LogDirMove) -> str:
    if move.state == "in progress":
        return f"In progress from {move.current}: {human_bytes(move.remaining)} left"
    return move.describe()


BAR_WIDTH = 30


def fraction_done(report: ProgressReport, baseline_remaining: int) -> float:
    if report.done:
        return 1.0
    if baseline_remaining <= 0:
        return 0.0 if report.total_remaining else 1.0
    return min(1.0, max(0.0, 1.0 - report.total_remaining / baseline_remaining))


def render_bar(report: ProgressReport, baseline_remaining: int) -> str:
    """One line: ``[#########.....] 62% 3/8 partitions, 1.2 GiB left, ETA 0:04:10``."""
    frac = fraction_done(report, baseline_remaining)
    filled = int(frac * BAR_WIDTH)
    done = sum(1 for p in report.partitions if p.done)
    return (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {int(frac * 100):3d}% "
        f"{done}/{len(report.partitions)} partitions, {human_bytes(report.total_remaining)} left, "
        f"ETA {human_eta(report.overall_eta_s)}"
    )
