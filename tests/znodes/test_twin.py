"""The twin's own behaviours: clock injection, determinism, zxid accounting, fault injection,
disconnect/reconnect, expiry, inspection; and a differential test against real ZooKeeper.

The shared store contract (real ZooKeeper and the twin side by side) is test_contract.py.
"""

import asyncio
import itertools
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from znodes.api import (
    Check,
    ConnectionLossError,
    Create,
    Delete,
    EventType,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    SessionEvent,
    SessionExpiredError,
    SessionState,
    SetData,
    Store,
    WatchEvent,
    ZkError,
    ZnodeStat,
)
from znodes.twin import (
    DEFAULT_START_MS,
    SESSION_ID_BASE,
    BadArgumentsError,
    ClientState,
    FaultMode,
    ManualClock,
    TwinServer,
)

CREATED, DELETED, CHANGED, CHILD = EventType.CREATED, EventType.DELETED, EventType.CHANGED, EventType.CHILD
SUSPENDED = SessionEvent(SessionState.SUSPENDED)
CONNECTED = SessionEvent(SessionState.CONNECTED)
LOST = SessionEvent(SessionState.LOST)


def drain(store) -> list:
    out = []
    while not store.events.empty():
        out.append(store.events.get_nowait())
    return out


# ---- clock ---------------------------------------------------------------------------------


async def test_times_come_from_the_injected_clock():
    now = [5_000]
    server = TwinServer(clock=lambda: now[0])
    store = server.connect()
    await store.create("/a", b"1")
    now[0] = 7_000
    stat = await store.set("/a", b"2")
    assert (stat.ctime, stat.mtime) == (5_000, 7_000)
    now[0] = 9_000
    await store.multi([Create("/b"), Create("/c")])
    assert (await store.exists("/b")).ctime == (await store.exists("/c")).ctime == 9_000


async def test_default_clock_is_manual_and_starts_at_a_fixed_instant():
    server = TwinServer()
    assert isinstance(server.clock, ManualClock)
    store = server.connect()
    await store.create("/a")
    assert (await store.exists("/a")).ctime == DEFAULT_START_MS
    server.clock.advance(250)
    assert (await store.set("/a", b"x")).mtime == DEFAULT_START_MS + 250
    with pytest.raises(ValueError):
        server.clock.advance(-1)


# ---- determinism ---------------------------------------------------------------------------


async def script(server: TwinServer) -> tuple:
    """A fixed script touching every feature; returns everything observable."""
    a, b = server.connect(), server.connect()
    out = []
    await a.create("/app")
    await b.children("/app", watch=True)
    await b.exists("/app/lock", watch=True)
    out.append(await a.create("/app/lock", b"a", ephemeral=True))
    out.append(await a.create("/app/seq-", b"s", sequential=True))
    out.append(await a.create("/app/seq-", b"s", ephemeral=True, sequential=True))
    await b.get("/app/seq-0000000001", watch=True)
    server.clock.advance(10)
    out.append(await a.multi([SetData("/app", b"v"), Create("/app/m"), Delete("/app/seq-0000000001")]))
    try:
        await a.multi([Create("/app/n"), Check("/app", 99)])
    except MultiOpError as e:
        out.append((e.index, type(e.cause).__name__))
    await b.children("/app", watch=True)
    server.expire_session(a.session_id)
    await b.delete("/app", recursive=True)
    out.append(server.snapshot())
    return out, drain(a), drain(b), server.zxid, [a.session_id, b.session_id]


async def test_identical_scripts_give_identical_stats_events_and_ids():
    first = await script(TwinServer())
    second = await script(TwinServer())
    assert first == second
    results, events_a, events_b, _, _ = first
    assert events_a == [LOST]
    assert events_b == [
        WatchEvent(CREATED, "/app/lock"),
        WatchEvent(CHILD, "/app"),
        WatchEvent(DELETED, "/app/seq-0000000001"),
        WatchEvent(CHILD, "/app"),  # the expiry deleting a's ephemerals
    ]


async def test_session_ids_increase_from_the_base():
    server = TwinServer()
    ids = [server.connect().session_id for _ in range(3)]
    assert ids == [SESSION_ID_BASE + 1, SESSION_ID_BASE + 2, SESSION_ID_BASE + 3]


