"""A reassignment as a controller drives it (Kafka 2.4+ / KIP-455 steps), against simulated
brokers through the in-process transport on the ZooKeeper twin, with a manual clock."""

import json

from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.inprocess import InProcessTransport
from sim.replica import CopySettings, Role
from sim.topics import parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica
from znodes.twin import TwinServer

MB = 1_000_000
STATE = "/brokers/topics/t/partitions/0/state"


async def test_move_partition_from_1_2_to_2_3():
    server = TwinServer()
    clock = ManualClock()
    settings = ClusterSettings(
        brokers=3,
        copy=CopySettings(bandwidth=2 * MB, produce_bytes=10_000, produce_messages=10),
        broker=BrokerConfig(replica_lag_time_max=5.0, isr_notification_quiet=0.5),
    )
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=False)
    await cluster.start()
    controller = server.connect()
    transport = InProcessTransport(cluster)
    try:
        # The topic as the controller sees it: replicas [1, 2], leader 1, 6 MB.
        for b in (1, 2):
            cluster.broker(b).core.adopt("t", 0, size=6 * MB, leo=6000, leader=1, leader_epoch=0,
                                          controller_epoch=1, isr=(1, 2), replicas=(1, 2), zk_version=0)
        await controller.create("/brokers/topics/t/partitions/0/state",
                                b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}',
                                makepath=True)

        # 1. RS = TRS + (ORS - TRS) = [2, 3, 1]; adding [3], removing [1]; leader epoch bumped.
        await controller.set(STATE, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":1,"isr":[1,2]}')
        rs = partition_state(0, 1, [2, 3, 1], isr=[1, 2], leader_epoch=1, zk_version=1, adding=[3], removing=[1])
        for b in (1, 2, 3):
            response = await transport.request(b, 4, 4, leader_and_isr("t", [rs]))
            assert response["partition_errors"][0]["error_code"] == 0
        assert cluster.model.get("t", 0, 3).role is Role.FOLLOWER

        # 2. Broker 3 copies 6 MB (plus what producers add) at 2 MB/s, then joins the ISR.
        seconds = 0.0
        while json.loads(server.read(STATE)[0])["isr"] != [1, 2, 3]:
            clock.advance(0.25)
            seconds += 0.25
            await cluster.advance()
            assert seconds < 10
        assert seconds >= 3.0
        await _run(cluster, clock, 1.0)
        notes = server.children("/isr_change_notification")
        assert len(notes) == 1

        # 3. TRS is in the ISR: elect 2, shrink the ISR to TRS, stop and delete the old replica.
        stat = server.exists(STATE)
        await controller.set(STATE, b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":2,"isr":[2,3]}',
                             stat.version)
        final = partition_state(0, 2, [2, 3], isr=[2, 3], leader_epoch=2, zk_version=stat.version + 1)
        for b in (2, 3):
            await transport.request(b, 4, 4, leader_and_isr("t", [final]))
        response = await transport.request(1, 5, 3, stop_replica("t", [0], delete=True, leader_epoch=-2))
        assert response["partition_errors"][0]["error_code"] == 0

        await _run(cluster, clock, 2.0)
        assert cluster.model.get("t", 0, 1) is None
        assert cluster.model.get("t", 0, 2).role is Role.LEADER
        assert cluster.model.get("t", 0, 3).leader == 2
        # The new leader keeps its ISR: nothing fell behind.
        assert json.loads(server.read(STATE)[0])["isr"] == [2, 3]
        lags = (await transport.request(3, 35, 4, {"topics": None}))["results"][0]["topics"][0]["partitions"]
        assert lags[0]["offset_lag"] == 0
    finally:
        await controller.close()
        await cluster.close()


async def _run(cluster, clock, seconds):
    end = clock() + seconds
    while clock() < end:
        clock.advance(0.25)
        await cluster.advance()
