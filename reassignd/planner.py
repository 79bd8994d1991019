"""`reassignd planner serve`: the planner service's command line (:mod:`planner_service.service`).

The service's modules are imported when a subcommand runs, not when `reassignd` lists its
commands: they load NumPy, which the controller image (the same `reassignd`) does not have.

Usage::

    reassignd planner hash-password --user alice --role ADMIN >> users.txt    # password on stdin
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 --master local[2] \
        --api-tls-cert server.pem --api-credentials users.txt
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 --insecure-no-auth
    reassignd planner serve --zookeeper 127.0.0.1:2181 --listen 127.0.0.1:9300 \\
        --self-healing broker-failure,goal-violation --broker-failure-grace 300 --throttle 10485760
    reassignd planner serve --zookeeper 127.0.0.1:2181 --zk-config zk.properties --listen 127.0.0.1:9300
    reassignd planner serve --zookeeper 127.0.0.1:2181 --command-config client.properties --listen 127.0.0.1:9300

    curl --cacert ca.pem -u bob https://127.0.0.1:9300/state    # model freshness, last proposal, execution
    curl --cacert ca.pem -u bob https://127.0.0.1:9300/load     # per broker: replicas, leaders, bytes, rack
    curl --cacert ca.pem -u bob https://127.0.0.1:9300/proposals    # the cached rebalance proposal
    curl --cacert ca.pem -u alice -X POST 'https://127.0.0.1:9300/remove_broker?brokerid=3&dryrun=false'

The REST API's security (:mod:`planner_service.api_auth` has the roles and the files):
``--api-tls-cert FILE`` (PEM: the certificate chain, and the key unless ``--api-tls-key FILE``
gives it) serves HTTPS; ``--api-credentials FILE`` (``USER:ROLE:HASH`` lines, made by
``reassignd planner hash-password``) takes HTTP Basic; ``--api-tls-client-ca FILE`` with
``--api-cert-roles FILE`` (``CN:ROLE`` lines) takes client certificates. Authentication needs
TLS (Basic would send the password in clear). Without any authentication the service refuses
to start unless ``--insecure-no-auth`` says so, and then warns: anyone who reaches the port may
execute plans with the service's own admin credentials. Every request that needs ADMIN (each
execution) logs one line to ``reassignd.planner.audit`` with its principal.

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

Exit codes: 0 stopped by SIGTERM/SIGINT, 2 bad arguments (a bad credentials, roles or TLS file
among them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys

from reassignd.args import USAGE_EXIT, Parser, UsageError

log = logging.getLogger("reassignd.planner")

PROG = "reassignd planner serve"


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _healing(text: str) -> tuple:
    from planner_service.service import HEALING_KINDS

    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    bad = [k for k in kinds if k not in HEALING_KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(HEALING_KINDS)}, got {text!r}")
    return kinds


def _threshold(text: str) -> float:
    from spark_jobs import capacity

    try:
        return capacity.check_threshold(float(text))
    except (ValueError, capacity.CapacityError):
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}") from None


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


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected an http:// URL, got {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    from planner_service.api_auth import ROLES
    from planner_service.service import (DEFAULT_DEMOTION_RETENTION_S, DEFAULT_EXECUTION_DEADLINE_S,
                                          DEFAULT_SPARK_MIN_PARTITIONS)
    from planner_service.zk_feed import DEFAULT_STATE_WATCH_LIMIT
    from spark_jobs import batching, capacity

    p = Parser(prog=PROG, description="Serve KIP-6 proposals from a live cluster model (REST, JSON).")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--zk-config", metavar="FILE",
                   help="ZooKeeper security properties (zookeeper.auth.digest or zookeeper.sasl.jaas.config, "
                        "zookeeper.ssl.*), as the controller's, `reassignd users`' and `reassignd sim`'")
    p.add_argument("--listen", required=True, type=_listen, metavar="HOST:PORT", help="port 0 picks a free one")
    spark = p.add_mutually_exclusive_group()
    spark.add_argument("--master", metavar="URL", help="Spark master for the session (default: local[*])",
                       default="local[*]")
    spark.add_argument("--no-spark", dest="master", action="store_const", const=None,
                       help="no Spark session (no JVM): every proposal is planned in-process")
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
    api = p.add_argument_group("REST API security (one of the ways to authenticate, or --insecure-no-auth)")
    api.add_argument("--api-tls-cert", metavar="FILE", help="serve HTTPS: PEM certificate chain (and key)")
    api.add_argument("--api-tls-key", metavar="FILE", help="PEM private key, if not in --api-tls-cert")
    api.add_argument("--api-credentials", metavar="FILE",
                     help="HTTP Basic users: USER:ROLE:HASH lines (reassignd planner hash-password); needs TLS")
    api.add_argument("--api-tls-client-ca", metavar="FILE", help="CA (PEM) client certificates are verified against")
    api.add_argument("--api-cert-roles", metavar="FILE",
                     help="client certificates: CN:ROLE lines (roles " + ", ".join(ROLES) + "); needs "
                          "--api-tls-client-ca")
    api.add_argument("--insecure-no-auth", action="store_true",
                     help="serve the API with no authentication: anyone who reaches it may execute plans")
    p.add_argument("--execution-deadline", type=_pos_float, default=DEFAULT_EXECUTION_DEADLINE_S, metavar="S",
                   help="an execution still running this long after it started ends, listing what still moves "
                        f"(default {DEFAULT_EXECUTION_DEADLINE_S:g}; a request's deadline_s overrides it)")
    p.add_argument("--demotion-history-retention", type=_pos_float, default=DEFAULT_DEMOTION_RETENTION_S,
                   metavar="S", help="seconds an executed demotion's brokers are remembered for "
                                     "exclude_recently_demoted_brokers (default 14 days, Cruise Control's)")
    p.add_argument("--controller-ops", type=_http_url, metavar="URL",
                   help="the active controller's operations port (its --ops-listen, e.g. http://127.0.0.1:9191): "
                        "a request's concurrent_partition_movements_per_broker is clamped to its per-broker caps")
    p.add_argument("--capacity", metavar="CAPACITY.json",
                   help="disk capacities, Cruise Control's capacity file (DISK in MiB, brokerId -1 the default); "
                        "brokers reporting DescribeLogDirs total_bytes count without it")
    p.add_argument("--disk-threshold", type=_threshold, default=capacity.DEFAULT_THRESHOLD, metavar="F",
                   help=f"no plan fills a broker's disk past this share (default {capacity.DEFAULT_THRESHOLD})")
    p.add_argument("--max-in", type=_pos_int, default=batching.DEFAULT_MAX_IN, metavar="N")
    p.add_argument("--max-out", type=_pos_int, default=batching.DEFAULT_MAX_OUT, metavar="N")
    p.add_argument("--session-timeout", type=_pos_float, default=10.0, metavar="S")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


async def _serve(opts) -> int:
    from planner_service.service import PlannerService

    service = PlannerService(opts)
    await service.start()
    print(json.dumps({"event": "ready", "listen": service.address, "scheme": service.server.scheme}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await service.stop()
    return 0


def api_security(args, p):
    """The REST API's TLS and authentication (an ApiSecurity) from the options, None to serve it
    open; a usage error for a combination that would not protect it or a file that cannot be read."""
    from planner_service.api_auth import ApiAuth, AuthConfigError
    from planner_service.http_server import ApiSecurity

    authenticates = bool(args.api_credentials or args.api_cert_roles)
    if args.insecure_no_auth and authenticates:
        p.error("--insecure-no-auth with --api-credentials/--api-cert-roles: choose one")
    if not authenticates and not args.insecure_no_auth:
        p.error("the REST API needs authentication: --api-credentials FILE and/or --api-cert-roles FILE "
                "(with --api-tls-cert), or --insecure-no-auth to serve it open")
    if args.api_tls_cert is None and (authenticates or args.api_tls_key or args.api_tls_client_ca):
        p.error("--api-credentials, --api-cert-roles, --api-tls-key and --api-tls-client-ca need --api-tls-cert "
                "(Basic credentials over plain HTTP are readable by anyone on the path)")
    if bool(args.api_cert_roles) != bool(args.api_tls_client_ca):
        p.error("--api-cert-roles and --api-tls-client-ca go together")
    if args.api_tls_cert is None:
        return None
    try:
        ctx = ApiSecurity.tls(args.api_tls_cert, args.api_tls_key, args.api_tls_client_ca)
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
        p.error(f"--api-tls-cert/--api-tls-key/--api-tls-client-ca: {e}")
    try:
        auth = ApiAuth.from_files(args.api_credentials, args.api_cert_roles) if authenticates else None
    except AuthConfigError as e:
        p.error(str(e))
    return ApiSecurity(auth, ctx)


def hash_password_main(argv: list[str]) -> int:
    """``reassignd planner hash-password --user U --role R``: one credentials-file line on stdout,
    the password from REASSIGND_PLANNER_PASSWORD or stdin's first line."""
    from planner_service.api_auth import ROLES, AuthConfigError, credential_line, password_from

    p = argparse.ArgumentParser(prog="reassignd planner hash-password")
    p.add_argument("--user", required=True)
    p.add_argument("--role", required=True, choices=ROLES)
    args = p.parse_args(argv)
    try:
        print(credential_line(args.user, args.role, password_from(stdin=sys.stdin)))
    except AuthConfigError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hash-password"]:
        return hash_password_main(argv[1:])
    if not argv or argv[0] != "serve":
        print("usage: reassignd planner serve --zookeeper HOST:PORT --listen HOST:PORT [options]\n"
              "       reassignd planner hash-password --user USER --role VIEWER|USER|ADMIN", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    from client.errors import InputError
    from client.security import ClientSecurity
    from planner_service.service import Options
    from spark_jobs import capacity
    from znodes.security import ZkSecurity

    try:
        p = build_parser()
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
        api_sec = api_security(args, p)
        disk_capacity = None
        if args.capacity is not None:
            try:
                disk_capacity = capacity.load_file(args.capacity)
            except capacity.CapacityError as e:
                p.error(f"--capacity: {e}")
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE_EXIT
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
        max_in=args.max_in, max_out=args.max_out, controller_ops=args.controller_ops,
        execution_deadline_s=args.execution_deadline, session_timeout_s=args.session_timeout,
        demotion_retention_s=args.demotion_history_retention,
        state_watch_limit=args.state_watch_limit, zk_security=zk_security, security=security,
        api_security=api_sec, capacity=disk_capacity, disk_threshold=args.disk_threshold,
    )
    return asyncio.run(_serve(opts))

