"""The planner service's REST API secured (issue 22 item 9): TLS, HTTP Basic from a file of
PBKDF2 hashes, client certificates mapped to roles, Cruise Control's role split (VIEWER: GET;
USER: dry runs; ADMIN: executions), 401 and 403 in the API's error shape, an audit line with the
principal for every execution, and a service that will not start open unless told to."""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from planner_service import api_auth
from planner_service.api_auth import ApiAuth, AuthConfigError, StoredHash, required_role
from planner_service.http_server import ApiSecurity
from planner_service.service import Options, PlannerService
from reassignd import planner as cli
from tests.e2e.processes import REPO, stop_process
from tests.planner.service_http import ahttp, http
from tests.planner.test_service_zk import _until, _write_cluster
from tests.security.certs import make_pki

# Cheap hashes for the tests' own files (the floor the loader accepts): the KDF's cost is the
# same code at any count.
ITER = api_auth.MIN_ITERATIONS
USERS = {"alice": ("ADMIN", "alice-pw"), "bob": ("USER", "bob-pw"), "carol": ("VIEWER", "carol-pw")}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("api-pki"))


@pytest.fixture(scope="module")
def files(pki, tmp_path_factory):
    root = tmp_path_factory.mktemp("api-files")
    creds = root / "users.txt"
    creds.write_text("# planner API users\n\n" + "\n".join(
        api_auth.credential_line(u, r, pw, iterations=ITER) for u, (r, pw) in USERS.items()) + "\n")
    roles = root / "certs.txt"
    roles.write_text("ops-admin:ADMIN\nreporter:VIEWER\n")
    certs = {name: pki.client(name, f"/CN={name}") for name in ("ops-admin", "reporter", "stranger")}
    certs["rogue"] = pki.client("rogue", "/CN=ops-admin", rogue=True)
    return {"creds": creds, "roles": roles, "certs": certs}


