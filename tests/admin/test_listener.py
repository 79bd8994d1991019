"""The admin listener with the AdminHandler over a small API table, through real sockets:
pipelining order, per-request failures, malformed frames, connection limits, idle timeout."""

from __future__ import annotations

import asyncio
import struct

import pytest

import protocol
from controller.core.config import ControllerConfig
from controller.shell.admin.base import AdminContext, Api, ApiError
from controller.shell.admin.handler import AdminHandler
from controller.shell.listener import AdminListener, ListenerLimits
from controller.shell.role import Role
from protocol.errors import ErrorCode
from tests.admin.cluster import Wire


def _list_error(version, body, code, message):
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "topics": []}


async def _echo_after_delay(ctx, version, body):
    """Answers ListPartitionReassignments with one topic named after the request, after
    ``timeout_ms`` milliseconds: later requests may finish first."""
    await asyncio.sleep(body["timeout_ms"] / 1000)
    if body["timeout_ms"] == 666:
        raise RuntimeError("boom")
    if body["timeout_ms"] == 667:
        raise ApiError(ErrorCode.INVALID_REQUEST, "refused")
    if body["timeout_ms"] == 668:
        return {"topics": [{"name": 5}]}  # not encodable: a handler bug
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "topics": [{"name": f"t{body['timeout_ms']}", "partitions": []}]}


async def _never(ctx, version, body):
    raise AssertionError("a standby must not call a controller-only handler")


TABLE = {
    46: Api(46, "ListPartitionReassignments", 0, 0, False, _echo_after_delay, _list_error),
    10003: Api(10003, "ListReassignments", 0, 0, True, _never,
               lambda v, b, code, msg: {"error_code": int(code), "error_message": msg, "reassignment": []}),
}


async def _listener(**limits) -> AdminListener:
    handler = AdminHandler(AdminContext(Role(5), ControllerConfig()), TABLE)  # a standby: no active state
    listener = AdminListener("127.0.0.1", 0, handler, limits=ListenerLimits(**limits))
    await listener.start()
    return listener


def _list(timeout_ms: int) -> dict:
    return {"timeout_ms": timeout_ms, "topics": None}


async def _pipeline(listener: AdminListener, delays: list[int]) -> float:
    """Send one request per delay back to back; check every answer comes in request order;
    return the seconds it all took."""
    wire = await Wire.open(("127.0.0.1", listener.port))
    loop = asyncio.get_running_loop()
    started = loop.time()
    sent = [wire.send(46, 0, _list(d)) for d in delays]
    for cid, d in zip(sent, delays):
        header, body = await wire.recv(46, 0)
        assert header["correlation_id"] == cid and body["topics"][0]["name"] == f"t{d}"
    elapsed = loop.time() - started
    await wire.close()
    return elapsed


async def test_pipelined_requests_are_answered_in_order_while_handled_concurrently():
    listener = await _listener()
    try:
        delays = [300, 10, 200, 0, 100, 50, 0, 250]
        # handled concurrently: far less than the sum of the delays
        assert await _pipeline(listener, delays) < sum(delays) / 1000
    finally:
        await listener.close()


async def test_read_ahead_is_bounded_in_bytes_and_pipelining_still_answers_in_order():
    """With room for one request's bytes, requests are read one at a time (handled one after
    another: the time is the sum of the delays), and all are still answered, in order."""
    listener = await _listener(max_pipelined_bytes=1)
    try:
        delays = [150, 10, 100, 0, 50]
        assert await _pipeline(listener, delays) >= sum(delays) / 1000 * 0.9  # one at a time
    finally:
        await listener.close()


async def test_handler_failures_become_error_responses_and_the_connection_lives_on():
    listener = await _listener()
    try:
        wire = await Wire.open(("127.0.0.1", listener.port))
        crash, refused, bad, fine = (wire.send(46, 0, _list(d)) for d in (666, 667, 668, 1))
        answers = [await wire.recv(46, 0) for _ in range(4)]
        assert [h["correlation_id"] for h, _ in answers] == [crash, refused, bad, fine]
        assert answers[0][1]["error_code"] == -1 and "boom" in answers[0][1]["error_message"]
        assert answers[1][1]["error_code"] == 42 and answers[1][1]["error_message"] == "refused"
        assert answers[2][1]["error_code"] == -1
        assert answers[3][1]["error_code"] == 0
        # controller-only API on a standby: NOT_CONTROLLER, handler never called
        body = await wire.call(10003, 0, {"topic_partition": None})
        assert body["error_code"] == 41
        # ApiVersions lists exactly the table (within the codec) and itself
        body = await wire.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]} == {
            18: protocol.supported_apis()[18], 46: (0, 0), 10003: (0, 0)}
        await wire.close()
    finally:
        await listener.close()


