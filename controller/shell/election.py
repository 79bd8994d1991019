"""Controller election through ZooKeeper: ONE multi-op creates ``/controller`` and bumps
``/controller_epoch``, so whoever holds ``/controller`` also holds the newest epoch.

The zkVersion of ``/controller_epoch`` after the bump is the fencing token: every write of the
active controller carries ``Check("/controller_epoch", that version)``. A standby watches
``/controller`` and campaigns again when it disappears (the active one's session ended).

    won = await try_elect(store, controller_id=101)     # Leadership(epoch, epoch_zkversion) or None
    won = await campaign(store, inbox, controller_id=101)   # waits as a standby until it wins;
                                                           # None if the session is lost
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from controller.shell.inbox import Inbox
from znodes import paths
from znodes.api import (
    BadVersionError,
    Create,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    SessionEvent,
    SessionState,
    SetData,
    Store,
    WatchEvent,
)
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_controller, decode_epoch, encode_controller, encode_epoch

log = logging.getLogger("reassignd.controller")

FIRST_EPOCH = 1
# A garbled /controller_epoch blocks every election until an operator fixes it; look again
# this often meanwhile.
BAD_EPOCH_RETRY_S = 2.0


@dataclass(frozen=True, slots=True)
class Leadership:
    epoch: int
    epoch_zkversion: int


async def try_elect(store: Store, controller_id: int, *, now_ms: int | None = None) -> Leadership | None:
    """One election attempt; None when another controller holds ``/controller``.

    Raises ZnodeFormatError if ``/controller_epoch`` is not an integer (nothing is written).
    """
    payload = encode_controller(controller_id, int(time.time() * 1000) if now_ms is None else now_ms)
    while True:
        try:
            data, stat = await store.get(paths.CONTROLLER_EPOCH)
        except NoNodeError:
            ops = [Create(paths.CONTROLLER, payload, ephemeral=True), Create(paths.CONTROLLER_EPOCH, encode_epoch(FIRST_EPOCH))]
            epoch = FIRST_EPOCH
        else:
            epoch = decode_epoch(paths.CONTROLLER_EPOCH, data) + 1
            ops = [Create(paths.CONTROLLER, payload, ephemeral=True), SetData(paths.CONTROLLER_EPOCH, encode_epoch(epoch), stat.version)]
        try:
            results = await store.multi(ops)
        except MultiOpError as e:
            if e.index == 0 and isinstance(e.cause, NodeExistsError):
                return None
            if e.index == 1 and isinstance(e.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                continue  # another campaigner moved the epoch between our read and our write
            raise
        second = results[1]
        return Leadership(epoch, second.version if not isinstance(second, str) else 0)


async def active_controller(store: Store, *, watch: bool = False) -> int | None:
    """The id in ``/controller`` (None if absent or unreadable)."""
    try:
        data, _ = await store.get(paths.CONTROLLER, watch=watch)
    except NoNodeError:
        return None
    try:
        return decode_controller(paths.CONTROLLER, data)
    except ZnodeFormatError as e:
        log.warning("unreadable /controller: %s", e)
        return None


async def release_if_ours(store: Store) -> None:
    """Delete ``/controller`` if this session still owns it (after resigning on a fence)."""
    stat = await store.exists(paths.CONTROLLER)
    if stat is not None and stat.ephemeral_owner == store.session_id:
        try:
            await store.delete(paths.CONTROLLER, stat.version)
        except (NoNodeError, BadVersionError):
            pass


async def campaign(store: Store, inbox: Inbox, controller_id: int) -> Leadership | None:
    """Stand by until elected; None if the ZooKeeper session is lost meanwhile."""
    while True:
        if inbox.lost:
            return None
        await release_if_ours(store)
        try:
            won = await try_elect(store, controller_id)
        except ZnodeFormatError as e:
            log.error("cannot run for controller: %s (fix /controller_epoch)", e)
            await asyncio.sleep(BAD_EPOCH_RETRY_S)
            continue
        if won is not None:
            log.info("controller %d elected with epoch %d", controller_id, won.epoch)
            return won
        stat = await store.exists(paths.CONTROLLER, watch=True)
        if stat is None:
            continue
        holder = await active_controller(store)
        log.info("controller %d standing by (active: %s)", controller_id, holder)
        while True:
            item = await inbox.queue.get()
            if isinstance(item, SessionEvent):
                if item.state is SessionState.LOST:
                    return None
                if item.state is SessionState.SUSPENDED:
                    if not await inbox.wait_connected():
                        return None
                    break  # the watch may be gone: look again
            elif isinstance(item, WatchEvent) and item.path == paths.CONTROLLER:
                break
            # Anything else is left over from an earlier term as active controller: dropped.
