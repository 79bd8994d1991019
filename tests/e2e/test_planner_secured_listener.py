"""The planner service executing plans on a controller whose only admin listener speaks SASL_SSL
(SCRAM-SHA-512, certificates made at test time, the ACL authorizer on): ``reassignd planner
serve --command-config FILE`` reads Kafka's client properties with the loader ``kafka-reassign
--command-config`` uses (client.security.ClientSecurity) and its AdminClient logs in with them.

- Without ``--command-config`` the service's AdminClient speaks PLAINTEXT to the TLS listener:
  ``POST /remove_broker?dryrun=false`` answers with a running execution that then fails within
  seconds, its error in ``/state`` naming the protocol and ``--command-config``; the cluster is
  unchanged (no request, no move, no throttle). That service plans in-process (no Spark session).
- With it, the same request executes, the service logged in as a super user, and completes:
  broker 3 holds no replica, the controller lists no reassignment.
- ``kafka-reassign --rebalance --planner URL`` asks the service over HTTP and reads the cluster
  through its own ``--command-config``: the service's security is not involved.
- The sizes poll with that ``--command-config``: the simulated brokers register only a PLAINTEXT
  endpoint, so they are asked over PLAINTEXT as before and every replica has its size. No broker
  here has a TLS or SASL listener; the poll's secured fetch is run against the controller's
  SASL_SSL listener instead, to show it logs in with the file's settings (past the login the
  controller answers DescribeLogDirs as a node holding no replica: no sizes), that a user without
  DESCRIBE on the cluster gets the poll's error naming the refusal, not an empty answer, that a
  wrong password is refused at the login, and that the PLAINTEXT poll against that listener
  fails with a LogDirsError rather than returning nothing.
- A bad ``--command-config`` (missing file, bad protocol, SASL without a password, a TLS file
  that is not one) exits 2 before anything starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time

import pytest

from client.security import ClientSecurity
from planner_service.sizes import secured_broker_sizes
from spark_jobs.logdirs import LogDirsError, broker_sizes
from tests.e2e.processes import REPO, running_cluster, stop_process, wait_for
from tests.e2e.test_security_e2e import SERVICE_DIGEST, ZK_KEYS, add_user, opened_after, write_zk_config
from tests.planner.service_http import http
from tests.security.certs import make_pki

SIM_ARGS = ["--brokers", "4", "--topics", "orders:4:2:1MiB", "--topic-brokers", "1,2,3", "--bandwidth", "8MiB",
            "--produce-rate", "0"]
PASSWORDS = {"planner": "planner-secret", "alice": "alice-secret", "bob": "bob-secret"}  # bob: no ACL
DRAINED = 3


def client_properties(path, pki, user: str) -> str:
    """Kafka's client properties, the JAAS form (what a Java client's file holds)."""
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";\n'
        f"ssl.truststore.location={pki.ca}\nssl.endpoint.identification.algorithm=\n")
    return str(path)


@pytest.fixture
def secured(zk_hosts, tmp_path):
    pki = make_pki(tmp_path / "pki")
    # ZooKeeper secured as the authorizer requires (test_security_e2e): the service's identity.
    zk_props = write_zk_config(tmp_path)
    with opened_after(zk_hosts):
        for user, password in PASSWORDS.items():
            add_user(zk_hosts, user, password, zk_props)
        props = tmp_path / "server.properties"
        props.write_text(
            "listener.security.protocol.map=SECURE:SASL_SSL\n"
            "sasl.enabled.mechanisms=SCRAM-SHA-512\n"
            f"ssl.keystore.location={pki.server}\n"
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
            "super.users=User:planner;User:alice\n"
            "connection.failed.authentication.delay.ms=100\n"
            + ZK_KEYS
        )
        with running_cluster(zk_hosts, tmp_path, sim_args=[*SIM_ARGS, "--zk-config", str(zk_props)],
                             controller_ids=(101,), controller_config={"security_config": str(props)},
                             listen="SECURE://127.0.0.1:0", zk_auth=SERVICE_DIGEST) as c:
            yield c, pki, zk_hosts


def _holders(c) -> set[int]:
    return {b for p in c.topic("orders")["partitions"].values() for b in p}


async def _execute_without_command_config(zk_hosts: str) -> tuple[dict, dict, float]:
    """An in-process service with no --command-config (PLAINTEXT): the POST's answer, the failed
    execution from /state, and the seconds from the POST to the failure."""
    from planner_service.service import Options, PlannerService

    service = PlannerService(Options(zookeeper=zk_hosts, port=0, sizes=False, session_timeout_s=4, master=None,
                                     wave_poll_s=0.2, admin_timeout_ms=5000))
    await service.start()
    try:
        base = "http://" + service.address
        for _ in range(600):
            if (await asyncio.to_thread(http, base, "GET", "/state"))[1]["model"]["ready"]:
                break
            await asyncio.sleep(0.05)
        t0 = time.monotonic()
        status, answer = await asyncio.to_thread(http, base, "POST", f"/remove_broker?brokerid={DRAINED}&dryrun=false")
        assert status == 200, answer
        while time.monotonic() - t0 < 90:
            state = (await asyncio.to_thread(http, base, "GET", "/state"))[1]
            if state["execution"]["state"] != "running":
                return answer, state, time.monotonic() - t0
            await asyncio.sleep(0.1)
        raise AssertionError(f"the execution still runs after 90 s: {state['execution']}")
    finally:
        await service.stop()


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(240)
def test_planner_executes_on_a_sasl_ssl_listener_with_command_config(secured, tmp_path):
    c, pki, zk_hosts = secured
    # The topic as it stays: the election gives the simulator's id-less topic its Kafka 2.8+
    # topic id (a rewrite of its znode) a moment after the controller is up.
    topic = wait_for(lambda: (t := c.topic("orders")).get("topic_id") and t, 30, "orders given its topic id")
    assert DRAINED in _holders(c)

    # Without --command-config: a clear failure in /state, not a hang, and nothing changed.
    answer, state, seconds = asyncio.run(_execute_without_command_config(zk_hosts))
    assert answer["dryrun"] is False and answer["execution"]["state"] == "running", answer
    ex = state["execution"]
    assert ex["state"] == "failed" and ex["waves_done"] == 0, ex
    assert "spoke PLAINTEXT to" in ex["error"] and "--command-config FILE" in ex["error"], ex
    assert state["executions"][0]["error"] == ex["error"]
    assert state["admin"]["security_protocol"] == "PLAINTEXT"
    assert seconds < 30, seconds
    assert c.zk.exists("/admin/reassign_partitions") is None
    assert not c.zk.exists("/admin/reassignments") or c.zk.get_children("/admin/reassignments") == []
    assert c.throttle_configs() == {}
    assert c.topic("orders") == topic

    # With --command-config: the service logs in as planner (a super user) and the drain completes.
    planner_props = client_properties(tmp_path / "planner.properties", pki, "planner")
    svc = c.processes.spawn("planner", [
        "planner", "serve", "--zookeeper", zk_hosts, "--listen", "127.0.0.1:0", "--insecure-no-auth",
        "--command-config", planner_props,
        "--no-spark", "--sizes-interval", "1", "--session-timeout", "4", "--throttle", "50000000"])
    try:
        line = svc.stdout.readline()
        assert line, c.processes.log("planner").read_text()[-3000:]
        base = "http://" + json.loads(line)["listen"]
        wait_for(lambda: http(base, "GET", "/state")[1]["model"]["ready"], 30, "the service's model")
        admin = http(base, "GET", "/state")[1]["admin"]
        assert admin == {"bootstrap": None, "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                         "sasl_username": "planner"}, admin
        # Sizes: the brokers registered no SASL_SSL endpoint, so they are asked over PLAINTEXT.
        sizes = wait_for(lambda: (lambda s: s if s["last_poll_ms"] and not s["warnings"] else None)(
            http(base, "GET", "/state")[1]["model"]["sizes"]), 30, "a sizes poll without warnings")
        assert sizes["secured_brokers"] == [], sizes
        load = wait_for(lambda: (lambda rows: rows if all(r["bytes_unknown"] == 0 for r in rows) else None)(
            http(base, "GET", "/load")[1]["brokers"]), 30, "every replica's size in /load")
        assert all(r["bytes"] > 0 for r in load if r["broker"] in _holders(c)), load
        status, answer = http(base, "POST", f"/remove_broker?brokerid={DRAINED}&dryrun=false")
        assert status == 200 and answer["execution"]["state"] == "running", answer
        ex_id = answer["execution"]["id"]
        done = wait_for(lambda: (lambda e: e if e["id"] == ex_id and e["state"] != "running" else None)(
            http(base, "GET", "/state")[1]["execution"]), 120, "the executed drain")
        assert done["state"] == "done" and done["error"] is None, done
        assert done["waves_done"] == done["waves_total"] and done["partitions_done"] == done["partitions_total"] > 0
        assert DRAINED not in _holders(c)
        wait_for(c.reassignments_done, 30, "the controller to list no reassignment")
        assert c.throttle_configs() == {}  # the throttle went with the last move

        # kafka-reassign --planner: the plan over HTTP, the cluster read through its own
        # --command-config (alice's), nothing of the service's security involved.
        alice_props = client_properties(tmp_path / "alice.properties", pki, "alice")
        out = subprocess.run([sys.executable, "-m", "client.cli", "--bootstrap-server", c.listeners[101],
                              "--command-config", alice_props, "--rebalance", "--planner", base, "--output", "json"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert json.loads(out.stdout)["plan"]["fair"] is True, out.stdout
    finally:
        stop_process(svc)

    # The sizes poll's secured fetch with the planner's file: TLS and SCRAM succeed on the
    # controller's SASL_SSL listener, which answers DescribeLogDirs as a node that holds no
    # replica (controller/shell/admin/describe_log_dirs.py, since 7baf955): no sizes, no disk.
    host, port = c.listeners[101].rsplit(":", 1)
    security = ClientSecurity.from_file(planner_props)
    sizes = asyncio.run(secured_broker_sizes(host, int(port), security, timeout=20))
    assert sizes == {} and sizes.disk_bytes is None, sizes
    # Logged in but without DESCRIBE on the cluster: the refusal's code, not an empty answer.
    bob = ClientSecurity.from_file(client_properties(tmp_path / "bob.properties", pki, "bob"))
    with pytest.raises(LogDirsError, match="^SASL_SSL: DescribeLogDirs error code 31$"):
        asyncio.run(secured_broker_sizes(host, int(port), bob, timeout=20))
    with pytest.raises(LogDirsError, match="^SASL_SSL: .*SaslAuthenticationFailed"):
        asyncio.run(secured_broker_sizes(host, int(port), dataclasses.replace(security, password="wrong"), timeout=20))
    # The PLAINTEXT poll (no --command-config) cannot read a secured listener and says so.
    with pytest.raises(LogDirsError, match="^(connection failed|malformed response): "):
        asyncio.run(broker_sizes(host, int(port), timeout=20))


@pytest.mark.parametrize("text, error", [
    (None, "--command-config: cannot read"),
    ("security.protocol=SASL_TLS\n", "security.protocol must be one of"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=planner\n",
     "SASL needs a user name and password"),
    ("security.protocol=SSL\nssl.truststore.location={tmp}/not-a-ca.pem\n", "TLS files"),
])
def test_a_bad_command_config_is_a_usage_error(tmp_path, capsys, text, error):
    from reassignd import planner as cli

    path = tmp_path / "client.properties"
    if text is not None:
        (tmp_path / "not-a-ca.pem").write_text("not a certificate\n")
        path.write_text(text.format(tmp=tmp_path))
    code = cli.main(["serve", "--zookeeper", "127.0.0.1:1", "--listen", "127.0.0.1:0",
                     "--command-config", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{cli.PROG}: error: --command-config: " in err and error in err, err
