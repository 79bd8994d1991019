"""bench/controller.py's pure parts: the sockets run's targets and topics, and the feeder's
window at small sizes (a run of 2,000 partitions once put all of them in the znode at once,
finished every move in a burst and failed its failover, which found nothing to resume)."""

from __future__ import annotations

import pytest

from bench.controller import (
    FEED_HIGH,
    FEED_LOW,
    PARTITIONS_PER_TOPIC,
    RF,
    feed_window,
    moved_targets,
    socket_topics,
)


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
