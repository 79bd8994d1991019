"""Full UpdateMetadata (controller.core.full_metadata, engine step 8): after an election every
broker's metadata cache holds every partition; a restarted broker gets it all again; a new
topic reaches every broker; a controller that fails over sends it all again.

On the ZooKeeper twin with simulated brokers (tests/controller/harness.py); the chunk size is
made small so that the sends go in several chunks between other events."""

from __future__ import annotations

import json

from controller.core import engine, full_metadata
from controller.core.config import ControllerConfig
from controller.core.events import MetadataRead, Resume, StatesRead
from controller.core.state import ClusterState
from protocol import ApiKey
from sim.topics import parse_topic_spec
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from znodes import paths
from znodes.values import Assignment, Broker, LeaderIsr

TOPICS = ("t:4:3:64KiB", "u:3:2:64KiB", "w:1:1:64KiB")
SMALL_CHUNK = 3  # 8 partitions: three chunks


def expected_cache(h: Harness) -> dict:
    """{topic: {partition: (leader, isr, replicas)}} as ZooKeeper says now."""
    out: dict = {}
    for topic in h.server.children(paths.TOPICS):
        parts = h.json(paths.topic(topic))["partitions"]
        for p, replicas in parts.items():
            state = h.json(paths.partition_state(topic, int(p)))
            out.setdefault(topic, {})[int(p)] = (state["leader"], tuple(state["isr"]), tuple(replicas))
    return out


def cache_of(h: Harness, broker_id: int) -> dict:
    cache = h.cluster.broker(broker_id).core.metadata
    return {
        topic: {p: (info.leader, info.isr, info.replicas) for p, info in parts.items()}
        for topic, parts in cache.partitions.items()
    }


def assert_complete(h: Harness, brokers) -> None:
    want = expected_cache(h)
    assert len(want) == 3 and sum(len(p) for p in want.values()) == 8
    for b in brokers:
        assert cache_of(h, b) == want, f"broker {b}"


async def rejoined(h: Harness, ticks: int = 5) -> None:
    """A broker that came back gets LeaderAndIsr for its replicas (Kafka's onBrokerStartup),
    follows, and its leaders take it back into their ISRs; the controller then tells every
    broker the new ISRs. A few ticks for all of that."""
    for _ in range(ticks):
        await h.tick()


h = harness_fixture(*TOPICS, setup=lambda mp: mp.setattr(full_metadata, "CHUNK", SMALL_CHUNK))


async def test_before_any_controller_brokers_know_no_partition(h):
    # What the tests below rely on: brokers learn partitions from UpdateMetadata only.
    for b in h.cluster.brokers:
        assert cache_of(h, b) == {}


async def test_after_election_every_broker_holds_every_partition(h):
    c = await h.start_controller(101)
    await h.tick()
    assert_complete(h, h.cluster.brokers)
    for b in h.cluster.brokers:
        assert h.cluster.broker(b).core.metadata.controller_id == 101
    assert c.active.metadata.sent_partitions == 8


async def test_restarted_broker_gets_everything_again(h):
    await h.start_controller(101)
    await h.tick()
    before = h.cluster.broker(3).core.metadata
    await h.cluster.stop_broker(3)
    await h.tick()
    await h.cluster.start_broker(3)
    await h.tick()
    await h.tick()
    after = h.cluster.broker(3).core.metadata
    assert after is not before  # a fresh cache: everything in it came after the restart
    await rejoined(h)
    assert_complete(h, h.cluster.brokers)
    # The restart in one go (the controller may see a new registration epoch only).
    await h.cluster.restart_broker(5)
    await h.tick()
    await h.tick()
    await rejoined(h)
    assert_complete(h, h.cluster.brokers)


