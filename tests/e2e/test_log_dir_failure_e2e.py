"""End to end: a log directory fails under a running cluster (KIP-113) and the controller acts on
it as Kafka's does (docs/DESIGN.md 4.7.1).

Real ZooKeeper, ``reassignd sim`` with two log directories per broker, one ``reassignd
controller`` process. The sim's control channel fails the directory holding a replica that
leads (``fail-dir``): the broker writes its log directory event notification; the controller
deletes it, asks the broker which replicas are offline, and the partitions there get leaders
from their ISR while the broker leaves their ISRs (replicas in its other directory untouched).
The broker restarts (``restart``): its directories open again and its replicas rejoin the ISRs.
"""

from __future__ import annotations

import socket

import pytest

from tests.e2e.processes import RunningCluster, running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

D1, D2 = "/data/d1", "/data/d2"
SIM_ARGS = ["--brokers", "3", "--topics", "orders:6:3:64KiB", "--log-dirs", f"{D1},{D2}",
            "--bandwidth", "100MiB", "--produce-rate", "0", "--tick-ms", "50"]
WAIT_S = 30.0


def _sim(c: RunningCluster, line: str) -> str:
    with socket.create_connection(("127.0.0.1", c.control_port), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK"), answer
    return answer


def _states(c: RunningCluster) -> dict[int, dict]:
    return {int(p): c.json(f"/brokers/topics/orders/partitions/{p}/state")
            for p in c.zk.get_children("/brokers/topics/orders/partitions")}


def test_a_failed_directory_moves_its_leaders_and_a_restart_brings_its_replicas_back(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(101,)) as c:
        before = wait_for(lambda: (s := _states(c)) and len(s) == 6 and all(len(x["isr"]) == 3 for x in s.values()) and s,
                          WAIT_S, "every partition with a full ISR")
        dirs = {(r["partition"], int(b)): r["log_dir"]
                for b, info in sim_status(c.control_port)["brokers"].items() for r in info["replicas"]}
        victim = before[0]["leader"]
        directory = dirs[(0, victim)]
        lost = {p for (p, b), d in dirs.items() if b == victim and d == directory}
        kept = set(before) - lost
        _sim(c, f"fail-dir {victim} {directory}")

        def moved():
            now = _states(c)
            gone = not c.zk.exists("/log_dir_event_notification") or not c.zk.get_children("/log_dir_event_notification")
            ok = gone and all(now[p]["leader"] != victim and victim not in now[p]["isr"] for p in lost)
            return now if ok else None

        after = wait_for(moved, WAIT_S, f"the partitions in broker {victim}'s {directory} led from their ISR without it")
        for p in lost:
            assert after[p]["leader"] in before[p]["isr"], (p, before[p], after[p])  # clean
            assert after[p]["leader_epoch"] > before[p]["leader_epoch"], (p, before[p], after[p])
        for p in kept:  # the victim's replicas in its other directory stay where they were
            assert victim in after[p]["isr"], (p, after[p])

        _sim(c, f"restart {victim}")
        wait_for(lambda: all(victim in s["isr"] for s in _states(c).values()), WAIT_S,
                 f"broker {victim}'s replicas back in every ISR after its restart")
