"""What the machine a benchmark runs on spends, and what it leaves the controller.

The controller's goal is a fraction of ZooKeeper's ceiling, but on the benchmark's machine the
controller shares its cores with the ZooKeeper server it writes to and with the instant
brokers' process. Their CPU per partition, measured in the same run, bounds what any
controller could reach here: a controller that cost nothing would still wait for their cores.

The readers take Linux's /proc; the arithmetic is pure::

    >>> controller_budget_ms(cores=2, rate=10_000, others_ms_per_partition=0.15)
    0.05
    >>> controller_budget_ms(cores=2, rate=10_000, others_ms_per_partition=0.02)  # its one core binds
    0.1
    >>> free_controller_fraction(cores=2, others_ms_per_partition=0.2, limit_partitions_per_second=20_000)
    0.5
"""

from __future__ import annotations

import os
from pathlib import Path

# /proc's times are in clock ticks (USER_HZ), the same on every CPU.
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of every thread of process ``pid`` so far (its children not
    included). Raises OSError when the process is gone."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat").read_text())


def processes_cpu_seconds(pids) -> float:
    """:func:`process_cpu_seconds` summed over ``pids`` (a ZooKeeper ensemble's servers)."""
    return sum(process_cpu_seconds(pid) for pid in pids)


def stat_cpu_seconds(stat: str) -> float:
    """utime plus stime from the text of a /proc/PID/stat."""
    # The command name, field 2, is parenthesised and may hold spaces and parentheses: the
    # fields after its last ")" start at the state (field 3); utime and stime are 14 and 15.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent on anything but idling and waiting for I/O,
    summed over its CPUs, since boot (the first line of /proc/stat)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    assert fields[0] == "cpu", fields
    ticks = [int(x) for x in fields[1:]]
    idle, iowait = ticks[3], ticks[4]
    # guest times (fields 9 and 10, when present) are already counted in user time
    return (sum(ticks[:8]) - idle - iowait) / TICKS_PER_SECOND


# The controller decides on one thread, and its ZooKeeper client's thread shares the
# interpreter's lock with it: its process uses one core at most, however many are free.
CONTROLLER_CORES = 1


def controller_budget_ms(cores: int, rate: float, others_ms_per_partition: float) -> float:
    """The CPU milliseconds per partition the controller may spend at ``rate`` partitions per
    second on ``cores`` cores, when the other processes sharing them cost
    ``others_ms_per_partition``; at most what its one core gives at that rate. Negative when
    the others alone need more than the cores."""
    left = cores * 1000 / rate - others_ms_per_partition
    return round(min(left, CONTROLLER_CORES * 1000 / rate), 3)


def free_controller_fraction(cores: int, others_ms_per_partition: float, limit_partitions_per_second: float) -> float:
    """The fraction of ZooKeeper's limit a controller costing no CPU could reach here: the
    partitions per second the others' CPU leaves room for (``cores`` over their cost), over the
    limit, at most 1."""
    if others_ms_per_partition <= 0:
        return 1.0
    return round(min(1.0, cores * 1000 / others_ms_per_partition / limit_partitions_per_second), 2)
