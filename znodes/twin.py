"""The deterministic ZooKeeper twin: an in-memory server with ZooKeeper's semantics.

:class:`TwinServer` holds one znode tree and its sessions; :meth:`TwinServer.connect` gives a
:class:`TwinStore`, which implements the :class:`znodes.api.Store` contract exactly like
``KazooStore`` does over a real ZooKeeper. No threads, no sleeping, no wall clock: every call
completes before it returns, watch events are put on the owning store's ``events`` queue
(``put_nowait``) at the moment of the write, and time comes from an injected clock. The same
script therefore always produces the same zxids, stats and event sequences, which lets a
simulation run thousands of crash schedules a minute.

Usage::

    server = TwinServer()                       # clock: a ManualClock at 1600000000000 ms
    store = server.connect("/kafka", create_chroot=True)   # a new session in a chroot
    other = server.connect("/kafka")
    await store.create("/controller", b"{}", ephemeral=True)
    data, stat = await other.get("/controller", watch=True)
    server.expire_session(store.session_id)     # its ephemerals go, its queue gets LOST,
    await other.events.get()                    # WatchEvent(DELETED, "/controller") is there
    server.fail_after(2, store=other)           # other's 2nd write from now applies, then
                                                # its next call raises ConnectionLossError
    server.reconnect(other.session_id)          # ...until this (SUSPENDED, then CONNECTED)
    server.snapshot()                           # {abs path: (data, ZnodeStat)} for asserts
    server.clock.advance(1000)                  # time moves only when told

What ZooKeeper does and the twin reproduces:

* zxid: one per write transaction, failed ones included (ZooKeeper logs an error txn); a multi
  is one transaction, so all its ops share a zxid; session creation and closing are
  transactions too. czxid/mzxid/pzxid, ctime/mtime (the clock, read once per transaction),
  version, cversion, aversion, ephemeral owner, data length, child count.
* cversion and sequence numbers: ZooKeeper counts child creations internally, names a
  sequential child with that count (``%010d``) and reports ``cversion = 2 * creations -
  children`` (one change per create and per delete). So deleting children does not move the
  sequence counter, as on a real server.
* Errors in ZooKeeper's order; ephemerals cannot have children; deleting "/" or
  ``/zookeeper`` is refused; a multi is atomic and fails with the first failing op's error.
* One-shot watches, fired in ZooKeeper's order: create fires CREATED on the node then CHILD
  on its parent; delete fires DELETED on the node (once per session even when it held both a
  data and a child watch there) then CHILD on its parent; a multi fires in op order.
* Sessions: a closing or expiring session's ephemerals are deleted in one transaction (in
  path order) and their watches fire for the other sessions.
* Connection loss (``disconnect``, or a fault): the store gets SUSPENDED, its calls raise
  ConnectionLossError and its watches are dropped, as kazoo drops them; ``reconnect`` puts
  CONNECTED and the caller re-reads (and re-watches) what it needs.

Fault injection: :meth:`TwinServer.fail_after` arms a connection loss at the N-th write
request (create, set, delete, multi; each create of ``ensure_path`` counts) of one store or of
any store, in one of three :class:`FaultMode` s: NEXT_CALL (the write is applied and answered;
the store's next call raises ConnectionLossError), REPLY_LOST (the write is applied but its
caller gets ConnectionLossError: the ambiguous case) and NOT_APPLIED (the write never reaches
the server; its caller gets ConnectionLossError). Each leaves the store SUSPENDED until
``reconnect`` or ``expire_session``.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from znodes import batch
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
from znodes.paths import basename, join, parent, validate_path

# A recent, fixed instant (2020-09-13), so default twins agree with each other.
DEFAULT_START_MS = 1_600_000_000_000
# ZooKeeper puts the server id in a session id's top byte; the twin is server 1. Ids increase.
SESSION_ID_BASE = 1 << 56
# Nodes every ZooKeeper 3.5+ server has; they cannot be deleted ("special paths").
SYSTEM_PATHS = ("/zookeeper", "/zookeeper/config", "/zookeeper/quota")


class ManualClock:
    """A clock in milliseconds that moves only when told: ``clock.advance(250)``."""

    def __init__(self, start_ms: int = DEFAULT_START_MS):
        self._now = start_ms

    def __call__(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a clock does not go back")
        self._now += ms
        return self._now


class FaultMode(enum.Enum):
    NEXT_CALL = "next_call"  # applied and answered; the store's next call fails
    REPLY_LOST = "reply_lost"  # applied; the caller gets ConnectionLossError
    NOT_APPLIED = "not_applied"  # never reaches the server; the caller gets ConnectionLossError


class ClientState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    EXPIRED = "expired"
    CLOSED = "closed"


class BadArgumentsError(ZkError, ValueError):
    """ZooKeeper's BADARGUMENTS: deleting "/" or a system node such as ``/zookeeper``."""


