"""``reassignd sim``: simulated Kafka brokers on a ZooKeeper, until SIGTERM or SIGINT
(:func:`sim.serve.serve` runs them).

    reassignd sim --zookeeper 127.0.0.1:2181/kafka --brokers 6 --racks 3 \\
        --topics orders:12:3:10MiB clicks:6:2 --bandwidth 50MiB --produce-rate 4KiB

Every broker registers ``/brokers/ids/N`` (ids from ``--first-id``), listens on its own
loopback port (``--base-port P``: P, P+1, ...; default any free port) and speaks the Kafka
wire protocol; any broker is a bootstrap server for Kafka clients (its Metadata lists the
reassignd controller instances and names the active one). Topics are created as Kafka creates them (``NAME:PARTITIONS:RF[:SIZE]``, SIZE
per replica, e.g. 123, 512KB, 10MiB); an existing topic is an error and nothing is written.
``--bandwidth`` caps each broker's replication fetching (bytes/s), ``--produce-rate`` is
appended to every partition leader (bytes/s; messages are ``--message-bytes`` each).

Log directories (KIP-113): every broker has one (``/var/sim/kafka-logs-N``) unless
``--log-dirs`` gives a count (``--log-dirs 3``: ``/var/sim/kafka-logs-N-1`` .. ``-3``) or the
absolute paths every broker has (``--log-dirs /data/d1,/data/d2``; ``{broker}`` in a path is
the broker's id); ``--broker-log-dirs 4=/data/d1,/data/d2,/data/d3`` (repeatable) gives one
broker its own. ``--disk-bytes`` is each directory's volume; ``--disk-copy-rate`` bounds a
broker's copies between its own directories (AlterReplicaLogDirs), below the dynamic
``replica.alter.log.dirs.io.max.bytes.per.second``.

ISR changes: by default a partition leader writes the state znode and an
``/isr_change_notification`` itself, as Kafka brokers before inter.broker.protocol.version 2.7;
``--isr-via alter-partition`` has it send AlterPartition (KIP-497) to the active controller
instead, as 2.7+ brokers do, and write nothing to ZooKeeper for it (:mod:`sim.alter_partition`).
A broker finds the active controller for that (and for ControlledShutdown) through ZooKeeper by
default; ``--controller-lookup metadata`` has it look the controller up as Kafka 3.x brokers do,
among the live nodes of its last UpdateMetadata (:mod:`sim.controller_link`).

Listener: PLAINTEXT by default. ``--ssl-keystore PEM`` (the certificate chain and its key in
one file, Kafka's PEM keystore; ``--ssl-key-password`` if the key is encrypted) makes every
broker's listener Kafka's SSL listener, TLS 1.2+ from the first byte (:mod:`sim.tls`);
``--ssl-client-auth required|requested`` asks clients for a certificate signed by a CA of
``--ssl-truststore PEM``. The registrations say so (``listener_security_protocol_map``
``{"SSL": "SSL"}``). ``--listener-name`` names the listener (default PLAINTEXT, or SSL with
``--ssl-keystore``: Kafka's default names), e.g. INTERNAL, for a controller whose
``broker_listener`` is that name. A keystore or truststore that is missing, not PEM, or whose
key does not open with the password is a usage error (exit 2) naming the flag, before
anything starts. The sim's own requests to the controller (AlterPartition,
ControlledShutdown) go to its listener of the brokers' name, else a PLAINTEXT one, else an SSL
one with these settings (the controller's certificate checked against ``--ssl-truststore``, else
the system's CAs; the keystore shown as client certificate): :mod:`sim.controller_link`.

``--zk-config FILE`` gives the brokers' ZooKeeper identity and security, the keys the
controller's ``--security-config`` and ``reassignd users --zk-config`` read
(``znodes.security``): ``zookeeper.auth.digest`` or ``zookeeper.sasl.jaas.config``,
``zookeeper.set.acl``, ``zookeeper.ssl.*``. As Kafka's brokers and controller share one
ZooKeeper identity, give the sim the controller's: under ``zookeeper.set.acl`` each writes
znodes the other created (the brokers update partition states the controller created and add
ISR change notifications under its ``/isr_change_notification``, unless ``--isr-via
alter-partition``; the controller updates the topics the sim created).

When everything is up, one line goes to stdout::

    {"event": "ready", "control": "127.0.0.1:7070", "brokers": {"1": "127.0.0.1:9092", ...},
     "topics": {"orders": {"0": [1, 2, 3], ...}}}

``control`` is the control channel (:mod:`sim.control`): ``stop N``, ``controlled-stop N``, ``start N``,
``restart N``, ``fail-dir N DIR``, ``status``, ``shutdown``. On SIGTERM/SIGINT (or ``shutdown``) every broker's
session is closed, so its registration goes, and the command exits 0. Bad arguments exit 2;
a failure to start (ZooKeeper unreachable, a topic or broker id already there) exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys

from reassignd.args import USAGE_EXIT, Parser, UsageError
from sim.cluster import ISR_VIA_ZOOKEEPER, ISR_VIAS, PLAINTEXT, ClusterSettings
from sim.controller_link import LOOKUP_ZOOKEEPER, LOOKUPS
from sim.core import BrokerConfig
from sim.logdirs import LogDirsError, check_dir_names
from sim.replica import CopySettings
from sim.serve import serve
from sim.sizes import parse_size
from sim.tls import CLIENT_AUTH, SimTls, TlsSettingError, server_context
from sim.topics import TopicSpecError, parse_topic_spec
from znodes import paths
from znodes.security import ZkSecurity

MAX_BROKERS = 200  # one process: each broker holds a port and a ZooKeeper session (kazoo threads)
MAX_BROKER_ID = 2**31 - 1
# More directories than this per broker is a typo (Kafka's largest JBOD boxes hold a few dozen disks).
MAX_LOG_DIRS = 64
# --isr-via's choices, dashed as command-line words are, each the ClusterSettings.isr_via it sets.
ISR_VIA_CHOICES = {via.replace("_", "-"): via for via in ISR_VIAS}
# The flag of each sim.tls.SimTls setting, for errors that name it.
TLS_FLAGS = {"keystore": "--ssl-keystore", "key_password": "--ssl-key-password", "truststore": "--ssl-truststore",
             "client_auth": "--ssl-client-auth"}
# Kafka's default listener name for a TLS listener (listener.security.protocol.map's SSL:SSL).
SSL_LISTENER = "SSL"
# The listener names the controller's broker_listener setting accepts, so both can be told one name.
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def _non_negative_int(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return int(text)


def _id_list(text: str) -> tuple[int, ...]:
    ids = tuple(_non_negative_int(part) for part in text.split(","))
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"a broker id is given twice in {text!r}")
    return ids


def _port(text: str) -> int:
    value = _non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return value


def _rate(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _log_dirs(text: str) -> tuple[str, ...]:
    """``N`` (a count: /var/sim/kafka-logs-{broker}-1 ..) or ``DIR[,DIR...]`` (absolute paths)."""
    if text.isascii() and text.isdigit():
        count = int(text)
        if not 1 <= count <= MAX_LOG_DIRS:
            raise argparse.ArgumentTypeError(f"a broker has 1 to {MAX_LOG_DIRS} log dirs, got {count}")
        if count == 1:
            return ()  # the default directory, named as before
        return tuple(f"/var/sim/kafka-logs-{{broker}}-{i}" for i in range(1, count + 1))
    try:
        names = check_dir_names(text.split(","))
    except LogDirsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if len(names) > MAX_LOG_DIRS:
        raise argparse.ArgumentTypeError(f"a broker has at most {MAX_LOG_DIRS} log dirs, got {len(names)}")
    return names


def _broker_log_dirs(text: str) -> tuple[int, tuple[str, ...]]:
    broker, sep, dirs = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected ID=DIR[,DIR...] or ID=N, got {text!r}")
    broker_id = _non_negative_int(broker.strip())
    names = _log_dirs(dirs.strip())
    return broker_id, names or (BrokerConfig().log_dir_template,)


def _connect_string(text: str) -> str:
    try:
        paths.split_connect_string(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _listener_name(text: str) -> str:
    if not _LISTENER_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"a listener name is letters, digits, '_', '.' and '-', got {text!r}")
    return text


def _topic(text: str):
    try:
        return parse_topic_spec(text)
    except TopicSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="reassignd sim", description="Run simulated Kafka brokers on a ZooKeeper.")
    p.add_argument("--zookeeper", required=True, type=_connect_string, metavar="HOST:PORT[/CHROOT]")
    p.add_argument("--zk-config", metavar="FILE",
                   help="ZooKeeper security properties (zookeeper.auth.digest or zookeeper.sasl.jaas.config, "
                        "zookeeper.set.acl, zookeeper.ssl.*), as the controller's and `reassignd users`'")
    p.add_argument("--brokers", required=True, type=_positive_int, metavar="N")
    p.add_argument("--first-id", type=_non_negative_int, default=1, metavar="ID")
    p.add_argument("--racks", type=_non_negative_int, default=0, metavar="K",
                   help="put broker i in rack-(i mod K); topics are then placed rack-aware")
    p.add_argument("--topics", nargs="+", action="extend", type=_topic, default=[], metavar="NAME:PARTITIONS:RF[:SIZE]")
    p.add_argument("--topic-brokers", type=_id_list, default=(), metavar="ID[,ID...]",
                   help="place the --topics on these brokers only (default all); the others start empty")
    p.add_argument("--bandwidth", type=_rate, default=100 * 1024 * 1024, metavar="BYTES_PER_S",
                   help="replication fetch bandwidth of each broker (default 100MiB)")
    p.add_argument("--produce-rate", type=_rate, default=1024, metavar="BYTES_PER_S",
                   help="bytes/s appended to each partition leader (default 1KiB)")
    p.add_argument("--message-bytes", type=_positive_int, default=1024, metavar="BYTES",
                   help="size of one simulated message (default 1024)")
    p.add_argument("--host", default="127.0.0.1", help="address brokers listen on and register")
    p.add_argument("--base-port", type=_port, default=0, metavar="PORT")
    p.add_argument("--control-port", type=_port, default=0, metavar="PORT")
    p.add_argument("--replica-lag-time-max-ms", type=_positive_int, default=10_000, metavar="MS")
    p.add_argument("--disk-bytes", type=_rate, default=BrokerConfig().disk_bytes, metavar="BYTES",
                   help="each log dir's volume size, DescribeLogDirs v4 total_bytes (default 1 TiB)")
    p.add_argument("--log-dirs", type=_log_dirs, default=(), metavar="N|DIR[,DIR...]",
                   help="every broker's log directories: a count, or absolute paths ({broker}: its id); "
                        "default one, /var/sim/kafka-logs-ID")
    p.add_argument("--broker-log-dirs", type=_broker_log_dirs, action="append", default=[],
                   metavar="ID=N|ID=DIR[,DIR...]", help="one broker's own log directories (repeatable)")
    p.add_argument("--disk-copy-rate", type=_rate, default=int(CopySettings().disk_copy_rate), metavar="BYTES_PER_S",
                   help="bytes/s a broker copies between its own log dirs, all moves together (default 200MiB)")
    p.add_argument("--tick-ms", type=_positive_int, default=100, metavar="MS",
                   help="how often simulated time advances")
    p.add_argument("--isr-via", choices=list(ISR_VIA_CHOICES), default=ISR_VIA_ZOOKEEPER,
                   help="how a partition leader changes the ISR: zookeeper (writes the state znode and an "
                        "isr_change_notification, Kafka before inter.broker.protocol.version 2.7; the default) "
                        "or alter-partition (sends AlterPartition to the active controller, as 2.7+ brokers do)")
    p.add_argument("--auto-create-topics", action="store_true",
                   help="Kafka's auto.create.topics.enable (Kafka's default; off here): a Metadata request that "
                        "allows it creates a topic it names that does not exist, placed over the broker's "
                        "metadata cache as a Kafka broker places it")
    p.add_argument("--num-partitions", type=_positive_int, default=1, metavar="N",
                   help="Kafka's num.partitions: an auto-created topic's partitions (default 1)")
    p.add_argument("--default-replication-factor", type=_positive_int, default=1, metavar="N",
                   help="Kafka's default.replication.factor: an auto-created topic's replicas (default 1)")
    p.add_argument("--controller-lookup", choices=list(LOOKUPS), default=LOOKUP_ZOOKEEPER,
                   help="how a broker finds the active controller for AlterPartition and ControlledShutdown: "
                        "zookeeper (/controller and the instance's /reassignd/controllers entry; the default) or "
                        "metadata (controller_id among the live nodes of its last UpdateMetadata, as Kafka 3.x brokers)")
    p.add_argument("--listener-name", type=_listener_name, metavar="NAME",
                   help="the name the brokers register their listener under (default PLAINTEXT, "
                        "or SSL with --ssl-keystore), e.g. INTERNAL: the controller's broker_listener")
    p.add_argument("--ssl-keystore", metavar="PEM",
                   help="TLS on every broker's listener (Kafka's SSL listener, TLS 1.2+): the certificate "
                        "chain and its private key in one PEM file (Kafka's PEM keystore)")
    p.add_argument("--ssl-key-password", metavar="PASSWORD",
                   help="the password of an encrypted key in --ssl-keystore (Kafka's ssl.key.password; "
                        "visible in the process list: test keys only)")
    p.add_argument("--ssl-truststore", metavar="PEM",
                   help="the CA certificates (PEM) client certificates are checked against, and the "
                        "controller's certificate when its listener speaks SSL; needed by --ssl-client-auth "
                        "requested|required")
    p.add_argument("--ssl-client-auth", choices=list(CLIENT_AUTH), default="none",
                   help="Kafka's ssl.client.auth: none (the default), requested (a client certificate is "
                        "asked for and checked if sent) or required (a client without a trusted one is refused)")
    p.add_argument("--seed", type=_non_negative_int, default=0, help="replica assignment seed")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parsed and cross-checked arguments; raises UsageError with the message."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.racks > args.brokers:
        parser.error(f"--racks {args.racks} is more than --brokers {args.brokers}")
    if args.brokers > MAX_BROKERS:
        parser.error(f"--brokers {args.brokers} is more than {MAX_BROKERS}")
    if args.first_id + args.brokers - 1 > MAX_BROKER_ID:
        parser.error("broker ids would not fit a Java int")
    if args.base_port and args.base_port + args.brokers - 1 > 65535:
        parser.error(f"--base-port {args.base_port} leaves no room for {args.brokers} brokers")
    if args.bandwidth <= 0:
        parser.error("--bandwidth must be positive")
    try:
        args.zk_security = ZkSecurity.from_file(args.zk_config)
    except (ValueError, OSError) as exc:
        parser.error(f"--zk-config: {exc}")
    per_broker = [b for b, _ in args.broker_log_dirs]
    if len(set(per_broker)) != len(per_broker):
        parser.error("--broker-log-dirs: a broker is given twice")
    outside = [b for b in per_broker if not args.first_id <= b < args.first_id + args.brokers]
    if outside:
        parser.error(f"--broker-log-dirs: {outside} not among the simulated brokers")
    if args.disk_copy_rate <= 0:
        parser.error("--disk-copy-rate must be positive")
    outside = [b for b in args.topic_brokers if not args.first_id <= b < args.first_id + args.brokers]
    if outside:
        parser.error(f"--topic-brokers: {outside} not among the simulated brokers")
    args.tls = _tls(parser, args)
    if args.listener_name is None:
        args.listener_name = SSL_LISTENER if args.tls is not None else PLAINTEXT
    placement = len(args.topic_brokers) or args.brokers
    names = [t.name for t in args.topics]
    for spec in args.topics:
        if names.count(spec.name) > 1:
            parser.error(f"topic {spec.name!r} is given twice")
        if spec.replication_factor > placement:
            parser.error(
                f"topic {spec.name!r}: replication factor {spec.replication_factor} "
                f"is larger than the number of brokers it is placed on ({placement})"
            )
    return args


def _tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> SimTls | None:
    """The --ssl-* settings, their files read and the TLS context made once, so that a bad
    one is a usage error naming its flag before any broker starts; None without
    --ssl-keystore."""
    if args.ssl_keystore is None:
        given = [flag for flag, value in (("--ssl-key-password", args.ssl_key_password),
                                          ("--ssl-truststore", args.ssl_truststore),
                                          ("--ssl-client-auth", args.ssl_client_auth != "none")) if value]
        if given:
            parser.error(f"{given[0]} needs --ssl-keystore (TLS on the brokers' listener)")
        return None
    try:
        tls = SimTls(keystore=args.ssl_keystore, key_password=args.ssl_key_password,
                     truststore=args.ssl_truststore, client_auth=args.ssl_client_auth)
        server_context(tls)
    except TlsSettingError as exc:
        parser.error(f"{TLS_FLAGS[exc.setting]}: {exc.reason}")
    return tls


def settings_from(args: argparse.Namespace) -> ClusterSettings:
    return ClusterSettings(
        brokers=args.brokers,
        first_id=args.first_id,
        racks=args.racks,
        host=args.host,
        base_port=args.base_port,
        copy=CopySettings(
            bandwidth=float(args.bandwidth),
            produce_bytes=float(args.produce_rate),
            produce_messages=args.produce_rate / args.message_bytes,
            disk_copy_rate=float(args.disk_copy_rate),
        ),
        broker=BrokerConfig(replica_lag_time_max=args.replica_lag_time_max_ms / 1000.0, disk_bytes=args.disk_bytes,
                            log_dirs=args.log_dirs),
        broker_log_dirs=dict(args.broker_log_dirs),
        message_bytes=args.message_bytes,
        tick=args.tick_ms / 1000.0,
        seed=args.seed,
        topic_brokers=args.topic_brokers,
        isr_via=ISR_VIA_CHOICES[args.isr_via],
        controller_lookup=args.controller_lookup,
        listener_name=args.listener_name,
        tls=args.tls,
        auto_create_topics=args.auto_create_topics,
        num_partitions=args.num_partitions,
        default_replication_factor=args.default_replication_factor,
    )


def main(argv: list[str]) -> int:
    try:
        args = parse_args(list(argv))
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return USAGE_EXIT
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level != "DEBUG":
        # One ZooKeeper session per broker: kazoo's connection chatter would drown the sim's own log.
        logging.getLogger("kazoo").setLevel(logging.WARNING)
    return asyncio.run(serve(args.zookeeper, args.zk_security, settings_from(args), args.topics, args.control_port))
