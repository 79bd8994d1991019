"""Mutation score: apply each planted bug (tests/mutants/NN-name.patch) to a copy of the tracked
files and run the suite its header names; every mutant must make that suite fail.

The working tree is never touched: per mutant, HEAD's tracked files (``git archive HEAD``; with
``--worktree`` the working tree's tracked files as they are now) are unpacked into a temporary
directory, the patch is checked (``git apply --check``: a patch that no longer applies fails the
run - the mutants must follow the code) and applied there, and the repository's .venv python runs
pytest from that directory (``-p no:cacheprovider -x -q``, :data:`MUTANT_TIMEOUT`). Before the
mutants the unpatched copy runs the union of their suites once (the baseline): a kill only counts
if the same suite passes without the bug.

Each patch opens with ``#`` lines: what invariant it breaks, and ``# suite: <pytest args>``.

    python -m tests.mutants                 # what `make mutants` runs; exit 1 unless all die
    python -m tests.mutants --check         # only: does every patch still apply (seconds)
    python -m tests.mutants 04 09           # the mutants whose names start so

The figures come last as name=value: mutants_killed=K/N, slowest_kill_seconds, and one
mutant_<name>_seconds each (wall seconds from pytest's start until it stopped at the first
failure; a survivor's is its full run).
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
# A mutant's suite that runs longer than this counts as surviving: the stateful suite at
# STATEFUL_SCHEDULES takes ~30 s on 2 loaded cores, the named files less.
MUTANT_TIMEOUT = 300
# The stateful suite's schedules per run (tests/controller/soak.py's shards are 250 each): one
# shard from CI's fixed seed plus the scripted schedules that cut every crash point, so a run
# replays the same schedules every time.
STATEFUL_SCHEDULES = 250
SUITE_PREFIX = "# suite:"


@dataclass
class Mutant:
    name: str
    path: pathlib.Path
    why: str
    suite: list[str]


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, timeout, not-applied
    seconds: float
    detail: str = ""


def load(selected: list[str]) -> list[Mutant]:
    mutants = []
    for path in sorted(HERE.glob("*.patch")):
        name = path.stem
        if selected and not any(name.startswith(s) for s in selected):
            continue
        why, suite = [], None
        for line in path.read_text().splitlines():
            if not line.startswith("#"):
                break
            if line.startswith(SUITE_PREFIX):
                suite = line[len(SUITE_PREFIX):].split()
            else:
                why.append(line[1:].strip())
        if not suite:
            raise SystemExit(f"{path.name}: no '{SUITE_PREFIX} ...' line in its header")
        mutants.append(Mutant(name, path, " ".join(why), suite))
    return mutants


def tracked_tree(worktree: bool) -> bytes:
    """A tar of the tracked files: HEAD's, or the working tree's as they are now."""
    if not worktree:
        return subprocess.run(["git", "archive", "HEAD"], cwd=REPO, check=True, capture_output=True).stdout
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in names.decode().split("\0"):
            if name and (REPO / name).exists():
                tar.add(REPO / name, arcname=name, recursive=False)
    return buf.getvalue()


def unpack(tree: bytes) -> pathlib.Path:
    where = pathlib.Path(tempfile.mkdtemp(prefix="reassignd-mutant-"))
    with tarfile.open(fileobj=io.BytesIO(tree)) as tar:
        tar.extractall(where, filter="data")
    return where


def apply(where: pathlib.Path, patch: pathlib.Path, check_only: bool = False) -> str | None:
    """None when applied (or, check_only, when it would apply); else git's complaint."""
    steps = [["--check"]] if check_only else [["--check"], []]
    for args in steps:
        r = subprocess.run(["git", "apply", *args, str(patch)], cwd=where, capture_output=True, text=True)
        if r.returncode != 0:
            return (r.stderr or r.stdout).strip()
    return None


