"""protocol_aio.serve_frames, the one server loop (the admin listener and the simulated brokers
run it), over real sockets: answers in request order, the read-ahead bounds, the idle timeout,
the gate's limits, one-at-a-time reading and last answer, and failures raised in their turn."""

from __future__ import annotations

import asyncio
import struct

import pytest

from protocol import wire_limits
from protocol.connection import FrameConnection
from protocol_aio import IDLE, IDLE_IN_FRAME, LAST_ANSWER, PEER_CLOSED, Pipelining, serve_frames
from protocol.wire_limits import FrameError, Limit


def frame(tag: int, pad: int = 0) -> bytes:
    """A 10-byte-minimum request frame carrying ``tag`` (and ``pad`` bytes more)."""
    payload = struct.pack(">i", tag) + b"\x00" * (6 + pad)
    return struct.pack(">i", len(payload)) + payload


def tag_of(data: bytes) -> int:
    return struct.unpack_from(">i", data, 4)[0]


class Server:
    """serve_frames behind a socket; ``respond`` sees each frame; ``endings`` what each call
    returned or raised."""

    def __init__(self, respond, **kwargs):
        self.respond, self.kwargs = respond, kwargs
        self.endings: list = []
        self.done = asyncio.Event()

    async def _serve(self, reader, writer):
        conn = self.kwargs.pop("conn", None) or FrameConnection.server()
        try:
            self.endings.append(await serve_frames(reader, writer, self.respond, conn, **self.kwargs))
        except Exception as e:  # noqa: BLE001 - recorded for the test
            self.endings.append(e)
        finally:
            writer.close()
            self.done.set()

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def connect(self):
        return await asyncio.open_connection("127.0.0.1", self.port)


async def answers(reader, n: int) -> list[int]:
    out = []
    for _ in range(n):
        head = await asyncio.wait_for(reader.readexactly(4), 10)
        out.append(tag_of(head + await reader.readexactly(struct.unpack(">i", head)[0])))
    return out


async def test_pipelined_requests_run_together_and_are_answered_in_order():
    running, most = 0, 0

    async def respond(data):
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep((5 - tag_of(data)) * 0.02)  # the first finishes last
        running -= 1
        return data

    async with Server(respond, pipelining=Pipelining(max_requests=3)) as server:
        reader, writer = await server.connect()
        writer.write(b"".join(frame(t) for t in range(5)))
        assert await answers(reader, 5) == [0, 1, 2, 3, 4]
        writer.close()
        await server.done.wait()
    assert most == 3  # never more than max_requests read ahead of their answers
    assert server.endings == [PEER_CLOSED]


async def test_one_at_a_time_by_default_and_a_byte_bound_serialises_big_requests():
    for pipelining in (Pipelining(), Pipelining(max_requests=10, max_bytes=15)):
        running, most = 0, 0

        async def respond(data):
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1
            return data

        async with Server(respond, pipelining=pipelining) as server:
            reader, writer = await server.connect()
            writer.write(b"".join(frame(t, pad=4) for t in range(4)))  # 14 bytes each: one fits
            assert await answers(reader, 4) == [0, 1, 2, 3]
            writer.close()
        assert most == 1, pipelining


async def test_idle_connections_end_and_a_trickle_of_bytes_is_not_activity():
    async with Server(lambda data: data, pipelining=Pipelining(idle_timeout_s=0.3)) as server:
        loop = asyncio.get_running_loop()
        reader, writer = await server.connect()
        began = loop.time()
        for t in range(3):  # talking resets the clock
            await asyncio.sleep(0.2)
            writer.write(frame(t))
            assert await answers(reader, 1) == [t]
        assert await asyncio.wait_for(reader.read(1), 5) == b""
        assert loop.time() - began >= 0.6 + 0.3 * 0.9
        assert server.endings == [IDLE]

        server.done.clear()
        reader, writer = await server.connect()
        whole = frame(9)
        for i in range(len(whole) - 1):  # a byte every 0.1 s never completes a frame in time
            writer.write(whole[i:i + 1])
            await asyncio.sleep(0.1)
            if server.done.is_set():
                break
        await server.done.wait()
        assert server.endings[-1] == IDLE_IN_FRAME