def client_tls(pki, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


# ---- the pure part: roles, hashes, files ------------------------------------------------------

def test_roles_follow_cruise_controls_split():
    assert required_role("GET", "/state", {}) == "VIEWER"
    assert required_role("GET", "/load", {}) == "VIEWER"
    assert required_role("POST", "/rebalance", {}) == "USER"  # a dry run by default
    assert required_role("POST", "/remove_broker", {"brokerid": "3", "dryrun": "true"}) == "USER"
    for dryrun in ("false", "0", "no", "False", "maybe"):  # anything not a dry run executes (or is refused)
        assert required_role("POST", "/remove_broker", {"brokerid": "3", "dryrun": dryrun}) == "ADMIN"
    # POSTs that are not planning endpoints (stopping an execution, self-healing changes, any
    # endpoint added later) are ADMIN's
    assert required_role("POST", "/stop_proposal_execution", {}) == "ADMIN"
    assert required_role("POST", "/admin", {"dryrun": "true"}) == "ADMIN"
    assert required_role("DELETE", "/state", {}) == "ADMIN"
    assert api_auth.allows("ADMIN", "USER") and api_auth.allows("USER", "USER")
    assert not api_auth.allows("VIEWER", "USER") and not api_auth.allows("USER", "ADMIN")


def test_hashes_are_salted_pbkdf2_and_verify():
    line = api_auth.credential_line("dave", "USER", "s3cret", iterations=ITER)
    user, role, stored = line.split(":", 2)
    assert (user, role) == ("dave", "USER") and stored.startswith(f"pbkdf2-sha512${ITER}$")
    assert "s3cret" not in line
    h = StoredHash.parse(stored)
    assert h.matches("s3cret") and not h.matches("s3cret ") and not h.matches("")
    # the same password twice: two salts, two hashes
    assert api_auth.hash_password("x", iterations=ITER) != api_auth.hash_password("x", iterations=ITER)


def test_bad_files_name_their_line(tmp_path):
    good = api_auth.credential_line("dave", "USER", "pw", iterations=ITER)
    weak = api_auth.credential_line("erin", "USER", "pw", iterations=ITER - 1)
    cases = [
        ("dave:USER:pw\n", "line 1: expected pbkdf2-sha512$"),  # a plain password is refused
        (f"{good}\n{good}\n", "line 2: user 'dave' listed twice"),
        (f"#\n{weak}\n", f"line 2: iterations must be {ITER}.."),
        (good.replace(":USER:", ":ROOT:") + "\n", "line 1: role must be one of VIEWER, USER, ADMIN"),
        ("dave\n", "line 1: expected USER:ROLE:HASH"),
        ("# nobody\n", "no users"),
    ]
    for text, message in cases:
        (tmp_path / "u.txt").write_text(text)
        with pytest.raises(AuthConfigError, match=message.replace("$", r"\$").replace(".", r"\.").replace("'", ".")):
            api_auth.load_credentials(str(tmp_path / "u.txt"))
    (tmp_path / "c.txt").write_text("a:ADMIN\nb:SUPER\n")
    with pytest.raises(AuthConfigError, match="line 2: expected CN:ROLE"):
        api_auth.load_cert_roles(str(tmp_path / "c.txt"))
    (tmp_path / "c.txt").write_text("CN with: colon:VIEWER\n")
    assert api_auth.load_cert_roles(str(tmp_path / "c.txt")) == {"CN with: colon": "VIEWER"}
    with pytest.raises(AuthConfigError, match="No such file"):
        api_auth.load_credentials(str(tmp_path / "missing.txt"))


def test_basic_header_parsing():
    assert api_auth.basic_credentials("Basic YWxpY2U6cDpx") == ("alice", "p:q")  # a password may hold ':'
    assert api_auth.basic_credentials("basic YWxpY2U6cA==") == ("alice", "p")
    for bad in (None, "", "Bearer x", "Basic !!!", "Basic YWxpY2U="):  # the last: no ':'
        assert api_auth.basic_credentials(bad) is None


async def test_a_verified_password_is_remembered_a_wrong_one_never():
    auth = ApiAuth({"dave": ("USER", StoredHash.parse(api_auth.hash_password("pw", iterations=ITER)))})
    calls = []
    real = StoredHash.matches

    def counting(self, password):
        calls.append(password)
        return real(self, password)

    try:
        StoredHash.matches = counting
        header = "Basic " + __import__("base64").b64encode(b"dave:pw").decode()
        wrong = "Basic " + __import__("base64").b64encode(b"dave:nope").decode()
        assert (await auth.authenticate(header, None)) == api_auth.Principal("User:dave", "USER")
        assert (await auth.authenticate(header, None)).role == "USER"
        assert await auth.authenticate(wrong, None) is None
        assert await auth.authenticate(wrong, None) is None
        assert calls == ["pw", "nope", "nope"]  # the KDF ran once for the good password
    finally:
        StoredHash.matches = real
        auth.close()


# ---- the command line -------------------------------------------------------------------------

def _serve(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reassignd", "planner", "serve", "--zookeeper", "127.0.0.1:1",
                           "--listen", "127.0.0.1:0", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_the_service_refuses_to_start_open_unless_told(files, pki, tmp_path):
    """Today's service served anyone; now no authentication is a usage error (exit 2) before
    anything starts, and every combination that would not protect the API is one too."""
    out = _serve()
    assert out.returncode == 2, out.stderr[-2000:]
    assert "the REST API needs authentication" in out.stderr and "--insecure-no-auth" in out.stderr
    creds, roles = str(files["creds"]), str(files["roles"])
    for args, message in [
        (["--api-credentials", creds], "need --api-tls-cert"),  # Basic over plain HTTP
        (["--insecure-no-auth", "--api-credentials", creds, "--api-tls-cert", str(pki.server)], "choose one"),
        (["--api-tls-cert", str(pki.server), "--api-cert-roles", roles], "go together"),
        (["--api-tls-cert", str(tmp_path / "none.pem"), "--api-credentials", creds], "--api-tls-cert"),
        (["--api-tls-cert", str(pki.server), "--api-credentials", str(tmp_path / "none.txt")], "none.txt"),
    ]:
        code = cli.main(["serve", "--zookeeper", "127.0.0.1:1", "--listen", "127.0.0.1:0", *args])
        assert code == 2, args


def test_hash_password_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "reassignd", "planner", "hash-password", "--user", "zed",
                          "--role", "VIEWER"], input="zed-secret\n", cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    (tmp_path / "u.txt").write_text(out.stdout)
    role, stored = api_auth.load_credentials(str(tmp_path / "u.txt"))["zed"]
    assert role == "VIEWER" and stored.iterations == api_auth.DEFAULT_ITERATIONS and stored.matches("zed-secret")
    assert "zed-secret" not in out.stdout


def test_served_over_tls_with_basic_credentials_and_open_only_with_a_warning(files, pki, tmp_path):
    """``reassignd planner serve`` as an operator runs it: HTTPS, Basic users from the file; and
    ``--insecure-no-auth``, which serves plain HTTP open and says so in its log."""
    from tests.e2e.processes import spawn_reassignd

    base_args = ["planner", "serve", "--zookeeper", "127.0.0.1:1", "--listen", "127.0.0.1:0", "--no-spark",
                 "--no-sizes", "--session-timeout", "1"]
    secured = spawn_reassignd([*base_args, "--api-tls-cert", str(pki.server), "--api-credentials",
                               str(files["creds"])], tmp_path / "secured.log")
    try:
        ready = json.loads(secured.stdout.readline() or "{}")
        assert ready.get("scheme") == "https", (tmp_path / "secured.log").read_text()[-3000:]
        base = "https://" + ready["listen"]
        tls = client_tls(pki)
        assert http(base, "GET", "/state", tls=tls)[0] == 401
        assert http(base, "GET", "/state", tls=tls, auth=("carol", "wrong"))[0] == 401
        status, state = http(base, "GET", "/state", tls=tls, auth=("carol", "carol-pw"))
        assert status == 200 and "model" in state
        assert state["spark"]["master"] is None and not state["spark"]["ready"]  # --no-spark: no JVM
        assert http(base, "POST", "/rebalance", tls=tls, auth=("carol", "carol-pw"))[0] == 403
        with pytest.raises(Exception):  # plain HTTP to the TLS port: no answer
            http("http://" + ready["listen"], "GET", "/state")
    finally:
        stop_process(secured)
    log = (tmp_path / "secured.log").read_text()
    assert "authenticates by Basic (3 users)" in log and "OPEN" not in log
    open_ = spawn_reassignd([*base_args, "--insecure-no-auth"], tmp_path / "open.log")
    try:
        ready = json.loads(open_.stdout.readline() or "{}")
        assert ready.get("scheme") == "http", (tmp_path / "open.log").read_text()[-3000:]
        assert http("http://" + ready["listen"], "GET", "/state")[0] == 200
    finally:
        stop_process(open_)
    log = (tmp_path / "open.log").read_text()
    assert "WARNING" in log and "is OPEN: no authentication" in log


# ---- roles, certificates and the audit, on a real model ---------------------------------------

@pytest.mark.zk
async def test_roles_certificates_and_the_audit_of_an_execution(zk_hosts, files, pki, caplog):
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    security = ApiSecurity(ApiAuth.from_files(str(files["creds"]), str(files["roles"])),
                           ApiSecurity.tls(str(pki.server), client_ca=str(pki.ca)))
    # The execution's AdminClient finds no controller (port 1): the POST has answered by then.
    svc = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, bootstrap="127.0.0.1:1",
                                 admin_timeout_ms=2000, api_security=security))
    caplog.set_level(logging.INFO, logger="reassignd.planner.audit")
    try:
        _write_cluster(zk)
        await svc.start()
        await _until(lambda: svc.feed.ready, 20, "the model")
        base, tls = f"https://{svc.address}", client_tls(pki)

        async def call(method, path, who=None, cert=None):
            status, body, headers = await ahttp(base, method, path, tls=client_tls(pki, cert) if cert else tls,
                                                auth=(who, USERS[who][1]) if who else None)
            return status, body, headers

        status, body, headers = await call("GET", "/state")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic realm=")
        assert body["error"]["status"] == 401 and "authentication required" in body["error"]["message"]
        assert (await ahttp(base, "GET", "/state", tls=tls, auth=("mallory", "x")))[0] == 401
        assert (await ahttp(base, "GET", "/state", tls=tls, auth=("alice", "bob-pw")))[0] == 401
        # VIEWER: GET only
        assert (await call("GET", "/load", "carol"))[0] == 200
        status, body, _ = await call("POST", "/rebalance", "carol")
        assert status == 403 and body["error"]["message"] == "User:carol has role VIEWER; POST /rebalance needs USER"
        # USER: dry runs, not executions
        status, body, _ = await call("POST", "/remove_broker?brokerid=3", "bob")
        assert status == 200 and body["dryrun"] is True
        status, body, _ = await call("POST", "/remove_broker?brokerid=3&dryrun=false", "bob")
        assert status == 403 and "needs ADMIN" in body["error"]["message"]
        assert svc.executions == []  # nothing was started for it
        # client certificates: a mapped CN has its role; an unmapped one, or one from another CA, is no one
        assert (await call("GET", "/state", cert=files["certs"]["reporter"]))[0] == 200
        assert (await call("POST", "/rebalance", cert=files["certs"]["reporter"]))[0] == 403
        assert (await call("GET", "/state", cert=files["certs"]["stranger"]))[0] == 401
        with pytest.raises(Exception):  # the handshake refuses a certificate the CA did not sign
            await call("GET", "/state", cert=files["certs"]["rogue"])
        # ADMIN (Basic) executes; the audit names who
        caplog.clear()
        status, body, _ = await call("POST", "/remove_broker?brokerid=3&dryrun=false", "alice")
        assert status == 200 and body["execution"]["id"] == 1, body
        lines = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
        assert len(lines) == 1 and lines[0].startswith("principal=User:alice role=ADMIN "), lines
        assert "request=POST /remove_broker?brokerid=3&dryrun=false status=200 outcome=execution 1" in lines[0]
        # ADMIN by certificate; a refused execution is audited too (409: the first one runs, or
        # has failed and this one starts: either way one line with the certificate's principal)
        await _until(lambda: svc.execution is None or svc.execution.state != "running", 30, "execution 1 over")
        caplog.clear()
        status, body, _ = await call("POST", "/remove_broker?brokerid=3&dryrun=false", cert=files["certs"]["ops-admin"])
        lines = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
        assert status == 200 and len(lines) == 1 and lines[0].startswith("principal=User:CN=ops-admin role=ADMIN")
        assert f"outcome=execution {body['execution']['id']}" in lines[0]
        # stopping an execution is ADMIN's (endpoints.py's POST /stop_proposal_execution)
        assert (await call("POST", "/stop_proposal_execution", "bob"))[0] == 403
        status, body, _ = await call("POST", "/stop_proposal_execution", "alice")
        assert status == 200 and "force_stop" in body, body
        # a VIEWER's attempt at an execution is audited as refused
        caplog.clear()
        assert (await call("POST", "/add_broker?brokerid=9&dryrun=false", "carol"))[0] == 403
        lines = [r.getMessage() for r in caplog.records if r.name == "reassignd.planner.audit"]
        assert len(lines) == 1 and "principal=User:carol role=VIEWER" in lines[0] and "status=403" in lines[0]
    finally:
        await svc.stop()
        zk.stop()
        zk.close()


