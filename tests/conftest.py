"""Suite-wide set-up: Hypothesis profiles and the shared session fixtures.

Profiles: "dev" (default) and "ci" (selected when CI is set), sized so that `make test`
stays well under 30 minutes on 2 cores. The stateful suite does not use them: its 10,000
schedules run in worker processes with their own settings and a seed fixed under CI
(tests/controller/soak.py; STATEFUL_SCHEDULES and STATEFUL_SEED override count and seed).
Fixtures that start real servers live in tests/fixtures/ (one ZooKeeper per test session,
one Spark session per test session).
"""

import os

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


def pytest_terminal_summary(terminalreporter):
    """Print the tables and figures the suites recorded (tests/figures.py), the figures as the
    run's last lines."""
    from tests import figures

    lines = figures.lines()
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
