"""controller.shell.metrics, piece by piece, on the ZooKeeper twin: the counts the end-to-end
tests (tests/docker, test_ops, test_journal) only see at zero or not at all - fence failures and
ZooKeeper errors by call, session state changes, resignations by reason, cancellations by door
and result, the event loop lag gauge."""

from __future__ import annotations

import asyncio
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import CancelRequested, RequestsRead
from controller.shell.election import try_elect
from controller.shell.metrics import MeteredInbox, MeteredStore, Metrics
from controller.shell.ops import OpsServer
from tests.controller.helpers import cluster, req, state
from znodes import paths
from znodes.api import Create, FencedError, NoNodeError, SessionEvent, SessionState
from znodes.twin import TwinServer


def samples(metrics: Metrics) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(metrics.scrape().decode()) for s in f.samples}


async def test_zookeeper_calls_fence_failures_and_errors_by_call():
    server = TwinServer()
    metrics = Metrics()
    store = MeteredStore(server.connect(), metrics)
    won = await try_elect(store, 1)  # a multi: /controller and /controller_epoch
    await store.ensure_path("/admin")
    before = samples(metrics)
    await store.fenced_multi([Create("/admin/a", b"x"), Create("/admin/b", b"y")], won.epoch_zkversion)
    assert (await store.get("/admin/a"))[0] == b"x"
    with pytest.raises(NoNodeError):
        await store.get("/admin/nothing")
    # another controller wins: this one's next fenced write is refused
    rival = server.connect()
    await rival.delete(paths.CONTROLLER)
    await try_elect(rival, 2)
    with pytest.raises(FencedError):
        await store.fenced_multi([Create("/admin/c", b"z")], won.epoch_zkversion)
    after = samples(metrics)

    def grew(name, *labels):
        key = (name, tuple(labels))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("reassignd_fence_failures_total") == 1
    assert grew("reassignd_zookeeper_errors_total", ("op", "fenced_multi")) == 1
    assert grew("reassignd_zookeeper_errors_total", ("op", "get")) == 1
    assert grew("reassignd_zookeeper_request_duration_seconds_count", ("op", "fenced_multi")) == 2
    assert grew("reassignd_zookeeper_request_duration_seconds_count", ("op", "get")) == 2
    # each op of a multi counts, the epoch check too: 2 + 1, then 1 + 1 refused
    assert grew("reassignd_zookeeper_ops_total", ("kind", "write")) == 3
    assert grew("reassignd_zookeeper_ops_total", ("kind", "read")) == 1  # the failed get is not counted
    assert grew("reassignd_zookeeper_multi_ops_count") == 2 and grew("reassignd_zookeeper_multi_ops_sum") == 5
    assert grew("reassignd_zookeeper_multi_ops_bucket", ("le", "2.0")) == 1  # the refused one


async def test_session_state_changes_and_readiness_of_the_inbox():
    metrics = Metrics()
    inbox = MeteredInbox(None, metrics)
    assert inbox.connected
    inbox.note(SessionEvent(SessionState.SUSPENDED))
    assert not inbox.connected
    inbox.note(SessionEvent(SessionState.CONNECTED))
    inbox.note(SessionEvent(SessionState.SUSPENDED))
    inbox.note(SessionEvent(SessionState.LOST))
    assert not inbox.connected
    m = samples(metrics)
    assert [m[("reassignd_zookeeper_session_events_total", (("state", s),))] for s in ("CONNECTED", "SUSPENDED", "LOST")] == [1, 2, 1]


def test_elections_and_resignations_by_reason():
    metrics = Metrics()
    metrics.elected(4)
    for reason in ("fenced: another controller has a newer epoch (x)", "session lost",
                   "/controller was deleted or taken over", "shutdown", "something new"):
        metrics.resigned(reason)
    metrics.elected(6)
    m = samples(metrics)
    assert m[("reassignd_elections_total", ())] == 2 and m[("reassignd_controller_epoch", ())] == 6
    assert m[("reassignd_controller_active", ())] == 1
    for label in ("fenced", "session_lost", "controller_deleted", "shutdown", "other"):
        assert m[("reassignd_resignations_total", (("reason", label),))] == 1, label