# ---- zxids, cversion, system nodes ---------------------------------------------------------


async def test_zxid_counts_every_transaction_like_zookeeper():
    server = TwinServer()
    assert server.zxid == 0
    store = server.connect()
    assert server.zxid == 1  # createSession
    await store.create("/a")
    assert (await store.exists("/a")).czxid == 2
    with pytest.raises(NodeExistsError):
        await store.create("/a")  # a failed write is logged as an error txn
    assert server.zxid == 3
    await store.get("/a")
    await store.children("/")
    assert server.zxid == 3  # reads are not transactions
    results = await store.multi([Create("/b"), Create("/c"), SetData("/a", b"x")])
    assert {(await store.exists(p)).czxid for p in ("/b", "/c")} == {4} == {results[2].mzxid}
    with pytest.raises(MultiOpError):
        await store.multi([Create("/d"), Create("/a")])
    assert server.zxid == 5
    assert await store.multi([]) == []
    assert server.zxid == 6
    await store.create("/e1", ephemeral=True)
    await store.create("/e2", ephemeral=True)
    await store.close()  # closeSession: one txn deletes both ephemerals
    assert server.zxid == 9
    assert server.exists("/").pzxid == 9


async def test_cversion_counts_creates_and_deletes_but_sequence_counts_creates():
    server = TwinServer()
    store = server.connect()
    await store.create("/p")
    await store.create("/p/a")
    await store.delete("/p/a")
    stat = await store.exists("/p")
    assert (stat.cversion, stat.num_children) == (2, 0)
    assert await store.create("/p/s", sequential=True) == "/p/s0000000001"
    assert (await store.exists("/p")).cversion == 3


async def test_system_nodes_are_there_and_cannot_be_deleted():
    server = TwinServer()
    store = server.connect()
    assert await store.children("/") == ["zookeeper"]
    assert await store.children("/zookeeper") == ["config", "quota"]
    assert (await store.exists("/")).cversion == -1  # as a fresh real server reports
    assert (await store.exists("/zookeeper/config")).aversion == -1
    with pytest.raises(BadArgumentsError) as info:
        await store.delete("/zookeeper/quota")
    assert isinstance(info.value, ValueError) and isinstance(info.value, ZkError)
    with pytest.raises(ValueError):
        await store.delete("/")
    assert server.snapshot() == {"/": server.snapshot()["/"]}  # system nodes hidden by default
    assert "/zookeeper" in server.snapshot(include_system=True)


async def test_twin_store_satisfies_the_protocol():
    assert isinstance(TwinServer().connect(), Store)


# ---- inspection ----------------------------------------------------------------------------


async def test_snapshot_read_children_and_dump():
    server = TwinServer()
    store = server.connect()
    await store.create("/a", b"x")
    await store.create("/a/e", b"y", ephemeral=True)
    snap = server.snapshot()
    assert list(snap) == ["/", "/a", "/a/e"]
    assert snap["/a"][0] == b"x" and isinstance(snap["/a"][1], ZnodeStat)
    assert server.read("/a/e") == (b"y", await store.exists("/a/e"))
    assert server.children("/a") == ["e"]
    assert server.exists("/nope") is None
    with pytest.raises(NoNodeError):
        server.read("/nope")
    text = server.dump()
    assert "/a/e b'y'" in text and f"ephemeral={store.session_id:#x}" in text
    assert server.session_ids() == [store.session_id]
    assert server.write_requests == 2


# ---- chroots -------------------------------------------------------------------------------


async def test_missing_chroot_is_refused_unless_created():
    server = TwinServer()
    with pytest.raises(NoNodeError):
        server.connect("/kafka/a")
    store = server.connect("/kafka/a", create_chroot=True)
    assert server.exists("/kafka/a") is not None
    assert await store.create("/x", b"1") == "/x"
    assert server.read("/kafka/a/x")[0] == b"1"
    assert server.session_ids() == [store.session_id]  # the helper session is closed


async def test_chroot_removed_under_a_store_gives_no_node():
    server = TwinServer()
    admin = server.connect()
    store = server.connect("/c", create_chroot=True)
    await admin.delete("/c")
    with pytest.raises(NoNodeError):
        await store.create("/x")
    assert await store.exists("/") is None
    await store.ensure_path("/x/y")  # like kazoo, ensure_path recreates the chroot itself
    assert server.children("/c/x") == ["y"]


