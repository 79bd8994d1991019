"""The fault proxy on real sockets: an echo server behind it, each mode seen from a client."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

import pytest

from tests.chaos.proxy import FaultProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def proxy():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = FaultProxy(server.server_address).start()
    yield p
    p.close()
    server.shutdown()
    server.server_close()


def _connect(p: FaultProxy) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _echo(s: socket.socket, data: bytes) -> bytes:
    s.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    return got


def test_pass_forwards_both_ways(proxy):
    with _connect(proxy) as s:
        assert _echo(s, b"hello") == b"hello"
        assert _echo(s, b"x" * 200_000) == b"x" * 200_000


# Long enough that a loaded machine's scheduling delays stay well below it: the healed echo
# must take less than one delay (it was delayed on neither leg), the delayed one two.
DELAY_S = 1.0


def test_delay_holds_each_chunk_and_keeps_order(proxy):
    with _connect(proxy) as s:
        assert _echo(s, b"warm") == b"warm"
        proxy.set_mode("delay", delay_s=DELAY_S)
        began = time.monotonic()
        assert _echo(s, b"one") == b"one"
        # Delayed going out and coming back.
        assert time.monotonic() - began >= 2 * DELAY_S - 0.05
        s.sendall(b"a")
        s.sendall(b"b")
        s.sendall(b"c")
        got = b""
        while len(got) < 3:
            got += s.recv(10)
        assert got == b"abc"
        proxy.set_mode("pass")
        began = time.monotonic()
        assert _echo(s, b"fast") == b"fast"
        assert time.monotonic() - began < DELAY_S


def test_cut_closes_open_links_and_refuses_new_ones(proxy):
    s = _connect(proxy)
    assert _echo(s, b"up") == b"up"
    proxy.set_mode("cut")
    s.settimeout(5)
    try:
        data = s.recv(10)
    except ConnectionResetError:
        data = b""
    assert data == b""  # the link is dead
    s.close()
    s2 = _connect(proxy)
    try:
        data = s2.recv(10)
    except ConnectionResetError:
        data = b""
    assert data == b""  # accepted and dropped at once
    s2.close()
    proxy.set_mode("pass")
    with _connect(proxy) as s3:
        assert _echo(s3, b"back") == b"back"


def test_blackhole_holds_bytes_until_healed(proxy):
    with _connect(proxy) as s:
        assert _echo(s, b"up") == b"up"
        proxy.set_mode("blackhole")
        s.sendall(b"held")
        s.settimeout(0.7)
        with pytest.raises(TimeoutError):
            s.recv(10)
        # A new connection is accepted but nothing flows on it either.
        s2 = _connect(proxy)
        s2.sendall(b"new")
        s2.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s2.recv(10)
        proxy.set_mode("pass")
        s.settimeout(5)
        s2.settimeout(5)
        assert s.recv(10) == b"held"
        assert s2.recv(10) == b"new"
        s2.close()


def test_delay_down_delays_only_what_the_server_sends():
    arrived: list[float] = []

    class Stamp(socketserver.BaseRequestHandler):
        def handle(self):
            while data := self.request.recv(4096):
                arrived.append(time.monotonic())
                self.request.sendall(data)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Stamp)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = FaultProxy(server.server_address).start()
    try:
        with _connect(p) as s:
            assert _echo(s, b"warm") == b"warm"
            p.set_mode("delay_down", delay_s=DELAY_S)
            began = time.monotonic()
            assert _echo(s, b"one") == b"one"
            back = time.monotonic()
            # Reached the server at once (a write lands on time), came back one delay later.
            assert arrived[-1] - began < DELAY_S / 2, arrived[-1] - began
            assert DELAY_S - 0.05 <= back - began < 2 * DELAY_S - 0.05, back - began
            p.set_mode("pass")
            began = time.monotonic()
            assert _echo(s, b"fast") == b"fast"
            assert time.monotonic() - began < DELAY_S
    finally:
        p.close()
        server.shutdown()
        server.server_close()
