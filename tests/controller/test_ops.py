"""The operations port of in-process daemons on a real ZooKeeper: /healthz, /readyz, /metrics,
one registry per daemon (two daemons share this process), the loop-lag check, SIGHUP's live
settings."""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import protocol
from controller.core.config import Settings
from controller.shell.daemon import ControllerDaemon
from controller.shell.journal import DOORS
from controller.shell.metrics import Metrics, error_code
from controller.shell.ops import LAG_WINDOW_S, OpsServer

pytestmark = pytest.mark.zk


async def http_get(port: int, path: str, method: str = "GET") -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def settings(zk_hosts: str, cid: int) -> Settings:
    return Settings(zookeeper=zk_hosts, id=cid, listen="127.0.0.1:0", ops_listen="127.0.0.1:0",
                    zk_session_timeout_s=4.0)


async def test_two_daemons_probes_and_metrics(zk_hosts):
    daemons = {cid: ControllerDaemon(zk_hosts, cid, ("127.0.0.1", 0), settings(zk_hosts, cid)) for cid in (21, 22)}
    tasks = [asyncio.create_task(d.run()) for d in daemons.values()]
    try:
        await wait_until(lambda: _all_ready(daemons), 30, "both instances ready")
        active = next(cid for cid, d in daemons.items() if d.role.is_active)
        standby = ({21, 22} - {active}).pop()
        for cid, d in daemons.items():
            # The lag it reports moves between two reads: the answer's shape, not its figure.
            status, text = await http_get(d.ops.port, "/healthz")
            assert status == 200 and re.fullmatch(r"ok \(event loop lag \d+\.\d{3}s\)\n", text), text
            status, why = await http_get(d.ops.port, "/readyz")
            assert status == 200
            assert why.startswith("active controller (epoch" if cid == active else f"standing by (active controller: {active})")
        # an admin request, counted by API key, version and error code on that instance only
        reader, writer = await asyncio.open_connection("127.0.0.1", daemons[standby].listener.port)
        writer.write(protocol.encode_request(46, 0, 1, "t", {"timeout_ms": 1000, "topics": None}))
        await reader.readexactly(4)
        writer.close()
        m = {cid: samples((await http_get(d.ops.port, "/metrics"))[1]) for cid, d in daemons.items()}
        assert m[active][("reassignd_controller_active", ())] == 1 and m[standby][("reassignd_controller_active", ())] == 0
        assert m[active][("reassignd_elections_total", ())] == 1 and m[standby][("reassignd_elections_total", ())] == 0
        assert m[active][("reassignd_controller_epoch", ())] >= 1
        key = ("reassignd_admin_requests_total", (("api_key", "46"), ("api_version", "0"), ("error_code", "41")))
        assert m[standby][key] == 1 and key not in m[active]  # NOT_CONTROLLER (41) on a standby
        assert m[standby][("reassignd_admin_request_duration_seconds_count", (("api_key", "46"),))] == 1
        assert m[standby][("reassignd_admin_connections_accepted_total", (("listener", "PLAINTEXT"),))] == 1
        assert m[active][("reassignd_zookeeper_request_duration_seconds_count", (("op", "fenced_multi"),))] >= 1 or \
            m[active][("reassignd_zookeeper_request_duration_seconds_count", (("op", "multi"),))] >= 1
        assert m[active][("reassignd_zookeeper_ops_total", (("kind", "read"),))] > 0
        running = {labels: v for (name, labels), v in m[active].items() if name == "reassignd_reassignments_running"}
        assert set(running) == {(("door", d),) for d in DOORS} and not any(running.values())
        assert (await http_get(daemons[active].ops.port, "/nope"))[0] == 404
        assert (await http_get(daemons[active].ops.port, "/metrics", "POST"))[0] == 405
        # SIGHUP's live part: a cap and the log level change, a restart-only setting does not
        d = daemons[active]
        new = d.config.model_copy(update={"max_cluster_moves": 3, "log_level": "DEBUG", "request_timeout_s": 1.0})
        d.apply_settings(new)
        assert d.role.active.config.max_cluster_moves == 3 and d.listener.handler.ctx.config.max_cluster_moves == 3
        assert d.config.request_timeout_s == 10.0
        assert logging.getLogger().level == logging.DEBUG
    finally:
        logging.getLogger().setLevel(logging.WARNING)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _all_ready(daemons) -> bool:
    for d in daemons.values():
        if d.ops is None or not d.ops.running:
            return False
        ok, _ = await d.readiness()
        if not ok:
            return False
    return True


