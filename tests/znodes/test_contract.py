"""The store contract (znodes/api.py), held by BOTH stores with the same tests.

Every test runs twice: on :class:`znodes.store.KazooStore` against the session's real
ZooKeeper (a fresh chroot per test), and on the deterministic twin
(:class:`znodes.twin.TwinServer`, also inside a chroot). What real ZooKeeper does is the
reference; the twin must do the same.

Beyond ZooKeeper itself, the contract fixes a few choices both stores make:

* a freshly connected store has no event queued (the initial connection is not an event);
* invalid paths raise ValueError, non-bytes data TypeError, both before anything is sent;
* a request that cannot fit ZooKeeper's 1 MiB ``jute.maxbuffer`` (2 MiB of data, or a multi
  totalling over 1 MiB) raises ValueError and changes nothing - real ZooKeeper would drop the
  connection instead;
* ``delete(recursive=True)`` of a missing node raises NoNodeError;
* after its session expires a store raises SessionExpiredError for every call; events up to
  ``SessionEvent(LOST)`` may include ``SUSPENDED`` (real ZooKeeper drops the connection first);
* a connection loss (session alive) gives ``SUSPENDED`` then ``CONNECTED`` and drops every
  watch, as kazoo does: the owner re-reads and re-watches on ``CONNECTED``.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import socket

import pytest
from kazoo.client import KazooClient

from znodes.api import (
    CONTROLLER_EPOCH_PATH,
    BadVersionError,
    Check,
    Create,
    Delete,
    EventType,
    FencedError,
    MultiOpError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionEvent,
    SessionExpiredError,
    SessionState,
    SetData,
    Store,
    WatchEvent,
    ZkError,
    ZnodeStat,
)

# Real ZooKeeper delivers events within milliseconds; this only bounds a broken test.
EVENT_TIMEOUT_S = 10.0

CREATED, DELETED, CHANGED, CHILD = EventType.CREATED, EventType.DELETED, EventType.CHANGED, EventType.CHILD


class FakeClock:
    """Milliseconds for the twin: starts at a fixed instant, moves only when told."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class KazooHarness:
    """Stores on the session's real ZooKeeper, all under this test's chroot."""

    name = "kazoo"

    def __init__(self, connect_string: str, chroot: str):
        self.connect_string = connect_string
        self.chroot = chroot
        self.stores: list = []

    async def new_store(self, sub_chroot: str = ""):
        from znodes.store import connect

        store = await connect(self.connect_string + self.chroot + sub_chroot, create_chroot=bool(sub_chroot))
        self.stores.append(store)
        return store

    async def expire(self, store) -> None:
        """End the session from outside, as ZooKeeper does on expiry: attach a second
        client to the same session id and password, then close it."""

        def takeover():
            other = KazooClient(hosts=self.connect_string, client_id=store.client_id, timeout=10)
            other.start(timeout=10)
            other.stop()
            other.close()

        await asyncio.get_running_loop().run_in_executor(None, takeover)

    async def drop_connection(self, store) -> None:
        """Break the TCP connection under the client, as a network fault would; kazoo
        reconnects to the same session by itself."""
        store._client._connection._socket.shutdown(socket.SHUT_RDWR)

    def advance_clock(self, ms: int) -> None:
        pass  # real time moves by itself

    async def close(self) -> None:
        for store in self.stores:
            await store.close()


class TwinHarness:
    """Stores on a fresh twin server, all under a chroot like the real ones."""

    name = "twin"
    base = "/t_contract"

    def __init__(self):
        from znodes.twin import TwinServer

        self.clock = FakeClock()
        self.server = TwinServer(clock=self.clock)
        self.stores: list = []
        self._root = None

    async def _connect(self, chroot: str):
        store = self.server.connect(chroot=chroot)
        if inspect.isawaitable(store):
            store = await store
        self.stores.append(store)
        return store

    async def new_store(self, sub_chroot: str = ""):
        if self._root is None:
            self._root = await self._connect("")
            await self._root.create(self.base)
        if sub_chroot:
            await self._root.ensure_path(self.base + sub_chroot)
        return await self._connect(self.base + sub_chroot)

    async def expire(self, store) -> None:
        result = self.server.expire_session(store.session_id)
        if inspect.isawaitable(result):
            await result

    async def drop_connection(self, store) -> None:
        self.server.disconnect(store.session_id)
        self.server.reconnect(store.session_id)

    def advance_clock(self, ms: int) -> None:
        self.clock.advance(ms)

    async def close(self) -> None:
        for store in self.stores:
            try:
                await store.close()
            except ZkError:
                pass


