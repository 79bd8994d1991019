"""Movement strategies (issue 24 item 4, controller.core.move_order) on a real ZooKeeper with
simulated brokers and a real controller process: with ``replica_movement_strategies =
"smallest_first"`` and one move at a time, a large partition asked for first starts only after
a small one asked for after it has finished - the sizes are the simulated brokers' own, from
their DescribeLogDirs answers to the controller. With the order given it would be the other way
round (the engine test, tests/controller/test_move_order.py, shows both under a cap of one)."""

from __future__ import annotations


import pytest

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

# "big" copies 4 MiB at 1 MiB/s, "small" 16 KiB: each moves its replica on broker 3 to 4.
SIM = ["--brokers", "4", "--topics", "big:1:3:4MiB", "small:1:3:16KiB", "--topic-brokers", "1,2,3",
       "--bandwidth", "1MiB", "--produce-rate", "0"]


def test_smallest_first_starts_the_small_partition_asked_for_second_first(zk_hosts, tmp_path):
    config = {"max_cluster_moves": 1, "replica_movement_strategies": "smallest_first"}
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,), controller_config=config) as c:
        # The sizes come from the brokers' DescribeLogDirs answers to the controller's election:
        # submit once every broker's answer was taken (a move asked for before its size is
        # known starts in the order given - under load the test once raced a fixed wait).
        def every_broker_said_what_it_hosts():
            text = c.controller_log(101).read_text()
            return all(f"broker {b} said what it hosts" in text for b in (1, 2, 3, 4)) or None

        wait_for(every_broker_said_what_it_hosts, 60, "the brokers' answers to the controller's election")
        before = {t: c.replicas(t, 0) for t in ("big", "small")}
        targets = {(t, 0): [4 if b == 3 else b for b in r] for t, r in before.items()}
        c.submit({("big", 0): targets[("big", 0)], ("small", 0): targets[("small", 0)]})  # big first

        def big_started():
            return (c.moving("big", 0) or c.replicas("big", 0) == targets[("big", 0)]) or None

        wait_for(big_started, 60, "the big partition's move started")
        assert c.replicas("small", 0) == targets[("small", 0)], "small had not finished when big started"
        wait_for(lambda: c.replicas("big", 0) == targets[("big", 0)] and not c.moving("big", 0) or None,
                 60, "the big partition moved")
        wait_for(c.reassignments_done, 30, "nothing left to do")