# ---- fault injection -----------------------------------------------------------------------


async def test_fault_next_call_applies_the_write_then_loses_the_connection():
    server = TwinServer()
    store = server.connect()
    server.fail_after(2, store)
    await store.create("/a")
    await store.create("/b")  # the 2nd write: applied and answered
    assert server.exists("/b") is not None
    with pytest.raises(ConnectionLossError):
        await store.get("/a")
    assert store.state is ClientState.SUSPENDED
    assert drain(store) == [SUSPENDED]
    with pytest.raises(ConnectionLossError):
        await store.create("/c")
    server.reconnect(store.session_id)
    assert drain(store) == [CONNECTED]
    await store.create("/c")
    assert server.children("/") == ["a", "b", "c", "zookeeper"]


async def test_fault_reply_lost_applies_the_write_but_the_caller_cannot_know():
    server = TwinServer()
    store = server.connect()
    server.fail_after(1, store, mode=FaultMode.REPLY_LOST)
    with pytest.raises(ConnectionLossError):
        await store.multi([Create("/a"), Create("/b")])
    assert server.children("/") == ["a", "b", "zookeeper"]
    assert drain(store) == [SUSPENDED]


async def test_fault_reply_lost_hides_the_write_error_too():
    server = TwinServer()
    store = server.connect()
    await store.create("/a")
    server.fail_after(1, store, mode=FaultMode.REPLY_LOST)
    zxid = server.zxid
    with pytest.raises(ConnectionLossError):
        await store.create("/a")
    assert server.zxid == zxid + 1  # the failing create did reach the server


async def test_fault_not_applied_drops_the_write():
    server = TwinServer()
    store = server.connect()
    zxid = server.zxid
    server.fail_after(1, store, mode=FaultMode.NOT_APPLIED)
    with pytest.raises(ConnectionLossError):
        await store.create("/a")
    assert server.exists("/a") is None and server.zxid == zxid
    server.reconnect(store.session_id)
    await store.create("/a")


async def test_fault_for_any_store_hits_whoever_makes_the_nth_write():
    server = TwinServer()
    a, b = server.connect(), server.connect()
    server.fail_after(3)
    await a.create("/1")
    await b.create("/2")
    await a.get("/1")  # reads do not count
    await b.create("/3")  # 3rd write overall: b's
    with pytest.raises(ConnectionLossError):
        await b.exists("/3")
    await a.create("/4")  # a is untouched
    assert drain(a) == [] and drain(b) == [SUSPENDED]


async def test_fault_counts_each_request_of_composite_calls():
    server = TwinServer()
    store = server.connect()
    server.fail_after(2, store, mode=FaultMode.NOT_APPLIED)
    with pytest.raises(ConnectionLossError):
        await store.ensure_path("/a/b/c")  # its second create is lost
    assert server.exists("/a") is not None and server.exists("/a/b") is None


async def test_fault_is_one_shot_and_can_be_cleared():
    server = TwinServer()
    store = server.connect()
    server.fail_after(1, store, mode=FaultMode.NOT_APPLIED)
    server.clear_faults()
    await store.create("/a")
    await store.create("/b")
    assert store.state is ClientState.CONNECTED


@pytest.mark.parametrize("n", [0, -1, True, 1.5])
def test_fail_after_rejects_bad_counts(n):
    with pytest.raises(ValueError):
        TwinServer().fail_after(n)


def test_unknown_session_is_refused():
    server = TwinServer()
    with pytest.raises(ValueError):
        server.fail_after(1, 12345)
    with pytest.raises(ValueError):
        server.expire_session(12345)
    with pytest.raises(TypeError):
        server.fail_after(1, mode="next_call")


# ---- disconnect, reconnect, expiry, close --------------------------------------------------


