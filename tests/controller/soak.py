"""The stateful test's schedules by the thousand: N schedules from one seed, over every core.

The schedules are cut into shards of :data:`SHARD_SIZE`; shard ``j`` runs Hypothesis on
tests/controller/test_stateful.py's ControllerMachine (``run_state_machine_as_test``, no
example database, shrinking on) with a seed derived from (seed, j) only, so the same seed and
count give the same schedules whatever the number of workers, and a larger count keeps the
shards of a smaller one (a run is extended by whole shards). Each schedule runs exactly
:data:`STEPS` steps after the initial one. Workers are spawned processes (never forked: the
pytest process may hold a JVM and kazoo threads).

Beside the shards, every whole run also runs the scripted schedules of
tests/controller/crash_schedules.py (two per crash point, one crashing and one deposing, plus
its EXTRA scripts, independent of the seed), so every crash point is cut in every run whatever
its schedule count: the coverage
check (every point written was cut, every flush kind written) holds at any count.

A failing shard stops the run; its report holds the seed, the shard, Hypothesis's shrunk
steps, the traceback and the line that replays it. Shrinking runs once the failure is found,
from the failing schedule saved in an in-memory example database, without the step minimum
(so it can drop steps as well as simplify them).

    python -m tests.controller.soak --seed 7 --schedules 10000     # what `make soak SEED=7 SCHEDULES=10000` runs
    python -m tests.controller.soak --seed 7 --schedules 10000 --shard 12   # that shard alone
    python -m tests.controller.soak --schedules 0                          # the scripted ones alone

``make test`` runs :data:`TEST_SCHEDULES` of them through ``test_stateful.test_schedules`` (seed
fixed under ``CI``); ``make soak`` runs :data:`SCHEDULES`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import logging
import multiprocessing
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field

from tests.controller.crashpoints import Coverage

SCHEDULES = 10_000  # per `make soak` (issue 16's full run)
# Per `make test` (issue 25): about 2 minutes on 2 cores. A planted fence bug fell after 17
# schedules and 1,000 cut 29 of the 30 crash points there were then; the scripted schedules cut
# every point (51 now).
TEST_SCHEDULES = 2_000
STEPS = 40  # steps per schedule after the initial one
SHARD_SIZE = 250  # schedules per shard: ~30 s of CPU, small enough to balance two workers
CI_SEED = 16  # the seed under CI=true: every CI run runs the same schedules
# The workers' string hashing (PYTHONHASHSEED). The schedules are the seed's alone, but how some
# end depended on set iteration order, which Python randomises per process: a shard of seed 16
# ended with one leader epoch more or less from run to run, so a failure found in one run might
# not replay. Fixed, the same seed ends the same way (its digest) in every run.
WORKER_HASH_SEED = "0"
# One shard in STATEFUL_TIGHT_CAPS_EVERY (default 4: 2 of the 8 shards of a 2,000-schedule run)
# at move caps of 1-2 (test_stateful.TIGHT_CAPS), where the caps bind; 0 runs none.
TIGHT_CAPS_EVERY = int(os.environ.get("STATEFUL_TIGHT_CAPS_EVERY", "4"))
# One shard in STATEFUL_UNCLEAN_EVERY (default 4: shards 1 and 5 of a 2,000-schedule run, apart
# from the tight ones) with topic t's unclean.leader.election.enable true (test_stateful.UNCLEAN):
# the unclean elections, a move's ending one included (engine step 12c), run and are checked.
UNCLEAN_EVERY = int(os.environ.get("STATEFUL_UNCLEAN_EVERY", "4"))


def default_seed() -> int:
    """``STATEFUL_SEED`` if set, else :data:`CI_SEED` under CI, else a random one."""
    if os.environ.get("STATEFUL_SEED"):
        return int(os.environ["STATEFUL_SEED"])
    if os.environ.get("CI"):
        return CI_SEED
    return random.SystemRandom().randrange(1, 2**31)


# One shard in STATEFUL_ALTER_PARTITION_EVERY (default 4: shards 2 and 6 of a 2,000-schedule
# run, apart from the tight and unclean ones) whose simulated leaders change ISRs through
# AlterPartition to the active controller (KIP-497; test_stateful.ISR_VIA), not by writing
# ZooKeeper; 0 runs none.
ALTER_PARTITION_EVERY = int(os.environ.get("STATEFUL_ALTER_PARTITION_EVERY", "4"))


def shard_seed(seed: int, shard: int) -> int:
    return int.from_bytes(hashlib.sha256(f"reassignd-stateful:{seed}:{shard}".encode()).digest()[:8], "big")


def tight_caps(shard: int) -> bool:
    """Every TIGHT_CAPS_EVERY-th shard runs at test_stateful.TIGHT_CAPS (move caps of 1-2 that
    bind), the others at the defaults (all of them while TIGHT_CAPS_EVERY is 0)."""
    return TIGHT_CAPS_EVERY > 0 and shard % TIGHT_CAPS_EVERY == TIGHT_CAPS_EVERY - 1


def unclean(shard: int) -> bool:
    """Every UNCLEAN_EVERY-th shard, from the second, allows unclean leader elections."""
    return UNCLEAN_EVERY > 0 and shard % UNCLEAN_EVERY == 1 % UNCLEAN_EVERY


def alter_partition(shard: int) -> bool:
    """Every ALTER_PARTITION_EVERY-th shard, from the third, has leaders that send AlterPartition."""
    return ALTER_PARTITION_EVERY > 0 and shard % ALTER_PARTITION_EVERY == 2 % ALTER_PARTITION_EVERY


def shard_counts(schedules: int) -> list[int]:
    full, rest = divmod(schedules, SHARD_SIZE)
    return [SHARD_SIZE] * full + ([rest] if rest else [])


@dataclass
class ShardResult:
    shard: int
    schedules: int
    steps: int
    coverage: dict
    digest: str
    seconds: float
    cpu_seconds: float
    failure: str | None = None
    isr_alters: int = 0  # partitions whose ISR a leader's AlterPartition had written (alter_partition shards)


@dataclass
class Result:
    seed: int
    schedules: int = 0
    isr_alters: int = 0
    steps: int = 0
    coverage: Coverage = field(default_factory=Coverage)
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the workers' (a shared machine's wall time says little)
    failure: str | None = None
    digests: dict[int, str] = field(default_factory=dict)  # shard -> digest of how its schedules ended
    # The random schedules' own coverage (``coverage`` adds the scripted ones'): how much the
    # seed reached by itself.
    random_coverage: Coverage = field(default_factory=Coverage)
    scripted: int = 0  # scripted schedules run

def run_shard(seed: int, shard: int, count: int) -> ShardResult:
    """Run one shard's ``count`` schedules in this process."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis import seed as forced_seed
    from hypothesis.stateful import run_state_machine_as_test

    from tests.controller import test_stateful

    logging.disable(logging.CRITICAL)  # the controllers' warnings are expected here, and cost
    stats = test_stateful.STATS
    stats.update(schedules=0, steps=0, coverage=Coverage(), digest=hashlib.sha256(), isr_alters=0)
    test_stateful.CAPS = test_stateful.TIGHT_CAPS if tight_caps(shard) else None
    test_stateful.UNCLEAN = unclean(shard)
    test_stateful.ISR_VIA = "alter_partition" if alter_partition(shard) else "zookeeper"

    @forced_seed(shard_seed(seed, shard))
    def machine():
        return test_stateful.ControllerMachine()

    # The failing schedule, if any, is kept here between generating and shrinking (never on disk).
    database = _database()
    config = settings(
        max_examples=count,
        stateful_step_count=STEPS + 1,
        deadline=None,
        database=database,
        derandomize=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    failure = found = None
    began, cpu = time.perf_counter(), time.process_time()
    try:
        # Exactly STEPS steps after the initial one: _min_steps keeps Hypothesis from ending
        # a schedule early (it does with probability 2**-16 per step).
        run_state_machine_as_test(machine, settings=config, _min_steps=STEPS)
    except BaseException as e:  # noqa: BLE001 (any failure of a schedule is reported, with its steps)
        if isinstance(e, KeyboardInterrupt):
            raise
        found = e
    if found is not None:
        # Hypothesis takes a failure found under the primary key for one it shrank already
        # and reports it as it is; under the secondary key it is replayed, then shrunk.
        database.demote()
        failure = shrink(machine, settings(config, phases=[Phase.reuse, Phase.shrink], verbosity=Verbosity.normal), found)
    return ShardResult(
        shard,
        stats["schedules"],
        stats["steps"],
        stats["coverage"].to_json(),
        stats["digest"].hexdigest(),
        time.perf_counter() - began,
        time.process_time() - cpu,
        failure,
        stats["isr_alters"],
    )


def _database():
    from hypothesis.database import InMemoryExampleDatabase

    class Database(InMemoryExampleDatabase):
        """An in-memory example database that can demote what it holds to the secondary corpus."""

        def __init__(self):
            super().__init__()
            self.saved_under: set[bytes] = set()

        def save(self, key: bytes, value: bytes) -> None:
            self.saved_under.add(key)
            super().save(key, value)

        def demote(self) -> None:
            for key in list(self.saved_under):
                for value in list(self.fetch(key)):
                    self.move(key, key + b".secondary", value)

    return Database()


def shrink(machine, config, found: BaseException) -> str:
    """Shrink the failure ``found`` (saved in ``config.database``) and return its report: the
    shrunk steps as Hypothesis prints them and the traceback."""
    from hypothesis.reporting import with_reporter
    from hypothesis.stateful import run_state_machine_as_test

    report: list[str] = []
    try:
        with with_reporter(report.append):
            run_state_machine_as_test(machine, settings=config)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        # Hypothesis reports the shrunk steps and attaches them to the error: both, without
        # the step-counting invariant's lines.
        text = "\n".join(report) + "\n" + "".join(traceback.format_exception(e))
        return "\n".join(line for line in text.splitlines() if line.strip() != "state.count_step()")
    return "the failure did not happen again when replayed (flaky):\n" + "".join(traceback.format_exception(found))


def _run_shard(args) -> ShardResult:
    return run_shard(*args)


def run_scripted() -> tuple[list[str], dict, int, float]:
    """tests/controller/crash_schedules.py in this process: failures, coverage, count, CPU seconds."""
    from tests.controller import crash_schedules, test_stateful

    test_stateful.CAPS = None  # the scripts' schedules assume the default caps (a worker may have run a tight shard)
    test_stateful.UNCLEAN = False  # and clean elections
    cpu = time.process_time()
    failures, coverage = crash_schedules.run_all()
    return failures, coverage.to_json(), crash_schedules.COUNT, time.process_time() - cpu


@contextlib.contextmanager
def worker_pool(workers: int):
    """The run's pool of spawned workers (never forked: the pytest process may hold a JVM and
    kazoo threads), each started with PYTHONHASHSEED = WORKER_HASH_SEED: they inherit the
    environment as it is when the pool starts them; this process's own is given back after."""
    before = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = WORKER_HASH_SEED
    try:
        pool = multiprocessing.get_context("spawn").Pool(workers)
    finally:
        if before is None:
            del os.environ["PYTHONHASHSEED"]
        else:
            os.environ["PYTHONHASHSEED"] = before
    with pool:
        yield pool


def run(seed: int, schedules: int, *, workers: int | None = None, shards: list[int] | None = None, progress=None,
        scripted: bool | None = None) -> Result:
    """Run ``schedules`` schedules from ``seed`` over ``workers`` processes (default: every
    core); ``shards`` limits the run to those shards. ``scripted`` (default: unless ``shards``)
    adds the scripted crash-point schedules. Stops at the first failing shard."""
    counts = shard_counts(schedules)
    todo = [(seed, j, counts[j]) for j in (shards if shards is not None else range(len(counts)))]
    scripted = shards is None if scripted is None else scripted
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) + scripted))
    result = Result(seed)
    began = time.perf_counter()
    with worker_pool(workers) as pool:
        # First in the queue: a worker takes it at once, and its few seconds overlap the shards.
        pending = pool.apply_async(run_scripted) if scripted else None
        for shard in pool.imap_unordered(_run_shard, todo):
            result.schedules += shard.schedules
            result.steps += shard.steps
            result.isr_alters += shard.isr_alters
            result.coverage.merge(Coverage.from_json(shard.coverage))
            result.random_coverage.merge(Coverage.from_json(shard.coverage))
            result.digests[shard.shard] = shard.digest
            result.cpu_seconds += shard.cpu_seconds
            if progress is not None:
                progress(shard, result)
            if shard.failure is not None:
                result.failure = (
                    f"stateful schedule failed: seed {seed}, shard {shard.shard} of {len(counts)}"
                    f" (its Hypothesis seed {shard_seed(seed, shard.shard)})\n"
                    f"replay: make soak SEED={seed} SCHEDULES={schedules}"
                    f"   (that shard alone: python -m tests.controller.soak --seed {seed}"
                    f" --schedules {schedules} --shard {shard.shard})\n\n{shard.failure}"
                )
                pool.terminate()
                break
        if pending is not None and result.failure is None:
            failures, coverage, result.scripted, cpu = pending.get()
            result.coverage.merge(Coverage.from_json(coverage))
            result.cpu_seconds += cpu
            if failures:
                result.failure = "\n\n".join(failures) + "\n\nreplay: python -m tests.controller.soak --schedules 0"
    result.seconds = time.perf_counter() - began
    return result


