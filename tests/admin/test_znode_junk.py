"""Junk in every znode the controller reads, written by another tool while it runs: each payload
that is not what Kafka writes there (empty, not JSON, JSON of the wrong shape, a valid shape
with wrong types) is a logged problem, never an exception escaping its reader (the daemon's
task ending, the active instance resigning or a step failing with an unexpected error); once
the znode is repaired the controller takes work again. Decoder by decoder:
tests/znodes/test_decoders_fuzz.py; this is the shell's handling of what they refuse, with
a real ZooKeeper and both instances running."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 1]}, "logs": {0: [3, 4, 1]}}
JUNK = [b"", b"\xff\xfe", b"null", b"[]", b'"text"', b"17", b"{}", b'{"version":1}',
        b'{"version":1,"partitions":{"0":"1,2"}}', b'{"version":1,"partitions":[{"topic":7}]}',
        b'{"version":99,"leader":"1"}', b'{"version":1,"isr":[1,"x"],"leader":[],"leader_epoch":-5}',
        b'{"version":1,"config":[["a","b"]]}', b'{"version":1,"host":5,"port":"x","endpoints":"PLAINTEXT://h:1"}']
# Znodes the controller watches or reads as it works, each with junk written over (or created
# as) it in turn. Sequential children (notifications, config changes) are created fresh.
WATCHED = ["/admin/reassign_partitions", "/admin/reassign_partitions_queue", "/brokers/ids/4",
           "/brokers/topics/logs", "/brokers/topics/orders/partitions/1/state", "/config/topics/orders",
           "/config/brokers/1", "/config/brokers/<default>", "/admin/preferred_replica_election",
           "/admin/cancel_reassignment_in_progress", "/admin/throttled_replicas_removal",
           "/admin/throttled_rates_removal", "/admin/reassignments/orders/0", "/latest_producer_id_block",
           "/config/users/alice"]
SEQUENTIAL = ["/isr_change_notification/isr_change_", "/log_dir_event_notification/log_dir_event_",
              "/config/changes/config_change_", "/admin/delete_topics/"]
SETTLE_S = 0.4


class _Unexpected(logging.Handler):
    """Records logged with a traceback whose exception is not a known refusal of bad input."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            from znodes.errors import ZnodeFormatError
            if not isinstance(record.exc_info[1], ZnodeFormatError):
                self.records.append(record)


def _write(zk, path: str, data: bytes) -> None:
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True)


def _restore(zk, path: str, original: bytes | None) -> None:
    """The znode as it was before the junk (None: it did not exist)."""
    if original is None:
        zk.delete(path, recursive=True)
    else:
        zk.set(path, original)


async def test_junk_in_every_watched_znode_is_survived(zk_hosts):
    unexpected = _Unexpected()
    logging.getLogger().addHandler(unexpected)
    try:
        async with AdminCluster(zk_hosts, topics=TOPICS) as c:
            zk = c.kafka.zk
            active = await c.wait_active()
            originals = {p: (zk.get(p)[0] if zk.exists(p) else None) for p in WATCHED}
            for path in WATCHED:
                for junk in JUNK:
                    await asyncio.to_thread(_write, zk, path, junk)
                    await asyncio.sleep(SETTLE_S / 4)
                await asyncio.to_thread(_restore, zk, path, originals[path])
                await asyncio.sleep(SETTLE_S)
                crashed = [cid for cid, task in c.tasks.items() if task.done()]
                assert not crashed, f"after junk in {path}: the daemon of {crashed} ended"
            for prefix in SEQUENTIAL:
                for junk in JUNK:
                    if prefix.endswith("/"):  # a delete marker: a name that is no topic, as a tool might
                        await asyncio.to_thread(zk.create, prefix + "no-such-" + str(abs(hash(junk)) % 1000), junk,
                                                makepath=True)
                    else:
                        await asyncio.to_thread(zk.create, prefix, junk, sequence=True, makepath=True)
                await asyncio.sleep(SETTLE_S)
                assert not [cid for cid, task in c.tasks.items() if task.done()], prefix
            # A failover with junk everywhere at once: the new controller's election reads it all.
            for i, path in enumerate(WATCHED):
                await asyncio.to_thread(_write, zk, path, JUNK[i % len(JUNK)])
            await c.stop(active)
            await c.start(active)  # back as the standby
            active = await c.wait_active(timeout=60)
            for path in WATCHED:
                await asyncio.to_thread(_restore, zk, path, originals[path])
            # Still the controller and still at work: a reassignment written now is taken.
            await asyncio.sleep(SETTLE_S)
            active = await c.wait_active()
            c.submit({("orders", 0): [2, 3, 4]})
            await c.wait_running(active, [("orders", 0)], timeout=30)
            assert json.loads(zk.get("/brokers/topics/orders")[0])["adding_replicas"] == {"0": [4]}
    finally:
        logging.getLogger().removeHandler(unexpected)
    assert not unexpected.records, "\n".join(
        f"{r.name}: {r.getMessage()}: {r.exc_info[1]!r}" for r in unexpected.records[:20])
