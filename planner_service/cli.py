"""`reassignd planner serve`: the planner service's command line (:mod:`planner_service.service`).

Usage::

    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 --master local[2]
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 \\
        --self-healing broker-failure,goal-violation --broker-failure-grace 300 --throttle 10485760
    reassignd planner serve --zookeeper 127.0.0.1:2181 --zk-config zk.properties --listen 127.0.0.1:9300
    reassignd planner serve --zookeeper 127.0.0.1:2181 --command-config client.properties --listen 127.0.0.1:9300

    curl 127.0.0.1:9300/state                       # model freshness, last proposal, execution
    curl 127.0.0.1:9300/load                        # per broker: replicas, leaders, bytes, rack
    curl 127.0.0.1:9300/proposals                   # the cached rebalance proposal
    curl -X POST '127.0.0.1:9300/remove_broker?brokerid=3&dryrun=false'

``--zk-config FILE`` gives the ZooKeeper identity and security, the keys the controller's
``--security-config``, ``reassignd users`` and ``reassignd sim`` read (``znodes.security``):
``zookeeper.auth.digest`` or ``zookeeper.sasl.jaas.config``, ``zookeeper.ssl.*``. Without it the
session is unauthenticated: a ZooKeeper requiring authentication closes it, and ``/state`` shows
the model not ready with the refusal as ``model.last_error``.

``--command-config FILE`` gives the executing AdminClient's listener security, Kafka's client
properties read by the loader ``kafka-reassign --command-config`` uses
(:class:`client.security.ClientSecurity`): ``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config`` or ``sasl.username``/``sasl.password``, ``ssl.truststore.location``/
``ssl.ca.location``, client certificate and key. A bad file (or TLS file it names) exits 2 before
anything starts. Its ``zookeeper.*`` keys are not read (``--zk-config`` is ZooKeeper's). Without
it the AdminClient speaks PLAINTEXT: an execution against a secured listener fails at once (the
POST has answered with it running), and its ``error`` in ``/state``'s ``execution`` and
``executions`` names the protocol spoken and ``--command-config``. The sizes poll (DescribeLogDirs)
uses the same settings at each broker's registered endpoint of that ``security.protocol``, and
PLAINTEXT at a broker that registered none (:mod:`planner_service.sizes`).

On start the service prints one JSON line, ``{"event": "ready", "listen": "HOST:PORT"}``.

Exit codes: 0 stopped by SIGTERM/SIGINT, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys

from planner_service.service import DEFAULT_SPARK_MIN_PARTITIONS, HEALING_KINDS, Options, PlannerService
from planner_service.zk_feed import DEFAULT_STATE_WATCH_LIMIT
from spark_jobs import batching

log = logging.getLogger("reassignd.planner")

PROG = "reassignd planner serve"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.format_usage()}{PROG}: error: {message}")


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _healing(text: str) -> tuple:
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    bad = [k for k in kinds if k not in HEALING_KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(HEALING_KINDS)}, got {text!r}")
    return kinds


def _pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def _pos_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Serve KIP-6 proposals from a live cluster model (REST, JSON).")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--zk-config", metavar="FILE",
                   help="ZooKeeper security properties (zookeeper.auth.digest or zookeeper.sasl.jaas.config, "
                        "zookeeper.ssl.*), as the controller's, `reassignd users`' and `reassignd sim`'")
    p.add_argument("--listen", required=True, type=_listen, metavar="HOST:PORT", help="port 0 picks a free one")
    p.add_argument("--master", metavar="URL", help="Spark master for the session (default: local[*])",
                   default="local[*]")
    p.add_argument("--spark-min-partitions", type=int, default=DEFAULT_SPARK_MIN_PARTITIONS, metavar="N",
                   help=f"plan smaller clusters in-process (default {DEFAULT_SPARK_MIN_PARTITIONS})")
    p.add_argument("--self-healing", type=_healing, default=(), metavar="KINDS",
                   help="opt in to broker-failure and/or goal-violation")
    p.add_argument("--broker-failure-grace", type=_pos_float, default=300.0, metavar="S",
                   help="seconds a broker holding replicas may be gone before it is drained (default 300)")
    p.add_argument("--healing-min-interval", type=_pos_float, default=600.0, metavar="S",
                   help="at most one self-healing action per this many seconds (default 600)")
    p.add_argument("--sizes-interval", type=_pos_float, default=30.0, metavar="S",
                   help="seconds between DescribeLogDirs polls (default 30)")
    p.add_argument("--no-sizes", action="store_true", help="do not poll replica sizes")
    p.add_argument("--state-watch-limit", type=int, default=DEFAULT_STATE_WATCH_LIMIT, metavar="N",
                   help="above N partitions, read partition states in bulk at each poll instead of "
                        f"watching each (default {DEFAULT_STATE_WATCH_LIMIT})")
    p.add_argument("--throttle", type=_pos_int, metavar="BYTES_PER_S", help="throttle for executed plans")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="controller admin listener "
                   "(default: the instances registered under /reassignd/controllers)")
    p.add_argument("--command-config", metavar="FILE",
                   help="Kafka client properties for executing plans on a secured admin listener, and for "
                        "polling sizes at the brokers' endpoints of its security.protocol "
                        "(security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username/sasl.password, "
                        "ssl.truststore.location or ssl.ca.location, ssl.keystore.location, ssl.key.location), "
                        "as kafka-reassign --command-config")
    p.add_argument("--max-in", type=_pos_int, default=batching.DEFAULT_MAX_IN, metavar="N")
    p.add_argument("--max-out", type=_pos_int, default=batching.DEFAULT_MAX_OUT, metavar="N")
    p.add_argument("--session-timeout", type=_pos_float, default=10.0, metavar="S")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


async def _serve(opts: Options) -> int:
    service = PlannerService(opts)
    await service.start()
    print(json.dumps({"event": "ready", "listen": service.address}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await service.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "serve":
        print("usage: reassignd planner serve --zookeeper HOST:PORT --listen HOST:PORT [options]", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    from client.errors import InputError
    from client.security import ClientSecurity
    from znodes.security import ZkSecurity

    try:
        p = parser()
        args = p.parse_args(argv[1:])
        try:
            zk_security = ZkSecurity.from_file(args.zk_config)
        except (ValueError, OSError) as e:
            p.error(f"--zk-config: {e}")
        security = None
        if args.command_config is not None:
            try:
                security = ClientSecurity.from_file(args.command_config)
                security.ssl_context()  # the TLS files are read now: a bad one is a usage error too
            except InputError as e:
                p.error(str(e))
    except _UsageError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if security is not None and security.zookeeper:
        log.warning("--command-config: %s not read (the service's ZooKeeper security is --zk-config's)",
                    ", ".join(sorted(security.zookeeper)))
    opts = Options(
        zookeeper=args.zookeeper, host=args.listen[0], port=args.listen[1], master=args.master,
        spark_min_partitions=args.spark_min_partitions, sizes=not args.no_sizes, sizes_interval_s=args.sizes_interval,
        self_healing=args.self_healing, broker_failure_grace_s=args.broker_failure_grace,
        healing_min_interval_s=args.healing_min_interval, throttle=args.throttle, bootstrap=args.bootstrap_server,
        max_in=args.max_in, max_out=args.max_out, session_timeout_s=args.session_timeout,
        state_watch_limit=args.state_watch_limit, zk_security=zk_security, security=security,
    )
    return asyncio.run(_serve(opts))


if __name__ == "__main__":
    sys.exit(main())