@pytest.fixture(params=["kazoo", "twin"])
def harness(request):
    if request.param == "kazoo":
        return KazooHarness(request.getfixturevalue("zk_server").connect_string, request.getfixturevalue("zk_chroot"))
    return TwinHarness()


@pytest.fixture
async def h(harness):
    harness.store = await harness.new_store()
    try:
        yield harness
    finally:
        await harness.close()


@pytest.fixture
def store(h):
    return h.store


# ---- helpers -------------------------------------------------------------------------------

_markers = itertools.count()


async def next_event(store):
    return await asyncio.wait_for(store.events.get(), EVENT_TIMEOUT_S)


async def events(store, n: int) -> list:
    return [await next_event(store) for _ in range(n)]


async def assert_quiet(store) -> None:
    """No event is pending: a marker watch set now is the very next event to arrive."""
    marker = f"/quiet_marker_{next(_markers)}"
    assert await store.exists(marker, watch=True) is None
    await store.create(marker)
    assert await next_event(store) == WatchEvent(CREATED, marker)
    await store.delete(marker)


async def wait_for_lost(store) -> None:
    while True:
        event = await next_event(store)
        if event == SessionEvent(SessionState.LOST):
            return
        assert event == SessionEvent(SessionState.SUSPENDED), event


# ---- connection and identity ---------------------------------------------------------------


async def test_store_satisfies_protocol_and_starts_without_events(store):
    assert isinstance(store, Store)
    assert store.events.empty()
    await store.exists("/x")
    assert store.events.empty()


async def test_sessions_have_distinct_positive_ids(h, store):
    other = await h.new_store()
    assert store.session_id > 0 and other.session_id > 0
    assert store.session_id != other.session_id


# ---- basics ----------------------------------------------------------------------------------


async def test_create_returns_path_and_get_returns_data_and_stat(store):
    assert await store.create("/a", b"hello") == "/a"
    data, stat = await store.get("/a")
    assert data == b"hello"
    assert isinstance(stat, ZnodeStat)
    assert (stat.version, stat.cversion, stat.aversion) == (0, 0, 0)
    assert (stat.data_length, stat.num_children, stat.ephemeral_owner) == (5, 0, 0)
    assert stat.czxid == stat.mzxid == stat.pzxid > 0


async def test_get_missing_raises_no_node_naming_path(store):
    with pytest.raises(NoNodeError) as e:
        await store.get("/missing")
    assert e.value.path == "/missing"


async def test_exists_returns_stat_or_none(store):
    assert await store.exists("/a") is None
    await store.create("/a", b"xy")
    stat = await store.exists("/a")
    assert stat is not None and stat.data_length == 2 and stat.version == 0


async def test_set_replaces_data_and_increments_version(store):
    await store.create("/a", b"one")
    stat = await store.set("/a", b"two")
    assert stat.version == 1 and stat.data_length == 3
    stat = await store.set("/a", b"three!")
    assert stat.version == 2
    data, got = await store.get("/a")
    assert data == b"three!" and got == stat


async def test_set_with_matching_version_succeeds(store):
    await store.create("/a", b"0")
    assert (await store.set("/a", b"1", version=0)).version == 1
    assert (await store.set("/a", b"2", version=1)).version == 2


async def test_set_with_stale_version_raises_bad_version_and_keeps_data(store):
    await store.create("/a", b"0")
    await store.set("/a", b"1")
    with pytest.raises(BadVersionError):
        await store.set("/a", b"stale", version=0)
    data, stat = await store.get("/a")
    assert (data, stat.version) == (b"1", 1)


async def test_set_missing_raises_no_node(store):
    with pytest.raises(NoNodeError):
        await store.set("/missing", b"x")