class _Node:
    __slots__ = (
        "data",
        "czxid",
        "mzxid",
        "pzxid",
        "ctime",
        "mtime",
        "version",
        "creates",
        "aversion",
        "owner",
        "children",
    )

    def __init__(self, data: bytes, zxid: int, now: int, owner: int = 0):
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.ctime = self.mtime = now
        self.version = 0
        self.creates = 0  # children ever created: ZooKeeper's internal cversion
        self.aversion = 0
        self.owner = owner
        self.children: set[str] = set()

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            czxid=self.czxid,
            mzxid=self.mzxid,
            pzxid=self.pzxid,
            ctime=self.ctime,
            mtime=self.mtime,
            version=self.version,
            # ZooKeeper's DataNode.copyStat: creations -> changes (each create and delete).
            cversion=2 * self.creates - len(self.children),
            aversion=self.aversion,
            ephemeral_owner=self.owner,
            data_length=len(self.data),
            num_children=len(self.children),
        )


@dataclass(slots=True)
class _Fault:
    remaining: int
    sid: int | None
    mode: FaultMode


class _Session:
    __slots__ = ("sid", "chroot", "store", "state", "alive", "doomed")

    def __init__(self, sid: int, chroot: str):
        self.sid = sid
        self.chroot = chroot
        self.store: TwinStore | None = None
        self.state = ClientState.CONNECTED
        self.alive = True  # server side: the session exists (its ephemerals live)
        self.doomed = False  # a NEXT_CALL fault fired: the next call loses the connection

    def to_abs(self, path: str) -> str:
        if not self.chroot:
            return path
        return self.chroot if path == "/" else self.chroot + path

    def to_rel(self, path: str) -> str:
        if not self.chroot:
            return path
        return "/" if path == self.chroot else path[len(self.chroot):]


class _OpFailed(Exception):
    def __init__(self, index: int, error: ZkError):
        self.index = index
        self.error = error