async def test_bad_frames_close_only_their_connection_after_earlier_answers():
    listener = await _listener(max_request_bytes=1024)
    try:
        healthy = await Wire.open(("127.0.0.1", listener.port))
        cases = [
            struct.pack(">i", 2**31 - 1) + b"junk",  # size over the limit
            struct.pack(">i", 2048) + b"x" * 16,  # over this listener's 1 KiB limit
            struct.pack(">i", 3) + b"abc",  # shorter than any header
            struct.pack(">i", -5),  # negative
            struct.pack(">i", 12) + b"\x00\x03\x00\x01" + b"\xff" * 8,  # header that does not decode
            protocol.encode_request(3, 1, 1, "t", {"topics": None}),  # Metadata: not in this table
            protocol.encode_request(10003, 1, 1, "t", {"topic_partition": None}),  # version not served
        ]
        for frame in cases:
            wire = await Wire.open(("127.0.0.1", listener.port))
            first = wire.send(46, 0, _list(50))  # answered before the bad frame closes the connection
            wire.send_raw(frame)
            header, body = await wire.recv(46, 0)
            assert header["correlation_id"] == first and body["error_code"] == 0
            assert await wire.closed(), frame[:16]
            await wire.close()
            # the listener and the other connection carry on
            assert (await healthy.call(46, 0, _list(0)))["error_code"] == 0
        await healthy.close()
    finally:
        await listener.close()


async def test_connections_beyond_the_limit_are_closed_at_once():
    listener = await _listener(max_connections=3)
    try:
        wires = [await Wire.open(("127.0.0.1", listener.port)) for _ in range(3)]
        for w in wires:
            assert (await w.call(46, 0, _list(0)))["error_code"] == 0
        extra = await Wire.open(("127.0.0.1", listener.port))
        assert await extra.closed()
        assert listener.stats.refused == 1
        await wires[0].close()
        await asyncio.sleep(0.1)
        again = await Wire.open(("127.0.0.1", listener.port))  # a slot freed up
        assert (await again.call(46, 0, _list(0)))["error_code"] == 0
        for w in (*wires[1:], extra, again):
            await w.close()
    finally:
        await listener.close()


async def test_idle_connections_are_closed_busy_ones_are_not():
    listener = await _listener(idle_timeout_s=0.5)
    try:
        loop = asyncio.get_running_loop()
        idle = await Wire.open(("127.0.0.1", listener.port))
        began = loop.time()
        assert await idle.closed(timeout=5)
        assert 0.45 <= loop.time() - began < 4
        # a request that takes longer than the idle timeout is not idleness
        busy = await Wire.open(("127.0.0.1", listener.port))
        assert (await busy.call(46, 0, _list(1000)))["error_code"] == 0
        # and talking resets the clock
        for _ in range(8):
            await asyncio.sleep(0.1)
            assert (await busy.call(46, 0, _list(0)))["error_code"] == 0
        assert await busy.closed(timeout=5)
        assert listener.stats.idle_closed == 2
        for w in (idle, busy):
            await w.close()
    finally:
        await listener.close()


def test_listener_limits_come_from_the_config():
    config = ControllerConfig(listener_max_connections=7, listener_idle_timeout_s=2, listener_max_request_bytes=4096)
    limits = ListenerLimits.from_config(config)
    assert (limits.max_connections, limits.idle_timeout_s, limits.max_request_bytes) == (7, 2.0, 4096)
    defaults = ListenerLimits.from_config(ControllerConfig())
    assert defaults.max_request_bytes == 100 * 1024 * 1024 and defaults.idle_timeout_s == 600.0
    assert defaults.max_pipelined_bytes == 100 * 1024 * 1024
    assert ListenerLimits.from_config(ControllerConfig(listener_max_pipelined_bytes=4096)).max_pipelined_bytes == 4096
    from controller.core.config import ConfigError, resolve

    required = {"zookeeper": "127.0.0.1:2181", "id": 1, "listen": "127.0.0.1:0"}
    with pytest.raises(ConfigError, match=r"listener_max_connections \(file c.toml\): Input should be greater than or equal to 1"):
        resolve(file={**required, "listener_max_connections": 0}, file_name="c.toml")
    with pytest.raises(ConfigError, match=r"listener_idle_timeout_s \(file c.toml\): Input should be a valid number"):
        resolve(file={**required, "listener_idle_timeout_s": "10"}, file_name="c.toml")


