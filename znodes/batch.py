"""Write many znode operations as few ZooKeeper multi-ops, each under ``jute.maxbuffer``.

A controller writing thousands of znodes one request at a time pays one round trip and one
transaction-log fsync per znode. :class:`BatchedWriter` packs the ops into multi-ops sized by
their exact jute ENCODED size (the bytes ZooKeeper receives and logs), so each request stays
below the server's 1 MiB ``jute.maxbuffer`` - a larger request makes the server drop the
connection, and a larger logged transaction would keep it from reading its own log back.

Each multi-op (a "chunk") is atomic; the chunks are NOT atomic with each other. They are sent
one after another, in order, and the first failing chunk stops the flush: earlier chunks
stay applied, the failing chunk is rolled back by ZooKeeper, later chunks are never sent.
:class:`FlushError` says exactly which ops are applied, which never ran, and which (on a
connection loss) are in doubt. When fenced, EVERY chunk carries the ``/controller_epoch``
check, so a deposed controller's chunk never lands.

Usage::

    writer = BatchedWriter(store)
    writer.extend(Create(f"/brokers/topics/t{i}", payload) for i in range(20_000))
    results = await writer.flush(epoch_zkversion=3)   # fenced; one result per op, in order

The sizing functions are pure and also used by :mod:`znodes.store` to refuse an oversized
request before anything is sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from znodes.api import (
    CONTROLLER_EPOCH_PATH,
    Check,
    ConnectionLossError,
    Create,
    Delete,
    FencedError,
    MultiOpError,
    Op,
    SessionExpiredError,
    SetData,
    Store,
    ZkError,
)
from znodes.paths import validate_path

# ZooKeeper's default jute.maxbuffer (0xfffff): the largest request packet a server accepts,
# and the largest record it reads back from its transaction log.
JUTE_MAXBUFFER = 0xFFFFF
# A logged transaction is slightly larger than the request that caused it: the txn header
# (client id, cxid, zxid, time, type: 32 bytes) replaces the 8-byte request header, and a
# create's txn adds the ephemeral flag and the parent's cversion. Keep this much room so the
# logged record stays readable.
TXN_HEADROOM = 64
# Inside a multi, every op's txn is wrapped as (type, length-prefixed bytes): 8 bytes where
# the request has a 9-byte multi header, plus up to 5 more for a create. Counted per op.
TXN_EXTRA_PER_MULTI_OP = 5
# Batches default to a 64 KiB safety margin below the hard limit: the multi's response (a
# stat per SetData, a path per Create) and a server started with a lower jute.maxbuffer
# still fit, at a cost of about 6% more requests.
DEFAULT_MAX_REQUEST_BYTES = JUTE_MAXBUFFER - 64 * 1024
# One multi is one transaction the server applies while other clients wait; 1,000 ops keep
# each request a few milliseconds of server work while amortising the round trip and fsync.
MAX_OPS_PER_MULTI = 1000

_REQUEST_HEADER = 8  # xid, type
_MULTI_HEADER = 9  # type, done flag, err: before each op and once at the end
_INT = 4
# Every create carries one ACL: world:anyone with all permissions (perms + two strings).
_OPEN_ACL = _INT + (_INT + (_INT + len(b"world")) + (_INT + len(b"anyone")))


class RequestTooLargeError(ValueError):
    """A request (one op or a whole multi) cannot fit ZooKeeper's ``jute.maxbuffer``."""


class FlushError(ZkError):
    """A flush stopped at a failing chunk; it tells which ops landed.

    ``cause``: the error of the failing chunk (a :class:`MultiOpError` whose ``index`` is
    global over the flushed ops, or a connection/session error). ``index``: the global index
    of the failing op when known, else ``None``. ``applied``: how many leading ops are applied
    for sure (``results`` holds their results). ``in_doubt``: ops of the chunk that was in flight
    when the connection broke (applied or not: re-read before retrying). ``unsent``: ops that
    were never applied (the rolled-back chunk and every later one), in order.
    """

    def __init__(
        self,
        message: str,
        cause: Exception,
        *,
        index: int | None,
        results: list,
        in_doubt: list[Op],
        unsent: list[Op],
    ):
        super().__init__(message, getattr(cause, "path", None))
        self.cause = cause
        self.index = index
        self.results = results
        self.applied = len(results)
        self.in_doubt = in_doubt
        self.unsent = unsent


