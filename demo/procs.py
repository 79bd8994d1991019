"""The demo's child processes: each in its own process group, all stopped on the way out.

    with Children(log_dir) as kids:
        sim = kids.spawn("sim", ["reassignd", "sim", ...], capture_stdout=True)
        line = sim.readline(timeout=30)
        kids.kill("controller-101")                  # SIGKILL one group (the failover)
    # leaving the block (normally, on an error or on Ctrl-C) stops every group still alive

Why process groups: a child may start its own children (ZooKeeper's JVM, Spark's), and a
signal to the group reaches them all. Why ``PR_SET_PDEATHSIG``: if the driver itself is
killed with SIGKILL its ``finally`` never runs; the kernel then sends SIGTERM to each direct
child, which shuts down as it would on Ctrl-C.

Stopping a group: SIGTERM, wait up to ``STOP_GRACE_S``, then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading
import subprocess
import sys
import time
from pathlib import Path

# A controller stops within its shutdown_timeout_s (5 s by default), the simulated brokers
# within a second or two; past this the group is killed.
STOP_GRACE_S = 8.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM when the driver dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux: the driver's finally still stops everything


class Child:
    def __init__(self, name: str, proc: subprocess.Popen, log_path: Path):
        self.name = name
        self.proc = proc
        self.log_path = log_path
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def readline(self, timeout: float) -> str:
        """One line of the child's stdout (spawned with capture_stdout), or TimeoutError.
        An empty string means the child closed its stdout (it exited)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no output line within {timeout:g}s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    line, self._buffer = self._buffer, b""
                    return line.decode(errors="replace")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace") + "\n"

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Children:
    """Every process the demo starts; ``stop_all`` (also on ``__exit__``) stops them."""

    def __init__(self, log_dir: Path, cwd: Path | None = None):
        self.log_dir = Path(log_dir)
        self.cwd = cwd
        self.children: dict[str, Child] = {}

    def __enter__(self) -> "Children":
        return self

    def __exit__(self, *exc) -> None:
        begin_cleanup()
        self.stop_all()

    def spawn(self, name: str, argv: list[str], *, capture_stdout: bool = False, env: dict | None = None) -> Child:
        """A long-running child; stderr (and stdout unless captured) go to ``logs/NAME.log``."""
        if name in self.children and self.children[name].alive():
            raise RuntimeError(f"{name} is already running")
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "ab") as log:
            proc = self.popen(argv, stdout=subprocess.PIPE if capture_stdout else log, stderr=log, env=env)
        child = Child(name, proc, log_path)
        self.children[name] = child
        return child

    def popen(self, argv: list[str], *, cwd: Path | None = None, env: dict | None = None, **kwargs) -> subprocess.Popen:
        """Popen in its own process group, told to stop when the driver dies. Not tracked:
        :meth:`spawn` and :meth:`run` track what they start."""
        return subprocess.Popen(
            argv,
            cwd=cwd or self.cwd,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,  # its own process group: Ctrl-C reaches the driver only
            preexec_fn=_die_with_parent,
            **kwargs,
        )

    def run(self, name: str, argv: list[str], *, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """A short command, waited for; on a timeout, an error or Ctrl-C its group is stopped."""
        proc = self.popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = Child(name, proc, self.log_dir / f"{name}.log")
        self.children[f"{name}#{proc.pid}"] = child
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            _stop_group(proc, STOP_GRACE_S)
            raise
        with open(child.log_path, "a") as log:  # one log per command name, every run appended
            log.write(f"$ {' '.join(argv)}\n{out}{err}(exit {proc.returncode})\n")
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def kill(self, name: str) -> None:
        """SIGKILL the child's whole process group (a crash, not a shutdown)."""
        child = self.children[name]
        if child.proc.poll() is None:
            _signal_group(child.proc, signal.SIGKILL)
            child.proc.wait()

    def stop(self, name: str, grace: float = STOP_GRACE_S) -> None:
        _stop_group(self.children[name].proc, grace)

    def stop_all(self, grace: float = STOP_GRACE_S) -> None:
        """Stop every child, newest first (controllers before the brokers they talk to)."""
        for child in reversed(list(self.children.values())):
            try:
                _stop_group(child.proc, grace)
            except Exception as exc:  # keep stopping the others
                print(f"demo: could not stop {child.name} (pid {child.pid}): {exc}", file=sys.stderr)
            if child.proc.stdout is not None:
                child.proc.stdout.close()

    def pids(self) -> list[int]:
        return [c.pid for c in self.children.values()]


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the child's pid
    except ProcessLookupError:
        pass


def _stop_group(proc: subprocess.Popen, grace: float) -> None:
    if proc.poll() is not None:
        return  # reaped earlier: its pid (and group id) may belong to someone else by now
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    # The leader may be gone while a grandchild lingers: sweep the group either way.
    _signal_group(proc, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()


# ---- interrupts ---------------------------------------------------------------------------------
# Ctrl-C and SIGTERM raise KeyboardInterrupt in the main thread. A signal that lands while the
# interpreter ignores exceptions (inside the at-fork handlers subprocess runs, for one: Python
# prints "Exception ignored" and carries on) would be lost, so the handler also sets a flag that
# the driver's checkpoints (every console line, every wait) raise again, until the clean-up
# begins: clean-up must run to its end whatever arrives.
_interrupted = False
_cleaning = False


def _on_signal(signum, frame) -> None:
    global _interrupted
    _interrupted = True
    if not _cleaning:
        raise KeyboardInterrupt


def install_interrupt_handlers() -> None:
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


def checkpoint() -> None:
    """Raise KeyboardInterrupt in the main thread if a signal asked to stop and clean-up has not begun."""
    if _interrupted and not _cleaning and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt


def begin_cleanup() -> None:
    global _cleaning
    _cleaning = True
