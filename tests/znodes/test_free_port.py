"""znodes.launcher.free_port: ports outside the kernel's ephemeral range, reserved across
processes, so two runs on one machine (two chaos runs, a test run beside a demo) never pick
the same one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from znodes import launcher
from znodes.launcher import ephemeral_range, free_port

REPO = Path(__file__).resolve().parents[2]
# How long a stopped server's threads may take to let go of its files, on a loaded machine.
RELEASE_WAIT_S = 10.0


def test_ports_are_outside_the_ephemeral_range_and_never_handed_out_twice():
    low, high = ephemeral_range()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(not low <= p <= high for p in ports), ports


def test_a_port_another_process_reserved_is_skipped(monkeypatch):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys
            from znodes.launcher import free_port
            print(free_port(), flush=True)
            sys.stdin.read()  # hold the reservation until told to go
        """)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        held = int(holder.stdout.readline())
        low, _ = ephemeral_range()
        first = max(1024, low - launcher.PORTS_BELOW_EPHEMERAL)
        # Start the walk at the other process's port: it must be passed over.
        monkeypatch.setattr(launcher.random, "randrange", lambda span: held - first)
        assert free_port() != held
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once that process is gone, its port can be had again.
    monkeypatch.setattr(launcher.random, "randrange", lambda span: held - first)
    assert free_port() == held


def test_a_port_something_listens_on_is_skipped(monkeypatch):
    target = free_port()
    os.close(launcher._reserved.pop(target))  # not ours any more: only the listener holds it
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", target))
        listener.listen()
        low, _ = ephemeral_range()
        first = max(1024, low - launcher.PORTS_BELOW_EPHEMERAL)
        monkeypatch.setattr(launcher.random, "randrange", lambda span: target - first)
        assert free_port() != target


def test_a_zookeeper_started_by_a_process_that_exits_keeps_its_ports_reserved(tmp_path):
    """`reassignd zk start` returns while the server runs on: the server holds its ports'
    reservations itself (inherited lock files), so no other run is handed them."""
    data = tmp_path / "zk"
    zk = launcher.LocalZooKeeper(data_dir=data)
    try:
        started = subprocess.run(
            [sys.executable, "-m", "reassignd", "zk", "start", "--port", "0", "--data-dir", str(data)],
            cwd=REPO, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        port = int(zk.connect_string.rsplit(":", 1)[1])  # from the server's state.json
        assert port not in launcher._reserved
        assert launcher.reservation(port) is None  # the server's, though the starter is gone
    finally:
        zk.stop()
    # Free again once the server is gone. A JVM's main thread shows as a zombie (stop() returns)
    # while its other threads still hold the open files a moment: wait for the lock itself.
    deadline = time.monotonic() + RELEASE_WAIT_S
    while (fd := launcher.reservation(port)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fd is not None
    os.close(launcher._reserved.pop(port))
