"""ISR-aware execution (issue 24 item 4, controller.core.isr_health) on a real ZooKeeper with
simulated brokers and a real controller process: topic "orders" has min.insync.replicas=2 in
/config/topics/orders; broker 3 is stopped through the sim's control port, so every partition
it holds has a short ISR (the controller takes 3 out of it). Moves are then asked for a
partition off broker 3 (an entry may not name a broker that is not registered) and for
partitions that are not on it: the others complete while the sick one
waits (its replica offline, then, once 3 is back but not yet in sync, its ISR at the floor of
2), and it starts and completes once 3 is back in its ISR.

The controller runs with ``isr_wait_offline_replicas = true``: a stopped broker is the only way
the sim's control port has to shrink an ISR, and with the default (a dead broker holds nothing)
the move would start at once.
"""

from __future__ import annotations

import pytest

from tests.e2e.processes import running_cluster, sim_status, wait_for
from tests.planner.service_http import sim_command

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

SIM = ["--brokers", "5", "--topics", "orders:6:3:64KiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "4MiB", "--produce-rate", "0"]
SICK = 3  # the broker stopped


def _states(c, partitions) -> dict[int, dict]:
    return {p: c.json(f"/brokers/topics/orders/partitions/{p}/state") for p in partitions}


def _replaced(replicas: list[int], broker: int) -> list[int]:
    """The replicas with ``broker`` replaced by broker 5."""
    return [5 if b == broker else b for b in replicas]


def test_a_move_under_min_isr_waits_the_others_proceed_and_it_starts_once_the_isr_recovers(zk_hosts, tmp_path):
    config = {"isr_wait_offline_replicas": True}
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,), controller_config=config) as c:
        parts = {int(p): r for p, r in c.topic("orders")["partitions"].items()}
        wait_for(lambda: all(sorted(s["isr"]) == sorted(parts[p]) for p, s in _states(c, parts).items()) or None,
                 60, "every replica in its ISR")
        sick = min(p for p, r in parts.items() if SICK in r)
        healthy = sorted(p for p, r in parts.items() if SICK not in r)
        assert healthy, parts
        c.set_dynamic_config("topics/orders", {"min.insync.replicas": "2"})

        sim_command(f"127.0.0.1:{c.control_port}", f"stop {SICK}")
        wait_for(lambda: all(SICK not in s["isr"] for s in _states(c, parts).values()) or None,
                 30, f"broker {SICK} out of every ISR")

        targets = {("orders", sick): _replaced(parts[sick], SICK)}
        targets.update({("orders", p): _replaced(parts[p], parts[p][0]) for p in healthy})
        c.submit(targets)

        # The others complete; the sick partition has not started (no record, no RS change).
        wait_for(lambda: all(c.replicas("orders", p) == targets[("orders", p)] for p in healthy) or None,
                 60, "the healthy partitions moved")
        assert c.replicas("orders", sick) == parts[sick] and not c.moving("orders", sick)
        assert not c.zk.exists(f"/admin/reassignments/orders/{sick}")
        entries = c.json("/admin/reassign_partitions")["partitions"]
        assert [(e["topic"], e["partition"]) for e in entries] == [("orders", sick)]
        log = c.controller_log(101)
        wait_for(lambda: f"orders-{sick} waits: replica(s) [{SICK}] offline" in log.read_text() or None,
                 10, "the waiting reason logged")

        # Broker 3 comes back: short ISR at the floor until it catches up, then the move runs.
        sim_command(f"127.0.0.1:{c.control_port}", f"start {SICK}")
        wait_for(lambda: c.replicas("orders", sick) == targets[("orders", sick)] and not c.moving("orders", sick) or None,
                 90, "the sick partition moved once its ISR recovered")
        wait_for(c.reassignments_done, 30, "nothing left to do")
        text = log.read_text()
        floor = f"orders-{sick} waits: ISR "
        assert floor in text and "at or under min.insync.replicas=2" in text.split(floor, 1)[1].splitlines()[0], text[-3000:]
        hosted = {(r["topic"], r["partition"]) for b, info in sim_status(c.control_port)["brokers"].items()
                  if int(b) == 5 for r in info["replicas"]}
        assert ("orders", sick) in hosted
