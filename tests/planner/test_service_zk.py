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

from planner_service.clock import now_ms
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


async def test_a_demotion_is_remembered_and_later_plans_may_keep_its_brokers_from_leading(zk_hosts):
    """Cruise Control's recently demoted brokers: an executed demotion's brokers are listed in
    /state from the moment it starts; a plan asked with exclude_recently_demoted_brokers=true
    gives them no leadership; POST /admin drops them; past --demotion-history-retention they
    are forgotten. (The execution's AdminClient finds no controller here: the memory is the
    service's, kept as the execution starts, as Cruise Control keeps it.)"""
    from tests.planner.service_http import http

    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, bootstrap="127.0.0.1:1",
                                 admin_timeout_ms=1000))
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.feed.ready and svc.model.n_partitions == 3, 20, "the model")
        base = f"http://{svc.address}"

        async def call(method, path):
            return await asyncio.to_thread(http, base, method, path)

        assert (await call("GET", "/state"))[1]["recently_demoted_brokers"] == []
        status, body = await call("POST", "/demote_broker?brokerid=2&dryrun=false")
        assert status == 200 and body["execution"]["mode"] == "demote", body
        assert (await call("GET", "/state"))[1]["recently_demoted_brokers"] == [2]
        await _until(lambda: svc.execution.state != "running", 30, "the execution to end")

        def firsts(proposal) -> dict:
            rows = {(t, p): list(a.replicas) for t, parts in svc.model.topics.items() for p, a in parts.items()}
            for e in proposal["reassignment"]["partitions"]:
                rows[(e["topic"], e["partition"])] = e["replicas"]
            return {tp: r[0] for tp, r in rows.items()}

        assert 2 in firsts({"reassignment": {"partitions": []}}).values()  # 2 still leads orders-1
        status, plain = await call("POST", "/rebalance")
        assert status == 200 and plain["proposal"]["report"]["leaders_excluded"] == []
        status, kept = await call("POST", "/rebalance?exclude_recently_demoted_brokers=true")
        assert status == 200 and kept["proposal"]["report"]["leaders_excluded"] == [2], kept
        assert 2 not in firsts(kept["proposal"]).values() and kept["proposal"]["report"]["moves"] == 0
        status, seen = await call("GET", "/proposals?exclude_recently_demoted_brokers=true")
        assert status == 200 and 2 not in firsts(seen).values()
        status, bad = await call("POST", "/rebalance?exclude_recently_demoted_brokers=maybe")
        assert status == 400 and "exclude_recently_demoted_brokers" in bad["error"]["message"]

        status, body = await call("POST", "/admin?drop_recently_demoted_brokers=2,3")
        assert status == 200 and body == {"dropped": [2], "recently_demoted_brokers": []}, body
        status, again = await call("POST", "/rebalance?exclude_recently_demoted_brokers=true")
        assert again["proposal"]["report"]["leaders_excluded"] == []
        assert (await call("POST", "/admin"))[0] == 400

        # Past the retention a demotion is forgotten.
        svc.demoted_at[3] = now_ms() - int(svc.opts.demotion_retention_s * 1000) - 1
        svc.demoted_at[1] = now_ms()
        assert svc.recently_demoted() == [1] and 3 not in svc.demoted_at
    finally:
        await svc.stop()
        zk.stop()
        zk.close()
