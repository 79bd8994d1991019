"""A log directory fails under the active controller, on a real ZooKeeper with simulated brokers
(controller.core.log_dir_failure through the shell: the children watch of
/log_dir_event_notification, the probe's LeaderAndIsr, the brokers' KAFKA_STORAGE_ERROR answers
through the dispatcher): the partitions the broker led there get leaders from the online ISR,
its replicas there leave every ISR, the notification is deleted; the broker restarts and its
replicas come back into the ISRs. Then, on the ZooKeeper twin, the reads' edge cases:
notifications written while no controller ran, malformed ones, one naming a broker that is down."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.core.config import ControllerConfig
from controller.shell.active import ActiveController
from controller.shell.election import campaign
from controller.shell.inbox import Inbox
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.inprocess import InProcessTransport
from sim.topics import parse_topic_spec
from znodes import paths
from znodes import store as zstore

LOG_DIRS = ("/data/d1", "/data/d2")
WAIT_S = 15.0  # real seconds for the controller to act (a loaded machine; it takes a few ms)
TICK_S = 0.25


async def _until(check, what: str, tick=None):
    loop = asyncio.get_running_loop()
    end = loop.time() + WAIT_S
    while True:
        found = await check()
        if found:
            return found
        if loop.time() > end:
            raise AssertionError(f"not within {WAIT_S}s: {what}")
        if tick is not None:
            await tick()
        await asyncio.sleep(0.02)


@pytest.mark.zk
async def test_a_failed_directory_moves_its_leaders_and_a_restart_brings_its_replicas_back(zk_hosts):
    clock = ManualClock()
    settings = ClusterSettings(brokers=3, broker=BrokerConfig(log_dirs=LOG_DIRS, replica_lag_time_max=3.0))
    cluster = SimulatedCluster(lambda: zstore.connect(zk_hosts), settings, clock=clock, serve=False)
    await cluster.start([parse_topic_spec("t:6:3:64KiB")])
    store = await zstore.connect(zk_hosts)
    admin = await zstore.connect(zk_hosts)
    inbox = Inbox(store)
    run = None
    try:
        won = await campaign(store, inbox, 101)
        active = ActiveController(store, inbox, controller_id=101, epoch=won.epoch, epoch_zkversion=won.epoch_zkversion,
                                  transport=InProcessTransport(cluster), config=ControllerConfig())
        run = asyncio.create_task(active.run())

        async def states():
            return {p: json.loads((await admin.get(paths.partition_state("t", p)))[0]) for p in range(6)}

        async def tick():
            clock.advance(TICK_S)
            await cluster.advance()

        await _until(lambda: _true(active.state is not None and active.state.states), "the controller loaded")
        # Broker 1's directory holding a partition it leads fails.
        core = cluster.brokers[1].core
        held = await states()
        led = sorted((r for r in core.replicas() if held[r.partition]["leader"] == 1), key=lambda r: r.partition)
        assert led, "broker 1 leads nothing"
        directory = led[0].log_dir
        before = held  # read before the failure: the controller may act on it at once
        lost = {p for _, p in await cluster.fail_log_dir(1, directory)}
        assert lost

        async def moved():
            now = await states()
            notes = await admin.children(paths.LOG_DIR_EVENT_NOTIFICATION)
            done = all(now[p]["leader"] in (2, 3) and 1 not in now[p]["isr"] for p in lost) and not notes
            return now if done else None

        after = await _until(moved, "leaders moved off the failed directory, ISRs shrunk, the notification deleted")
        for p in lost:
            assert after[p]["leader_epoch"] == before[p]["leader_epoch"] + 1, (p, before[p], after[p])
            assert after[p]["leader"] in before[p]["isr"], (p, before[p], after[p])  # a clean election
        for p in set(range(6)) - lost:  # broker 1's replicas in its other directory: untouched
            assert after[p] == before[p], (p, before[p], after[p])
        assert active.state.offline_replicas == {1: frozenset(("t", p) for p in lost)}

        # The broker restarts: its directories open again, its replicas follow and rejoin the ISRs.
        await cluster.restart_broker(1)

        async def back():
            now = await states()
            return now if all(1 in now[p]["isr"] for p in lost) else None

        await _until(back, "broker 1's replicas back in their ISRs", tick=tick)
        assert 1 not in active.state.offline_replicas
        assert not any(r.storage_error for r in core.replicas())
    finally:
        if run is not None:
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
        inbox.close()
        await store.close()
        await admin.close()
        await cluster.close()


async def _true(value):
    return value


# ---- the shell's reads on the ZooKeeper twin ---------------------------------------------------


async def test_a_malformed_notification_is_logged_and_deleted_and_the_others_acted_on(caplog):
    from tests.controller.harness import Harness

    h = Harness(topics=("t:3:3:64KiB",), log_dirs=LOG_DIRS)
    await h.start()
    try:
        # Written while no controller runs: the one elected reads them.
        await h.admin.create(paths.LOG_DIR_EVENT_PREFIX, b"{not json", sequential=True, makepath=True)
        await h.admin.create(paths.LOG_DIR_EVENT_PREFIX, b'{"version":1,"broker":-3,"event":1}', sequential=True)
        lost = await h.cluster.fail_log_dir(2, LOG_DIRS[0])
        assert lost
        with caplog.at_level("WARNING", logger="reassignd.controller"):
            await h.start_controller(101)
            await h.settle()
        assert h.server.children(paths.LOG_DIR_EVENT_NOTIFICATION) == []  # all three deleted
        assert sum("deleting malformed log directory event notification" in r.message for r in caplog.records) == 2
        for t, p in lost:  # the good one was acted on: broker 2's replicas there lead nothing, left the ISRs
            state = h.json(paths.partition_state(t, p))
            assert state["leader"] != 2 and 2 not in state["isr"], (p, state)
        assert not h.violations
        # A later notification of a broker not registered: deleted, nobody asked.
        await h.cluster.stop_broker(3)
        await h.settle()
        sent = len(h.sent)
        await h.admin.create(paths.LOG_DIR_EVENT_PREFIX, b'{"version":1,"broker":3,"event":1}', sequential=True)
        await h.settle()
        assert h.server.children(paths.LOG_DIR_EVENT_NOTIFICATION) == []
        assert not [s for s in h.sent[sent:] if s[0] == 3]
    finally:
        await h.close()


async def test_a_broker_whose_last_directory_fails_halts_and_its_leaders_move():
    """Kafka's LogManager halts a broker whose every log directory failed, before it writes
    any notification: here the registration goes and the controller treats it as a broker
    failure (section 4.7); a restart opens both directories again."""
    from tests.controller.harness import Harness

    h = Harness(topics=("t:3:3:64KiB",), log_dirs=LOG_DIRS)
    await h.start()
    try:
        await h.start_controller(101)
        await h.settle()
        b = h.json(paths.partition_state("t", 0))["leader"]  # the victim leads something
        hosted = {r.key for r in h.cluster.brokers[b].core.replicas()}
        first = await h.cluster.fail_log_dir(b, LOG_DIRS[0])
        await h.settle()
        assert h.cluster.brokers[b].running  # one directory left: it serves on
        second = await h.cluster.fail_log_dir(b, LOG_DIRS[1])
        assert set(first + second) == hosted  # every replica was in one of them
        assert not h.cluster.brokers[b].running
        assert str(b) not in h.server.children(paths.BROKER_IDS)
        await h.settle()
        for _, p in hosted:
            state = h.json(paths.partition_state("t", p))
            assert state["leader"] not in (b, -1) and b not in state["isr"], (p, state)
        assert h.server.children(paths.LOG_DIR_EVENT_NOTIFICATION) == []  # only the first's, deleted
        await h.cluster.restart_broker(b)
        assert h.cluster.brokers[b].core.log_dirs.live == list(LOG_DIRS)
        assert not h.violations
    finally:
        await h.close()