async def test_disconnect_suspends_keeps_ephemerals_and_drops_watches():
    server = TwinServer()
    store, other = server.connect(), server.connect()
    await store.create("/e", ephemeral=True)
    await store.create("/w")
    await store.get("/w", watch=True)
    await store.children("/w", watch=True)
    server.disconnect(store.session_id)
    server.disconnect(store.session_id)  # idempotent
    assert drain(store) == [SUSPENDED]
    for call in (store.get("/w"), store.exists("/w"), store.children("/"), store.set("/w", b"")):
        with pytest.raises(ConnectionLossError):
            await call
    await other.set("/w", b"changed while away")
    await other.create("/w/kid")
    assert server.exists("/e").ephemeral_owner == store.session_id
    server.reconnect(store.session_id)
    assert (await store.get("/w"))[0] == b"changed while away"
    assert drain(store) == [CONNECTED]  # the dropped watches never fire
    await other.set("/w", b"again")
    assert drain(store) == []


async def test_expiry_while_suspended():
    server = TwinServer()
    store, other = server.connect(), server.connect()
    await store.create("/e", ephemeral=True)
    await other.exists("/e", watch=True)
    server.disconnect(store.session_id)
    assert server.expire_session(store.session_id) is True
    assert server.expire_session(store.session_id) is False
    assert drain(store) == [SUSPENDED, LOST]
    assert drain(other) == [WatchEvent(DELETED, "/e")]
    with pytest.raises(SessionExpiredError):
        await store.get("/")
    with pytest.raises(ValueError):
        server.reconnect(store.session_id)
    with pytest.raises(ValueError):
        server.disconnect(store.session_id)


async def test_expiry_deletes_ephemerals_in_path_order_in_one_transaction():
    server = TwinServer()
    owner, watcher = server.connect(), server.connect()
    await owner.create("/p")
    for name in ("c", "a", "b"):
        await owner.create(f"/p/{name}", ephemeral=True)
        await watcher.exists(f"/p/{name}", watch=True)
    await watcher.children("/p", watch=True)
    server.expire_session(owner.session_id)
    assert drain(watcher) == [
        WatchEvent(DELETED, "/p/a"),
        WatchEvent(CHILD, "/p"),
        WatchEvent(DELETED, "/p/b"),
        WatchEvent(DELETED, "/p/c"),
    ]
    assert server.exists("/p").pzxid == server.zxid
    assert drain(owner) == [LOST]


async def test_expiry_forgets_rolled_back_and_deleted_ephemerals():
    server = TwinServer()
    owner, other = server.connect(), server.connect()
    await owner.create("/keep", ephemeral=True)
    await owner.create("/gone", ephemeral=True)
    await owner.delete("/gone")
    with pytest.raises(MultiOpError):
        await owner.multi([Create("/never", ephemeral=True), Check("/missing", -1)])
    await other.create("/gone")  # a persistent node at a path the owner once held
    server.expire_session(owner.session_id)
    assert sorted(server.snapshot()) == ["/", "/gone"]


async def test_own_watches_do_not_fire_for_the_expiring_session():
    server = TwinServer()
    owner = server.connect()
    await owner.create("/e", ephemeral=True)
    await owner.get("/e", watch=True)
    server.expire_session(owner.session_id)
    assert drain(owner) == [LOST]


async def test_close_ends_the_session_and_later_calls_fail():
    server = TwinServer()
    store = server.connect()
    await store.create("/e", ephemeral=True)
    await store.close()
    await store.close()  # idempotent
    assert server.exists("/e") is None
    assert store.state is ClientState.CLOSED and server.session_ids() == []
    with pytest.raises(SessionExpiredError):
        await store.exists("/")
    assert drain(store) == []


async def test_close_while_suspended_leaves_the_session_to_expire():
    server = TwinServer()
    store = server.connect()
    await store.create("/e", ephemeral=True)
    server.disconnect(store.session_id)
    await store.close()  # the close request cannot reach the server
    assert server.exists("/e") is not None
    assert server.expire_session(store.session_id) is True
    assert server.exists("/e") is None
    assert drain(store) == [SUSPENDED]


# ---- many schedules ------------------------------------------------------------------------


async def crash_schedule(crash_at: int) -> tuple:
    """Two clients race for an ephemeral leader znode; one crashes after its N-th write."""
    server = TwinServer()
    a, b = server.connect(), server.connect()
    server.fail_after(crash_at, a, mode=FaultMode.REPLY_LOST)
    log = []
    for i in range(4):
        for name, store in (("a", a), ("b", b)):
            try:
                await store.ensure_path(f"/jobs/{i}")
                await store.create(f"/jobs/{i}/owner", name.encode(), ephemeral=True)
                log.append((name, i))
            except NodeExistsError:
                log.append((name, i, "lost"))
            except ConnectionLossError:
                log.append((name, i, "crash"))
                server.expire_session(store.session_id)
                a = server.connect()
    return log, server.snapshot()


