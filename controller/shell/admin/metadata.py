"""Metadata (3): how clients find the controller instances, the brokers and the topics.

Served by every instance, active or standby (a standby's answer is how a client bootstrapping
from it learns which instance is active). Every answer is read from ZooKeeper at the time of
the request, in bulk (``znodes.reads.get_many``): no cache that could go stale.

Building the answer, step by step:

 1. Nodes: every controller instance registered under ``/reassignd/controllers/<id>`` (its
    admin listener; at the endpoint of the request's listener, and left out when its
    registration names listeners but not that one) and every broker under ``/brokers/ids/<id>``
    with an endpoint of the request's listener, by name (PLAINTEXT when it has none), at that
    endpoint, with its rack; a broker without it is still alive (step 5). Ids share one
    space, as in KRaft; should a controller and a broker share an id the controller is
    listed, since finding it is what Metadata is for here (the controller warns of the clash
    when it registers: Kafka's node ids are unique).
 2. ``controller_id``: the ``brokerid`` of ``/controller`` when that instance is listed in
    step 1, else -1 (none, or not reachable by this client yet: clients ask again).
 3. ``cluster_id``: ``/cluster/id`` (Kafka's ``{"version":"1","id":"..."}``), else null.
 4. Topics (KIP-4): in v0 an empty list means every topic; from v1 null means every topic and
    an empty list none. A requested topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION,
    an illegal name INVALID_TOPIC_EXCEPTION. v12+ may ask by topic id (Kafka 3.1+): the ids
    are those Kafka 2.8+ writes in the topic znodes (every one is read to find them); when any
    id is given the names are not looked at; an unknown id is UNKNOWN_TOPIC_ID, listed first
    with a null name, a refused one TOPIC_AUTHORIZATION_FAILED with a null name and its id,
    listed last (v10-11 allow neither a null name nor an id: INVALID_REQUEST for the whole
    request, as Kafka 3.0+). A topic marked for deletion (``/admin/delete_topics/T``) is
    unknown, as in Kafka's brokers once its deletion starts. An all-topics answer lists only
    the topics it can describe. Nothing is auto-created. With ACLs enforced, a topic the principal may
    not DESCRIBE is left out of an all-topics answer and gets TOPIC_AUTHORIZATION_FAILED when
    named. KIP-430's authorised-operations fields, when asked for, are computed from the ACLs
    (every supported operation without an authorizer, as Kafka answers).
 5. Partitions: replicas from the topic znode, leader, leader epoch and ISR from the partition
    state znode. A leader that is not a registered broker gives LEADER_NOT_AVAILABLE and
    leader -1; ``offline_replicas`` are the replicas that are not registered; v0 clients get
    only the live replicas (and ISR), with REPLICA_NOT_AVAILABLE when the leader is live
    (Kafka's v0 behaviour).
"""

from __future__ import annotations

import logging
import uuid

from controller.core import acl
from controller.shell.admin.base import AdminContext, Api, ApiError
from controller.shell.listener import SESSION
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import models, paths
from znodes.api import Store
from znodes.errors import ZnodeFormatError
from znodes.payloads import LISTENER, decode_controller, decode_listener, decode_state, listener_endpoints
from znodes.reads import children_or_empty, get_many, get_or_none, read_broker_endpoints, read_controller_registrations
from znodes.secure_paths import CONTROLLERS as CONTROLLERS_PATH  # as controller.shell.daemon registers them
from znodes.values import Broker, LeaderIsr, TopicPartition, topic_uuid

CLUSTER_ID_PATH = "/cluster/id"
NO_NODE = -1
# Kafka's Topic.INTERNAL_TOPICS.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# KIP-430: "authorized operations not requested" is INT32_MIN on the wire.
OPERATIONS_OMITTED = -(2**31)
# Without an authorizer every supported operation is allowed (Kafka's answer then); with one,
# each field is computed from the ACLs (Authorizer.authorized_operations).
TOPIC_OPERATIONS = acl.operations_field(acl.SUPPORTED_OPERATIONS[acl.TOPIC])
CLUSTER_OPERATIONS = acl.operations_field(acl.SUPPORTED_OPERATIONS[acl.CLUSTER])
ZERO_UUID = uuid.UUID(int=0)

log = logging.getLogger("reassignd.admin")


# ---- ZooKeeper reads -------------------------------------------------------------------------


