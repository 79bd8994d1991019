"""bench/controller.py's pure parts: the sockets run's targets and topics, and the feeder's
window at small sizes (a run of 2,000 partitions once put all of them in the znode at once,
finished every move in a burst and failed its failover, which found nothing to resume); and
bench/instant_brokers.py's: its control and ready lines, its brokers over TCP on an in-memory
ZooKeeper, and the verbs the failover run sends it."""

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
from bench.instant_brokers import (
    InstantBrokers,
    World,
    command_line,
    create_cluster,
    layout,
    parse_command,
    parse_ready,
    parse_reply,
    ready_line,
    reply_line,
)
from controller.shell.transport import TcpTransport
from protocol import ApiKey
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


# ---- bench/instant_brokers.py: the instant brokers' and feeder's own process ----------------------


def test_control_lines_and_the_ready_line_round_trip():
    assert parse_command(command_line(7, "wave", {"n": 3000})) == (7, "wave", {"n": 3000})
    assert parse_command(command_line(8, "hold")) == (8, "hold", None)
    assert parse_reply(reply_line(7, 3000)) == (7, True, 3000)
    assert parse_reply(reply_line(9, {"in_flight": 2, "at_target": {"t": [0, 1]}})) == (
        9, True, {"in_flight": 2, "at_target": {"t": [0, 1]}})
    # An error is one line, whatever its message holds.
    assert parse_reply(reply_line(3, error="KeyError: 'n'\n  at line 2")) == (3, False, "KeyError: 'n' at line 2")
    assert parse_ready(ready_line({2: 40002, 1: 40001})) == {1: ("127.0.0.1", 40001), 2: ("127.0.0.1", 40002)}
    with pytest.raises(ValueError):
        command_line(1, "fly")
    for bad in ("", "hold", "x hold", "1 fly", "1 wave {"):
        with pytest.raises(ValueError):
            parse_command(bad)
    for bad in ("", "1 ok", "1 maybe 2", "x ok 1"):
        with pytest.raises(ValueError):
            parse_reply(bad)


async def _twin_cluster(n_partitions: int):
    store = TwinServer().connect("/bench", create_chroot=True)
    topics, targets = layout(n_partitions)
    return store, topics, targets


