"""The argparse parser every reassignd command uses: a usage error is raised, not exited on.

argparse's own ``error()`` prints and calls ``sys.exit(2)``; a command's ``main(argv)`` is also
called in-process (by ``reassignd``, by tests), so it catches :class:`UsageError` instead,
prints it and returns :data:`USAGE_EXIT`. The message is argparse's: the usage text, then
``PROG: error: MESSAGE``. ``--help`` still exits through SystemExit(0), as argparse does.
"""

from __future__ import annotations

import argparse

USAGE_EXIT = 2  # argparse's and Kafka's tools' exit code for bad arguments


class UsageError(Exception):
    """Bad command-line input; ``str()`` is the whole text for stderr."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{self.format_usage()}{self.prog}: error: {message}")
