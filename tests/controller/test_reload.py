"""SIGHUP on a ``reassignd controller`` process: the live settings (caps, log level) change, the
others are reported as needing a restart, a bad file changes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.core.config import to_toml
from tests.e2e.processes import stop_process, wait_for

pytestmark = pytest.mark.zk
REPO = Path(__file__).resolve().parents[2]


def caps(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {s.labels["direction"]: s.value for f in text_string_to_metric_families(text)
            if f.name == "reassignd_broker_move_slots" for s in f.samples}


def ops_port_of(log: Path) -> int | None:
    for line in log.read_text().splitlines():
        if "operations port on http://" in line:
            return int(line.rsplit(":", 1)[1].split()[0])
    return None


def test_sighup_reloads_live_settings_and_names_the_rest(zk_hosts, tmp_path):
    config = tmp_path / "c.toml"
    base = {"zookeeper": zk_hosts, "id": 31, "listen": "127.0.0.1:0", "ops_listen": "127.0.0.1:0", "zk_session_timeout_s": 2.0}
    config.write_text(to_toml({**base, "max_incoming_per_broker": 4}))
    log = tmp_path / "c.log"
    proc = subprocess.Popen([sys.executable, "-m", "reassignd", "controller", "--config", str(config),
                             "--max-outgoing-per-broker", "6"],
                            cwd=REPO, stderr=open(log, "wb"), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        port = wait_for(lambda: ops_port_of(log), 30, "the operations port")
        assert wait_for(lambda: caps(port) or None, 30, "the active controller's caps") == {"incoming": 4, "outgoing": 6}
        # a cap and the log level change live; request_timeout_s needs a restart; the flag
        # still wins over the file
        config.write_text(to_toml({**base, "max_incoming_per_broker": 9, "max_outgoing_per_broker": 1,
                                   "log_level": "DEBUG", "request_timeout_s": 1.0}))
        proc.send_signal(signal.SIGHUP)
        wait_for(lambda: caps(port) == {"incoming": 9, "outgoing": 6}, 10, "the new cap in force")
        text = wait_for(lambda: "reload: log_level" in log.read_text() and log.read_text(), 10, "the reload's log")
        assert "reload: max_incoming_per_broker 4 -> 9" in text
        assert "reload: request_timeout_s changed to 1.0 but needs a restart; keeping 10.0" in text
        assert "max_outgoing_per_broker" not in text.split("reload:", 1)[1]
        # a bad file: refused, nothing changes, the process runs on
        config.write_text("max_incoming_per_broker = 0\n")
        proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload (SIGHUP) refused" in log.read_text(), 10, "the refusal")
        assert "max_incoming_per_broker (file" in log.read_text()
        time.sleep(0.2)
        assert proc.poll() is None and caps(port) == {"incoming": 9, "outgoing": 6}
    finally:
        assert stop_process(proc) == 0
