"""A live min.insync.replicas (issue 24 item 4): a topic's min.insync.replicas changed while
its move waits for ISR health reaches the controller through the config change notification
that goes with every config write - IncrementalAlterConfigs to the controller, or another tool
writing /config/topics/T and /config/changes/config_change_<seq> itself - and the waiting move
starts once its partition is healthy under the new value; a config written without a
notification is, as for Kafka's brokers, not news."""

from __future__ import annotations

import asyncio

import pytest

from client.admin import AdminClient
from protocol.config_changes import SET
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPIC = 2
# a-0 and b-0: 2 of 3 replicas in sync, each topic with min.insync.replicas=2: both moves wait.
TOPICS = {"a": {0: [1, 2, 3]}, "b": {0: [1, 2, 3]}, "c": {0: [1, 2, 3]}}
SHORT = {"controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}


def topic_config(c: AdminCluster, topic: str, min_isr: str) -> None:
    c.set_json(f"/config/topics/{topic}", {"version": 1, "config": {"min.insync.replicas": min_isr}})


async def waiting(admin: AdminClient) -> set:
    return set(await admin.waiting_reassignments())


async def until(predicate, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not await predicate():
            await asyncio.sleep(0.05)


async def test_a_changed_min_insync_replicas_starts_the_waiting_move(zk_hosts):
    c = AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS)
    for t in TOPICS:
        c.set_json(f"/brokers/topics/{t}/partitions/0/state", SHORT)
        topic_config(c, t, "2")
    async with c:
        await c.wait_active()
        c.submit({("a", 0): [1, 2, 4], ("b", 0): [1, 2, 4], ("c", 0): [1, 2, 4]})
        host, port = c.addr(101)
        async with AdminClient(f"{host}:{port}") as admin:
            async def all_wait():
                return await waiting(admin) == {("a", 0), ("b", 0), ("c", 0)}

            await until(all_wait)
            # IncrementalAlterConfigs through the controller: a's floor down to 1 (ISR 2 > 1).
            answer = await c.call(101, 44, 1, {"resources": [{
                "resource_type": TOPIC, "resource_name": "a",
                "configs": [{"name": "min.insync.replicas", "config_operation": SET, "value": "1"}]}],
                "validate_only": False})
            assert [r["error_code"] for r in answer["responses"]] == [0]

            async def a_started():
                return ("a", 0) in await admin.list_reassignments()

            await until(a_started)
            assert await waiting(admin) == {("b", 0), ("c", 0)}
            # c's config rewritten by a tool that sends no notification: no news, c waits on.
            topic_config(c, "c", "1")
            # Another tool (kafka-configs.sh --zookeeper): b's config, then its notification.
            topic_config(c, "b", "1")
            c.kafka.zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/b"}',
                              sequence=True)

            async def b_started():
                return ("b", 0) in await admin.list_reassignments()

            await until(b_started)
            assert await waiting(admin) == {("c", 0)}


def test_notifications_name_entities_in_both_versions_and_only_newer_ones_count():
    from controller.shell.config_watch import entity_named, newer
    from znodes.errors import ZnodeFormatError

    path = "/config/changes/config_change_0000000007"
    assert entity_named(path, b'{"version":2,"entity_path":"topics/orders"}') == ("topics", "orders")
    assert entity_named(path, b'{"version":1,"entity_type":"topics","entity_name":"orders"}') == ("topics", "orders")
    assert entity_named(path, b'{"version":2,"entity_path":"brokers/<default>"}') == ("brokers", "<default>")
    with pytest.raises(ZnodeFormatError):
        entity_named(path, b'{"version":2}')
    names = ["config_change_0000000009", "config_change_0000000003", "lock", "config_change_0000000005"]
    assert newer(names, 4) == [(5, "config_change_0000000005"), (9, "config_change_0000000009")]


async def test_the_brokers_cluster_default_min_insync_replicas_holds_and_frees_moves_without_their_own(zk_hosts):
    """``/config/brokers/<default>``'s min.insync.replicas is the floor of a topic without its
    own, over the controller's setting (1 here), as Kafka's brokers take their dynamic cluster
    default over server.properties: set to 2 by IncrementalAlterConfigs of the BROKER resource
    "" (``kafka-configs.sh --entity-type brokers --entity-default``), a move of a partition whose
    ISR is 2 of 3 waits; a topic with its own 1 does not; lowered to 1, the waiting one starts."""
    c = AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS)
    for t in TOPICS:
        c.set_json(f"/brokers/topics/{t}/partitions/0/state", SHORT)
    topic_config(c, "c", "1")
    async with c:
        await c.wait_active()
        host, port = c.addr(101)

        async def set_default(value: str) -> None:
            answer = await c.call(101, 44, 1, {"resources": [{
                "resource_type": 4, "resource_name": "",
                "configs": [{"name": "min.insync.replicas", "config_operation": SET, "value": value}]}],
                "validate_only": False})
            assert [r["error_code"] for r in answer["responses"]] == [0]

        await set_default("2")
        async with AdminClient(f"{host}:{port}") as admin:
            c.submit({("a", 0): [1, 2, 4], ("c", 0): [1, 2, 4]})

            async def c_started():
                return ("c", 0) in await admin.list_reassignments()

            await until(c_started)
            assert await waiting(admin) == {("a", 0)}
            await set_default("1")

            async def a_started():
                return ("a", 0) in await admin.list_reassignments()

            await until(a_started)
