"""How a simulated broker reaches the active controller: found on the broker's own ZooKeeper
session as Kafka's broker finds it (or in its last UpdateMetadata, as Kafka 3.x brokers do), then
a connection through protocol_aio, plain or TLS.

Shared by the broker's requests to the controller: ControlledShutdown
(:mod:`sim.controlled_shutdown`) and AlterPartition (:mod:`sim.alter_partition`).

 1. The instance and its endpoints, (listener, host, port, security protocol) each, by the
    broker's ``controller_lookup``:
    - ZooKeeper (the default): ``/controller``'s brokerid, then that instance's registration
      at ``/reassignd/controllers/<id>`` (reassignd's controllers are not brokers, so
      ``/brokers/ids`` does not name them): its endpoints with their protocols from the
      registration's ``listener_security_protocol_map`` (controller.shell.daemon writes both;
      a registration with only host and port is one PLAINTEXT listener, read as the controller
      reads it: znodes.payloads.decode_controller_node).
    - metadata: ``controller_id`` among the live nodes of the last UpdateMetadata, each
      endpoint with the protocol UpdateMetadata gives it.
 2. The endpoint (:func:`choose_endpoint`): the listener named like the broker's own
    (``ClusterSettings.listener_name``, Kafka's ``inter.broker.listener.name``, which is what
    Kafka's broker looks the controller up by) when the broker can speak its protocol; else a
    PLAINTEXT one; else an SSL one when the brokers have TLS settings. The fallbacks keep a
    controller that registers PLAINTEXT only reachable by brokers whose listener is named
    otherwise, as it was before registrations carried protocols. Simulated brokers speak no
    SASL: a controller listening only with SASL (or only with SSL, to brokers without TLS
    settings) is a NoAnswer naming its listeners and why none will do.
 3. A connection to it, client id the broker id: over TLS for an SSL endpoint, with the
    brokers' client context (:func:`sim.tls.client_context`: the controller's certificate
    checked against the truststore, the keystore presented as client certificate). What goes
    wrong on the way (no session, no controller registered, a malformed znode, a refused
    connection or TLS handshake) is one NoAnswer.

    endpoint = await find_controller(broker)    # ControllerEndpoint; NoAnswer("no /controller")
    conn = await connect(broker, endpoint, timeout_s=30.0)
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from protocol.errors import ErrorCode
from protocol_aio import ClientConnection
from sim.clusterwatch import CONTROLLERS_PATH
from sim.tls import SECURITY_PROTOCOL as SSL
from sim.tls import SimTls
from znodes import paths
from znodes.api import NoNodeError, ZkError
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_controller, decode_controller_node

if TYPE_CHECKING:
    from sim.core import BrokerCore
    from znodes.api import Store

CONNECT_TIMEOUT_S = 5.0  # a controller on the same network answers a connect (and a TLS handshake) far sooner
PLAINTEXT = "PLAINTEXT"  # Kafka's security protocol without TLS or SASL
# Why each protocol a broker cannot speak is left out, as the NoAnswer says it.
_NO_TLS = "the brokers have no TLS settings for SSL (--ssl-keystore, --ssl-truststore)"
_NO_SASL = "the simulated brokers speak no SASL"
_UNKNOWN = "not a security protocol the brokers know"

# (listener name, host, port, security protocol): znodes.values.Broker.endpoints' shape.
Endpoint = tuple[str, str, int, str]


class Broker(Protocol):
    """What a request to the controller needs of the broker asking: a running
    sim.cluster.SimBroker (named here by its shape, not imported: sim.cluster imports the
    modules that use this one)."""

    id: int
    store: Store | None
    core: BrokerCore
    controller_lookup: str  # LOOKUPS
    tls: SimTls | None  # the brokers' TLS settings (ClusterSettings.tls), for the messages
    controller_ssl: ssl.SSLContext | None  # their client context, made from ``tls``


class NoAnswer(Exception):
    """No controller answered (why)."""


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    """The active controller instance's endpoint a broker connects to (step 2)."""

    id: int
    listener: str
    host: str
    port: int
    protocol: str  # PLAINTEXT or SSL: what the broker speaks there

    def __str__(self) -> str:
        return f"controller {self.id} at {self.listener}://{self.host}:{self.port} ({self.protocol})"


# How a broker finds the controller (ClusterSettings.controller_lookup): through ZooKeeper
# (``/controller``, then the instance's registration), or as Kafka 3.x brokers do, from their
# last UpdateMetadata (its ``controller_id`` among its live nodes).
LOOKUP_ZOOKEEPER = "zookeeper"
LOOKUP_METADATA = "metadata"
LOOKUPS = (LOOKUP_ZOOKEEPER, LOOKUP_METADATA)