class TwinServer:
    """One in-memory ZooKeeper: the tree, the sessions, the watches. See the module docstring."""

    def __init__(self, clock: Callable[[], int] | None = None):
        self.clock: Callable[[], int] = clock if clock is not None else ManualClock()
        self._zxid = 0
        root = _Node(b"", 0, 0)
        self._nodes: dict[str, _Node] = {"/": root}
        for path in SYSTEM_PATHS:
            # As on a real server: stats all zero, so /zookeeper reports cversion -2 and /
            # cversion -1, and /zookeeper/config has aversion -1 (it has its own ACL).
            self._nodes[path] = _Node(b"", 0, 0)
            self._nodes[parent(path)].children.add(basename(path))
        self._nodes["/zookeeper/config"].aversion = -1
        self._data_watches: dict[str, dict[int, None]] = {}
        self._child_watches: dict[str, dict[int, None]] = {}
        self._ephemerals: dict[int, set[str]] = {}  # session id -> paths of its ephemerals
        self._sessions: dict[int, _Session] = {}
        self._next_sid = SESSION_ID_BASE
        self._faults: list[_Fault] = []
        self._writes = 0

    # ---- inspection (no session, no watches) ----------------------------------------------

    @property
    def zxid(self) -> int:
        """The zxid of the last transaction."""
        return self._zxid

    @property
    def write_requests(self) -> int:
        """Write requests received so far (what ``fail_after`` counts)."""
        return self._writes

    def exists(self, path: str) -> ZnodeStat | None:
        node = self._nodes.get(validate_path(path))
        return None if node is None else node.stat()

    def read(self, path: str) -> tuple[bytes, ZnodeStat]:
        node = self._nodes.get(validate_path(path))
        if node is None:
            raise _err(NoNodeError, path)
        return node.data, node.stat()

    def children(self, path: str) -> list[str]:
        node = self._nodes.get(validate_path(path))
        if node is None:
            raise _err(NoNodeError, path)
        return sorted(node.children)

    def snapshot(self, *, include_system: bool = False) -> dict[str, tuple[bytes, ZnodeStat]]:
        """Every znode, ``{absolute path: (data, stat)}`` in path order."""
        return {
            path: (node.data, node.stat())
            for path, node in sorted(self._nodes.items())
            if include_system or not _is_system(path)
        }

    def dump(self, *, include_system: bool = False) -> str:
        """The tree as text, one znode a line, for test failure messages."""
        lines = []
        for path, (data, stat) in self.snapshot(include_system=include_system).items():
            owner = f" ephemeral={stat.ephemeral_owner:#x}" if stat.ephemeral_owner else ""
            lines.append(
                f"{path} {data!r} czxid={stat.czxid} mzxid={stat.mzxid} pzxid={stat.pzxid} "
                f"version={stat.version} cversion={stat.cversion}{owner}"
            )
        return "\n".join(lines)

    def session_ids(self) -> list[int]:
        """Sessions the server still holds (not expired, not closed)."""
        return [sid for sid, s in self._sessions.items() if s.alive]

    def client_state(self, sid: int) -> ClientState:
        return self._session(sid).state

    # ---- sessions -------------------------------------------------------------------------

    def connect(self, chroot: str = "", *, create_chroot: bool = False) -> TwinStore:
        """Open a session (a transaction, as in ZooKeeper) and return its store.

        As ``znodes.store.connect``: a missing chroot raises NoNodeError unless
        ``create_chroot``, which first creates it (and its parents) from a short-lived session.
        """
        if chroot == "/":
            chroot = ""
        if chroot:
            validate_path(chroot)
            if chroot not in self._nodes:
                if not create_chroot:
                    raise NoNodeError(f"chroot {chroot} does not exist on this twin", chroot)
                self._make_path(chroot)
        return self._open_session(chroot).store

    def _open_session(self, chroot: str) -> _Session:
        self._next_sid += 1
        session = _Session(self._next_sid, chroot)
        self._sessions[session.sid] = session
        self._zxid += 1  # createSession
        session.store = TwinStore(self, session)
        return session

    def _make_path(self, path: str) -> None:
        admin = self._open_session("")
        missing = [path]
        while parent(missing[-1]) not in self._nodes:
            missing.append(parent(missing[-1]))
        for target in reversed(missing):
            self._write(admin, [Create(target)], multi=False)
        self._close(admin)

    def disconnect(self, sid: int) -> None:
        """Lose the store's connection: SUSPENDED, watches dropped, calls raise ConnectionLoss.

        The session lives on (its ephemerals stay) until :meth:`reconnect` or
        :meth:`expire_session`. A no-op if the store is already suspended.
        """
        session = self._session(sid)
        if session.state is ClientState.CONNECTED:
            self._suspend(session)
        elif session.state is not ClientState.SUSPENDED:
            raise ValueError(f"session {sid:#x} is {session.state.value}; it cannot disconnect")

    def reconnect(self, sid: int) -> None:
        """Restore a suspended store's connection to its live session: CONNECTED."""
        session = self._session(sid)
        if session.state is ClientState.CONNECTED:
            return
        if session.state is not ClientState.SUSPENDED or not session.alive:
            raise ValueError(f"session {sid:#x} is {session.state.value}; it cannot reconnect")
        session.state = ClientState.CONNECTED
        session.doomed = False
        self._deliver(session, SessionEvent(SessionState.CONNECTED))

    def expire_session(self, sid: int) -> bool:
        """Expire a session: its ephemerals are deleted (one transaction, watches fire for the
        other sessions), its store gets LOST and every later call raises SessionExpiredError.

        Returns False (and does nothing) if the server no longer holds the session.
        """
        session = self._session(sid)
        if not session.alive:
            return False
        self._drop_watches(sid)
        self._close_session(session)
        if session.state in (ClientState.CONNECTED, ClientState.SUSPENDED):
            session.state = ClientState.EXPIRED
            self._deliver(session, SessionEvent(SessionState.LOST))
        return True

    def fail_after(
        self,
        n_writes: int,
        store: TwinStore | int | None = None,
        mode: FaultMode = FaultMode.NEXT_CALL,
    ) -> None:
        """Arm a connection loss at the ``n_writes``-th write request from now (1 = the next).

        ``store``: a store or session id to count that store's writes only; None counts every
        store's, and the store that makes the n-th write is the one that loses its connection.
        See :class:`FaultMode` for whether the write is applied.
        """
        if isinstance(n_writes, bool) or not isinstance(n_writes, int) or n_writes < 1:
            raise ValueError(f"n_writes must be an int >= 1, got {n_writes!r}")
        if not isinstance(mode, FaultMode):
            raise TypeError(f"mode must be a FaultMode, got {mode!r}")
        sid = store.session_id if isinstance(store, TwinStore) else store
        if sid is not None:
            self._session(sid)
        self._faults.append(_Fault(n_writes, sid, mode))

    def clear_faults(self) -> None:
        self._faults.clear()

    # ---- requests from stores -------------------------------------------------------------

    def _session(self, sid: int) -> _Session:
        try:
            return self._sessions[sid]
        except KeyError:
            raise ValueError(f"no session {sid!r} on this twin") from None

    def _gate(self, session: _Session, write: bool) -> FaultMode | None:
        """Admit a request, or raise the error the client would get. For a write, returns the
        fault that fires on it, if any."""
        if session.state in (ClientState.EXPIRED, ClientState.CLOSED):
            raise SessionExpiredError(f"session {session.sid:#x} is {session.state.value}")
        if session.state is ClientState.SUSPENDED:
            raise ConnectionLossError(f"session {session.sid:#x} is disconnected")
        if session.doomed:
            self._suspend(session)
            raise ConnectionLossError("connection lost (injected fault)")
        if not write:
            return None
        self._writes += 1
        fired = None
        for fault in list(self._faults):
            if fault.sid is None or fault.sid == session.sid:
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._faults.remove(fault)
                    fired = fired or fault.mode
        if fired is FaultMode.NOT_APPLIED:
            self._suspend(session)
            raise ConnectionLossError("connection lost before the write reached the server (injected)")
        return fired

    def _after_write(self, session: _Session, fault: FaultMode | None) -> None:
        if fault is FaultMode.REPLY_LOST:
            self._suspend(session)
            raise ConnectionLossError("connection lost after the write was applied (injected)")
        if fault is FaultMode.NEXT_CALL:
            session.doomed = True

    def _write(self, session: _Session, ops: list[Op], multi: bool) -> list:
        """Run one write request (a transaction) for a session, with faults and watches."""
        fault = self._gate(session, write=True)
        try:
            results = self._transact(session, ops)
        except _OpFailed as failed:
            self._after_write(session, fault)
            if multi:
                raise MultiOpError(failed.index, failed.error, ops) from None
            raise failed.error from None
        self._after_write(session, fault)
        return results

    def _read(self, session: _Session) -> None:
        self._gate(session, write=False)

    def _suspend(self, session: _Session) -> None:
        session.state = ClientState.SUSPENDED
        session.doomed = False
        self._drop_watches(session.sid)
        self._deliver(session, SessionEvent(SessionState.SUSPENDED))

    def _close(self, session: _Session) -> None:
        """The store closes. Connected: the session ends now (a transaction deleting its
        ephemerals). Suspended: the close never reaches the server, so the session and its
        ephemerals live until :meth:`expire_session`, as with a real client."""
        if session.state is ClientState.CONNECTED:
            self._drop_watches(session.sid)
            self._close_session(session)
        session.state = ClientState.CLOSED
        session.doomed = False

    def _close_session(self, session: _Session) -> None:
        session.alive = False
        self._zxid += 1  # closeSession: one transaction deletes every ephemeral
        zxid = self._zxid
        owned = sorted(self._ephemerals.get(session.sid, ()))
        triggers: list[tuple[EventType, str]] = []
        for path in owned:
            self._delete_node(path, zxid, triggers, undo=None)
        self._ephemerals.pop(session.sid, None)
        self._fire(triggers)

    # ---- transactions ---------------------------------------------------------------------

    def _transact(self, session: _Session, ops: list[Op]) -> list:
        """Apply ``ops`` atomically as one transaction; raise _OpFailed (all undone) or return
        the per-op results. Watches fire only when it commits."""
        self._zxid += 1  # consumed even by a failing transaction, as ZooKeeper logs an error txn
        zxid = self._zxid
        now = self.clock()
        undo: list[Callable[[], None]] = []
        triggers: list[tuple[EventType, str]] = []
        results: list = []
        for index, op in enumerate(ops):
            try:
                results.append(self._apply(session, op, zxid, now, triggers, undo))
            except ZkError as error:
                for step in reversed(undo):
                    step()
                raise _OpFailed(index, error) from None
        self._fire(triggers)
        return results

    def _apply(self, session, op, zxid, now, triggers, undo):
        path = session.to_abs(op.path)
        if isinstance(op, Create):
            return session.to_rel(self._create(session, op, path, zxid, now, triggers, undo))
        if isinstance(op, SetData):
            return self._set(session, op, path, zxid, now, triggers, undo)
        if isinstance(op, Delete):
            node = self._nodes.get(path)
            if path == "/" or path in SYSTEM_PATHS:
                raise BadArgumentsError(f"cannot delete {op.path}", op.path)
            if node is None:
                raise _err(NoNodeError, op.path)
            if op.version != -1 and op.version != node.version:
                raise _err(BadVersionError, op.path)
            if node.children:
                raise _err(NotEmptyError, op.path)
            self._delete_node(path, zxid, triggers, undo)
            return None
        if isinstance(op, Check):
            node = self._nodes.get(path)
            if node is None:
                raise _err(NoNodeError, op.path)
            if op.version != -1 and op.version != node.version:
                raise _err(BadVersionError, op.path)
            return None
        raise TypeError(f"not an op: {op!r}")

    def _create(self, session, op: Create, path, zxid, now, triggers, undo) -> str:
        if path == "/":
            raise _err(NodeExistsError, op.path)
        parent_path = parent(path)
        parent_node = self._nodes.get(parent_path)
        if parent_node is None:
            raise _err(NoNodeError, op.path)
        if op.sequential:
            path = f"{path}{parent_node.creates:010d}"
        if path in self._nodes:
            raise _err(NodeExistsError, op.path)
        if parent_node.owner:
            raise _err(NoChildrenForEphemeralsError, op.path)
        name = basename(path)
        saved = (parent_node.creates, parent_node.pzxid)
        parent_node.children.add(name)
        parent_node.creates += 1
        parent_node.pzxid = zxid
        owner = session.sid if op.ephemeral else 0
        self._nodes[path] = _Node(bytes(op.data), zxid, now, owner)
        if owner:
            self._ephemerals.setdefault(owner, set()).add(path)

        def revert() -> None:
            del self._nodes[path]
            parent_node.children.discard(name)
            parent_node.creates, parent_node.pzxid = saved
            if owner:
                self._ephemerals[owner].discard(path)

        undo.append(revert)
        triggers.append((EventType.CREATED, path))
        triggers.append((EventType.CHILD, parent_path))
        return path

    def _set(self, session, op: SetData, path, zxid, now, triggers, undo) -> ZnodeStat:
        node = self._nodes.get(path)
        if node is None:
            raise _err(NoNodeError, op.path)
        if op.version != -1 and op.version != node.version:
            raise _err(BadVersionError, op.path)
        saved = (node.data, node.version, node.mzxid, node.mtime)

        def revert() -> None:
            node.data, node.version, node.mzxid, node.mtime = saved

        undo.append(revert)
        node.data = bytes(op.data)
        node.version += 1
        node.mzxid = zxid
        node.mtime = now
        triggers.append((EventType.CHANGED, path))
        return node.stat()

    def _delete_node(self, path: str, zxid: int, triggers, undo) -> None:
        parent_path = parent(path)
        parent_node = self._nodes[parent_path]
        node = self._nodes.pop(path)
        name = basename(path)
        saved_pzxid = parent_node.pzxid
        parent_node.children.discard(name)
        parent_node.pzxid = max(parent_node.pzxid, zxid)
        if node.owner:
            self._ephemerals[node.owner].discard(path)
        if undo is not None:

            def revert() -> None:
                self._nodes[path] = node
                parent_node.children.add(name)
                parent_node.pzxid = saved_pzxid
                if node.owner:
                    self._ephemerals[node.owner].add(path)

            undo.append(revert)
        triggers.append((EventType.DELETED, path))
        triggers.append((EventType.CHILD, parent_path))

    # ---- watches --------------------------------------------------------------------------

    def _watch(self, table: dict[str, dict[int, None]], path: str, session: _Session) -> None:
        table.setdefault(path, {})[session.sid] = None

    def _fire(self, triggers: Iterable[tuple[EventType, str]]) -> None:
        for kind, path in triggers:
            if kind is EventType.CHILD:
                sids = list(self._child_watches.pop(path, {}))
            elif kind is EventType.DELETED:
                # ZooKeeper tells a session once even if it watched both data and children.
                sids = list(dict.fromkeys([*self._data_watches.pop(path, {}), *self._child_watches.pop(path, {})]))
            else:
                sids = list(self._data_watches.pop(path, {}))
            for sid in sids:
                session = self._sessions[sid]
                self._deliver(session, WatchEvent(kind, session.to_rel(path)))

    def _drop_watches(self, sid: int) -> None:
        for table in (self._data_watches, self._child_watches):
            for path in [p for p, sids in table.items() if sid in sids]:
                del table[path][sid]
                if not table[path]:
                    del table[path]

    def _deliver(self, session: _Session, event) -> None:
        assert session.store is not None
        session.store.events.put_nowait(event)


