"""bench/controller.py's pure parts: the sockets run's targets and topics, and the feeder's
window at small sizes (a run of 2,000 partitions once put all of them in the znode at once,
finished every move in a burst and failed its failover, which found nothing to resume)."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.controller import (
    FEED_HIGH,
    FEED_LOW,
    Feeder,
    PARTITIONS_PER_TOPIC,
    RF,
    feed_window,
    moved_targets,
    socket_topics,
)
from znodes import paths
from znodes.api import NoNodeError
from znodes.twin import TwinServer


def test_every_replica_of_every_partition_moves():
    brokers = list(range(1, 13))
    assignments = {"a": {"0": [1, 2, 3], "1": [12, 1, 5], "2": [7, 9, 11]}, "b": {"0": [10, 11, 12]}}
    targets = moved_targets(assignments, brokers)
    assert targets == {("a", 0): [4, 5, 6], ("a", 1): [6, 7, 8], ("a", 2): [12, 1, 2], ("b", 0): [1, 2, 3]}
    for (t, p), target in targets.items():
        assert len(set(target)) == RF and not set(target) & set(assignments[t][str(p)])


def test_socket_topics_cover_the_partitions_in_topics_of_the_usual_size():
    assert socket_topics(2_500) == [f"topic0000:{PARTITIONS_PER_TOPIC}:3:1KiB", f"topic0001:{PARTITIONS_PER_TOPIC}:3:1KiB",
                                    "topic0002:500:3:1KiB"]
    assert sum(int(spec.split(":")[1]) for spec in socket_topics(100_000)) == 100_000


@pytest.mark.parametrize("n", [1, 200, 2_000, 4_999, 10_000, 30_000, 100_000])
def test_the_feed_window_keeps_work_arriving_at_any_size(n):
    low, high = feed_window(n)
    assert 1 <= low <= high <= FEED_HIGH
    if n >= 30_000:
        assert (low, high) == (FEED_LOW, FEED_HIGH)
    else:
        assert high < n or n < 5, (n, low, high)  # never the whole run in one write


async def _entries(store) -> list:
    try:
        return json.loads((await store.get(paths.REASSIGN_PARTITIONS))[0])["partitions"]
    except NoNodeError:
        return []


async def test_the_feeder_pauses_after_its_first_part_and_the_wave_writes_exactly_its_entries():
    """The failover wave (run()): the feeder stops by itself after ``pause_at`` entries, writes
    nothing more while paused (the znode empties as a controller finishes them), and the wave
    is one write of exactly the entries asked for, the next ones in order."""
    store = TwinServer().connect("/bench", create_chroot=True)
    for path in paths.PERSISTENT_PATHS:
        await store.ensure_path(path)
    targets = {("t", p): [1, 2, 3] for p in range(100)}
    feeder = Feeder(store, targets, pause_at=50)
    stop = asyncio.Event()
    task = asyncio.create_task(feeder.run(stop))
    fed: list = []
    for _ in range(200):
        # A controller finishing everything at once: take what is there, delete the znode.
        fed += await _entries(store)
        if await store.exists(paths.REASSIGN_PARTITIONS):
            await store.delete(paths.REASSIGN_PARTITIONS)
        if feeder.paused:
            break
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.05)  # paused: nothing more arrives
    fed += await _entries(store)
    assert feeder.paused and [e["partition"] for e in fed] == list(range(50))
    assert await feeder.wave(30) == 30
    assert [e["partition"] for e in await _entries(store)] == list(range(50, 80))
    await asyncio.sleep(0.05)
    assert len(await _entries(store)) == 30  # still paused after the wave
    feeder.resume()
    stop.set()
    await task
