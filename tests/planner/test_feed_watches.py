"""The planner service's ZooKeeper feed keeps every partition state's watch, against real
ZooKeeper: a controller writes a move's topic znode and its partition state in one multi-op
(docs/DESIGN.md 4), so both watch events often reach the feed in one batch. The feed used to
skip a state event whose topic changed in the same batch; the topic's read reads only new
partitions' states, so that state was neither read nor watched again, and the model kept its
leader and ISR until the next full read (a demotion then proposed elections for partitions the
broker no longer led: tests/planner/test_demote_e2e.py failed in CI and in a fresh clone)."""

from __future__ import annotations

import asyncio
import json

import pytest
from kazoo.client import KazooClient

from planner_service.model import ClusterModel
from planner_service.zk_feed import ZkFeed
from znodes.store import connect

pytestmark = pytest.mark.zk

TOPIC = "/brokers/topics/orders"
STATE = "/brokers/topics/orders/partitions/0/state"
EVENT_WAIT_S = 10  # a watch event arrives in milliseconds; this only bounds a failing run


def _topic(parts: dict) -> bytes:
    return json.dumps({"version": 2, "partitions": parts}).encode()


def _state(leader: int, isr: list[int], epoch: int) -> bytes:
    return json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": epoch,
                       "isr": isr}).encode()


async def _event(feed: ZkFeed, what: str):
    try:
        return await asyncio.wait_for(feed.store.events.get(), EVENT_WAIT_S)
    except TimeoutError:
        raise AssertionError(f"no watch event within {EVENT_WAIT_S}s for {what}") from None


async def test_a_state_changed_in_the_batch_of_its_topic_is_read_and_watched_again(zk_hosts):
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    model = ClusterModel()
    feed = ZkFeed(zk_hosts, model, on_change=lambda: None)
    try:
        for b in (1, 2):
            reg = {"version": 4, "host": "127.0.0.1", "port": 1, "jmx_port": -1, "timestamp": "1",
                   "endpoints": ["PLAINTEXT://127.0.0.1:1"]}
            zk.create(f"/brokers/ids/{b}", json.dumps(reg).encode(), makepath=True)
        zk.create(TOPIC, _topic({"0": [1, 2]}), makepath=True)
        zk.create(STATE, _state(1, [1, 2], 0), makepath=True)
        feed.store = await connect(zk_hosts)
        await feed.resync()  # everything read and watched, as the feed starts
        assert model.states["orders"][0].leader == 1

        # A reorder ends as the controller ends it: the topic znode and the state in one multi-op,
        # here with a new leader so that a skipped state read shows in the model at once.
        tx = zk.transaction()
        tx.set_data(TOPIC, _topic({"0": [2, 1]}))
        tx.set_data(STATE, _state(2, [2, 1], 1))
        assert all(not isinstance(r, Exception) for r in tx.commit())
        batch = [await _event(feed, "the multi-op"), await _event(feed, "the multi-op")]
        assert sorted(e.path for e in batch) == [TOPIC, STATE]
        await feed._apply(batch)  # as ZkFeed._follow applies every event queued at once
        assert list(model.topics["orders"][0].replicas) == [2, 1]
        assert (model.states["orders"][0].leader, list(model.states["orders"][0].isr)) == (2, [2, 1])

        # The state's watch is armed again: a later election alone is heard and applied.
        zk.set(STATE, _state(1, [2, 1], 2))
        event = await _event(feed, "the election after the multi-op (the state's watch was lost)")
        assert event.path == STATE
        await feed._apply([event])
        assert model.states["orders"][0].leader == 1
    finally:
        if feed.store is not None:
            await feed.store.close()
        zk.stop()
        zk.close()
