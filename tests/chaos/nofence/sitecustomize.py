"""The chaos suite's self-test only (``python -m tests.chaos --break-fence``): on this directory's
PYTHONPATH a controller process sends every "fenced" multi WITHOUT the ``/controller_epoch``
check, so a deposed controller's writes land and the zombie check must find them. Never on the
path of anything else."""

import znodes.store as _store


async def _unfenced(self, ops, epoch_zkversion):
    return await self.multi(list(ops))


_store.KazooStore.fenced_multi = _unfenced