def problems(result: Result) -> list[str]:
    """What a whole run's coverage lacks (any schedule count): flushes of unknown shapes, flush
    kinds never written, crash points written but never cut."""
    coverage = result.coverage
    out = [f"flushes of shapes not in crashpoints.SHAPES: {coverage.unexpected()}"] if coverage.unexpected() else []
    if coverage.kinds_unwritten():
        out.append(f"flush kinds no schedule wrote: {coverage.kinds_unwritten()}")
    if coverage.missing():
        out.append(f"crash points never cut: {coverage.missing()}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.controller.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="default: STATEFUL_SEED, CI_SEED under CI, else random")
    parser.add_argument("--schedules", type=int, default=SCHEDULES)
    parser.add_argument("--workers", type=int, default=None, help="default: os.cpu_count()")
    parser.add_argument("--shard", type=int, action="append", help="run only this shard (repeatable)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else default_seed()
    print(f"stateful soak: seed {seed}, {args.schedules} schedules of {STEPS} steps"
          f" (replay: make soak SEED={seed} SCHEDULES={args.schedules})", flush=True)

    def progress(shard: ShardResult, total: Result) -> None:
        print(f"  shard {shard.shard}: {shard.schedules} schedules in {shard.seconds:.1f}s ({shard.cpu_seconds:.1f}s CPU)"
              f" ({total.schedules} so far)", flush=True)

    result = run(seed, args.schedules, workers=args.workers, shards=args.shard, progress=progress)
    out = io.StringIO()
    print("\n".join(result.coverage.table()), file=out)
    print(f"seed={seed}", file=out)
    print(f"seconds={result.seconds:.1f}", file=out)
    print(f"cpu_seconds={result.cpu_seconds:.1f}", file=out)
    print(f"digest={hashlib.sha256(repr(sorted(result.digests.items())).encode()).hexdigest()[:16]}", file=out)
    print(f"schedules={result.schedules}", file=out)
    print(f"steps={result.steps}", file=out)
    print(f"scripted_schedules={result.scripted}", file=out)
    print(f"alter_partition_isr_changes={result.isr_alters}", file=out)
    print(f"crash_points_covered_by_random={result.random_coverage.covered()}/{len(result.coverage.required())}", file=out)
    print(f"crash_points_covered={result.coverage.covered()}/{len(result.coverage.required())}", file=out)
    sys.stdout.write(out.getvalue())
    if result.failure is not None:
        print(result.failure, file=sys.stderr)
        return 1
    found = problems(result)
    if args.shard is not None:  # some shards alone vouch for no point; their flushes' shapes must still be known
        found = [line for line in found if line.startswith("flushes of shapes")]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
