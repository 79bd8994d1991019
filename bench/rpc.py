"""Benchmark: the admin listener of a running ``reassignd controller``, over TCP.

Set-up, all real: a local ZooKeeper (znodes.launcher, Debian's server, fsync on as in
production), a Kafka-layout cluster written into it (``--brokers`` registered brokers, 10
topics of ``--partitions``/10 partitions each, RF 3, partition states), and one
``python -m reassignd controller`` subprocess elected on it. The registered brokers are
simulated by their znodes only: no process answers on their ports, so a started move never
completes (the controller's LeaderAndIsr sends fail and are retried), which is what keeps
reassignments running while they are listed. Nothing here needs brokers to copy data.

1. ``reassign_10k_p99_ms``: ReassignPartitions (10000, KIP-179, v0) moving every partition
   (10,000 by default: each replica shifted by 3 brokers) with a throttle and auto-removal,
   request sent to answer read, ``--repeats`` times. Each request meets a cluster where
   nothing moves, as KIP-179's v0 requires: between two, the controller is stopped, the
   cluster put back as it was and a fresh controller elected, loaded and past its start-up
   work (the full UpdateMetadata to every broker; all untimed). The
   controller validates and writes the KIP's steps (removal znodes, throttle configs,
   ``/admin/reassign_partitions``) before answering.
   Peer: the same reassignment submitted the way ``kafka-reassign-partitions.sh
   --zookeeper`` did before KIP-179 - read the brokers and topics, validate, write each
   throttle config with its change notification, then ``/admin/reassign_partitions`` - with
   this project's own ``--zookeeper`` backend (client.zk_backend) on an identical cluster
   under another chroot (the znode is deleted, untimed, between repeats). Ratio: peer p99 /
   ours.
2. ``list_requests_per_second_cached``: ListPartitionReassignments (46, topics null, what Kafka
   admin clients send) from ``--clients`` connections, each sending its next request when the
   previous answer arrived, for ``--seconds`` seconds, while the reassignments of part 1 run
   (the controller's running set, its ``max_cluster_moves`` of 1,000 partitions, is the answer:
   per-broker caps are raised for that).
   Clients run in two processes and only frame answers (size, correlation id) so they cost
   the server's two cores as little as possible.
   Peer: the same answer served by a server on kafka-python's protocol stack (its generated
   message classes decode each request and encode each response from the same in-memory
   data, as a broker builds it per request), same clients, same duration. Ratio: ours / peer.
   Here NOTHING MOVES (no broker process runs), so the controller's encoded answer is never
   invalidated and every request is served from that cache: the figure is
   ``list_requests_per_second_cached``, an upper bound, not what a cluster with moves completing
   sees.

2b. ``list_requests_per_second_while_moving``: the same load on a second cluster
   (``--moving-partitions`` partitions in 10 topics of 1 to 10 MiB partitions on 12 simulated brokers, ``reassignd sim``, over real
   sockets) where every partition is moved and the simulated brokers copy the replicas, so moves
   complete throughout the window; each completion changes the controller's state and the next
   request rebuilds and encodes the answer, as in production. The moves completed during the
   window are reported (``list_moves_completed_while_measured``; none fails the run). The peer's
   figure is the same kafka-python server as in part 2.

3. ``reassign_10k_p99_ms_sasl_ssl``: part 1's request over a SASL_SSL listener of the same
   controller (a second ``--listen SECURE://...``, TLS 1.2+ with a certificate made by
   ``openssl`` at start, SCRAM-SHA-512 with the user's credential in ``/config/users``;
   docs/DESIGN.md section 8), ``--secure-repeats`` times. The TLS handshake and the SCRAM
   exchange happen on the connection before the clock starts, as the connect does in part 1:
   what is timed is the request over an authenticated TLS connection. No authorizer.

4. ``create_topics_per_second``: CreateTopics (19, v7; KIP-4, issue 14) of ``--create-topics``
   (1,000) topics of 12 partitions, RF 3, automatic placement, one topic per request with
   ``timeout_ms`` > 0 (each answered once its partitions have leaders and their metadata went
   out: the controller wrote the topic znode, its 12 partition states, and sent LeaderAndIsr and
   UpdateMetadata), from ``--create-clients`` connections at once, on the controller of part 2
   (its moves still running). ``create_10k_partitions_seconds``: one CreateTopics request of one
   topic of 10,000 partitions, RF 3, request sent to answer read (same meaning of the answer).
   No peer: Kafka's own controller is not run here.

``--profile-controller FILE`` runs the controllers under cProfile and writes the last one's
stats to FILE when it stops (``python -m pstats FILE``): how part 4's costs were found.

Figures (printed last, one per line, and recorded in bench/results.json): ``reassign_10k_p99_ms``, ``reassign_10k_p99_ms_sasl_ssl``,
``list_requests_per_second_cached``, ``list_requests_per_second_while_moving``, ``create_topics_per_second``, ``create_10k_partitions_seconds``, ``reassign_p99_ratio_vs_zookeeper_tool``,
``reassign_p99_ratio_sasl_ssl_vs_plaintext`` (part 3's p99 / part 1's: what TLS and an
authenticated session cost the request), ``list_rps_cached_ratio_vs_kafka_python``,
``list_rps_while_moving_ratio_vs_kafka_python``. Targets: reassign_10k_p99_ms <= 500,
list_requests_per_second_while_moving >= 2000.

    .venv/bin/python bench/rpc.py [--partitions 10000] [--repeats 30] [--secure-repeats 10] [--clients 50] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import protocol  # noqa: E402
from protocol.connection import FrameConnection  # noqa: E402
from protocol_aio import ClientConnection, serve_frames  # noqa: E402
from controller.core.config import to_toml  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402
from znodes.launcher import LocalZooKeeper  # noqa: E402

from bench import results  # noqa: E402

TOPICS = 10
RF = 3
CONTROLLER_ID = 101
# A new controller's start-up work (full UpdateMetadata, send retries) is over by then.
STARTUP_SETTLE_S = 2.5
CHROOT, PEER_CHROOT = "/bench", "/peer"
THROTTLE = 50_000_000  # bytes/s, as an operator would set for a large move
LOAD_PROCESSES = 2  # one per core: a single Python client process would be the bottleneck
KAZOO_TXN_OPS = 500  # ops per kazoo transaction while populating (well under ZooKeeper's 1 MiB)
MOVING_CHROOT = "/moving"  # part 2b's cluster: simulated brokers, so moves complete
# Part 2b's partition sizes: MOVING_TOPICS topics of 1, 2, ... MiB. The running moves share each
# broker's bandwidth (100 MiB/s in the sim), so equal sizes would all complete in one burst;
# spread sizes make completions, and so rebuilt answers, come all through the window.
MOVING_TOPICS = 10
MOVING_BROKERS = 12
SECURE_USER, SECURE_PASSWORD = "bench", "bench-secret"
secure_addr: tuple[str, int] | None = None  # the SASL_SSL listener of the running controller
profile_to: Path | None = None  # --profile-controller: the last controller started runs under cProfile


def make_security(tmp: Path, hosts: str) -> tuple[Path, object]:
    """Part 3's set-up: a CA and server certificate (openssl), the SCRAM user in ZooKeeper, the
    controller's security config; returns it and the client's TLS context."""
    import ssl

    from controller.shell.security.scram import format_credential, make_credential

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True, timeout=60)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=bench-ca", "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", *ec, "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr")
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "server.crt", "-extfile", "san.ext")
    (tmp / "server.pem").write_text((tmp / "server.crt").read_text() + (tmp / "server.key").read_text())
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        credential = format_credential(make_credential("SCRAM-SHA-512", SECURE_PASSWORD))
        zk.create(f"/config/users/{SECURE_USER}", dumps({"version": 1, "config": {"SCRAM-SHA-512": credential}}),
                  makepath=True)
    finally:
        zk.stop()
        zk.close()
    props = tmp / "security.properties"
    props.write_text(f"listener.security.protocol.map=SECURE:SASL_SSL\nsasl.enabled.mechanisms=SCRAM-SHA-512\n"
                     f"ssl.keystore.location={tmp / 'server.pem'}\n")
    return props, ssl.create_default_context(cafile=str(tmp / "ca.pem"))


def dumps(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


# ---- the cluster's znodes ----------------------------------------------------------------------


def layout(partitions: int, brokers: int) -> dict[str, dict[int, list[int]]]:
    per_topic = partitions // TOPICS
    return {
        f"topic{t:02d}": {p: [(t + p + i) % brokers + 1 for i in range(RF)] for p in range(per_topic)}
        for t in range(TOPICS)
    }


def populate(hosts: str, chroot: str, topics: dict, brokers: int) -> None:
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        zk.ensure_path(chroot)
        for path in ("/admin/reassignments", "/config/changes", "/config/brokers", "/config/topics",
                     "/brokers/ids", "/brokers/topics", "/isr_change_notification"):
            zk.ensure_path(chroot + path)
        ops: list[tuple[str, bytes]] = [(f"{chroot}/controller_epoch", b"0")]
        for b in range(1, brokers + 1):
            port = 1 + b  # nothing listens there: brokers that never answer
            ops.append((f"{chroot}/brokers/ids/{b}", dumps({
                "version": 4, "host": "127.0.0.1", "port": port, "jmx_port": -1, "timestamp": "0",
                "endpoints": [f"PLAINTEXT://127.0.0.1:{port}"]})))
        for name, parts in topics.items():
            ops.append((f"{chroot}/brokers/topics/{name}", dumps({
                "version": 2, "partitions": {str(p): r for p, r in parts.items()},
                "adding_replicas": {}, "removing_replicas": {}})))
            ops.append((f"{chroot}/brokers/topics/{name}/partitions", b""))
            ops.append((f"{chroot}/config/topics/{name}", dumps({"version": 1, "config": {}})))
            for p, r in parts.items():
                ops.append((f"{chroot}/brokers/topics/{name}/partitions/{p}", b""))
                ops.append((f"{chroot}/brokers/topics/{name}/partitions/{p}/state", dumps(
                    {"version": 1, "leader": r[0], "leader_epoch": 0, "controller_epoch": 0, "isr": r})))
        for i in range(0, len(ops), KAZOO_TXN_OPS):
            txn = zk.transaction()
            for path, data in ops[i:i + KAZOO_TXN_OPS]:
                txn.create(path, data)
            results = txn.commit()
            bad = [r for r in results if isinstance(r, Exception)]
            if bad:
                raise RuntimeError(f"populating {chroot} failed: {bad[0]!r}")
    finally:
        zk.stop()
        zk.close()


def targets(topics: dict, brokers: int, shift: int) -> dict[tuple[str, int], list[int]]:
    """Every partition moved: each replica shifted by ``shift`` brokers (RF < brokers - shift)."""
    return {(t, p): [(b - 1 + shift) % brokers + 1 for b in r] for t, parts in topics.items() for p, r in parts.items()}


# ---- wire helpers ------------------------------------------------------------------------------


# Clients go through protocol_aio's one client connection (protocol.connection's limits, answers
# matched by correlation id, protocol's header writers): nothing here knows the frame layout.
CONNECT_TIMEOUT_S = 30.0


async def connect(addr, ssl_context=None) -> ClientConnection:
    """A client connection that asks one thing at a time."""
    return await ClientConnection.open(*addr, connect_timeout_s=CONNECT_TIMEOUT_S, ssl=ssl_context,
                                       client_id="bench", name=f"{addr[0]}:{addr[1]}", max_in_flight=1)


async def call(addr, key: int, version: int, body: dict) -> dict:
    conn = await connect(addr)
    try:
        return await conn.request(key, version, body)
    finally:
        await conn.close()


def create_body(name: str, partitions: int, rf: int) -> dict:
    return {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [],
                        "configs": []}], "timeout_ms": 120_000, "validate_only": False}


async def bench_create_topics(addr, count: int, clients: int, prefix: str) -> float:
    """Part 4: ``count`` CreateTopics of one 12-partition RF 3 topic each, ``clients``
    connections each sending its next request when the previous answer arrived; seconds."""
    names = iter(f"{prefix}{i:05d}" for i in range(count))

    async def client(n: int) -> None:
        conn = await connect(addr)
        try:
            for name in names:
                answer = await conn.request(protocol.ApiKey.CREATE_TOPICS, 7, create_body(name, 12, RF))
                if answer["topics"][0]["error_code"]:
                    raise RuntimeError(f"CreateTopics {name}: {answer['topics'][0]}")
        finally:
            await conn.close()

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return time.perf_counter() - began


async def time_create_one(addr, name: str, partitions: int) -> float:
    began = time.perf_counter()
    answer = await call(addr, protocol.ApiKey.CREATE_TOPICS, 7, create_body(name, partitions, RF))
    elapsed = time.perf_counter() - began
    if answer["topics"][0]["error_code"]:
        raise RuntimeError(f"CreateTopics {name}: {answer['topics'][0]}")
    return elapsed


def reassign_body(moves: dict, throttle: int) -> dict:
    by_topic: dict[str, list] = {}
    for (t, p), r in moves.items():
        by_topic.setdefault(t, []).append({"partition_id": p, "broker": r})
    return {"topic_reassignments": [{"topic": t, "partition_reassignments": ps} for t, ps in by_topic.items()],
            "timeout": 60000, "validate_only": False, "throttle": throttle, "remove_throttle": True}


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(round(0.99 * len(ordered))) - 1))]


# ---- part 1: ReassignPartitions ----------------------------------------------------------------


async def sasl_ssl_login(addr, ssl_context) -> ClientConnection:
    """A TLS connection authenticated with SCRAM-SHA-512 (SaslHandshake v1, SaslAuthenticate)."""
    from controller.shell.security.scram import client_exchange

    conn = await connect(addr, ssl_context)
    handshake = await conn.request(protocol.ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    if handshake["error_code"]:
        raise RuntimeError(f"SaslHandshake refused: error {handshake['error_code']}")
    exchange = client_exchange("SCRAM-SHA-512", SECURE_USER, SECURE_PASSWORD, "benchnonce")
    token = next(exchange)
    while True:
        answer = await conn.request(protocol.ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
        if answer["error_code"]:
            raise RuntimeError(f"SASL login failed: {answer['error_message']}")
        try:
            token = exchange.send(answer["auth_bytes"])
        except StopIteration:
            return conn


async def time_reassign(addr, moves: dict, ssl_context=None) -> float:
    """One ReassignPartitions v0 (KIP-179's schema), sent to answer read, in seconds; with
    ``ssl_context``, over SASL_SSL (logged in before the clock starts)."""
    conn = await (connect(addr) if ssl_context is None else sasl_ssl_login(addr, ssl_context))
    try:
        key = protocol.ApiKey.REASSIGN_PARTITIONS
        encoded = protocol.encode_body(key, 0, "request", reassign_body(moves, THROTTLE))
        started = time.perf_counter()
        answer = await conn.exchange(key, 0, encoded)
        took = time.perf_counter() - started
    finally:
        await conn.close()
    _, body = protocol.decode_response(protocol.ApiKey.REASSIGN_PARTITIONS, 0, answer)
    errors = [(t["topic"], p["partition_id"], p["error_code"], p.get("error_message"))
              for t in body["reassign_partition_result"] for p in t["partition_error"] if p["error_code"]]
    if errors:
        raise RuntimeError(f"ReassignPartitions refused {len(errors)} partitions, e.g. {errors[:3]}")
    return took


def reset(hosts: str, topics: dict, brokers: int) -> None:
    """Put the cluster back as it was before a reassignment (the controller is stopped):
    no request, no records, no throttles, the original assignment."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        doomed = [f"/admin/reassignments/{t}/{p}" for t in zk.get_children("/admin/reassignments")
                  for p in zk.get_children(f"/admin/reassignments/{t}")]
        doomed += [f"/admin/reassignments/{t}" for t in zk.get_children("/admin/reassignments")]
        doomed += [p for p in ("/admin/reassign_partitions", "/admin/throttled_replicas_removal",
                               "/admin/throttled_rates_removal") if zk.exists(p)]
        doomed += [f"/config/brokers/{b}" for b in zk.get_children("/config/brokers")]
        doomed += [f"/config/changes/{c}" for c in zk.get_children("/config/changes")]
        writes = [(f"/brokers/topics/{name}", dumps({"version": 2, "partitions": {str(p): r for p, r in parts.items()},
                                                      "adding_replicas": {}, "removing_replicas": {}}))
                  for name, parts in topics.items()]
        writes += [(f"/config/topics/{name}", dumps({"version": 1, "config": {}})) for name in topics]
        for i in range(0, len(doomed), KAZOO_TXN_OPS):
            txn = zk.transaction()
            for path in doomed[i:i + KAZOO_TXN_OPS]:
                txn.delete(path)
            txn.commit()
        txn = zk.transaction()
        for path, data in writes:
            txn.set_data(path, data)
        txn.commit()
    finally:
        zk.stop()
        zk.close()


