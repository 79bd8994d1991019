"""Issue 22 item 2: the listener's connection caps hold before any TLS handshake.

- A flood of bare TCP connections (no ClientHello) from one address against a SASL_SSL
  listener: the ones beyond ``max.connections.per.ip`` (the documented 128) are closed at
  accept, and the server's descriptors grow by the cap, not by the flood. The flood runs in a
  process of its own, so /proc/self/fd counts the server's descriptors only.
- A handshake that never starts is closed after ``ssl.handshake.timeout.ms``.
- The per-address cap is one count across all the instance's listeners.

No ZooKeeper: nobody logs in here.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
import time

import pytest

from controller.core.config import ControllerConfig
from controller.core.listeners import Listener
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import HANDSHAKE_TIMEOUT_S, ListenerLimits
from controller.shell.role import Role
from controller.shell.security import config as C
from controller.shell.security.config import SecurityConfig
from controller.shell.security.listeners import build_listeners
from controller.shell.security.quotas import AddressCounts
from tests.admin.cluster import Wire
from tests.security.certs import make_pki

pytestmark = pytest.mark.timeout(90)

# Holds N bare TCP connections to the port, says how many are open and how many the server
# closed (EOF or reset) when asked, until its stdin closes.
FLOOD = r"""
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]
print("connected", flush=True)
for line in sys.stdin:
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    print(closed, flush=True)
"""


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def security(pki, **extra) -> SecurityConfig:
    return SecurityConfig.from_properties({
        "listener.security.protocol.map": "SECURE:SASL_SSL,TLS:SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "ssl.keystore.location": str(pki.server),
        **extra,
    })


async def started(specs, sec: SecurityConfig):
    handler = AdminHandler(AdminContext(Role(101), ControllerConfig()))
    listeners = build_listeners(specs, handler, ListenerLimits(), sec, Role(101))
    for listener in listeners:
        await listener.start()
    return {lis.name: lis for lis in listeners}


async def close_all(listeners) -> None:
    for listener in listeners.values():
        await listener.close()


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


def test_the_new_settings_and_their_defaults():
    default = SecurityConfig()
    assert default.max_connections_per_ip == C.MAX_CONNECTIONS_PER_IP == 128  # what README promises
    assert default.ssl_handshake_timeout_ms == C.SSL_HANDSHAKE_TIMEOUT_MS == 5000
    assert HANDSHAKE_TIMEOUT_S == 5.0  # a listener built without a security config
    assert SecurityConfig.from_properties({"ssl.handshake.timeout.ms": "750"}).ssl_handshake_timeout_ms == 750
    for bad in ("0", "-1", "soon"):
        with pytest.raises(ValueError, match="ssl.handshake.timeout.ms"):
            SecurityConfig.from_properties({"ssl.handshake.timeout.ms": bad})


def test_address_counts_are_one_count_and_free_their_slots():
    counts = AddressCounts(2)
    assert counts.admit("a") and counts.admit("a") and not counts.admit("a")
    assert counts.admit("b")  # another address has its own count
    counts.release("a")
    assert counts.held("a") == 1 and counts.admit("a")
    counts.release("a"), counts.release("a")
    assert counts.held("a") == 0
    assert all(AddressCounts(None).admit("a") for _ in range(1000))  # no cap


async def test_a_tcp_flood_on_a_sasl_ssl_listener_is_refused_at_the_cap_before_any_handshake(pki):
    # The default cap (128); a handshake timeout long enough that the held ones stay while counted.
    listeners = await started([Listener("SECURE", "127.0.0.1", 0)], security(pki, **{"ssl.handshake.timeout.ms": "60000"}))
    secure = listeners["SECURE"]
    flood_size, cap = 300, C.MAX_CONNECTIONS_PER_IP
    before = descriptors()
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(secure.port), str(flood_size)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(flood.stdout.readline), 30)
        assert line.strip() == "connected"
        await wait_until(lambda: secure.stats.refused >= flood_size - cap, 15,
                         f"the {flood_size - cap} connections beyond the cap refused")
        assert secure.stats.refused == flood_size - cap and secure.connections == cap
        await asyncio.sleep(0.2)  # a refused socket's descriptor is closed on the loop's next turn
        assert secure.stats.accepted == cap and secure.stats.handshake_failed == 0  # none has begun TLS
        grown = descriptors() - before
        assert grown <= cap + 8, f"{grown} descriptors for {cap} connections held"
        flood.stdin.write("count\n")
        flood.stdin.flush()
        closed = int(await asyncio.wait_for(asyncio.to_thread(flood.stdout.readline), 10))
        assert closed == flood_size - cap  # the client sees the refusals at once, as EOF
        # A real client from another address still gets in (the cap is per address).
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        ctx.check_hostname = False
        reader, writer = await asyncio.open_connection("127.0.0.1", secure.port, ssl=ctx, local_addr=("127.0.0.2", 0))
        wire = Wire(reader, writer)
        assert (await wire.call(18, 0, {}))["error_code"] == 0
        await wire.close()
    finally:
        flood.stdin.close()
        flood.wait(10)
    await wait_until(lambda: secure.connections == 0, 10, "the flood's connections closed")
    assert descriptors() - before <= 4
    await close_all(listeners)


async def test_a_stalled_handshake_is_closed_after_the_handshake_timeout(pki):
    listeners = await started([Listener("SECURE", "127.0.0.1", 0), Listener("TLS", "127.0.0.1", 0)],
                              security(pki, **{"ssl.handshake.timeout.ms": "500"}))
    try:
        for name in ("SECURE", "TLS"):
            reader, writer = await asyncio.open_connection("127.0.0.1", listeners[name].port)  # no ClientHello
            began = time.monotonic()
            assert await Wire(reader, writer).closed(timeout=10)
            assert 0.4 <= time.monotonic() - began < 5, name
            assert listeners[name].stats.handshake_failed == 1 and listeners[name].connections == 0
            writer.close()
        # a client that does its handshake meanwhile is served
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        reader, writer = await asyncio.open_connection("127.0.0.1", listeners["TLS"].port, ssl=ctx,
                                                       server_hostname="localhost")
        wire = Wire(reader, writer)
        await asyncio.sleep(0.7)  # past the handshake timeout: it bounds the handshake only
        assert (await wire.call(18, 0, {}))["error_code"] == 0
        await wire.close()
    finally:
        await close_all(listeners)


async def test_the_per_address_cap_is_one_count_across_the_listeners(pki):
    specs = [Listener("PLAINTEXT", "127.0.0.1", 0), Listener("SASL_PLAINTEXT", "127.0.0.1", 0),
             Listener("SECURE", "127.0.0.1", 0)]
    listeners = await started(specs, security(pki, **{"max.connections.per.ip": "6"}))
    try:
        port = {name: lis.port for name, lis in listeners.items()}
        held = [await Wire.open(("127.0.0.1", port["PLAINTEXT"])) for _ in range(4)]
        held += [await Wire.open(("127.0.0.1", port["SASL_PLAINTEXT"])) for _ in range(2)]
        for wire in held:
            assert (await wire.call(18, 0, {}))["error_code"] == 0
        for name in port:  # the seventh, on any listener, is closed at once
            extra = await Wire.open(("127.0.0.1", port[name]))
            assert await extra.closed(timeout=5), name
            await extra.close()
            assert listeners[name].stats.refused == 1
        await held.pop(0).close()  # a slot freed on one listener serves another
        await wait_until(lambda: listeners["PLAINTEXT"].connections == 3, 5, "the closed connection released")
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        reader, writer = await asyncio.open_connection("127.0.0.1", port["SECURE"], ssl=ctx, server_hostname="localhost")
        wire = Wire(reader, writer)
        assert (await wire.call(18, 0, {}))["error_code"] == 0
        for w in (*held, wire):
            await w.close()
    finally:
        await close_all(listeners)
