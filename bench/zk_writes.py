"""Benchmark: 20,000 znode writes through the BatchedWriter, against pipelined kazoo creates
and against ZooKeeper's own ceiling for multi-ops of the same size, in the same run.

Starts its own local ZooKeeper (znodes.launcher, Debian's server, fsync on as in
production) and creates partition-state-sized znodes three ways, each under its own parent:

* the peer: kazoo's ``create_async`` with up to ``PIPELINE`` (2,000) creates in flight, then
  waiting for them all, as a competent kazoo user loads znodes (bench/planner.py's loader does
  exactly this). One request, and on the server one transaction, per znode;
* ``znodes.batch.BatchedWriter`` over ``KazooStore`` as the controller uses it: many creates per
  multi-op (capped at the encoded-size and op-count limits), one multi-op after the other;
* the ceiling: the same chunks of the same size sent through the same ``KazooStore`` all at
  once (every multi-op in flight together), so ZooKeeper, not the writer's one-at-a-time
  flush, is the limit. ``batched_write_fraction_of_limit`` is the writer's rate over it.

Each tree is checked to hold every znode. Paths and payloads are built before the clocks
start; every path is warmed up (2,000 writes each, untimed) first. A synchronous
``KazooClient.create`` per znode (a round trip and an fsync each) is not run: no one loading
znodes writes that way, and it is not the peer.

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

from bench import results  # noqa: E402


# Writes each path makes before the timed runs.
WARMUP = 2000
# Creates the pipelined peer keeps in flight: bench/planner.py's loader's window, large enough
# that the round trip is hidden and small enough that kazoo's queue stays bounded.
PIPELINE = 2000


def payload(i: int) -> bytes:
    # The size of a /brokers/topics/T/partitions/P/state znode.
    return json.dumps(
        {"version": 1, "leader": i % 6, "leader_epoch": 0, "controller_epoch": 1, "isr": [i % 6, (i + 1) % 6, (i + 2) % 6]},
        separators=(",", ":"),
    ).encode()


def pipelined_writes(hosts: str, root: str, items: list[tuple[str, bytes]]) -> float:
    client = KazooClient(hosts=hosts, timeout=30)
    client.start(timeout=30)
    try:
        client.ensure_path(root)
        started = time.perf_counter()
        pending = []
        for path, data in items:
            pending.append(client.create_async(path, data))
            if len(pending) >= PIPELINE:
                for p in pending:
                    p.get()
                pending.clear()
        for p in pending:
            p.get()
        elapsed = time.perf_counter() - started
        assert len(client.get_children(root)) == len(items)
        return elapsed
    finally:
        client.stop()
        client.close()


async def multi_ceiling(hosts: str, root: str, items: list[tuple[str, bytes]]) -> tuple[float, int]:
    """ZooKeeper's rate for these creates as multi-ops of the BatchedWriter's size, every
    multi-op in flight at once on one session: (seconds, multi-ops). Also used by
    bench/controller.py for the ceiling at its ops per partition."""
    store = await connect(hosts, timeout=30, session_timeout=30)
    try:
        await store.ensure_path(root)
        writer = BatchedWriter(store)
        writer.extend(Create(path, data) for path, data in items)
        chunks = writer.chunks()
        started = time.perf_counter()
        done = await asyncio.gather(*(store.multi(chunk) for chunk in chunks))
        elapsed = time.perf_counter() - started
        assert sum(len(d) for d in done) == len(items)
        assert len(await store.children(root)) == len(items)
        return elapsed, len(chunks)
    finally:
        await store.close()


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
    started = results.begin()
    with tempfile.TemporaryDirectory(prefix="bench_zk_") as tmp:
        zk = LocalZooKeeper(port=0, data_dir=Path(tmp) / "zk", stop_with_parent=True)
        zk.start(timeout=60)
        try:
            hosts = zk.connect_string
            print(f"ZooKeeper at {hosts}; warming up, then writing {args.count} znodes each way", flush=True)
            # Untimed warm-up of every path, so none pays for the server's JIT compilation.
            pipelined_writes(hosts, "/warmup/pipelined", workload("/warmup/pipelined", WARMUP))
            asyncio.run(batched_writes(hosts, "/warmup/batched", workload("/warmup/batched", WARMUP)))
            asyncio.run(multi_ceiling(hosts, "/warmup/ceiling", workload("/warmup/ceiling", WARMUP)))
            pipe_s = pipelined_writes(hosts, "/bench/pipelined", workload("/bench/pipelined", args.count))
            print(f"kazoo create_async, {PIPELINE} in flight: {pipe_s:.2f} s", flush=True)
            batched_s, chunks = asyncio.run(batched_writes(hosts, "/bench/batched", workload("/bench/batched", args.count)))
            print(f"BatchedWriter ({chunks} multi-ops, one after the other): {batched_s:.2f} s", flush=True)
            ceiling_s, c_chunks = asyncio.run(multi_ceiling(hosts, "/bench/ceiling", workload("/bench/ceiling", args.count)))
            print(f"ceiling ({c_chunks} multi-ops of the same size, all in flight): {ceiling_s:.2f} s", flush=True)
        finally:
            zk.stop()
    results.finish("zk_writes", {
        "pipelined_writes_per_second": round(args.count / pipe_s),
        "batched_writes_per_second": round(args.count / batched_s),
        "multi_op_ceiling_writes_per_second": round(args.count / ceiling_s),
        "znodes_per_multi_op": round(args.count / chunks),
        "batched_write_speedup_vs_pipelined": round(pipe_s / batched_s, 2),
        "batched_write_fraction_of_limit": round(ceiling_s / batched_s, 2),
    }, peer=f"kazoo create_async, {PIPELINE} in flight", sizes={"znodes": args.count}, started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
