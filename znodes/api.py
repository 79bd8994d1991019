"""The store contract: what every ZooKeeper store in this project offers.

Two stores implement it: :class:`znodes.store.KazooStore` over a real ZooKeeper, and
:class:`znodes.twin.TwinStore` over the deterministic in-memory twin. The controller, the
simulated brokers and the tools only ever see this interface, so the same code runs on real
ZooKeeper and inside a deterministic simulation.

Usage::

    store = await znodes.store.connect("127.0.0.1:2181/kafka")   # chroot honoured
    await store.create("/admin/reassign_partitions", payload)
    data, stat = await store.get("/controller_epoch", watch=True)
    results = await store.fenced_multi([SetData("/brokers/topics/t", b"..", 3)], stat.version)
    event = await store.events.get()        # WatchEvent or SessionEvent, in firing order

Semantics are ZooKeeper's:

* Paths are absolute and relative to the store's chroot ("/" is the chroot itself).
* ``version=-1`` means "any version".
* Watches are one-shot. ``get(watch=True)`` fires CHANGED or DELETED; ``exists(watch=True)``
  fires CREATED, CHANGED or DELETED; ``children(watch=True)`` fires CHILD (or DELETED when
  the node itself goes). Events land on ``store.events`` (an ``asyncio.Queue``) in the order
  ZooKeeper fired them; no ZooKeeper client thread ever touches caller state.
* ``multi`` is atomic: all ops apply or none do. On failure it raises :class:`MultiOpError`
  carrying the index of the first failing op and that op's error.
* ``fenced_multi`` prepends ``Check("/controller_epoch", epoch_zkversion)``; if that check is
  what fails it raises :class:`FencedError` (the caller is a deposed controller and must
  resign). Its results omit the check's own result.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Protocol, Union, runtime_checkable

CONTROLLER_EPOCH_PATH = "/controller_epoch"


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    """ZooKeeper's Stat structure. Times are milliseconds since the epoch."""

    czxid: int
    mzxid: int
    pzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int


# ---- operations of a multi ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    version: int


Op = Union[Create, SetData, Delete, Check]
# Per-op results of a successful multi: Create -> created path (str), SetData -> ZnodeStat,
# Delete -> None, Check -> None.


# ---- errors -------------------------------------------------------------------------------


class ZkError(Exception):
    """Base of every store error. ``path`` names the znode concerned when known."""

    def __init__(self, message: str = "", path: str | None = None):
        super().__init__(message or self.__class__.__name__)
        self.path = path


class NoNodeError(ZkError):
    pass


class NodeExistsError(ZkError):
    pass


class BadVersionError(ZkError):
    pass


class NotEmptyError(ZkError):
    pass


class NoChildrenForEphemeralsError(ZkError):
    pass


class SessionExpiredError(ZkError):
    pass


class ConnectionLossError(ZkError):
    pass


class MultiOpError(ZkError):
    """A multi failed as a whole. ``index`` is the first failing op, ``cause`` its error."""

    def __init__(self, index: int, cause: ZkError, ops: list[Op] | None = None):
        op = ops[index] if ops is not None and 0 <= index < len(ops) else None
        super().__init__(f"multi op {index} failed: {cause!r} ({op!r})", getattr(cause, "path", None))
        self.index = index
        self.cause = cause


class FencedError(ZkError):
    """The ``/controller_epoch`` check of a fenced multi failed: this controller is deposed."""


# ---- events -------------------------------------------------------------------------------


class EventType(enum.Enum):
    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    CHILD = "child"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    path: str


class SessionState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"  # connection lost, session may still be alive: write nothing
    LOST = "lost"  # session expired: ephemerals are gone, resign


@dataclass(frozen=True, slots=True)
class SessionEvent:
    state: SessionState


Event = Union[WatchEvent, SessionEvent]


@runtime_checkable
class Store(Protocol):
    """An async ZooKeeper store. See the module docstring for semantics."""

    events: asyncio.Queue  # of Event

    @property
    def session_id(self) -> int: ...

    async def close(self) -> None: ...

    async def get(self, path: str, watch: bool = False) -> tuple[bytes, ZnodeStat]: ...

    async def exists(self, path: str, watch: bool = False) -> ZnodeStat | None: ...

    async def children(self, path: str, watch: bool = False) -> list[str]: ...

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str: ...

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat: ...

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None: ...

    async def ensure_path(self, path: str) -> None: ...

    async def multi(self, ops: list[Op]) -> list: ...

    async def fenced_multi(self, ops: list[Op], epoch_zkversion: int) -> list: ...
