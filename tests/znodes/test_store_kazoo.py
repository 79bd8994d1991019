"""KazooStore behaviour beyond the shared contract: connecting, chroots, session states,
pipelining, closing, and failover on a real three-server quorum."""

from __future__ import annotations

import asyncio
import threading

import pytest

from znodes.api import (
    ConnectionLossError,
    Create,
    NoNodeError,
    SessionEvent,
    SessionExpiredError,
    SessionState,
    WatchEvent,
    EventType,
)
from znodes.launcher import LocalZooKeeper, free_port
from znodes.store import connect, validate_path

TIMEOUT_S = 20.0


async def next_event(store, timeout=TIMEOUT_S):
    return await asyncio.wait_for(store.events.get(), timeout)


async def test_connect_refuses_missing_chroot(zk_server, zk_chroot):
    with pytest.raises(NoNodeError) as e:
        await connect(f"{zk_server.connect_string}{zk_chroot}/absent")
    assert "create_chroot" in str(e.value)


async def test_connect_creates_nested_chroot_when_asked(zk_server, zk_chroot):
    store = await connect(f"{zk_server.connect_string}{zk_chroot}/a/b", create_chroot=True)
    try:
        assert store.chroot == f"{zk_chroot}/a/b"
        assert store.hosts == f"{zk_server.connect_string}{zk_chroot}/a/b"
        await store.create("/inside")
    finally:
        await store.close()
    outside = await connect(f"{zk_server.connect_string}{zk_chroot}")
    try:
        assert await outside.children("/a/b") == ["inside"]
    finally:
        await outside.close()


async def test_connect_without_chroot_sees_the_whole_tree(zk_server, zk_chroot):
    store = await connect(zk_server.connect_string)
    try:
        assert store.chroot == ""
        assert zk_chroot.lstrip("/") in await store.children("/")
    finally:
        await store.close()


async def test_connect_to_a_closed_port_fails_within_timeout():
    port = free_port()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ConnectionLossError) as e:
        await connect(f"127.0.0.1:{port}", timeout=0.5)
    assert str(port) in str(e.value)
    assert loop.time() - started < 15  # 0.5 s to connect, plus stopping kazoo on a busy machine


def test_a_cancelled_connect_leaves_no_thread_waiting_out_its_timeout():
    """A daemon told to stop while ZooKeeper is away: the connect's thread sees the cancel
    within CONNECT_POLL_S and stops its client, so the loop's shutdown (asyncio.run waits for
    the default executor's threads) does not wait out the 30 s connect timeout."""
    import time

    async def cancel_a_connect():
        task = asyncio.ensure_future(connect(f"127.0.0.1:{free_port()}", timeout=30))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(cancel_a_connect())
    assert time.monotonic() - started < 10
    assert not [t for t in threading.enumerate() if t.name.startswith("asyncio_")]


@pytest.mark.parametrize("hosts", ["", "127.0.0.1:2181/bad//chroot", "127.0.0.1:2181/trailing/"])
async def test_connect_rejects_bad_connect_strings(hosts):
    with pytest.raises(ValueError):
        await connect(hosts, timeout=0.5)


async def test_bad_arguments_are_refused_before_sending(zk_hosts):
    store = await connect(zk_hosts)
    try:
        with pytest.raises(ValueError):
            await store.set("/a", b"x", version=-2)
        with pytest.raises(TypeError):
            await store.fenced_multi([], "3")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await store.multi(["not an op"])  # type: ignore[list-item]
        with pytest.raises(ValueError):
            await store.delete("/")
        assert await store.children("/") == []
    finally:
        await store.close()


def test_validate_path_matches_zookeeper_rules():
    validate_path("/")
    validate_path("/a/b.c/..d")
    validate_path("/parent/", sequential=True)
    for bad in ("/parent/", "/a/.", "/a\u007fb", "/a\ufff5", "/\ue000"):
        with pytest.raises(ValueError):
            validate_path(bad)
    with pytest.raises(TypeError):
        validate_path(b"/bytes")  # type: ignore[arg-type]


async def test_pipelined_calls_apply_in_submission_order(zk_hosts):
    store = await connect(zk_hosts)
    try:
        await store.create("/q")
        paths = await asyncio.gather(*(store.create("/q/n-", str(i).encode(), sequential=True) for i in range(300)))
        assert paths == sorted(paths) and len(set(paths)) == 300
        data = await asyncio.gather(*(store.get(p) for p in paths[:10]))
        assert [d for d, _ in data] == [str(i).encode() for i in range(10)]
    finally:
        await store.close()