async def test_instant_brokers_over_tcp_grow_the_isr_and_say_what_they_host():
    """The brokers as the controller reaches them (TcpTransport to their ports): a LeaderAndIsr
    naming new replicas has the leader write the grown ISR (conditional on the zkVersion) and
    notify it, held while the copies run (hold) and dropped at release; DescribeLogDirs tells
    what a broker hosts, StopReplica(delete) removes it; UpdateMetadata is answered."""
    store, topics, _ = await _twin_cluster(12)
    brokers = InstantBrokers(store, topics)
    ports = await brokers.serve()
    await create_cluster(store, topics, ports)
    assert json.loads((await store.get(paths.broker(5)))[0])["port"] == ports[5]
    transport = TcpTransport(parse_ready(ready_line(ports)).get)
    try:
        # topic0000/0 is on 1, 2, 3 (leader 1); move it to 4, 5, 6.
        assert ("topic0000", 0) in _hosted(await transport.request(1, ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None}))
        assert ("topic0000", 0) not in _hosted(await transport.request(4, ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None}))
        state = {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 1, "isr": [1, 2, 3],
                 "zk_version": 0, "replicas": [1, 2, 3, 4, 5, 6], "adding_replicas": [4, 5, 6], "removing_replicas": [1, 2, 3]}
        body = {"controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "live_leaders": [],
                "topic_states": [{"topic_name": "topic0000", "partition_states": [dict(state, is_new=False)]}]}
        assert (await transport.request(1, ApiKey.LEADER_AND_ISR, 4, body))["error_code"] == 0
        new = {**body, "topic_states": [{"topic_name": "topic0000", "partition_states": [dict(state, is_new=True)]}]}
        assert (await transport.request(4, ApiKey.LEADER_AND_ISR, 4, new))["error_code"] == 0
        assert ("topic0000", 0) in _hosted(await transport.request(4, ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None}))
        for _ in range(200):
            if await store.children(paths.ISR_CHANGE_NOTIFICATION):
                break
            await asyncio.sleep(0.005)
        written, stat = await store.get(paths.partition_state("topic0000", 0))
        assert json.loads(written)["isr"] == [1, 2, 3, 4, 5, 6] and stat.version == 1
        [note] = await store.children(paths.ISR_CHANGE_NOTIFICATION)
        entry = json.loads((await store.get(f"{paths.ISR_CHANGE_NOTIFICATION}/{note}"))[0])["partitions"][0]
        assert entry["state"]["zk_version"] == 1 and entry["state"]["isr"] == [1, 2, 3, 4, 5, 6]
        # Held while the copies run, dropped at release (once the connections are gone).
        brokers.hold()
        again = {**body, "controller_epoch": 2, "topic_states": [{"topic_name": "topic0000", "partition_states": [
            dict(state, zk_version=1, leader_epoch=2, isr=[1], is_new=False)]}]}
        await transport.request(1, ApiKey.LEADER_AND_ISR, 4, again)
        await asyncio.sleep(0.05)
        assert brokers.status()["isr_writes_pending"] == 1 and (await store.get(paths.partition_state("topic0000", 0)))[1].version == 1
        await transport.close()
        await asyncio.wait_for(brokers.release(), 5)
        await asyncio.sleep(0.05)
        assert brokers.status()["isr_writes_pending"] == 0 and (await store.get(paths.partition_state("topic0000", 0)))[1].version == 1
        stop = {"controller_id": 1, "controller_epoch": 2, "broker_epoch": -1, "topic_states": [
            {"topic_name": "topic0000", "partition_states": [{"partition_index": 0, "leader_epoch": 2, "delete_partition": True}]}]}
        assert (await transport.request(1, ApiKey.STOP_REPLICA, 3, stop))["error_code"] == 0
        assert ("topic0000", 0) not in _hosted(await transport.request(1, ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None}))
        metadata = {"controller_id": 1, "controller_epoch": 2, "broker_epoch": -1, "topic_states": [], "live_brokers": []}
        assert await transport.request(7, ApiKey.UPDATE_METADATA, 6, metadata) == {"error_code": 0}
        assert brokers.status()["requests"]["UPDATE_METADATA"] == 1
    finally:
        await transport.close()
        await brokers.shutdown()


def _hosted(answer: dict) -> set:
    return {(t["name"], p["partition_index"]) for r in answer["results"] for t in r["topics"] for p in t["partitions"]}


async def test_the_world_answers_the_verbs_the_failover_run_sends():
    """The process's verbs without the process: the feeder pauses by itself, the wave writes its
    entries, after_kill reads the records in flight and the partitions at target, check names
    the topics not done."""
    store, topics, targets = await _twin_cluster(50)
    world = World(store, store, 50)
    await create_cluster(store, topics)
    await world.do("feed", {"pause_at": 10})
    await asyncio.wait_for(world.do("wait_paused", None), 5)
    assert [e["partition"] for e in await _entries(store)] == list(range(10))
    assert await world.do("drained", None) is False  # the entries are still there
    await store.delete(paths.REASSIGN_PARTITIONS)
    assert await world.do("drained", None) is True
    await world.do("hold", None)
    assert await world.do("wave", {"n": 5}) == 5
    await store.create(f"{paths.REASSIGNMENTS}/topic0000/10", b"{}", makepath=True)
    znode = json.loads((await store.get(paths.topic("topic0000")))[0])
    znode["partitions"]["3"] = targets[("topic0000", 3)]
    await store.set(paths.topic("topic0000"), json.dumps(znode).encode())
    assert await world.do("after_kill", None) == {"in_flight": 1, "at_target": {"topic0000": [3]}}
    assert await world.do("check", None) == ["topic0000"]
    await asyncio.wait_for(world.do("release", None), 5)
    status = await world.do("status", None)
    assert status["brokers"]["copies_done"] and status["feeder"]["paused"]
    await world.do("resume", None)
    await world.do("stop_feeding", None)
    await world.close()
