"""End to end: 3 controller processes, 6 simulated brokers, 200 partitions, SIGKILL mid-flight.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd controller`` x3,
``python -m reassignd sim`` (brokers speaking the Kafka wire protocol over TCP), and a
third-party-style write of ``/admin/reassign_partitions`` with kazoo in Kafka's plain format
(no ``original_replicas``). The active controller is killed with SIGKILL at a random moment
once its moves have started, and moves must still be in flight at the kill (their KIP-240
records, read before any successor was elected); a standby must take over and every
partition must complete. ``E2E_SEED`` picks the moment and the targets (default
:data:`DEFAULT_SEED`, so a failure replays; it is printed either way).
"""

from __future__ import annotations

import os
import random
import time

import pytest
from kazoo.exceptions import NoNodeError

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

BROKERS = 6
TOPICS = {"orders": 80, "clicks": 60, "logs": 60}  # 200 partitions, RF 3
CONTROLLER_IDS = (101, 102, 103)
COMPLETION_TIMEOUT_S = 60
DEFAULT_SEED = 20261126
# The kill comes this long after the first moves started (drawn from the seed): the 200
# partitions take several seconds to move, so moves are in flight at any point of it.
KILL_AFTER_START_S = (0.0, 1.0)
START_TIMEOUT_S = 30
CONTROLLER_CONFIG = {"max_incoming_per_broker": 40, "max_outgoing_per_broker": 40}
SIM_ARGS = ["--brokers", str(BROKERS), "--topics", *(f"{name}:{n}:3:256KiB" for name, n in TOPICS.items()),
            "--bandwidth", "20MiB", "--produce-rate", "0", "--tick-ms", "50", "--replica-lag-time-max-ms", "3000"]


def _targets(assignments: dict[str, dict[str, list[int]]], rng: random.Random) -> dict[tuple[str, int], list[int]]:
    """A new replica set for every partition: at least one broker changes, leaders move too."""
    out = {}
    for topic, parts in assignments.items():
        for p, replicas in parts.items():
            while True:
                target = rng.sample(range(1, BROKERS + 1), len(replicas))
                if set(target) != set(replicas):
                    break
            out[(topic, int(p))] = target
    return out


def _records(zk) -> list[str]:
    """The KIP-240 records under /admin/reassignments: one per move started and not ended."""
    out: list[str] = []
    for t in zk.get_children("/admin/reassignments") if zk.exists("/admin/reassignments") else []:
        try:
            out += [f"{t}/{p}" for p in zk.get_children(f"/admin/reassignments/{t}")]
        except NoNodeError:  # the topic's last move finished between the two reads
            continue
    return out


def test_failover_mid_reassignment(zk_hosts, tmp_path):
    seed = int(os.environ.get("E2E_SEED") or DEFAULT_SEED)
    print(f"E2E_SEED={seed}")
    rng = random.Random(seed)
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=CONTROLLER_CONFIG) as c:
        zk = c.zk
        targets = _targets(c.sim["topics"], rng)
        c.submit(targets)
        wait_for(lambda: _records(zk), START_TIMEOUT_S, "the first moves to start", interval=0.02)
        time.sleep(rng.uniform(*KILL_AFTER_START_S))
        active = c.active_controller()
        epoch = zk.get("/controller_epoch")[0]
        c.kill_controller(active)
        started = time.monotonic()
        # What was in flight at the kill: the killed controller writes nothing more, and the
        # epoch unchanged after the read says no successor had written yet either.
        in_flight = _records(zk)
        assert zk.get("/controller_epoch")[0] == epoch, "a successor was elected before the in-flight read"
        assert in_flight, "no move was in flight when the controller was killed"
        assert zk.exists("/admin/reassign_partitions") is not None, "every request had ended before the kill"
        print(f"{len(in_flight)} moves in flight at the kill")

        wait_for(
            lambda: zk.exists("/admin/reassign_partitions") is None and not zk.get_children("/admin/reassignments"),
            COMPLETION_TIMEOUT_S,
            "every reassignment to complete",
            interval=0.2,
        )
        new_active = c.active_controller()
        assert new_active != active
        print(f"killed controller {active}; {new_active} finished {time.monotonic() - started:.1f}s later")

        # Invariants 1 and 2: every partition is at its target, nothing half-moved is left.
        for topic in TOPICS:
            znode = c.topic(topic)
            assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}, topic
            for p, replicas in znode["partitions"].items():
                assert replicas == targets[(topic, int(p))], (topic, p)
                state = c.json(f"/brokers/topics/{topic}/partitions/{p}/state")
                assert state["leader"] in replicas and set(state["isr"]) <= set(replicas), (topic, p, state)
        # Invariant 4 seen from the brokers: removed replicas are gone from disk, targets hold one.
        hosted = c.hosted()
        for tp, target in targets.items():
            assert hosted.get(tp) == set(target), (tp, hosted.get(tp), target)
