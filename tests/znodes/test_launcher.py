"""`reassignd zk start|status|stop` in real subprocesses, and the launcher's error paths."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reassignd import zk as zk_command
from znodes import launcher
from znodes.launcher import LocalZooKeeper, free_port, pid_alive

REPO = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 120


def reassignd_zk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reassignd", "zk", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def kazoo_round_trip(hosts: str, path: str, value: bytes) -> bytes:
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=30)
    try:
        client.create(path, value)
        return client.get(path)[0]
    finally:
        client.stop()
        client.close()


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "zk"
    yield d
    # never leave a server behind, whatever the test did
    try:
        LocalZooKeeper(data_dir=d).stop(grace=2)
    except launcher.LauncherError:
        pass  # a test wrote a corrupt state file on purpose: no server was started


def test_cli_start_status_stop(data_dir):
    port = free_port()
    started = reassignd_zk("start", "--port", str(port), "--data-dir", str(data_dir))
    assert started.returncode == 0, started.stderr
    assert f"127.0.0.1:{port}" in started.stdout
    state = json.loads((data_dir / "state.json").read_text())
    pid = state["servers"][0]["pid"]
    assert pid_alive(pid)
    assert (data_dir / "zoo.cfg").exists() and (data_dir / "zookeeper.log").exists()

    assert kazoo_round_trip(f"127.0.0.1:{port}", "/hello", b"world") == b"world"

    status = reassignd_zk("status", "--data-dir", str(data_dir))
    assert status.returncode == 0
    assert "standalone" in status.stdout and f"127.0.0.1:{port}" in status.stdout

    again = reassignd_zk("start", "--port", str(free_port()), "--data-dir", str(data_dir))
    assert again.returncode == 1 and "already runs" in again.stderr

    stopped = reassignd_zk("stop", "--data-dir", str(data_dir))
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not pid_alive(pid)
    assert not port_open(port)
    assert reassignd_zk("status", "--data-dir", str(data_dir)).returncode == 1
    assert reassignd_zk("stop", "--data-dir", str(data_dir)).returncode == 0  # idempotent


def test_cli_start_on_busy_port_fails_clearly(data_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = reassignd_zk("start", "--port", str(port), "--data-dir", str(data_dir))
    assert result.returncode == 1
    assert f"port {port}" in result.stderr and "in use" in result.stderr
    assert not (data_dir / "state.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["restart"],
        ["start", "--port", "notanumber"],
        ["start", "--port", "70000"],
        ["start", "--ensemble", "2"],
        ["stop", "--bogus"],
    ],
)
def test_cli_bad_arguments_exit_2(args, capsys):
    assert zk_command.main(args) == 2
    assert "reassignd zk" in capsys.readouterr().err


def test_missing_zookeeper_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(launcher, "ZOOKEEPER_JAR", tmp_path / "absent" / "zookeeper.jar")
    assert zk_command.main(["start", "--port", "0", "--data-dir", str(tmp_path / "zk")]) == 1
    err = capsys.readouterr().err
    assert "apt-get install zookeeper" in err and "make test" in err


def test_missing_java_says_how_to_install(tmp_path):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path / "zk", java=str(tmp_path / "no-java"))
    with pytest.raises(launcher.LauncherError, match="apt-get install"):
        zk.start()


def test_corrupt_state_file_is_reported(data_dir, capsys):
    data_dir.mkdir(parents=True)
    (data_dir / "state.json").write_text('{"version": 1, "servers": "nope"}')
    assert zk_command.main(["status", "--data-dir", str(data_dir)]) == 1
    assert "state.json is unreadable" in capsys.readouterr().err
    assert (data_dir / "state.json").exists()  # left for the operator to look at


def test_stop_leaves_a_foreign_process_alone(data_dir):
    # A stale state file whose pid now belongs to another program must not get it killed.
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        data_dir.mkdir(parents=True)
        state = {
            "version": 1,
            "host": "127.0.0.1",
            "ensemble": 1,
            "servers": [{"id": 1, "client_port": free_port(), "peer_port": 0, "election_port": 0, "pid": sleeper.pid}],
        }
        (data_dir / "state.json").write_text(json.dumps(state))
        assert zk_command.main(["stop", "--data-dir", str(data_dir)]) == 0
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_server_that_dies_while_starting_is_reported(tmp_path):
    zk = LocalZooKeeper(port=0, data_dir=tmp_path / "zk", heap_mb=1)  # the JVM refuses a 1 MB heap
    with pytest.raises(launcher.LauncherError, match="exited"):
        zk.start(timeout=30)
    assert not (tmp_path / "zk" / "state.json").exists()


def test_cli_ensemble_survives_a_member_crash(data_dir):
    started = reassignd_zk("start", "--port", "0", "--ensemble", "3", "--data-dir", str(data_dir))
    assert started.returncode == 0, started.stderr
    state = json.loads((data_dir / "state.json").read_text())
    servers = state["servers"]
    assert [s["id"] for s in servers] == [1, 2, 3]
    ports = {p for s in servers for p in (s["client_port"], s["peer_port"], s["election_port"])}
    assert len(ports) == 9  # distinct client, peer and election ports
    for s in servers:
        assert (data_dir / f"server.{s['id']}" / "data" / "myid").read_text().strip() == str(s["id"])
    hosts = ",".join(f"127.0.0.1:{s['client_port']}" for s in servers)

    status = reassignd_zk("status", "--data-dir", str(data_dir))
    assert status.returncode == 0
    assert status.stdout.count("leader") == 1 and status.stdout.count("follower") == 2

    leader = next(s for s in servers if launcher.server_mode("127.0.0.1", s["client_port"]) == "leader")
    os.kill(leader["pid"], signal.SIGKILL)
    assert kazoo_round_trip(hosts, "/after-crash", b"quorum") == b"quorum"
    status = reassignd_zk("status", "--data-dir", str(data_dir))
    assert "dead" in status.stdout and status.returncode == 0  # two of three still serve

    stopped = reassignd_zk("stop", "--data-dir", str(data_dir))
    assert stopped.returncode == 0
    for s in servers:
        assert not pid_alive(s["pid"])
        assert not port_open(s["client_port"])


def test_cli_foreground_stops_the_server_on_sigterm(data_dir):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reassignd", "zk", "start", "--foreground", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # printed once the server serves
        assert f"127.0.0.1:{port}" in line, proc.stderr.read() if proc.poll() is not None else line
        pid = json.loads((data_dir / "state.json").read_text())["servers"][0]["pid"]
        assert port_open(port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=CLI_TIMEOUT_S) == 0
        assert not pid_alive(pid) and not port_open(port)
        assert not (data_dir / "state.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_servers_die_with_a_killed_starter(data_dir):
    # A test run killed outright (SIGKILL: no finalizers) must not leave its server behind.
    script = (
        "import sys, time; from znodes.launcher import LocalZooKeeper\n"
        "zk = LocalZooKeeper(port=0, data_dir=sys.argv[1], fsync=False, stop_with_parent=True).start()\n"
        "print(zk.members[0].pid, zk.members[0].client_port, flush=True)\n"
        "time.sleep(300)\n"
    )
    starter = subprocess.Popen(
        [sys.executable, "-c", script, str(data_dir)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        pid, port = map(int, starter.stdout.readline().split())
        assert pid_alive(pid) and port_open(port)
        starter.kill()
        starter.wait()
        deadline = time.monotonic() + 30
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid)
        # No process of that server is left (checked by its data dir, not its port: on a busy
        # machine another process may take the freed ephemeral port at once). The watchdog
        # that killed the server exits just after it: give it the same deadline.
        while processes_mentioning(str(data_dir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_mentioning(str(data_dir))
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        starter.stdout.close()