def test_cancellations_by_door_and_result():
    metrics = Metrics()
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    for p in range(2):
        s.states[("t", p)] = state(1, (1, 2, 3))
    step = engine.step(s, [RequestsRead(0, (req("t", 0, (4, 2, 3)),))], ControllerConfig())
    s.apply(step.delta)
    # t-0 is moving (accepted), t-1 is not (skipped), through the API
    step = engine.step(s, [CancelRequested((("t", 0), ("t", 1)), token="x", source="api")], ControllerConfig())
    metrics.observe_step(step)
    m = samples(metrics)
    assert m[("reassignd_cancellations_total", (("door", "api"), ("result", "accepted")))] == 1
    assert m[("reassignd_cancellations_total", (("door", "api"), ("result", "skipped")))] == 1


async def test_the_event_loop_lag_gauge():
    metrics = Metrics()

    async def ready():
        return True, "ok"

    ops = OpsServer("127.0.0.1", 0, metrics, ready=ready)
    await ops.start()
    try:
        await asyncio.sleep(0.2)
        time.sleep(0.4)  # noqa: ASYNC251 - the loop blocked on purpose: the ticker wakes late
        for _ in range(40):
            await asyncio.sleep(0.05)
            lag = samples(metrics)[("reassignd_event_loop_lag_seconds", ())]
            if lag >= 0.2:
                break
        assert lag >= 0.2, lag
    finally:
        await ops.close()


def test_moves_by_door_and_broker_slots_from_the_active_state():
    from types import SimpleNamespace

    from controller.core.task import Move, Phase
    from controller.shell.journal import MoveJournal
    from controller.shell.role import Role

    s = cluster(topics={"a": {0: (1, 2, 3), 1: (1, 2, 3), 2: (1, 2, 3), 3: (1, 2, 3)}, "c": {0: (1, 2, 3), 1: (1, 2, 3)}},
                brokers=(1, 2, 3, 4, 5))
    moves = [
        Move(("a", 0), (4, 2, 3), Phase.REPLICATING, original=(1, 2, 3)),
        Move(("a", 1), (4, 5, 3), Phase.STOPPING, original=(1, 2, 3)),
        Move(("a", 2), (5, 2, 3), Phase.REPLICATING, original=(1, 2, 3)),  # resumed: no door known
        Move(("a", 3), (1, 2, 4), Phase.LOADING),  # its state being read: slots on 4 in, 3 out
        Move(("c", 0), (1, 2, 4)),  # pending
        Move(("c", 1), (1, 2, 5)),  # pending, no door known
    ]
    for move in moves:
        s.tasks[move.tp] = move
    s.pending.update({("c", 0): None, ("c", 1): None})
    journal = MoveJournal()
    journal.doors.update({("a", 0): "AlterPartitionReassignments", ("a", 1): "znode", ("a", 3): "znode", ("c", 0): "queue"})
    metrics, role = Metrics(), Role(1)
    role.active = SimpleNamespace(state=s, journal=journal, config=ControllerConfig(max_incoming_per_broker=3))
    metrics.watch(role=role)
    m = samples(metrics)
    running = {labels[0][1]: v for (name, labels), v in m.items() if name == "reassignd_reassignments_running"}
    pending = {labels[0][1]: v for (name, labels), v in m.items() if name == "reassignd_reassignments_pending"}
    assert running == {"znode": 2, "queue": 0, "ReassignPartitions": 0, "AlterPartitionReassignments": 1, "recovered": 1}
    assert pending == {"znode": 0, "queue": 1, "ReassignPartitions": 0, "AlterPartitionReassignments": 0, "recovered": 1}
    slots = {(dict(labels)["broker"], dict(labels)["direction"]): v
             for (name, labels), v in m.items() if name == "reassignd_broker_move_slots_in_use"}
    # the four moves holding slots: 4 in three times, 5 in twice; 1 out three times, 2 and 3 out
    # once; every live broker listed
    assert slots == {("1", "incoming"): 0, ("1", "outgoing"): 3, ("2", "incoming"): 0, ("2", "outgoing"): 1,
                     ("3", "incoming"): 0, ("3", "outgoing"): 1, ("4", "incoming"): 3, ("4", "outgoing"): 0,
                     ("5", "incoming"): 2, ("5", "outgoing"): 0}
    assert m[("reassignd_broker_move_slots", (("direction", "incoming"),))] == 3
    assert m[("reassignd_brokers_shutting_down", ())] == 0
    s.shutting_down.update({4: 1004, 5: 1005})  # two brokers in a controlled shutdown
    assert samples(metrics)[("reassignd_brokers_shutting_down", ())] == 2