async def bench_reassign_peer(hosts: str, topics: dict, brokers: int, repeats: int) -> list[float]:
    from client.zk_backend import ZkBackend

    times = []
    backend = await ZkBackend.open(hosts)
    try:
        for i in range(repeats):
            moves = targets(topics, brokers, 3 + (i % 2) * 3)
            started = time.perf_counter()
            state = await backend.cluster_state()
            # Kafka's ZooKeeper-era tool: each throttle config (and its change notification)
            # written on its own, then /admin/reassign_partitions. (All in one multi-op, as the
            # backend's --execute does, would exceed ZooKeeper's 1 MiB request at this size.)
            ops, _ = await backend._throttle_ops(moves, state.current(moves), THROTTLE, merge=False, writes={})
            for i in range(0, len(ops), 2):
                await backend.store.multi(ops[i:i + 2])
            await backend.execute(moves, state, throttle=None)
            times.append(time.perf_counter() - started)
            await backend.store.delete("/admin/reassign_partitions")  # untimed: ready for the next
    finally:
        await backend.close()
    return times


# ---- part 2: ListPartitionReassignments from many clients ---------------------------------------


async def _load(addr, connections: int, seconds: float) -> int:
    """Closed-loop clients; returns the number of answers read."""
    deadline = time.perf_counter() + seconds
    key = protocol.ApiKey.LIST_PARTITION_REASSIGNMENTS
    body = protocol.encode_body(key, 0, "request", {"timeout_ms": 60000, "topics": None})  # encoded once
    done = 0

    async def client() -> None:
        nonlocal done
        conn = await connect(addr)
        try:
            while time.perf_counter() < deadline:
                await conn.exchange(key, 0, body)  # matched by correlation id, not decoded
                done += 1
        finally:
            await conn.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    return done


