"""Simulated clusters for the sim tests, with a second ZooKeeper session beside them that plays
the controller instances or an admin tool: on the deterministic twin (in-process, a manual
clock, no sockets) or on the real ZooKeeper of the session fixture.

    @pytest.fixture
    async def twin():
        async with twin_cluster("orders:2:2:4KiB") as (transport, cluster, other):
            yield transport, cluster, other

    async def test_x(zk_hosts):
        async with real_zk_cluster(zk_hosts, brokers=2) as (cluster, other):
            ...

Both close the second session, then the cluster, on exit.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.inprocess import InProcessTransport
from sim.topics import parse_topic_spec
from znodes import store as zstore
from znodes.twin import TwinServer

TWIN_BROKERS = 3


@asynccontextmanager
async def twin_cluster(*topic_specs: str, brokers: int = TWIN_BROKERS) -> AsyncIterator[tuple]:
    """(in-process transport, started cluster, another twin session) on a fresh twin server."""
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, ClusterSettings(brokers=brokers), clock=ManualClock(), serve=False)
    await cluster.start([parse_topic_spec(spec) for spec in topic_specs])
    other = server.connect()
    try:
        yield InProcessTransport(cluster), cluster, other
    finally:
        await other.close()
        await cluster.close()


@asynccontextmanager
async def real_zk_cluster(zk_hosts: str, *topic_specs: str, brokers: int, clock: ManualClock | None = None,
                          serve: bool = False) -> AsyncIterator[tuple]:
    """(started cluster, another session) on a real ZooKeeper; ``serve`` opens the brokers'
    TCP listeners."""
    cluster = SimulatedCluster(lambda: zstore.connect(zk_hosts), ClusterSettings(brokers=brokers), clock=clock or ManualClock(),
                      serve=serve)
    await cluster.start([parse_topic_spec(spec) for spec in topic_specs])
    try:
        other = await zstore.connect(zk_hosts)
        try:
            yield cluster, other
        finally:
            await other.close()
    finally:
        await cluster.close()
