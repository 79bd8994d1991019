"""Metadata (3) from a controller instance, probed against what a Kafka broker answers.

Kafka's rules are those of ``KafkaApis.handleTopicMetadataRequest`` / ``getTopicMetadata`` and
``MetadataCache.getTopicMetadata`` / ``getPartitionMetadata`` (2.4+, ZooKeeper mode, where the
controller is one of the brokers). Each test says how sure that reading is. The znodes are
written by hand on the ZooKeeper twin (no controller reacts to them), so every answer is a pure
function of the znodes and the request; ``test_twin_controller_*`` uses the twin cluster with a
real active controller (tests.admin.test_kip179's helpers).
"""

from __future__ import annotations

import base64
import json
import struct
import time
import uuid

import pytest

import protocol
from controller.core import acl
from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.admin.metadata import handle_metadata
from controller.shell.listener import SESSION
from controller.shell.role import Role
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from tests.admin.test_kip179 import cluster, context
from tests.admin.test_topic_acls import FixedAcls, grant
from tests.admin.test_topic_acls import topic as topic_resource
from tests.client.cluster_zk import broker_payload
from znodes import paths
from znodes.payloads import encode_listener
from znodes.twin import TwinServer

OMITTED = -(2**31)
ZERO = uuid.UUID(int=0)
# replicas per partition; each state names the first replica leader, epoch 5, ISR = replicas
TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 9]}, "__consumer_offsets": {0: [1, 2]},
          "__transaction_state": {0: [2, 1]}}


class Listening:
    """A connection's security session as the listener sets it: the listener it came on."""

    def __init__(self, listener: str):
        self.listener = listener


async def twin(brokers=(1, 2, 3), topics=TOPICS):
    server = TwinServer()
    store = server.connect()
    for b in brokers:
        await store.create(f"/brokers/ids/{b}", broker_payload(b, rack=f"r{b}"), makepath=True)
    for name, parts in topics.items():
        await put_topic(store, name, parts)
    return store


async def put_topic(store, name: str, parts: dict[int, list[int]]) -> None:
    doc = {"version": 2, "partitions": {str(p): r for p, r in parts.items()}}
    await store.create(paths.topic(name), json.dumps(doc).encode(), makepath=True)
    for p, r in parts.items():
        state = {"version": 1, "leader": r[0], "leader_epoch": 5, "controller_epoch": 1, "isr": r}
        await store.create(paths.partition_state(name, p), json.dumps(state).encode(), makepath=True)


def ctx_of(store, config: ControllerConfig | None = None) -> AdminContext:
    role = Role(7)
    role.store = store
    return AdminContext(role, config or ControllerConfig())


async def meta(store, version: int, body: dict, session=None, config=None) -> dict:
    """The answer as a client decodes it: through the handler (its error responses included)
    and the codec at ``version``."""
    token = SESSION.set(session)
    try:
        header = {"request_api_key": 3, "request_api_version": version, "correlation_id": 1, "client_id": "probe"}
        answer = await AdminHandler(ctx_of(store, config)).handle(header, body)
    finally:
        SESSION.reset(token)
    return protocol.decode_response(3, version, protocol.encode_response(3, version, 1, answer))[1]


def request(version: int, names) -> dict:
    topics = None if names is None else [{"name": n, "topic_id": ZERO} for n in names]
    return {"topics": topics, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}


def by_name(body: dict) -> dict:
    return {t["name"]: t for t in body["topics"]}


async def register_controller(store, cid: int, endpoints: dict | None) -> None:
    first = next(iter(endpoints.values())) if endpoints else ("10.0.0.1", 9190)
    await store.create(f"/reassignd/controllers/{cid}", encode_listener(*first, endpoints=endpoints), makepath=True)