async def test_cancelled_call_does_not_break_the_store(zk_hosts):
    store = await connect(zk_hosts)
    try:
        task = asyncio.ensure_future(store.create("/a", b"x"))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the request may or may not have landed; the store stays usable either way
        await store.ensure_path("/a")
        assert (await store.exists("/a")) is not None
    finally:
        await store.close()


def kazoo_threads() -> int:
    return sum(1 for t in threading.enumerate() if "_thread_worker" in t.name or "zk_loop" in t.name)


async def test_close_is_idempotent_and_ends_the_session(zk_hosts):
    threads_before = kazoo_threads()
    store = await connect(zk_hosts)
    await store.create("/e", ephemeral=True)
    await store.close()
    await store.close()
    with pytest.raises(SessionExpiredError):
        await store.get("/")
    assert store.events.empty()
    observer = await connect(zk_hosts)
    try:
        assert await observer.exists("/e") is None
    finally:
        await observer.close()
    assert kazoo_threads() == threads_before  # this store's kazoo threads are gone


async def test_expired_store_reports_lost_once_and_stays_dead(zk_server, zk_hosts):
    from kazoo.client import KazooClient

    store = await connect(zk_hosts)
    sid = store.session_id

    def takeover():
        other = KazooClient(hosts=zk_server.connect_string, client_id=store.client_id)
        other.start(timeout=10)
        other.stop()
        other.close()

    await asyncio.get_running_loop().run_in_executor(None, takeover)
    seen = []
    while SessionEvent(SessionState.LOST) not in seen:
        seen.append(await next_event(store))
    assert set(seen) <= {SessionEvent(SessionState.SUSPENDED), SessionEvent(SessionState.LOST)}
    with pytest.raises(SessionExpiredError):
        await store.create("/x")
    assert store.session_id == sid  # the id of the session that expired
    await store.close()
    assert store.events.empty()  # kazoo's fresh session was never reported as CONNECTED


async def test_server_restart_suspends_then_reconnects_same_session(tmp_path):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path / "zk", fsync=False)
    zk.start()
    try:
        # The server named twice: kazoo waits for a connect reply for the session timeout
        # divided by the number of hosts. A connect that lands while the restarted server is
        # still starting gets no reply; with one host kazoo would wait the whole 30 s, by
        # which time the restarted server has expired the session (CI saw exactly that).
        store = await connect(f"{zk.connect_string},{zk.connect_string}", session_timeout=30)
        try:
            await store.create("/e", b"alive", ephemeral=True)
            await store.get("/e", watch=True)
            sid = store.session_id
            await asyncio.get_running_loop().run_in_executor(None, zk.stop)
            assert await next_event(store) == SessionEvent(SessionState.SUSPENDED)
            with pytest.raises(ConnectionLossError):
                await store.get("/e")
            restarted = LocalZooKeeper(port=zk.members[0].client_port, data_dir=tmp_path / "zk", fsync=False)
            # the same port; kazoo keeps knocking on it meanwhile, so allow it a moment to free
            await asyncio.get_running_loop().run_in_executor(None, lambda: restarted.start(port_wait=10))
            zk = restarted
            # kazoo may have opened a socket while the server was still starting; it then waits
            # for the connect reply up to 15 s (see above) before trying again
            assert await next_event(store, timeout=15 + TIMEOUT_S) == SessionEvent(SessionState.CONNECTED)
            assert store.session_id == sid
            data, stat = await store.get("/e")
            assert data == b"alive" and stat.ephemeral_owner == sid
        finally:
            await store.close()
    finally:
        zk.stop()


async def test_quorum_member_crash_keeps_store_working(zk_ensemble):
    store = await connect(zk_ensemble.connect_string, session_timeout=30)
    try:
        await store.create("/failover", b"0", ephemeral=True)
        await store.exists("/failover", watch=True)
        port = store._client._connection._socket.getpeername()[1]
        member = next(m.id for m in zk_ensemble.members if m.client_port == port)
        await asyncio.get_running_loop().run_in_executor(None, zk_ensemble.kill_member, member)
        try:
            assert await next_event(store) == SessionEvent(SessionState.SUSPENDED)
            assert await next_event(store) == SessionEvent(SessionState.CONNECTED)
            # same session on another member: the ephemeral lives; watches must be set again
            await store.exists("/failover", watch=True)
            stat = await store.set("/failover", b"1")
            assert stat.ephemeral_owner == store.session_id and stat.version == 1
            assert await next_event(store) == WatchEvent(EventType.CHANGED, "/failover")
            assert await store.multi([Create("/after-crash")]) == ["/after-crash"]
        finally:
            await asyncio.get_running_loop().run_in_executor(None, zk_ensemble.restart_member, member)
        assert all(s["mode"] in ("leader", "follower") for s in zk_ensemble.status()["servers"])
        await store.delete("/after-crash")
    finally:
        await store.close()

