"""`reassignd SUBCOMMAND ...`: dispatch to the module that owns each subcommand.

Each owner exposes ``main(argv: list[str]) -> int``; imports are lazy so that `reassignd zk`
does not pay for Spark and `reassignd controller` does not pay for the planner.

    reassignd zk start --port 2181 --data-dir /tmp/zk
    reassignd controller --zookeeper 127.0.0.1:2181 --id 1 --listen 127.0.0.1:9190
    reassignd sim --zookeeper 127.0.0.1:2181 --brokers 6 --topics orders:12:3
    reassignd snapshot --zookeeper 127.0.0.1:2181 --out cluster.json
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300
"""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "zk": ("znodes.launcher", "run a local ZooKeeper server or ensemble (start, stop, status)"),
    "controller": ("controller.shell.daemon", "run a reassignment controller instance"),
    "sim": ("sim.main", "run simulated brokers"),
    "snapshot": ("spark_jobs.snapshot", "write a cluster snapshot for the planner"),
    "users": ("controller.shell.security.users", "SCRAM users in ZooKeeper (add, remove, list)"),
    "planner": ("planner_service.cli", "serve KIP-6 proposals over REST (`planner serve`)"),
}

USAGE = "usage: reassignd {%s} [options]\n\n%s" % (
    ",".join(SUBCOMMANDS),
    "\n".join(f"  {name:<11} {text}" for name, (_, text) in SUBCOMMANDS.items()),
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"reassignd: unknown subcommand {name!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(rest) or 0)
