"""The planner service's REST API against HTTP's rules (RFC 9110), as an outside probe found it
lacking: a 405 names the methods the endpoint takes (``Allow``); HEAD on a GET endpoint answers
as GET would, with no body; and an execution asked while the service's ZooKeeper session is
down is refused at once (503 with ``Retry-After``), against a ZooKeeper server really stopped
and started again. In-process, no Spark."""

from __future__ import annotations

import asyncio
import json

import pytest
from kazoo.client import KazooClient

from planner_service import api_auth
from planner_service.api_auth import ApiAuth, StoredHash
from planner_service.http_server import ApiSecurity
from planner_service.service import Options, PlannerService
from tests.planner.service_http import basic
from tests.planner.test_service_zk import _until, _write_cluster
from znodes.launcher import LocalZooKeeper

pytestmark = pytest.mark.zk

GET_ENDPOINTS = ("/state", "/load", "/proposals")
POST_ENDPOINTS = ("/rebalance", "/remove_broker", "/add_broker", "/fix_rack_violations", "/demote_broker",
                  "/rebalance_disk", "/stop_proposal_execution", "/admin")
# Every request that starts an execution (broker 3 of _write_cluster's three).
EXECUTIONS = ("/rebalance?dryrun=false", "/remove_broker?brokerid=3&dryrun=false",
              "/add_broker?brokerid=3&dryrun=false", "/fix_rack_violations?dryrun=false",
              "/demote_broker?brokerid=3&dryrun=false", "/rebalance_disk?dryrun=false")
WIRE_TIMEOUT_S = 30


async def wire(address: str, method: str, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """One request on a connection of its own, read to its close: (status, headers with
    lower-case names, every byte after the head), so a body sent to a HEAD shows."""
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {address}", "Connection: close", "Content-Length: 0"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = await asyncio.wait_for(reader.read(), WIRE_TIMEOUT_S)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    return int(status_line.split()[1]), {k.strip().lower(): v.strip() for k, v in
                                         (f.split(":", 1) for f in fields)}, body


def _same_but_date(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "date"} == {k: v for k, v in b.items() if k != "date"}


@pytest.fixture
async def service(zk_hosts):
    """A ready service over a three-broker cluster, its cached proposal computed."""
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False))
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.proposal is not None and svc.proposal["model_version"] == svc.model.version,
                     30, "the model and its proposal")
        yield svc
    finally:
        await svc.stop()
        zk.stop()
        zk.close()


async def test_a_405_names_the_methods_the_endpoint_takes(service):
    """RFC 9110 15.5.6: a 405 carries ``Allow``; the JSON error is the one it always was."""
    for path in GET_ENDPOINTS:
        for method in ("POST", "PUT", "DELETE"):
            status, headers, body = await wire(service.address, method, path)
            assert status == 405 and headers.get("allow") == "GET, HEAD", (method, path, headers)
            assert json.loads(body) == {"error": {"status": 405, "message": f"{path} takes GET, not {method}"}}
    for path in POST_ENDPOINTS:
        for method in ("GET", "PUT"):
            status, headers, body = await wire(service.address, method, path)
            assert status == 405 and headers.get("allow") == "POST", (method, path, headers)
            assert json.loads(body) == {"error": {"status": 405, "message": f"{path} takes POST, not {method}"}}
        # HEAD on a POST endpoint: the same 405, headers only
        status, headers, body = await wire(service.address, "HEAD", path)
        assert (status, headers.get("allow"), body) == (405, "POST", b""), (path, headers)
    # the dashboard's files: a POST there is a wrong method too, not a missing page
    for path in ("/", "/dashboard/app.js"):
        status, headers, body = await wire(service.address, "POST", path)
        assert status == 405 and headers.get("allow") == "GET, HEAD", (path, status, headers)
    status, _, _ = await wire(service.address, "POST", "/no/such/page")
    assert status == 404


async def test_head_answers_as_get_without_a_body(service):
    """RFC 9110 9.3.2: HEAD on /state, /load and /proposals is GET's status and headers
    (Content-Length of GET's body included), and not one byte of body."""
    for path in GET_ENDPOINTS:
        got, got_headers, got_body = await wire(service.address, "GET", path)
        status, headers, body = await wire(service.address, "HEAD", path)
        assert got == 200 and int(got_headers["content-length"]) == len(got_body) > 0, (path, got_headers)
        assert status == 200 and body == b"", (path, status, body[:200])
        assert _same_but_date(headers, got_headers), (path, headers, got_headers)
    # What GET errs with, HEAD errs with, headers only.
    for path in ("/nowhere", "/load?bogus=1"):
        got, got_headers, _ = await wire(service.address, "GET", path)
        status, headers, body = await wire(service.address, "HEAD", path)
        assert got in (400, 404) and (status, body) == (got, b"") and _same_but_date(headers, got_headers), path


