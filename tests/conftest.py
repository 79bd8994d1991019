"""Suite-wide set-up: Hypothesis profiles and the shared session fixtures.

Profiles: "dev" (default) and "ci" (selected when CI is set), sized so that `make test`
stays well under 30 minutes on 2 cores. The stateful suite does not use them: its 10,000
schedules run in worker processes with their own settings and a seed fixed under CI
(tests/controller/soak.py; STATEFUL_SCHEDULES and STATEFUL_SEED override count and seed).
Fixtures that start real servers live in tests/fixtures/ (one ZooKeeper per test session,
one Spark session per test session).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# Session fixtures, each owned by the area that provides the server behind it.
pytest_plugins = [
    "tests.fixtures.zk",
    "tests.fixtures.spark",
]


# `make test` runs the suite on two pytest-xdist workers, a file at a time (--dist loadfile), in
# collection order. These files take the longest (seconds on a 2-core machine, measured with
# --durations): started first, so that no long file is left running alone at the end while the
# other worker idles. Order within each file is kept.
SLOW_FIRST = (
    "tests/controller/test_stateful.py",  # 2,000 schedules on 2 worker processes, ~160 s
    "tests/chaos/test_chaos.py",  # 90 s of chaos plus set-up
    "tests/planner/test_dashboard_browser.py",  # Chromium and a Spark service, ~40 s
    "tests/planner/test_dashboard_forms_browser.py",  # the same, ~20 s
    "tests/e2e/test_demo.py",  # the demo, whole, ~35 s
    "tests/planner/test_lost_executor.py",  # ~35 s
    "tests/e2e/test_cli_e2e.py",
    "tests/chaos/test_break_fence.py",
    "tests/planner/test_execution_controls.py",
    "tests/docker/test_compose.py",
    "tests/planner/test_service_rest.py",
    "tests/controller/test_journal.py",
)


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):
        return  # one process (a file or two run by hand, tests.mutants): the order as written
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    root = str(config.rootpath) + os.sep
    items.sort(key=lambda item: rank.get(str(item.path).removeprefix(root), len(rank)))


def pytest_sessionfinish(session):
    """Under pytest-xdist, a worker hands what its tests recorded to the controller process
    (tests/figures.py), which prints every worker's figures together."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from tests import figures

        workeroutput["figures"] = figures.dump()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    from tests import figures

    dumped = getattr(node, "workeroutput", {}).get("figures")
    if dumped:
        figures.merge(dumped)


def pytest_terminal_summary(terminalreporter):
    """Print the tables and figures the suites recorded (tests/figures.py), the figures as the
    run's last lines."""
    from tests import figures

    lines = figures.lines()
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