async def test_crash_schedules_are_reproducible_and_leave_no_ephemeral_of_the_dead():
    for crash_at in range(1, 8):
        first, second = await crash_schedule(crash_at), await crash_schedule(crash_at)
        assert first == second
        log, snap = first
        owners = {stat.ephemeral_owner for _, stat in snap.values() if stat.ephemeral_owner}
        assert SESSION_ID_BASE + 1 not in owners  # the crashed session's ephemerals are gone


# ---- differential: the twin against real ZooKeeper -----------------------------------------

PATHS = ["/a", "/b", "/a/x", "/a/y", "/a/x/z", "/b/x", "/"]
DATA = st.sampled_from([b"", b"1", b"22"])
VERSIONS = st.sampled_from([-1, 0, 1])
WRITE_OPS = st.one_of(
    st.builds(Create, st.sampled_from(PATHS[:-1]), DATA, st.booleans(), st.booleans()),
    st.builds(SetData, st.sampled_from(PATHS), DATA, VERSIONS),
    st.builds(Delete, st.sampled_from(PATHS[:-1]), VERSIONS),
    st.builds(Check, st.sampled_from(PATHS), VERSIONS),
)
STEPS = st.one_of(
    st.tuples(st.just("op"), WRITE_OPS.filter(lambda op: not isinstance(op, Check))),
    st.tuples(st.just("multi"), st.lists(WRITE_OPS, max_size=3)),
    st.tuples(st.sampled_from(["get", "exists", "children"]), st.sampled_from(PATHS), st.booleans()),
)


async def run_program(store, steps) -> list:
    trace = []
    for step in steps:
        try:
            if step[0] == "op":
                op = step[1]
                if isinstance(op, Create):
                    result = await store.create(op.path, op.data, ephemeral=op.ephemeral, sequential=op.sequential)
                elif isinstance(op, SetData):
                    result = await store.set(op.path, op.data, op.version)
                else:
                    result = await store.delete(op.path, op.version)
            elif step[0] == "multi":
                result = await store.multi(step[1])
            else:
                kind, path, watch = step
                result = await getattr(store, kind)(path, watch=watch)
            trace.append(("ok", result))
        except MultiOpError as e:
            trace.append(("multi-error", e.index, type(e.cause).__name__))
        except (ZkError, ValueError) as e:
            trace.append(("error", type(e).__name__))
        trace.append(("events", drain(store)))
    return trace


def normalise(trace: list, session_id: int) -> list:
    """Zxids -> their rank among the zxids seen; times dropped; owners -> mine/none."""
    zxids = sorted({z for s in _stats(trace) for z in (s.czxid, s.mzxid, s.pzxid)})
    rank = {z: i for i, z in enumerate(zxids)}

    def norm(value):
        if isinstance(value, ZnodeStat):
            return (
                rank[value.czxid], rank[value.mzxid], rank[value.pzxid], value.version, value.cversion,
                value.aversion, value.ephemeral_owner == session_id, value.data_length, value.num_children,
            )
        if isinstance(value, (list, tuple)):
            return type(value)(norm(v) for v in value)
        return value

    return norm(trace)


def _stats(value):
    if isinstance(value, ZnodeStat):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _stats(v)


_programs = itertools.count()


@pytest.mark.zk
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEPS, min_size=1, max_size=25))
def test_twin_matches_real_zookeeper_on_random_programs(zk_server, zk_chroot, steps):
    from znodes.store import connect

    async def real() -> list:
        chroot = f"{zk_chroot}/p{next(_programs)}_{uuid.uuid4().hex[:6]}"
        store = await connect(zk_server.connect_string + chroot, create_chroot=True)
        try:
            return normalise(await run_program(store, steps), store.session_id)
        finally:
            await store.close()

    async def twin() -> list:
        store = TwinServer().connect("/p", create_chroot=True)
        return normalise(await run_program(store, steps), store.session_id)

    assert asyncio.run(twin()) == asyncio.run(real())
