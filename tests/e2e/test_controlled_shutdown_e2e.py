"""A simulated broker's controlled shutdown (the sim's ``controlled-stop N``, sim.controlled_shutdown)
against 2 real controller processes: the broker finds the active one in ZooKeeper and sends it
ControlledShutdown over a socket (controller.shell.admin.controlled_shutdown), then stops.

- Every partition it led has another leader (leader epoch + 1) before it stops, it is out of
  every ISR with another member, its registration goes, its logs stay; once started again it is
  eligible: a preferred election (kafka-python) makes it lead again.
- A partition it alone can lead (its only other replica down) is answered as remaining on each
  of the 3 tries; the broker stops anyway, the other partitions it led moved.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py). The automatic leader
rebalance is off so that only the shutdown and the requests elect.
"""

from __future__ import annotations

import json
import socket

import pytest

from protocol.errors import ErrorCode
from tests.e2e.processes import RunningCluster, running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

CONTROLLER_IDS = (101, 102)
PARTITIONS = 6
SIM_ARGS = ["--brokers", "4", "--topics", f"orders:{PARTITIONS}:3:1KiB", "--produce-rate", "0", "--tick-ms", "50"]
NO_REBALANCE = {"auto_leader_rebalance_enable": False}
# Three tries with the sim's 0.5 s backoff, and the controller's answers: well within this.
CONTROL_TIMEOUT_S = 30


def _sim(c: RunningCluster, line: str) -> dict:
    with socket.create_connection(("127.0.0.1", c.control_port), timeout=CONTROL_TIMEOUT_S) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK "), answer
    return json.loads(answer[3:])


def _state(c: RunningCluster, topic: str, p: int) -> dict:
    return c.json(f"/brokers/topics/{topic}/partitions/{p}/state")


def _states(c: RunningCluster) -> dict[int, dict]:
    return {p: _state(c, "orders", p) for p in range(PARTITIONS)}


def _in_sync(c: RunningCluster, topic: str, p: int) -> bool:
    state = _state(c, topic, p)
    replicas = c.replicas(topic, p)
    return bool(state) and sorted(state["isr"]) == sorted(replicas) and state["leader"] in replicas


def _all_in_sync(c: RunningCluster) -> bool:
    return all(_in_sync(c, "orders", p) for p in range(PARTITIONS))


def _leads(c: RunningCluster, broker: int, topic: str, p: int) -> bool:
    replicas = sim_status(c.control_port)["brokers"][str(broker)]["replicas"]
    return any(r["topic"] == topic and r["partition"] == p and r["role"] == "leader" for r in replicas)


def _handed_over(c: RunningCluster, b: int, before: dict[int, dict]) -> None:
    """Each partition ``b`` led has another live leader at a newer epoch; ``b`` is in no ISR
    that has another member."""
    after = _states(c)
    for p, state in before.items():
        if state["leader"] == b:
            assert after[p]["leader"] not in (b, -1), (p, after[p])
            assert after[p]["leader_epoch"] > state["leader_epoch"], (p, state, after[p])
    assert all(b not in s["isr"] or s["isr"] == [b] for s in after.values()), after


def test_controlled_stop_hands_leaderships_over_then_the_broker_leads_again(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient

    admin = None
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=NO_REBALANCE) as c:
        try:
            wait_for(lambda: _all_in_sync(c), 30, "every partition fully in sync")
            before = _states(c)
            b = before[0]["leader"]
            led = [p for p, s in before.items() if s["leader"] == b]

            answer = _sim(c, f"controlled-stop {b}")
            assert answer["stopped"] == b and answer["controlled"] is True and answer["remaining"] == []
            assert 1 <= answer["tries"] <= 3
            _handed_over(c, b, before)
            assert not c.zk.exists(f"/brokers/ids/{b}")
            mine = {("orders", p) for p in range(PARTITIONS) if b in c.replicas("orders", p)}
            assert {tp for tp, hosts in c.hosted().items() if b in hosts} == mine  # logs kept

            # Started again it catches up and rejoins every ISR; a preferred election (the
            # partitions it is first replica of, orders-0 among them) makes it lead again.
            _sim(c, f"start {b}")
            wait_for(lambda: _all_in_sync(c), 30, f"broker {b} back in every ISR")
            standby = next(cid for cid in CONTROLLER_IDS if cid != c.active_controller())
            admin = KafkaAdminClient(bootstrap_servers=c.listeners[standby], client_id="kafka-python-elect",
                                     request_timeout_ms=20000)
            preferred = [p for p in range(PARTITIONS) if c.replicas("orders", p)[0] == b]
            assert 0 in preferred and set(preferred) <= set(led)
            back = _states(c)
            response = admin.elect_leaders(0, {"orders": preferred}, timeout_ms=15000, raise_errors=False)
            codes = {r.partition_id: r.error_code
                     for t in response.replica_election_results for r in t.partition_result}
            assert codes == {p: ErrorCode.NONE for p in preferred}
            for p in preferred:
                assert _state(c, "orders", p)["leader"] == b
                assert _state(c, "orders", p)["leader_epoch"] == back[p]["leader_epoch"] + 1
                wait_for(lambda p=p: _leads(c, b, "orders", p), 20, f"broker {b} to lead orders-{p}")
        finally:
            if admin is not None:
                admin.close()


def test_a_partition_only_the_broker_can_lead_is_listed_as_remaining(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient

    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS,
                         controller_config=NO_REBALANCE) as c:
        wait_for(lambda: _all_in_sync(c), 30, "every partition fully in sync")
        b = _state(c, "orders", 0)["leader"]
        other = next(x for x in c.brokers if x != b)
        # solo-0 on [b, other]; other stops: b is its only ISR member, no one else may lead it.
        creator = KafkaAdminClient(bootstrap_servers=c.listeners[c.active_controller()],
                                   client_id="kafka-python-create")
        try:
            creator.create_topics({"solo": {"assignments": {0: [b, other]}}}, timeout_ms=15000)
        finally:
            creator.close()
        wait_for(lambda: _in_sync(c, "solo", 0), 30, "solo-0 in sync")
        _sim(c, f"stop {other}")
        wait_for(lambda: _state(c, "solo", 0)["isr"] == [b] and
                 all(other not in s["isr"] for s in _states(c).values()), 30, f"broker {other} out of every ISR")
        before = _states(c)
        assert _state(c, "solo", 0)["leader"] == b

        assert _sim(c, f"controlled-stop {b}") == {"stopped": b, "controlled": False, "remaining": [["solo", 0]],
                                                   "tries": 3}
        _handed_over(c, b, before)  # orders' partitions were moved all the same
        assert not c.zk.exists(f"/brokers/ids/{b}")
        # Its broker gone, solo-0 has no leader and keeps its last ISR (no unclean election).
        wait_for(lambda: _state(c, "solo", 0)["leader"] == -1, 20, "solo-0 without a leader")
        assert _state(c, "solo", 0)["isr"] == [b]
