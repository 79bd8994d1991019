"""How the controller talks to brokers: ``BrokerTransport.request(broker, key, version, body)``.

:class:`TcpTransport` keeps one connection per broker (pipelined: many requests in flight,
answers matched by correlation id), opened on first use from the broker's registered
endpoint and re-opened after a failure. ``sim.inprocess.InProcessTransport`` has the same
method for deterministic tests.

    transport = TcpTransport(lambda b: ("127.0.0.1", 9092 + b))
    body = await transport.request(1, 4, 4, leader_and_isr_body)   # LeaderAndIsr v4
    await transport.close()

With ``security`` (controller.shell.security.inter_broker: setting ``broker_listener`` on a
TLS or SASL listener) each connection is made with TLS and logged in with SASL first.

Failures raise ``ConnectionError`` (refused, reset, closed mid-request, a TLS handshake or
SASL login refused), ``TimeoutError``
is left to the caller's ``asyncio.timeout``, and a garbled answer raises ``protocol.DecodeError`` and
closes that connection (the stream can no longer be trusted).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from controller.shell.security.inter_broker import InterBrokerSecurity
from protocol_aio import ClientConnection
from znodes.values import Broker

CLIENT_ID = "reassignd-controller"
CONNECT_TIMEOUT_S = 5.0
# Control requests written to one broker and not yet answered; more wait, in order. Kafka's
# controller sends one at a time per broker; pipelining a few keeps a step's LeaderAndIsr,
# UpdateMetadata and StopReplica from queueing behind each other's round trips, and a broker
# that stops answering holds no more than this many.
MAX_IN_FLIGHT_PER_BROKER = 100


def broker_address(brokers: Mapping[int, Broker], broker_id: int) -> tuple[str, int] | None:
    """Where the controller reaches ``broker_id``: its registered endpoint of the controller's
    broker listener; None when it is not registered, or alive without such an endpoint
    (znodes.payloads.decode_broker: setting broker_listener)."""
    broker = brokers.get(broker_id)
    return None if broker is None or not broker.reachable else (broker.host, broker.port)


@runtime_checkable
class BrokerTransport(Protocol):
    async def request(self, broker_id: int, api_key: int, api_version: int, body: dict) -> dict: ...

    async def close(self) -> None: ...


class TcpTransport:
    """One pipelined TCP connection per broker; ``endpoint(broker_id) -> (host, port) | None``."""

    def __init__(self, endpoint: Callable[[int], tuple[str, int] | None], *, client_id: str = CLIENT_ID,
                 security: InterBrokerSecurity | None = None):
        self.endpoint = endpoint
        self.client_id = client_id
        # TLS and SASL to the brokers' listener (controller.shell.security.inter_broker); None: PLAINTEXT.
        self.security = security
        self._connections: dict[int, ClientConnection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._expiry: dict[int, float] = {}  # broker -> when its SASL session must be replaced (KIP-368)
        self._address: dict[int, tuple[str, int]] = {}  # broker -> where its connection goes
        self._retiring: set[asyncio.Task] = set()  # replaced or dropped connections closing (_close_later)

    async def _connection(self, broker_id: int) -> ClientConnection:
        lock = self._connecting.setdefault(broker_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(broker_id)
            expiry = self._expiry.get(broker_id)
            where = self.endpoint(broker_id)
            # A registration rewritten in place (KIP-226's dynamic listeners) moves the broker:
            # its next request goes to the new address (Kafka's controller keeps the old one).
            moved = where is not None and self._address.get(broker_id, where) != where
            if conn is not None and not conn.closed and not moved and (expiry is None or time.monotonic() < expiry):
                return conn
            if conn is not None and not conn.closed:
                # Its SASL session ends soon, or the broker moved: new requests go on a new
                # connection (logged in anew); this one closes once what it carries is answered
                # (none of it is failed).
                self._close_later(_retire(conn), f"broker-{broker_id}-retire")
            if where is None:
                raise ConnectionRefusedError(f"broker {broker_id} is not registered, or has no endpoint this controller can reach")
            host, port = where
            security = self.security
            try:
                conn = await ClientConnection.open(
                    host, port, connect_timeout_s=CONNECT_TIMEOUT_S, client_id=self.client_id, name=f"broker {broker_id}",
                    max_in_flight=MAX_IN_FLIGHT_PER_BROKER, ssl=security.ssl_context if security is not None else None)
            except ssl.SSLError as exc:  # the broker's certificate is not trusted, or TLS is not spoken
                raise ConnectionRefusedError(f"broker {broker_id} at {host}:{port}: TLS: {exc}") from None
            self._expiry.pop(broker_id, None)
            if security is not None and security.sasl:
                try:
                    async with asyncio.timeout(CONNECT_TIMEOUT_S):
                        expiry = await security.authenticate(conn, f"broker {broker_id} at {host}:{port}")
                except BaseException:
                    await conn.close()
                    raise
                if expiry is not None:
                    self._expiry[broker_id] = expiry
            self._connections[broker_id] = conn
            self._address[broker_id] = where
            return conn

    # request() takes ``encoded=``: the body's bytes, encoded once for many brokers (a
    # BrokerCommand's ``encoded``, controller.core.shared_body); ``body`` is then not encoded again.
    takes_encoded = True

    async def request(
        self, broker_id: int, api_key: int, api_version: int, body: dict, *, encoded: bytes | None = None
    ) -> dict:
        conn = await self._connection(broker_id)
        # The caller's own asyncio.timeout bounds the wait; a late answer is read and dropped.
        return await conn.request(api_key, api_version, body, encoded=encoded)

    async def disconnect(self, broker_id: int) -> None:
        """Forget the broker's connection at once (its next request opens a new one) and close
        it in the background: a dead session's peer that stopped reading would hold a close that
        flushes what is buffered, and the caller with it (controller.shell.dispatch.forget runs
        inside a step), for as long as TCP retries."""
        conn = self._connections.pop(broker_id, None)
        self._address.pop(broker_id, None)
        self._expiry.pop(broker_id, None)
        if conn is not None:
            self._close_later(_drop(conn), f"broker-{broker_id}-drop")

    def _close_later(self, closing, name: str) -> None:
        """Run ``closing`` (a connection's close) in the background, held until it ends (close()
        cancels and awaits what is left)."""
        task = asyncio.create_task(closing, name=name)
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        conns, self._connections = list(self._connections.values()), {}
        for task in list(self._retiring):
            task.cancel()
        await asyncio.gather(*(c.close() for c in conns), *self._retiring, return_exceptions=True)


# A replaced connection's requests get this long to be answered (the broker ends the session at
# its lifetime; the replacement comes at 85% of it, so answers normally come well within).
RETIRE_WAIT_S = 30.0
RETIRE_POLL_S = 0.05


# A dead session's connection gets this long to close cleanly, then is aborted.
DROP_WAIT_S = 1.0


async def _drop(conn: ClientConnection) -> None:
    """Close ``conn`` without waiting on its peer past DROP_WAIT_S (then abort the socket)."""
    try:
        async with asyncio.timeout(DROP_WAIT_S):
            await conn.close()
    except TimeoutError:
        conn.writer.transport.abort()


async def _retire(conn: ClientConnection) -> None:
    """Close ``conn`` once it carries no request (or after RETIRE_WAIT_S)."""
    try:
        async with asyncio.timeout(RETIRE_WAIT_S):
            while conn.in_flight and not conn.closed:
                await asyncio.sleep(RETIRE_POLL_S)
    except TimeoutError:
        pass
    finally:
        await conn.close()