async def read_controllers(store: Store, listener: str | None = None) -> dict[int, tuple[str, int]]:
    """Registered controller instances: id -> (host, port) (of the named listener when the
    registration names its listeners and ``listener`` is given); unreadable entries are skipped."""
    payloads, _ = await read_controller_registrations(store)
    out: dict[int, tuple[str, int]] = {}
    for cid, data in payloads.items():
        try:
            out[cid] = decode_listener(f"{CONTROLLERS_PATH}/{cid}", data)
        except ZnodeFormatError:
            continue
        endpoints = listener_endpoints(data) if listener else {}
        if listener in endpoints:
            out[cid] = endpoints[listener]
        elif endpoints:
            # It names its listeners and not this one: its first listener speaks another
            # protocol, which the client would fail to speak (Kafka leaves such a node out).
            del out[cid]
    return out


async def read_active_controller(store: Store) -> int:
    read = await get_or_none(store, paths.CONTROLLER)
    if read is None:
        return NO_NODE
    try:
        return decode_controller(paths.CONTROLLER, read[0])
    except ZnodeFormatError:
        return NO_NODE


async def read_cluster_id(store: Store) -> str | None:
    read = await get_or_none(store, CLUSTER_ID_PATH)
    if read is None:
        return None
    try:
        doc = models._load_json(CLUSTER_ID_PATH, read[0])
    except ZnodeFormatError:
        return None
    cluster_id = doc.get("id") if isinstance(doc, dict) else None
    return cluster_id if isinstance(cluster_id, str) else None


async def read_data(store: Store, path_list: list[str]) -> list[bytes | None]:
    """The data of many znodes (None where there is none), in one go: the store's bulk read
    (ZooKeeper 3.6+'s multiRead, hundreds of znodes per request, on the controller's own
    session, so Metadata never trails what the controller wrote)."""
    return [None if r is None else r[0] for r in await get_many(store, path_list)]


async def read_states(store: Store, partitions: list[TopicPartition]) -> list[LeaderIsr | None]:
    """Each partition's state znode, in one bulk read, decoded as the controller decodes it
    (``znodes.payloads.decode_state``); None where it is absent or malformed
    (ZnodeFormatError), which the answers show as no leader."""
    state_paths = [paths.partition_state(t, p) for t, p in partitions]
    out: list[LeaderIsr | None] = []
    for path, read in zip(state_paths, await get_many(store, state_paths)):
        try:
            out.append(None if read is None else decode_state(path, read[0], read[1].version))
        except ZnodeFormatError as e:
            log.debug("%s", e)  # the controller's reads name it too; Metadata shows no leader
            out.append(None)
    return out


class TopicView:
    """One topic as Metadata shows it: assignment (topic znode) and states (state znodes)."""

    __slots__ = ("name", "topic_id", "replicas", "states")

    def __init__(self, name: str, topic_id: uuid.UUID, replicas: dict[int, list[int]]):
        self.name = name
        self.topic_id = topic_id
        self.replicas = replicas
        self.states: dict[int, LeaderIsr | None] = {}


async def read_topic_ids(store: Store) -> dict[uuid.UUID, str]:
    """Every topic znode's ``topic_id`` (Kafka 2.8+, version 3), by id: one bulk read of all of
    them (only a request by id needs it). Znodes without one, unreadable ones and illegal
    names are left out."""
    names = [n for n in sorted(await children_or_empty(store, paths.TOPICS)) if _legal(n)]
    out: dict[uuid.UUID, str] = {}
    for name, data in zip(names, await read_data(store, [paths.topic(n) for n in names])):
        if data is None or b"topic_id" not in data:  # the common case: no model needed
            continue
        try:
            topic_id = models.TopicAssignment.from_bytes(paths.topic(name), data).topic_id
        except ZnodeFormatError:
            continue
        if topic_id is not None:
            out[topic_uuid(topic_id)] = name
    return out


async def read_topic_views(store: Store, names: list[str]) -> dict[str, TopicView | None]:
    """Each named (valid) topic with its partition states; None for a topic with no znode or
    an unreadable one."""
    reads = await read_data(store, [paths.topic(n) for n in names])
    views: dict[str, TopicView | None] = {}
    for name, data in zip(names, reads):
        if data is None:
            views[name] = None
            continue
        try:
            m = models.TopicAssignment.from_bytes(paths.topic(name), data)
        except ZnodeFormatError:
            views[name] = None
            continue
        views[name] = TopicView(name, topic_uuid(m.topic_id), {p: list(r) for p, r in sorted(m.partitions.items())})
    keys = [(v.name, p) for v in views.values() if v is not None for p in v.replicas]
    for (t, p), state in zip(keys, await read_states(store, keys)):
        views[t].states[p] = state
    return views


# ---- the answer --------------------------------------------------------------------------------


