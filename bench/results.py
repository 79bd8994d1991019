"""Where every benchmark's figures go: printed last as ``name=value`` and recorded in
``bench/results.json`` with their peer, the sizes run and the conditions of the run.

A benchmark calls ``begin()`` before its work (the load average at the start) and ``finish()``
at its end. results.json holds one entry per benchmark, replaced by that benchmark's latest run;
``python -m bench.report`` builds the README's performance table and figure mentions from it, so
no figure in the README is typed by hand.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results.json"


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: the machine is shared, so each figure says how busy it was."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_state() -> dict:
    """The commit the figures were measured on, and whether the tree differed from it (other
    engineers' uncommitted edits count: they may be in what ran)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    try:
        # results.json itself is left out: an earlier benchmark's run changes it.
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results.json")
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(dirty)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": True}


def begin() -> dict:
    """What a run records before it starts working."""
    return {"load_average_start": load_average(), "started_utc": _now()}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_value(value) -> str:
    """A figure as it is printed and quoted: what the benchmark recorded, unchanged."""
    if isinstance(value, bool):
        raise TypeError("a figure is a number or a string, not a bool")
    return str(value)


def check_figures(figures: dict) -> None:
    for name, value in figures.items():
        if not name.isidentifier() or not name.islower():
            raise ValueError(f"figure name {name!r}: lower-case letters, digits and underscores only")
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            raise TypeError(f"figure {name}={value!r}: a number or a string")
        if isinstance(value, str) and ("|" in value or "`" in value or "\n" in value):
            raise ValueError(f"figure {name}={value!r}: would break the README's table")


def entry(figures: dict, peer: str, sizes: dict, started: dict, notes: list[str] | None = None) -> dict:
    """One benchmark's record (pure apart from reading the machine's state)."""
    check_figures(figures)
    return {
        "figures": dict(figures),
        "peer": peer,
        "sizes": dict(sizes),
        "notes": list(notes or []),
        "conditions": {
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "load_average_start": started["load_average_start"],
            "load_average_end": load_average(),
            "started_utc": started["started_utc"],
            "finished_utc": _now(),
            "python": sys.version.split()[0],
            **git_state(),
        },
    }


def load(path: Path = RESULTS) -> dict:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object of benchmark entries")
    return data


def store(benchmark: str, record: dict, path: Path = RESULTS) -> None:
    """Replace ``benchmark``'s entry; the others stay as they were. Written to a temporary
    file and renamed, so a run killed mid-write leaves the previous file whole."""
    data = load(path)
    data[benchmark] = record
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def finish(benchmark: str, figures: dict, *, peer: str, sizes: dict, started: dict,
           notes: list[str] | None = None, path: Path = RESULTS) -> None:
    """Record the run in results.json, then print its figures last, one ``name=value`` a line."""
    record = entry(figures, peer, sizes, started, notes)
    store(benchmark, record, path)
    for name, value in figures.items():
        print(f"{name}={format_value(value)}", flush=True)