class FencedFlushError(FlushError, FencedError):
    """The epoch check of a chunk failed: this controller is deposed (also a FencedError)."""


def _string_size(s: str) -> int:
    return _INT + len(s.encode("utf-8"))


def _buffer_size(b: bytes) -> int:
    return _INT + len(b)


def _wire_path(path: str, chroot: str) -> str:
    # The client sends chroot-prefixed paths; "/" is the chroot itself.
    if not chroot:
        return path
    return chroot if path == "/" else chroot + path


def op_body_size(op: Op, chroot: str = "") -> int:
    """Jute-encoded size of one op's request record (no headers)."""
    path = _string_size(_wire_path(op.path, chroot))
    if isinstance(op, Create):
        return path + _buffer_size(op.data) + _OPEN_ACL + _INT  # + flags
    if isinstance(op, SetData):
        return path + _buffer_size(op.data) + _INT  # + version
    if isinstance(op, (Delete, Check)):
        return path + _INT  # + version
    raise TypeError(f"not a store op: {op!r}")


def single_request_size(op: Op, chroot: str = "") -> int:
    """Bytes ZooKeeper must accept (and log) for ``op`` sent alone, headroom included."""
    return _REQUEST_HEADER + op_body_size(op, chroot) + TXN_HEADROOM


def multi_op_size(op: Op, chroot: str = "") -> int:
    """What ``op`` adds to a multi: its multi header, record, and the txn's extra bytes."""
    return _MULTI_HEADER + op_body_size(op, chroot) + TXN_EXTRA_PER_MULTI_OP


# A multi's fixed cost: request header, the closing multi header and the txn headroom.
MULTI_BASE_SIZE = _REQUEST_HEADER + _MULTI_HEADER + TXN_HEADROOM


def multi_request_size(ops: Sequence[Op], chroot: str = "") -> int:
    """Bytes ZooKeeper must accept (and log) for ``ops`` sent as one multi."""
    return MULTI_BASE_SIZE + sum(multi_op_size(op, chroot) for op in ops)


def check_single(op: Op, chroot: str = "", limit: int = JUTE_MAXBUFFER) -> None:
    size = single_request_size(op, chroot)
    if size > limit:
        raise RequestTooLargeError(
            f"{type(op).__name__} of {op.path!r} encodes to {size} bytes, over ZooKeeper's "
            f"{limit}-byte request limit (jute.maxbuffer); nothing was sent"
        )


def check_multi(ops: Sequence[Op], chroot: str = "", limit: int = JUTE_MAXBUFFER) -> None:
    size = multi_request_size(ops, chroot)
    if size > limit:
        raise RequestTooLargeError(
            f"multi of {len(ops)} ops encodes to {size} bytes, over ZooKeeper's {limit}-byte "
            f"request limit (jute.maxbuffer); nothing was sent (use znodes.batch.BatchedWriter)"
        )


# Paths of these characters with no "." or ".." name are valid on sight: the common case
# (Kafka's paths, topic names), which skips the character-by-character check.
_PLAIN_PATH = re.compile(r"(?:/(?!\.\.?(?:/|$))[A-Za-z0-9._\-]+)+")


def check_path(path: str, sequential: bool = False) -> None:
    """ZooKeeper's path rules (znodes.paths.validate_path), with a fast path for plain paths."""
    if isinstance(path, str) and _PLAIN_PATH.fullmatch(path):
        return
    validate_path(path, sequential=sequential)


def check_op(op: Op) -> None:
    """Refuse a malformed op (bad path, non-bytes data, bad version) before it is queued."""
    if not isinstance(op, (Create, SetData, Delete, Check)):
        raise TypeError(f"not a store op: {op!r}")
    check_path(op.path, sequential=isinstance(op, Create) and op.sequential)
    if isinstance(op, (Create, SetData)) and not isinstance(op.data, bytes):
        raise TypeError(f"data of {op.path!r} must be bytes, not {type(op.data).__name__}")
    if not isinstance(op, Create):
        if not isinstance(op.version, int) or isinstance(op.version, bool) or op.version < -1:
            raise ValueError(f"version of {op.path!r} must be an int >= -1, not {op.version!r}")


