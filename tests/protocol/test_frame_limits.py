"""Each server - the admin listener and a simulated broker - gets a frame at each limit of
protocol.wire_limits and one byte past it, and gives the same documented answer: a frame within
the limits is a request and is answered; a size prefix past one closes the connection with
nothing written. The listener's SASL listener also gets the pre-authentication maximum. Both
servers run protocol_aio.serve_frames, the listener with its security session as the gate."""

from __future__ import annotations

import asyncio
import struct

import pytest

import protocol
from controller.core.config import ControllerConfig
from controller.core.listeners import Listener
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import AdminListener, ListenerLimits
from controller.shell.role import Role
from controller.shell.security.config import SecurityConfig
from controller.shell.security.listeners import build_listeners
from protocol import ApiKey, wire_limits
from sim.server import BrokerServer

ANSWERED, CLOSED = "answered", "closed without an answer"
# ApiVersions v0: request header v1 with a null client id and an empty body - exactly the
# minimum request frame. Padding after it makes any larger frame (left-over bytes are ignored).
_HEADER = struct.Struct(">hhih")
assert _HEADER.size == wire_limits.MIN_REQUEST_FRAME.value


async def _send(port: int, size: int) -> str:
    """Send a frame whose prefix says ``size``: an ApiVersions v0 request padded to size, or,
    below the minimum, that many bytes of one. What came back?"""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        request = _HEADER.pack(ApiKey.API_VERSIONS, 0, 7, -1)
        payload = request[:size] if size < len(request) else b""
        writer.write(struct.pack(">i", size) + payload)
        if size >= len(request):
            writer.write(request)
            pad = size - len(request)
            chunk = b"\x00" * min(pad, 1 << 20)
            while pad > 0:  # past the maximum the server may close while we still write
                writer.write(chunk[:pad])
                pad -= len(chunk)
                await writer.drain()
        await writer.drain()
    except ConnectionError:
        pass
    try:
        head = await asyncio.wait_for(reader.readexactly(4), 30)
    except (asyncio.IncompleteReadError, ConnectionError):
        return CLOSED
    finally:
        writer.close()
    frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
    header, body = protocol.decode_response(ApiKey.API_VERSIONS, 0, frame)
    assert header["correlation_id"] == 7 and body["error_code"] == 0
    return ANSWERED


def _api_versions_only(api_key: int, version: int, body: dict) -> dict:
    assert api_key == ApiKey.API_VERSIONS
    return {"error_code": 0, "api_keys": [{"api_key": int(ApiKey.API_VERSIONS), "min_version": 0, "max_version": 3}]}


@pytest.fixture
async def servers():
    broker = BrokerServer(_api_versions_only, lambda: [], name="sim")
    await broker.start("127.0.0.1", 0)
    listener = AdminListener("127.0.0.1", 0, AdminHandler(AdminContext(Role(5), ControllerConfig()), {}),
                             limits=ListenerLimits())
    await listener.start()
    try:
        yield {"simulated broker": broker.port, "admin listener": listener.port}
    finally:
        await listener.close()
        await broker.close()


# (size prefix, the documented answer): at each limit and one byte past it.
CASES = [
    (wire_limits.MIN_REQUEST_FRAME.value, ANSWERED),
    (wire_limits.MIN_REQUEST_FRAME.value - 1, CLOSED),
    (wire_limits.MAX_FRAME.value, ANSWERED),
    (wire_limits.MAX_FRAME.value + 1, CLOSED),
    (-1, CLOSED),
]


@pytest.mark.parametrize(("size", "answer"), CASES)
async def test_each_server_gives_the_documented_answer_at_and_past_each_limit(servers, size, answer):
    got = {name: await _send(port, size) for name, port in servers.items()}
    assert got == {name: answer for name in servers}


async def test_the_pre_authentication_maximum_on_a_sasl_listener():
    config = SecurityConfig.from_properties({
        "listener.security.protocol.map": "SASL:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN"})
    handler = AdminHandler(AdminContext(Role(5), ControllerConfig()), {})
    (listener,) = build_listeners([Listener("SASL", "127.0.0.1", 0)], handler, ListenerLimits(), config, Role(5))
    await listener.start()
    try:
        # ApiVersions may come before authentication; its frame is bounded by the smaller limit.
        assert await _send(listener.port, wire_limits.MAX_PRE_AUTH_FRAME.value) == ANSWERED
        assert await _send(listener.port, wire_limits.MAX_PRE_AUTH_FRAME.value + 1) == CLOSED
        assert await _send(listener.port, wire_limits.MIN_REQUEST_FRAME.value) == ANSWERED
        assert await _send(listener.port, wire_limits.MIN_REQUEST_FRAME.value - 1) == CLOSED
    finally:
        await listener.close()


async def test_requests_before_a_bad_size_are_answered_then_the_connection_closes(servers):
    request = struct.pack(">i", _HEADER.size) + _HEADER.pack(ApiKey.API_VERSIONS, 0, 7, -1)
    for port in servers.values():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request + request + struct.pack(">i", wire_limits.MAX_FRAME.value + 1))
        for _ in range(2):
            head = await reader.readexactly(4)
            frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
            assert protocol.decode_response(ApiKey.API_VERSIONS, 0, frame)[0]["correlation_id"] == 7
        assert await reader.read() == b""
        writer.close()


async def test_a_configured_maximum_is_kept_alike_by_both_servers_on_the_one_loop():
    """The maximum each server is configured with (listener_max_request_bytes, a broker's
    max_frame_size) goes through protocol_aio's loop the same way: at it answered, one past it
    closed with nothing written."""
    broker = BrokerServer(_api_versions_only, lambda: [], name="sim", max_frame_size=1024)
    await broker.start("127.0.0.1", 0)
    listener = AdminListener("127.0.0.1", 0, AdminHandler(AdminContext(Role(5), ControllerConfig()), {}),
                             limits=ListenerLimits(max_request_bytes=1024))
    await listener.start()
    try:
        for port in (broker.port, listener.port):
            assert await _send(port, 1024) == ANSWERED
            assert await _send(port, 1025) == CLOSED
    finally:
        await listener.close()
        await broker.close()