MAX_LAG_S = 1.0  # the loop-lag test's limit (was 0.3 s: a loaded machine's own lag broke it)


async def test_not_ready_without_zookeeper_and_unhealthy_when_the_loop_lags():
    # ZooKeeper on a port nobody listens on: the daemon keeps retrying, the port answers.
    # A lag limit a loaded machine's own scheduling stays below, and a block twice as long.
    cfg = Settings(zookeeper="127.0.0.1:1", id=1, listen="127.0.0.1:0", ops_listen="127.0.0.1:0",
                   ops_max_loop_lag_s=MAX_LAG_S)
    d = ControllerDaemon(cfg.zookeeper, 1, ("127.0.0.1", 0), cfg)
    task = asyncio.create_task(d.run())

    async def health(code: int):
        status, why = await http_get(d.ops.port, "/healthz")
        return (status, why) if status == code else None

    try:
        await wait_until(lambda: _started(d), 10, "the ops port")
        assert await http_get(d.ops.port, "/readyz") == (503, "not connected to ZooKeeper\n")
        assert (await http_get(d.ops.port, "/healthz"))[0] == 200
        time.sleep(2 * MAX_LAG_S)  # the event loop blocked: measured once the ticker wakes
        _, why = await wait_until(lambda: health(503), 5, "/healthz to report the lag")
        assert "event loop lag" in why
        # Healthy again once the lag leaves the window (and not before the window could pass).
        unhealthy_since = time.monotonic()
        await wait_until(lambda: health(200), LAG_WINDOW_S + 5, "/healthz healthy again")
        assert time.monotonic() - unhealthy_since >= LAG_WINDOW_S - 2 * MAX_LAG_S
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _started(d) -> bool:
    return d.ops.running


def test_error_code_of_an_answer():
    assert error_code({"error_code": 41, "responses": []}) == 41
    assert error_code({"throttle_time_ms": 0, "results": [{"error_code": 0}, {"error_code": 37}]}) == 37
    assert error_code({"topics": [{"partitions": [{"error_code": 0}]}]}) == 0
    assert error_code(b"encoded") == 0


async def test_ops_server_alone_serves_a_registry():
    metrics = Metrics()
    metrics.elected(7)

    async def ready():
        return False, "no"

    ops = OpsServer("127.0.0.1", 0, metrics, ready=ready)
    await ops.start()
    try:
        status, text = await http_get(ops.port, "/metrics")
        assert status == 200 and samples(text)[("reassignd_controller_epoch", ())] == 7
        assert await http_get(ops.port, "/readyz") == (503, "no\n")
        assert (await http_get(ops.port, "/healthz", "HEAD"))[0] == 200
    finally:
        await ops.close()