async def test_create_existing_raises_node_exists_and_keeps_data(store):
    await store.create("/a", b"first")
    with pytest.raises(NodeExistsError):
        await store.create("/a", b"second")
    assert (await store.get("/a"))[0] == b"first"


async def test_create_without_parent_raises_no_node(store):
    with pytest.raises(NoNodeError):
        await store.create("/no/parent", b"x")
    assert await store.exists("/no") is None


async def test_create_makepath_creates_empty_parents(store):
    assert await store.create("/p/q/r", b"leaf", makepath=True) == "/p/q/r"
    assert (await store.get("/p"))[0] == b""
    assert (await store.get("/p/q"))[0] == b""
    assert (await store.get("/p/q/r"))[0] == b"leaf"
    # makepath with existing parents is a plain create
    assert await store.create("/p/q/s", makepath=True) == "/p/q/s"


async def test_delete_removes_node(store):
    await store.create("/a")
    await store.delete("/a")
    assert await store.exists("/a") is None


async def test_delete_missing_raises_no_node(store):
    with pytest.raises(NoNodeError):
        await store.delete("/missing")


async def test_delete_with_stale_version_raises_bad_version(store):
    await store.create("/a")
    await store.set("/a", b"x")
    with pytest.raises(BadVersionError):
        await store.delete("/a", version=0)
    assert await store.exists("/a") is not None
    await store.delete("/a", version=1)
    assert await store.exists("/a") is None


async def test_delete_node_with_children_raises_not_empty(store):
    await store.create("/a")
    await store.create("/a/b")
    with pytest.raises(NotEmptyError):
        await store.delete("/a")
    assert await store.children("/a") == ["b"]


async def test_children_lists_names(store):
    await store.create("/a")
    assert await store.children("/a") == []
    for name in ("c", "a", "b"):
        await store.create(f"/a/{name}")
    assert sorted(await store.children("/a")) == ["a", "b", "c"]


async def test_children_of_missing_raises_no_node(store):
    with pytest.raises(NoNodeError):
        await store.children("/missing")


# ---- stat bookkeeping ------------------------------------------------------------------------


async def test_cversion_and_num_children_follow_child_changes(store):
    await store.create("/p")
    await store.create("/p/a")
    await store.create("/p/b")
    stat = await store.exists("/p")
    assert (stat.cversion, stat.num_children, stat.version) == (2, 2, 0)
    await store.delete("/p/a")
    stat = await store.exists("/p")
    assert (stat.cversion, stat.num_children, stat.version) == (3, 1, 0)
    await store.set("/p/b", b"data changes do not count")
    assert (await store.exists("/p")).cversion == 3


async def test_zxids_are_ordered(store):
    await store.create("/p")
    a = await store.create("/p/a")
    b = await store.create("/p/b")
    sa, sb = await store.exists(a), await store.exists(b)
    assert sb.czxid > sa.czxid
    parent = await store.exists("/p")
    assert parent.pzxid == sb.czxid  # last child change
    assert parent.mzxid == parent.czxid < sa.czxid
    changed = await store.set(a, b"x")
    assert changed.mzxid > sb.czxid and changed.czxid == sa.czxid
    await store.delete(b)
    after = await store.exists("/p")
    assert after.pzxid > changed.mzxid and after.mzxid == parent.mzxid


async def test_ctime_and_mtime(h, store):
    await store.create("/a")
    created = await store.exists("/a")
    assert created.ctime > 0 and created.ctime == created.mtime
    h.advance_clock(5)
    changed = await store.set("/a", b"x")
    assert changed.ctime == created.ctime
    assert changed.mtime >= created.mtime


# ---- sequential nodes ------------------------------------------------------------------------


async def test_sequential_names_are_ten_digit_zero_padded(store):
    await store.create("/q")
    first = await store.create("/q/item-", b"x", sequential=True)
    second = await store.create("/q/item-", sequential=True)
    assert first == "/q/item-0000000000"
    assert second == "/q/item-0000000001"
    assert (await store.get(first))[0] == b"x"


async def test_sequential_counter_is_per_parent(store):
    await store.create("/q1")
    await store.create("/q2")
    await store.create("/q1/n", sequential=True)
    await store.create("/q1/n", sequential=True)
    assert await store.create("/q2/n", sequential=True) == "/q2/n0000000000"
    assert await store.create("/q1/other-", sequential=True) == "/q1/other-0000000002"


