"""A broker's metadata cache: what the last UpdateMetadata said, and Metadata answers from it.

Pure. Bodies are the codec's dicts (snake_case fields of Kafka's specs); both the old
ungrouped layout (UpdateMetadata v0-4) and the per-topic one (v5+) are read.

Kafka clients find the controller through any node's Metadata. The reassignd controller
instances are not brokers, so with a watched :class:`sim.zookeeper_view.ZooKeeperView` a Metadata
answer is merged as the controller's own listener builds it (controller.shell.admin.metadata):

 1. Brokers: the live brokers of the last UpdateMetadata (Kafka's semantics: the controller
    says who is alive), each at its endpoint of the broker's own listener (the one requests
    come in on: ``MetadataCache(listener=...)``, PLAINTEXT by default; the first endpoint
    when a broker has none of that name). Before the first one, the brokers registered
    under ``/brokers/ids``, so a client that bootstraps from a broker before any controller
    spoke to it can still reach every broker (and send a broker its own DescribeConfigs).
 2. Controller instances from ``/reassignd/controllers`` are listed as nodes too, with their
    admin listener; one that shares an id with a broker replaces it, as on the controller.
 3. ``controller_id``: the brokerid of ``/controller``. While no instance is active it is the
    last one UpdateMetadata named (-1 before any), which is what a Kafka broker says.
 4. Topics and partitions: from UpdateMetadata only; a partition's leader and replicas are
    checked against the live brokers, never against controller instances.

    >>> cache = MetadataCache(cluster_id="sim")
    >>> cache.update(6, {"controller_id": 7, "live_brokers": [{"id": 1, "endpoints": [
    ...     {"port": 9092, "host": "127.0.0.1", "listener": "PLAINTEXT", "security_protocol": 0}]}],
    ...     "topic_states": [{"topic_name": "t", "partition_states": [{"partition_index": 0,
    ...     "leader": 1, "leader_epoch": 0, "isr": [1], "replicas": [1], "offline_replicas": []}]}]})
    >>> [t["name"] for t in cache.metadata(9, {"topics": None})["topics"]]
    ['t']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol.errors import ErrorCode
from sim.zookeeper_view import NO_CONTROLLER, ZooKeeperView
from znodes.models import SECURITY_PROTOCOLS

LISTENER = "PLAINTEXT"
LEADER_DURING_DELETE = -2  # Kafka's marker in UpdateMetadata for a topic being deleted
NO_LEADER = -1
# KIP-430: "authorized operations not requested" is INT32_MIN on the wire.
OPERATIONS_OMITTED = -(2**31)
# Without an authorizer every operation is allowed; Kafka's AclOperation codes.
# Topic: READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# Cluster: CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    id: int
    host: str  # host and port: its endpoint Metadata lists (the broker's own listener's)
    port: int
    rack: str | None
    # Every endpoint UpdateMetadata gave, (listener, host, port, security protocol), in its
    # order: how a broker picks the controller's (sim.controller_link, the metadata lookup).
    endpoints: tuple[tuple[str, str, int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline: tuple[int, ...]


class MetadataCache:
    def __init__(self, cluster_id: str | None = None, listener: str = LISTENER):
        self.cluster_id = cluster_id
        self.listener = listener  # the listener Metadata is asked on: its endpoints are listed
        self.controller_id = NO_LEADER
        self.brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self.updated = False  # an UpdateMetadata was applied since the broker started

    def update(self, version: int, body: dict) -> None:
        """Apply an UpdateMetadata request (already checked for epochs)."""
        brokers = {}
        for live in body.get("live_brokers") or []:
            host, port = _endpoint(version, live, self.listener)
            brokers[live["id"]] = BrokerInfo(live["id"], host, port, live.get("rack"), _endpoints(version, live))
        self.brokers = brokers
        self.updated = True
        self.controller_id = body.get("controller_id", NO_LEADER)
        for topic, state in _partition_states(version, body):
            index = state["partition_index"]
            if state["leader"] == LEADER_DURING_DELETE:
                partitions = self.partitions.get(topic, {})
                partitions.pop(index, None)
                if not partitions:
                    self.partitions.pop(topic, None)
                continue
            self.partitions.setdefault(topic, {})[index] = PartitionInfo(
                leader=state["leader"],
                leader_epoch=state.get("leader_epoch", -1),
                isr=tuple(state.get("isr") or ()),
                replicas=tuple(state.get("replicas") or ()),
                offline=tuple(state.get("offline_replicas") or ()),
            )

    def metadata(self, version: int, body: dict, view: ZooKeeperView | None = None) -> dict:
        """The Metadata response body for ``body`` (topics: null = all; v0: [] = all too),
        merged with ``view`` when it is watched (steps 1-4 of the module docstring)."""
        requested = body.get("topics")
        if requested is None or (version == 0 and not requested):
            names = sorted(self.partitions)
        else:
            names = []
            for entry in requested:
                if entry.get("name") not in names:
                    names.append(entry.get("name"))
        want_topic_ops = bool(body.get("include_topic_authorized_operations"))
        want_cluster_ops = bool(body.get("include_cluster_authorized_operations"))
        nodes, controller_id = self._nodes(view)
        return {
            "throttle_time_ms": 0,
            "brokers": [nodes[i] for i in sorted(nodes)],
            "cluster_id": self.cluster_id,
            "controller_id": controller_id,
            "topics": [self._topic(version, name, want_topic_ops) for name in names],
            "cluster_authorized_operations": CLUSTER_OPERATIONS if want_cluster_ops else OPERATIONS_OMITTED,
        }

    def _nodes(self, view: ZooKeeperView | None) -> tuple[dict[int, dict], int]:
        """Steps 1-3: node id -> Metadata broker entry, and the controller id."""
        brokers = list(self.brokers.values())
        if view is None or not view.watched:
            nodes = {b.id: _node(b.id, b.host, b.port, b.rack) for b in brokers}
            return nodes, self.controller_id
        if not self.updated:
            brokers = list(view.registered.values())
        nodes = {b.id: _node(b.id, b.host, b.port, b.rack) for b in brokers}
        for cid, (host, port) in view.controllers.items():
            nodes[cid] = _node(cid, host, port, None)
        active = view.active_controller
        return nodes, active if active != NO_CONTROLLER else self.controller_id

    def _topic(self, version: int, name: str | None, want_ops: bool) -> dict:
        ops = TOPIC_OPERATIONS if want_ops else OPERATIONS_OMITTED
        if name is None:
            # v10+ may name a topic by id only; simulated topics have no ids.
            return _topic_error("" if version < 12 else None, ErrorCode.UNKNOWN_TOPIC_ID, ops)
        if not _LEGAL_TOPIC.match(name) or name in (".", ".."):
            return _topic_error(name, ErrorCode.INVALID_TOPIC_EXCEPTION, ops)
        partitions = self.partitions.get(name)
        if partitions is None:
            # Automatic topic creation is off on simulated brokers.
            return _topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ops)
        return {
            "error_code": int(ErrorCode.NONE),
            "name": name,
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": [self._partition(version, i, p) for i, p in sorted(partitions.items())],
            "topic_authorized_operations": ops,
        }

    def _partition(self, version: int, index: int, info: PartitionInfo) -> dict:
        replicas, isr = list(info.replicas), list(info.isr)
        error = ErrorCode.NONE
        leader = info.leader
        if leader not in self.brokers:
            error, leader = ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER
        elif version == 0 and (any(r not in self.brokers for r in replicas) or any(r not in self.brokers for r in isr)):
            # Only v0 clients are told about, and shielded from, unavailable replicas.
            error = ErrorCode.REPLICA_NOT_AVAILABLE
            replicas = [r for r in replicas if r in self.brokers]
            isr = [r for r in isr if r in self.brokers]
        return {
            "error_code": int(error),
            "partition_index": index,
            "leader_id": leader,
            "leader_epoch": info.leader_epoch,
            "replica_nodes": replicas,
            "isr_nodes": isr,
            "offline_replicas": list(info.offline),
        }


def _node(node_id: int, host: str, port: int, rack: str | None) -> dict:
    return {"node_id": node_id, "host": host, "port": port, "rack": rack}


def _topic_error(name: str | None, error: ErrorCode, ops: int) -> dict:
    return {
        "error_code": int(error),
        "name": name,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": ops,
    }


def _endpoint(version: int, live: dict, listener: str) -> tuple[str, int]:
    if version == 0 or not live.get("endpoints"):
        return live.get("v0_host", ""), live.get("v0_port", -1)
    endpoints = live["endpoints"]
    chosen = next((e for e in endpoints if _listener_of(e) == listener), endpoints[0])
    return chosen["host"], chosen["port"]


def _endpoints(version: int, live: dict) -> tuple[tuple[str, str, int, str], ...]:
    """Every endpoint of a live broker, with its protocol; v0's one address is PLAINTEXT."""
    if version == 0 or not live.get("endpoints"):
        return ((LISTENER, live.get("v0_host", ""), live.get("v0_port", -1), LISTENER),)
    return tuple((_listener_of(e), e["host"], e["port"], _protocol_of(e)) for e in live["endpoints"])


def _protocol_of(endpoint: dict) -> str:
    """Kafka's SecurityProtocol id as its name (UNKNOWN(n) for an id past Kafka's four)."""
    protocol = endpoint.get("security_protocol", 0)
    return SECURITY_PROTOCOLS[protocol] if 0 <= protocol < len(SECURITY_PROTOCOLS) else f"UNKNOWN({protocol})"


def _listener_of(endpoint: dict) -> str:
    """An UpdateMetadata endpoint's listener name; v1-2 carry none, their listener is named
    after its security protocol (Kafka's ListenerName.forSecurityProtocol)."""
    name = endpoint.get("listener")
    if name is not None:
        return name
    protocol = endpoint.get("security_protocol", 0)
    return SECURITY_PROTOCOLS[protocol] if 0 <= protocol < len(SECURITY_PROTOCOLS) else LISTENER


def _partition_states(version: int, body: dict):
    """(topic, partition state) pairs from either layout."""
    for state in body.get("ungrouped_partition_states") or []:
        yield state["topic_name"], state
    for topic in body.get("topic_states") or []:
        for state in topic.get("partition_states") or []:
            yield topic["topic_name"], state
