"""The controller-to-broker transport reads answers through protocol.connection: an answer
whose size prefix is past the maximum frame fails the request with the FrameError naming that
limit and closes the connection; one within it is matched by correlation id and decoded."""

import asyncio
import struct

import pytest

import protocol
from controller.shell.transport import TcpTransport
from protocol import ApiKey, wire_limits

ANSWER = {"error_code": 0, "api_keys": []}


async def _broker(size_for_second: int):
    """Answers the first request properly, the second with a bare size prefix."""
    async def serve(reader, writer):
        for n in (1, 2):
            head = await reader.readexactly(4)
            frame = head + await reader.readexactly(struct.unpack(">i", head)[0])
            header, _ = protocol.decode_request(frame)
            if n == 1:
                writer.write(protocol.encode_response(ApiKey.API_VERSIONS, 0, header["correlation_id"], ANSWER))
            else:
                writer.write(struct.pack(">i", size_for_second))
            await writer.drain()
        await reader.read()
        writer.close()
    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.mark.parametrize(("size", "limit"), [(wire_limits.MAX_FRAME.value + 1, wire_limits.MAX_FRAME),
                                             (wire_limits.MIN_RESPONSE_FRAME.value - 1, wire_limits.MIN_RESPONSE_FRAME)])
async def test_an_answer_past_a_limit_fails_with_that_limit(size, limit):
    server = await _broker(size)
    port = server.sockets[0].getsockname()[1]
    transport = TcpTransport(lambda b: ("127.0.0.1", port))
    try:
        assert (await transport.request(1, ApiKey.API_VERSIONS, 0, {}))["error_code"] == 0
        with pytest.raises(wire_limits.FrameError) as failed:
            await asyncio.wait_for(transport.request(1, ApiKey.API_VERSIONS, 0, {}), 10)
        assert failed.value.limit is limit
    finally:
        await transport.close()
        server.close()
        await server.wait_closed()


async def test_the_log_dirs_poll_refuses_an_answer_past_the_maximum_frame():
    from spark_jobs.logdirs import LogDirsError, broker_sizes

    async def serve(reader, writer):
        await reader.readexactly(4)
        writer.write(struct.pack(">i", wire_limits.MAX_FRAME.value + 1))
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        with pytest.raises(LogDirsError, match="above the maximum frame"):
            await broker_sizes("127.0.0.1", server.sockets[0].getsockname()[1], timeout=10)
    finally:
        server.close()
        await server.wait_closed()
