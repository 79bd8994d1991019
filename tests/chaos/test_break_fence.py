"""The zombie check's self-test on real processes, in every ``make test``: the chaos cluster
with controllers that write WITHOUT the ``/controller_epoch`` check (tests/chaos/nofence) and a
nemesis that only forces controller moves. Each move makes its own zombie write rather than
hoping for one (nemesis ``_controller_moved_with_write``): the old controller hears ZooKeeper
0.7 s late, ``/controller`` is deleted, and once the new controller has bumped the epoch the old
one - not yet aware - is sent an AlterInterbrokerThrottledRates, which it writes with its old epoch.
The checker must find those writes; a checker that stopped seeing zombie writes (a broken epoch
timeline, audits read wrongly) would pass every real chaos run and fails here.

(It once left the zombie to chance - a deposed controller's in-flight writes on a slowed link -
and on a loaded machine three moves in a row found the old controller with nothing to write.
Then an AlterPartitionReassignments was the zombie, until admin requests became engine events:
its entries are written against the /admin/reassign_partitions version the deposed controller
holds, which the new controller's writes make stale. The run's workload sets no throttles of its
own, so nothing else writes what the throttle request writes.)

``make break-fence`` runs the same outside pytest (``python -m tests.chaos --break-fence``).
``BREAK_FENCE_DURATION`` and ``BREAK_FENCE_SEED`` change the schedule.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.chaos.run import QUIESCE_BOUND_S, run_chaos

# Two or three forced controller moves, each with a zombie write of its own (one or two
# zombie writes each in the runs measured, idle or with both cores busy); the run goes on past
# the duration until the second move was made (run.BREAK_FENCE_MIN_FAULTS).
DURATION_S = float(os.environ.get("BREAK_FENCE_DURATION", "30"))
SEED = int(os.environ.get("BREAK_FENCE_SEED", "20261125"))
TIMEOUT_S = int(DURATION_S + QUIESCE_BOUND_S + 300)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TIMEOUT_S)]


def test_the_checker_catches_writes_without_the_fence():
    workdir = Path(tempfile.mkdtemp(prefix=f"break-fence-{SEED}-"))
    result = run_chaos(DURATION_S, SEED, workdir, break_fence=True)
    report = result.report
    print(f"break-fence: faults {result.faults}, zombie_writes={report.zombie_writes}, "
          f"writes_audited={report.writes_audited}")
    assert set(result.faults) == {"controller_moved"} and report.faults_injected >= 2, result.faults
    assert report.writes_audited > 0, "no write was audited"
    assert report.zombie_writes > 0, (
        f"break-fence seed={SEED}: controllers wrote without the epoch fence through "
        f"{report.faults_injected} controller moves and the checker found no zombie write "
        f"(work directory kept: {workdir}):\n" + "\n".join(report.violations[:20])
    )
    shutil.rmtree(workdir, ignore_errors=True)
