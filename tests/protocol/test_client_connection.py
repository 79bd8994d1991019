"""protocol_aio.ClientConnection, the one client connection (the controller-to-broker transport,
the DescribeLogDirs poll, bench/rpc.py's clients), against hand-run servers over real sockets:
answers matched by correlation id whatever their order, the in-flight limit, timeouts with the
late answer dropped, and what fails the connection."""

from __future__ import annotations

import asyncio
import struct

import pytest

import protocol
from protocol import ApiKey
from protocol.exceptions import DecodeError
from protocol_aio import ClientConnection

ANSWER = {"error_code": 0, "api_keys": []}


def answer_to(frame: bytes, error_code: int = 0) -> bytes:
    header, _ = protocol.decode_request(frame)
    return protocol.encode_response(ApiKey.API_VERSIONS, 0, header["correlation_id"],
                                    {"error_code": error_code, "api_keys": []})


async def read_request(reader) -> bytes:
    head = await reader.readexactly(4)
    return head + await reader.readexactly(struct.unpack(">i", head)[0])


class Peer:
    """A server whose ``serve(reader, writer)`` the test writes."""

    def __init__(self, serve, max_in_flight: int = 100):
        self.serve, self.max_in_flight = serve, max_in_flight

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.conn = await ClientConnection.open("127.0.0.1", port, connect_timeout_s=5, client_id="t", name="peer 1",
                                                max_in_flight=self.max_in_flight)
        return self.conn

    async def __aexit__(self, *exc):
        await self.conn.close()
        self.server.close()


async def test_answers_in_any_order_reach_the_requests_that_asked():
    async def serve(reader, writer):
        frames = [await read_request(reader) for _ in range(4)]
        for frame in reversed(frames):  # answered last first, each with a code of its own
            writer.write(answer_to(frame, error_code=protocol.decode_request(frame)[0]["correlation_id"]))
        await writer.drain()
        await reader.read()

    async with Peer(serve) as conn:
        answers = await asyncio.gather(*(conn.request(ApiKey.API_VERSIONS, 0, {}) for _ in range(4)))
        assert [a["error_code"] for a in answers] == [1, 2, 3, 4]
        assert conn.in_flight == 0


async def test_no_more_than_max_in_flight_are_written_and_the_rest_go_in_order():
    seen: list[int] = []
    most = 0

    async def serve(reader, writer):
        nonlocal most
        waiting = []
        for _ in range(6):
            try:
                frame = await asyncio.wait_for(read_request(reader), 0.2)
            except TimeoutError:  # the client holds the rest back: answer what came
                most = max(most, len(waiting))
                for f in waiting:
                    writer.write(answer_to(f))
                waiting = []
                frame = await read_request(reader)
            seen.append(protocol.decode_request(frame)[0]["correlation_id"])
            waiting.append(frame)
        most = max(most, len(waiting))
        for f in waiting:
            writer.write(answer_to(f))
        await reader.read()

    async with Peer(serve, max_in_flight=2) as conn:
        await asyncio.gather(*(conn.request(ApiKey.API_VERSIONS, 0, {}) for _ in range(6)))
    assert most == 2 and seen == [1, 2, 3, 4, 5, 6]


async def test_a_timed_out_request_leaves_its_late_answer_to_be_dropped():
    async def serve(reader, writer):
        first = await read_request(reader)
        second = await read_request(reader)
        await asyncio.sleep(0.3)
        writer.write(answer_to(first) + answer_to(second))
        writer.write(answer_to(await read_request(reader)))
        await reader.read()

    async with Peer(serve) as conn:
        with pytest.raises(TimeoutError):
            await conn.request(ApiKey.API_VERSIONS, 0, {}, timeout_s=0.1)
        assert (await conn.request(ApiKey.API_VERSIONS, 0, {}))["error_code"] == 0
        frame = await conn.exchange(ApiKey.API_VERSIONS, 0, protocol.encode_body(ApiKey.API_VERSIONS, 0, "request", {}))
        assert protocol.response_correlation_id(frame) == 3  # undecoded, its own answer
        assert not conn.closed


async def test_an_answer_to_no_request_fails_every_request_in_flight_and_the_connection():
    async def serve(reader, writer):
        frame = await read_request(reader)
        await read_request(reader)
        writer.write(protocol.encode_response(ApiKey.API_VERSIONS, 0, 999, ANSWER) + answer_to(frame))
        await reader.read()

    async with Peer(serve) as conn:
        results = await asyncio.gather(*(conn.request(ApiKey.API_VERSIONS, 0, {}) for _ in range(2)),
                                       return_exceptions=True)
        assert all(isinstance(r, DecodeError) and "999" in str(r) for r in results)
        assert conn.closed
        with pytest.raises(DecodeError):
            await conn.request(ApiKey.API_VERSIONS, 0, {})


async def test_an_answer_that_does_not_decode_fails_the_connection():
    async def serve(reader, writer):
        frame = await read_request(reader)
        cid = protocol.decode_request(frame)[0]["correlation_id"]
        writer.write(struct.pack(">ii", 6, cid) + b"\xff\xff")  # an error code and no api_keys
        await reader.read()

    async with Peer(serve) as conn:
        with pytest.raises(DecodeError):
            await conn.request(ApiKey.API_VERSIONS, 0, {})
        assert conn.closed


async def test_the_peer_leaving_fails_the_requests_in_flight_with_a_connection_error():
    async def serve(reader, writer):
        await read_request(reader)
        writer.close()

    async with Peer(serve) as conn:
        with pytest.raises(ConnectionResetError, match="peer 1 closed the connection"):
            await conn.request(ApiKey.API_VERSIONS, 0, {})
        with pytest.raises(ConnectionResetError):
            await conn.request(ApiKey.API_VERSIONS, 0, {})


async def test_connecting_to_nothing_is_a_connection_error():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(ConnectionError):
        await ClientConnection.open("127.0.0.1", port, connect_timeout_s=5, client_id="t")


@pytest.mark.parametrize("host", ["x" * 300, "a\x00b", "..", "bad host" + "y" * 70 + ".example"])
async def test_a_host_no_resolver_takes_is_a_refused_connection(host):
    # Hosts come from peers (a broker's registration, a Metadata answer): one that cannot be a
    # host name raised UnicodeError or ValueError out of the connect, past the callers'
    # handling of unreachable peers (the controller's dispatcher logged a traceback per request).
    from protocol_aio import ClientConnection

    with pytest.raises(ConnectionRefusedError, match="broker 7 at .*: not a host name"):
        await ClientConnection.open(host, 9092, connect_timeout_s=5.0, client_id="t", name="broker 7")