async def test_sequential_numbers_keep_increasing_across_deletes(store):
    await store.create("/q")
    a = await store.create("/q/n-", sequential=True)
    b = await store.create("/q/n-", sequential=True)
    await store.delete(b)
    await store.delete(a)
    # ZooKeeper numbers by the count of child CREATES (it keeps cversion internally as that
    # count and reports creates + deletes), so numbers are never reused but deletes do not
    # advance them.
    assert await store.create("/q/n-", sequential=True) == "/q/n-0000000002"
    await store.create("/q/plain")
    await store.delete("/q/plain")
    assert await store.create("/q/n-", sequential=True) == "/q/n-0000000004"
    assert (await store.exists("/q")).cversion == 8  # 5 creates + 3 deletes


async def test_sequential_counter_counts_plain_children(store):
    await store.create("/q")
    await store.create("/q/plain")
    assert await store.create("/q/s-", sequential=True) == "/q/s-0000000001"


# ---- ephemeral nodes ---------------------------------------------------------------------------


async def test_ephemeral_owner_is_session_id(store):
    await store.create("/e", b"x", ephemeral=True)
    await store.create("/p", b"x")
    assert (await store.exists("/e")).ephemeral_owner == store.session_id
    assert (await store.exists("/p")).ephemeral_owner == 0


async def test_ephemeral_sequential(store):
    await store.create("/q")
    path = await store.create("/q/lock-", ephemeral=True, sequential=True)
    assert path == "/q/lock-0000000000"
    assert (await store.exists(path)).ephemeral_owner == store.session_id