async def test_a_request_slower_than_the_idle_timeout_is_not_idleness():
    async def slow(data):
        await asyncio.sleep(0.5)
        return data

    async with Server(slow, pipelining=Pipelining(max_requests=4, idle_timeout_s=0.2)) as server:
        loop = asyncio.get_running_loop()
        reader, writer = await server.connect()
        writer.write(frame(1))
        assert await answers(reader, 1) == [1]
        answered = loop.time()
        assert await asyncio.wait_for(reader.read(1), 5) == b""
        assert loop.time() - answered >= 0.2 * 0.8  # the clock starts again at the answer
        await server.done.wait()
    assert server.endings == [IDLE]


class Gate:
    """Limits small until a frame tagged 1 is handled; reading one at a time until then; the
    answer to a frame tagged 7 is the last."""

    def __init__(self):
        self.open = False
        self.last = False

    def limits(self):
        return wire_limits.MIN_REQUEST_FRAME, (wire_limits.MAX_FRAME if self.open else Limit("small", 12, "test"))

    def one_at_a_time(self):
        return not self.open

    def last_answer(self):
        return self.last


async def test_the_gate_sets_each_frames_limits_and_what_its_handling_changed_applies_to_the_next():
    gate = Gate()

    async def respond(data):
        await asyncio.sleep(0.05)  # the next frame is already in the socket meanwhile
        if tag_of(data) == 1:
            gate.open = True
        return data

    async with Server(respond, gate=gate, pipelining=Pipelining(max_requests=4)) as server:
        reader, writer = await server.connect()
        # Sent in one write: the 20-byte frame is over the small limit, but it is read only
        # after the frame before it opened the gate.
        writer.write(frame(0) + frame(1) + frame(2, pad=10))
        assert await answers(reader, 3) == [0, 1, 2]
        writer.close()
        await server.done.wait()
    assert server.endings == [PEER_CLOSED]

    gate = Gate()
    async with Server(respond, gate=gate) as server:
        reader, writer = await server.connect()
        writer.write(frame(0) + frame(2, pad=10))  # over the small limit while it is in force
        assert await answers(reader, 1) == [0]
        assert await reader.read() == b""
        await server.done.wait()
    (error,) = server.endings
    assert isinstance(error, FrameError) and error.limit.name == "small"


async def test_the_gate_can_make_an_answer_the_last():
    gate = Gate()
    gate.open = True

    def respond(data):
        gate.last = tag_of(data) == 7
        return data

    async with Server(respond, gate=gate, pipelining=Pipelining(max_requests=1)) as server:
        reader, writer = await server.connect()
        writer.write(frame(6) + frame(7) + frame(8))
        assert await answers(reader, 2) == [6, 7]
        assert await reader.read() == b""
        await server.done.wait()
    assert server.endings == [LAST_ANSWER]


@pytest.mark.parametrize("fails", ["synchronously", "in its task"])
async def test_a_failed_respond_is_raised_after_the_earlier_answers(fails):
    async def later(data):
        await asyncio.sleep(0.01)
        if tag_of(data) == 2:
            raise ValueError("bad request")
        return data

    def now(data):
        if tag_of(data) == 2:
            raise ValueError("bad request")
        return data

    respond = now if fails == "synchronously" else later
    async with Server(respond, pipelining=Pipelining(max_requests=8)) as server:
        reader, writer = await server.connect()
        writer.write(frame(0) + frame(1) + frame(2) + frame(3))
        assert await answers(reader, 2) == [0, 1]
        assert await reader.read() == b""
        await server.done.wait()
    (error,) = server.endings
    assert isinstance(error, ValueError)


async def test_a_bad_size_is_raised_after_the_frames_before_it_are_answered():
    async with Server(lambda data: data, pipelining=Pipelining(max_requests=8)) as server:
        reader, writer = await server.connect()
        writer.write(frame(0) + frame(1) + struct.pack(">i", 5))
        assert await answers(reader, 2) == [0, 1]
        assert await reader.read() == b""
        await server.done.wait()
    (error,) = server.endings
    assert isinstance(error, FrameError) and error.limit is wire_limits.MIN_REQUEST_FRAME


def test_bounds_must_make_sense():
    with pytest.raises(ValueError):
        Pipelining(max_requests=0)
    with pytest.raises(ValueError):
        Pipelining(idle_timeout_s=0)
