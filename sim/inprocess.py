"""A socket-free transport to simulated brokers, for deterministic controller tests.

It has the method the controller's TCP transport has, and delivers requests straight to the
broker's :class:`sim.core.BrokerCore`. With ``roundtrip=True`` (the default) every request and
response goes through the wire codec, so a body the TCP transport could not send fails here
too. A stopped broker raises ConnectionRefusedError, as its closed port would; an API or version
the broker does not serve raises ConnectionResetError, as the broker closing the connection.

    transport = InProcessTransport(cluster)
    response = await transport.request(2, 4, 4, leader_and_isr_body)
"""

from __future__ import annotations

import asyncio
import itertools

import protocol
from sim.cluster import SimulatedCluster
from sim.core import UnsupportedRequest

CLIENT_ID = "inprocess"


class InProcessTransport:
    def __init__(self, cluster: SimulatedCluster, *, roundtrip: bool = True):
        self.cluster = cluster
        self.roundtrip = roundtrip
        self._correlation = itertools.count(1)

    async def request(self, broker_id: int, api_key: int, api_version: int, body: dict) -> dict:
        await asyncio.sleep(0)  # a request is never answered synchronously over a network
        broker = self.cluster.brokers.get(broker_id)
        if broker is None or not broker.running:
            raise ConnectionRefusedError(f"broker {broker_id} is not running")
        try:
            if not self.roundtrip:
                return broker.core.handle(api_key, api_version, body)
            return self._roundtrip(broker.core, api_key, api_version, body)
        except UnsupportedRequest as exc:
            # Over TCP the broker would close the connection.
            raise ConnectionResetError(str(exc)) from None

    def _roundtrip(self, core, api_key: int, api_version: int, body: dict) -> dict:
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = protocol.encode_request(api_key, api_version, correlation_id, CLIENT_ID, body)
        header, decoded = protocol.decode_request(frame)
        response = core.handle(header["request_api_key"], header["request_api_version"], decoded)
        answer = protocol.encode_response(api_key, api_version, correlation_id, response)
        _, body_out = protocol.decode_response(api_key, api_version, answer)
        return body_out

    async def close(self) -> None:
        """Nothing to release; here for parity with the TCP transport."""
