"""Every simulated broker answers Metadata with every topic, as Kafka brokers do: the active
controller sends the full UpdateMetadata at election and to a broker that registers again
(controller.core.full_metadata). Checked with ``kcat -L -J`` against each simulated broker.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` and one
``python -m reassignd controller``; no reassignment is ever submitted, so nothing else would
tell the brokers about the topics.
"""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

SIM_ARGS = ["--brokers", "3", "--topics", "orders:4:2:64MiB", "events:3:3:1KiB", "logs:1:1:1KiB",
            "--bandwidth", "1KiB", "--produce-rate", "0"]
# The full UpdateMetadata follows the election by a moment (after the resumed work).
METADATA_TIMEOUT_S = 30
KCAT_TIMEOUT_S = 30


def kcat_metadata(address: str) -> dict | None:
    """``kcat -L -J`` against one broker; None if it did not answer (yet)."""
    out = subprocess.run(["kcat", "-L", "-J", "-b", address, "-m", "5"], capture_output=True, text=True,
                         timeout=KCAT_TIMEOUT_S)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def expected(zk) -> dict[str, dict[int, tuple[int, list[int]]]]:
    """{topic: {partition: (leader, replicas)}} from ZooKeeper."""
    out: dict = {}
    for topic in zk.get_children("/brokers/topics"):
        parts = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"]
        for p, replicas in parts.items():
            state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            out.setdefault(topic, {})[int(p)] = (state["leader"], replicas)
    return out


def listed(meta: dict) -> dict[str, dict[int, tuple[int, list[int]]]]:
    return {
        t["topic"]: {p["partition"]: (p["leader"], [r["id"] for r in p["replicas"]]) for p in t["partitions"]}
        for t in meta["topics"]
    }


def broker_address(zk, broker_id: int) -> str:
    reg = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])
    return f"{reg['host']}:{reg['port']}"


def complete(zk, broker_id: int, want: dict):
    """The broker's listing when it is exactly ``want``, else None (poll again)."""
    try:
        meta = kcat_metadata(broker_address(zk, broker_id))
    except Exception:  # not registered again yet
        return None
    return meta if meta is not None and listed(meta) == want else None


def sim_command(control_port: int, line: str) -> dict:
    with socket.create_connection(("127.0.0.1", control_port), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as answer:
            data = answer.readline()
    assert data.startswith(b"OK "), data[:200]
    return json.loads(data[3:])


def test_every_broker_lists_every_topic_and_a_restarted_one_again(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(101,)) as c:
        want = expected(c.zk)
        assert sorted(want) == ["events", "logs", "orders"]
        assert {t: len(p) for t, p in want.items()} == {"events": 3, "logs": 1, "orders": 4}
        for b in sorted(c.brokers):
            meta = wait_for(lambda: complete(c.zk, b, want), METADATA_TIMEOUT_S, f"broker {b} to list every topic")
            assert {n["id"] for n in meta["brokers"]} >= {1, 2, 3}
            assert meta["controllerid"] == 101
        # A restarted broker has forgotten everything; the controller tells it again. Its
        # partitions may have changed leader meanwhile (the controller saw it go): ZooKeeper's now.
        sim_command(c.control_port, "restart 2")
        wait_for(lambda: complete(c.zk, 2, expected(c.zk)), METADATA_TIMEOUT_S, "restarted broker 2 to list every topic")
