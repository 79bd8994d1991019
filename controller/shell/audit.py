"""The write audit: every write this controller commits, one JSON line each.

Operators (and tests/chaos) use it to check invariant 5 (DESIGN.md section 7) from outside the
controller: a write that landed at zxid ``z`` by a controller holding epoch ``e`` must have
``e`` equal to the ``/controller_epoch`` value current at ``z``. The audit records what the
controller believed it held, and where its write landed:

    {"event": "elected", "t": 1764030000.1, "controller": 101, "session": "0x1000...",
     "epoch": 4, "epoch_zkversion": 3, "mzxid": 4294967301}
    {"event": "write", "t": ..., "controller": 101, "session": ..., "fenced": true, "epoch": 4,
     "epoch_zkversion": 3, "zxid": 4294967355, "after_zxid": 4294967350, "ops": [["set", "/brokers/topics/t"], ...]}
    {"event": "write", ..., "fenced": false, ...}   # outside a fenced multi (registration, admin configs)
    {"event": "fenced", ..., "epoch": 4, "epoch_zkversion": 3, "ops": [...]}   # refused: deposed

``zxid`` is the multi's own transaction id when one of its ops is a setData (the reply carries
its mzxid; all ops of a multi share one zxid), else null; ``after_zxid`` is the last zxid the
client had seen before sending (the write landed after it) and ``upto_zxid`` the last one seen
once the reply was in (it landed at or before it), so a multi of creates and deletes is bounded
too. ``elected`` lines come from the election's multi (its setData of ``/controller_epoch``).

Enabled with the ``write_audit`` setting (``--write-audit FILE``, ``REASSIGND_WRITE_AUDIT=FILE``);
the file is appended to, one line per commit, flushed at once (a SIGKILL loses nothing written
before it)::

    store = AuditedStore(store, open_audit("/var/log/reassignd/audit.jsonl"), controller_id=101)
"""

from __future__ import annotations

import json
import time
from typing import IO

from znodes.api import CONTROLLER_EPOCH_PATH, Check, Create, Delete, FencedError, SetData, ZnodeStat

_KIND = {Create: "create", SetData: "set", Delete: "delete", Check: "check"}


def open_audit(path: str) -> IO[str]:
    """The audit file, opened for appending with line buffering."""
    return open(path, "a", buffering=1, encoding="utf-8")


class AuditedStore:
    """A Store that logs each committed fenced multi (and each election) to ``out``.

    Everything else is delegated unchanged. Epochs are learned from the election multis it sees
    (``/controller_epoch`` zkVersion -> epoch), so the audit needs nothing from the caller.
    """

    def __init__(self, store, out: IO[str], controller_id: int):
        self._store = store
        self._out = out
        self._controller_id = controller_id
        self._epochs: dict[int, int] = {}  # /controller_epoch zkVersion -> the epoch won with it
        self._held: int | None = None  # the zkVersion of the last election this store won

    def __getattr__(self, name):
        return getattr(self._store, name)

    def _last_zxid(self) -> int | None:
        client = getattr(self._store, "_client", None)  # kazoo's: the last reply header's zxid
        return getattr(client, "last_zxid", None)

    def _line(self, event: str, **fields) -> None:
        record = {"event": event, "t": round(time.time(), 4), "controller": self._controller_id,
                  "session": hex(getattr(self._store, "session_id", 0) or 0), **fields}
        self._out.write(json.dumps(record, separators=(",", ":")) + "\n")

    async def multi(self, ops):
        before = self._last_zxid()
        results = await self._store.multi(ops)
        elected = False
        for op, r in zip(ops, results):
            # The election: one multi creates /controller and bumps /controller_epoch.
            if isinstance(op, SetData) and op.path == CONTROLLER_EPOCH_PATH and isinstance(r, ZnodeStat):
                epoch = int(op.data)
                self._epochs[r.version] = epoch
                self._held = r.version
                self._line("elected", epoch=epoch, epoch_zkversion=r.version, mzxid=r.mzxid)
                elected = True
            elif isinstance(op, Create) and op.path == CONTROLLER_EPOCH_PATH:
                self._epochs[0] = int(op.data)
                self._held = 0
                self._line("elected", epoch=int(op.data), epoch_zkversion=0, mzxid=None)
                elected = True
        if not elected:
            self._unfenced(ops, results, before)
        return results

    # Writes outside a fenced multi are audited too (``"fenced": false``), with the epoch this
    # controller last won: the registration and admin config writes are legitimately unfenced,
    # but a controller-owned znode written this way is a fence bypassed (tests/chaos/checker.py).
    async def create(self, path, *args, **kwargs):
        before = self._last_zxid()
        result = await self._store.create(path, *args, **kwargs)
        self._unfenced([Create(path, b"")], [result], before)
        return result

    async def set(self, path, *args, **kwargs):
        before = self._last_zxid()
        result = await self._store.set(path, *args, **kwargs)
        self._unfenced([SetData(path, b"")], [result], before)
        return result

    async def delete(self, path, *args, **kwargs):
        before = self._last_zxid()
        result = await self._store.delete(path, *args, **kwargs)
        self._unfenced([Delete(path)], [result], before)
        return result

    def _unfenced(self, ops, results, before) -> None:
        zxids = {r.mzxid for r in results if isinstance(r, ZnodeStat)}
        self._line(
            "write",
            fenced=False,
            epoch=self._epochs.get(self._held) if self._held is not None else None,
            epoch_zkversion=self._held,
            zxid=min(zxids) if zxids else None,
            after_zxid=before,
            upto_zxid=self._last_zxid(),
            ops=[[_KIND.get(type(op), type(op).__name__), op.path] for op in ops],
        )

    async def fenced_multi(self, ops, epoch_zkversion: int):
        described = [[_KIND.get(type(op), type(op).__name__), op.path] for op in ops]
        epoch = self._epochs.get(epoch_zkversion)
        before = self._last_zxid()
        try:
            results = await self._store.fenced_multi(ops, epoch_zkversion)
        except FencedError:
            self._line("fenced", epoch=epoch, epoch_zkversion=epoch_zkversion, ops=described)
            raise
        zxids = {r.mzxid for r in results if isinstance(r, ZnodeStat)}
        self._line(
            "write",
            fenced=True,
            epoch=epoch,
            epoch_zkversion=epoch_zkversion,
            zxid=min(zxids) if zxids else None,
            after_zxid=before,
            upto_zxid=self._last_zxid(),
            ops=described,
        )
        return results
