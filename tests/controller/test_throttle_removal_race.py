"""The throttle-removal race (issue 20 item 2; docs/DESIGN.md 4, "Throttle removal").

A tool that writes KIP-179 throttles itself, one znode at a time - the removal list naming its
topic, the topic's throttle config, then ``/admin/reassign_partitions`` - must not lose them to
a controller whose removal decided "no reassignment runs" just before the tool's reassignment
znode appeared. Deterministic, on the in-memory ZooKeeper twin: the tool's three writes land
right after the controller's removal has read ``/admin/reassign_partitions`` as absent, before
its write. Before the fix the removal checked once and then deleted what it listed (the tool's
topic included); now its multi fails unless the znode is still as the decision read it
(controller.core.throttle_removal), and the retry sees the reassignment and removes nothing.
"""

from __future__ import annotations

import json

from controller.shell import throttle_configs as tc
from controller.shell.throttles import remove_idle_unlocked, remove_throttles
from znodes import paths
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


async def _cluster(leftover: bool):
    """Topic t's throttles and broker 1's rate listed for removal (a finished reassignment's
    leftovers) when ``leftover``; the tool's topic v and broker 2 not throttled yet."""
    server = TwinServer()
    store = server.connect()
    await store.create(paths.CONTROLLER_EPOCH, b"1", makepath=True)
    for path in paths.PERSISTENT_PATHS:
        await store.ensure_path(path)
    epoch = (await store.exists(paths.CONTROLLER_EPOCH)).version
    await store.create(paths.topic_config("t"), _json({"version": 1, "config": REPLICAS}), makepath=True)
    await store.create(paths.topic_config("v"), _json({"version": 1, "config": {}}), makepath=True)
    await store.create(paths.broker_config(1), _json({"version": 1, "config": RATES}), makepath=True)
    await store.create(paths.broker_config(2), _json({"version": 1, "config": {}}), makepath=True)
    if leftover:
        await store.create(paths.THROTTLED_REPLICAS_REMOVAL, _json({"version": 1, "topics": ["t"]}))
        await store.create(paths.THROTTLED_RATES_REMOVAL, _json({"version": 1, "brokers": [1]}))
    tool = server.connect()

    async def tool_writes():
        """The tool: removal lists first (merged), then the configs, then the reassignment."""
        for path, key, add in ((paths.THROTTLED_REPLICAS_REMOVAL, "topics", "v"), (paths.THROTTLED_RATES_REMOVAL, "brokers", 2)):
            read = server.read(path) if server.exists(path) is not None else None
            if read is None:
                await tool.create(path, _json({"version": 1, key: [add]}))
            else:
                members = json.loads(read[0])[key]
                await tool.set(path, _json({"version": 1, key: sorted(set(members) | {add})}))
        await tool.set(paths.topic_config("v"), _json({"version": 1, "config": REPLICAS}))
        await tool.set(paths.broker_config(2), _json({"version": 1, "config": RATES}))
        await tool.create(paths.REASSIGN_PARTITIONS, _json(TOOL_REQUEST))

    return server, ToolInTheWindow(store, tool_writes), epoch


def _config(server, path):
    return json.loads(server.read(path)[0])["config"]


def _listed(server, path, key):
    return json.loads(server.read(path)[0])[key]


async def test_removal_on_completion_spares_throttles_a_tool_wrote_in_the_window():
    server, store, epoch = await _cluster(leftover=True)
    await remove_throttles(store, epoch)
    assert store.fired
    # The tool's throttles stay, listed, for its reassignment's completion to remove.
    assert _config(server, paths.topic_config("v")) == REPLICAS
    assert _config(server, paths.broker_config(2)) == RATES
    assert "v" in _listed(server, paths.THROTTLED_REPLICAS_REMOVAL, "topics")
    assert 2 in _listed(server, paths.THROTTLED_RATES_REMOVAL, "brokers")
    assert server.exists(paths.REASSIGN_PARTITIONS) is not None


async def test_early_removal_spares_throttles_a_tool_wrote_in_the_window():
    # No moves in memory (a controller just elected): everything listed is idle by its state.
    server, store, epoch = await _cluster(leftover=True)
    await remove_idle_unlocked(store, epoch, None)
    assert store.fired
    assert _config(server, paths.topic_config("v")) == REPLICAS
    assert _config(server, paths.broker_config(2)) == RATES
    assert "v" in _listed(server, paths.THROTTLED_REPLICAS_REMOVAL, "topics")
    assert 2 in _listed(server, paths.THROTTLED_RATES_REMOVAL, "brokers")
    # What the tool's reassignment does not involve still goes at once.
    assert _config(server, paths.topic_config("t")) == {}
    assert _config(server, paths.broker_config(1)) == {}


async def test_without_a_tool_the_leftovers_go():
    server, store, epoch = await _cluster(leftover=True)
    store.fired = True  # the tool never writes
    assert await remove_throttles(store, epoch) > 0
    assert _config(server, paths.topic_config("t")) == {} and _config(server, paths.broker_config(1)) == {}
    assert server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
    assert server.exists(paths.THROTTLED_RATES_REMOVAL) is None
    # The guard left no /admin/reassign_partitions behind.
    assert server.exists(paths.REASSIGN_PARTITIONS) is None
