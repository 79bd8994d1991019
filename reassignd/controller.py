"""``reassignd controller``: run a reassignment controller instance (:mod:`controller.shell.daemon`).

Its parser stays beside the daemon, in :mod:`controller.shell.options`: the daemon re-reads its
settings on SIGHUP through the same flags, environment and file (``load_settings``), so the
command line and the reload are one piece of the controller. The daemon is imported when the
command runs: `reassignd` imports every command to list them, and the others do not need it.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from controller.shell import daemon

    return daemon.main(argv)