def _err(kind: type[ZkError], path: str) -> ZkError:
    # The same message KazooStore gives, naming the path as the caller wrote it.
    return kind(f"{kind.__name__}: {path}", path)


def _is_system(path: str) -> bool:
    return path == "/zookeeper" or path.startswith("/zookeeper/")


def _check_data(data: object) -> bytes:
    if not isinstance(data, bytes):
        raise TypeError(f"znode data must be bytes, not {type(data).__name__}")
    return data


def _check_version(version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < -1:
        raise ValueError(f"version must be an int >= -1, not {version!r}")
    return version


def _checked_op(op: object) -> Op:
    if isinstance(op, Create):
        validate_path(op.path, sequential=op.sequential)
        _check_data(op.data)
    elif isinstance(op, SetData):
        validate_path(op.path)
        _check_data(op.data)
        _check_version(op.version)
    elif isinstance(op, (Delete, Check)):
        validate_path(op.path)
        _check_version(op.version)
    else:
        raise TypeError(f"not a store op: {op!r}")
    return op


class TwinStore:
    """A session on a :class:`TwinServer`; the :class:`znodes.api.Store` contract.

    Its coroutines never suspend: each completes (or raises) before the caller's await ends.
    Argument checks match ``KazooStore``: bad paths raise ValueError, non-bytes data
    TypeError, a request over ZooKeeper's 1 MiB limit ``batch.RequestTooLargeError``; "/"
    cannot be created (NodeExistsError) or deleted (ValueError) through a store.
    """

    def __init__(self, server: TwinServer, session: _Session):
        self._server = server
        self._s = session
        self.events: asyncio.Queue = asyncio.Queue()

    def __repr__(self) -> str:
        return f"TwinStore(session={self._s.sid:#x}, chroot={self._s.chroot!r}, {self._s.state.value})"

    @property
    def session_id(self) -> int:
        return self._s.sid

    @property
    def chroot(self) -> str:
        return self._s.chroot

    @property
    def state(self) -> ClientState:
        return self._s.state

    @property
    def server(self) -> TwinServer:
        return self._server

    async def close(self) -> None:
        """End the session (its ephemerals go) if connected. Idempotent."""
        self._server._close(self._s)

    # ---- reads ------------------------------------------------------------------------------

    async def get(self, path: str, watch: bool = False) -> tuple[bytes, ZnodeStat]:
        abs_path = self._s.to_abs(validate_path(path))
        self._server._read(self._s)
        node = self._server._nodes.get(abs_path)
        if node is None:
            raise NoNodeError(f"NoNodeError: {path}", path)
        if watch:
            self._server._watch(self._server._data_watches, abs_path, self._s)
        return node.data, node.stat()

    async def exists(self, path: str, watch: bool = False) -> ZnodeStat | None:
        abs_path = self._s.to_abs(validate_path(path))
        self._server._read(self._s)
        node = self._server._nodes.get(abs_path)
        if watch:
            self._server._watch(self._server._data_watches, abs_path, self._s)
        return None if node is None else node.stat()

    async def children(self, path: str, watch: bool = False) -> list[str]:
        abs_path = self._s.to_abs(validate_path(path))
        self._server._read(self._s)
        node = self._server._nodes.get(abs_path)
        if node is None:
            raise NoNodeError(f"NoNodeError: {path}", path)
        if watch:
            self._server._watch(self._server._child_watches, abs_path, self._s)
        return sorted(node.children)

    # ---- writes -----------------------------------------------------------------------------

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
        op = Create(path, _check_data(data), bool(ephemeral), bool(sequential))
        if path == "/":
            raise NodeExistsError(f"NodeExistsError: {path}", path)
        batch.check_single(op, self._s.chroot)
        try:
            return self._server._write(self._s, [op], multi=False)[0]
        except NoNodeError:
            if not makepath:
                raise
        # As kazoo does: make the missing parents (each its own request), then create again.
        await self.ensure_path(path.rstrip("/") if sequential and path.endswith("/") else parent(path))
        return self._server._write(self._s, [op], multi=False)[0]

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        op = _checked_op(SetData(path, _check_data(data), _check_version(version)))
        batch.check_single(op, self._s.chroot)
        return self._server._write(self._s, [op], multi=False)[0]

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        op = _checked_op(Delete(path, _check_version(version)))
        if path == "/":
            raise ValueError("refusing to delete the root (or the chroot itself) through this store")
        if not recursive:
            self._server._write(self._s, [op], multi=False)
            return
        await self._delete_tree(path, version)

    async def _delete_tree(self, path: str, version: int) -> None:
        # As KazooStore does: the node must exist (at ``version``); the subtree goes children
        # before parents, the top node last with the caller's version, as few multis as fit.
        stat = await self.exists(path)
        if stat is None:
            raise NoNodeError(f"NoNodeError: {path}", path)
        if version != -1 and stat.version != version:
            raise BadVersionError(f"BadVersionError: {path}", path)
        tree, level = [path], [path]
        while level:
            level = [join(p, name) for p in level for name in await self.children(p)]
            tree.extend(level)
        ops: list[Op] = [Delete(p) for p in reversed(tree[1:])] + [Delete(path, version)]
        for chunk in batch.plan_chunks(ops, chroot=self._s.chroot):
            try:
                await self.multi(chunk)
            except MultiOpError as e:
                raise e.cause from None

    async def ensure_path(self, path: str) -> None:
        validate_path(path)
        # Kazoo's ensure_path: find the deepest existing ancestor, then create each missing
        # node below it with empty data, one request each; a concurrent create is fine.
        missing = []
        current = path
        while await self.exists(current) is None:
            missing.append(current)
            if current == "/":
                break
            current = parent(current)
        for target in reversed(missing):
            try:
                self._server._write(self._s, [Create(target)], multi=False)
            except NodeExistsError:
                pass

    async def multi(self, ops: list[Op]) -> list:
        checked = [_checked_op(op) for op in ops]
        batch.check_multi(checked, self._s.chroot)
        return self._server._write(self._s, checked, multi=True)

    async def fenced_multi(self, ops: list[Op], epoch_zkversion: int) -> list:
        if isinstance(epoch_zkversion, bool) or not isinstance(epoch_zkversion, int):
            raise TypeError(f"epoch_zkversion must be an int, not {epoch_zkversion!r}")
        ops = list(ops)
        try:
            results = await self.multi([Check(CONTROLLER_EPOCH_PATH, epoch_zkversion), *ops])
        except MultiOpError as e:
            if e.index == 0:
                raise FencedError(
                    f"{CONTROLLER_EPOCH_PATH} is no longer at zkVersion {epoch_zkversion} "
                    f"({e.cause!r}): this controller is deposed",
                    CONTROLLER_EPOCH_PATH,
                ) from e
            raise MultiOpError(e.index - 1, e.cause, ops) from None
        return results[1:]
