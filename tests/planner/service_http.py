"""What the planner-service tests say to the service and to ``reassignd sim``: one HTTP call
(status and JSON body, error statuses included; optionally over TLS with Basic credentials),
the same from a test running the service in its own event loop (``ahttp``), one line on the
sim's control port, and the assignment they check proposals against (read from ZooKeeper)."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import urllib.error
import urllib.request
import uuid

# A proposal on a cold Spark session of a busy 2-core machine can take a while.
HTTP_TIMEOUT_S = 120


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def http(base: str, method: str, path: str, *, auth: tuple[str, str] | None = None,
         tls: ssl.SSLContext | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(base + path, method=method, data=b"" if method == "POST" else None,
                                 headers=basic(*auth) if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S, context=tls) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


async def ahttp(base: str, method: str, path: str, *, auth: tuple[str, str] | None = None,
                tls: ssl.SSLContext | None = None) -> tuple[int, dict, dict]:
    """http() without blocking the event loop: (status, JSON body, headers)."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT_S)) as session:
        async with session.request(method, base + path, headers=basic(*auth) if auth else {},
                                   ssl=tls if tls is not None else True) as r:
            return r.status, json.loads(await r.read()), dict(r.headers)


def sim_command(control: str, line: str) -> str:
    """Send ``line`` to the sim's control port; its answer must start with OK."""
    host, port = control.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK"), answer
    return answer


def assignment(zk) -> dict[tuple[str, int], list[int]]:
    """Every partition's replicas, from the topic znodes (a kazoo client)."""
    out = {}
    for t in zk.get_children("/brokers/topics"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        for p, r in doc["partitions"].items():
            out[(t, int(p))] = r
    return out


@contextlib.contextmanager
def served_cluster(zk_server, zk_admin, work, sim_args: list[str], serve_args: list[str], *,
                   prefix: str, controller_config: str = 'zk_session_timeout_s = 2.0\nrequest_timeout_s = 5.0\n'):
    """A real cluster under its own chroot: ``reassignd sim`` (``sim_args``), controller 101 and
    ``reassignd planner serve`` (``--zookeeper``, ``--listen`` and ``--master local[1]`` given,
    plus ``serve_args``), with its Spark session and model ready. Yields base (the API's URL), zk
    (a kazoo client on the chroot), sim (the sim's control addresses), hosts and procs."""
    from tests.e2e.processes import Processes, kazoo_client, wait_for
    from tests.fixtures.zk import _delete_tree

    chroot = f"/{prefix}_{uuid.uuid4().hex[:10]}"
    zk_admin.create(chroot)
    hosts = f"{zk_server.connect_string}{chroot}"
    config = work / "controller.toml"
    config.write_text(controller_config)
    try:
        with Processes(work) as procs, kazoo_client(hosts) as zk:
            sim = procs.start_sim(hosts, sim_args)
            procs.start_controller(hosts, 101, config)
            wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's registration")
            svc = procs.spawn("planner", ["planner", "serve", "--zookeeper", hosts, "--listen", "127.0.0.1:0",
                                          "--master", "local[1]", *serve_args])
            line = svc.stdout.readline()
            assert line, procs.log("planner").read_text()[-3000:]
            base = "http://" + json.loads(line)["listen"]
            wait_for(lambda: http(base, "GET", "/state")[1]["spark"]["ready"], 120, "the service's Spark session")
            wait_for(lambda: http(base, "GET", "/state")[1]["model"]["ready"], 30, "the service's model")
            yield {"base": base, "zk": zk, "sim": sim, "hosts": hosts, "procs": procs}
    finally:
        _delete_tree(zk_admin, chroot)
