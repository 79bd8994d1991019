"""kafka-python's ``KafkaAdminClient``, unchanged, against 2 controller processes: bootstrapped
from the STANDBY, it reassigns with ``alter_partition_reassignments`` (KIP-455), lists with
``list_partition_reassignments``, cancels with ``None``, sees the KIP-179 throttles (set
through this project's AdminClient) with ``describe_configs``, and gives a moving partition a
second target, which replaces the first at once (Kafka 2.4+).

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (started by tests/e2e/processes.py).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from client.admin import AdminClient
from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

CONTROLLER_IDS = (101, 102)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
# 32 KiB/s per broker: a 256 KiB replica takes 8 s to copy, long enough to look at it.
SIM_ARGS = ["--brokers", "4", "--topics", "orders:3:2:256KiB", "--bandwidth", "32KiB", "--produce-rate", "0",
            "--tick-ms", "50"]


def test_kafka_python_alter_list_cancel_describe_from_the_standby(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import NoReassignmentInProgressError

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
        try:
            zk = c.zk
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            bootstrap = c.listeners[standby]

            def replicas(p: int) -> list[int]:
                return c.replicas("orders", p)

            original = {p: replicas(p) for p in range(3)}
            # Replace the partition's second replica: one broker added, one removed.
            target = {p: [original[p][0], next(b for b in (1, 2, 3, 4) if b not in original[p])] for p in range(3)}

            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-e2e",
                                     request_timeout_ms=20000)
            # The standby's own BROKER resource (kafka-python sends that to the node itself): a
            # controller instance has no broker configs.
            assert admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(standby))]) == {
                "broker": {str(standby): {}}}
            tp0, tp1, tp2 = (TopicPartition("orders", p) for p in range(3))
            assert admin.alter_partition_reassignments({tp0: target[0], tp1: target[1]}) == {tp0: None, tp1: None}

            # list: both running, with Kafka's replicas / adding / removing.
            def listed():
                got = admin.list_partition_reassignments()
                return got if set(got) == {tp0, tp1} else None

            ongoing = wait_for(listed, 20, "both reassignments to be listed")
            for tp in (tp0, tp1):
                removing = [b for b in original[tp.partition] if b not in target[tp.partition]]
                adding = [b for b in target[tp.partition] if b not in original[tp.partition]]
                assert ongoing[tp] == {"replicas": target[tp.partition] + removing,
                                       "adding_replicas": adding, "removing_replicas": removing}
            entries = json.loads(zk.get("/admin/reassign_partitions")[0])["partitions"]
            assert {e["partition"]: e["original_replicas"] for e in entries} == {0: original[0], 1: original[1]}

            # KIP-179 throttles on partition 1's move, through this project's client (v1: adds to
            # the running set); kafka-python's describe_configs shows them.
            async def throttle():
                async with AdminClient(bootstrap) as ours:
                    return dict(await ours.reassign_partitions({("orders", 1): target[1]}, throttle=1_000_000,
                                                               additional=True))

            assert asyncio.run(throttle()) == {("orders", 1): None}
            described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
            topic = described["topic"]["orders"]
            assert topic[LEADER_REPLICAS]["value"] == ",".join(f"1:{b}" for b in sorted(original[1]))
            assert topic[FOLLOWER_REPLICAS]["value"] == ",".join(
                f"1:{b}" for b in sorted(set(target[1]) - set(original[1])))

            # cancel with None; a partition that is not moving is NoReassignmentInProgress.
            assert admin.alter_partition_reassignments({tp0: None}) == {tp0: None}
            assert admin.alter_partition_reassignments({tp2: None}) == {tp2: NoReassignmentInProgressError}
            wait_for(lambda: set(admin.list_partition_reassignments()) == {tp1}, 20, "the cancel to take")
            wait_for(lambda: replicas(0) == original[0], 20, "partition 0 back on its original replicas")

            # Partition 1 completes; its throttles go with it.
            wait_for(lambda: admin.list_partition_reassignments() == {}, 40, "partition 1 to complete")
            assert replicas(1) == target[1]
            wait_for(lambda: LEADER_REPLICAS not in admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "orders")])["topic"]["orders"], 20, "the throttles to go")

            # A second target for a moving partition replaces the first at once, as in Kafka
            # 2.4+: the first target's new replica is deleted at once, or, had it already caught
            # up into the ISR, listed as removing until the new target is in sync (docs/DESIGN.md
            # section 4.1); gone at the end either way.
            x, y = (b for b in (1, 2, 3, 4) if b not in original[2])
            first, second = [original[2][0], x], [original[2][0], y]
            assert admin.alter_partition_reassignments({tp2: first}) == {tp2: None}
            wait_for(lambda: tp2 in admin.list_partition_reassignments(), 20, "partition 2 to be listed")
            assert admin.alter_partition_reassignments({tp2: second}) == {tp2: None}
            ongoing = wait_for(lambda: (got := admin.list_partition_reassignments()).get(tp2, {}).get(
                "adding_replicas") == [y] and got, 20, "the new target to be taken")
            assert ongoing[tp2] in (
                {"replicas": second + [original[2][1]], "adding_replicas": [y], "removing_replicas": [original[2][1]]},
                {"replicas": second + [original[2][1], x], "adding_replicas": [y],
                 "removing_replicas": [original[2][1], x]},
            )
            wait_for(lambda: admin.list_partition_reassignments() == {}, 40, "partition 2 to complete")
            assert replicas(2) == second
        finally:
            if admin is not None:
                admin.close()