async def test_connection_metrics_of_every_listener():
    """Two --listen listeners: connections open, accepted and refused are counted for each,
    labelled by listener name (the limit is per listener). No ZooKeeper is needed: the
    listeners and the ops port serve while the daemon retries its connection."""
    from controller.core.listeners import Listener
    from controller.shell.security.config import SecurityConfig

    cfg = Settings(zookeeper="127.0.0.1:1", id=1, listen="INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
                   ops_listen="127.0.0.1:0", listener_max_connections=1)
    security = SecurityConfig(protocol_map={"INTERNAL": "PLAINTEXT", "CLIENT": "PLAINTEXT"})
    d = ControllerDaemon(cfg.zookeeper, 1, [Listener("INTERNAL", "127.0.0.1", 0), Listener("CLIENT", "127.0.0.1", 0)],
                         cfg, security=security)
    task = asyncio.create_task(d.run())
    held = []
    try:
        await wait_until(lambda: _started(d), 10, "the ops port")
        internal, client = d.listeners
        assert (internal.name, client.name) == ("INTERNAL", "CLIENT") and internal.port != client.port
        # INTERNAL: one connection held, two more refused over the limit; CLIENT: one held, one refused
        for lis, extra in ((internal, 2), (client, 1)):
            conn = await asyncio.open_connection("127.0.0.1", lis.port)
            held.append(conn)
            await wait_until(lambda lis=lis: _true(lis.connections == 1), 5, f"{lis.name}'s connection accepted")
            for _ in range(extra):
                reader, writer = await asyncio.open_connection("127.0.0.1", lis.port)
                assert await asyncio.wait_for(reader.read(), 5) == b""  # closed on accept
                writer.close()

        async def scraped():
            m = samples((await http_get(d.ops.port, "/metrics"))[1])
            refused = [m.get(("reassignd_admin_connections_refused_total", (("listener", n),))) for n in ("INTERNAL", "CLIENT")]
            return m if refused == [2, 1] else None

        m = await wait_until(scraped, 5, "the refusals of both listeners in /metrics")
        for name in ("INTERNAL", "CLIENT"):
            assert m[("reassignd_admin_connections_open", (("listener", name),))] == 1
            assert m[("reassignd_admin_connections_accepted_total", (("listener", name),))] == 1
            assert m[("reassignd_admin_requests_left_over_total", (("listener", name),))] == 0
        # closing them shows on both
        for _, writer in held:
            writer.close()

        async def closed():
            m = samples((await http_get(d.ops.port, "/metrics"))[1])
            return all(m[("reassignd_admin_connections_open", (("listener", n),))] == 0 for n in ("INTERNAL", "CLIENT"))

        await wait_until(closed, 5, "both listeners' connections closed in /metrics")
    finally:
        for _, writer in held:
            writer.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _true(value: bool) -> bool:
    return value


async def test_ops_port_limits_and_one_request_per_connection():
    """The port on aiohttp keeps its old contract: every answer closes its connection (a probe
    reads to EOF), HEAD tells the GET's length with no body, a request line beyond the named
    limit or a body is refused, and a connection that sends nothing is closed after the idle
    timeout."""
    from controller.shell import ops as ops_mod

    async def ready():
        return True, "ready"

    ops = OpsServer("127.0.0.1", 0, Metrics(), ready=ready)
    await ops.start()

    async def raw(data: bytes) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", ops.port)
        writer.write(data)
        try:
            return await asyncio.wait_for(reader.read(), 10)  # EOF: the server closed it
        finally:
            writer.close()

    try:
        get = await raw(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert get.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\nConnection: close\r\n" in get
        assert get.endswith(b"\r\n\r\nready\n")
        head = await raw(b"HEAD /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 6\r\n" in head and head.endswith(b"\r\n\r\n")
        assert (await raw(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")).endswith(
            b"not found: /healthz, /readyz, /metrics\n")
        long_line = b"GET /" + b"a" * ops_mod.MAX_LINE_BYTES + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        assert (await raw(long_line)).startswith(b"HTTP/1.0 400 ")
        many = b"GET /readyz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(ops_mod.MAX_HEADERS + 1))
        assert (await raw(many + b"\r\n"))[:13] in (b"HTTP/1.0 400 ", b"HTTP/1.0 431 ")
        assert (await raw(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")).startswith(
            b"HTTP/1.1 405 ")
        # What no route takes is answered by aiohttp, and closed all the same (an outside probe
        # held 19,000 such keep-alive connections and took every file descriptor).
        began = time.monotonic()
        options = await raw(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
        assert options.startswith(b"HTTP/1.1 404 ") and b"\r\nConnection: close\r\n" in options
        assert time.monotonic() - began < ops_mod.IDLE_TIMEOUT_S - 1
        # Past the cap, a new connection is closed when accepted; below it again, served.
        held = [await asyncio.open_connection("127.0.0.1", ops.port) for _ in range(ops_mod.MAX_CONNECTIONS)]
        try:
            await asyncio.sleep(0.2)
            reader, writer = await asyncio.open_connection("127.0.0.1", ops.port)
            try:
                assert await asyncio.wait_for(reader.read(), 3) == b""
            finally:
                writer.close()
        finally:
            for _, w in held:
                w.close()
        await asyncio.sleep(0.2)
        assert (await raw(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")).startswith(b"HTTP/1.1 200 OK\r\n")
        began = time.monotonic()
        assert await raw(b"") == b""  # silent: closed by the idle timeout
        assert ops_mod.IDLE_TIMEOUT_S - 1 <= time.monotonic() - began < ops_mod.IDLE_TIMEOUT_S + 4
    finally:
        await ops.close()