async def handle_metadata(ctx: AdminContext, version: int, body: dict) -> dict:
    store = ctx.store
    # Kafka answers with the addresses of the listener the request came on, matched by name
    # (MetadataCache.getAliveEndpoints): a broker without that listener is left out.
    session = SESSION.get()
    listener = getattr(session, "listener", None)
    controllers = await read_controllers(store, listener)
    endpoints = await read_broker_endpoints(store)
    # Liveness (offline replicas, a dead leader) is the registration's, whatever its listeners.
    live = set(endpoints)
    # Listed: the brokers reachable on this listener.
    name = listener or LISTENER
    brokers = {b: by_name[name] for b, by_name in endpoints.items() if name in by_name}
    # A client uses controller_id to reach the active instance among the nodes (Java's
    # Cluster.controller(), kafka-python's admin): one not listed - its registration not written
    # yet, or no endpoint on this listener - is answered as no controller yet (-1, retried).
    controller_id = await read_active_controller(store)
    if controller_id not in controllers:
        controller_id = NO_NODE
    cluster_id = await read_cluster_id(store) if version >= 2 else None
    # Step 1: one id space; a controller entry wins over a broker of the same id.
    nodes: dict[int, dict] = {
        b.id: {"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in brokers.values()
    }
    for cid, (host, port) in controllers.items():
        nodes[cid] = {"node_id": cid, "host": host, "port": port, "rack": None}
    # Step 4: which topics.
    requested = body.get("topics")
    if version in (10, 11) and any(t.get("name") is None or (t.get("topic_id") or ZERO_UUID) != ZERO_UUID
                                   for t in requested or ()):
        # Kafka 3.0+ (KAFKA-12701): v10-11 carry topic ids but may not use them.
        raise ApiError(ErrorCode.INVALID_REQUEST, f"Metadata v{version}: topics by name only, never null")
    all_topics = requested is None or (version == 0 and not requested)
    # A topic being deleted is gone for Kafka's brokers from the start of its deletion (the
    # controller's UpdateMetadata with leader -2 takes it out of their caches), though its
    # znodes stay until every replica is deleted: no view, so unknown. With deletion disabled
    # the controller drops the marker and the topic stays, as Kafka's does.
    deleting: set[str] = set()
    if getattr(getattr(ctx, "config", None), "delete_topic_enable", True):
        deleting = set(await children_or_empty(store, paths.DELETE_TOPICS))
    entries: list[tuple[str | None, uuid.UUID]]
    ids = [] if all_topics else list(dict.fromkeys(
        t.get("topic_id") for t in requested if (t.get("topic_id") or ZERO_UUID) != ZERO_UUID))
    unknown_ids: list[uuid.UUID] = []
    if all_topics:
        entries = [(n, ZERO_UUID) for n in sorted(await children_or_empty(store, paths.TOPICS))]
    elif ids:
        # v12+ by id (Kafka 3.1+): when any id is given the names are not looked at; ids are
        # those of the topic znodes (Kafka 2.8+ writes them), every one read to find them.
        named = {i: n for i, n in (await read_topic_ids(store)).items() if n not in deleting}
        unknown_ids = [i for i in ids if i not in named]
        entries = [(named[i], i) for i in ids if i in named]
    else:
        entries, seen = [], set()
        for t in requested:
            key = (t.get("name"), t.get("topic_id") or ZERO_UUID)
            if key not in seen:
                seen.add(key)
                entries.append(key)
    # DESCRIBE on each topic, when ACLs are enforced: a topic the principal may not describe is
    # left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named (Kafka).
    denied: set[str] = set()
    authorizer = getattr(ctx, "authorizer", None)
    if authorizer is not None:
        session = SESSION.get()
        for name, _ in entries:
            if name is not None and not await authorizer.allows(session, acl.DESCRIBE, acl.TOPIC, name):
                denied.add(name)
        if all_topics:
            entries = [e for e in entries if e[0] not in denied]
    valid = [n for n, _ in entries if n is not None and _legal(n) and n not in denied and n not in deleting]
    views = await read_topic_views(store, valid)
    if all_topics:
        # Kafka lists the topics its cache holds: a child that is no readable topic (an illegal
        # name, an unreadable znode, one being deleted or deleted since the listing) is left out.
        entries = [e for e in entries if views.get(e[0]) is not None]
    # KIP-430, as Kafka: each topic described (an unknown or illegal name included) gets the
    # operations the principal may do on it; a refused one and one asked for by id keep
    # "not requested"; the cluster's field (v8-10) needs DESCRIBE on the cluster, else 0.
    ops: dict[str, int] = {}
    if body.get("include_topic_authorized_operations"):
        for name, _ in entries:
            if name is not None and name not in denied and name not in ops:
                ops[name] = TOPIC_OPERATIONS if authorizer is None else await authorizer.authorized_operations(
                    SESSION.get(), acl.TOPIC, name)
    topics = [
        _topic_error(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, OPERATIONS_OMITTED)
        if name in denied
        else _topic(version, name, topic_id, views.get(name), live, brokers, ops.get(name, OPERATIONS_OMITTED))
        for name, topic_id in entries
    ]
    if ids:
        # Kafka's order and shapes: unknown ids (null name) first, then the topics described,
        # then the refused ones - by id, a null name and their id ("not sensitive").
        topics = ([_topic_error(None, i, ErrorCode.UNKNOWN_TOPIC_ID, OPERATIONS_OMITTED) for i in unknown_ids]
                  + [t for (name, _), t in zip(entries, topics) if name not in denied]
                  + [_topic_error(None, i, ErrorCode.TOPIC_AUTHORIZATION_FAILED, OPERATIONS_OMITTED)
                     for name, i in entries if name in denied])
    return {
        "throttle_time_ms": 0,
        "brokers": [nodes[i] for i in sorted(nodes)],
        "cluster_id": cluster_id,
        "controller_id": controller_id,
        "topics": topics,
        "cluster_authorized_operations": await _cluster_operations(authorizer, body),
    }


async def _cluster_operations(authorizer, body: dict) -> int:
    if not body.get("include_cluster_authorized_operations"):
        return OPERATIONS_OMITTED
    if authorizer is None:
        return CLUSTER_OPERATIONS
    session = SESSION.get()
    if not await authorizer.allows(session, acl.DESCRIBE, acl.CLUSTER, acl.CLUSTER_NAME):
        return 0
    return await authorizer.authorized_operations(session, acl.CLUSTER, acl.CLUSTER_NAME)


def _legal(name: str) -> bool:
    try:
        paths.validate_topic_name(name)
        return True
    except ValueError:
        return False


def _topic(version, name, topic_id, view: TopicView | None, live: set[int], listed: dict[int, Broker],
           ops: int) -> dict:
    if name is None:
        code = ErrorCode.UNKNOWN_TOPIC_ID  # a null name without an id: nothing to look up
        return _topic_error("" if version < 12 else None, topic_id, code, OPERATIONS_OMITTED)
    if not _legal(name):
        return _topic_error(name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION, ops)
    if view is None:
        return _topic_error(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ops)
    return {
        "error_code": 0,
        "name": name,
        "topic_id": view.topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [_partition(version, p, r, view.states.get(p), live, listed) for p, r in view.replicas.items()],
        "topic_authorized_operations": ops,
    }


def _topic_error(name, topic_id, code: ErrorCode, ops: int) -> dict:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": ops,
    }


