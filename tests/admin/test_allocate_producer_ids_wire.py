"""AllocateProducerIds (67) over real sockets: in-process controllers on a real ZooKeeper
(tests.admin.cluster), as a Kafka 3.0+ broker asks for its producer id blocks
(controller.shell.admin.allocate_producer_ids, znodes.producer_ids)."""

from __future__ import annotations

import asyncio
import json

import pytest

from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

KEY = ApiKey.ALLOCATE_PRODUCER_IDS
PATH = "/latest_producer_id_block"
TOPICS = {"orders": {0: [1, 2]}}


def _block(c: AdminCluster):
    return json.loads(c.kafka.zk.get(PATH)[0]) if c.kafka.zk.exists(PATH) else None


async def test_blocks_are_handed_out_one_after_another_and_written(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        standby = c.standby(active)
        epochs = {b: c.kafka.zk.get(f"/brokers/ids/{b}")[1].czxid for b in (1, 2, 3)}
        if c.kafka.zk.exists(PATH):
            c.kafka.zk.delete(PATH)

        assert await c.call(standby, KEY, 0, {"broker_id": 1, "broker_epoch": epochs[1]}) == {
            "throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "producer_id_start": 0, "producer_id_len": 0}
        assert (await c.call(active, KEY, 0, {"broker_id": 9, "broker_epoch": 1}))["error_code"] == \
            ErrorCode.BROKER_ID_NOT_REGISTERED
        assert (await c.call(active, KEY, 0, {"broker_id": 1, "broker_epoch": epochs[1] - 1}))["error_code"] == \
            ErrorCode.STALE_BROKER_EPOCH
        assert _block(c) is None  # nothing written by a refusal

        first = await c.call(active, KEY, 0, {"broker_id": 1, "broker_epoch": epochs[1]})
        assert (first["error_code"], first["producer_id_start"], first["producer_id_len"]) == (ErrorCode.NONE, 0, 1000)
        assert _block(c) == {"version": 1, "broker": 1, "block_start": "0", "block_end": "999"}
        # Brokers asking at once, on one connection each: disjoint blocks, none handed out twice.
        answers = await asyncio.gather(*(c.call(active, KEY, 0, {"broker_id": b, "broker_epoch": epochs[b]})
                                         for b in (1, 2, 3, 2, 3)))
        starts = sorted(a["producer_id_start"] for a in answers)
        assert all(a["error_code"] == ErrorCode.NONE for a in answers)
        assert starts == [1000, 2000, 3000, 4000, 5000]
        assert _block(c)["block_end"] == "5999"
        assert c.kafka.zk.get(PATH)[0].startswith(b'{"version":1,')


async def test_a_block_kafka_wrote_is_continued_and_a_broken_znode_is_left_alone(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        epoch = c.kafka.zk.get("/brokers/ids/2")[1].czxid
        kafka = b'{"version":1,"broker":0,"block_start":"12000","block_end":"12999"}'
        if c.kafka.zk.exists(PATH):
            c.kafka.zk.set(PATH, kafka)
        else:
            c.kafka.zk.create(PATH, kafka)
        answer = await c.call(101, KEY, 0, {"broker_id": 2, "broker_epoch": epoch})
        assert (answer["error_code"], answer["producer_id_start"]) == (ErrorCode.NONE, 13000)
        c.kafka.zk.set(PATH, b'{"version":1,"broker":0}')
        answer = await c.call(101, KEY, 0, {"broker_id": 2, "broker_epoch": epoch})
        assert answer["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
        assert c.kafka.zk.get(PATH)[0] == b'{"version":1,"broker":0}'  # not rewritten from 0
