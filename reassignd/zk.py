"""``reassignd zk``: run Debian's ZooKeeper locally (:mod:`znodes.launcher`), one server or a
three-server quorum on loopback.

    reassignd zk start [--port 2181] [--data-dir ./var/zk] [--ensemble 3] [--foreground]
    reassignd zk status [--data-dir ./var/zk]
    reassignd zk stop [--data-dir ./var/zk]
    reassignd zk secure-acls --zookeeper HOST:PORT --zk-config FILE [--unsecure]

Exit codes: 0 success, 1 failure (port busy, ZooKeeper missing, start timed out, not
running), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from reassignd.args import USAGE_EXIT, Parser, UsageError
from znodes import launcher


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="reassignd zk", description="Run a local ZooKeeper server or three-server ensemble.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    start = sub.add_parser("start", help="start ZooKeeper and wait until it serves")
    start.add_argument("--port", type=int, default=2181, help="client port of the first server (0: any free port)")
    start.add_argument("--data-dir", default=launcher.DEFAULT_DATA_DIR)
    start.add_argument("--ensemble", type=int, choices=(1, 3), default=1, help="1 server or a 3-server quorum")
    start.add_argument("--host", default="127.0.0.1", help="address to bind (loopback by default)")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the server to serve")
    start.add_argument("--foreground", action="store_true", help="stay attached; stop on SIGINT/SIGTERM")
    start.add_argument("--require-auth", action="store_true",
                       help="sessions must authenticate (digest) before doing anything (ZooKeeper's enforce.auth)")
    acls = sub.add_parser("secure-acls", help="create the paths the service trusts and set Kafka's secure ACLs on "
                                              "every znode (zookeeper-security-migration)")
    acls.add_argument("--zookeeper", required=True, help="connect string HOST:PORT[/chroot]")
    acls.add_argument("--zk-config", required=True, metavar="FILE",
                      help="properties with zookeeper.auth.digest (the identity the ACLs grant) and TLS keys")
    acls.add_argument("--unsecure", action="store_true", help="set world-writable ACLs back (--zookeeper.acl unsecure)")
    for name, text in (("stop", "stop the ZooKeeper started from DATA_DIR"), ("status", "report whether it runs")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--data-dir", default=launcher.DEFAULT_DATA_DIR)
    return p


def main(argv: list[str] | None = None) -> int:
    """``reassignd zk start|stop|status|secure-acls``; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE_EXIT
    except SystemExit as e:  # --help
        return int(e.code or 0)
    try:
        if args.command == "start":
            return _start(args)
        if args.command == "secure-acls":
            return _secure_acls(args)
        if args.command == "stop":
            zk = launcher.LocalZooKeeper(data_dir=args.data_dir)
            if zk.stop():
                print(f"stopped ZooKeeper in {zk.data_dir}")
            else:
                print(f"no ZooKeeper was running from {zk.data_dir}")
            return 0
        status = launcher.LocalZooKeeper(data_dir=args.data_dir).status()
        if not status["servers"]:
            print(f"not running (no state in {status['data_dir']})")
            return 1
        for s in status["servers"]:
            mode = s["mode"] or ("not serving" if s["alive"] else "dead")
            print(f"server {s['id']}: port {s['client_port']} pid {s['pid']} {mode}")
        print(("running: " if status["running"] else "not running: ") + status["connect_string"])
        return 0 if status["running"] else 1
    except launcher.LauncherError as e:
        print(f"reassignd zk: {e}", file=sys.stderr)
        return 1


def _secure_acls(args) -> int:
    from znodes.secure_paths import migrate
    from znodes.security import ZkSecurity

    try:
        count = migrate(args.zookeeper, ZkSecurity.from_file(args.zk_config), secure=not args.unsecure)
    except (ValueError, OSError) as e:
        print(f"reassignd zk secure-acls: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # kazoo's: no auth, connection lost, timeout
        print(f"reassignd zk secure-acls: ZooKeeper: {e!r}", file=sys.stderr)
        return 1
    print(f"{'secure' if not args.unsecure else 'open'} ACLs set on {count} znodes")
    return 0


def _start(args) -> int:
    if not 0 <= args.port <= 65535:
        print(f"reassignd zk: --port {args.port} is out of range", file=sys.stderr)
        return 2
    stop: list[int] = []
    if args.foreground:
        # Before starting, so a signal that arrives while the server comes up still stops it.
        handler = lambda signum, frame: stop.append(signum)  # noqa: E731
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
    zk = launcher.LocalZooKeeper(port=args.port, data_dir=args.data_dir, ensemble=args.ensemble, host=args.host,
                                 require_auth=args.require_auth)
    zk.start(timeout=args.timeout)
    print(f"ZooKeeper serving on {zk.connect_string} (data and log in {zk.data_dir})", flush=True)
    if not args.foreground:
        return 0
    try:
        while not stop and any(launcher.pid_alive(m.pid) for m in zk.members):
            time.sleep(0.2)
    finally:
        zk.stop()
    return 0 if stop else 1