async def test_the_other_brokers_hear_of_a_broker_stopping_and_coming_back(h):
    await h.start_controller(101)
    await h.tick()
    everyone = set(h.cluster.brokers)
    assert set(h.cluster.broker(1).core.metadata.brokers) == everyone
    await h.cluster.stop_broker(3)
    await h.tick()
    for b in everyone - {3}:  # an UpdateMetadata without partitions: the live set only
        assert set(h.cluster.broker(b).core.metadata.brokers) == everyone - {3}, f"broker {b}"
    await h.cluster.start_broker(3)
    await h.tick()
    await h.tick()
    for b in everyone:
        assert set(h.cluster.broker(b).core.metadata.brokers) == everyone, f"broker {b}"
    await rejoined(h)
    assert_complete(h, everyone)  # partitions are untouched by the partition-less sends


async def test_new_topic_reaches_every_broker(h):
    await h.start_controller(101)
    await h.tick()
    await h.cluster.create_topics([parse_topic_spec("n:2:2:64KiB")])
    await h.tick()
    want = expected_cache(h)
    assert set(want["n"]) == {0, 1}
    for b in h.cluster.brokers:
        assert cache_of(h, b) == want, f"broker {b}"


async def test_a_new_controller_sends_it_all_again(h):
    await h.start_controller(101, crash_after=0)
    await h.submit({("t", 0): [4, 5, 6]})  # the first write kills 101
    await h.cluster.restart_broker(2)  # its cache is empty now, and no controller to fill it
    await h.settle()
    assert cache_of(h, 2) == {}
    c2 = await h.start_controller(102)
    await h.run_until_quiet()
    assert c2.active is not None and c2.active.epoch == 2
    assert_complete(h, h.cluster.brokers)
    assert h.cluster.broker(2).core.metadata.controller_id == 102


async def test_after_failover_resumed_moves_are_announced_before_the_full_metadata(monkeypatch):
    monkeypatch.setattr(full_metadata, "CHUNK", SMALL_CHUNK)
    h = Harness(topics=("t:4:3:8MiB", "u:3:2:64KiB", "w:1:1:64KiB"))  # moves take seconds
    await h.start()
    try:
        c1 = await h.start_controller(101)
        await h.submit({("t", 0): [1, 5, 6], ("t", 1): [5, 3, 2]})
        await h.tick()
        assert sum(m.started for m in c1.active.state.tasks.values()) == 2
        h.server.expire_session(c1.store.session_id)  # 101 dies with both moves running
        await h.settle()
        h.sent.clear()
        await h.start_controller(102)
        await h.tick()
        kinds: dict[int, list[int]] = {}
        for broker, api_key, body in h.sent:
            assert api_key == ApiKey.DESCRIBE_LOG_DIRS or body["controller_epoch"] == 2
            kinds.setdefault(broker, []).append(api_key)
        # Every replica of a resumed move hears of it (LeaderAndIsr) before any UpdateMetadata.
        for b in (1, 2, 3, 4, 5, 6):
            assert ApiKey.LEADER_AND_ISR in kinds[b], (b, kinds[b])
            assert kinds[b].index(ApiKey.LEADER_AND_ISR) < kinds[b].index(ApiKey.UPDATE_METADATA), (b, kinds[b])
        await h.run_until_quiet()
        h.check_invariants()
        assert_complete(h, h.cluster.brokers)
    finally:
        await h.close()


def _named(body) -> set:
    return {(t["topic_name"], e["partition_index"]) for t in body["topic_states"] for e in t["partition_states"]}