def load_main(host: str, port: int, connections: int, seconds: float) -> None:
    print(json.dumps({"answers": asyncio.run(_load((host, port), connections, seconds))}), flush=True)


def run_load(addr, clients: int, seconds: float) -> float:
    per = [clients // LOAD_PROCESSES + (i < clients % LOAD_PROCESSES) for i in range(LOAD_PROCESSES)]
    procs = [subprocess.Popen([sys.executable, __file__, "--load", f"{addr[0]}:{addr[1]}", str(n), str(seconds)],
                              stdout=subprocess.PIPE, cwd=REPO) for n in per if n]
    total = 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 60)
        if p.returncode != 0:
            raise RuntimeError("a load process failed")
        total += json.loads(out)["answers"]
    return total / seconds


def peer_main(answer_file: str) -> None:
    """A ListPartitionReassignments server on kafka-python's protocol stack: kafka-python
    decodes each request and encodes each response from the answer's data held in memory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.protocol.admin import ListPartitionReassignmentsRequest as Request
        from kafka.protocol.admin import ListPartitionReassignmentsResponse as Response
    data = json.loads(Path(answer_file).read_text())
    Topic = Response.OngoingTopicReassignment
    Partition = Topic.OngoingPartitionReassignment

    def respond(frame: bytes) -> bytes:
        # Framing is protocol_aio's (the same loop and limits as the simulated brokers' server);
        # the request's and the answer's bytes are kafka-python's.
        request = Request.decode(frame, version=0, header=True, framed=True)
        response = Response(version=0, throttle_time_ms=0, error_code=0, error_message=None, topics=[
            Topic(name=t["name"], partitions=[Partition(**p) for p in t["partitions"]]) for t in data])
        response.with_header(correlation_id=request.header.correlation_id)
        return bytes(response.encode(header=True, framed=True))

    async def serve(reader, writer):
        try:
            await serve_frames(reader, writer, respond, FrameConnection.server())
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1000)
        print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def pending_entries(hosts: str) -> int:
    """Entries left in /admin/reassign_partitions (the controller removes each completed move's)."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        if not zk.exists("/admin/reassign_partitions"):
            return 0
        return len(json.loads(zk.get("/admin/reassign_partitions")[0])["partitions"])
    finally:
        zk.stop()
        zk.close()


def list_while_moving(zk_connect: str, tmp: Path, partitions: int, clients: int, seconds: float) -> dict:
    """Part 2b: ListPartitionReassignments while moves progress. Simulated brokers (``reassignd
    sim``, real sockets, replicas copied at their bandwidth) complete the moves, so the running set
    changes and the controller's encoded answer is rebuilt as state changes, as in production."""
    hosts = zk_connect + MOVING_CHROOT
    zk = KazooClient(hosts=zk_connect, timeout=30)
    zk.start(timeout=30)
    zk.ensure_path(MOVING_CHROOT)
    zk.stop()
    zk.close()
    procs: list[subprocess.Popen] = []
    try:
        sim_log = tmp / "sim.log"
        sim = subprocess.Popen(
            [sys.executable, "-m", "reassignd", "sim", "--zookeeper", hosts, "--brokers", str(MOVING_BROKERS),
             "--topics", *[f"moving{i}:{max(1, partitions // MOVING_TOPICS)}:{RF}:{i + 1}MiB" for i in range(MOVING_TOPICS)],
             "--log-level", "WARNING"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=open(sim_log, "ab"), text=True)
        procs.append(sim)
        line = sim.stdout.readline()
        if not line:
            raise RuntimeError("the simulated cluster did not start: " + sim_log.read_text(errors="replace")[-2000:])
        ready = json.loads(line)
        layout_now = {t: {int(p): r for p, r in parts.items()} for t, parts in ready["topics"].items()}
        config = tmp / "moving.toml"
        config.write_text(to_toml({"max_cluster_moves": 1000, "max_incoming_per_broker": 1000,
                                   "max_outgoing_per_broker": 1000}))
        controller, addr = start_controller(hosts, config, tmp / "moving-controller.log")
        procs.append(controller)
        submit_directly(hosts, targets(layout_now, MOVING_BROKERS, 3))

        def listed():
            answer = asyncio.run(call(addr, protocol.ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None}))
            return answer if any(t["partitions"] for t in answer["topics"]) else None

        wait_for(listed, 60, "the controller to start the moves")
        # The first moves take a while to copy (they share the brokers' bandwidth): the window
        # opens once completions have begun, so it measures moves progressing, not starting.
        total = sum(len(parts) for parts in layout_now.values())
        wait_for(lambda: pending_entries(hosts) < total, 120, "the first moves to complete")
        before = pending_entries(hosts)
        rps = run_load(addr, clients, seconds)
        after = pending_entries(hosts)
        completed = before - after
        print(f"ListPartitionReassignments while moves progress ({completed} completed in the {seconds:.0f} s, "
              f"{after} left), {clients} clients: {rps:.0f}/s", flush=True)
        if completed <= 0:
            raise RuntimeError("no move completed while listing: the answer was never rebuilt, not what part 2b measures")
        return {"rps": rps, "completed": completed}
    finally:
        for p in reversed(procs):
            stop(p)


# ---- the run --------------------------------------------------------------------------------------


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_controller(hosts: str, config: Path, log: Path, secure: Path | None = None) -> tuple[subprocess.Popen, tuple[str, int]]:
    """A ``reassignd controller`` subprocess, once elected, registered and loaded; with
    ``secure`` (its security config), a second listener SECURE speaking SASL_SSL, whose
    address is then ``secure_addr``."""
    global secure_addr
    extra = ["--listen", "SECURE://127.0.0.1:0", "--security-config", str(secure)] if secure else []
    profile = ["-m", "cProfile", "-o", str(profile_to)] if profile_to is not None else []
    proc = subprocess.Popen(
        [sys.executable, *profile, "-m", "reassignd", "controller", "--zookeeper", hosts, "--id", str(CONTROLLER_ID),
         "--listen", "127.0.0.1:0", *extra, "--config", str(config), "--log-level", "WARNING"],
        cwd=REPO, stderr=open(log, "ab"))
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        def registered():
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the controller exited with {proc.returncode}; its log ends:\n{tail}")
            holder = zk.exists("/controller") and json.loads(zk.get("/controller")[0])
            return holder and holder["brokerid"] == CONTROLLER_ID and zk.exists(f"/reassignd/controllers/{CONTROLLER_ID}")

        wait_for(registered, 60, "the controller")
        doc = json.loads(zk.get(f"/reassignd/controllers/{CONTROLLER_ID}")[0])
    finally:
        zk.stop()
        zk.close()
    addr = (doc["host"], doc["port"])
    secure_addr = next(((e.split("://")[1].rsplit(":", 1)[0], int(e.rsplit(":", 1)[1]))
                        for e in doc.get("endpoints", []) if e.startswith("SECURE://")), None)
    # Elected is not yet loaded: controller-only requests get NOT_CONTROLLER until then.
    wait_for(lambda: asyncio.run(call(addr, protocol.ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None}))["error_code"] == 0, 60,
             "the controller to load the cluster")
    versions = asyncio.run(call(addr, protocol.ApiKey.API_VERSIONS, 0, {}))
    if protocol.ApiKey.REASSIGN_PARTITIONS not in {k["api_key"] for k in versions["api_keys"]}:
        raise RuntimeError("the controller does not serve ReassignPartitions (10000)")
    # Loaded is not yet quiet: a new controller reads every partition state and sends brokers
    # the full UpdateMetadata (as Kafka's does at failover), here to brokers that never answer,
    # each send retried once after request_retries' backoff. Let that start-up work pass.
    time.sleep(STARTUP_SETTLE_S)
    return proc, addr


