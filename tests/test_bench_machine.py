"""bench/machine.py: the /proc readers against what the kernel says another way, and the
budget arithmetic the controller benchmark's machine figures come from."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from bench.machine import (
    TICKS_PER_SECOND,
    controller_budget_ms,
    free_controller_fraction,
    machine_busy_seconds,
    process_cpu_seconds,
    stat_cpu_seconds,
)

TICK = 1 / TICKS_PER_SECOND


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_process_cpu_is_what_the_process_itself_counts():
    before, own_before = process_cpu_seconds(os.getpid()), time.process_time()
    burn(0.3)
    spent, own = process_cpu_seconds(os.getpid()) - before, time.process_time() - own_before
    # /proc counts in clock ticks, the process's own clock finer: a tick or two apart
    assert own - 3 * TICK <= spent <= own + 3 * TICK
    assert spent >= 0.25


def test_another_process_cpu_is_read_and_a_gone_one_raises():
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.4\n"
                              "while time.process_time() < end: pass\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while process_cpu_seconds(child.pid) < 0.35:
            assert time.monotonic() < deadline, "the child never burnt its CPU"
            time.sleep(0.05)
        time.sleep(0.2)  # asleep now: its CPU stays where it is
        assert process_cpu_seconds(child.pid) < 0.4 + 0.1 + 3 * TICK  # the interpreter's start-up besides
    finally:
        child.kill()
        child.wait()
    with pytest.raises(OSError):
        process_cpu_seconds(child.pid)


def test_the_command_name_may_hold_spaces_and_parentheses():
    ticks = TICKS_PER_SECOND
    line = f"4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 10 0 0 0 {3 * ticks} {2 * ticks} 0 0 20 0 1 0 100 0 0\n"
    assert stat_cpu_seconds(line) == 5.0


def test_the_machine_busy_time_counts_this_process_burning():
    before = machine_busy_seconds()
    burn(0.3)
    assert machine_busy_seconds() - before >= 0.3 - 3 * TICK


@pytest.mark.parametrize("cores, rate, others, budget", [
    (2, 10_000, 0.15, 0.05),      # 0.2 ms of the two cores per partition, 0.15 of it taken
    (2, 16_000, 0.182, -0.057),   # the others alone need more than the machine
    (1, 1_000, 0.0, 1.0),
    (2, 15_690, 0.046, 0.064),    # room for 0.081 ms, but the controller's one core gives 0.064
    (4, 10_000, 0.0, 0.1),
])
def test_the_controller_budget_is_what_the_cores_leave_at_the_rate(cores, rate, others, budget):
    assert controller_budget_ms(cores, rate, others) == pytest.approx(budget, abs=1e-3)


@pytest.mark.parametrize("cores, others, limit, fraction", [
    (2, 0.2, 20_000, 0.5),        # room for 10,000 partitions a second of a limit of 20,000
    (2, 0.19, 28_804, 0.37),
    (2, 0.05, 20_000, 1.0),       # room for 40,000: the limit binds, not the machine
    (2, 0.0, 20_000, 1.0),
])
def test_a_controller_costing_nothing_still_waits_for_the_others_cores(cores, others, limit, fraction):
    assert free_controller_fraction(cores, others, limit) == fraction


def test_the_cpu_of_several_processes_is_their_sum():
    from bench.machine import processes_cpu_seconds

    assert processes_cpu_seconds(()) == 0
    before = process_cpu_seconds(os.getpid())
    both = processes_cpu_seconds((os.getpid(), os.getppid()))
    assert both >= before and both == pytest.approx(before + process_cpu_seconds(os.getppid()), abs=3 * TICK)
