"""``make demo``'s driver, run as ``python -m demo`` the way make runs it: it must finish with
exit 0 and its summary, and leave no process behind - also when it is interrupted or killed.

Every process the driver starts (ZooKeeper, the brokers, the controllers, Spark, the CLI)
inherits its environment; the test puts a unique marker in it and afterwards looks for any
process still carrying the marker in /proc/PID/environ.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
MARKER = "REASSIGND_DEMO_TEST_RUN"
DEMO_TIMEOUT_S = 240
# The driver stops its children with SIGTERM then SIGKILL after demo.procs.STOP_GRACE_S; once
# the driver is SIGKILLed, the children get SIGTERM from the kernel and ZooKeeper's watchdog
# notices within a second or two.
ORPHAN_GRACE_S = 20


def marked_processes(token: str) -> list[str]:
    """``pid cmdline`` of every live process whose environment holds MARKER=token."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = next((l for l in (entry / "status").read_text().splitlines() if l.startswith("State:")), "")
            if "Z" in state.split()[1:2]:
                continue  # a zombie is already dead, waiting for its parent to reap it
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        found.append(f"{entry.name} {cmd[:200]}")
    return found


def start_demo(tmp_path: Path, token: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "demo", "--workdir", str(tmp_path / "demo")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, MARKER: token, "PYTHONUNBUFFERED": "1"},
    )


def read_until(proc: subprocess.Popen, pattern: str, timeout: float) -> str:
    """The output up to and including the first line matching ``pattern``."""
    seen = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if re.search(pattern, line):
            return "".join(seen)
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"no line matching {pattern!r}:\n{''.join(seen)[-3000:]}")


def assert_nothing_left(token: str) -> None:
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while (left := marked_processes(token)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, "processes the demo started are still running:\n" + "\n".join(left)


def test_demo_runs_to_its_summary_and_leaves_nothing_running(tmp_path):
    token = uuid.uuid4().hex
    proc = start_demo(tmp_path, token)
    try:
        out, _ = proc.communicate(timeout=DEMO_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-4000:]
    # The story, in order.
    steps = [
        r"Metrics\s+http://127\.0\.0\.1:\d+/metrics \(controller \d+\), http://127\.0\.0\.1:\d+/metrics \(controller \d+\)",
        r"\$ reassignd snapshot --zookeeper ",
        r"\$ python -m spark_jobs\.plan --snapshot cluster\.json --rebalance",
        r"\$ kafka-reassign --bootstrap-server \S+ --execute --throttle \d+ --reassignment-json-file plan\.json",
        r"\$ kafka-reassign --bootstrap-server \S+ --progress --watch",
        r">>> SIGKILL the active controller (\d+)",
        r">>> controller \d+ took over [\d.]+s after the kill",
        r"Done: every partition is on its planned replicas",
        r"Throttles left: none",
        r"\$ kafka-reassign --bootstrap-server \S+ --cancel",
        r"Cancelled: \S+ is back on \[",
        r"broker \d+ leads \d+ partitions; it asks the active controller to move them \(ControlledShutdown\)",
        r"all \d+ leaderships moved to brokers [\d,]+, none went leaderless",
        r"broker \d+ started again and is back in the ISR of all its \d+ partitions",
        r"== Summary",
    ]
    position = 0
    for step in steps:
        m = re.compile(step).search(out, position)
        assert m, f"missing (in order) {step!r}:\n{out[-4000:]}"
        position = m.end()
    killed = int(re.search(r">>> SIGKILL the active controller (\d+)", out).group(1))
    successor = int(re.search(r">>> controller (\d+) took over", out).group(1))
    assert successor != killed
    summary = out[out.index("== Summary"):]
    moved = int(re.search(r"partitions moved:\s+(\d+) \((\d+) replicas", summary).group(1))
    copied = int(re.search(r"bytes copied:\s+(\d+) ", summary).group(1))
    seconds = float(re.search(r"reassignment time:\s+([\d.]+)s", summary).group(1))
    pause = float(re.search(r"failover pause:\s+([\d.]+)s", summary).group(1))
    assert moved > 0 and copied > 0 and seconds > 0 and pause > 0, summary
    assert re.search(r"cancelled:\s+\S+ back on \[", summary), summary
    assert re.search(r"rolling restart:\s+broker \d+: [1-9]\d* leaderships handed over, none leaderless", summary), summary
    # the active controller's own count, from its /metrics: it took over part-way, completed some
    # and rolled back the cancelled move; the admin requests are kafka-reassign's
    counted = re.search(r"metrics \(active\):\s+http://\S+/metrics: (\d+) completions, (\d+) rollbacks, (\d+) admin requests",
                        summary)
    assert counted and int(counted.group(1)) > 0 and int(counted.group(2)) == 1 and int(counted.group(3)) > 0, summary
    assert "Everything the demo started has been stopped." in out
    assert_nothing_left(token)


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_demo_interrupted_or_killed_leaves_nothing_running(tmp_path, how):
    """Ctrl-C (SIGINT) once the cluster is up: the driver stops everything and exits 130.
    SIGKILL: the driver gets no say; its children must still go (they are told by the kernel,
    ZooKeeper by its watchdog)."""
    token = uuid.uuid4().hex
    proc = start_demo(tmp_path, token)
    try:
        read_until(proc, r"^\[\s*[\d.]+s\] Controllers ", timeout=120)
        assert marked_processes(token), "the demo should have processes running by now"
        proc.send_signal(getattr(signal, how))
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how == "SIGINT":
        assert proc.returncode == 130, out
        assert "interrupted: everything the demo started has been stopped" in out
    else:
        assert proc.returncode == -signal.SIGKILL
    assert_nothing_left(token)
