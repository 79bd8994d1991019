"""Election and epoch fencing (invariant 5: a deposed controller's write never lands), on the
ZooKeeper twin and on a real ZooKeeper."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.core.config import ControllerConfig
from controller.shell.active import ActiveController
from controller.shell.election import campaign, try_elect
from controller.shell.inbox import Inbox
from sim.inprocess import InProcessTransport
from tests.controller.harness import Harness
from znodes import paths
from znodes.api import Create, FencedError, SetData
from znodes.errors import ZnodeFormatError
from znodes.twin import FaultMode, TwinServer

TARGETS = {("t", 0): [4, 5, 6], ("t", 1): [1, 5, 2]}


# ---- the election multi ----------------------------------------------------------------------


async def test_election_creates_controller_and_bumps_the_epoch_in_one_multi():
    server = TwinServer()
    a, b = server.connect(), server.connect()
    won = await try_elect(a, 101, now_ms=1234)
    assert (won.epoch, won.epoch_zkversion) == (1, 0)
    data, stat = await a.get(paths.CONTROLLER)
    assert json.loads(data) == {"version": 1, "brokerid": 101, "timestamp": "1234"}
    assert stat.ephemeral_owner == a.session_id
    assert await try_elect(b, 102) is None
    assert server.read(paths.CONTROLLER_EPOCH)[0] == b"1"  # a lost election writes nothing
    await a.close()
    won = await try_elect(b, 102)
    assert (won.epoch, won.epoch_zkversion) == (2, 1)
    assert server.read(paths.CONTROLLER_EPOCH)[0] == b"2"


async def test_a_garbled_epoch_blocks_election_and_writes_nothing():
    server = TwinServer()
    store = server.connect()
    await store.create(paths.CONTROLLER_EPOCH, b"three")
    with pytest.raises(ZnodeFormatError):
        await try_elect(store, 101)
    assert server.exists(paths.CONTROLLER) is None


async def test_a_standby_takes_over_when_the_active_session_ends():
    server = TwinServer()
    a, b = server.connect(), server.connect()
    inbox_b = Inbox(b)
    assert (await try_elect(a, 101)).epoch == 1
    standby = asyncio.create_task(campaign(b, inbox_b, 102))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not standby.done()
    server.expire_session(a.session_id)
    won = await asyncio.wait_for(standby, 5)
    assert won.epoch == 2 and json.loads(server.read(paths.CONTROLLER)[0])["brokerid"] == 102
    inbox_b.close()


# ---- fencing with the whole active controller -------------------------------------------------


async def test_a_deposed_controller_resigns_and_its_write_never_lands():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        old = h.server.connect()
        won = await try_elect(old, 101)
        # Another controller is elected behind its back (its /controller vanished unnoticed).
        await h.admin.delete(paths.CONTROLLER)
        usurper = h.server.connect()
        assert (await try_elect(usurper, 102)).epoch == 2
        before = h.server.snapshot()
        inbox = Inbox(old)
        active = ActiveController(
            old, inbox, controller_id=101, epoch=won.epoch, epoch_zkversion=won.epoch_zkversion,
            transport=InProcessTransport(h.cluster), config=ControllerConfig(),
        )
        run = asyncio.create_task(active.run())
        await h.submit(TARGETS)  # the deposed controller reads it and tries to start the moves
        reason = await asyncio.wait_for(run, 5)
        assert reason.startswith("fenced")
        after = h.server.snapshot()
        changed = {p for p in after if after[p] != before.get(p)} | (set(before) - set(after))
        assert changed == {"/admin", "/admin/reassign_partitions"}  # only the test's own write
        inbox.close()
    finally:
        await h.close()


async def test_fenced_multi_is_refused_as_a_whole():
    server = TwinServer()
    a, b = server.connect(), server.connect()
    won = await try_elect(a, 101)
    await server.connect().delete(paths.CONTROLLER)
    await try_elect(b, 102)
    with pytest.raises(FencedError):
        await a.fenced_multi([Create("/x"), SetData(paths.CONTROLLER_EPOCH, b"99")], won.epoch_zkversion)
    assert server.exists("/x") is None and server.read(paths.CONTROLLER_EPOCH)[0] == b"2"


async def test_nothing_is_written_while_suspended_and_work_resumes_after():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        c = await h.start_controller(101)
        sid = c.store.session_id
        h.server.disconnect(sid)
        await h.submit(TARGETS)
        writes = h.server.write_requests
        for _ in range(4):
            await h.tick()
        assert h.server.exists("/admin/reassignments/t") is None
        h.server.reconnect(sid)
        await h.settle()
        await h.run_until_quiet()
        h.check_invariants(TARGETS)
        assert writes < h.server.write_requests
    finally:
        await h.close()


async def test_a_lost_reply_is_resolved_by_reloading_from_zookeeper():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        c = await h.start_controller(101)
        # its first write lands but the reply is lost: it must not assume either outcome
        h.server.fail_after(1, store=c.store._inner, mode=FaultMode.REPLY_LOST)
        await h.submit(TARGETS)
        h.server.reconnect(c.store.session_id)
        await h.settle()
        await h.run_until_quiet()
        h.check_invariants(TARGETS)
        assert c.alive and c.active is not None and c.active.stats.reloads >= 1
    finally:
        await h.close()


async def test_a_tool_writing_the_znode_during_a_flush_costs_a_re_read_not_a_reload():
    h = Harness(topics=("t:3:3:64KiB",))
    await h.start()
    try:
        c = await h.start_controller(101)
        await h.submit({("t", 0): [4, 5, 6], ("t", 1): [1, 5, 2]})
        appended = []

        async def tool_appends(op):
            # Just before the controller rewrites the znode, a tool appends an entry to it.
            if op.path == paths.REASSIGN_PARTITIONS and not appended:
                data, stat = await h.admin.get(paths.REASSIGN_PARTITIONS)
                doc = json.loads(data)
                doc["partitions"].append({"topic": "t", "partition": 2, "replicas": [6, 1, 3]})
                await h.admin.set(paths.REASSIGN_PARTITIONS, json.dumps(doc).encode(), stat.version)
                appended.append(stat.version + 1)

        c.store.before_op = tool_appends
        h.requested[("t", 2)] = [6, 1, 3]
        await h.run_until_quiet()
        assert appended
        h.check_invariants({("t", 0): [4, 5, 6], ("t", 1): [1, 5, 2], ("t", 2): [6, 1, 3]})
        assert c.active.stats.reloads == 0
    finally:
        await h.close()


# ---- real ZooKeeper ----------------------------------------------------------------------------


@pytest.mark.zk
async def test_election_and_fencing_on_real_zookeeper(zk_hosts):
    from znodes.store import connect

    a = await connect(zk_hosts, session_timeout=4.0)
    b = await connect(zk_hosts, session_timeout=4.0)
    admin = await connect(zk_hosts)
    inbox_b = Inbox(b)
    try:
        won_a = await try_elect(a, 101)
        assert won_a.epoch == 1
        standby = asyncio.create_task(campaign(b, inbox_b, 102))
        await asyncio.sleep(0.2)
        assert not standby.done()
        # depose a: its znode goes (it does not notice), b wins with a newer epoch
        await admin.delete(paths.CONTROLLER)
        won_b = await asyncio.wait_for(standby, 10)
        assert won_b.epoch == 2
        with pytest.raises(FencedError):
            await a.fenced_multi([Create("/deposed_write")], won_a.epoch_zkversion)
        assert await admin.exists("/deposed_write") is None
        await b.fenced_multi([Create("/active_write")], won_b.epoch_zkversion)
        assert await admin.exists("/active_write") is not None
        # b's session ends: a standby (a again) wins epoch 3
        inbox_a = Inbox(a)
        again = asyncio.create_task(campaign(a, inbox_a, 101))
        await asyncio.sleep(0.2)
        await b.close()
        won = await asyncio.wait_for(again, 10)
        assert won.epoch == 3
        data, _ = await admin.get(paths.CONTROLLER_EPOCH)
        assert data == b"3"
        inbox_a.close()
    finally:
        inbox_b.close()
        for s in (a, b, admin):
            await s.close()
