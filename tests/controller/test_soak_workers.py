"""The soak's workers hash strings the same way in every run (tests/controller/soak.py
WORKER_HASH_SEED): how a schedule ends must not depend on the process it ran in, or a failing
shard found in one run might not replay in the next."""

from __future__ import annotations

import os

from tests.controller import soak


def test_two_runs_workers_hash_alike_and_the_caller_keeps_its_environment():
    before = os.environ.get("PYTHONHASHSEED")
    hashes = []
    for _ in range(2):
        with soak.worker_pool(1) as pool:
            hashes.append(pool.apply(hash, ("reassignd-stateful",)))
    assert hashes[0] == hashes[1]
    assert os.environ.get("PYTHONHASHSEED") == before