def submit_directly(hosts: str, moves: dict) -> None:
    """--list-only: the moves written to /admin/reassign_partitions as a third-party tool does."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        zk.create("/admin/reassign_partitions", dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}))
    finally:
        zk.stop()
        zk.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--secure-repeats", type=int, default=10, help="part 3's requests over SASL_SSL")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--create-topics", type=int, default=1000, help="part 4's topics (one request each)")
    parser.add_argument("--create-clients", type=int, default=4, help="part 4's connections")
    parser.add_argument("--profile-controller", type=Path, default=None, metavar="FILE",
                        help="run the controllers under cProfile; the last one's stats are written to FILE on exit")
    parser.add_argument("--list-only", action="store_true",
                        help="skip part 1: the moves are submitted by writing /admin/reassign_partitions")
    parser.add_argument("--moving-partitions", type=int, default=2000,
                        help="part 2b's partitions, all moved, on simulated brokers that complete the moves")
    args = parser.parse_args()
    if args.partitions < TOPICS or args.brokers < RF + 6 or args.repeats < 1 or args.clients < 1:
        parser.error(f"need --partitions >= {TOPICS}, --brokers >= {RF + 6}, --repeats >= 1, --clients >= 1")
    global profile_to
    profile_to = args.profile_controller
    topics = layout(args.partitions, args.brokers)
    started = results.begin()
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="bench_rpc_") as tmp:
        zk = LocalZooKeeper(port=0, data_dir=Path(tmp) / "zk", heap_mb=1024, stop_with_parent=True)
        zk.start(timeout=90)
        try:
            began = time.perf_counter()
            populate(zk.connect_string, CHROOT, topics, args.brokers)
            populate(zk.connect_string, PEER_CHROOT, topics, args.brokers)
            print(f"populated 2 x {args.partitions} partitions in {time.perf_counter() - began:.1f}s", flush=True)
            config = Path(tmp) / "controller.toml"
            # Per-broker caps raised so the running set fills the cluster-wide cap (1,000 moves):
            # the list answers carry 1,000 partitions, not the ~40 the default caps allow here.
            config.write_text(to_toml({"request_retries": 1, "retry_backoff_s": 1.0, "max_cluster_moves": 1000,
                                       "max_incoming_per_broker": 1000, "max_outgoing_per_broker": 1000}))
            hosts = zk.connect_string + CHROOT
            moves = targets(topics, args.brokers, 3)
            secure, client_tls = make_security(Path(tmp), hosts)
            ours: list[float] = []
            secured: list[float] = []
            # Part 1: every request meets a cluster where nothing moves (as KIP-179's v0 requires):
            # between two, the controller is stopped and the cluster put back (untimed).
            for i in range(1 if args.list_only else args.repeats):
                if procs:
                    stop(procs.pop())
                    reset(hosts, topics, args.brokers)
                controller, addr = start_controller(hosts, config, Path(tmp) / "controller.log")
                procs.append(controller)
                if args.list_only:
                    submit_directly(hosts, moves)
                    break
                ours.append(asyncio.run(time_reassign(addr, moves)))
            # Part 3: the same request over SASL_SSL, each on a quiet cluster as in part 1.
            for i in range(0 if args.list_only else args.secure_repeats):
                stop(procs.pop())
                reset(hosts, topics, args.brokers)
                controller, addr = start_controller(hosts, config, Path(tmp) / "controller.log", secure)
                procs.append(controller)
                secured.append(asyncio.run(time_reassign(secure_addr, moves, client_tls)))
            if secured:
                print(f"ReassignPartitions {args.partitions} over SASL_SSL: p50 "
                      f"{sorted(secured)[len(secured) // 2] * 1000:.0f} ms, p99 {p99(secured) * 1000:.0f} ms", flush=True)
            if not args.list_only:
                # The peer runs on a quiet machine too: the controller is stopped meanwhile and
                # restarted after, resuming the moves the last request started (failover path).
                stop(procs.pop())
                peer = asyncio.run(bench_reassign_peer(zk.connect_string + PEER_CHROOT, topics, args.brokers, args.repeats))
                print(f"ReassignPartitions {args.partitions}: p50 {sorted(ours)[len(ours) // 2] * 1000:.0f} ms, "
                      f"p99 {p99(ours) * 1000:.0f} ms; --zookeeper tool p50 {sorted(peer)[len(peer) // 2] * 1000:.0f} ms, "
                      f"p99 {p99(peer) * 1000:.0f} ms", flush=True)
                controller, addr = start_controller(hosts, config, Path(tmp) / "controller.log")
                procs.append(controller)

            time.sleep(2.0)  # the controller has started what it can: the running set is steady

            def listed():
                answer = asyncio.run(call(addr, protocol.ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None}))
                return answer if any(t["partitions"] for t in answer["topics"]) else None

            # On a loaded machine the controller may take longer to start the moves than 2 s.
            try:
                answer = wait_for(listed, 60, "the controller to start the moves")
            except RuntimeError:
                raise RuntimeError("nothing is being reassigned: the list benchmark would measure an empty answer") from None
            running = sum(len(t["partitions"]) for t in answer["topics"])
            list_rps = run_load(addr, args.clients, args.seconds)
            answer_file = Path(tmp) / "answer.json"
            answer_file.write_text(json.dumps(answer["topics"]))
            peer_proc = subprocess.Popen([sys.executable, __file__, "--peer-server", str(answer_file)],
                                         stdout=subprocess.PIPE, cwd=REPO)
            procs.append(peer_proc)
            peer_port = json.loads(peer_proc.stdout.readline())["port"]
            check = asyncio.run(call(("127.0.0.1", peer_port), protocol.ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None}))
            if check["topics"] != answer["topics"]:
                raise RuntimeError("the peer's answer differs from the controller's")
            peer_rps = run_load(("127.0.0.1", peer_port), args.clients, args.seconds)
            print(f"ListPartitionReassignments ({running} partitions moving), {args.clients} clients: "
                  f"{list_rps:.0f}/s; kafka-python stack {peer_rps:.0f}/s", flush=True)
            # Part 4: topic creation through the same controller.
            create_s = asyncio.run(bench_create_topics(addr, args.create_topics, args.create_clients, "new"))
            create_rps = args.create_topics / create_s
            big_s = asyncio.run(time_create_one(addr, "big", 10_000))
            print(f"CreateTopics: {args.create_topics} topics x 12 partitions in {create_s:.1f}s "
                  f"({create_rps:.0f}/s, {args.create_clients} connections); 10,000 partitions in {big_s:.2f}s", flush=True)
            # Part 2b: the list while moves progress, on its own cluster, the others stopped.
            while procs:
                stop(procs.pop())
            moving = list_while_moving(zk.connect_string, Path(tmp), args.moving_partitions, args.clients, args.seconds)
        finally:
            for p in reversed(procs):
                stop(p)
            zk.stop()
    figures: dict = {}
    if not args.list_only:
        figures["reassign_10k_p99_ms"] = round(p99(ours) * 1000, 1)
    if secured:
        figures["reassign_10k_p99_ms_sasl_ssl"] = round(p99(secured) * 1000, 1)
    figures["list_requests_per_second_cached"] = round(list_rps)
    figures["list_requests_per_second_while_moving"] = round(moving["rps"])
    figures["list_moves_completed_while_measured"] = moving["completed"]
    figures["create_topics_per_second"] = round(create_rps, 1)
    figures["create_10k_partitions_seconds"] = round(big_s, 2)
    if not args.list_only:
        figures["reassign_p99_ratio_vs_zookeeper_tool"] = round(p99(peer) / p99(ours), 2)
    if secured and ours:
        figures["reassign_p99_ratio_sasl_ssl_vs_plaintext"] = round(p99(secured) / p99(ours), 2)
    figures["list_rps_cached_ratio_vs_kafka_python"] = round(list_rps / peer_rps, 2)
    figures["list_rps_while_moving_ratio_vs_kafka_python"] = round(moving["rps"] / peer_rps, 2)
    results.finish("rpc", figures,
                   peer="reassign: the --zookeeper tool path; list: a kafka-python protocol-stack server "
                        "rebuilding its answer per request",
                   sizes={"partitions": args.partitions, "brokers": args.brokers, "repeats": args.repeats,
                          "secure_repeats": args.secure_repeats, "clients": args.clients, "seconds": args.seconds,
                          "create_topics": args.create_topics, "moving_partitions": args.moving_partitions},
                   notes=["list while moving: simulated brokers over real sockets complete the moves, "
                          "so the controller's encoded answer is rebuilt as its state changes"],
                   started=started)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--load":
        host, _, port = sys.argv[2].rpartition(":")
        load_main(host, int(port), int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--peer-server":
        peer_main(sys.argv[2])
    else:
        sys.exit(main())