def _partition(version: int, index: int, replicas: list[int], state: LeaderIsr | None, live: set[int],
               listed: dict[int, Broker]) -> dict:
    """Kafka's MetadataCache.getPartitionMetadata: ``live`` the registered brokers, ``listed``
    those reachable on the request's listener."""
    leader, epoch, isr = (state.leader, state.leader_epoch, list(state.isr)) if state is not None else (NO_NODE, -1, [])
    offline = [r for r in replicas if r not in live]
    error = ErrorCode.NONE
    filtered = version == 0 and any(r not in listed for r in (*replicas, *isr))
    if filtered:  # v0 lists reachable replicas only, whether or not there is a leader (Kafka 2.4+)
        replicas = [r for r in replicas if r in listed]
        isr = [r for r in isr if r in listed]
    if leader not in live:
        error, leader = ErrorCode.LEADER_NOT_AVAILABLE, NO_NODE
    elif leader not in listed:  # alive, not on this listener
        error = ErrorCode.LISTENER_NOT_FOUND if version >= 6 else ErrorCode.LEADER_NOT_AVAILABLE
        leader = NO_NODE
    elif filtered:
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    return {
        "error_code": int(error),
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": replicas,
        "isr_nodes": isr,
        "offline_replicas": offline,
    }


def metadata_error(version: int, body: dict, code: ErrorCode, message: str | None) -> dict:
    """Every requested topic carries the code; from v13 (KIP-1102) the top-level error too."""
    requested = body.get("topics") or []
    return {
        "error_code": int(code),  # v13+; earlier versions have no such field and drop it
        "throttle_time_ms": 0,
        "brokers": [],
        "cluster_id": None,
        "controller_id": NO_NODE,
        "topics": [
            _topic_error(t.get("name") if t.get("name") is not None or version >= 12 else "",
                         t.get("topic_id") or ZERO_UUID, code, OPERATIONS_OMITTED)  # the id as sent, as Kafka
            for t in requested
        ],
    }


APIS = [
    Api(ApiKey.METADATA, "Metadata", 0, 13, controller_only=False, handle=handle_metadata, error_response=metadata_error),
]
