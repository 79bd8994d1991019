"""The demo's local cluster: one ZooKeeper, one ``reassignd sim`` process with six brokers,
two ``reassignd controller`` instances, and what the driver reads from them.

    cluster = LocalCluster.start(kids, workdir)       # kids: demo.procs.Children
    cluster.active_controller()                       # 101, from /controller
    cluster.assignment("orders")                      # {0: [1, 2, 3], ...}
    cluster.sim_status()                              # the sim's control channel `status`
    cluster.close()                                   # ZooKeeper client and server

Every process runs what an operator would type (``reassignd zk``'s launcher, ``reassignd sim``,
``reassignd controller``), with this interpreter so that no PATH set-up is needed.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from controller.core.config import to_toml
from demo.procs import Child, Children, checkpoint
from znodes.launcher import LocalZooKeeper, free_port

# The cluster. Brokers 5 and 6 start empty, as if just added: the rebalance fills them.
BROKERS = 6
TOPIC_BROKERS = (1, 2, 3, 4)
NEW_BROKERS = (5, 6)
# NAME:PARTITIONS:RF:SIZE (bytes per replica). 26 partitions, 72 replicas: a fair layout over
# six brokers puts 12 on each, so 24 replicas (about 170 MiB) move onto brokers 5 and 6.
TOPICS = ("orders:12:3:7MiB", "payments:8:3:7MiB", "clicks:6:2:7MiB")
# Each broker's own replication bandwidth: well above the throttle, so the throttle is what
# paces the moves (as it should in production).
BROKER_BANDWIDTH = "64MiB"
PRODUCE_RATE = "2KiB"  # bytes/s appended to every leader: the logs grow while they move
SIM_TICK_MS = 50
CONTROLLER_IDS = (101, 102)  # outside the broker ids: Metadata lists both in one id space
# Controller settings: a short ZooKeeper session so a killed controller's /controller goes
# within about 2 s (Kafka's default is 18 s; the demo should not sit through that).
# At most 3 moves into a broker at once (default 10): the partitions then complete in waves,
# so progress shows and the failover happens with moves both done and still to start.
# copy_progress_interval_s: the bytes-remaining history the demo charts at the end samples every
# second (10 s by default; the demo's moves take seconds).
CONTROLLER_CONFIG = {"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0, "max_incoming_per_broker": 3,
                     "copy_progress_interval_s": 1.0}

ZK_START_TIMEOUT_S = 60.0
PROCESS_READY_TIMEOUT_S = 60.0
ZK_CLIENT_TIMEOUT_S = 10.0


class DemoError(Exception):
    """A step of the demo failed; the message says which and where its log is."""


def reassignd(*args: str) -> list[str]:
    return [sys.executable, "-m", "reassignd", *args]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        checkpoint()
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise DemoError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Controller:
    id: int
    child: Child
    host: str
    port: int
    ops_port: int = 0  # the operations port: /healthz, /readyz, /metrics

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.ops_port}/metrics"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterSpec:
    """What to start; the defaults are the demo's cluster."""

    brokers: int = BROKERS
    topic_brokers: tuple[int, ...] = TOPIC_BROKERS
    topics: tuple[str, ...] = TOPICS
    bandwidth: str = BROKER_BANDWIDTH
    produce_rate: str = PRODUCE_RATE
    controller_ids: tuple[int, ...] = CONTROLLER_IDS
    controller_config: dict = field(default_factory=lambda: dict(CONTROLLER_CONFIG))