def _plain_op_size(op: Op, chroot_bytes: int) -> int | None:
    """:func:`multi_op_size` of an op :func:`check_op` accepts on sight (an exact op type, a
    plain ASCII path, bytes data, an int version >= -1); None for anything else, which the
    caller checks the long way. A flush of 100,000 ops queues them all through here."""
    kind = type(op)
    if kind is not SetData and kind is not Create and kind is not Delete and kind is not Check:
        return None
    path = op.path
    if type(path) is not str or not _PLAIN_PATH.fullmatch(path):
        return None
    # A plain path is ASCII: its UTF-8 length is its length (and it is never "/").
    size = _MULTI_HEADER + _INT + chroot_bytes + len(path) + TXN_EXTRA_PER_MULTI_OP
    if kind is SetData:
        data, version = op.data, op.version
        if type(data) is bytes and type(version) is int and version >= -1:
            return size + _INT + len(data) + _INT
    elif kind is Create:
        data = op.data
        if type(data) is bytes:
            return size + _INT + len(data) + _OPEN_ACL + _INT
    elif kind is Delete or kind is Check:
        version = op.version
        if type(version) is int and version >= -1:
            return size + _INT
    return None


def plan_chunks(
    ops: Sequence[Op],
    *,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    max_ops: int = MAX_OPS_PER_MULTI,
    chroot: str = "",
    fenced: bool = False,
    sizes: Sequence[int] | None = None,
) -> list[list[Op]]:
    """Split ``ops`` in order into chunks that each fit one multi (with the epoch check if fenced).

    ``sizes`` may carry each op's :func:`multi_op_size` when already known. Raises
    RequestTooLargeError, before anything could be sent, if one op alone cannot fit.
    """
    base = _chunk_base(chroot, fenced)
    if fenced:
        max_ops -= 1  # the check takes one slot
    if max_ops < 1:
        raise ValueError("max_ops leaves no room for an op")
    if sizes is None:
        sizes = [multi_op_size(op, chroot) for op in ops]
    chunks: list[list[Op]] = []
    current: list[Op] = []
    size = base
    for i, (op, op_size) in enumerate(zip(ops, sizes)):
        if base + op_size > max_request_bytes:
            raise _too_large(i, op, op_size, base, max_request_bytes)
        if current and (size + op_size > max_request_bytes or len(current) >= max_ops):
            chunks.append(current)
            current, size = [], base
        current.append(op)
        size += op_size
    if current:
        chunks.append(current)
    return chunks


def _chunk_base(chroot: str, fenced: bool) -> int:
    """A chunk's fixed size: the multi's own bytes, plus the epoch check when fenced."""
    base = MULTI_BASE_SIZE
    if fenced:
        base += multi_op_size(Check(CONTROLLER_EPOCH_PATH, 0), chroot)
    return base


