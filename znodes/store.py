"""KazooStore: the :class:`znodes.api.Store` contract over a real ZooKeeper, through kazoo.

Usage::

    store = await znodes.store.connect("127.0.0.1:2181/kafka", create_chroot=True)
    await store.create("/controller_epoch", b"1")
    data, stat = await store.get("/controller_epoch", watch=True)
    reads = await store.get_many(["/a", "/b"])  # multiRead (3.6+): [(data, stat) | None, ...]
    await store.fenced_multi([SetData("/brokers/topics/t", b"{}")], stat.version)
    event = await store.events.get()      # WatchEvent / SessionEvent, in ZooKeeper's order
    await store.close()

How kazoo's threads meet the event loop: every kazoo call uses its ``*_async`` form, whose
completion is handed to the loop with ``loop.call_soon_threadsafe``; watch callbacks and
session-state changes travel the same way. Completions, watches and session changes all pass
through ONE kazoo worker queue, in the order the connection thread read them off the wire, so
the loop sees them in ZooKeeper's order: a watch event that ZooKeeper sent before a reply is
on ``store.events`` by the time the awaiting coroutine resumes. No kazoo thread touches caller
state.

Watches follow ZooKeeper (and the Java client's single default watcher): one notification per
path and change, even when both a data and a child watch were set on a path that is deleted.

Session states:

* ``SUSPENDED`` - the connection dropped; the session may still be alive (its ephemerals
  remain) and kazoo reconnects by itself. Calls fail fast with ConnectionLossError while
  suspended, and requests in flight when it dropped fail with ConnectionLossError too: their
  outcome is unknown, so re-read before retrying. A controller must write nothing until
  ``CONNECTED`` arrives again. Every watch set so far is DROPPED (kazoo does not re-send
  them, unlike the Java client; the twin does the same).
* ``CONNECTED`` - (re)connected to the SAME session after a suspension: re-read and re-watch
  whatever you follow, since changes made meanwhile fired nothing. The initial connection
  is not reported: ``connect`` returns a connected store.
* ``LOST`` - the session expired (or the server closed it): ephemerals are gone and watches
  are void. The store is then dead like an expired Java ZooKeeper handle: every later call
  raises SessionExpiredError and kazoo is stopped in the background. Connect a new store
  (a controller resigns and re-runs the election on the new session).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable

import kazoo.exceptions as kx
from kazoo.client import KazooClient
from kazoo.handlers.threading import AsyncResult as _KazooAsyncResult
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.hosts import collect_hosts
from kazoo.protocol.states import EventType as KazooEventType
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry
from kazoo.security import OPEN_ACL_UNSAFE

from znodes import batch, multiwrite
from znodes.api import (
    CONTROLLER_EPOCH_PATH,
    BadVersionError,
    Check,
    ConnectionLossError,
    Create,
    Delete,
    EventType,
    FencedError,
    MultiOpError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SessionEvent,
    SessionExpiredError,
    SessionState,
    SetData,
    WatchEvent,
    ZkError,
    ZnodeStat,
)
from znodes.batch import check_path as validate_path  # ZooKeeper's rules, as the twin's
from znodes.multiread import MultiRead
from znodes.paths import host_port
from znodes.poll_select import poll_select
from znodes.multiwrite import CHECK as _CHECK
from znodes.multiwrite import CREATE as _CREATE
from znodes.multiwrite import DELETE as _DELETE
from znodes.multiwrite import SET_DATA as _SET_DATA
from znodes.multiwrite import stat_from_wire

# How often a connect in progress looks whether its caller was cancelled: a stopping daemon
# waits at most this long for the connect thread, not the whole connect timeout.
CONNECT_POLL_S = 0.1
# Reconnect quickly (local and in-datacenter ensembles): 50 ms first, doubling, at most 1 s
# between attempts, forever - the session timeout, not the client, decides when to give up.
_RECONNECT = dict(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0)
# Paths per multiRead request: a few hundred small znodes (partition states, records) make a
# reply of tens of KiB, so one request replaces hundreds of round trips while a reply of even
# large topic znodes stays a few MiB.
MULTI_READ_MAX_PATHS = 250
# A recursive delete retries this often when others add or remove children meanwhile.
_RECURSIVE_DELETE_ATTEMPTS = 5

_EVENT_TYPES = {
    KazooEventType.CREATED: EventType.CREATED,
    KazooEventType.DELETED: EventType.DELETED,
    KazooEventType.CHANGED: EventType.CHANGED,
    KazooEventType.CHILD: EventType.CHILD,
}
_SESSION_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}
_ERRORS: list[tuple[type, type]] = [
    (kx.NoNodeError, NoNodeError),
    (kx.NodeExistsError, NodeExistsError),
    (kx.BadVersionError, BadVersionError),
    (kx.NotEmptyError, NotEmptyError),
    (kx.NoChildrenForEphemeralsError, NoChildrenForEphemeralsError),
    (kx.ConnectionClosedError, SessionExpiredError),  # the client was closed
    (kx.SessionExpiredError, SessionExpiredError),
    (kx.ConnectionLoss, ConnectionLossError),
    (kx.ConnectionDropped, ConnectionLossError),
    (kx.OperationTimeoutError, ConnectionLossError),
]


def _check_data(data: bytes) -> None:
    if not isinstance(data, bytes):
        raise TypeError(f"znode data must be bytes, not {type(data).__name__}")


def _check_version(version: int) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < -1:
        raise ValueError(f"version must be an int >= -1, not {version!r}")


def _map_error(exc: BaseException, path: str | None = None) -> BaseException:
    """kazoo's exception -> the contract's error (anything unknown becomes a ZkError)."""
    for kazoo_type, ours in _ERRORS:
        if isinstance(exc, kazoo_type):
            return ours(f"{ours.__name__}: {path}" if path else "", path)
    if isinstance(exc, kx.BadArgumentsError):
        return ValueError(f"ZooKeeper refused the arguments for {path!r}")
    if isinstance(exc, (ZkError, ValueError, TypeError)):
        return exc
    return ZkError(f"{type(exc).__name__}: {exc} ({path})", path)


# kazoo's Stat fields: the wire's order (znodes.multiwrite.stat_from_wire fills ours from
# them through the slots: a multiRead of 1,000 answers 1,000 stats, and the frozen dataclass's
# __init__, a guarded setattr per field, was most of converting them).
_KAZOO_STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeralOwner",
                      "dataLength", "numChildren", "pzxid")


def _slot_filler():
    from kazoo.protocol.states import ZnodeStat as KazooStat

    if tuple(KazooStat._fields) != _KAZOO_STAT_FIELDS:
        return None
    from_wire = stat_from_wire

    def fill(s) -> ZnodeStat:
        return from_wire(s) if type(s) is KazooStat else _stat_by_name(s)

    return fill


def _stat_by_name(s) -> ZnodeStat:
    return ZnodeStat(
        czxid=s.czxid,
        mzxid=s.mzxid,
        pzxid=s.pzxid,
        ctime=s.ctime,
        mtime=s.mtime,
        version=s.version,
        cversion=s.cversion,
        aversion=s.aversion,
        ephemeral_owner=s.ephemeralOwner,
        data_length=s.dataLength,
        num_children=s.numChildren,
    )


_stat = _slot_filler() or _stat_by_name  # by name when kazoo's order differs


def _join(parent: str, name: str) -> str:
    return ("" if parent == "/" else parent) + "/" + name


class _OrderedAsyncResult(_KazooAsyncResult):
    """Completion callbacks go to the WATCH queue, behind the events read before the reply."""

    def _do_callbacks(self):
        for callback in self._callbacks:
            if self._handler.running:
                self._handler.callback_queue.put(functools.partial(callback, self))
            else:
                functools.partial(callback, self)()


class _OrderedHandler(SequentialThreadingHandler):
    """kazoo's threading handler, but with one ordered queue for completions and watches, and
    its select on poll (znodes.poll_select: no epoll instance opened and closed per call)."""

    def async_result(self):
        return _OrderedAsyncResult(self)

    def select(self, *args, **kwargs):
        return poll_select(*args, **kwargs)


class KazooStore:
    """The Store contract on a kazoo client. Create it with :func:`connect`."""

    def __init__(self, client: KazooClient, loop: asyncio.AbstractEventLoop, acl_for: Callable[[str], list] | None = None):
        self._client = client
        self._loop = loop
        # ZooKeeper ACLs of a znode this store creates, by its path (chroot-relative); None:
        # world-writable (OPEN_ACL_UNSAFE). znodes.security builds Kafka's.
        self._acl_for = acl_for
        self.events: asyncio.Queue = asyncio.Queue()
        self._client_id = client.client_id
        self._closed = False
        self._expired = False
        self._last_watch = None  # the kazoo event last delivered (dedupes a DELETED)
        self._shutdown_lock = threading.Lock()
        self._shut_down = False
        self._shutdown_future: asyncio.Future | None = None
        self._multi_read_supported = True
        client.add_listener(self._on_state)
        if not client.connected:  # it dropped between start() and add_listener()
            self._on_state(KazooState.SUSPENDED)

    # ---- identity --------------------------------------------------------------------------

    @property
    def session_id(self) -> int:
        return self._client_id[0]

    @property
    def client_id(self) -> tuple[int, bytes]:
        """(session id, password): what a client needs to attach to this session."""
        return self._client_id

    @property
    def chroot(self) -> str:
        """The chroot all paths are relative to ("" when none)."""
        return self._client.chroot or ""

    @property
    def hosts(self) -> str:
        return ",".join(host_port(h, p) for h, p in self._client.hosts) + self.chroot

    # ---- the contract ----------------------------------------------------------------------

    async def close(self) -> None:
        """End the session (its ephemerals go) and stop kazoo's threads. Idempotent."""
        self._closed = True
        if self._shutdown_future is None:
            self._shutdown_future = self._loop.run_in_executor(None, self._shutdown_kazoo)
        await asyncio.shield(self._shutdown_future)

    async def get(self, path: str, watch: bool = False) -> tuple[bytes, ZnodeStat]:
        validate_path(path)
        data, stat = await self._call(path, self._client.get_async, path, watch=self._watcher(watch))
        return (data or b""), _stat(stat)

    async def get_many(self, path_list) -> list[tuple[bytes, ZnodeStat] | None]:
        """Read many znodes, no watches: one result per path, in order, None where none exists.

        Sent as ZooKeeper 3.6+ multiRead requests of up to MULTI_READ_MAX_PATHS paths, all in
        flight at once on the session's connection; each request is read at one point of the
        server's order (not the whole call: it is many reads, not a snapshot). A server without
        multiRead (before 3.6) is read with single gets instead.
        """
        path_list = list(path_list)
        for path in path_list:
            validate_path(path)
        if not path_list:
            return []
        if not self._multi_read_supported:
            return list(await asyncio.gather(*(self._get_or_none(p) for p in path_list)))
        chunks = [path_list[i : i + MULTI_READ_MAX_PATHS] for i in range(0, len(path_list), MULTI_READ_MAX_PATHS)]
        try:
            replies = await asyncio.gather(*(self._call(None, self._multi_read_async, c) for c in chunks))
        except ZkError as e:
            if not isinstance(e.__cause__, kx.UnimplementedError):
                raise
            self._multi_read_supported = False
            return await self.get_many(path_list)
        out: list[tuple[bytes, ZnodeStat] | None] = []
        for chunk, reply in zip(chunks, replies):
            if len(reply) != len(chunk):
                raise ZkError(f"multiRead answered {len(reply)} results for {len(chunk)} paths")
            for path, r in zip(chunk, reply):
                if isinstance(r, kx.NoNodeError):
                    out.append(None)
                elif isinstance(r, BaseException):
                    raise _map_error(r, path)
                else:
                    out.append(((r[0] or b""), _stat(r[1])))
        return out

    def _multi_async(self, body: bytes):
        result = self._client.handler.async_result()
        self._client._call(multiwrite.PackedMulti(body), result)
        return result

    def _multi_read_async(self, path_list: list[str]):
        chroot = self.chroot
        wire = [path if not chroot else chroot if path == "/" else chroot + path for path in path_list]
        result = self._client.handler.async_result()
        self._client._call(MultiRead(wire), result)
        return result

    async def _get_or_none(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return await self.get(path)
        except NoNodeError:
            return None

    async def exists(self, path: str, watch: bool = False) -> ZnodeStat | None:
        validate_path(path)
        stat = await self._call(path, self._client.exists_async, path, watch=self._watcher(watch))
        return None if stat is None else _stat(stat)

    async def get_acls(self, path: str) -> list:
        """The znode's ZooKeeper ACL (kazoo ``ACL`` entries); NoNodeError when it is gone. Only
        this store has it (the security checks of znodes.secure_paths run on it)."""
        validate_path(path)
        acls, _ = await self._call(path, self._client.get_acls_async, path)
        return list(acls)

    async def children(self, path: str, watch: bool = False) -> list[str]:
        validate_path(path)
        names = await self._call(path, self._client.get_children_async, path, watch=self._watcher(watch))
        return sorted(names)

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        validate_path(path, sequential=sequential)
        _check_data(data)
        if path == "/":
            raise NodeExistsError(f"NodeExistsError: {path}", path)
        batch.check_single(Create(path, data, ephemeral, sequential), self.chroot)
        return await self._call(
            path,
            self._client.create_async,
            path,
            data,
            acl=self._acl(path),
            ephemeral=bool(ephemeral),
            sequence=bool(sequential),
            makepath=bool(makepath),
        )

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        validate_path(path)
        _check_data(data)
        _check_version(version)
        batch.check_single(SetData(path, data, version), self.chroot)
        return _stat(await self._call(path, self._client.set_async, path, data, version))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        validate_path(path)
        _check_version(version)
        if path == "/":
            raise ValueError("refusing to delete the root (or the chroot itself) through this store")
        if recursive:
            await self._delete_recursive(path, version)
        else:
            await self._call(path, self._client.delete_async, path, version)

    async def ensure_path(self, path: str) -> None:
        validate_path(path)
        await self._call(path, self._client.ensure_path_async, path, acl=self._acl(path))

    def _acl(self, path: str) -> list | None:
        return None if self._acl_for is None else self._acl_for(path)

    async def multi(self, ops: list[Op]) -> list:
        if type(ops) is not batch.CheckedChunk:  # a writer's chunk was checked when queued
            ops = list(ops)
            for op in ops:
                batch.check_op(op)
            batch.check_multi(ops, self.chroot)
        self._check_usable()
        # The request packed here (znodes.multiwrite), not through kazoo's Transaction: its
        # records, headers and stats cost about 2 us more per op, and a flush of 100,000 ops
        # spent most of its client time in them. Paths were checked above.
        chroot = self.chroot
        acl_for = self._acl_for
        records = []
        for op in ops:
            path = op.path if not chroot else chroot if op.path == "/" else chroot + op.path
            if isinstance(op, SetData):
                records.append((_SET_DATA, path, op.data, op.version, None, 0))
            elif isinstance(op, Create):
                flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                acl = OPEN_ACL_UNSAFE if acl_for is None else acl_for(op.path)
                records.append((_CREATE, path, op.data, -1, acl, flags))
            elif isinstance(op, Delete):
                records.append((_DELETE, path, None, op.version, None, 0))
            else:
                records.append((_CHECK, path, None, op.version, None, 0))
        raw = await self._call(None, self._multi_async, multiwrite.pack_ops(records))
        if len(raw) != len(ops):
            raise ZkError(f"multi answered {len(raw)} results for {len(ops)} ops")
        for r in raw:
            if isinstance(r, BaseException):
                break
        else:
            # created paths (un-chrooted by kazoo), stats, True for delete and check
            return [None if r is True else r for r in raw]
        # Every op reports: the failing one its error, the others "rolled back" (code 0
        # before it, runtime inconsistency after it). The first real error is the cause.
        failures = [(i, r) for i, r in enumerate(raw) if isinstance(r, BaseException)]
        causes = [(i, r) for i, r in failures if not isinstance(r, (kx.RolledBackError, kx.RuntimeInconsistency))]
        index, exc = causes[0] if causes else failures[0]
        raise MultiOpError(index, _map_error(exc, ops[index].path), ops)

    async def fenced_multi(self, ops: list[Op], epoch_zkversion: int) -> list:
        if not isinstance(epoch_zkversion, int) or isinstance(epoch_zkversion, bool):
            raise TypeError(f"epoch_zkversion must be an int, not {epoch_zkversion!r}")
        check = Check(CONTROLLER_EPOCH_PATH, epoch_zkversion)
        if type(ops) is batch.CheckedChunk:  # sized with the check in it: only the check is new
            batch.check_op(check)
            fenced = batch.CheckedChunk([check, *ops], ops.size)
        else:
            ops = list(ops)
            fenced = [check, *ops]
        try:
            results = await self.multi(fenced)
        except MultiOpError as e:
            if e.index == 0:
                raise FencedError(
                    f"{CONTROLLER_EPOCH_PATH} is no longer at zkVersion {epoch_zkversion} ({e.cause!r}): "
                    "this controller is deposed",
                    CONTROLLER_EPOCH_PATH,
                ) from e
            raise MultiOpError(e.index - 1, e.cause, ops) from None
        return results[1:]

    # ---- recursive delete ------------------------------------------------------------------

    async def _delete_recursive(self, path: str, version: int) -> None:
        """Delete ``path`` and its subtree: one atomic multi when it fits, else in chunks."""
        for _ in range(_RECURSIVE_DELETE_ATTEMPTS):
            stat = await self.exists(path)
            if stat is None:
                raise NoNodeError(f"NoNodeError: {path}", path)
            if version != -1 and stat.version != version:
                raise BadVersionError(f"BadVersionError: {path}", path)
            tree = await self._subtree(path)
            # Children before parents; the top node last, carrying the caller's version.
            ops: list[Op] = [Delete(p) for p in reversed(tree[1:])] + [Delete(path, version)]
            try:
                for chunk in batch.plan_chunks(ops, chroot=self.chroot):
                    await self.multi(chunk)
                return
            except MultiOpError as e:
                if isinstance(e.cause, (NotEmptyError, NoNodeError)) and e.cause.path != path:
                    continue  # the subtree changed under us: walk it again
                if isinstance(e.cause, NotEmptyError):
                    continue
                raise e.cause from None
        raise NotEmptyError(f"NotEmptyError: {path} kept gaining children while being deleted", path)

    async def _subtree(self, path: str) -> list[str]:
        """``path`` and every descendant, parents before children."""
        out, level = [path], [path]
        while level:
            kids = await asyncio.gather(*(self._children_or_none(p) for p in level))
            level = [_join(p, k) for p, names in zip(level, kids) if names for k in names]
            out.extend(level)
        return out

    async def _children_or_none(self, path: str) -> list[str] | None:
        try:
            return await self.children(path)
        except NoNodeError:
            return None

    # ---- plumbing between kazoo's threads and the loop --------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise SessionExpiredError("store is closed")
        if self._expired:
            raise SessionExpiredError("session expired: connect a new store")
        if not self._client.connected:
            raise ConnectionLossError("not connected to ZooKeeper (session suspended)")

    def _watcher(self, watch: bool) -> Callable | None:
        return self._on_watch if watch else None

    def _call(self, path: str | None, fn: Callable, *args, **kwargs) -> asyncio.Future:
        self._check_usable()
        fut = self._loop.create_future()
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            raise _map_error(e, path) from e
        result.rawlink(functools.partial(self._complete, fut, path))
        return fut

    def _complete(self, fut: asyncio.Future, path: str | None, result) -> None:
        # kazoo worker thread
        self._post(self._settle, fut, path, result)

    @staticmethod
    def _settle(fut: asyncio.Future, path: str | None, result) -> None:
        # event loop thread
        if fut.done():
            return
        try:
            fut.set_result(result.get_nowait())
        except BaseException as e:
            mapped = _map_error(e, path)
            if mapped is not e:
                mapped.__cause__ = e  # the kazoo error stays visible (get_many's fallback)
            fut.set_exception(mapped)

    def _post(self, fn: Callable, *args) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the loop is closed: nobody is left to tell

    def _on_watch(self, event) -> None:
        # kazoo worker thread. ZooKeeper sends one notification; kazoo hands the same event
        # object to the data and to the child watcher of a deleted path: deliver it once.
        if event is self._last_watch:
            return
        self._last_watch = event
        etype = _EVENT_TYPES.get(event.type)
        if etype is not None and not self._closed:
            self._post(self.events.put_nowait, WatchEvent(etype, event.path))

    def _on_state(self, state: str) -> None:
        # kazoo connection thread (or the thread calling stop()); must not block.
        if self._closed or self._expired:
            return
        if state == KazooState.LOST:
            self._expired = True
        session_event = SessionEvent(_SESSION_STATES[state])
        # Through the watch queue, so the state change keeps its place among the events.
        self._client.handler.callback_queue.put(functools.partial(self._deliver_session, session_event))

    def _deliver_session(self, event: SessionEvent) -> None:
        # kazoo worker thread
        self._post(self.events.put_nowait, event)
        if event.state is SessionState.LOST:
            self._post(self._stop_after_expiry)

    def _stop_after_expiry(self) -> None:
        # Loop thread: kazoo would open a fresh session; this store's session is over.
        if self._shutdown_future is None:
            self._shutdown_future = self._loop.run_in_executor(None, self._shutdown_kazoo)

    def _shutdown_kazoo(self) -> None:
        with self._shutdown_lock:
            if self._shut_down:
                return
            self._shut_down = True
            try:
                self._client.stop()
            finally:
                self._client.close()


async def connect(
    hosts: str,
    timeout: float = 10.0,
    session_timeout: float = 10.0,
    *,
    create_chroot: bool = False,
    client_options: dict | None = None,
    acl_for: Callable[[str], list] | None = None,
) -> KazooStore:
    """Connect to ``hosts`` ("h:p,h2:p/chroot"); the chroot must exist unless ``create_chroot``.

    ``timeout`` bounds the wait for the first connection (ConnectionLossError after it);
    ``session_timeout`` is requested from the server, which clamps it to its min/max.
    ``client_options`` go to KazooClient as they are (``auth_data``, ``use_ssl``, ``ca``,
    ``certfile``, ``keyfile``: znodes.security builds them); ``acl_for(path)``
    gives the ACL of every znode created (the chroot's too).
    """
    if timeout <= 0 or session_timeout <= 0:
        raise ValueError("timeout and session_timeout must be positive")
    try:
        host_list, chroot = collect_hosts(hosts)
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(f"bad ZooKeeper connect string {hosts!r}: {e}") from None
    if not host_list:
        raise ValueError(f"bad ZooKeeper connect string {hosts!r}: no host")
    chroot = chroot or ""
    if chroot:
        validate_path(chroot)
        if chroot == "/":
            chroot = ""
    loop = asyncio.get_running_loop()
    server_list = ",".join(host_port(h, p) for h, p in host_list)  # kazoo took the brackets off
    # The connect runs in a thread, which a cancelled caller (a daemon told to stop while
    # ZooKeeper is away) cannot interrupt: it polls this flag instead of waiting out the whole
    # timeout, and a client made after the caller left is closed, not leaked.
    abort = threading.Event()
    made: list[KazooClient] = []
    handover = threading.Lock()

    def start(client_hosts: str) -> KazooClient:
        handler = _OrderedHandler()
        client = KazooClient(
            hosts=client_hosts,
            timeout=session_timeout,
            handler=handler,
            connection_retry=KazooRetry(sleep_func=handler.sleep_func, **_RECONNECT),
            command_retry=KazooRetry(sleep_func=handler.sleep_func, max_tries=0),
            **(client_options or {}),
        )
        # start_async + wait, not start(): start() warns about a missing chroot, which
        # open_client() reports as an error instead.
        live = client.start_async()
        deadline = time.monotonic() + timeout
        while not live.is_set() and not abort.is_set() and (left := deadline - time.monotonic()) > 0:
            live.wait(min(left, CONNECT_POLL_S))
        if not client.connected or abort.is_set():
            client.stop()
            client.close()
            if abort.is_set():
                raise ConnectionLossError(f"connecting to ZooKeeper at {client_hosts}: cancelled")
            raise ConnectionLossError(f"could not connect to ZooKeeper at {client_hosts} within {timeout:g}s")
        return client

    def open_client() -> KazooClient:
        if chroot and create_chroot:
            admin = start(server_list)
            try:
                admin.ensure_path(chroot, acl=None if acl_for is None else acl_for("/"))
            finally:
                admin.stop()
                admin.close()
        client = start(server_list + chroot)
        try:
            missing = bool(chroot) and not create_chroot and client.exists("/") is None
        except BaseException:
            # A refused login (SessionClosedRequireSasl, NoAuth) fails the first read: stop
            # the client before the error reaches the caller, or its thread goes on logging
            # its reconnects after the command printed its message.
            client.stop()
            client.close()
            raise
        if missing:
            client.stop()
            client.close()
            raise NoNodeError(
                f"chroot {chroot} does not exist on {server_list} (connect with create_chroot=True to create it)",
                chroot,
            )
        return client

    def open_and_hand_over() -> KazooClient:
        client = open_client()
        with handover:
            if abort.is_set():
                client.stop()
                client.close()
                raise ConnectionLossError(f"connecting to ZooKeeper at {server_list}: cancelled")
            made.append(client)
        return client

    try:
        client = await loop.run_in_executor(None, open_and_hand_over)
    except kx.KazooException as e:  # e.g. the connection dropped after a refused SASL login
        raise _map_error(e, chroot or "/") from None
    except asyncio.CancelledError:
        with handover:
            abort.set()
            orphan = made[0] if made else None
        if orphan is not None:  # connected just as the caller left: nobody else will close it
            loop.run_in_executor(None, lambda: (orphan.stop(), orphan.close()))
        raise
    return KazooStore(client, loop, acl_for)
