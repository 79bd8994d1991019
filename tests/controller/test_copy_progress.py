"""Per-broker bytes remaining and copy rate in /metrics: the pure parts, then a slow move on
simulated brokers watched through the active controller's /metrics."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from controller.shell.copy_progress import moving, rates, remaining
from tests.e2e.processes import running_cluster, wait_for
from znodes.values import LeaderIsr

TP = ("t", 0)


def test_bytes_left_and_rates_per_adding_broker():
    state = ClusterState(controller_id=1, epoch=1)
    state.tasks[TP] = Move(TP, (4, 2), Phase.REPLICATING, original=(1, 2))
    state.tasks[("t", 1)] = Move(("t", 1), (5, 2), Phase.PENDING)
    state.states[TP] = LeaderIsr(1, 3, 1, (1, 2), 0)
    moves = moving(state)
    assert moves == [(TP, 1, (4,))]
    left, copied = remaining(moves, {1: {TP: 1000}, 4: {TP: 300}})
    assert left == {4: 700} and copied == {4: {TP: 300}}
    assert remaining(moves, {1: {TP: 1000}, 4: {}})[0] == {4: 1000}  # no replica yet: all of it
    assert remaining(moves, {4: {TP: 300}}) == ({}, {})  # the leader did not answer
    assert rates({4: {TP: 300}}, {4: {TP: 800}}, 2.0) == {4: 250.0}
    assert rates({}, {4: {TP: 800}}, 2.0) == {}


def metrics(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {(s.name, s.labels.get("broker")): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def throttles_in_force(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {s.labels["kind"]: s.value for f in text_string_to_metric_families(text)
            if f.name == "reassignd_throttles_in_force" for s in f.samples}


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def ops_port(log) -> int | None:
    for line in log.read_text().splitlines():
        if "operations port on http://" in line:
            return int(line.rsplit(":", 1)[1].split()[0])
    return None


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(120)
def test_a_slow_move_shows_its_bytes_remaining_and_copy_rate(zk_hosts, tmp_path):
    sim = ["--brokers", "3", "--topics", "slow:1:1:12MiB", "--topic-brokers", "1", "--bandwidth", "2MiB",
           "--produce-rate", "0", "--tick-ms", "50"]
    config = {"ops_listen": "127.0.0.1:0", "copy_progress_interval_s": 0.3}
    with running_cluster(zk_hosts, tmp_path, sim_args=sim, controller_ids=(41,), controller_config=config) as c:
        port = wait_for(lambda: ops_port(c.controller_log(41)), 20, "the operations port")
        wait_for(lambda: ready(port), 20, "the controller ready")
        c.submit({("slow", 0): [3]})
        # Once the move runs (so after the election's own KIP-179 removal): throttles to
        # remove when it ends, listed as the admin API lists them.
        wait_for(lambda: c.moving("slow", 0), 20, "the move started")
        c.zk.create("/admin/throttled_replicas_removal", b'{"version":1,"topics":["slow"]}')
        c.zk.create("/admin/throttled_rates_removal", b'{"version":1,"brokers":[1,3]}')
        m = wait_for(lambda: (lambda m: m if m.get(("reassignd_broker_copy_rate_bytes_per_second", "3"), 0) > 0 else None)(metrics(port)),
                     30, "a copy rate for broker 3")
        left = m[("reassignd_broker_bytes_remaining", "3")]
        assert 0 < left <= 12 * 1024 * 1024
        # a rate near the broker's bandwidth (simulated time, so loosely)
        assert 0.2 * 2 * 1024 * 1024 < m[("reassignd_broker_copy_rate_bytes_per_second", "3")] < 5 * 2 * 1024 * 1024
        assert ("reassignd_broker_bytes_remaining", "1") not in m  # only brokers gaining a replica
        t = throttles_in_force(port)
        assert t == {"topic": 1, "broker": 2}, t
        wait_for(c.reassignments_done, 60, "the move to complete", interval=0.2)
        wait_for(lambda: ("reassignd_broker_bytes_remaining", "3") not in metrics(port), 10, "the gauge cleared")
        # the controller removed them with the move (KIP-179): none in force
        wait_for(lambda: throttles_in_force(port) == {"topic": 0, "broker": 0}, 10, "no throttle in force")