async def test_api_versions_v3_checks_the_client_software_name():
    listener = await _listener()
    try:
        wire = await Wire.open(("127.0.0.1", listener.port))
        good = await wire.call(18, 3, {"client_software_name": "kafka-python", "client_software_version": "3.0.12"})
        bad = await wire.call(18, 3, {"client_software_name": "bad name!", "client_software_version": "1"})
        # Kafka's ApiVersionsRequest.getErrorResponse: INVALID_REQUEST carries no ranges.
        assert good["error_code"] == 0 and good["api_keys"] and bad["error_code"] == 42 and bad["api_keys"] == []
        await wire.close()
    finally:
        await listener.close()


def test_pre_encoded_bodies_are_framed_like_encoded_ones():
    from controller.shell.listener import frame_encoded

    for key, version, body in [
        (3, 1, {"brokers": [], "controller_id": 7, "topics": []}),  # response header v0
        (46, 0, {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}),  # v1
    ]:
        encoded = protocol.encode_body(key, version, "response", body)
        assert frame_encoded(key, version, 99, encoded) == protocol.encode_response(key, version, 99, body)


async def test_bytes_after_a_request_body_are_ignored_and_counted_and_the_connection_lives_on():
    """Kafka's brokers do not read past a request's body, and librdkafka 2.x relies on it (its
    all-topics Metadata request carries 3 bytes more): answered, counted, connection kept."""
    listener = await _listener()
    try:
        wire = await Wire.open(("127.0.0.1", listener.port))
        frame = protocol.encode_request(46, 0, 4242, "t", _list(0))
        wire.send_raw(struct.pack(">i", len(frame) - 4 + 3) + frame[4:] + b"\x01\x00\x00")
        header, body = await wire.recv(46, 0)
        assert header["correlation_id"] == 4242 and body["error_code"] == 0
        assert (listener.stats.left_over_requests, listener.stats.left_over_bytes) == (1, 3)
        assert (await wire.call(46, 0, _list(0)))["error_code"] == 0  # same connection, still open
        assert listener.stats.left_over_requests == 1
        await wire.close()
    finally:
        await listener.close()


async def test_unknown_tagged_fields_in_header_and_body_are_skipped_and_answered():
    """KIP-482: a receiver skips tagged fields it does not know, in the request header (v2) and
    in the body, as Kafka's brokers do; the request is answered as without them and the
    connection stays open. A tagged field whose size runs past the frame is a malformed frame."""
    listener = await _listener()
    try:
        wire = await Wire.open(("127.0.0.1", listener.port))
        frame = protocol.encode_request(46, 0, 4243, "t", _list(7))
        # Header v2: size(4) api_key(2) api_version(2) correlation_id(4) client_id(2 + 1), then
        # its tag buffer (count 0); the body (ListPartitionReassignments v0) ends with its own.
        at = 4 + 2 + 2 + 4 + 2 + len("t")
        assert frame[at] == 0 and frame[-1] == 0
        unknown = b"\x01" + b"\x63" + b"\x03abc"  # one field: tag 99, 3 bytes
        payload = frame[4:at] + unknown + frame[at + 1:-1] + b"\x02" + b"\x50\x01z" + b"\x64\x00"
        wire.send_raw(struct.pack(">i", len(payload)) + payload)
        header, body = await wire.recv(46, 0)
        assert header["correlation_id"] == 4243 and body["error_code"] == 0
        assert [t["name"] for t in body["topics"]] == ["t7"]  # timeout_ms read as sent
        assert listener.stats.left_over_requests == 0  # skipped as tagged fields, not left over
        assert (await wire.call(46, 0, _list(0)))["error_code"] == 0  # same connection
        # A tagged field claiming more bytes than the frame holds: the frame is malformed and
        # only this connection closes, after the answers already owed.
        bad = wire.send(46, 0, _list(0))
        lying = frame[4:-1] + b"\x01" + b"\x63" + b"\x7f" + b"ab"  # 127 bytes claimed, 2 there
        wire.send_raw(struct.pack(">i", len(lying)) + lying)
        header, _ = await wire.recv(46, 0)
        assert header["correlation_id"] == bad
        assert await wire.closed()
        await wire.close()
    finally:
        await listener.close()