def _too_large(i: int, op: Op, op_size: int, base: int, limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(
        f"op {i} ({type(op).__name__} of {op.path!r}) encodes to {op_size} bytes; with the "
        f"multi's own {base} bytes it exceeds the {limit}-byte request limit; nothing was sent"
    )


class CheckedChunk(list):
    """A chunk a BatchedWriter planned: every op passed :func:`check_op` when queued and the
    chunk was sized to fit one multi (the epoch check included). A store may skip checking
    such a chunk again (KazooStore does: re-checking 100,000 queued ops was measurable).
    ``size``: its :func:`multi_request_size` as planned (with the epoch check when fenced), or
    None: a store wrapper that changes an op's data (controller.shell.journal.RecordIds) keeps
    the chunk checked when the size it grows to still fits."""

    __slots__ = ("size",)

    def __init__(self, ops=(), size: int | None = None):
        super().__init__(ops)
        self.size = size


def _flatten(chunks: list[list[Op]]) -> list[Op]:
    return [op for chunk in chunks for op in chunk]


class BatchedWriter:
    """Collects ops and writes them as size- and count-capped multi-ops. See the module doc."""

    def __init__(
        self,
        store: Store,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        *,
        max_ops: int = MAX_OPS_PER_MULTI,
    ):
        if not 0 < max_request_bytes <= JUTE_MAXBUFFER:
            raise ValueError(f"max_request_bytes must be in 1..{JUTE_MAXBUFFER}, not {max_request_bytes}")
        if max_ops < 2:
            raise ValueError("max_ops must be at least 2 (a fenced chunk holds the check and one op)")
        self.store = store
        self.max_request_bytes = max_request_bytes
        self.max_ops = max_ops
        # Paths travel chroot-prefixed, so the chroot counts toward every op's size.
        self.chroot: str = getattr(store, "chroot", "") or ""
        self._chroot_bytes = len(self.chroot.encode("utf-8"))
        self._ops: list[Op] = []
        self._sizes: list[int] = []  # each queued op's multi_op_size, computed once
        # Every op must fit a fenced chunk on its own, whichever flush it ends up in.
        self._largest_op = max_request_bytes - _chunk_base(self.chroot, fenced=True)

    def __len__(self) -> int:
        return len(self._ops)

    def _checked_size(self, i: int, op: Op) -> int:
        size = _plain_op_size(op, self._chroot_bytes)
        if size is None:
            check_op(op)
            size = multi_op_size(op, self.chroot)
        if size > self._largest_op:
            raise _too_large(i, op, size, self.max_request_bytes - self._largest_op, self.max_request_bytes)
        return size

    def add(self, op: Op) -> None:
        """Queue one op; refuses (and queues nothing) if it is malformed or could never fit."""
        size = self._checked_size(len(self._ops), op)
        self._ops.append(op)
        self._sizes.append(size)

    def extend(self, ops: Iterable[Op]) -> None:
        """Queue ops in order; if any is malformed or could never fit, queues none of them."""
        ops = list(ops)
        sizes = [self._checked_size(len(self._ops) + i, op) for i, op in enumerate(ops)]
        self._ops.extend(ops)
        self._sizes.extend(sizes)

    def chunks(self, fenced: bool = False) -> list[list[Op]]:
        """How the queued ops would be split (nothing is sent)."""
        return plan_chunks(
            self._ops,
            max_request_bytes=self.max_request_bytes,
            max_ops=self.max_ops,
            chroot=self.chroot,
            fenced=fenced,
            sizes=self._sizes,
        )

    async def flush(self, epoch_zkversion: int | None = None) -> list:
        """Send every queued op; return one result per op, in order (see Store.multi).

        With ``epoch_zkversion`` each chunk is a ``fenced_multi``. The queue is emptied whatever
        happens; on failure a :class:`FlushError` (or :class:`FencedFlushError`) tells what landed.
        """
        fenced = epoch_zkversion is not None
        chunks = []
        base, sizes, at = _chunk_base(self.chroot, fenced), self._sizes, 0
        for chunk in self.chunks(fenced=fenced):
            chunks.append(CheckedChunk(chunk, base + sum(sizes[at : at + len(chunk)])))
            at += len(chunk)
        self._ops, self._sizes = [], []
        results: list = []
        done = 0
        for n, chunk in enumerate(chunks):
            try:
                if fenced:
                    chunk_results = await self.store.fenced_multi(chunk, epoch_zkversion)
                else:
                    chunk_results = await self.store.multi(chunk)
            except FencedError as e:
                raise FencedFlushError(
                    f"chunk {n + 1}/{len(chunks)} fenced off after {done} ops: {e}",
                    e,
                    index=None,
                    results=results,
                    in_doubt=[],
                    unsent=chunk + _flatten(chunks[n + 1 :]),
                ) from e
            except MultiOpError as e:
                index = done + e.index
                cause = MultiOpError(index, e.cause, _flatten(chunks))
                raise FlushError(
                    f"chunk {n + 1}/{len(chunks)} failed at op {index}: {e.cause!r}; {done} ops applied",
                    cause,
                    index=index,
                    results=results,
                    in_doubt=[],
                    unsent=chunk + _flatten(chunks[n + 1 :]),
                ) from e
            except (ValueError, TypeError) as e:
                # The store refused the chunk before sending it (e.g. an invalid path).
                raise FlushError(
                    f"chunk {n + 1}/{len(chunks)} refused after {done} ops: {e}",
                    e,
                    index=None,
                    results=results,
                    in_doubt=[],
                    unsent=chunk + _flatten(chunks[n + 1 :]),
                ) from e
            except (ConnectionLossError, SessionExpiredError) as e:
                # The chunk may have been applied before the connection broke.
                raise FlushError(
                    f"chunk {n + 1}/{len(chunks)} in doubt after {done} ops: {e!r}",
                    e,
                    index=None,
                    results=results,
                    in_doubt=chunk,
                    unsent=_flatten(chunks[n + 1 :]),
                ) from e
            results.extend(chunk_results)
            done += len(chunk)
        return results
