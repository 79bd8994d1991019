"""How a simulated broker reaches the active controller: found on the broker's own ZooKeeper
session as Kafka's broker finds it, then a connection through protocol_aio.

Shared by the broker's requests to the controller: ControlledShutdown
(:mod:`sim.controlled_shutdown`) and AlterPartition (:mod:`sim.alter_partition`).

 1. ``/controller``'s brokerid, then that instance's listener at ``/reassignd/controllers/<id>``
    (reassignd's controllers are not brokers, so ``/brokers/ids`` does not name them).
 2. A connection to it, client id the broker id. What goes wrong on the way (no session, no
    controller registered, a malformed znode, a refused connection) is one NoAnswer.

    cid, host, port = await find_controller(broker)      # NoAnswer("no /controller")
    conn = await connect(broker, cid, host, port, timeout_s=30.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from protocol.errors import ErrorCode
from protocol_aio import ClientConnection
from sim.clusterwatch import CONTROLLERS_PATH
from znodes import paths
from znodes.api import NoNodeError, ZkError
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_controller, decode_listener

if TYPE_CHECKING:
    from sim.core import BrokerCore
    from znodes.api import Store

CONNECT_TIMEOUT_S = 5.0  # a controller on the same network answers a connect far sooner


class Broker(Protocol):
    """What a request to the controller needs of the broker asking: a running
    sim.cluster.SimBroker (named here by its shape, not imported: sim.cluster imports the
    modules that use this one)."""

    id: int
    store: Store | None
    core: BrokerCore


class NoAnswer(Exception):
    """No controller answered (why)."""


# How a broker finds the controller (ClusterSettings.controller_lookup): through ZooKeeper
# (``/controller``, then the instance's registration), or as Kafka 3.x brokers do, from their
# last UpdateMetadata (its ``controller_id`` among its live nodes, on the broker's listener).
LOOKUP_ZOOKEEPER = "zookeeper"
LOOKUP_METADATA = "metadata"
LOOKUPS = (LOOKUP_ZOOKEEPER, LOOKUP_METADATA)


async def find_controller(broker: Broker) -> tuple[int, str, int]:
    """Step 1: (controller id, host, port) of the active instance, found the broker's way
    (its ``controller_lookup``, ZooKeeper when it has none)."""
    if getattr(broker, "controller_lookup", LOOKUP_ZOOKEEPER) == LOOKUP_METADATA:
        cache = broker.core.metadata
        node = cache.brokers.get(cache.controller_id)
        if node is None or node.port <= 0:
            raise NoAnswer(f"the last UpdateMetadata lists no controller node (controller_id {cache.controller_id})")
        return node.id, node.host, node.port
    store = broker.store
    if store is None:
        raise NoAnswer("no ZooKeeper session")
    path = paths.CONTROLLER
    try:
        data, _ = await store.get(path)
        cid = decode_controller(path, data)
        path = f"{CONTROLLERS_PATH}/{cid}"
        data, _ = await store.get(path)
        host, port = decode_listener(path, data)
    except NoNodeError:
        raise NoAnswer(f"no {path}") from None
    except (ZkError, ZnodeFormatError) as exc:
        raise NoAnswer(f"cannot read {path}: {exc}") from None
    return cid, host, port


async def connect(broker: Broker, cid: int, host: str, port: int, *, timeout_s: float) -> ClientConnection:
    """Step 2: a new connection to controller ``cid``, each request on it timing out after
    ``timeout_s``; NoAnswer when it cannot be opened."""
    try:
        return await ClientConnection.open(host, port, connect_timeout_s=CONNECT_TIMEOUT_S, client_id=str(broker.id),
                                           name=f"controller {cid}", timeout_s=timeout_s)
    except OSError as exc:
        raise NoAnswer(f"controller {cid} at {host}:{port}: {exc!r}") from None


def error_name(code: int) -> str:
    """An answer's error code as the logs name it."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
