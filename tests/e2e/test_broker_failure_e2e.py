"""The controller's election after a broker failure (controller.core.broker_failure) on a real
ZooKeeper with simulated brokers (`reassignd sim`) and real controller processes: a broker that
leads partitions is killed and stays dead. The partition state znodes then show a new leader
from the ISR with leader epoch + 1 and the ISR without the dead broker (also where it only
followed), written by the active controller (its controller epoch); a broker that died
while no controller was active is handled by the next controller at its election; and one
restarted while none was active leads and follows as the states say once the next is elected.
"""

from __future__ import annotations

import socket

import pytest

from tests.e2e.processes import RunningCluster, controller_name, running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

# Topic "orders" on brokers 1-4 only, so the victim leads some partitions and follows in others.
SIM = ["--brokers", "5", "--topics", "orders:8:3:64KiB", "logs:2:1:64KiB", "--topic-brokers", "1,2,3,4",
       "--bandwidth", "4MiB", "--produce-rate", "0"]


def _sim(c: RunningCluster, line: str) -> None:
    with socket.create_connection(("127.0.0.1", c.control_port), timeout=10) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as f:
            answer = f.readline().decode()
    assert answer.startswith("OK"), answer


def _states(c: RunningCluster) -> dict[tuple[str, int], dict]:
    out = {}
    for topic in ("orders", "logs"):
        for p in c.zk.get_children(f"/brokers/topics/{topic}/partitions"):
            out[(topic, int(p))] = c.json(f"/brokers/topics/{topic}/partitions/{p}/state")
    return out


def _settled(c: RunningCluster) -> dict:
    """States once every replica is in its ISR (the sim's brokers have caught up)."""
    def full():
        states = _states(c)
        topics = {t: c.topic(t)["partitions"] for t in ("orders", "logs")}
        ok = all(s and sorted(s["isr"]) == sorted(topics[t][str(p)]) for (t, p), s in states.items())
        return states if ok else None
    return wait_for(full, 60, "every replica in its ISR")


def _check_after(before: dict, after: dict, victim: int, controller_epoch: int) -> None:
    led = [tp for tp, s in before.items() if s["leader"] == victim]
    followed = [tp for tp, s in before.items() if victim in s["isr"] and s["leader"] != victim]
    assert led and followed, (led, followed)
    for tp in led:
        b, a = before[tp], after[tp]
        if tp[0] == "logs":  # replication factor 1 (rf 1 on the victim): nothing in sync lives
            assert a["leader"] == -1 and a["isr"] == [victim], (tp, a)
        else:
            assert a["leader"] != victim and a["leader"] in b["isr"], (tp, b, a)
            assert a["isr"] == [x for x in b["isr"] if x != victim], (tp, b, a)
        assert a["leader_epoch"] == b["leader_epoch"] + 1 and a["controller_epoch"] == controller_epoch, (tp, b, a)
    for tp in followed:
        b, a = before[tp], after[tp]
        assert a["leader"] == b["leader"] and victim not in a["isr"], (tp, b, a)
        assert a["leader_epoch"] == b["leader_epoch"] + 1, (tp, b, a)


def _victim(before: dict) -> int:
    """A broker that leads an orders partition and a logs one (rf 1, so it goes leaderless)."""
    logs = {s["leader"] for (t, _), s in before.items() if t == "logs"}
    orders = {s["leader"] for (t, _), s in before.items() if t == "orders"}
    return min(logs & orders)


def _wait_after(c: RunningCluster, before: dict, victim: int) -> dict:
    def done():
        states = _states(c)
        return states if all(
            s["leader"] != victim and victim not in s["isr"] for tp, s in states.items() if tp[0] == "orders"
        ) and all(s["leader"] == -1 for tp, s in states.items() if tp[0] == "logs" and before[tp]["leader"] == victim) else None
    return wait_for(done, 30, f"leaders and ISRs without broker {victim}")


def test_a_dead_leader_is_replaced_from_the_isr_and_leaves_every_isr(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,)) as c:
        before = _settled(c)
        victim = _victim(before)
        _sim(c, f"stop {victim}")
        after = _wait_after(c, before, victim)
        _check_after(before, after, victim, c.json("/controller_epoch"))
        # it stays dead: nothing flaps (no further write moves any of these states)
        wait_for(lambda: _states(c) == after or None, 5, "stable states")


def test_a_broker_that_died_without_a_controller_is_handled_at_the_next_election(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,)) as c:
        before = _settled(c)
        victim = _victim(before)
        c.kill_controller(101)
        wait_for(lambda: c.zk.exists("/controller") is None, 20, "no active controller")
        _sim(c, f"stop {victim}")
        wait_for(lambda: not c.zk.exists(f"/brokers/ids/{victim}"), 10, f"broker {victim} unregistered")
        assert _states(c) == before  # nobody acted meanwhile
        c.processes.start_controller(zk_hosts, 102, tmp_path / "controller.toml")
        wait_for(lambda: (c.json("/controller") or {}).get("brokerid") == 102, 30, "controller 102 active")
        after = _wait_after(c, before, victim)
        _check_after(before, after, victim, c.json("/controller_epoch"))
        assert controller_name(102) in c.processes.running


def test_a_broker_restarted_while_no_controller_is_active_takes_its_roles_at_the_next_election(zk_hosts, tmp_path):
    # The sidecar's pod restart: the broker comes back (remembering no role) and registers
    # before the next controller is elected, so only the election's LeaderAndIsr to every live
    # replica (engine step 8b, Kafka's replicaStateMachine.startup) tells it to lead or follow.
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,)) as c:
        before = _settled(c)
        victim = min(s["leader"] for (t, _), s in before.items() if t == "orders")
        c.kill_controller(101)
        wait_for(lambda: c.zk.exists("/controller") is None, 20, "no active controller")
        registered = c.zk.exists(f"/brokers/ids/{victim}").czxid
        _sim(c, f"restart {victim}")
        wait_for(lambda: (st := c.zk.exists(f"/brokers/ids/{victim}")) is not None and st.czxid != registered or None,
                 10, f"broker {victim} registered again")
        replicas = sim_status(c.control_port)["brokers"][str(victim)]["replicas"]
        assert replicas and {r["role"] for r in replicas} == {"none"}, replicas
        c.processes.start_controller(zk_hosts, 102, tmp_path / "controller.toml")
        wait_for(lambda: (c.json("/controller") or {}).get("brokerid") == 102, 30, "controller 102 active")

        def roles_taken():
            states = _states(c)
            got = {(r["topic"], r["partition"]): r["role"]
                   for r in sim_status(c.control_port)["brokers"][str(victim)]["replicas"]}
            want = {tp: "leader" if states[tp]["leader"] == victim else "follower" for tp in got}
            return got if got == want and all(victim in states[tp]["isr"] for tp in got) else None

        roles = wait_for(roles_taken, 30, f"broker {victim} leading and following as the states say")
        assert {"leader", "follower"} <= set(roles.values()), roles
        # The other replicas refused the resends (they hold those epochs): expected, not logged.
        assert "LeaderAndIsr to broker" not in c.controller_log(102).read_text()
