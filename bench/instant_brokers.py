"""bench/controller.py's "rest of the world" in a process of its own: instant brokers and the feeder.

    python -m bench.instant_brokers --zookeeper HOSTS --partitions N

INSTANT BROKERS are BROKERS brokers whose new replicas are in sync the moment a LeaderAndIsr
names them. Each listens on a TCP port of its own on 127.0.0.1 and speaks the Kafka wire
protocol with the project's codec (protocol.parse_request / encode_response, served by
protocol_aio.serve_frames, as the simulated brokers of sim.server are), so the controller
reaches them through its production transport (controller.shell.transport.TcpTransport). Each
hosts the replicas the cluster was laid out with, plus those a LeaderAndIsr names it for, minus
those a StopReplica(delete) removes, and says so when asked (DescribeLogDirs, as every live
broker is at an election): a broker that answered "nothing" would have the controller send
every assigned replica LeaderAndIsr again as missing (engine step 9b), work no real cluster asks
of it. A leader told of adding replicas writes the grown ISR to the state znode (conditional on
its zkVersion) and announces it in an ISR change notification that carries the state written
and its zkVersion (znodes.models.NotifiedState); these writes are gathered for
BROKER_FLUSH_DELAY_S and batched, many partitions per multi and per notification, on the
brokers' own ZooKeeper session. UpdateMetadata is answered without decoding its body:
nothing in it changes what an instant broker does, and decoding the twelve brokers' copies of
every step's was half of this process's CPU, on a machine whose cores it shares with the
controller and ZooKeeper (its header is read, its answer encoded with the codec).

The process creates the cluster (persistent paths, broker registrations carrying the real
ports, ephemeral in the brokers' session; topics laid out by :func:`layout`) and runs the
FEEDER, the third-party tool that keeps ``/admin/reassign_partitions`` topped up, on a session
of its own. In production brokers and admin tools are other processes: here they no longer
take the controller's CPU or its GIL, so the controller's process time is the controller's.

Once the cluster exists it prints one JSON line on stdout (and nothing else there but answers)::

    {"brokers": {"1": "127.0.0.1:40311", ...}}

Then it is driven by lines on stdin, ``ID VERB [JSON argument]``, each answered (in the order
they finish) by ``ID ok JSON`` or ``ID error MESSAGE`` on stdout; EOF on stdin or ``exit`` ends
it. The verbs (bench/controller.py's run() uses them):

    feed {"pause_at": N|null}  start the feeder (pausing by itself after N entries)
    wait_paused                answered once the feeder has paused
    drained                    true when paused and /admin/reassign_partitions is gone
    hold                       ISR growth waits (the failover wave's copies are running)
    wave {"n": N}              the next N entries in one write; answers how many
    release                    after the kill: once the dead controller's connections are gone
                               (everything it sent handled), drop the held ISR growth and
                               catch up at once again
    resume                     the feeder carries on after its pause
    after_kill                 {"in_flight": KIP-240 records, "at_target": {topic: [p, ...]}}
    stop_feeding               stop the feeder
    check                      topics not all at their targets (or still moving): []
    status                     where brokers and feeder stand (the stall watchdog's dump)
    exit                       close everything and end

:class:`InstantBrokersProcess` is the parent's end: it starts the process, reads the ready line
and sends the verbs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import struct
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import protocol  # noqa: E402
from protocol import ApiKey  # noqa: E402
from protocol.connection import FrameConnection  # noqa: E402
from protocol_aio import Pipelining, serve_frames  # noqa: E402
from znodes import paths  # noqa: E402
from znodes.api import BadVersionError, Create, NodeExistsError, NoNodeError, SetData  # noqa: E402
from znodes.batch import BatchedWriter, FlushError  # noqa: E402
from znodes.payloads import encode_state  # noqa: E402
from znodes.values import LeaderIsr  # noqa: E402

BROKERS = 12
RF = 3
PARTITIONS_PER_TOPIC = 1000
# The feeder keeps the znode between these many entries (JSON ~ 88 bytes per entry once the
# controller has added original_replicas: 10,000 entries are ~880 KB, under ZooKeeper's 1 MiB).
FEED_LOW, FEED_HIGH = 6000, 10000
FEED_BYTES_PER_ENTRY = 60  # plain entries are ~60 bytes, with original_replicas ~90
NOTIFICATION_MAX_PARTITIONS = 5000  # per ISR change notification (~140 bytes each: < 1 MiB)
BROKER_FLUSH_DELAY_S = 0.005  # instant brokers gather ISR changes this long before writing
HOST = "127.0.0.1"
# Requests read ahead of their answers on one connection: TcpTransport's MAX_IN_FLIGHT_PER_BROKER
# (each is answered as it is read, in order).
PIPELINED_REQUESTS = 100
# A control answer (after_kill's partitions at target) can be a few MB on one line.
CONTROL_LINE_LIMIT = 1 << 26
REPO = Path(__file__).resolve().parents[1]
# The start of every request frame: size, api key, api version, correlation id (the header's
# first fields in every version).
_REQUEST_START = struct.Struct(">ihhi")

log = logging.getLogger("bench.instant_brokers")


# ---- the cluster's layout --------------------------------------------------------------------------


def state_payload(leader, leader_epoch, controller_epoch, isr) -> bytes:
    """Kafka's state znode JSON, by the controller's own encoder (formatted directly: json.dumps
    per ISR write was a tenth of the instant brokers' CPU)."""
    return encode_state(LeaderIsr(leader, leader_epoch, controller_epoch, tuple(isr), 0))


def layout(n_partitions: int):
    """(topics: {topic: {partition: replicas}}, targets: {(topic, partition): replicas}): every
    replica of every partition moves."""
    topics = {}
    for i in range(n_partitions):
        topic, p = f"topic{i // PARTITIONS_PER_TOPIC:04d}", i % PARTITIONS_PER_TOPIC
        first = i % BROKERS
        replicas = [(first + k) % BROKERS + 1 for k in range(RF)]
        topics.setdefault(topic, {})[p] = replicas
    targets = {
        (t, p): [(r - 1 + RF) % BROKERS + 1 for r in replicas] for t, parts in topics.items() for p, replicas in parts.items()
    }
    return topics, targets


def registration(broker_id: int, port: int) -> dict:
    """A broker's /brokers/ids znode (v4), at its real port."""
    return {"version": 4, "host": HOST, "port": port, "jmx_port": -1, "timestamp": "0",
            "endpoints": [f"PLAINTEXT://{HOST}:{port}"]}


async def create_cluster(store, topics, ports: dict[int, int] | None = None):
    """Persistent paths, broker registrations (ephemeral in ``store``'s session, at ``ports``;
    without them at 9092 + id) and the topics' znodes and partition states."""
    for path in paths.PERSISTENT_PATHS:
        await store.ensure_path(path)
    for b in range(1, BROKERS + 1):
        port = ports[b] if ports else 9092 + b
        await store.create(paths.broker(b), json.dumps(registration(b, port)).encode(), ephemeral=True)
    writer = BatchedWriter(store)
    for topic, parts in topics.items():
        znode = {"version": 2, "partitions": {str(p): r for p, r in parts.items()}, "adding_replicas": {}, "removing_replicas": {}}
        writer.add(Create(paths.topic(topic), json.dumps(znode).encode()))
        writer.add(Create(paths.partitions(topic)))
        for p, replicas in parts.items():
            writer.add(Create(paths.partition(topic, p)))
            writer.add(Create(paths.partition_state(topic, p), state_payload(replicas[0], 0, 0, replicas)))
    await writer.flush()


async def at_target(store, topics, targets) -> set:
    """Partitions whose topic znode has them at their target with nothing adding or removing."""
    done = set()
    for topic in topics:
        znode = json.loads((await store.get(paths.topic(topic)))[0])
        busy = set(znode.get("adding_replicas") or {}) | set(znode.get("removing_replicas") or {})
        for p, replicas in znode["partitions"].items():
            if p not in busy and replicas == targets[(topic, int(p))]:
                done.add((topic, int(p)))
    return done


async def count_in_flight(store, topics) -> int:
    """Moves started and not finished: their KIP-240 records under /admin/reassignments."""
    total = 0
    for topic in topics:
        try:
            total += len(await store.children(f"{paths.REASSIGNMENTS}/{topic}"))
        except NoNodeError:
            pass
    return total


# ---- the feeder --------------------------------------------------------------------------------------


def feed_window(n_partitions: int) -> tuple[int, int]:
    """The feeder's (low, high) entries: FEED_LOW and FEED_HIGH, or for a run under 30,000
    partitions a fifth and two fifths of it, so that the work keeps arriving while moves run
    (with all of it in the znode at once, instant brokers finish every move in a burst and a
    failover half-way finds nothing in flight to resume)."""
    low = min(FEED_LOW, max(1, n_partitions // 5))
    return low, min(FEED_HIGH, 2 * low)


class Feeder:
    """Keeps /admin/reassign_partitions between feed_window's low and high entries, as a
    third-party tool appending with conditional writes; paused around the failover (run())."""

    def __init__(self, store, targets: dict, pause_at: int | None = None):
        self.store = store
        self.queue = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in targets.items()]
        self.low, self.high = feed_window(len(targets))
        # Entries fed before the feeder pauses by itself (the failover's drain), None: never.
        self.left_before_pause = pause_at
        self.lock = asyncio.Lock()  # held by each read-modify-write of the znode

    @property
    def paused(self) -> bool:
        return self.left_before_pause == 0

    def resume(self) -> None:
        self.left_before_pause = None

    async def run(self, stop: asyncio.Event) -> None:
        while self.queue and not stop.is_set():
            async with self.lock:
                wrote = not self.paused and await self._top_up()
            if not wrote:
                await asyncio.sleep(0.02)

    async def _top_up(self, exactly: int | None = None) -> bool:
        """One conditional append: up to the high mark when the znode is under the low one, or
        ``exactly`` entries. False: nothing to do now (poll again later); True after a write,
        or after a conflict without ``exactly`` (read again at once)."""
        if exactly is None:
            # Look at the size first: parsing a 600 KB znode every poll would only steal CPU.
            stat = await self.store.exists(paths.REASSIGN_PARTITIONS)
            if stat is not None and stat.data_length > self.low * FEED_BYTES_PER_ENTRY:
                return False
        try:
            data, stat = await self.store.get(paths.REASSIGN_PARTITIONS)
            doc = json.loads(data)
        except NoNodeError:
            data, stat, doc = None, None, {"version": 1, "partitions": []}
        have = len(doc["partitions"])
        if exactly is None and have >= self.low:
            return False
        want = exactly if exactly is not None else self.high - have
        if exactly is None and self.left_before_pause is not None:
            want = min(want, self.left_before_pause)
        take = self.queue[:want]
        doc["partitions"] += take
        payload = json.dumps(doc, separators=(",", ":")).encode()
        try:
            if stat is None:
                await self.store.create(paths.REASSIGN_PARTITIONS, payload)
            else:
                await self.store.set(paths.REASSIGN_PARTITIONS, payload, stat.version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            return exactly is None  # the controller wrote it meanwhile: read again
        del self.queue[: len(take)]
        if exactly is None and self.left_before_pause is not None:
            self.left_before_pause -= len(take)
        return True

    async def wave(self, n: int) -> int:
        """Append the next ``n`` entries in one write (the feeder paused: nothing else in the
        znode then); how many it wrote."""
        async with self.lock:
            while True:
                count = min(n, len(self.queue))
                if await self._top_up(exactly=count):
                    return count


# ---- brokers that catch up instantly -------------------------------------------------------------


class InstantBrokers:
    """BROKERS brokers whose new replicas are in sync at once (the module's docstring), each
    served on a TCP port of its own by :meth:`serve`."""

    def __init__(self, store, topics: dict[str, dict[int, list[int]]]):
        self.store = store
        self.pending: dict[tuple[str, int], dict] = {}
        self.wake = asyncio.Event()
        self.task = asyncio.create_task(self._flush_forever())
        # Cleared while the failover wave's copies run (hold): ISR growth waits, as a real
        # follower's would until it caught up.
        self.copies_done = asyncio.Event()
        self.copies_done.set()
        self.hosted: dict[int, set[tuple[str, int]]] = {b: set() for b in range(1, BROKERS + 1)}
        for topic, parts in topics.items():
            for p, replicas in parts.items():
                for b in replicas:
                    self.hosted[b].add((topic, p))
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[asyncio.Task] = set()
        self.requests: dict[int, int] = {}  # by API key, for the status dump
        self.isr_written = 0
        self._update_metadata_answers: dict[int, bytes] = {}  # by version: the same every time

    # ---- the wire ----

    async def serve(self) -> dict[int, int]:
        """Listen for every broker on 127.0.0.1 (a free port each); {broker: port}."""
        ports = {}
        for b in range(1, BROKERS + 1):
            server = await asyncio.start_server(
                lambda r, w, b=b: self._on_connection(b, r, w), HOST, 0, reuse_address=True)
            self.servers.append(server)
            ports[b] = server.sockets[0].getsockname()[1]
        return ports

    async def _on_connection(self, broker_id: int, reader, writer) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        try:
            await serve_frames(reader, writer, lambda frame: self.respond(broker_id, frame), FrameConnection.server(),
                               pipelining=Pipelining(max_requests=PIPELINED_REQUESTS))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("broker %d: closing a connection", broker_id)
        finally:
            self.connections.discard(task)
            writer.close()

    def respond(self, broker_id: int, frame) -> bytes:
        """The response frame to one request frame (decoded and encoded with the codec; an
        UpdateMetadata's body is not decoded, see the module's docstring)."""
        size, api_key, api_version, correlation_id = _REQUEST_START.unpack_from(frame, 0) if len(frame) >= 12 else (0,) * 4
        if api_key == ApiKey.UPDATE_METADATA and size == len(frame) - 4:
            self.requests[api_key] = self.requests.get(api_key, 0) + 1
            answer = self._update_metadata_answers.get(api_version)
            if answer is None:
                answer = self._update_metadata_answers[api_version] = protocol.encode_body(
                    api_key, api_version, "response", {"error_code": 0})
            return protocol.response_frame(api_key, api_version, correlation_id, answer)
        header, body, _ = protocol.parse_request(frame)
        api_key, api_version = header["request_api_key"], header["request_api_version"]
        answer = self.handle(broker_id, api_key, api_version, body)
        return protocol.encode_response(api_key, api_version, header["correlation_id"], answer)

    # ---- what a broker does with a request ----

    def handle(self, broker_id: int, api_key: int, api_version: int, body: dict) -> dict:
        """The response body for one request."""
        self.requests[api_key] = self.requests.get(api_key, 0) + 1
        hosted = self.hosted.setdefault(broker_id, set())
        if api_key == ApiKey.DESCRIBE_LOG_DIRS:
            by_topic: dict[str, list[dict]] = {}
            for t, p in hosted:
                by_topic.setdefault(t, []).append(
                    {"partition_index": p, "partition_size": 0, "offset_lag": 0, "is_future_key": False})
            return {"throttle_time_ms": 0, "results": [{"error_code": 0, "log_dir": "/instant", "topics": [
                {"name": t, "partitions": parts} for t, parts in by_topic.items()]}]}
        if api_key == ApiKey.STOP_REPLICA:
            for topic in body["topic_states"]:
                for e in topic["partition_states"]:
                    if e["delete_partition"]:
                        hosted.discard((topic["topic_name"], e["partition_index"]))
            return {"error_code": 0, "partition_errors": []}
        if api_key == ApiKey.LEADER_AND_ISR:
            for topic in body["topic_states"]:
                name = topic["topic_name"]
                for e in topic["partition_states"]:
                    if e["is_new"]:  # a replica it did not host (the controller says is_new then)
                        hosted.add((name, e["partition_index"]))
                    if e["leader"] == broker_id and e["adding_replicas"]:
                        isr = list(e["isr"]) + [b for b in e["adding_replicas"] if b not in e["isr"]]
                        if isr != list(e["isr"]):
                            self.pending[(name, e["partition_index"])] = dict(
                                leader=e["leader"], leader_epoch=e["leader_epoch"],
                                controller_epoch=e["controller_epoch"], isr=isr, zk_version=e["zk_version"],
                            )
                            self.wake.set()
            return {"error_code": 0, "partition_errors": [], "topics": []}  # v0-4, v5+ (per topic id)
        if api_key == ApiKey.UPDATE_METADATA:
            return {"error_code": 0}
        raise ValueError(f"instant brokers do not serve api {api_key} v{api_version}")

    # ---- the failover wave ----

    def hold(self) -> None:
        self.copies_done.clear()

    async def release(self) -> None:
        """After the kill: once every connection is gone (the dead controller's requests all
        handled), drop the held ISR growth (it names the dead controller's leader epochs: the
        copies had not caught up) and catch up at once again."""
        while self.connections:
            await asyncio.sleep(0.001)
        self.pending.clear()
        self.copies_done.set()

    def status(self) -> dict:
        return {"isr_writes_pending": len(self.pending), "copies_done": self.copies_done.is_set(),
                "connections": len(self.connections), "isr_written": self.isr_written,
                "requests": {ApiKey(k).name if k in ApiKey._value2member_map_ else str(k): n
                             for k, n in sorted(self.requests.items())},
                "hosted": {b: len(h) for b, h in sorted(self.hosted.items())}}

    async def shutdown(self):
        for server in self.servers:
            server.close()
        for task in list(self.connections):
            task.cancel()
        self.task.cancel()
        await asyncio.gather(self.task, *self.connections, return_exceptions=True)

    # ---- the leaders' ISR writes ----

    async def _flush_forever(self):
        while True:
            await self.wake.wait()
            await asyncio.sleep(BROKER_FLUSH_DELAY_S)
            await self.copies_done.wait()
            self.wake.clear()
            batch, self.pending = self.pending, {}
            await self._write(batch)

    async def _write(self, batch: dict):
        items = sorted(batch.items())
        writes = [
            SetData(paths.partition_state(*tp), state_payload(w["leader"], w["leader_epoch"], w["controller_epoch"], w["isr"]), w["zk_version"])
            for tp, w in items
        ]
        writer = BatchedWriter(self.store)
        writer.extend(writes)
        try:
            await writer.flush()
            done = [(tp, w, w["zk_version"] + 1) for tp, w in items]
        except FlushError as e:
            # A version moved under a chunk: write the rest one by one, skipping conflicts.
            done = [(tp, w, w["zk_version"] + 1) for tp, w in items[: e.applied]]
            for (tp, w), op in zip(items[e.applied :], writes[e.applied :]):
                try:
                    stat = await self.store.set(op.path, op.data, op.version)
                    done.append((tp, w, stat.version))
                except (BadVersionError, NoNodeError):
                    pass
        self.isr_written += len(done)
        notes = BatchedWriter(self.store)
        for i in range(0, len(done), NOTIFICATION_MAX_PARTITIONS):
            chunk = done[i : i + NOTIFICATION_MAX_PARTITIONS]
            # Each entry carries the state written and its zkVersion, as the simulated
            # brokers' do (znodes.models.NotifiedState): the controller need not read it back.
            payload = json.dumps(
                {"version": 1, "partitions": [
                    {"topic": t, "partition": p, "state": {
                        "leader": w["leader"], "leader_epoch": w["leader_epoch"],
                        "controller_epoch": w["controller_epoch"], "isr": w["isr"], "zk_version": v,
                    }} for (t, p), w, v in chunk
                ]}, separators=(",", ":")
            ).encode()
            notes.add(Create(paths.ISR_CHANGE_PREFIX, payload, sequential=True))
        await notes.flush()


# ---- the control channel ------------------------------------------------------------------------------


VERBS = frozenset({"feed", "wait_paused", "drained", "hold", "wave", "release", "resume", "after_kill",
                   "stop_feeding", "check", "status", "exit"})


def command_line(cid: int, verb: str, arg=None) -> bytes:
    """``ID VERB [JSON]`` and a newline."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    tail = "" if arg is None else " " + json.dumps(arg, separators=(",", ":"))
    return f"{cid} {verb}{tail}\n".encode()


def parse_command(line: bytes | str) -> tuple[int, str, object]:
    """(id, verb, argument or None) of a command line; ValueError if it is not one."""
    text = line.decode() if isinstance(line, bytes) else line
    parts = text.strip().split(" ", 2)
    if len(parts) < 2 or not parts[0].isdigit() or parts[1] not in VERBS:
        raise ValueError(f"not a command: {text.strip()[:80]!r}")
    return int(parts[0]), parts[1], json.loads(parts[2]) if len(parts) == 3 else None


def reply_line(cid: int, result=None, *, error: str | None = None) -> bytes:
    """``ID ok JSON`` or ``ID error MESSAGE`` (one line) and a newline."""
    if error is not None:
        return f"{cid} error {' '.join(error.split())}\n".encode()
    return f"{cid} ok {json.dumps(result, separators=(',', ':'))}\n".encode()


def parse_reply(line: bytes | str) -> tuple[int, bool, object]:
    """(id, ok, result or error message) of an answer line; ValueError if it is not one."""
    text = line.decode() if isinstance(line, bytes) else line
    parts = text.rstrip("\n").split(" ", 2)
    if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in ("ok", "error"):
        raise ValueError(f"not an answer: {text.strip()[:80]!r}")
    ok = parts[1] == "ok"
    return int(parts[0]), ok, json.loads(parts[2]) if ok else parts[2]


def ready_line(ports: dict[int, int]) -> bytes:
    return (json.dumps({"brokers": {str(b): f"{HOST}:{p}" for b, p in sorted(ports.items())}}) + "\n").encode()


def parse_ready(line: bytes | str) -> dict[int, tuple[str, int]]:
    """{broker: (host, port)} from the ready line (what TcpTransport's endpoint looks up)."""
    brokers = json.loads(line)["brokers"]
    return {int(b): (a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for b, a in brokers.items()}


class World:
    """The process's state: the brokers, the feeder and their two ZooKeeper sessions."""

    def __init__(self, brokers_store, feeder_store, n_partitions: int):
        self.brokers_store, self.feeder_store = brokers_store, feeder_store
        self.topics, self.targets = layout(n_partitions)
        self.brokers = InstantBrokers(brokers_store, self.topics)
        self.feeder = Feeder(feeder_store, self.targets)
        self.stop = asyncio.Event()
        self.feeding: asyncio.Task | None = None

    async def do(self, verb: str, arg):
        if verb == "feed":
            self.feeder.left_before_pause = (arg or {}).get("pause_at")
            self.feeding = asyncio.create_task(self.feeder.run(self.stop))
            return None
        if verb == "wait_paused":
            while not self.feeder.paused:
                await asyncio.sleep(0.005)
            return None
        if verb == "drained":
            return self.feeder.paused and await self.feeder_store.exists(paths.REASSIGN_PARTITIONS) is None
        if verb == "hold":
            self.brokers.hold()
            return None
        if verb == "wave":
            return await self.feeder.wave(arg["n"])
        if verb == "release":
            await self.brokers.release()
            return None
        if verb == "resume":
            self.feeder.resume()
            return None
        if verb == "after_kill":
            in_flight = await count_in_flight(self.feeder_store, self.topics)
            by_topic: dict[str, list[int]] = {}
            for t, p in sorted(await at_target(self.feeder_store, self.topics, self.targets)):
                by_topic.setdefault(t, []).append(p)
            return {"in_flight": in_flight, "at_target": by_topic}
        if verb == "stop_feeding":
            self.stop.set()
            if self.feeding is not None:
                await self.feeding
            return None
        if verb == "check":
            bad = []
            for topic, parts in self.topics.items():
                znode = json.loads((await self.brokers_store.get(paths.topic(topic)))[0])
                if (znode["adding_replicas"] or znode["removing_replicas"]
                        or any(znode["partitions"][str(p)] != self.targets[(topic, p)] for p in parts)):
                    bad.append(topic)
            return bad
        if verb == "status":
            return {"brokers": self.brokers.status(), "cpu_seconds": round(time.process_time(), 2),
                    "feeder": {"queued": len(self.feeder.queue), "paused": self.feeder.paused,
                               "left_before_pause": self.feeder.left_before_pause,
                               "feeding": self.feeding is not None and not self.feeding.done()}}
        raise ValueError(f"unknown verb {verb!r}")

    async def close(self):
        self.stop.set()
        if self.feeding is not None:
            self.feeding.cancel()
            await asyncio.gather(self.feeding, return_exceptions=True)
        await self.brokers.shutdown()
        await self.feeder_store.close()
        await self.brokers_store.close()


async def serve_process(hosts: str, n_partitions: int) -> None:
    from znodes.store import connect

    brokers_store = await connect(hosts, session_timeout=30, create_chroot=True)
    feeder_store = await connect(hosts, session_timeout=30)
    world = World(brokers_store, feeder_store, n_partitions)
    out = sys.stdout.buffer

    def answer(line: bytes) -> None:
        out.write(line)
        out.flush()

    try:
        ports = await world.brokers.serve()
        await create_cluster(brokers_store, world.topics, ports)
        answer(ready_line(ports))
        loop = asyncio.get_running_loop()
        stdin = asyncio.StreamReader(limit=CONTROL_LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
        running: set[asyncio.Task] = set()

        async def one(cid: int, verb: str, arg) -> None:
            try:
                result = await world.do(verb, arg)
            except Exception as e:  # told to the parent, which raises it
                log.exception("%s failed", verb)
                answer(reply_line(cid, error=f"{type(e).__name__}: {e}"))
            else:
                answer(reply_line(cid, result))

        while line := await stdin.readline():
            cid, verb, arg = parse_command(line)
            if verb == "exit":
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                await world.close()
                answer(reply_line(cid))
                return
            task = asyncio.create_task(one(cid, verb, arg))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        if not world.stop.is_set():  # EOF or an error: the parent is gone or failed
            await world.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zookeeper", required=True, help="connect string with the run's chroot")
    parser.add_argument("--partitions", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s instant brokers: %(message)s")
    asyncio.run(serve_process(args.zookeeper, args.partitions))
    return 0


# ---- the parent's end ------------------------------------------------------------------------------------


START_TIMEOUT_S = 300  # creating 100,000 partitions' znodes takes a while


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("instant brokers: %s", future.exception())


class InstantBrokersProcess:
    """The instant brokers' process, seen from the controller's: ``endpoints`` for
    TcpTransport, ``call`` (a verb, its answer) and ``send`` (a verb, not waited for)."""

    def __init__(self, proc: asyncio.subprocess.Process, endpoints: dict[int, tuple[str, int]]):
        self.proc = proc
        self.endpoints = endpoints
        self._ids = iter(range(1, 1 << 62))
        self._waiting: dict[int, asyncio.Future] = {}
        self._reading = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, hosts: str, n_partitions: int) -> InstantBrokersProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.instant_brokers", "--zookeeper", hosts, "--partitions", str(n_partitions),
            cwd=REPO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=CONTROL_LINE_LIMIT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                line = await proc.stdout.readline()
        except TimeoutError:
            proc.kill()
            raise
        if not line:
            await proc.wait()
            raise RuntimeError(f"the instant brokers did not start (exit {proc.returncode}; their stderr is above)")
        return cls(proc, parse_ready(line))

    def send(self, verb: str, arg=None) -> asyncio.Future:
        """Write the command now (no await: callable from a step hook); its answer's future."""
        cid = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        # An answer nobody awaits (send's) is still looked at: its error is not lost in a warning.
        future.add_done_callback(_retrieved)
        self._waiting[cid] = future
        self.proc.stdin.write(command_line(cid, verb, arg))
        return future

    async def call(self, verb: str, arg=None):
        return await self.send(verb, arg)

    async def _read(self) -> None:
        while line := await self.proc.stdout.readline():
            cid, ok, value = parse_reply(line)
            future = self._waiting.pop(cid, None)
            if future is None or future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(RuntimeError(f"instant brokers: {value}"))
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RuntimeError("the instant brokers' process ended"))
        self._waiting.clear()

    async def close(self) -> None:
        if self.proc.returncode is None:
            try:
                async with asyncio.timeout(30):
                    await self.call("exit")
                    await self.proc.wait()
            except (TimeoutError, RuntimeError, ConnectionError):
                if self.proc.returncode is None:
                    self.proc.kill()
                    await self.proc.wait()
        await asyncio.gather(self._reading, return_exceptions=True)


if __name__ == "__main__":
    sys.exit(main())
