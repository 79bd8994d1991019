"""Run a simulated cluster until stopped: what ``reassignd sim`` (:mod:`reassignd.sim`) runs.

Every broker registers ``/brokers/ids/N``, listens on its own port and speaks the Kafka wire
protocol; the topics are created as Kafka creates them. When everything is up, one line goes
to stdout::

    {"event": "ready", "control": "127.0.0.1:7070", "brokers": {"1": "127.0.0.1:9092", ...},
     "topics": {"orders": {"0": [1, 2, 3], ...}}}

``control`` is the control channel (:mod:`sim.control`): ``stop N``, ``controlled-stop N``, ``start N``,
``restart N``, ``status``, ``shutdown``. On SIGTERM/SIGINT (or ``shutdown``) every broker's
session is closed, so its registration goes, and :func:`serve` returns 0; a failure to start
(ZooKeeper unreachable, a topic or broker id already there, the control port taken, an
unusable TLS keystore) returns 1 with the reason on stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

from sim.cluster import BrokerRegistrationError, ClusterSettings, SimulatedCluster
from sim.control import ControlServer
from sim.tls import TlsSettingError
from sim.topics import TopicExistsError, TopicSpec, TopicSpecError
from znodes.api import ZkError
from znodes.errors import ZnodeFormatError
from znodes.security import ZkSecurity

log = logging.getLogger("reassignd.sim")


async def serve(zookeeper: str, security: ZkSecurity, settings: ClusterSettings, topics: list[TopicSpec],
                control_port: int = 0) -> int:
    """Start the brokers of ``settings`` on ``zookeeper`` (a connect string), create ``topics``,
    print the ready line and run until SIGTERM/SIGINT or the control channel's ``shutdown``."""
    stop = asyncio.Event()
    # Every broker's session (and the cluster's own) with the --zk-config identity; under
    # zookeeper.set.acl the znodes they create get Kafka's secure ACLs.
    cluster = SimulatedCluster(lambda: security.connect(zookeeper, create_chroot=True), settings)
    try:
        assignments = await cluster.start(topics)
    except (ZkError, OSError) as exc:
        print(f"reassignd sim: cannot start: {exc!r} (ZooKeeper {zookeeper})", file=sys.stderr)
        return 1
    except (TopicExistsError, TopicSpecError, BrokerRegistrationError, ZnodeFormatError, TlsSettingError) as exc:
        print(f"reassignd sim: {exc}", file=sys.stderr)
        return 1
    control = ControlServer(cluster, stop.set)
    try:
        port = await control.start(settings.host, control_port)
    except OSError as exc:
        await cluster.close()
        print(f"reassignd sim: cannot open the control port: {exc}", file=sys.stderr)
        return 1
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    cluster.start_ticker()
    ready = {
        "event": "ready",
        "control": f"{settings.host}:{port}",
        "brokers": {str(b.id): f"{settings.host}:{b.port}" for b in cluster.brokers.values()},
        "topics": {t: {str(p): r for p, r in a.items()} for t, a in assignments.items()},
    }
    print(json.dumps(ready), flush=True)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await control.close()
        await cluster.close()
    log.info("all brokers deregistered")
    return 0