async def test_ephemeral_nodes_cannot_have_children(store):
    await store.create("/e", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        await store.create("/e/child")
    assert await store.children("/e") == []


async def test_ephemeral_removed_on_session_expiry_and_watch_fires(h, store):
    owner = await h.new_store()
    await owner.create("/e", b"mine", ephemeral=True)
    await owner.create("/keep", b"persistent")
    assert await store.exists("/e", watch=True) is not None
    await h.expire(owner)
    assert await next_event(store) == WatchEvent(DELETED, "/e")
    assert await store.exists("/e") is None
    assert await store.exists("/keep") is not None
    await wait_for_lost(owner)
    with pytest.raises(SessionExpiredError):
        await owner.get("/keep")
    with pytest.raises(SessionExpiredError):
        await owner.create("/again", ephemeral=True)


async def test_connection_loss_keeps_session_and_drops_watches(h, store):
    await store.create("/e", b"mine", ephemeral=True)
    await store.get("/e", watch=True)
    sid = store.session_id
    await h.drop_connection(store)
    assert await next_event(store) == SessionEvent(SessionState.SUSPENDED)
    assert await next_event(store) == SessionEvent(SessionState.CONNECTED)
    assert store.session_id == sid
    assert (await store.exists("/e")).ephemeral_owner == sid
    await store.set("/e", b"changed after the loss")
    await assert_quiet(store)  # the watch set before the loss is gone
    await store.get("/e", watch=True)
    await store.set("/e", b"again")
    assert await next_event(store) == WatchEvent(CHANGED, "/e")


async def test_ephemeral_removed_when_owner_closes(h, store):
    owner = await h.new_store()
    await owner.create("/e", ephemeral=True)
    await store.exists("/e", watch=True)
    await owner.close()
    assert await next_event(store) == WatchEvent(DELETED, "/e")
    assert await store.exists("/e") is None


# ---- multi -------------------------------------------------------------------------------------


async def test_multi_applies_all_ops_and_returns_per_op_results(store):
    await store.create("/a", b"0")
    await store.create("/b")
    results = await store.multi(
        [Create("/c", b"new"), SetData("/a", b"1", 0), Delete("/b"), Check("/c", 0)]
    )
    assert results[0] == "/c"
    assert isinstance(results[1], ZnodeStat) and results[1].version == 1
    assert results[2:] == [None, None]
    assert (await store.get("/a"))[0] == b"1"
    assert await store.exists("/b") is None


async def test_multi_failure_rolls_back_earlier_ops(store):
    await store.create("/a", b"0")
    with pytest.raises(MultiOpError):
        await store.multi([Create("/x"), SetData("/a", b"changed"), Delete("/x"), Delete("/missing")])
    assert await store.exists("/x") is None
    data, stat = await store.get("/a")
    assert (data, stat.version) == (b"0", 0)


async def test_multi_error_carries_first_failing_index_and_cause(store):
    await store.create("/exists")
    with pytest.raises(MultiOpError) as e:
        await store.multi([Create("/new"), Create("/exists"), Delete("/missing")])
    assert e.value.index == 1
    assert isinstance(e.value.cause, NodeExistsError)
    assert isinstance(e.value, ZkError)
    with pytest.raises(MultiOpError) as e:
        await store.multi([Check("/exists", 0), Delete("/missing"), Create("/exists")])
    assert e.value.index == 1 and isinstance(e.value.cause, NoNodeError)


async def test_multi_stale_check_aborts_whole_multi(store):
    await store.create("/guard")
    await store.set("/guard", b"bumped")
    with pytest.raises(MultiOpError) as e:
        await store.multi([Create("/a"), Check("/guard", 0), Create("/b")])
    assert e.value.index == 1 and isinstance(e.value.cause, BadVersionError)
    assert await store.exists("/a") is None and await store.exists("/b") is None


async def test_multi_is_one_transaction(store):
    await store.multi([Create("/a"), Create("/b"), Create("/a/c")])
    zxids = {(await store.exists(p)).czxid for p in ("/a", "/b", "/a/c")}
    assert len(zxids) == 1


async def test_multi_ops_see_earlier_ops_of_same_multi(store):
    results = await store.multi(
        [Create("/a", b"0"), Create("/a/b"), SetData("/a", b"1", 0), Delete("/a/b"), Create("/a/seq-", sequential=True)]
    )
    assert results[4] == "/a/seq-0000000001"
    data, stat = await store.get("/a")
    assert (data, stat.version, stat.num_children) == (b"1", 1, 1)


async def test_empty_multi_returns_empty_list(store):
    assert await store.multi([]) == []


# ---- fenced multi --------------------------------------------------------------------------------


async def test_fenced_multi_applies_and_omits_check_result(store):
    await store.create(CONTROLLER_EPOCH_PATH, b"1")
    epoch = await store.exists(CONTROLLER_EPOCH_PATH)
    results = await store.fenced_multi([Create("/t", b"x"), SetData("/t", b"y")], epoch.version)
    assert results[0] == "/t" and results[1].version == 1
    assert len(results) == 2


async def test_fenced_multi_on_bumped_epoch_raises_fenced_and_applies_nothing(h, store):
    await store.create(CONTROLLER_EPOCH_PATH, b"1")
    mine = (await store.exists(CONTROLLER_EPOCH_PATH)).version
    rival = await h.new_store()
    await rival.set(CONTROLLER_EPOCH_PATH, b"2")  # a new controller was elected
    with pytest.raises(FencedError):
        await store.fenced_multi([Create("/deposed-write")], mine)
    assert await store.exists("/deposed-write") is None


async def test_fenced_multi_without_epoch_node_is_fenced(store):
    with pytest.raises(FencedError):
        await store.fenced_multi([Create("/w")], 0)
    assert await store.exists("/w") is None


async def test_fenced_multi_other_failure_indexes_caller_ops(store):
    await store.create(CONTROLLER_EPOCH_PATH, b"1")
    with pytest.raises(MultiOpError) as e:
        await store.fenced_multi([Create("/ok"), Delete("/missing")], 0)
    assert not isinstance(e.value, FencedError)
    assert e.value.index == 1 and isinstance(e.value.cause, NoNodeError)
    assert await store.exists("/ok") is None


# ---- watches -------------------------------------------------------------------------------------


async def test_data_watch_fires_changed_on_set(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.set("/a", b"x")
    assert await next_event(store) == WatchEvent(CHANGED, "/a")


async def test_data_watch_fires_deleted_on_delete(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.delete("/a")
    assert await next_event(store) == WatchEvent(DELETED, "/a")


async def test_exists_watch_on_missing_node_fires_created(store):
    assert await store.exists("/a", watch=True) is None
    await store.create("/a")
    assert await next_event(store) == WatchEvent(CREATED, "/a")


async def test_exists_watch_on_existing_node_fires_changed(store):
    await store.create("/a")
    await store.exists("/a", watch=True)
    await store.set("/a", b"x")
    assert await next_event(store) == WatchEvent(CHANGED, "/a")


async def test_child_watch_fires_on_child_create_and_delete(store):
    await store.create("/p")
    await store.children("/p", watch=True)
    await store.create("/p/c")
    assert await next_event(store) == WatchEvent(CHILD, "/p")
    await store.children("/p", watch=True)
    await store.delete("/p/c")
    assert await next_event(store) == WatchEvent(CHILD, "/p")


async def test_child_watch_ignores_data_changes_and_fires_deleted_with_node(store):
    await store.create("/p")
    await store.children("/p", watch=True)
    await store.set("/p", b"not a child change")
    await store.delete("/p")
    assert await next_event(store) == WatchEvent(DELETED, "/p")
    await assert_quiet(store)


async def test_watches_are_one_shot(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.set("/a", b"1")
    await store.set("/a", b"2")
    assert await next_event(store) == WatchEvent(CHANGED, "/a")
    await assert_quiet(store)


async def test_watch_set_twice_fires_once(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.exists("/a", watch=True)
    await store.get("/a", watch=True)
    await store.set("/a", b"x")
    assert await next_event(store) == WatchEvent(CHANGED, "/a")
    await assert_quiet(store)


async def test_data_and_child_watch_on_deleted_node_fire_one_event(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.children("/a", watch=True)
    await store.delete("/a")
    assert await next_event(store) == WatchEvent(DELETED, "/a")
    await assert_quiet(store)


async def test_create_fires_node_event_before_parent_child_event(store):
    await store.create("/p")
    await store.children("/p", watch=True)
    await store.exists("/p/c", watch=True)
    await store.create("/p/c")
    assert await events(store, 2) == [WatchEvent(CREATED, "/p/c"), WatchEvent(CHILD, "/p")]


async def test_delete_fires_node_event_before_parent_child_event(store):
    await store.create("/p")
    await store.create("/p/c")
    await store.children("/p", watch=True)
    await store.get("/p/c", watch=True)
    await store.delete("/p/c")
    assert await events(store, 2) == [WatchEvent(DELETED, "/p/c"), WatchEvent(CHILD, "/p")]


async def test_multi_fires_events_in_op_order(store):
    for p in ("/a", "/b", "/c"):
        await store.create(p)
        await store.get(p, watch=True)
    await store.multi([SetData("/c", b"1"), Delete("/a"), SetData("/b", b"1")])
    assert await events(store, 3) == [WatchEvent(CHANGED, "/c"), WatchEvent(DELETED, "/a"), WatchEvent(CHANGED, "/b")]


async def test_failed_multi_fires_no_watch(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    with pytest.raises(MultiOpError):
        await store.multi([SetData("/a", b"x"), Delete("/missing")])
    await assert_quiet(store)


async def test_watch_fires_for_changes_by_another_session(h, store):
    other = await h.new_store()
    await store.exists("/a", watch=True)
    await other.create("/a")
    assert await next_event(store) == WatchEvent(CREATED, "/a")
    await assert_quiet(store)


async def test_watch_event_is_queued_before_the_write_returns(store):
    await store.create("/a")
    await store.get("/a", watch=True)
    await store.set("/a", b"x")
    # ZooKeeper sends the notification before the reply: it is already queued.
    assert store.events.get_nowait() == WatchEvent(CHANGED, "/a")


# ---- chroot ----------------------------------------------------------------------------------------


async def test_chroots_are_isolated(h, store):
    left = await h.new_store("/left")
    right = await h.new_store("/right")
    await left.create("/n", b"L")
    await right.create("/n", b"R")
    assert (await left.get("/n"))[0] == b"L"
    assert (await right.get("/n"))[0] == b"R"
    assert await left.children("/") == ["n"]
    assert (await store.get("/left/n"))[0] == b"L"
    assert sorted(await store.children("/")) == ["left", "right"]


async def test_event_paths_are_chroot_relative(h, store):
    inner = await h.new_store("/inner")
    await inner.exists("/n", watch=True)
    await store.create("/inner/n")
    assert await next_event(inner) == WatchEvent(CREATED, "/n")


# ---- recursive delete and ensure_path -------------------------------------------------------------------


async def test_delete_recursive_removes_subtree(store):
    for p in ("/t/a/x", "/t/a/y", "/t/b", "/keep"):
        await store.create(p, makepath=True)
    await store.delete("/t", recursive=True)
    assert await store.exists("/t") is None
    assert await store.children("/") == ["keep"]


async def test_delete_recursive_of_missing_node_raises_no_node(store):
    with pytest.raises(NoNodeError):
        await store.delete("/missing", recursive=True)


async def test_delete_recursive_with_stale_version_deletes_nothing(store):
    await store.create("/t/a", makepath=True)
    await store.set("/t", b"x")
    with pytest.raises(BadVersionError):
        await store.delete("/t", version=0, recursive=True)
    assert await store.exists("/t/a") is not None


async def test_ensure_path_creates_missing_and_keeps_existing(store):
    await store.create("/a", b"data")
    await store.ensure_path("/a/b/c")
    await store.ensure_path("/a/b/c")
    assert (await store.get("/a"))[0] == b"data"
    assert (await store.get("/a/b/c"))[0] == b""
    await store.ensure_path("/")


# ---- data and paths --------------------------------------------------------------------------------------


async def test_empty_data_is_empty_bytes(store):
    await store.create("/default")
    await store.create("/explicit", b"")
    for p in ("/default", "/explicit"):
        data, stat = await store.get(p)
        assert data == b"" and isinstance(data, bytes) and stat.data_length == 0


async def test_binary_data_round_trips(store):
    payload = bytes(range(256)) * 4
    await store.create("/bin", payload)
    assert (await store.get("/bin"))[0] == payload


async def test_large_data_near_the_limit(store):
    payload = b"z" * 1_000_000
    await store.create("/big", payload)
    data, stat = await store.get("/big")
    assert data == payload and stat.data_length == 1_000_000
    await store.set("/big", payload[::-1][:999_999])
    assert (await store.exists("/big")).data_length == 999_999


async def test_data_over_the_limit_is_refused_and_changes_nothing(store):
    with pytest.raises(ValueError):
        await store.create("/huge", b"z" * (2 * 1024 * 1024))
    assert await store.exists("/huge") is None
    await store.create("/small", b"ok")
    with pytest.raises(ValueError):
        await store.set("/small", b"z" * (2 * 1024 * 1024))
    assert (await store.get("/small"))[0] == b"ok"


async def test_multi_over_the_limit_is_refused_and_changes_nothing(store):
    part = b"z" * 600_000
    with pytest.raises(ValueError):
        await store.multi([Create("/m1", part), Create("/m2", part)])
    assert await store.exists("/m1") is None


async def test_unicode_paths(store):
    path = await store.create("/ünïcödé", "ß".encode())
    await store.create("/ünïcödé/日本語", b"x")
    assert path == "/ünïcödé"
    assert await store.children("/ünïcödé") == ["日本語"]
    assert (await store.get("/ünïcödé"))[0] == "ß".encode()


@pytest.mark.parametrize(
    "path",
    ["", "a", "a/b", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/.", "/a/..", "/a\x00b", "/a\x01b", "/\U0001f600"],
)
async def test_invalid_paths_raise_value_error(store, path):
    with pytest.raises(ValueError):
        await store.create(path, b"x")
    with pytest.raises(ValueError):
        await store.get(path)
    with pytest.raises(ValueError):
        await store.multi([Create(path)])
    assert await store.children("/") == []


async def test_dots_inside_names_are_valid(store):
    for p in ("/a.b", "/..c", "/d..", "/.e"):
        assert await store.create(p) == p


async def test_non_bytes_data_raises_type_error(store):
    with pytest.raises(TypeError):
        await store.create("/a", "text")  # type: ignore[arg-type]
    assert await store.exists("/a") is None