# ---- every version ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(14))
async def test_every_version_encodes_topics_partitions_and_internal_flags(version):
    # Kafka (high confidence): v0 [] = all; v1+ null = all, [] = none; internal topics flagged
    # (v1+); a partition whose leader is live has no error at v1+; v0 drops replicas on dead
    # brokers with REPLICA_NOT_AVAILABLE; leader_epoch from the state (v7+); offline (v5+).
    store = await twin()
    everything = await meta(store, version, request(version, [] if version == 0 else None))
    assert set(by_name(everything)) == set(TOPICS)
    if version >= 1:
        assert (await meta(store, version, request(version, [])))["topics"] == []
        flags = {n: t["is_internal"] for n, t in by_name(everything).items()}
        assert flags == {"orders": False, "__consumer_offsets": True, "__transaction_state": True}
    parts = {p["partition_index"]: p for p in by_name(everything)["orders"]["partitions"]}
    assert parts[1]["error_code"] == 0 and parts[1]["leader_id"] == 2 and parts[1]["replica_nodes"] == [2, 3]
    if version == 0:
        assert (parts[2]["error_code"], parts[2]["replica_nodes"], parts[2]["isr_nodes"]) == (9, [3], [3])
    else:
        assert (parts[2]["error_code"], parts[2]["replica_nodes"], parts[2]["isr_nodes"]) == (0, [3, 9], [3, 9])
    if version >= 5:
        assert parts[2]["offline_replicas"] == [9] and parts[1]["offline_replicas"] == []
    if version >= 7:
        assert parts[1]["leader_epoch"] == 5
    if version >= 8:
        assert by_name(everything)["orders"]["topic_authorized_operations"] == OMITTED
    assert {b["node_id"] for b in everything["brokers"]} == {1, 2, 3}


# ---- topics: what an all-topics answer lists -------------------------------------------------


async def test_all_topics_lists_only_topics_it_can_describe():
    # Kafka (high confidence): an all-topics answer is MetadataCache.getAllTopics, the topics the
    # cache holds; a name it does not know is never listed with UNKNOWN_TOPIC_OR_PARTITION, nor
    # an illegal one with INVALID_TOPIC_EXCEPTION. Here a child of /brokers/topics whose topic
    # znode is unreadable, or whose name is illegal, is not a topic a client can use: left out
    # (named, it gets its error as before).
    store = await twin()
    await store.create(paths.topic("broken"), b"{not json")
    await store.create("/brokers/topics/bad name", b'{"version":2,"partitions":{"0":[1]}}')
    for version, topics in ((0, []), (1, None), (12, None)):
        assert set(by_name(await meta(store, version, request(version, topics)))) == set(TOPICS)
    named = by_name(await meta(store, 12, request(12, ["broken", "bad name", "orders"])))
    assert {n: t["error_code"] for n, t in named.items()} == {"broken": 3, "bad name": 17, "orders": 0}


