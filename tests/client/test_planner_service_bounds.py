"""kafka-reassign --planner, past what test_planner_service_errors.py covers: --timeout bounds the
whole wait (the socket's timeout bounds each read only: a service trickling its answer held the
command past it), a peer that does not speak HTTP is exit 4 (it was an internal error, exit 1,
with a traceback), a --planner URL that is not one is a usage error (exit 2, it was 1 or 4), and
the exit code table names each answer of the service with the code it gets."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from client import cli, commands, exit_codes
from client.errors import ReassignError
from tests.client.test_planner_service_errors import Cluster, _rebalance as rebalance_through


def _rebalance(url: str, timeout_s: float = 30.0) -> tuple[int, str]:
    return rebalance_through(url, timeout_s)


def _serve_raw(answer: bytes, per_byte_s: float = 0.0):
    """A TCP server that reads the request's first bytes, then sends ``answer`` (a byte at a
    time, ``per_byte_s`` apart, when given) and closes."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            with conn:
                try:
                    conn.recv(65536)
                    if per_byte_s:
                        for b in answer:
                            conn.sendall(bytes([b]))
                            time.sleep(per_byte_s)
                    else:
                        conn.sendall(answer)
                except OSError:
                    pass  # the client gave up first

    threading.Thread(target=serve, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


def _http_answer(body: bytes, length: int | None = None) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (len(body) if length is None else length)) + body


def test_timeout_bounds_an_answer_that_trickles_in():
    # Each byte comes within the socket's timeout, the whole answer long after --timeout.
    listener, url = _serve_raw(_http_answer(json.dumps({"padding": "x" * 40}).encode()), per_byte_s=0.05)
    try:
        began = time.monotonic()
        got, message = _rebalance(url, timeout_s=1.0)
        took = time.monotonic() - began
    finally:
        listener.close()
    assert got == exit_codes.CLUSTER_UNREACHABLE and "within 1 s" in message, message
    assert took < 3.0, took  # the answer takes over 6 s to come whole


def test_timeout_bounds_a_service_that_answers_nothing():
    class Mute(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            time.sleep(3)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Mute)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        began = time.monotonic()
        got, message = _rebalance(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=0.3)
        took = time.monotonic() - began
    finally:
        server.shutdown()
        server.server_close()
    assert got == exit_codes.CLUSTER_UNREACHABLE and "within 0.3 s" in message, message
    assert took < 2.0, took


@pytest.mark.parametrize("answer", [
    b"SSH-2.0-OpenSSH_9.6\r\n",  # another protocol on the port: http.client's BadStatusLine
    _http_answer(b'{"proposal": ', length=4096),  # cut short: IncompleteRead
    b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n",  # LineTooLong
], ids=["not-http", "cut-short", "header-too-long"])
def test_a_peer_that_does_not_speak_the_services_http_is_exit_4(answer):
    listener, url = _serve_raw(answer)
    try:
        got, message = _rebalance(url)  # an http.client.HTTPException escaped: exit 1, a traceback
    finally:
        listener.close()
    assert got == exit_codes.CLUSTER_UNREACHABLE, message
    assert "planner service" in message


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:x9300",  # was exit 1: http.client.InvalidURL escaped
    "http://127.0.0.1:99999",  # was exit 4, "Connection refused"
    "http://",  # was exit 4, "no host given"
    "http:///rebalance",
    "http://[::1",
])
def test_a_planner_url_that_is_not_one_is_a_usage_error(url, monkeypatch, capsys):
    async def run(*args):
        raise AssertionError("nothing may be asked with a bad --planner")

    monkeypatch.setattr(cli, "run", run)
    code = cli.main(["--bootstrap-server", "127.0.0.1:1", "--rebalance", "--planner", url])
    err = capsys.readouterr().err
    assert code == exit_codes.USAGE, err
    assert "--planner" in err and url in err, err


@pytest.mark.parametrize("status, code", [
    ("400", exit_codes.PLAN_REFUSED),
    ("401", exit_codes.REJECTED),
    ("403", exit_codes.REJECTED),
    ("409", exit_codes.CONFLICT),
])
def test_the_exit_code_table_names_each_answer_of_the_planner_service(status, code):
    # --help's epilog is this table: a 400 or 409 was exit 11 or 9, but the table said so nowhere.
    text = dict(exit_codes.TABLE)[code]
    assert "--planner" in text and status in text, text


def test_a_demotion_answer_without_reorders_is_not_the_services_answer():
    # --demote-broker --planner: a 200 without the demotion's reorders and elections is a peer
    # this tool cannot use (exit 4), as a plan without a proposal is; it was exit 10, "the
    # cluster holds data this tool cannot read".
    from client import demotion

    body = json.dumps({"proposal": {"reassignment": {"version": 1, "partitions": []}, "report": {}}}).encode()
    listener, url = _serve_raw(_http_answer(body))
    try:
        asyncio.run(demotion.demote(Cluster(), commands.Inputs(brokers_to_demote=[1]), timeout_ms=30_000,
                                    dry_run=True, planner_url=url))
    except ReassignError as e:
        got, message = exit_codes.for_error(e), str(e)
    else:
        got, message = exit_codes.OK, ""
    finally:
        listener.close()
    assert got == exit_codes.CLUSTER_UNREACHABLE, message
    assert "planner service" in message
