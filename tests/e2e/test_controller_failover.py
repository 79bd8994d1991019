"""End to end: 3 controller processes, 6 simulated brokers, 200 partitions, SIGKILL mid-flight.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd controller`` x3,
``python -m reassignd sim`` (brokers speaking the Kafka wire protocol over TCP), and a
third-party-style write of ``/admin/reassign_partitions`` with kazoo in Kafka's plain format
(no ``original_replicas``). The active controller is killed with SIGKILL at a random moment;
a standby must take over and every partition must complete.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

BROKERS = 6
TOPICS = {"orders": 80, "clicks": 60, "logs": 60}  # 200 partitions, RF 3
CONTROLLER_IDS = (101, 102, 103)
COMPLETION_TIMEOUT_S = 60
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


def test_failover_mid_reassignment(zk_hosts, tmp_path):
    rng = random.Random(int(os.environ.get("E2E_SEED", "0")) or None)
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=CONTROLLER_CONFIG) as c:
        zk = c.zk
        targets = _targets(c.sim["topics"], rng)
        c.submit(targets)
        time.sleep(rng.uniform(0.05, 1.5))
        active = c.active_controller()
        c.kill_controller(active)
        started = time.monotonic()

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