# ---- the wire: limits and error shape, on aiohttp -------------------------------------------------

async def test_the_api_server_keeps_its_error_shape_and_limits():
    import asyncio

    from planner_service import http_server
    from planner_service.http_server import ApiServer, HttpError

    async def handler(method, path, query):
        if path == "/boom":
            raise RuntimeError("a handler bug")
        if path == "/missing":
            raise HttpError(404, "no such endpoint")
        return 200, {"method": method, "query": query}

    server = ApiServer(handler, "127.0.0.1", 0)
    await server.start()
    base = f"http://{server.address}"
    try:
        assert (await ahttp(base, "GET", "/x?a=1&b="))[:2] == (200, {"method": "GET", "query": {"a": "1", "b": ""}})
        assert (await ahttp(base, "GET", "/missing"))[:2] == (404, {"error": {"status": 404, "message": "no such endpoint"}})
        status, body, _ = await ahttp(base, "GET", "/boom")
        assert status == 500 and body == {"error": {"status": 500, "message": "RuntimeError: a handler bug"}}
        status, body, _ = await ahttp(base, "GET", "/x?a=1&&b")
        assert status == 400 and "malformed query string" in body["error"]["message"]
        # keep-alive: two requests on one connection; a body over the limit is 413 before it is read
        host, port = server.address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for _ in range(2):
                writer.write(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                assert head.startswith(b"HTTP/1.1 200 ") and b"application/json" in head
                length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
                await reader.readexactly(length)
            writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (http_server.MAX_BODY + 1))
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 413 ")
        finally:
            writer.close()
        # a body declared and never sent: 408 after the idle timeout, not a connection held for
        # ever (an outside probe held 2,000 of them for minutes, before any authentication)
        real = http_server.IDLE_TIMEOUT_S
        http_server.IDLE_TIMEOUT_S = 0.5
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 408 ")
        finally:
            http_server.IDLE_TIMEOUT_S = real
            writer.close()
        # a request line over the limit: aiohttp's own 400 (text), and the connection closed
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(b"GET /" + b"a" * http_server.MAX_LINE + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.0 400 ")
        finally:
            writer.close()
    finally:
        await server.close()
