"""Brokers that change ISRs the Kafka 2.7+ way (AlterPartition, KIP-497): the simulated brokers
with ``--isr-via alter-partition`` never write a state znode nor post an ISR change
notification; they ask the active controller (controller.shell.admin.alter_partition), which
writes the ISR and tells every broker.

- A follower that stops leaves its ISRs (the controller's broker-failure shrink), and comes
  back into them once started again: the leaders' expansions, asked of the controller.
- A reassignment completes: the new replicas enter the ISR only through AlterPartition, which is
  what the move's step 5 waits for.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py).
"""

from __future__ import annotations

import pytest

from tests.e2e.processes import running_cluster, wait_for
from tests.planner.service_http import sim_command

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

PARTITIONS = 6
SIM_ARGS = ["--brokers", "4", "--topics", f"orders:{PARTITIONS}:2:1KiB", "--produce-rate", "0", "--tick-ms", "50",
            "--isr-via", "alter-partition"]
STOPPED = 4


def _states(c) -> dict[int, dict]:
    return {p: c.json(f"/brokers/topics/orders/partitions/{p}/state") for p in range(PARTITIONS)}


def _assigned(c) -> dict[int, list[int]]:
    return {int(p): r for p, r in c.topic("orders")["partitions"].items()}


def _in_sync(c) -> bool:
    parts, states = _assigned(c), _states(c)
    return all(sorted(states[p]["isr"]) == sorted(parts[p]) for p in parts)


@pytest.mark.parametrize("lookup", ["zookeeper", "metadata"])
def test_isr_changes_and_a_reassignment_go_through_the_controller(zk_hosts, tmp_path, lookup):
    """``lookup``: how the brokers find the controller - through ZooKeeper, or as Kafka 3.x
    brokers do, among the live nodes of their last UpdateMetadata (the controller lists its
    instances there: controller.core.replica_sync.on_controllers)."""
    with running_cluster(zk_hosts, tmp_path, sim_args=[*SIM_ARGS, "--controller-lookup", lookup],
                         controller_ids=(101, 102)) as c:
        wait_for(lambda: _in_sync(c) or None, 30, "every replica in its ISR")
        active = c.active_controller()
        log = c.controller_log(active)
        followed = [p for p, r in _assigned(c).items() if STOPPED in r and _states(c)[p]["leader"] != STOPPED]
        assert followed, _assigned(c)

        sim_command(f"127.0.0.1:{c.control_port}", f"stop {STOPPED}")
        wait_for(lambda: all(STOPPED not in _states(c)[p]["isr"] for p in followed) or None, 30,
                 f"broker {STOPPED} out of the ISRs it followed in")

        sim_command(f"127.0.0.1:{c.control_port}", f"start {STOPPED}")
        wait_for(lambda: _in_sync(c) or None, 30, f"broker {STOPPED} back in every ISR")
        assert "AlterPartition from broker" in log.read_text()  # the leaders' expansions
        assert not c.zk.get_children("/isr_change_notification")  # the brokers post none

        before = _assigned(c)
        targets = {("orders", p): [b for b in (1, 2, 3, 4) if b not in r][:2] for p, r in before.items()}
        c.submit(targets)
        wait_for(lambda: c.reassignments_done() and all(c.replicas(*tp) == t for tp, t in targets.items()) or None,
                 60, "every partition moved to two other brokers")
        states = _states(c)
        for (_, p), target in targets.items():
            assert sorted(states[p]["isr"]) == sorted(target) and states[p]["leader"] in target, (p, states[p])
        assert not c.zk.get_children("/isr_change_notification")