async def test_after_failover_brokers_are_asked_what_they_host_once_the_full_send_is_done(monkeypatch):
    """Step 9 after a (re)load goes with the full send's last chunk, not with Resume: every live
    broker is asked what it hosts once it was sent every partition's state, and a stray left
    while no controller ran is deleted then. A request written while no controller ran, for a
    partition in the last chunk (w-0), is taken at once from a read of its own state."""
    monkeypatch.setattr(full_metadata, "CHUNK", SMALL_CHUNK)
    h = Harness(topics=TOPICS)
    await h.start()
    try:
        c1 = await h.start_controller(101)
        tp = ("t", 0)
        ors = h.assignments[tp]
        gone = ors[-1]  # a follower the move removes, down while it does: left on its disk
        new = next(b for b in range(1, 7) if b not in ors)
        await h.cluster.stop_broker(gone)
        await h.submit({tp: [*ors[:-1], new]})
        await h.run_until_quiet()
        assert h.cluster.model.get("t", 0, gone) is not None
        h.server.expire_session(c1.store.session_id)
        await h.settle()
        await h.cluster.start_broker(gone)  # registers while no controller runs: nobody asks it
        await h.settle()
        w0 = h.assignments[("w", 0)]
        target = [next(b for b in range(1, 7) if b not in w0 and b != gone)]
        await h.submit({("w", 0): target})
        h.sent.clear()
        await h.start_controller(102)
        await h.run_until_quiet()
        h.check_invariants()
        assert h.json(paths.topic("w"))["partitions"]["0"] == target
        assert h.cluster.model.get("t", 0, gone) is None  # the stray went
        every = {(t, int(p)) for t in ("t", "u", "w") for p in h.json(paths.topic(t))["partitions"]}
        # The last chunk's UpdateMetadata goes out in the probe's own step, after it (the outbox
        # sends a broker's LeaderAndIsr, StopReplica and DescribeLogDirs, then UpdateMetadata).
        in_order = sorted(every)
        last = set(in_order[-(len(in_order) % SMALL_CHUNK or SMALL_CHUNK):])
        for b in range(1, 7):
            told: set = set()
            asked = False
            for broker, api_key, body in h.sent:
                if broker != b:
                    continue
                if api_key == ApiKey.UPDATE_METADATA:
                    told |= _named(body)
                elif api_key == ApiKey.DESCRIBE_LOG_DIRS and not asked:
                    asked = True
                    assert every - told <= last, (b, every - told)  # asked with the last chunk
            assert asked, b
    finally:
        await h.close()


async def test_a_turn_with_a_chunk_and_other_events_steps_the_others_first(monkeypatch):
    """A full send's chunk taken with other events goes in a step of its own after theirs (in
    the same turn): its read must not hold up what arrived meanwhile (a failover's resumed
    moves completing)."""
    monkeypatch.setattr(full_metadata, "CHUNK", SMALL_CHUNK)
    h = Harness(topics=TOPICS)
    await h.start()
    try:
        c = await h.start_controller(101)
        await h.run_until_quiet()
        active = c.active
        steps: list[set] = []
        real = active.execute

        async def execute(events):
            steps.append({type(e).__name__ for e in events})
            await real(events)

        monkeypatch.setattr(active, "execute", execute)
        due = active.metadata.everyone(list(active.state.assignments))
        tp = ("t", 0)
        await active.process([due, StatesRead({tp: active.state.states[tp]})])
        assert steps[0] == {"StatesRead"}, steps
        assert "MetadataRead" in steps[1] and "StatesRead" not in steps[1], steps
    finally:
        await h.close()


def test_resume_asks_no_broker_what_it_hosts_and_the_last_chunk_of_the_send_asks_every_live_one():
    state = _state()
    read = {("t", 0): LeaderIsr(1, 4, 2, (1, 2), 7), ("t", 1): LeaderIsr(2, 0, 2, (2,), 1)}
    step = engine.step(state, [Resume()], ControllerConfig())
    assert not [c for c in step.commands if c.api_key == ApiKey.DESCRIBE_LOG_DIRS]
    step = engine.step(state, [MetadataRead(read, leader_and_isr=True)], ControllerConfig())
    assert not [c for c in step.commands if c.api_key == ApiKey.DESCRIBE_LOG_DIRS]
    step = engine.step(state, [MetadataRead(read, leader_and_isr=True, probe=True)], ControllerConfig())
    asked = [c.broker_id for c in step.commands if c.api_key == ApiKey.DESCRIBE_LOG_DIRS]
    assert asked == [1, 2, 3]
    for b in asked:  # after the step's LeaderAndIsr to the same broker (step 8b's)
        kinds = [c.api_key for c in step.commands if c.broker_id == b]
        assert kinds.index(ApiKey.LEADER_AND_ISR) < kinds.index(ApiKey.DESCRIBE_LOG_DIRS), (b, kinds)


