"""The planner service's ZooKeeper feed against real ZooKeeper, in-process (no Spark): states
read in bulk on large clusters, and a model that catches up after its server crashes."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from planner_service.service import Options, PlannerService

pytestmark = pytest.mark.zk


def _write_cluster(zk: KazooClient) -> None:
    for b in (1, 2, 3):
        reg = {"version": 4, "host": "127.0.0.1", "port": 1, "jmx_port": -1, "timestamp": "1",
               "endpoints": ["PLAINTEXT://127.0.0.1:1"]}
        zk.create(f"/brokers/ids/{b}", json.dumps(reg).encode(), makepath=True)
    parts = {"0": [1, 2], "1": [2, 3], "2": [3, 1]}
    zk.create("/brokers/topics/orders", json.dumps({"version": 2, "partitions": parts}).encode(), makepath=True)
    for p, r in parts.items():
        zk.create(f"/brokers/topics/orders/partitions/{p}/state", _state(r[0], r), makepath=True)


def _state(leader: int, isr: list[int]) -> bytes:
    return json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}).encode()


# The test's own writes while a server of the ensemble is down or coming back: killing a member
# drops its clients, and all of them when it led the quorum (the others hold an election), so a
# request in flight fails with ConnectionLoss; it is sent again once kazoo has reconnected.
_RECONNECT = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=60)


def _create(zk: KazooClient, path: str, data: bytes) -> None:
    """Create ``path``, through connection losses."""
    try:
        _RECONNECT.copy()(zk.create, path, data)
    except NodeExistsError:
        # A try cut off by the connection loss had landed (the path is this test's own).
        assert zk.get(path)[0] == data, path


def _delete(zk: KazooClient, path: str) -> None:
    """Delete ``path`` (which this test created), through connection losses."""
    try:
        _RECONNECT.copy()(zk.delete, path)
    except NoNodeError:
        pass  # a try cut off by the connection loss had landed


async def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _leaders(svc: PlannerService) -> dict[int, int]:
    return {x["broker"]: x["leaders"] for x in svc.model.load()}


async def test_states_in_bulk_above_the_watch_limit(zk_hosts):
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, sizes_interval_s=0.3, state_watch_limit=2))
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.feed.ready, 20, "the model")
        assert svc.feed.bulk_states and _leaders(svc) == {1: 1, 2: 1, 3: 1}
        zk.set("/brokers/topics/orders/partitions/0/state", _state(2, [2, 1]))  # no watch on it: the poll sees it
        await _until(lambda: _leaders(svc) == {1: 0, 2: 2, 3: 1}, 10, "the changed leader")
    finally:
        await svc.stop()
        zk.stop()
        zk.close()


async def test_model_catches_up_after_its_zookeeper_server_crashes(zk_ensemble):
    chroot = f"/svc_{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zk_ensemble.connect_string, timeout=30)
    zk.start(timeout=30)
    zk.ensure_path(chroot)
    hosts = zk_ensemble.connect_string + chroot
    writer = KazooClient(hosts=hosts, timeout=30)
    writer.start(timeout=30)
    svc = PlannerService(Options(zookeeper=hosts, port=0, sizes=False, session_timeout_s=30))
    loop = asyncio.get_running_loop()
    try:
        _write_cluster(writer)
        await svc.start()
        await _until(lambda: svc.feed.ready and svc.model.n_partitions == 3, 20, "the model")
        port = svc.feed.store._client._connection._socket.getpeername()[1]
        member = next(m.id for m in zk_ensemble.members if m.client_port == port)
        await loop.run_in_executor(None, zk_ensemble.kill_member, member)
        try:
            # Written while the service is cut off: no watch can report it.
            await loop.run_in_executor(None, lambda: _create(writer, "/brokers/topics/fresh", json.dumps(
                {"version": 2, "partitions": {"0": [1, 3]}}).encode()))
            await _until(lambda: "fresh" in svc.model.topics, 60, "the topic created during the outage")
        finally:
            await loop.run_in_executor(None, zk_ensemble.restart_member, member)
        assert svc.feed.ready and svc.feed.connected and svc.feed.syncs >= 2
        assert svc.model.n_partitions == 4
        await loop.run_in_executor(None, lambda: _delete(writer, "/brokers/ids/2"))  # watches work again
        await _until(lambda: sorted(svc.model.brokers) == [1, 3], 20, "broker 2 gone")
    finally:
        await svc.stop()
        writer.stop()
        writer.close()
        _RECONNECT.copy()(zk.delete, chroot, recursive=True)
        zk.stop()
        zk.close()


async def test_a_refusal_to_execute_rests_on_a_fresh_read_not_on_a_trailing_watch(zk_hosts):
    """CI saw a 409 "reassignment running (0 partitions moving, /admin/reassign_partitions
    pending)" just after kafka-reassign had seen its reassignment end: the feed's watch on the
    deleted znode had not fired yet. The refusal reads the cluster's markers again first."""
    from znodes.values import Assignment

    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False))
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.feed.ready, 20, "the model")
        assert await svc.refusal() is None
        # The model trails ZooKeeper: it still holds a request znode and a move that have ended.
        svc.model.set_request_pending(True)
        svc.model.set_topic("orders", {**svc.model.topics["orders"], 0: Assignment((1, 2, 3), adding=(3,))})
        assert "0 partitions" not in svc._conflict() and svc.model.reassignment_running()
        assert await svc.refusal() is None
        assert not svc.model.request_pending and svc.model.moving_partitions() == []
        # What ZooKeeper holds is refused, named as before, once the feed has heard of it.
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": []}).encode(), makepath=True)
        await _until(lambda: svc.model.request_pending, 10, "the request znode")
        why = await svc.refusal()
        assert why and "/admin/reassign_partitions pending" in why, why
    finally:
        await svc.stop()
        zk.stop()
        zk.close()
