"""Benchmark: 20,000 znode writes, one synchronous kazoo call at a time vs the BatchedWriter.

Starts its own local ZooKeeper (znodes.launcher, Debian's server, fsync on as in
production), creates 20,000 partition-state-sized znodes with plain ``KazooClient.create``
one after another (the peer: what a controller writing znode by znode does), then 20,000
more through ``znodes.batch.BatchedWriter`` over ``KazooStore`` (multi-ops capped at the
encoded-size and op-count limits), checks both trees hold every znode, stops the server and
prints the figures, the speedup LAST. Paths and payloads are built before the clocks
start; both paths are warmed up (2,000 writes each, untimed) first.

    .venv/bin/python bench/zk_writes.py [--count 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kazoo.client import KazooClient  # noqa: E402

from znodes.api import Create  # noqa: E402
from znodes.batch import BatchedWriter  # noqa: E402
from znodes.launcher import LocalZooKeeper  # noqa: E402
from znodes.store import connect  # noqa: E402


# Writes each path makes before the timed runs.
WARMUP = 2000


def payload(i: int) -> bytes:
    # The size of a /brokers/topics/T/partitions/P/state znode.
    return json.dumps(
        {"version": 1, "leader": i % 6, "leader_epoch": 0, "controller_epoch": 1, "isr": [i % 6, (i + 1) % 6, (i + 2) % 6]},
        separators=(",", ":"),
    ).encode()


def sync_writes(hosts: str, root: str, items: list[tuple[str, bytes]]) -> float:
    client = KazooClient(hosts=hosts, timeout=30)
    client.start(timeout=30)
    try:
        client.ensure_path(root)
        started = time.perf_counter()
        for path, data in items:
            client.create(path, data)
        elapsed = time.perf_counter() - started
        assert len(client.get_children(root)) == len(items)
        return elapsed
    finally:
        client.stop()
        client.close()


async def batched_writes(hosts: str, root: str, items: list[tuple[str, bytes]]) -> tuple[float, int]:
    store = await connect(hosts, timeout=30, session_timeout=30)
    try:
        await store.ensure_path(root)
        started = time.perf_counter()
        writer = BatchedWriter(store)
        writer.extend(Create(path, data) for path, data in items)
        chunks = len(writer.chunks())
        results = await writer.flush()
        elapsed = time.perf_counter() - started
        assert len(results) == len(items)
        assert len(await store.children(root)) == len(items)
        return elapsed, chunks
    finally:
        await store.close()


def workload(root: str, count: int) -> list[tuple[str, bytes]]:
    return [(f"{root}/p{i:06d}", payload(i)) for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_zk_") as tmp:
        zk = LocalZooKeeper(port=0, data_dir=Path(tmp) / "zk", stop_with_parent=True)
        zk.start(timeout=60)
        try:
            hosts = zk.connect_string
            print(f"ZooKeeper at {hosts}; warming up, then writing {args.count} znodes each way", flush=True)
            # Untimed warm-up of both paths, so neither pays for the server's JIT compilation.
            sync_writes(hosts, "/warmup/sync", workload("/warmup/sync", WARMUP))
            asyncio.run(batched_writes(hosts, "/warmup/batched", workload("/warmup/batched", WARMUP)))
            sync_s = sync_writes(hosts, "/bench/sync", workload("/bench/sync", args.count))
            print(f"one synchronous kazoo create at a time: {sync_s:.2f} s", flush=True)
            batched_s, chunks = asyncio.run(batched_writes(hosts, "/bench/batched", workload("/bench/batched", args.count)))
            print(f"BatchedWriter ({chunks} multi-ops): {batched_s:.2f} s", flush=True)
        finally:
            zk.stop()
    print(f"znodes_per_run={args.count}")
    print(f"sync_seconds={sync_s:.3f}")
    print(f"batched_seconds={batched_s:.3f}")
    print(f"sync_writes_per_second={args.count / sync_s:.0f}")
    print(f"batched_writes_per_second={args.count / batched_s:.0f}")
    print(f"batched_write_speedup={sync_s / batched_s:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
