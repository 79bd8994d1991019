"""The throttle-removal race (issue 20 item 2; docs/DESIGN.md 4, "Throttle removal").

A tool that writes KIP-179 throttles itself, one znode at a time - the removal list naming its
topic, the topic's throttle config, then ``/admin/reassign_partitions`` - must not lose them to
a controller whose removal decided "no reassignment runs" just before the tool's reassignment
znode appeared. Deterministic, on the in-memory ZooKeeper twin and on a real ZooKeeper (the
guard's create-then-delete in one multi is ZooKeeper's own behaviour): the tool's writes land
right after the controller's removal has read ``/admin/reassign_partitions`` as absent, before
its write. Before the fix the removal checked once and then deleted what it listed (the tool's
topic included); now its multi fails unless the znode is still as the decision read it
(controller.core.throttle_removal), and the retry sees the reassignment and removes nothing.
"""

from __future__ import annotations

import json

import pytest

from controller.shell import throttle_configs as tc
from tests.controller.removal_rounds import remove_idle, remove_throttles
from znodes import paths
from znodes.reads import get_or_none
from znodes.store import connect
from znodes.twin import TwinServer

REPLICAS = {tc.LEADER_REPLICAS: "0:1", tc.FOLLOWER_REPLICAS: "0:2"}
RATES = {tc.LEADER_RATE: "100", tc.FOLLOWER_RATE: "100"}
TOOL_REQUEST = {"version": 1, "partitions": [{"topic": "v", "partition": 0, "replicas": [2], "original_replicas": [3]}]}


def _json(data) -> bytes:
    return json.dumps(data).encode()


class ToolInTheWindow:
    """A store whose first read of ``/admin/reassign_partitions`` (exists or get) answers, and
    then lets the tool write its three znodes before the caller goes on."""

    def __init__(self, inner, tool):
        self._inner = inner
        self._tool = tool
        self.fired = False

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def _after(self, path):
        if path == paths.REASSIGN_PARTITIONS and not self.fired:
            self.fired = True
            await self._tool()

    async def exists(self, path, watch=False):
        answer = await self._inner.exists(path, watch=watch)
        await self._after(path)
        return answer

    async def get(self, path, watch=False):
        try:
            return await self._inner.get(path, watch=watch)
        finally:
            await self._after(path)


@pytest.fixture(params=["twin", "zookeeper"])
async def sessions(request):
    """A factory of sessions on one ZooKeeper: the twin, or a real server (a fresh chroot)."""
    opened = []
    if request.param == "twin":
        server = TwinServer()

        async def open_session():
            return server.connect()
    else:
        hosts = request.getfixturevalue("zk_hosts")

        async def open_session():
            opened.append(await connect(hosts))
            return opened[-1]

    yield open_session
    for store in opened:
        await store.close()


async def _cluster(open_session, leftover: bool):
    """Topic t's throttles and broker 1's rate listed for removal (a finished reassignment's
    leftovers) when ``leftover``; the tool's topic v and broker 2 not throttled yet."""
    store = await open_session()
    for path in paths.PERSISTENT_PATHS:
        await store.ensure_path(path)
    await store.create(paths.CONTROLLER_EPOCH, b"1", makepath=True)
    epoch = (await store.exists(paths.CONTROLLER_EPOCH)).version
    await store.create(paths.topic_config("t"), _json({"version": 1, "config": REPLICAS}), makepath=True)
    await store.create(paths.topic_config("v"), _json({"version": 1, "config": {}}), makepath=True)
    await store.create(paths.broker_config(1), _json({"version": 1, "config": RATES}), makepath=True)
    await store.create(paths.broker_config(2), _json({"version": 1, "config": {}}), makepath=True)
    if leftover:
        await store.create(paths.THROTTLED_REPLICAS_REMOVAL, _json({"version": 1, "topics": ["t"]}))
        await store.create(paths.THROTTLED_RATES_REMOVAL, _json({"version": 1, "brokers": [1]}))
    tool = await open_session()

    async def tool_writes():
        """The tool: removal lists first (merged), then the configs, then the reassignment."""
        for path, key, add in ((paths.THROTTLED_REPLICAS_REMOVAL, "topics", "v"), (paths.THROTTLED_RATES_REMOVAL, "brokers", 2)):
            read = await get_or_none(tool, path)
            if read is None:
                await tool.create(path, _json({"version": 1, key: [add]}))
            else:
                members = json.loads(read[0])[key]
                await tool.set(path, _json({"version": 1, key: sorted(set(members) | {add})}), read[1].version)
        await tool.set(paths.topic_config("v"), _json({"version": 1, "config": REPLICAS}))
        await tool.set(paths.broker_config(2), _json({"version": 1, "config": RATES}))
        await tool.create(paths.REASSIGN_PARTITIONS, _json(TOOL_REQUEST))

    return tool, ToolInTheWindow(store, tool_writes), epoch


async def _config(reader, path):
    return json.loads((await reader.get(path))[0])["config"]


async def _listed(reader, path, key):
    return json.loads((await reader.get(path))[0])[key]


async def test_removal_on_completion_spares_throttles_a_tool_wrote_in_the_window(sessions):
    reader, store, epoch = await _cluster(sessions, leftover=True)
    await remove_throttles(store, epoch)
    assert store.fired
    # The tool's throttles stay, listed, for its reassignment's completion to remove.
    assert await _config(reader, paths.topic_config("v")) == REPLICAS
    assert await _config(reader, paths.broker_config(2)) == RATES
    assert "v" in await _listed(reader, paths.THROTTLED_REPLICAS_REMOVAL, "topics")
    assert 2 in await _listed(reader, paths.THROTTLED_RATES_REMOVAL, "brokers")
    assert await reader.exists(paths.REASSIGN_PARTITIONS) is not None


async def test_early_removal_spares_throttles_a_tool_wrote_in_the_window(sessions):
    # No moves in memory (a controller just elected): everything listed is idle by its state.
    reader, store, epoch = await _cluster(sessions, leftover=True)
    await remove_idle(store, epoch, None)
    assert store.fired
    assert await _config(reader, paths.topic_config("v")) == REPLICAS
    assert await _config(reader, paths.broker_config(2)) == RATES
    assert "v" in await _listed(reader, paths.THROTTLED_REPLICAS_REMOVAL, "topics")
    assert 2 in await _listed(reader, paths.THROTTLED_RATES_REMOVAL, "brokers")
    # What the tool's reassignment does not involve still goes at once.
    assert await _config(reader, paths.topic_config("t")) == {}
    assert await _config(reader, paths.broker_config(1)) == {}


async def test_without_a_tool_the_leftovers_go(sessions):
    reader, store, epoch = await _cluster(sessions, leftover=True)
    store.fired = True  # the tool never writes
    assert await remove_throttles(store, epoch) > 0
    assert await _config(reader, paths.topic_config("t")) == {} and await _config(reader, paths.broker_config(1)) == {}
    assert await reader.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
    assert await reader.exists(paths.THROTTLED_RATES_REMOVAL) is None
    # The guard left no /admin/reassign_partitions behind.
    assert await reader.exists(paths.REASSIGN_PARTITIONS) is None