async def test_head_on_proposals_does_no_more_than_get(service):
    """GET /proposals answers the cached proposal when it is current: HEAD neither plans nor
    keeps another proposal."""
    kept, cached = sorted(service.proposals), service.proposal["proposal_id"]
    for _ in range(3):
        status, _, body = await wire(service.address, "HEAD", "/proposals")
        assert (status, body) == (200, b"")
    assert sorted(service.proposals) == kept and service.proposal["proposal_id"] == cached


async def test_head_is_authorized_as_get(zk_hosts):
    """HEAD is a VIEWER's, like GET: no or wrong credentials are 401 with the challenge, a
    VIEWER's are 200 (planner_service.api_auth.required_role)."""
    viewer = ("carol", "carol-pw")
    auth = ApiAuth({"carol": ("VIEWER", StoredHash.parse(api_auth.hash_password(
        viewer[1], iterations=api_auth.MIN_ITERATIONS)))})
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, api_security=ApiSecurity(auth, None)))
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.feed.ready, 30, "the model")
        for creds, want in ((None, 401), (("carol", "wrong"), 401), (viewer, 200)):
            headers = basic(*creds) if creds else {}
            got, got_headers, _ = await wire(svc.address, "GET", "/load", headers)
            status, head_headers, body = await wire(svc.address, "HEAD", "/load", headers)
            assert (got, status, body) == (want, want, b""), (creds, got, status)
            assert _same_but_date(head_headers, got_headers), (creds, head_headers, got_headers)
        assert got_headers.get("www-authenticate") is None
        status, headers, _ = await wire(svc.address, "HEAD", "/state")
        assert status == 401 and headers["www-authenticate"].startswith("Basic ")
    finally:
        await svc.stop()
        zk.stop()
        zk.close()


async def test_no_execution_starts_while_zookeeper_is_down(tmp_path):
    """With its ZooKeeper server stopped, the service refuses every execution at once (503,
    Retry-After) and records none; dry runs are still planned from the model it holds, and a
    proposal reviewed during the outage executes once the session is back."""
    loop = asyncio.get_running_loop()
    zk_dir = tmp_path / "zk"
    server = LocalZooKeeper(port=0, data_dir=zk_dir, fsync=False, stop_with_parent=True)
    await loop.run_in_executor(None, server.start)
    port = server.members[0].client_port
    # Named twice: a connect landing while the restarted server still starts gets no reply, and
    # kazoo waits session timeout / hosts for one (tests/znodes/test_store_kazoo.py).
    hosts = f"{server.connect_string},{server.connect_string}"
    writer = KazooClient(hosts=hosts, timeout=30)
    writer.start(timeout=30)
    # No controller answers at 127.0.0.1:1: an accepted execution fails later, which is not
    # what is tested; its being accepted (and recorded) is.
    svc = PlannerService(Options(zookeeper=hosts, port=0, sizes=False, session_timeout_s=30,
                                 bootstrap="127.0.0.1:1", admin_timeout_ms=1000))

    async def state() -> dict:
        return json.loads((await wire(svc.address, "GET", "/state"))[2])

    try:
        _write_cluster(writer)
        writer.stop()
        writer.close()
        await svc.start()
        await _until(lambda: svc.feed.ready and svc.model.n_partitions == 3, 30, "the model")

        await loop.run_in_executor(None, server.stop)
        await _until(lambda: not svc.feed.connected, 30, "the service to see ZooKeeper gone")
        assert (await state())["model"]["connected"] is False
        for path in EXECUTIONS:
            status, headers, body = await wire(svc.address, "POST", path)
            assert status == 503, (path, status, body[:300])
            error = json.loads(body)["error"]
            assert error["message"].startswith("ZooKeeper is not connected") and "retry when it is" in error["message"]
            assert 1 <= int(headers["retry-after"]) <= 60, headers
        # A dry run is planned from the model the service holds; its proposal, reviewed now,
        # cannot be executed now ...
        status, _, body = await wire(svc.address, "POST", "/remove_broker?brokerid=3")
        assert status == 200, body
        reviewed = json.loads(body)["proposal"]["proposal_id"]
        status, headers, _ = await wire(svc.address, "POST", f"/remove_broker?proposal_id={reviewed}&dryrun=false")
        assert status == 503 and "retry-after" in headers
        assert svc.execution is None and (await state())["executions"] == []  # nothing started, nothing recorded

        restarted = LocalZooKeeper(port=port, data_dir=zk_dir, fsync=False, stop_with_parent=True)
        # the same port; kazoo keeps knocking on it meanwhile, so allow it a moment to free
        await loop.run_in_executor(None, lambda: restarted.start(port_wait=10))
        server = restarted
        await _until(lambda: svc.feed.connected, 45, "the session back")
        # ... and once the session is back (the model read again, nothing changed), it is.
        status, _, body = await wire(svc.address, "POST", f"/remove_broker?proposal_id={reviewed}&dryrun=false")
        assert status == 200, body
        execution = json.loads(body)["execution"]
        assert execution["id"] == 1 and execution["proposal_id"] == reviewed
        assert [e["id"] for e in (await state())["executions"]] == [1]
    finally:
        await svc.stop()
        await loop.run_in_executor(None, server.stop)
