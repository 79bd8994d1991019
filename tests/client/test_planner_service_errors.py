"""kafka-reassign --planner: how the planner service's answers become exit codes (the table in
client/exit_codes.py), and --timeout bounding the wait for it. An outside probe found a 503
(the service's model not ready, its ZooKeeper session down) reported as exit 10, "the cluster
holds data this tool cannot read", and a --timeout below 120 s ignored."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from client import cli, commands, exit_codes, planner
from client.errors import ReassignError


def _serve(status: int, body, delay_s: float = 0.0):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            time.sleep(delay_s)
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up first

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _error(status: int, message: str) -> dict:
    return {"error": {"status": status, "message": message}}


class Cluster:
    """The cluster as --rebalance reads it before it asks the planner: nothing else is used."""

    async def cluster_state(self, topics=None):
        return SimpleNamespace(topics={}, brokers={1: None, 2: None})


def _rebalance(url: str, timeout_s: float = planner.SERVICE_TIMEOUT_S) -> tuple[int, str]:
    """(exit code, message) of kafka-reassign --rebalance --planner URL, as cli.main maps them."""
    inputs = commands.Inputs(service_timeout_s=timeout_s)
    try:
        asyncio.run(commands.rebalance(Cluster(), inputs, timeout_ms=30_000, spark_master=None, planner_url=url))
    except ReassignError as e:
        return exit_codes.for_error(e), str(e)
    return exit_codes.OK, ""


@pytest.mark.parametrize("status, body, code", [
    (503, _error(503, "ZooKeeper is not connected"), exit_codes.CLUSTER_UNREACHABLE),
    (500, _error(500, "KeyError: 'x'"), exit_codes.CLUSTER_UNREACHABLE),
    (404, _error(404, "no endpoint /rebalance"), exit_codes.CLUSTER_UNREACHABLE),  # not a planner service
    (200, b"<html>a web server, not the planner</html>", exit_codes.CLUSTER_UNREACHABLE),
    (200, {"dryrun": True}, exit_codes.CLUSTER_UNREACHABLE),  # no proposal: another protocol
    (401, _error(401, "authentication required"), exit_codes.REJECTED),
    (403, _error(403, "viewer has role VIEWER"), exit_codes.REJECTED),
    (400, _error(400, "no broker 9"), exit_codes.PLAN_REFUSED),
    (409, _error(409, "a reassignment is running"), exit_codes.CONFLICT),
])
def test_each_answer_of_the_service_has_the_exit_code_of_its_kind(status, body, code):
    server, url = _serve(status, body)
    try:
        got, message = _rebalance(url)
    finally:
        server.shutdown()
        server.server_close()
    assert got == code, message
    assert "planner service" in message


def test_a_service_nobody_listens_on_is_unreachable():
    with socket.socket() as s:  # a port just freed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got, message = _rebalance(f"http://127.0.0.1:{port}")
    assert got == exit_codes.CLUSTER_UNREACHABLE and "unreachable" in message


def test_the_wait_for_the_service_is_bounded():
    server, url = _serve(200, {"dryrun": True}, delay_s=5.0)
    try:
        began = time.monotonic()
        got, message = _rebalance(url, timeout_s=0.5)
        took = time.monotonic() - began
    finally:
        server.shutdown()
        server.server_close()
    assert got == exit_codes.CLUSTER_UNREACHABLE and "within 0.5 s" in message, message
    assert took < 4.0  # the service answers after 5 s


@pytest.mark.parametrize("argv, wait_s", [
    ([], planner.SERVICE_TIMEOUT_S),  # a plan on a cold Spark may take a minute: more than 30 s
    (["--timeout", "500"], 0.5),  # a --timeout given is the wait, below 120 s too (it was not)
    (["--timeout", "300000"], 300.0),
])
def test_timeout_sets_the_wait_for_the_service(argv, wait_s, monkeypatch):
    seen = {}

    async def run(args, action, inputs, timeout_ms, interval):
        seen["wait"] = inputs.service_timeout_s
        return commands.Report("")

    monkeypatch.setattr(cli, "run", run)
    assert cli.main(["--bootstrap-server", "127.0.0.1:1", "--rebalance", "--planner", "http://127.0.0.1:1", *argv]) == 0
    assert seen["wait"] == wait_s
