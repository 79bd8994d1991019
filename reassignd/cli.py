"""`reassignd SUBCOMMAND ...`: each subcommand is a module of this package with its parser and
``main(argv: list[str]) -> int``, imported here by name.

    reassignd zk start --port 2181 --data-dir /tmp/zk
    reassignd controller --zookeeper 127.0.0.1:2181 --id 1 --listen 127.0.0.1:9190
    reassignd sim --zookeeper 127.0.0.1:2181 --brokers 6 --topics orders:12:3
    reassignd snapshot --zookeeper 127.0.0.1:2181 --out cluster.json
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300

A command module imports what its parser needs; the controller's and the planner's libraries
load when their command runs (so `reassignd zk` does not pay for them, and the controller
image, which has no NumPy or Spark, still lists every command).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from reassignd import controller, planner, sim, snapshot, users, zk

# name -> (main, one line for the usage text), in the order the usage lists them
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "zk": (zk.main, "run a local ZooKeeper server or ensemble (start, stop, status)"),
    "controller": (controller.main, "run a reassignment controller instance"),
    "sim": (sim.main, "run simulated brokers"),
    "snapshot": (snapshot.main, "write a cluster snapshot for the planner"),
    "users": (users.main, "SCRAM users in ZooKeeper (add, remove, list)"),
    "planner": (planner.main, "serve KIP-6 proposals over REST (`planner serve`)"),
}

USAGE = "usage: reassignd {%s} [options]  (or: reassignd --version)\n\n%s" % (
    ",".join(SUBCOMMANDS),
    "\n".join(f"  {name:<11} {text}" for name, (_, text) in SUBCOMMANDS.items()),
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--version":
        from client.cli import installed_version

        print(f"reassignd {installed_version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"reassignd: unknown subcommand {name!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    command, _ = SUBCOMMANDS[name]
    return int(command(rest) or 0)