@dataclass
class LocalCluster:
    kids: Children
    workdir: Path
    hosts: str  # ZooKeeper connect string, with the chroot if any
    zk: KazooClient
    sim: Child
    control: tuple[str, int]
    brokers: dict[int, str]
    zookeeper: LocalZooKeeper | None = None  # the server, when this cluster started its own
    controllers: dict[int, Controller] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(c.address for c in self.controllers.values())

    # ---- start and stop ----------------------------------------------------------------------

    @classmethod
    def start(cls, kids: Children, workdir: Path, spec: ClusterSpec | None = None, *, hosts: str | None = None,
              say=print) -> "LocalCluster":
        """ZooKeeper (unless ``hosts`` names one), then the brokers, then the controllers; each
        waited for before the next."""
        spec = spec or ClusterSpec()
        zookeeper = None
        if hosts is None:
            zookeeper = LocalZooKeeper(port=0, data_dir=workdir / "zookeeper", fsync=False, stop_with_parent=True)
            zookeeper.start(timeout=ZK_START_TIMEOUT_S)
            hosts = zookeeper.connect_string
            say(f"ZooKeeper       {hosts} (data in {workdir / 'zookeeper'})")
        zk = None
        try:
            sim = kids.spawn(
                "sim",
                reassignd(
                    "sim", "--zookeeper", hosts, "--brokers", str(spec.brokers),
                    "--topics", *spec.topics, "--topic-brokers", ",".join(map(str, spec.topic_brokers)),
                    "--bandwidth", spec.bandwidth, "--produce-rate", spec.produce_rate,
                    "--tick-ms", str(SIM_TICK_MS),
                ),
                capture_stdout=True,
            )
            try:
                line = sim.readline(PROCESS_READY_TIMEOUT_S)
                ready = json.loads(line) if line.strip() else None
            except (TimeoutError, ValueError) as exc:
                raise DemoError(f"the simulated brokers did not start ({exc}); see {sim.log_path}") from None
            if not ready or ready.get("event") != "ready":
                raise DemoError(f"the simulated brokers did not start; see {sim.log_path}:\n{sim.log_tail()}")
            zk = KazooClient(hosts=hosts, timeout=ZK_CLIENT_TIMEOUT_S)  # the chroot exists now
            zk.start(timeout=ZK_CLIENT_TIMEOUT_S)
            host, port = ready["control"].rsplit(":", 1)
            cluster = cls(kids, workdir, hosts, zk, sim, (host, int(port)),
                          {int(b): a for b, a in ready["brokers"].items()}, zookeeper)
            empty = [b for b in cluster.brokers if b not in spec.topic_brokers]
            say(f"Brokers         {spec.brokers} simulated (reassignd sim): topics on "
                f"{ids_text(spec.topic_brokers)}" + (f", brokers {ids_text(empty)} empty" if empty else ""))
            cluster._start_controllers(spec)
            say(f"Controllers     {', '.join(f'{c.id} on {c.address}' for c in cluster.controllers.values())}; "
                f"active: {cluster.active_controller()}")
            say(f"Metrics         {', '.join(f'{c.metrics_url} (controller {c.id})' for c in cluster.controllers.values())}; "
                "/healthz and /readyz beside them")
            return cluster
        except BaseException:
            if zk is not None:
                zk.stop()
                zk.close()
            if zookeeper is not None:
                zookeeper.stop()
            raise

    def _start_controllers(self, spec: ClusterSpec) -> None:
        config = self.workdir / "controller.toml"
        config.write_text(to_toml(spec.controller_config))
        for cid in spec.controller_ids:
            port, ops_port = free_port(), free_port()
            child = self.kids.spawn(
                f"controller-{cid}",
                reassignd("controller", "--zookeeper", self.hosts, "--id", str(cid),
                          "--listen", f"127.0.0.1:{port}", "--ops-listen", f"127.0.0.1:{ops_port}",
                          "--config", str(config)),
            )
            self.controllers[cid] = Controller(cid, child, "127.0.0.1", port, ops_port)
        for c in self.controllers.values():
            wait_for(lambda c=c: self._listening(c), PROCESS_READY_TIMEOUT_S, f"controller {c.id}'s listener")
        wait_for(self.active_controller, PROCESS_READY_TIMEOUT_S, "an active controller")

    def _listening(self, c: Controller) -> bool:
        if not c.child.alive():
            raise DemoError(f"controller {c.id} exited; see {c.child.log_path}:\n{c.child.log_tail()}")
        try:
            with socket.create_connection((c.host, c.port), timeout=1):
                return True
        except OSError:
            return False

    def close(self) -> None:
        """The driver's ZooKeeper client, then the server if it is ours (after the children)."""
        try:
            self.zk.stop()
            self.zk.close()
        finally:
            if self.zookeeper is not None:
                self.zookeeper.stop()

    # ---- what the driver reads ----------------------------------------------------------------

    def _json(self, path: str):
        try:
            return json.loads(self.zk.get(path)[0])
        except NoNodeError:
            return None

    def active_controller(self) -> int | None:
        doc = self._json("/controller")
        return None if doc is None else doc["brokerid"]

    def assignment(self, topic: str) -> dict[int, list[int]]:
        doc = self._json(f"/brokers/topics/{topic}")
        return {int(p): r for p, r in doc["partitions"].items()}

    def all_assignments(self) -> dict[tuple[str, int], list[int]]:
        out = {}
        for topic in sorted(self.zk.get_children("/brokers/topics")):
            out.update({(topic, p): r for p, r in self.assignment(topic).items()})
        return out

    def pending(self) -> set[tuple[str, int]]:
        """Partitions still in /admin/reassign_partitions (the controller drops each as it completes)."""
        doc = self._json("/admin/reassign_partitions")
        return set() if doc is None else {(e["topic"], e["partition"]) for e in doc["partitions"]}

    def moving(self) -> list[str]:
        """Partitions with a KIP-240 record, i.e. started and not yet completed or cancelled."""
        try:
            topics = self.zk.get_children("/admin/reassignments")
        except NoNodeError:
            return []
        out = []
        for t in topics:
            try:
                out += [f"{t}-{p}" for p in self.zk.get_children(f"/admin/reassignments/{t}")]
            except NoNodeError:
                pass
        return out

    def idle(self) -> bool:
        """No reassignment requested, running or being cancelled."""
        return (
            self.zk.exists("/admin/reassign_partitions") is None
            and self.zk.exists("/admin/cancel_reassignment_in_progress") is None
            and not self.moving()
        )

    def throttle_configs(self) -> dict[str, dict]:
        """Replication throttles still set on brokers and topics (KIP-179 removes them when done)."""
        out = {}
        for kind in ("brokers", "topics"):
            try:
                names = self.zk.get_children(f"/config/{kind}")
            except NoNodeError:
                continue
            for name in names:
                doc = self._json(f"/config/{kind}/{name}") or {}
                throttled = {k: v for k, v in (doc.get("config") or {}).items() if "throttled" in k}
                if throttled:
                    out[f"{kind}/{name}"] = throttled
        return out

    def states(self) -> dict[tuple[str, int], dict]:
        """Every partition's state znode (leader, isr, leader_epoch)."""
        return {tp: self._json(f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state") or {}
                for tp in self.all_assignments()}

    def sim_command(self, command: str, timeout: float = 5) -> dict:
        """One command on the simulated brokers' control socket (sim.control): its JSON answer."""
        with socket.create_connection(self.control, timeout=timeout) as s:
            s.sendall(command.encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        if not data.startswith(b"OK "):
            raise DemoError(f"the simulated brokers' {command!r} failed: {data[:200]!r}")
        return json.loads(data[3:])

    def sim_status(self) -> dict:
        return self.sim_command("status")

    def hosted(self) -> dict[tuple[str, int], dict[int, int]]:
        """(topic, partition) -> {broker: bytes} for every replica the brokers hold on disk."""
        out: dict[tuple[str, int], dict[int, int]] = {}
        for broker, info in self.sim_status()["brokers"].items():
            for r in info["replicas"]:
                out.setdefault((r["topic"], r["partition"]), {})[int(broker)] = int(r["size"])
        return out


def ids_text(ids) -> str:
    return ",".join(map(str, ids))
