"""``reassignd controller`` as a process: arguments, config, listener, registration, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import protocol
from controller.core.config import ConfigError, ControllerConfig, to_toml
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.daemon import main, parse_listen
from controller.shell.listener import AdminListener
from controller.shell.options import load_settings, parse_args
from controller.shell.role import Role
from sim.cluster import registration_payload

REPO = Path(__file__).resolve().parents[2]


# ---- arguments and config (no process needed) -------------------------------------------------

REQUIRED = ["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "127.0.0.1:0"]


def resolve_args(argv: list[str]):
    return load_settings(parse_args(argv), {})



@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--zookeeper", "127.0.0.1:1", "--id", "1"],
        ["--zookeeper", "127.0.0.1:1", "--id", "x", "--listen", "127.0.0.1:0"],
        ["--zookeeper", "127.0.0.1:1", "--id", "-4", "--listen", "127.0.0.1:0"],
        ["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "nohost"],
        ["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "127.0.0.1:70000"],
        ["--zookeeper", "", "--id", "1", "--listen", "127.0.0.1:0"],
        # accepted once, then failed at run time (an outside probe): not finite, past ZooKeeper's int32 ms
        [*REQUIRED, "--zk-session-timeout-s", "inf"],
        [*REQUIRED, "--zk-session-timeout-s", "1e300"],
        [*REQUIRED, "--retry-backoff-s", "nan"],
        [*REQUIRED, "--topic-policy-min-replication-factor", "5", "--topic-policy-max-replication-factor", "2"],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err


@pytest.mark.parametrize(
    "content, message",
    [
        ("max_cluster_moves = ", "is not valid TOML"),
        ("max_incoming_per_broker = 0", "max_incoming_per_broker (file {path}): Input should be greater than or equal to 1"),
        ('max_cluster_moves = "10"', "max_cluster_moves (file {path}): Input should be a valid integer"),
        ("request_timeout_s = true", "request_timeout_s (file {path}): Input should be a valid number"),
        ("max_incomming_per_broker = 3", "max_incomming_per_broker (file {path}): unknown setting"),
        ("[listener]\nmax_connections = 3", "listener (file {path}): unknown setting"),
        ("zk_session_timeout_s = inf", "zk_session_timeout_s (file {path}): Input should be a finite number"),
        ("topic_policy_min_replication_factor = 3\ntopic_policy_max_replication_factor = 1",
         "topic_policy_min_replication_factor (file {path}) is 3, above topic_policy_max_replication_factor (file {path}) 1"),
    ],
)
def test_bad_config_files_exit_2_with_the_reason(tmp_path, capsys, content, message):
    path = tmp_path / "c.toml"
    path.write_text(content)
    message = message.format(path=path)
    with pytest.raises(ConfigError) as e:
        resolve_args(["--config", str(path), *REQUIRED])
    assert message in str(e.value)
    assert main(["--config", str(path), *REQUIRED]) == 2
    assert message in capsys.readouterr().err


def test_missing_config_file_and_defaults(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        resolve_args(["--config", str(tmp_path / "absent.toml"), *REQUIRED])
    assert resolve_args(REQUIRED).settings.tunables() == ControllerConfig()
    assert resolve_args([*REQUIRED, "--request-timeout-s", "2"]).settings.request_timeout_s == 2
    assert parse_listen("[::1]:9190") == ("::1", 9190)


# ---- the listener -------------------------------------------------------------------------------


def _send(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(frame)
    head = sock.recv(4, socket.MSG_WAITALL)
    (size,) = struct.unpack(">i", head)
    return head + sock.recv(size, socket.MSG_WAITALL)


async def test_listener_answers_api_versions_and_survives_garbage():
    import asyncio

    # An empty API table: ApiVersions and nothing else.
    listener = AdminListener("127.0.0.1", 0, AdminHandler(AdminContext(Role(1), ControllerConfig()), {}))
    host, port = await listener.start()
    try:

        def client():
            with socket.create_connection((host, port), timeout=5) as s:
                reply = _send(s, protocol.encode_request(18, 3, 7, "t", {"client_software_name": "t", "client_software_version": "1"}))
                _, body = protocol.decode_response(18, 3, reply)
                # an unknown ApiVersions version gets Kafka's v0 UNSUPPORTED_VERSION answer
                bad = bytearray(protocol.encode_request(18, 0, 8, "t", {}))
                bad[6:8] = struct.pack(">h", 99)
                _, unsupported = protocol.decode_response(18, 0, _send(s, bytes(bad)))
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(struct.pack(">i", 2**31 - 1) + b"junk")  # absurd size: connection closed
                closed = s.recv(10) == b""
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(protocol.encode_request(3, 1, 9, "t", {"topics": None}))  # not served yet
                refused = s.recv(10) == b""
            with socket.create_connection((host, port), timeout=5) as s:
                still = _send(s, protocol.encode_request(18, 0, 10, "t", {}))
            return body, unsupported, closed, refused, still

        body, unsupported, closed, refused, still = await asyncio.to_thread(client)
        assert body["error_code"] == 0 and [k["api_key"] for k in body["api_keys"]] == [18]
        assert unsupported["error_code"] == 35 and unsupported["api_keys"]
        assert closed and refused
        assert protocol.decode_response(18, 0, still)[1]["error_code"] == 0
    finally:
        await listener.close()


# ---- the process ------------------------------------------------------------------------------


SHUTDOWN_TIMEOUT_S = 3.0
# The process's own exit after its bounded shutdown (interpreter teardown) on a loaded machine.
EXIT_SLACK_S = 5.0


@pytest.mark.zk
def test_process_registers_its_listener_and_stops_promptly_on_sigterm(zk_hosts, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(to_toml({"zk_session_timeout_s": 2.0, "shutdown_timeout_s": SHUTDOWN_TIMEOUT_S}))
    procs = []
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    # A broker with controller 7's id (one id space): 7 warns at registration, 8 does not.
    zk.create("/brokers/ids/7", registration_payload("127.0.0.1", 1, None), ephemeral=True, makepath=True)
    try:
        for cid in (7, 8):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "reassignd", "controller", "--zookeeper", zk_hosts, "--id", str(cid),
                     "--listen", "127.0.0.1:0", "--config", str(config)],
                    cwd=REPO,
                    stderr=open(tmp_path / f"c{cid}.log", "wb"),
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                )
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (zk.exists("/controller") and len(zk.get_children("/reassignd/controllers")) == 2):
            time.sleep(0.05)
        zk.delete("/brokers/ids/7")
        active = json.loads(zk.get("/controller")[0])["brokerid"]
        listener = json.loads(zk.get(f"/reassignd/controllers/{active}")[0])
        with socket.create_connection((listener["host"], listener["port"]), timeout=5) as s:
            reply = _send(s, protocol.encode_request(18, 0, 1, "t", {}))
        assert protocol.decode_response(18, 0, reply)[1]["error_code"] == 0
        # SIGTERM: gone within the bound, its session closed so the standby takes over at once
        proc = procs[[7, 8].index(active)]
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert time.monotonic() - started < SHUTDOWN_TIMEOUT_S + EXIT_SLACK_S
        # Its session closed on the way out, not left to expire: its ephemerals are gone already.
        assert zk.exists(f"/reassignd/controllers/{active}") is None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            data = zk.exists("/controller") and zk.get("/controller")[0]
            if data and json.loads(data)["brokerid"] != active:
                break
            time.sleep(0.05)
        assert json.loads(zk.get("/controller")[0])["brokerid"] == ({7, 8} - {active}).pop()
        assert zk.get("/controller_epoch")[0] == b"2"
        clash = "controller id 7 is also a registered broker's"
        assert clash in (tmp_path / "c7.log").read_text() and "is also a registered broker's" not in (tmp_path / "c8.log").read_text()
    finally:
        zk.stop()
        zk.close()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
