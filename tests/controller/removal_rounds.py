"""Throttle removal outside a controller's loop, for tests that drive it on a bare store: what
the active controller does for a step's throttle check (controller.shell.active) - read
(controller.shell.throttles.read_removal), decide (the engine's step taking the
ThrottleRemovalRead: controller.core.throttle_removal), write the step's removal (one fenced
multi) - round after round while the write conflicts or the limit held entities back.

    written = await remove_throttles(store, epoch_zkversion)          # mode ALL
    written = await remove_idle(store, epoch_zkversion, state)        # mode IDLE
"""

from __future__ import annotations

import logging

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.state import ClusterState
from controller.core.throttle_removal import Mode
from controller.shell import throttle_configs as tc
from controller.shell.throttles import read_removal
from znodes.batch import BatchedWriter, FlushError

log = logging.getLogger("reassignd.controller")
ROUNDS = 100  # a test that needs more is looping


async def remove_throttles(store, epoch_zkversion: int, state: ClusterState | None = None) -> int:
    return await _rounds(store, epoch_zkversion, state, Mode.ALL)


async def remove_idle(store, epoch_zkversion: int, state: ClusterState | None) -> int:
    return await _rounds(store, epoch_zkversion, state, Mode.IDLE)


async def _rounds(store, epoch_zkversion: int, state: ClusterState | None, mode: Mode) -> int:
    base = state if state is not None else ClusterState(controller_id=0, epoch=0)
    written = 0
    for _ in range(ROUNDS):
        read = await read_removal(store, state, mode)
        if read is None:
            return written
        step = engine.step(base, [read], ControllerConfig())
        for line in step.log:
            log.warning("%s", line)
        ops = step.writes[step.removal_from:]
        if not ops:
            return written
        writer = BatchedWriter(store)
        writer.extend(ops)
        try:
            await writer.flush(epoch_zkversion)
        except FlushError as e:
            if tc.is_conflict(e):
                continue  # what it was decided from changed: read and decide again
            raise
        written += len(ops)
        if step.throttle_check is None:
            return written
    raise AssertionError(f"throttle removal still writing after {ROUNDS} rounds")