async def find_controller(broker: Broker) -> ControllerEndpoint:
    """Steps 1-2: the active instance's endpoint the broker can reach, found the broker's way
    (its ``controller_lookup``, ZooKeeper when it has none)."""
    if getattr(broker, "controller_lookup", LOOKUP_ZOOKEEPER) == LOOKUP_METADATA:
        cid, endpoints = _from_metadata(broker)
    else:
        cid, endpoints = await _from_zookeeper(broker)
    # An endpoint without a port is no address (Kafka's -1 for "none"): left out.
    return choose_endpoint(cid, (e for e in endpoints if e[2] > 0), listener=broker.core.listener,
                           tls=broker.controller_ssl is not None)


def _from_metadata(broker: Broker) -> tuple[int, tuple[Endpoint, ...]]:
    cache = broker.core.metadata
    node = cache.brokers.get(cache.controller_id)
    if node is None:
        raise NoAnswer(f"the last UpdateMetadata lists no controller node (controller_id {cache.controller_id})")
    return node.id, node.endpoints


async def _from_zookeeper(broker: Broker) -> tuple[int, tuple[Endpoint, ...]]:
    store = broker.store
    if store is None:
        raise NoAnswer("no ZooKeeper session")
    path = paths.CONTROLLER
    try:
        data, _ = await store.get(path)
        cid = decode_controller(path, data)
        path = f"{CONTROLLERS_PATH}/{cid}"
        data, _ = await store.get(path)
        node = decode_controller_node(path, data, cid)
    except NoNodeError:
        raise NoAnswer(f"no {path}") from None
    except (ZkError, ZnodeFormatError) as exc:
        raise NoAnswer(f"cannot read {path}: {exc}") from None
    return cid, node.endpoints


def choose_endpoint(cid: int, endpoints: Iterable[Endpoint], *, listener: str, tls: bool) -> ControllerEndpoint:
    """Step 2 for controller ``cid``'s ``endpoints``, by a broker whose own listener is named
    ``listener`` and that has TLS settings (``tls``) or not; NoAnswer naming why none will do."""
    endpoints = tuple(endpoints)
    spoken = (PLAINTEXT, SSL) if tls else (PLAINTEXT,)
    preferred = ([e for e in endpoints if e[0] == listener] + [e for e in endpoints if e[3] == PLAINTEXT]
                 + [e for e in endpoints if e[3] == SSL])
    for name, host, port, protocol in preferred:
        if protocol in spoken:
            return ControllerEndpoint(cid, name, host, port, protocol)
    if not endpoints:
        raise NoAnswer(f"controller {cid} has no listener")
    listed = ", ".join(f"{name}://{host}:{port} ({protocol})" for name, host, port, protocol in endpoints)
    reasons = dict.fromkeys(_why_not(protocol) for *_, protocol in endpoints)  # each once, in order
    raise NoAnswer(f"controller {cid} has no listener the brokers can speak: {listed}; {'; '.join(reasons)}")


def _why_not(protocol: str) -> str:
    if protocol == SSL:
        return _NO_TLS
    if protocol.startswith("SASL_"):
        return _NO_SASL
    return f"{protocol} is {_UNKNOWN}"  # an UpdateMetadata id past Kafka's four (registrations are checked)


async def connect(broker: Broker, endpoint: ControllerEndpoint, *, timeout_s: float) -> ClientConnection:
    """Step 3: a new connection to ``endpoint``, each request on it timing out after
    ``timeout_s``; NoAnswer when it cannot be opened."""
    context = broker.controller_ssl if endpoint.protocol == SSL else None
    try:
        return await ClientConnection.open(endpoint.host, endpoint.port, connect_timeout_s=CONNECT_TIMEOUT_S,
                                           ssl=context, client_id=str(broker.id), name=f"controller {endpoint.id}",
                                           timeout_s=timeout_s)
    except ssl.SSLError as exc:  # before OSError, which it is
        tls = broker.tls
        trusted = f"the truststore {tls.truststore}" if tls is not None and tls.truststore else \
            "the system's CAs (no truststore given: --ssl-truststore)"
        raise NoAnswer(f"{endpoint}: TLS handshake failed ({_tls_failure(exc)}); its certificate is checked "
                       f"against {trusted}") from None
    except OSError as exc:
        raise NoAnswer(f"{endpoint}: {exc!r}") from None


def _tls_failure(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    return exc.reason or str(exc)


def error_name(code: int) -> str:
    """An answer's error code as the logs name it."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
