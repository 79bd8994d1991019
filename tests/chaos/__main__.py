"""``python -m tests.chaos [--duration S] [--seed N] [--workdir DIR] [--keep] [--break-fence]
[--isr-via zookeeper|alter-partition]``:
one chaos run of any length (``make chaos DURATION=600 SEED=7`` calls this), its figures
printed last.

Prints every violation found, and on failure the seed and the history file (the work directory
is kept on failure, or always with ``--keep``). Exit status 0 when every check held, 1 if not.

``--break-fence`` is the zombie check's self-test on real processes: the controllers write
without the ``/controller_epoch`` check (tests/chaos/nofence) and the nemesis only forces
controller moves; exit status 0 when the checker caught zombie writes, 1 when it did not.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from tests.chaos.run import figure_lines, run_chaos


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.chaos", description="Run the chaos suite once.")
    p.add_argument("--duration", type=float, default=300.0, help="seconds of faults (default 300)")
    p.add_argument("--seed", type=int, default=1, help="the run's one random seed (default 1)")
    p.add_argument("--workdir", type=Path, help="where logs, audits and the history go (default: a new tmp dir)")
    p.add_argument("--keep", action="store_true", help="keep the work directory even when every check held")
    p.add_argument("--break-fence", action="store_true",
                   help="self-test: controllers without the epoch fence; succeeds when zombie writes are caught")
    p.add_argument("--isr-via", choices=("zookeeper", "alter-partition"), default="zookeeper",
                   help="how the simulated leaders change ISRs: writing ZooKeeper themselves (pre-2.7 brokers, "
                        "the default) or through AlterPartition to the active controller (KIP-497)")
    args = p.parse_args(argv)
    # kazoo warns of every connection a fault drops; the history records the faults.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"chaos-{args.seed}-"))
    print(f"chaos: seed={args.seed} duration={args.duration:.0f}s isr_via={args.isr_via} workdir={workdir}", flush=True)
    result = run_chaos(args.duration, args.seed, workdir, break_fence=args.break_fence, isr_via=args.isr_via)
    report = result.report
    ok = report.zombie_writes > 0 if args.break_fence else report.ok
    print(f"doors: {result.doors}")
    print(f"faults: {result.faults}")
    for v in report.violations:
        print(f"VIOLATION: {v}")
    if ok and not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"seed={result.seed} history={result.history_path} (work directory kept: {workdir})")
    print("# chaos")
    for line in figure_lines(result):
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
