"""The planner service's sizes poll with ``--command-config``'s security: which endpoint of a
broker's registration is asked with which protocol, and what a broker that cannot answer becomes.

No broker in this project's tests has a TLS or SASL listener (the simulated brokers speak
PLAINTEXT only), so no test here reads sizes over TLS/SASL; what runs is the endpoint choice on
Kafka's registration payloads, and the poll's routing and warnings against ports that refuse the
connection. tests/e2e/test_planner_secured_listener.py runs the poll with a SASL_SSL
``--command-config`` against PLAINTEXT-only simulated brokers, and logs in with the secured
fetch on the controller's SASL_SSL listener.
"""

from __future__ import annotations

import json
import socket

from client.security import ClientSecurity
from planner_service.sizes import poll_sizes
from planner_service.zk_feed import endpoint_of
from sim.cluster import registration_payload

# Kafka's registration of a broker with the PLAINTEXT listener the controller uses and an
# external SASL_SSL one (the listener map names the protocols)
KAFKA_V4 = {"version": 4, "host": "b1.internal", "port": 9092, "jmx_port": -1, "timestamp": "1700000000000",
            "endpoints": ["PLAINTEXT://b1.internal:9092", "EXTERNAL://b1.example.com:9093"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}, "rack": "r1"}


def _bytes(doc: dict) -> bytes:
    return json.dumps(doc).encode()


def test_the_endpoint_of_each_security_protocol_comes_from_the_registration():
    path = "/brokers/ids/1"
    assert endpoint_of(path, _bytes(KAFKA_V4), "SASL_SSL") == ("b1.example.com", 9093)
    assert endpoint_of(path, _bytes(KAFKA_V4), "PLAINTEXT") == ("b1.internal", 9092)
    assert endpoint_of(path, _bytes(KAFKA_V4), "SSL") is None
    # v2: listener names are the protocols; v1: one PLAINTEXT endpoint from host and port
    v2 = {"version": 2, "host": "h", "port": 9092, "jmx_port": -1, "endpoints": ["PLAINTEXT://h:9092", "SSL://h:9094"]}
    assert endpoint_of(path, _bytes(v2), "SSL") == ("h", 9094)
    v1 = {"version": 1, "host": "h", "port": 9092, "jmx_port": -1}
    assert endpoint_of(path, _bytes(v1), "PLAINTEXT") == ("h", 9092) and endpoint_of(path, _bytes(v1), "SSL") is None
    # the registration reassignd's simulated brokers write: PLAINTEXT only
    sim = registration_payload("h", 9092, None)
    assert endpoint_of(path, sim, "PLAINTEXT") == ("h", 9092) and endpoint_of(path, sim, "SASL_SSL") is None
    assert endpoint_of(path, b"not json", "SASL_SSL") is None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_brokers_with_a_secured_endpoint_are_asked_there_with_the_security_the_others_over_plaintext():
    plain_1, plain_2, secured_2 = _closed_port(), _closed_port(), _closed_port()
    security = ClientSecurity(protocol="SASL_SSL", mechanism="SCRAM-SHA-512", username="planner", password="x")
    sizes, warnings = await poll_sizes({1: ("127.0.0.1", plain_1), 2: ("127.0.0.1", plain_2)},
                                       {2: ("127.0.0.1", secured_2)}, security, timeout=5.0)
    assert sizes == {}
    assert len(warnings) == 2, warnings
    first, second = sorted(warnings)
    # broker 1 registered no SASL_SSL endpoint: asked over PLAINTEXT, as without --command-config
    assert first.startswith(f"broker 1 (127.0.0.1:{plain_1}): DescribeLogDirs failed: connection failed"), first
    # broker 2 is asked at its SASL_SSL endpoint with the security, never at its PLAINTEXT one
    assert second.startswith(f"broker 2 (127.0.0.1:{secured_2}): DescribeLogDirs failed: SASL_SSL: "), second
    assert str(plain_2) not in " ".join(warnings)
