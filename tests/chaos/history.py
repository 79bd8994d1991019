"""The chaos run's history: one JSON object per line, each stamped with wall-clock time ``t``.

Written from several threads (the workload's event loop, the observer's polling thread, the
nemesis), so every append takes a lock and is flushed at once: a run killed half-way leaves a
readable history up to its last event. ``tests.chaos.checker.check(read(path))`` judges it.

    history = History(tmp / "history.jsonl")
    history.add("fault", id=3, kind="sigstop", target=101, t0=..., t_heal=...)
    records = read(tmp / "history.jsonl")
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path


class History:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = open(self.path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()

    def add(self, type_: str, **fields) -> dict:
        record = {"type": type_, "t": round(fields.pop("t", time.time()), 4), **fields}
        line = json.dumps(record, separators=(",", ":"), default=_default)
        with self._lock:
            self._file.write(line + "\n")
        return record

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _default(value):
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    raise TypeError(f"not JSON: {value!r}")


def read(path: Path) -> list[dict]:
    """Every record; a torn last line (the writer was killed mid-write) is skipped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