async def test_a_topic_being_deleted_is_gone_from_the_answer():
    # Kafka (high confidence, 2.x ZooKeeper mode): once the controller starts a deletion
    # (TopicDeletionManager.onTopicDeletion) every UpdateMetadata carries leader -2
    # (LeaderDuringDelete) for the topic's partitions and MetadataCache.updateMetadata removes
    # them: the topic is unknown - left out of an all-topics answer, UNKNOWN_TOPIC_OR_PARTITION
    # when named - although its znodes stay until every replica is deleted (which waits for a
    # broker that is down). A client needs exactly that: producers stop, and tools waiting for
    # the topic to go see it gone. Kafka's window between the marker's creation and the
    # controller reading it (milliseconds) is not reproduced: the marker is the start here.
    store = await twin()
    await store.create(paths.delete_topic("orders"), b"", makepath=True)
    assert set(by_name(await meta(store, 12, request(12, None)))) == {"__consumer_offsets", "__transaction_state"}
    assert set(by_name(await meta(store, 0, request(0, [])))) == {"__consumer_offsets", "__transaction_state"}
    named = by_name(await meta(store, 9, request(9, ["orders"])))["orders"]
    assert named["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and named["partitions"] == []
    # delete.topic.enable=false: Kafka's controller drops the marker and sends no leader -2,
    # so the topic stays (what the controller here does with such a marker, DESIGN 4.5).
    kept = await meta(store, 12, request(12, ["orders"]), config=ControllerConfig(delete_topic_enable=False))
    assert by_name(kept)["orders"]["error_code"] == 0


async def test_duplicates_and_a_huge_list_are_answered():
    # Kafka (high confidence): the requested names are a set (one entry per name); any number
    # of names is answered, each on its own. 20 000 names here, all but one unknown.
    store = await twin()
    dup = await meta(store, 12, request(12, ["orders", "orders", "nope", "nope"]))
    assert sorted(t["name"] for t in dup["topics"]) == ["nope", "orders"]
    names = [f"missing-{i}" for i in range(20_000)] + ["orders"]
    start = time.monotonic()
    big = by_name(await meta(store, 12, request(12, names)))
    assert time.monotonic() - start < 10
    assert len(big) == len(names) and big["orders"]["error_code"] == 0
    assert all(t["error_code"] == 3 for n, t in big.items() if n != "orders")


# ---- topics: bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("version", [10, 11])
async def test_v10_v11_null_name_or_a_topic_id_is_invalid_request(version):
    # Kafka 3.0+ (medium-high confidence: KAFKA-12701's check in handleTopicMetadataRequest):
    # v10-11 define topic ids but cannot look topics up by them; a null name or a non-zero id
    # there throws InvalidRequestException, answered with MetadataRequest.getErrorResponse:
    # every topic INVALID_REQUEST (a null name as ""), its id as sent, no brokers. Connection kept.
    store = await twin()
    some_id = uuid.uuid4()
    for topics in ([{"name": None, "topic_id": ZERO}], [{"name": "orders", "topic_id": some_id}]):
        body = {**request(version, []), "topics": topics}
        (answer,) = (await meta(store, version, body))["topics"]
        assert answer["error_code"] == ErrorCode.INVALID_REQUEST
        assert answer["name"] == (topics[0]["name"] or "") and answer["topic_id"] == topics[0]["topic_id"]


async def with_topic_id(store, name: str) -> uuid.UUID:
    """The topic's znode rewritten as Kafka 2.8+ writes it: version 3 with a topic_id."""
    topic_id = uuid.uuid4()
    doc = json.loads((await store.get(paths.topic(name)))[0])
    doc.update(version=3, topic_id=base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("="))
    await store.set(paths.topic(name), json.dumps(doc).encode())
    return topic_id


class Principal:
    """A session on no named listener, authenticated as User:ops."""

    listener = None
    host = "10.0.0.9"

    def current_principal(self) -> str:
        return "User:ops"


async def test_v12_topics_by_id_are_looked_up_in_the_topic_znodes():
    # Kafka 3.1+ (high confidence, handleTopicMetadataRequest): ids are resolved to names
    # (Kafka 2.8+ topic znodes carry them); an unknown id is UNKNOWN_TOPIC_ID with a null name,
    # listed first; when any id is given the names in the request are not looked at; a topic
    # the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED with a null name and its id
    # ("topic IDs are not considered sensitive"). v10-11 and name lookups answer the id too.
    store = await twin()
    orders = await with_topic_id(store, "orders")
    offsets = await with_topic_id(store, "__consumer_offsets")
    unknown = uuid.uuid4()
    body = {**request(12, []), "topics": [{"name": None, "topic_id": orders}, {"name": None, "topic_id": unknown},
                                           {"name": "__transaction_state", "topic_id": ZERO}]}
    first, second = (await meta(store, 12, body))["topics"]
    assert (first["error_code"], first["name"], first["topic_id"]) == (ErrorCode.UNKNOWN_TOPIC_ID, None, unknown)
    assert (second["error_code"], second["name"], second["topic_id"]) == (0, "orders", orders)
    assert [p["partition_index"] for p in second["partitions"]] == [0, 1, 2]
    by_names = by_name(await meta(store, 10, request(10, ["orders", "__transaction_state"])))
    assert by_names["orders"]["topic_id"] == orders and by_names["__transaction_state"]["topic_id"] == ZERO

    config = ControllerConfig()
    ctx = ctx_of(store, config)
    ctx.authorizer = FixedAcls(*grant(topic_resource("orders"), acl.DESCRIBE))
    token = SESSION.set(Principal())
    try:
        header = {"request_api_key": 3, "request_api_version": 12, "correlation_id": 1, "client_id": "probe"}
        answer = await AdminHandler(ctx).handle(header, {**request(12, []), "topics": [
            {"name": None, "topic_id": offsets}, {"name": None, "topic_id": orders}]})
    finally:
        SESSION.reset(token)
    assert [(t["error_code"], t["name"], t["topic_id"]) for t in answer["topics"]] == [
        (0, "orders", orders), (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, offsets)]


def test_a_null_name_before_v10_does_not_decode():
    # Kafka (high confidence): the name is not nullable before v10, the request does not parse
    # and the SocketServer closes the connection; the codec refuses it alike (DecodeError), on
    # which the listener closes the connection (controller.shell.listener step 5).
    body = struct.pack(">ih", 1, -1)  # one topic, name length -1
    head = struct.pack(">hhih", 3, 1, 1, 5) + b"probe"
    with pytest.raises(DecodeError):
        protocol.parse_request(struct.pack(">i", len(head) + len(body)) + head + body)


# ---- partitions ------------------------------------------------------------------------------


async def test_v0_without_a_live_leader_still_lists_only_live_replicas():
    # Kafka 2.4+ (high confidence, getPartitionMetadata): replicas and ISR are filtered to live
    # brokers for v0 (errorUnavailableEndpoints) before the leader is looked at, so a partition
    # with no live leader shows LEADER_NOT_AVAILABLE, leader -1 and only live replicas in v0.
    # v1+ list every replica and the ISR as the state has it.
    store = await twin(topics={"t": {0: [9, 1], 1: [1, 2]}})
    (p0, _) = by_name(await meta(store, 0, request(0, ["t"])))["t"]["partitions"]
    assert (p0["error_code"], p0["leader_id"], p0["replica_nodes"], p0["isr_nodes"]) == (5, -1, [1], [1])
    (p0, _) = by_name(await meta(store, 7, request(7, ["t"])))["t"]["partitions"]
    assert (p0["error_code"], p0["leader_id"], p0["replica_nodes"], p0["isr_nodes"]) == (5, -1, [9, 1], [9, 1])
    assert p0["leader_epoch"] == 5 and p0["offline_replicas"] == [9]


async def test_missing_or_malformed_states_answer_leader_not_available_per_partition():
    # A partition with no state znode is not in a Kafka broker's cache at all (the controller
    # sends no UpdateMetadata for a NewPartition); listing it with LEADER_NOT_AVAILABLE, leader
    # -1, is what clients retry on (medium confidence that this is the best match; it is
    # DESIGN's choice). Malformed states alike, and never the whole request.
    store = await twin(topics={"t": {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}})
    await store.delete(paths.partition_state("t", 0))
    await store.set(paths.partition_state("t", 1), b"[]")
    await store.set(paths.partition_state("t", 2), b'{"version":1,"leader":"x","isr":[1]}')
    parts = by_name(await meta(store, 12, request(12, ["t"])))["t"]["partitions"]
    got = [(p["partition_index"], p["error_code"], p["leader_id"], p["replica_nodes"]) for p in parts]
    assert got == [(0, 5, -1, [1, 2]), (1, 5, -1, [2, 3]), (2, 5, -1, [3, 1]), (3, 0, 1, [1, 3])]


# ---- nodes and the controller ----------------------------------------------------------------


async def test_controller_id_names_a_listed_node_or_minus_one():
    # What clients do with controller_id: the Java AdminClient looks the id up among the nodes
    # (Cluster.controller(), null when absent: it waits and asks again); kafka-python's admin
    # retries on -1 but connects to any other id and fails when it is not among the nodes. So an
    # active instance that is not listed (its registration not written yet, or it has no
    # endpoint on the request's listener) is answered as "no controller yet": -1 (high
    # confidence this is what a Kafka client can use; Kafka's ZooKeeper-mode controller is
    # always a live broker with the request's listener, so Kafka never meets the case).
    store = await twin()
    await store.create(paths.CONTROLLER, b'{"version":1,"brokerid":101,"timestamp":"1"}')
    assert (await meta(store, 1, request(1, [])))["controller_id"] == -1
    await register_controller(store, 101, {"PLAINTEXT": ("10.0.0.1", 9190), "SASL_SSL": ("10.0.0.1", 9193)})
    await register_controller(store, 102, {"PLAINTEXT": ("10.0.0.2", 9190)})
    body = await meta(store, 1, request(1, []))
    nodes = {b["node_id"]: (b["host"], b["port"]) for b in body["brokers"]}
    assert body["controller_id"] == 101 and nodes[101] == ("10.0.0.1", 9190) and nodes[102] == ("10.0.0.2", 9190)


async def test_nodes_on_a_named_listener_are_those_having_it():
    # Kafka (high confidence): the nodes are listed at the endpoint of the listener the request
    # came on; a node without that listener is left out (getAliveEndpoints). An instance whose
    # registration names its listeners but not this one was listed at its first listener's
    # address - another protocol, which the client would fail to speak. The brokers, registered
    # with a PLAINTEXT listener only, are left out on SASL_SSL.
    store = await twin()
    await store.create(paths.CONTROLLER, b'{"version":1,"brokerid":102,"timestamp":"1"}')
    await register_controller(store, 101, {"PLAINTEXT": ("10.0.0.1", 9190), "SASL_SSL": ("10.0.0.1", 9193)})
    await register_controller(store, 102, {"PLAINTEXT": ("10.0.0.2", 9190)})
    body = await meta(store, 12, request(12, []), session=Listening("SASL_SSL"))
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [(101, "10.0.0.1", 9193)]
    assert body["controller_id"] == -1  # 102 is active but cannot be reached on SASL_SSL
    plain = await meta(store, 12, request(12, []), session=Listening("PLAINTEXT"))
    assert {b["node_id"] for b in plain["brokers"]} == {1, 2, 3, 101, 102} and plain["controller_id"] == 102


async def test_twin_controller_metadata_names_the_registered_active_instance():
    # The twin cluster with an active controller: /controller is written by the election, the
    # listener registration by the daemon (not run here), so until it is written the instance
    # is not a node and controller_id is -1; once written, it is both.
    h = await cluster(topics=("t:3:2:64KiB",))
    try:
        ctx = context(h)
        before = await handle_metadata(ctx, 12, request(12, ["t"]))
        assert before["controller_id"] == -1 and 101 not in {b["node_id"] for b in before["brokers"]}
        await register_controller(h.admin, 101, {"PLAINTEXT": ("10.0.0.1", 9190)})
        after = await handle_metadata(ctx, 12, request(12, ["t"]))
        assert after["controller_id"] == 101 and 101 in {b["node_id"] for b in after["brokers"]}
        (t,) = after["topics"]
        assert t["error_code"] == 0 and len(t["partitions"]) == 3
        assert all(p["error_code"] == 0 and p["leader_id"] in p["isr_nodes"] for p in t["partitions"])
    finally:
        await h.close()


async def test_partitions_on_a_listener_the_brokers_are_not_listed_on():
    # The brokers, registered with a PLAINTEXT listener only, are left out on SASL_SSL; they
    # are still alive. Kafka (medium-high confidence, getPartitionMetadata): offline_replicas are the
    # replicas on dead brokers whatever the listener; a live leader without the request's
    # listener is leader -1 with LISTENER_NOT_FOUND from v6 (errorUnavailableListeners), else
    # LEADER_NOT_AVAILABLE; v0 keeps only replicas reachable on the listener.
    store = await twin()
    sasl = Listening("SASL_SSL")
    p = {x["partition_index"]: x for x in by_name(await meta(store, 12, request(12, ["orders"]), sasl))["orders"]["partitions"]}
    assert (p[1]["error_code"], p[1]["leader_id"], p[1]["offline_replicas"]) == (72, -1, [])
    assert p[2]["offline_replicas"] == [9] and p[1]["replica_nodes"] == [2, 3] and p[1]["isr_nodes"] == [2, 3]
    p5 = by_name(await meta(store, 5, request(5, ["orders"]), sasl))["orders"]["partitions"][1]
    assert (p5["error_code"], p5["leader_id"], p5["offline_replicas"]) == (5, -1, [])
    p0 = by_name(await meta(store, 0, request(0, ["orders"]), sasl))["orders"]["partitions"][1]
    assert (p0["error_code"], p0["leader_id"], p0["replica_nodes"]) == (5, -1, [])


def registration(broker_id: int, endpoints: dict, protocols: dict | None = None) -> bytes:
    """A Kafka 2.x registration (v4) with named listeners; ``host``/``port`` are the PLAINTEXT
    listener's, else null and -1 (Kafka's rule)."""
    plain = endpoints.get("PLAINTEXT")
    doc = {"version": 4, "host": plain[0] if plain else None, "port": plain[1] if plain else -1,
           "jmx_port": -1, "timestamp": "1700000000000", "rack": f"r{broker_id}",
           "endpoints": [f"{name}://{h}:{p}" for name, (h, p) in endpoints.items()]}
    if protocols is not None:
        doc["listener_security_protocol_map"] = protocols
    return json.dumps(doc).encode()


async def test_brokers_are_listed_at_the_endpoint_of_the_requests_listener():
    # Kafka (high confidence, MetadataCache.getAliveEndpoints): each broker at its endpoint of
    # the listener the request came on, by listener name; one without it is left out, and a
    # partition it leads answers LISTENER_NOT_FOUND (v6+). A broker registered without a
    # PLAINTEXT listener is alive all the same: no offline replica on it, on any listener.
    store = await twin(brokers=())
    both = {"PLAINTEXT": ("10.1.0.1", 9092), "SASL_SSL": ("10.1.0.1", 9094)}
    protocols = {"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL"}
    await store.create("/brokers/ids/1", registration(1, both, protocols), makepath=True)
    await store.create("/brokers/ids/2", registration(2, {"SASL_SSL": ("10.1.0.2", 9094)}, {"SASL_SSL": "SASL_SSL"}),
                       makepath=True)
    await store.create("/brokers/ids/3", registration(3, {"PLAINTEXT": ("10.1.0.3", 9092)}), makepath=True)
    sasl = await meta(store, 12, request(12, ["orders"]), session=Listening("SASL_SSL"))
    assert [(b["node_id"], b["host"], b["port"], b["rack"]) for b in sasl["brokers"]] == [
        (1, "10.1.0.1", 9094, "r1"), (2, "10.1.0.2", 9094, "r2")]
    p = {x["partition_index"]: x for x in by_name(sasl)["orders"]["partitions"]}
    assert (p[0]["error_code"], p[0]["leader_id"], p[0]["offline_replicas"]) == (0, 1, [])
    assert (p[1]["error_code"], p[1]["leader_id"], p[1]["offline_replicas"]) == (0, 2, [])
    assert (p[2]["error_code"], p[2]["leader_id"], p[2]["offline_replicas"]) == (72, -1, [9])
    plain = await meta(store, 12, request(12, ["orders"]), session=Listening("PLAINTEXT"))
    assert [(b["node_id"], b["host"], b["port"]) for b in plain["brokers"]] == [(1, "10.1.0.1", 9092), (3, "10.1.0.3", 9092)]
    p = {x["partition_index"]: x for x in by_name(plain)["orders"]["partitions"]}
    assert (p[1]["error_code"], p[1]["leader_id"], p[1]["offline_replicas"]) == (72, -1, [])
    assert (p[2]["error_code"], p[2]["leader_id"]) == (0, 3)
