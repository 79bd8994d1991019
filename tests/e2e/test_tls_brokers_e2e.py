"""Brokers reachable only over TLS (Kafka's SSL inter-broker listener): the simulated brokers
listen with TLS alone (``reassignd sim --ssl-keystore``, listener SSL), and the controllers,
``broker_listener = "SSL"`` with the CA in their security file, send every LeaderAndIsr,
UpdateMetadata and StopReplica over TLS (controller.shell.security.inter_broker); a reassignment
completes. A controller whose file does not trust the brokers' CA reaches none of them: its
moves do not start copying, and its log says why.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes (tests/e2e/processes.py), certificates made with
openssl (tests/security/certs.py).
"""

from __future__ import annotations

import pytest

from tests.e2e.processes import running_cluster, wait_for
from tests.security.certs import make_pki

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(150)]

PARTITIONS = 4


def _sim_args(pki) -> list[str]:
    return ["--brokers", "4", "--topics", f"orders:{PARTITIONS}:2:1KiB", "--produce-rate", "0", "--tick-ms", "50",
            "--ssl-keystore", str(pki.server)]


def _targets(c) -> dict[tuple[str, int], list[int]]:
    parts = {int(p): r for p, r in c.topic("orders")["partitions"].items()}
    return {("orders", p): [b for b in (1, 2, 3, 4) if b not in r][:2] for p, r in parts.items()}


def test_a_reassignment_completes_with_brokers_reachable_only_over_tls(zk_hosts, tmp_path):
    pki = make_pki(tmp_path / "pki")
    props = tmp_path / "security.properties"
    props.write_text(f"ssl.truststore.location={pki.ca}\n")  # SSL is a protocol's name: it speaks SSL
    config = {"broker_listener": "SSL", "security_config": str(props)}
    with running_cluster(zk_hosts, tmp_path, sim_args=_sim_args(pki), controller_ids=(101, 102),
                         controller_config=config) as c:
        registration = c.json("/brokers/ids/1")
        assert registration["listener_security_protocol_map"] == {"SSL": "SSL"} and registration["port"] == -1
        targets = _targets(c)
        c.submit(targets)
        wait_for(lambda: c.reassignments_done() and all(c.replicas(*tp) == t for tp, t in targets.items()) or None,
                 60, "every partition moved over TLS-only brokers")
        for (_, p), target in targets.items():
            state = c.json(f"/brokers/topics/orders/partitions/{p}/state")
            assert sorted(state["isr"]) == sorted(target) and state["leader"] in target, (p, state)
        assert {b for tp in targets for b in c.hosted()[tp]} == {b for t in targets.values() for b in t}


def test_a_controller_that_does_not_trust_the_brokers_reaches_none_and_says_why(zk_hosts, tmp_path):
    pki = make_pki(tmp_path / "pki")
    props = tmp_path / "security.properties"
    props.write_text(f"ssl.truststore.location={pki.root / 'rogue-ca.pem'}\n")
    config = {"broker_listener": "SSL", "security_config": str(props)}
    with running_cluster(zk_hosts, tmp_path, sim_args=_sim_args(pki), controller_ids=(101,),
                         controller_config=config) as c:
        targets = _targets(c)
        before = {tp: set(c.replicas(*tp)) for tp in targets}
        c.submit(targets)
        log = c.controller_log(101)
        wait_for(lambda: "CERTIFICATE_VERIFY_FAILED" in log.read_text() or None, 30, "the TLS refusal logged")
        # Nothing reached a broker: no replica was created anywhere, none removed.
        assert {tp: c.hosted()[tp] for tp in targets} == before