def environment(where: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(where)
    env["CI"] = "true"  # the stateful suite's fixed seed (soak.CI_SEED) and Hypothesis's ci profile
    env["STATEFUL_SCHEDULES"] = str(STATEFUL_SCHEDULES)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def imports_from(where: pathlib.Path) -> None:
    """The copy, not the editable install's /work tree, must be what the tests import."""
    r = subprocess.run(
        [str(VENV_PYTHON), "-c", "import controller, tests; print(controller.__file__); print(tests.__file__)"],
        cwd=where, env=environment(where), capture_output=True, text=True, check=True,
    )
    for line in r.stdout.split():
        if not pathlib.Path(line).resolve().is_relative_to(where.resolve()):
            raise SystemExit(f"the copy in {where} imports {line}: a mutant would run against the real tree")


def run_suite(where: pathlib.Path, suite: list[str]) -> tuple[str, float, str]:
    began = time.monotonic()
    try:
        r = subprocess.run(
            [str(VENV_PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "-x", "-q", *suite],
            cwd=where, env=environment(where), capture_output=True, text=True, timeout=MUTANT_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - began, ""
    seconds = time.monotonic() - began
    tail = [line for line in r.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    summary = tail[0] if tail else (r.stdout.strip().splitlines() or [""])[-1]
    return ("failed" if r.returncode != 0 else "passed"), seconds, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="run the mutants whose names start with these")
    parser.add_argument("--check", action="store_true", help="only check that every patch applies")
    parser.add_argument("--worktree", action="store_true", help="copy the working tree's tracked files, not HEAD's")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unpatched run of the suites")
    args = parser.parse_args(argv)
    mutants = load(args.only)
    if not mutants:
        print("no mutants selected", file=sys.stderr)
        return 2
    tree = tracked_tree(args.worktree)
    source = "the working tree" if args.worktree else "HEAD"

    if args.check:
        where = unpack(tree)
        try:
            bad = [(m, apply(where, m.path, check_only=True)) for m in mutants]
        finally:
            shutil.rmtree(where, ignore_errors=True)
        for m, error in bad:
            print(f"{m.name:40s} {'applies' if error is None else 'DOES NOT APPLY: ' + error}")
        failed = sum(1 for _, e in bad if e is not None)
        print(f"mutants_applying={len(mutants) - failed}/{len(mutants)}")
        return 1 if failed else 0

    if not VENV_PYTHON.exists():
        raise SystemExit(f"no {VENV_PYTHON}: run `make venv` first")
    if not args.no_baseline:
        union = list(dict.fromkeys(arg for m in mutants for arg in m.suite))
        where = unpack(tree)
        try:
            imports_from(where)
            status, seconds, summary = run_suite(where, union)
        finally:
            shutil.rmtree(where, ignore_errors=True)
        print(f"baseline ({source}, no mutant): {status} in {seconds:.1f}s: {summary}", flush=True)
        if status != "passed":
            print("the suites fail without any mutant: no kill would mean anything", file=sys.stderr)
            return 1

    outcomes: list[Outcome] = []
    for m in mutants:
        where = unpack(tree)
        try:
            error = apply(where, m.path)
            if error is not None:
                outcomes.append(Outcome(m, "not-applied", 0.0, error))
            else:
                imports_from(where)
                status, seconds, summary = run_suite(where, m.suite)
                outcomes.append(Outcome(m, {"failed": "killed", "passed": "survived"}.get(status, status), seconds, summary))
        finally:
            shutil.rmtree(where, ignore_errors=True)
        o = outcomes[-1]
        print(f"{m.name:40s} {o.status:12s} {o.seconds:7.1f}s  {o.detail[:110]}", flush=True)

    killed = [o for o in outcomes if o.status == "killed"]
    print()
    print(f"{'mutant':40s} {'result':12s} {'seconds':>8s}  suite")
    for o in outcomes:
        print(f"{o.mutant.name:40s} {o.status:12s} {o.seconds:8.1f}  {' '.join(o.mutant.suite)}")
    print()
    slowest = max(killed, key=lambda o: o.seconds, default=None)
    print(f"mutants_killed={len(killed)}/{len(outcomes)}")
    print(f"slowest_kill_seconds={slowest.seconds:.1f}" if slowest else "slowest_kill_seconds=none")
    if slowest:
        print(f"slowest_kill={slowest.mutant.name}")
    for o in outcomes:
        print(f"mutant_{o.mutant.name.replace('-', '_')}_seconds={o.seconds:.1f}")
    return 0 if len(killed) == len(outcomes) else 1
