"""``reassignd snapshot``: write a cluster snapshot for the planner (:mod:`spark_jobs.snapshot`).

    reassignd snapshot --zookeeper 127.0.0.1:2181/kafka --out cluster.json
    reassignd snapshot --zookeeper 127.0.0.1:2181 --out cluster.msgpack --no-sizes
    reassignd snapshot --zookeeper 127.0.0.1:2181/kafka --zk-config zk.properties --out cluster.json

Exit codes: 0 written, 1 ZooKeeper or a broker could not be read (or the file written), 2 bad
arguments (an --out that cannot be written among them: found before ZooKeeper is read).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import math
import os
import sys

from reassignd.args import USAGE_EXIT, Parser, UsageError
from spark_jobs.errors import SnapshotError
from spark_jobs.snapshot import dump, format_for, read_cluster

PROG = "reassignd snapshot"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Write a cluster snapshot for the planner.")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--zk-config", metavar="FILE",
                   help="ZooKeeper security properties (zookeeper.auth.digest or zookeeper.sasl.jaas.config, "
                        "zookeeper.ssl.*), as the controller's, `reassignd users`' and `reassignd sim`'")
    p.add_argument("--out", required=True, metavar="FILE", help=".json, .msgpack or .mpk")
    p.add_argument("--no-sizes", action="store_true", help="do not ask brokers for replica sizes")
    p.add_argument("--timeout", type=_seconds, default=10.0, metavar="S",
                   help="seconds for ZooKeeper and brokers (default 10)")
    return p


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (nan, inf and 0 would never or at once time out)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    from znodes.api import ZkError
    from znodes.security import ZkSecurity

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        format_for(args.out)
        unwritable = _unwritable(args.out)
        if unwritable:
            raise UsageError(f"{PROG}: error: --out {args.out}: {unwritable}")
        try:
            security = ZkSecurity.from_file(args.zk_config)
        except (ValueError, OSError) as e:
            parser.error(f"--zk-config: {e}")
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE_EXIT
    except SnapshotError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return USAGE_EXIT
    try:
        snap = asyncio.run(read_cluster(args.zookeeper, sizes=not args.no_sizes, timeout=args.timeout,
                                        security=security))
    except SnapshotError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, ZkError) as e:
        print(f"{PROG}: cannot read {args.zookeeper}: {e}", file=sys.stderr)
        return 1
    try:
        dump(snap, args.out)
    except SnapshotError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # the file it would replace is left as it was
        print(f"{PROG}: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    for w in snap["cluster"]["warnings"]:
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    n_parts = sum(len(t["partitions"]) for t in snap["topics"])
    print(f"wrote {args.out}: {len(snap['brokers'])} brokers, {len(snap['topics'])} topics, {n_parts} partitions")
    return 0


def _unwritable(out: str) -> str | None:
    """Why ``out`` cannot be written, as the OS says it, or None: checked before the cluster is
    read, which can take minutes. dump() writes a temporary beside it and renames it over
    ``out``, so creating a file there is what is tried."""
    if os.path.isdir(out):
        return os.strerror(errno.EISDIR)
    probe = f"{out}.probe{os.getpid()}"
    try:
        with open(probe, "xb"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    os.unlink(probe)
    return None