# ---- the engine's part and the planner (pure) -----------------------------------------------


def _state() -> ClusterState:
    state = ClusterState(controller_id=101, epoch=3)
    state.brokers = {b: Broker(b, "127.0.0.1", 9090 + b, None, 10 + b) for b in (1, 2, 3)}
    state.assignments = {("t", 0): Assignment((1, 2)), ("t", 1): Assignment((2, 3), adding=(3,))}
    state.topic_partitions = {"t": (0, 1)}
    state.topic_versions = {"t": 0}
    return state


def _entries(command) -> dict:
    return {
        (t["topic_name"], e["partition_index"]): (e["leader"], tuple(e["isr"]), tuple(e["replicas"]), e["zk_version"])
        for t in command.body["topic_states"]
        for e in t["partition_states"]
    }


def test_engine_sends_read_states_to_every_live_broker_or_to_those_named():
    state = _state()
    read = {
        ("t", 0): LeaderIsr(1, 4, 2, (1, 2), 7),
        ("t", 1): LeaderIsr(2, 0, 2, (2,), 1),
        ("t", 9): LeaderIsr(1, 0, 2, (1,), 0),  # not a known partition: not sent
        ("x", 0): None,  # no state znode: nothing to say
    }
    step = engine.step(state, [MetadataRead(read)], ControllerConfig())
    assert not step.writes and not step.delta.assignments
    ums = [c for c in step.commands if c.api_key == ApiKey.UPDATE_METADATA]
    assert sorted(c.broker_id for c in ums) == [1, 2, 3]
    want = {("t", 0): (1, (1, 2), (1, 2), 7), ("t", 1): (2, (2,), (2, 3), 1)}
    for c in ums:
        assert _entries(c) == want
        assert c.body["broker_epoch"] == 10 + c.broker_id
        assert c.encoded is not None
    # To the brokers named only; one of them not registered (any more): not sent to it.
    step = engine.step(state, [MetadataRead(read, brokers=(2, 7))], ControllerConfig())
    assert [(c.broker_id, c.api_key) for c in step.commands] == [(2, ApiKey.UPDATE_METADATA)]
    assert _entries(step.commands[0]) == want


def test_engine_prefers_a_newer_state_it_holds():
    state = _state()
    state.states[("t", 1)] = LeaderIsr(3, 5, 3, (2, 3), 9)
    step = engine.step(state, [MetadataRead({("t", 1): LeaderIsr(2, 0, 2, (2,), 1)})], ControllerConfig())
    for c in step.commands:
        assert _entries(c) == {("t", 1): (3, (2, 3), (2, 3), 9)}


def test_planner_chunks_and_drops_older_generations(monkeypatch):
    monkeypatch.setattr(full_metadata, "CHUNK", 2)
    planner = full_metadata.Planner()
    tps = [("t", p) for p in range(5)]
    item = planner.everyone(tps)
    taken = []
    while item is not None:
        chunk, item = planner.take(item)
        taken += chunk
    assert taken == tps and planner.sent_partitions == 5
    old = planner.brokers((3, 1), tps)
    assert old.brokers == (1, 3)
    planner.everyone(tps)  # a reload: the full send covers what was under way
    assert planner.take(old) == ((), None)
    # Another term's planner never takes this one's items.
    assert full_metadata.Planner().take(planner.new_partitions(tps)) == ((), None)


def test_registered_brokers():
    old = {1: Broker(1, "h", 1, None, 5), 2: Broker(2, "h", 2, None, 6)}
    new = {1: Broker(1, "h", 1, None, 5), 2: Broker(2, "h", 2, None, 9), 4: Broker(4, "h", 4, None, 10)}
    assert full_metadata.registered(old, new) == (2, 4)
    assert full_metadata.registered(new, new) == ()
    assert full_metadata.registered(new, old) == (2,)
