"""docker/: the compose file, the Dockerfile and the Kubernetes example, checked against the
project's own parsers; then every reassignd service of compose.yaml run as a plain process with
the environment the image and the compose file give it (no Docker daemon on build machines).

The run (real ZooKeeper from the session fixture, ``python -m reassignd`` processes): the
simulated brokers and three controllers come up; /healthz and /readyz answer 200 on each; a
reassignment submitted through the admin API (AlterPartitionReassignments) completes and the
active controller's /metrics (parsed with prometheus_client.parser) counts it by its door; every log line
is JSON, the request is in the audit log; SIGTERM on the active controller hands over to a
standby by resigning (``planned_handover_seconds``): well within the session timeout, which is
when a standby would have taken over had the instance just died.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

import protocol
from controller.shell.options import load_settings, parse_args
from reassignd.cli import SUBCOMMANDS
from reassignd.sim import parse_args as sim_parse_args
from tests import figures
from tests.e2e.processes import LOG_TAIL_CHARS, STARTUP_TIMEOUT_S, kazoo_client, stop_process, wait_for
from znodes.launcher import free_port

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
IMAGE = "reassignd:dev"
ZK_HOSTS_IN_COMPOSE = "zk1:2181,zk2:2181,zk3:2181"
# A resignation's handover must beat half the session timeout of docker/controller.toml (a
# dead instance's successor waits the whole timeout): a margin of seconds that a loaded
# machine keeps, where the old 1.0 s did not. The figure itself is printed and recorded.
HANDOVER_LIMIT_S = tomllib.loads((DOCKER / "controller.toml").read_text())["zk_session_timeout_s"] / 2


def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def ours(services: dict) -> dict:
    return {name: s for name, s in services.items() if s.get("image") == IMAGE}


def image_env() -> dict[str, str]:
    """The ENV of the Dockerfile's controller stage (the environment every container starts with)."""
    text = (DOCKER / "Dockerfile").read_text().replace("\\\n", " ")
    stage = text.split("AS controller", 1)[1]
    env = {}
    for line in stage.splitlines():
        if line.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return env


def volume_file(service: dict, container_path: str) -> Path:
    for volume in service.get("volumes", []):
        src, dst = volume.split(":")[:2]
        if dst == container_path:
            return (DOCKER / src).resolve()
    raise AssertionError(f"{container_path} is not mounted")


def container_ports(service: dict) -> set[int]:
    return {int(p.split(":")[-1]) for p in service.get("ports", [])}


# ---- static checks ----------------------------------------------------------------------------


