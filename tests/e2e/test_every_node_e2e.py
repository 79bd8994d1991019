"""Issue 23 item 5, end to end: every request the client matrix's clients send to every node, or
to any node, reaches every node Metadata lists - both controller instances and the simulated
brokers - and gets the answer a Kafka node gives, never an unsupported API.

What each client sends to every node (their admin code, unchanged):

- all of them: ApiVersions and Metadata to each node they bootstrap from or connect to
  (bootstrapped here from every node in turn; ``kcat -L`` is nothing else);
- kafka-python: ``describe_log_dirs()`` (DescribeLogDirs to every node), ``list_groups()``
  (ListGroups to every node), ``list_transactions()`` (ListTransactions to every node);
  ``describe_groups(..., group_coordinator_id=N)`` and ``describe_configs`` of BROKER N
  (DescribeGroups, DescribeConfigs to node N);
- aiokafka: ``list_consumer_groups()`` (ListGroups to every node), ``describe_configs`` of
  BROKER N and ``describe_consumer_groups(..., group_coordinator_id=N)`` (to node N);
- confluent-kafka (librdkafka): ``list_consumer_groups()`` (ListGroups to every node, errors
  per node reported, not raised), ``describe_configs`` of BROKER N (to node N).

Everything is real: ZooKeeper (a chroot for this module), two ``reassignd controller``
processes, ``reassignd sim`` brokers. Kafka's answers from a node holding nothing: no log
directories, no groups, no transactions, NOT_COORDINATOR for a group; its own configs for a
BROKER resource naming it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid

import pytest

from tests.e2e.processes import running_cluster, wait_for
from tests.fixtures.zk import _delete_tree

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(240)]

CONTROLLER_IDS = (101, 102)
BROKERS = (1, 2, 3)
NODES = set(CONTROLLER_IDS) | set(BROKERS)
TOPIC = "orders"
SIM_ARGS = ["--brokers", "3", "--topics", f"{TOPIC}:4:2:1MiB", "--bandwidth", "1KiB", "--produce-rate", "0"]
TIMEOUT_S = 20
GROUP = "every-node-app"
NOT_COORDINATOR = 16
WAIT_S = 30


def kcat_listing(address: str) -> subprocess.CompletedProcess:
    """``kcat -L -J`` bootstrapped from one node: ApiVersions and Metadata to it."""
    return subprocess.run(["kcat", "-L", "-J", "-b", address, "-m", str(TIMEOUT_S)], capture_output=True, text=True,
                          timeout=TIMEOUT_S + 10)


def nodes_listed(address: str) -> set[int] | None:
    out = kcat_listing(address)
    return {b["id"] for b in json.loads(out.stdout)["brokers"]} if out.returncode == 0 else None


@pytest.fixture(scope="module")
def cluster(zk_server, _zk_admin, tmp_path_factory):
    chroot = f"/t_{uuid.uuid4().hex[:10]}"
    _zk_admin.create(chroot)
    try:
        with running_cluster(f"{zk_server.connect_string}{chroot}", tmp_path_factory.mktemp("every_node"),
                             sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
            # A simulated broker learns the controllers' registrations through its watches, a
            # moment after they are written: wait until every node lists every node.
            wait_for(lambda: all(nodes_listed(a) == NODES for a in addresses(c).values()), WAIT_S,
                     "every node's Metadata listing every node")
            yield c
    finally:
        _delete_tree(_zk_admin, chroot)


def addresses(c) -> dict[int, str]:
    """Every node Metadata lists: node id -> host:port."""
    return {**c.brokers, **c.listeners}


def standby(c) -> str:
    active = c.active_controller()
    return c.listeners[next(cid for cid in CONTROLLER_IDS if cid != active)]


def hosted(c) -> dict[int, set[tuple[str, int]]]:
    """Broker id -> the partitions ZooKeeper assigns it."""
    out: dict[int, set] = {b: set() for b in BROKERS}
    for tp, brokers in c.hosted().items():
        for b in brokers:
            out[b].add(tp)
    return out


def test_kcat_lists_every_node_from_every_node(cluster):
    for node, address in sorted(addresses(cluster).items()):
        out = kcat_listing(address)
        assert out.returncode == 0, (node, out.stderr[-2000:])
        listing = json.loads(out.stdout)
        assert {b["id"] for b in listing["brokers"]} == NODES, node
        assert listing["controllerid"] == cluster.active_controller(), node


def test_kafka_python_every_node(cluster):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    for node, address in sorted(addresses(cluster).items()):
        admin = KafkaAdminClient(bootstrap_servers=address, client_id="every-node", request_timeout_ms=TIMEOUT_S * 1000)
        try:
            assert TOPIC in admin.list_topics(), node
        finally:
            admin.close()
    admin = KafkaAdminClient(bootstrap_servers=standby(cluster), client_id="every-node",
                             request_timeout_ms=TIMEOUT_S * 1000)
    try:
        assert {b.get("broker_id", b.get("node_id")) for b in admin.describe_cluster()["brokers"]} == NODES
        # DescribeLogDirs to every node: the controllers hold no directory, each simulated broker
        # its one, with the partitions ZooKeeper assigns it.
        dirs = {r["broker"]: r["log_dirs"] for r in admin.describe_log_dirs()}
        assert set(dirs) == NODES
        for cid in CONTROLLER_IDS:
            assert dirs[cid] == [], cid
        for broker, partitions in hosted(cluster).items():
            (only,) = dirs[broker]
            assert only["error_code"] == 0
            assert {(t["name"], p["partition_index"]) for t in only["topics"] for p in t["partitions"]} == partitions
        assert admin.list_groups() == []
        assert admin.list_transactions() == {node: [] for node in NODES}
        for node in sorted(NODES):
            described = admin.describe_groups([GROUP], group_coordinator_id=node)
            assert "NotCoordinator" in described[GROUP]["error"], (node, described)
            configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(node))],
                                             config_filter="all")
            assert configs["broker"][str(node)]["broker.id"]["value"] == str(node), node
    finally:
        admin.close()


def test_aiokafka_every_node(cluster):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run(bootstrap: str, steps):
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="every-node",
                                    request_timeout_ms=TIMEOUT_S * 1000)
        await admin.start()
        try:
            return await asyncio.wait_for(steps(admin), TIMEOUT_S * 3)
        finally:
            await admin.close()

    async def bootstrap_only(admin):
        return await admin.list_topics()

    for node, address in sorted(addresses(cluster).items()):
        assert TOPIC in asyncio.run(run(address, bootstrap_only)), node

    async def every_node(admin):
        groups = await admin.list_consumer_groups()
        configs, described = {}, {}
        for node in sorted(NODES):
            (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(node))])
            for error_code, message, _type, name, entries in response.resources:
                assert error_code == 0, (node, message)
                configs[int(name)] = {entry[0]: entry[1] for entry in entries}
            (response,) = await admin.describe_consumer_groups([GROUP], group_coordinator_id=node)
            described[node] = [(g[0], g[1]) for g in response.groups]
        return groups, configs, described

    groups, configs, described = asyncio.run(run(standby(cluster), every_node))
    assert groups == []
    assert {node: c["broker.id"] for node, c in configs.items()} == {node: str(node) for node in NODES}
    assert described == {node: [(NOT_COORDINATOR, GROUP)] for node in NODES}


def test_confluent_kafka_every_node(cluster):
    from confluent_kafka.admin import AdminClient, ConfigResource

    for node, address in sorted(addresses(cluster).items()):
        admin = AdminClient({"bootstrap.servers": address, "client.id": "every-node"})
        assert TOPIC in admin.list_topics(timeout=TIMEOUT_S).topics, node
    admin = AdminClient({"bootstrap.servers": standby(cluster), "client.id": "every-node"})
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    # librdkafka reports a node's failure in errors instead of raising.
    assert (listed.valid, listed.errors) == ([], [])
    for node in sorted(NODES):
        resource = ConfigResource("broker", str(node))
        entries = admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
        assert entries["broker.id"].value == str(node), node