def test_every_reassignd_service_parses_with_the_project_cli():
    services = compose()["services"]
    mine = ours(services)
    assert set(mine) == {"brokers", "controller-1", "controller-2", "controller-3"}
    controllers = {}
    for name, s in mine.items():
        assert s["build"]["target"] == "controller" and s["build"]["dockerfile"] == "docker/Dockerfile"
        sub, *rest = s["command"]
        assert sub in SUBCOMMANDS, name
        if sub == "sim":
            args = sim_parse_args(rest)
            assert args.host == s["hostname"] and args.zookeeper.startswith(ZK_HOSTS_IN_COMPOSE)
            continue
        # the config path inside the container is the mounted file here
        args = parse_args(rest)
        args.config = str(volume_file(s, args.config))
        settings = load_settings(args, {**image_env(), **s["environment"]}).settings
        assert settings.zookeeper.startswith(ZK_HOSTS_IN_COMPOSE)
        assert {settings.listen_address[1], settings.ops_address[1]} <= container_ports(s)
        assert settings.advertised_listen == f"{s['hostname']}:{settings.listen_address[1]}"
        assert settings.log_format == "json"
        assert set(s["depends_on"]) == {"zk1", "zk2", "zk3"}
        controllers[name] = settings
    assert len({c.id for c in controllers.values()}) == 3
    # host ports do not collide
    host_ports = [p.split(":")[0] for s in services.values() for p in s.get("ports", [])]
    assert len(host_ports) == len(set(host_ports))
    # Prometheus scrapes every controller's operations port, by its compose host name
    prom = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    targets = {t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    assert targets == {f"{services[n]['hostname']}:{c.ops_address[1]}" for n, c in controllers.items()}
    assert volume_file(services["prometheus"], "/etc/prometheus/prometheus.yml") == DOCKER / "prometheus.yml"
    # a three-server ensemble, each server knowing the others
    for i in (1, 2, 3):
        env = services[f"zk{i}"]["environment"]
        assert env["ZOO_MY_ID"] == str(i) and env["ZOO_SERVERS"].count("server.") == 3


def test_the_dockerfile_keeps_the_controller_image_free_of_java_and_spark():
    text = (DOCKER / "Dockerfile").read_text()
    stages = dict(re.findall(r"^FROM \S+ AS (\w+)\n(.*?)(?=^FROM |\Z)", text, re.S | re.M))
    assert set(stages) == {"build", "base", "planner", "controller"}
    assert "openjdk" not in stages["controller"] and "pyspark" not in stages["controller"].lower()
    assert "--no-deps" in stages["controller"] and "requirements-controller.txt" in stages["controller"]
    assert "openjdk-17-jre-headless" in stages["planner"]
    for stage in ("planner", "controller"):
        assert "USER reassignd" in stages[stage]
    assert 'ENTRYPOINT ["reassignd"]' in stages["controller"]
    assert "HEALTHCHECK" in stages["controller"] and "/readyz" in stages["controller"]
    # its dependencies are pyproject's, minus Spark and NumPy, and enough for controller and sim
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = [line.strip() for line in (DOCKER / "requirements-controller.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert set(wanted) <= set(pyproject)
    names = {re.split(r"[<>=]", w)[0] for w in wanted}
    assert not names & {"pyspark", "numpy"}
    code = ("import sys, importlib.metadata as md; import controller.shell.daemon, reassignd.sim, sim.server, reassignd.cli;"
            "tops = {m.split('.')[0] for m in sys.modules};"
            "owners = md.packages_distributions();"  # a scan of every installed distribution: once
            "dists = {d for top in tops for d in owners.get(top, [])};"
            "print(' '.join(sorted(dists)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180, check=True)
    used = {d.lower().replace("_", "-") for d in out.stdout.split()} - {"reassignd"}
    # their own dependencies (pip installs those with them), and what the python image ships
    # (setuptools' start-up hook)
    assert used <= _with_dependencies(names) | {"six", "setuptools", "pip"}, used


def _with_dependencies(names: set[str]) -> set[str]:
    """``names`` and everything they require, transitively, as installed here (extras left out)."""
    from importlib import metadata

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    seen, todo = set(), [norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [norm(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in requires if "extra ==" not in r]
    return seen


def test_the_build_stage_copies_every_package_pyproject_installs():
    """Both images install the wheel the build stage makes from what it copied: a package
    pyproject.toml includes but the Dockerfile leaves out (planner_service, say) would be missing
    from the images while every test run from the repository still passes."""
    text = (DOCKER / "Dockerfile").read_text()
    build = dict(re.findall(r"^FROM \S+ AS (\w+)\n(.*?)(?=^FROM |\Z)", text, re.S | re.M))["build"]
    copied = set(re.findall(r"^COPY (\w+) \./(\w+)$", build, re.M))
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.rstrip("*") for pattern in find["include"]}
    assert {(p, p) for p in packages} == copied
    for package in packages:
        assert (REPO / package / "__init__.py").is_file(), package
    # every `reassignd` subcommand (`planner serve` included) and each library it imports (at the
    # top or when it runs) live in installed packages
    for command, _ in SUBCOMMANDS.values():
        module = sys.modules[command.__module__]
        assert module.__name__.split(".")[0] in packages, module.__name__
        for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.split(".")[0]
                assert top in packages or top in sys.stdlib_module_names or top == "__future__", (module.__name__, top)


def test_the_kubernetes_sidecar_example():
    docs = list(yaml.safe_load_all((DOCKER / "k8s" / "sidecar.yaml").read_text()))
    kinds = {d["kind"]: d for d in docs}
    assert {"ConfigMap", "Pod"} <= set(kinds)
    pod = kinds["Pod"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"broker", "reassignd"}
    side = containers["reassignd"]
    assert side["image"] == IMAGE.replace(":dev", ":0.1.0") or side["image"].startswith("reassignd")
    # what the kubelet does: fieldRef values (an address here), then $(VAR) references expanded
    env = {e["name"]: "10.1.2.3" for e in side.get("env", []) if "valueFrom" in e}
    for e in side.get("env", []):
        if "value" in e:
            env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], e["value"])
    config = kinds["ConfigMap"]["data"]["controller.toml"]
    mount = next(m for m in side["volumeMounts"] if m["name"] == "reassignd-config")
    args = parse_args(side["args"][1:])
    assert side["args"][0] == "controller" and args.config == f"{mount['mountPath']}/controller.toml"
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"k8s-{os.getpid()}.toml"
    tmp.write_text(config)
    try:
        args.config = str(tmp)
        settings = load_settings(args, {**image_env(), **env}).settings
    finally:
        tmp.unlink()
    assert settings.advertised_listen == "10.1.2.3:9190" and settings.zookeeper.endswith("/kafka")
    ops_port = settings.ops_address[1]
    assert side["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": ops_port}
    assert side["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": ops_port}
    assert {p["containerPort"] for p in side["ports"]} == {settings.listen_address[1], ops_port}
    assert side["resources"]["limits"]["memory"] and side["resources"]["limits"]["cpu"]
    assert side["securityContext"]["runAsNonRoot"] is True
    assert kinds["Pod"]["metadata"]["annotations"]["prometheus.io/port"] == str(ops_port)


def test_the_grafana_dashboard_uses_metrics_the_controller_exports():
    from controller.shell.metrics import Metrics
    from controller.shell.role import Role

    dash = json.loads((DOCKER / "grafana" / "reassignd-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs
    metrics = Metrics()
    metrics.watch(role=Role(1), listener=None)
    exported = set()
    for family in text_string_to_metric_families(metrics.scrape().decode()):
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}.get(family.type, ("",))
        exported |= {family.name + suffix for suffix in suffixes}  # labelled families may have no sample yet
    exported |= {"reassignd_broker_move_slots_in_use", "reassignd_broker_move_slots",
                 "reassignd_admin_connections_open", "reassignd_admin_connections_refused_total"}  # need a state/listener
    for expr in exprs:
        for name in re.findall(r"\breassignd_\w+", expr):
            assert name in exported, (name, expr)


# ---- the services as processes ----------------------------------------------------------------


def http(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def scrape(port: int) -> dict:
    out = {}
    for family in text_string_to_metric_families(http(port, "/metrics")[1]):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def admin_call(port: int, api_key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(protocol.encode_request(api_key, version, 1, "compose-test", body))
        head = s.recv(4, socket.MSG_WAITALL)
        (size,) = struct.unpack(">i", head)
        frame = head + s.recv(size, socket.MSG_WAITALL)
    return protocol.decode_response(api_key, version, frame)[1]


class Service:
    def __init__(self, name: str, argv: list[str], env: dict, log: Path, ports: dict):
        self.name, self.argv, self.env, self.log, self.ports = name, argv, env, log, ports
        with open(log, "wb") as f:
            self.proc = subprocess.Popen([sys.executable, "-m", "reassignd", *argv], cwd=REPO, env=env,
                                         stdout=subprocess.PIPE, stderr=f)

    def tail(self) -> str:
        return self.log.read_text()[-LOG_TAIL_CHARS:]


def localize(services: dict, zk_hosts: str, workdir: Path) -> dict[str, tuple[list[str], dict, dict]]:
    """Each reassignd service's argv and environment as compose gives them, with only the
    addresses made local: ZooKeeper hosts -> the test's, 0.0.0.0:PORT and HOSTNAME:PORT -> free
    local ports, mounted files -> the repository's."""
    out = {}
    for name, s in ours(services).items():
        argv = list(s["command"])
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), **image_env(), **s.get("environment", {})}
        ports = {}
        if argv[0] == "controller":
            for port in (9190, 9191):
                ports[port] = free_port()
            for key, value in list(env.items()):
                value = value.replace(ZK_HOSTS_IN_COMPOSE, zk_hosts)
                for port, local in ports.items():
                    value = value.replace(f"0.0.0.0:{port}", f"127.0.0.1:{local}").replace(f"{s['hostname']}:{port}", f"127.0.0.1:{local}")
                env[key] = value
            i = argv.index("--config")
            argv[i + 1] = str(volume_file(s, argv[i + 1]))
        else:
            argv = [a.replace(ZK_HOSTS_IN_COMPOSE, zk_hosts) for a in argv]
            argv[argv.index("--host") + 1] = "127.0.0.1"
            for flag in ("--base-port", "--control-port"):
                argv[argv.index(flag) + 1] = "0"
            argv += ["--produce-rate", "0"]  # a still cluster: completion is quick and certain
        out[name] = (argv, env, ports)
    return out


@pytest.mark.e2e
@pytest.mark.zk
@pytest.mark.timeout(180)
def test_compose_services_run_as_processes(zk_hosts, tmp_path):
    services = compose()["services"]
    plan = localize(services, zk_hosts, tmp_path)
    running: dict[str, Service] = {}
    try:
        argv, env, _ = plan["brokers"]
        brokers = running["brokers"] = Service("brokers", argv, env, tmp_path / "brokers.log", {})
        line = brokers.proc.stdout.readline()
        assert line, brokers.tail()
        ready = json.loads(line)
        for name in ("controller-1", "controller-2", "controller-3"):
            argv, env, ports = plan[name]
            running[name] = Service(name, argv, env, tmp_path / f"{name}.log", ports)
        ops = {int(plan[n][1]["REASSIGND_ID"]): running[n].ports[9191] for n in running if n != "brokers"}
        admin = {int(plan[n][1]["REASSIGND_ID"]): running[n].ports[9190] for n in running if n != "brokers"}
        names = {int(plan[n][1]["REASSIGND_ID"]): n for n in running if n != "brokers"}

        def all_ready():
            for cid, port in ops.items():
                if running[names[cid]].proc.poll() is not None:
                    raise AssertionError(f"{names[cid]} exited: {running[names[cid]].tail()}")
                if http(port, "/readyz")[0] != 200:
                    return False
            return True

        wait_for(all_ready, STARTUP_TIMEOUT_S, "every controller ready")
        for port in ops.values():
            assert http(port, "/healthz")[0] == 200
        with kazoo_client(zk_hosts + "/kafka") as zk:
            active = json.loads(zk.get("/controller")[0])["brokerid"]
            epoch = int(zk.get("/controller_epoch")[0])
            # registered with the advertised address
            doc = json.loads(zk.get(f"/reassignd/controllers/{active}")[0])
            assert (doc["host"], doc["port"]) == ("127.0.0.1", admin[active])
            # a reassignment through the admin API: 4 partitions of orders onto new replica sets
            current = {int(p): r for p, r in ready["topics"]["orders"].items()}
            n_brokers = len(ready["brokers"])
            moves = {}
            for p in range(4):
                spare = [b for b in range(1, n_brokers + 1) if b not in current[p]]
                moves[p] = [spare[0], *current[p][1:]]
            answer = admin_call(admin[active], 45, 0, {"timeout_ms": 10000, "topics": [
                {"name": "orders", "partitions": [{"partition_index": p, "replicas": r} for p, r in moves.items()]}]})
            assert answer["error_code"] == 0, answer
            assert all(p["error_code"] == 0 for p in answer["responses"][0]["partitions"]), answer
            wait_for(lambda: zk.exists("/admin/reassign_partitions") is None
                     and not zk.get_children("/admin/reassignments"), 60, "the reassignment to complete", interval=0.2)
            topic = json.loads(zk.get("/brokers/topics/orders")[0])
            assert {p: topic["partitions"][str(p)] for p in moves} == moves

            # /metrics of the active controller counts what happened
            def completed():
                m = scrape(ops[active])
                key = ("reassignd_reassignments_total", (("door", "AlterPartitionReassignments"), ("outcome", "completed")))
                return m if m.get(key) == 4 else None

            m = wait_for(completed, 10, "4 completions in /metrics")
            assert m[("reassignd_controller_active", ())] == 1 and m[("reassignd_controller_epoch", ())] == epoch
            assert m[("reassignd_admin_requests_total", (("api_key", "45"), ("api_version", "0"), ("error_code", "0")))] == 1
            for gauge in ("reassignd_reassignments_running", "reassignd_reassignments_pending"):
                assert not any(v for (name, _), v in m.items() if name == gauge), gauge
            assert m[("reassignd_reassignments_pending", (("door", "znode"),))] == 0  # by door
            assert m[("reassignd_zookeeper_request_duration_seconds_count", (("op", "fenced_multi"),))] >= 2
            assert m[("reassignd_fence_failures_total", ())] == 0
            assert m[("reassignd_zookeeper_multi_ops_count", ())] >= 2
            for b in range(1, n_brokers + 1):
                assert m[("reassignd_broker_move_slots_in_use", (("broker", str(b)), ("direction", "incoming")))] == 0
            for cid in ops:
                if cid != active:
                    s = scrape(ops[cid])
                    assert s[("reassignd_controller_active", ())] == 0 and s[("reassignd_elections_total", ())] == 0

            # SIGTERM on the active controller: a standby holds /controller long before the session would expire
            proc = running[names[active]].proc
            began = time.monotonic()
            proc.send_signal(signal.SIGTERM)

            def new_holder():
                try:
                    holder = json.loads(zk.get("/controller")[0])["brokerid"]
                except Exception:
                    return None
                return holder if holder != active else None

            successor = wait_for(new_holder, 10, "a standby to take over", interval=0.005)
            handover = time.monotonic() - began
            assert proc.wait(10) == 0
            print(f"planned_handover_seconds={handover:.3f}")
            figures.record("sidecar", planned_handover_seconds=round(handover, 3))
            assert handover <= HANDOVER_LIMIT_S, handover
            assert int(zk.get("/controller_epoch")[0]) == epoch + 1
            wait_for(lambda: http(ops[successor], "/readyz")[0] == 200, 20, "the successor ready")

        # every log line of every controller is one JSON object
        for cid, name in names.items():
            lines = running[name].log.read_text().splitlines()
            assert lines
            records = [json.loads(line) for line in lines]
            for r in records:
                assert {"time", "level", "logger", "message", "controller_id"} <= set(r) and r["controller_id"] == cid
            if cid == active:
                audits = [r for r in records if r.get("audit") == "admin"]
                assert len(audits) == 1, audits
                a = audits[0]
                assert a["api"] == "AlterPartitionReassignments" and a["client"].startswith("127.0.0.1:")
                assert sorted(a["partitions"]) == [f"orders-{p}" for p in range(4)] and a["outcome"] == {"NONE": 4}
                assert a["epoch"] == epoch and a["logger"] == "reassignd.audit"
                assert any("resigned" in r["message"] for r in records)
        m = scrape(ops[successor])
        assert m[("reassignd_controller_active", ())] == 1 and m[("reassignd_elections_total", ())] == 1
    finally:
        for s in reversed(list(running.values())):
            stop_process(s.proc)
