"""The chaos workload: reassignments submitted, overridden, queued and cancelled through every
door, and auto-removed throttles set, each recorded in the history with its outcome.

Doors (DESIGN.md sections 3-5):

``znode``         ``/admin/reassign_partitions`` created in Kafka's plain format (no
                  ``original_replicas``), as a third-party tool writes it
``reassign``      ReassignPartitions v1 (KIP-179, additional), sometimes with an auto-removed throttle
``alter``         AlterPartitionReassignments (KIP-455); a target for a moving partition overrides it
``queue``         ``/admin/reassign_partitions_queue`` (KIP-236)
``cancel``        CancelReassignments for listed partitions, or for every pending one
``alter_cancel``  AlterPartitionReassignments with a null replica list (KIP-455's cancel)
``cancel_znode``  ``/admin/cancel_reassignment_in_progress`` (KIP-236)
``throttle``      AlterInterbrokerThrottledRates / Replicas with auto-removal, then a reassignment
                  over those brokers
``elect_znode``   ``/admin/preferred_replica_election`` (Kafka's ZooKeeper door to preferred leader
                  elections), as ``kafka-preferred-replica-election.sh --zookeeper`` writes it;
                  it changes no replica list, and the final state must not hold it

Each operation record: ``{"type": "op", "id", "door", "kind": "submit"|"cancel"|"throttle",
"targets" or "partitions", "t0", "t1", "outcome": "accepted"|"refused"|"in_doubt", "results":
{tp: code}}``. ``in_doubt`` is an answer lost to a fault (the request may have been applied).
Operations on one partition never overlap (a partition is busy from the request until the
controller has taken it: for the znode doors, until the znode no longer holds it), so the
checker can order them; a cancel-all waits until no partition is busy.

    workload = Workload(cluster, history, random.Random(7))
    task = asyncio.create_task(workload.run(stop_event))
"""

from __future__ import annotations

import asyncio
import json
import random
import time

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from client.admin import AdminClient
from client.errors import (
    ConnectionFailedError,
    KafkaApiError,
    NotControllerError,
    ProtocolViolationError,
    ReassignError,
    RequestTimedOutError,
)
from client.transport import NodeConnection
from protocol import ApiKey
from tests.chaos.checker import IN_DOUBT_CODES
from tests.chaos.history import History

DOORS = {  # door -> weight
    "znode": 3, "reassign": 4, "alter": 3, "queue": 2, "cancel": 3, "alter_cancel": 2, "cancel_znode": 1, "throttle": 2,
    "elect_znode": 1,
}
WORKERS = 2
# How long a znode door waits for the controller to take what it wrote before giving up on
# ordering (the partition is then freed; the checker still sees the op as accepted).
CONSUME_TIMEOUT_S = 40.0
REQUEST_TIMEOUT_MS = 8000
THROTTLE_BYTES = (1024 * 1024, 8 * 1024 * 1024)


# The break-fence self-test's doors: none that writes throttles, so that the deposed
# controller's own throttle write (to_controller) meets no other writer of the removal lists
# and the broker configs, and lands.
NO_THROTTLE_DOORS = {door: w for door, w in DOORS.items() if door not in ("throttle", "reassign")}


class Workload:
    def __init__(self, cluster, history: History, rng: random.Random, doors: dict | None = None):
        self.cluster = cluster
        self.history = history
        self.rng = rng
        self.doors = doors or DOORS
        self.partitions = sorted(cluster.initial_assignments)
        self.busy: set[str] = set()
        self.exclusive = False
        self.changed = asyncio.Condition()
        self.next_id = 0
        self.last_op_end = time.time()
        self.counts: dict[str, int] = {}

    # ---- scheduling ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._worker(stop) for _ in range(WORKERS)))

    async def _worker(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            door = self.rng.choices(list(self.doors), weights=list(self.doors.values()))[0]
            everything = door == "cancel_znode" or (door == "cancel" and self.rng.random() < 0.3)
            # Cancels mostly aim at partitions that are moving (else they find nothing to do).
            prefer = await self._moving() if door in ("cancel", "alter_cancel") else []
            picked = await self._acquire(everything, prefer)
            try:
                await self._do(door, picked, everything)
            finally:
                await self._release(picked, everything)
                self.last_op_end = time.time()
            try:
                await asyncio.wait_for(stop.wait(), self.rng.uniform(0.2, 1.2))
            except TimeoutError:
                pass

    async def _moving(self) -> list[str]:
        zk = self.cluster.kazoo
        try:
            topics = await asyncio.to_thread(zk.get_children, "/admin/reassignments")
            out = []
            for t in topics:
                out += [f"{t}/{p}" for p in await asyncio.to_thread(zk.get_children, f"/admin/reassignments/{t}")]
            return out
        except KazooException:
            return []

    async def _acquire(self, everything: bool, prefer: list[str] = ()) -> list[str]:
        async with self.changed:
            if everything:
                await self.changed.wait_for(lambda: not self.exclusive)
                self.exclusive = True
                await self.changed.wait_for(lambda: not self.busy)
                return list(self.partitions)
            await self.changed.wait_for(lambda: not self.exclusive and len(self.busy) < len(self.partitions))
            free = [tp for tp in self.partitions if tp not in self.busy]
            preferred = [tp for tp in prefer if tp in free]
            if preferred and self.rng.random() < 0.8:
                free = preferred
            picked = self.rng.sample(free, min(len(free), self.rng.randint(1, 3)))
            self.busy.update(picked)
            return picked

    async def _release(self, picked: list[str], everything: bool) -> None:
        async with self.changed:
            if everything:
                self.exclusive = False
            else:
                self.busy.difference_update(picked)
            self.changed.notify_all()

    # ---- operations ----------------------------------------------------------------------------

    def _target(self, tp: str) -> list[int]:
        up = [b for b in self.cluster.broker_ids if b not in self.cluster.brokers_down]
        pool = up if len(up) >= 3 else self.cluster.broker_ids
        return self.rng.sample(pool, 3)

    def _record(self, door: str, kind: str, t0: float, outcome: str, **fields) -> None:
        self.next_id += 1
        self.counts[door] = self.counts.get(door, 0) + 1
        self.history.add("op", id=self.next_id, door=door, kind=kind, t0=round(t0, 4), t1=round(time.time(), 4),
                         outcome=outcome, **fields)

    async def to_controller(self, cid: int, ready: asyncio.Event, go: asyncio.Event) -> str | None:
        """The break-fence self-test's write: AlterInterbrokerThrottledRates (auto-removable
        rates on two brokers) sent to controller ``cid`` alone, however the cluster's election
        stands - a deposed controller that has not yet heard so takes it and writes its removal
        znode and the broker configs, conditional only on what it has just read. (A reassignment
        would not do: its entries are written conditional on the version of
        ``/admin/reassign_partitions`` the deposed controller holds, which the new controller's
        own writes make stale, so the zombie's write fails before the fence is even asked.)
        Sets ``ready`` and waits for ``go``; returns the brokers throttled."""
        brokers = sorted(self.rng.sample(range(1, 7), 2))
        rate = self.rng.randint(*THROTTLE_BYTES)
        ready.set()
        await go.wait()
        t0 = time.time()
        await self._api("rates", "throttle", t0, {"brokers": brokers, "throttle": rate},
                        lambda a: _rates(a, {b: rate for b in brokers}),
                        ("127.0.0.1", self.cluster.listen_ports[cid]))
        self.last_op_end = time.time()
        return ",".join(map(str, brokers))

    async def _do(self, door: str, picked: list[str], everything: bool, direct: tuple[str, int] | None = None,
                  **extra) -> None:
        t0 = time.time()
        if door in ("znode", "queue"):
            targets = {tp: self._target(tp) for tp in picked}
            path = "/admin/reassign_partitions" if door == "znode" else "/admin/reassign_partitions_queue"
            outcome = await self._create_znode(path, _document(targets))
            self._record(door, "submit", t0, outcome, targets=targets)
            if outcome != "refused":
                await self._consumed(path, picked if door == "znode" else None)
        elif door == "elect_znode":
            path = "/admin/preferred_replica_election"
            entries = [{"topic": _tp(k)[0], "partition": _tp(k)[1]} for k in picked]
            outcome = await self._create_znode(path, json.dumps({"version": 1, "partitions": entries}).encode())
            self._record(door, "elect", t0, outcome, partitions=picked)
            if outcome != "refused":
                await self._consumed(path, None)
        elif door == "cancel_znode":
            outcome = await self._create_znode("/admin/cancel_reassignment_in_progress", b"")
            self._record(door, "cancel", t0, outcome, partitions=None)
            if outcome != "refused":
                await self._consumed("/admin/cancel_reassignment_in_progress", None)
        elif door == "reassign":
            targets = {tp: self._target(tp) for tp in picked}
            throttle = self.rng.randint(*THROTTLE_BYTES) if self.rng.random() < 0.5 else None
            await self._api(door, "submit", t0, {"targets": targets, "throttle": throttle},
                            lambda a: a.reassign_partitions(_keys(targets), throttle=throttle, additional=True))
        elif door == "alter":
            targets = {tp: self._target(tp) for tp in picked}
            await self._api(door, "submit", t0, {"targets": targets, **extra}, lambda a: _alter(a, targets), direct)
        elif door == "alter_cancel":
            await self._api(door, "cancel", t0, {"partitions": picked},
                            lambda a: _alter(a, {tp: None for tp in picked}))
        elif door == "cancel":
            listed = None if everything else picked
            await self._api(door, "cancel", t0, {"partitions": listed},
                            lambda a: a.cancel_reassignments(None if listed is None else [_tp(k) for k in listed]))
        elif door == "throttle":
            targets = {tp: self._target(tp) for tp in picked}
            brokers = sorted({b for t in targets.values() for b in t})
            rate = self.rng.randint(*THROTTLE_BYTES)

            async def throttle_then_move(a: AdminClient):
                rates = await a.alter_interbroker_throttled_rates({b: (rate, rate) for b in brokers}, auto_remove=True)
                replicas = await a.alter_interbroker_throttled_replicas(
                    {_tp(tp): t for tp, t in targets.items()}, auto_remove=True)
                self.history.add("throttle_set", brokers=brokers, rate=rate,
                                 rates={str(k): _code(v) for k, v in rates.items()},
                                 replicas={_key(k): _code(v) for k, v in replicas.items()})
                return await a.reassign_partitions(_keys(targets), additional=True)

            await self._api(door, "submit", t0, {"targets": targets, "throttle": rate}, throttle_then_move)

    async def _api(self, door: str, kind: str, t0: float, fields: dict, call, direct: tuple[str, int] | None = None) -> None:
        """``direct``: the request goes to that node alone, over one connection, without the
        client's Metadata (which a node answers from ZooKeeper) and without its retries."""
        admin = _Direct(*direct) if direct else AdminClient(
            self.cluster.bootstrap, client_id="chaos", request_timeout_ms=REQUEST_TIMEOUT_MS)
        try:
            try:
                await admin.start()
            except ReassignError as e:
                self._record(door, kind, t0, "refused", error=repr(e)[:300], **fields)
                return
            try:
                result = await call(admin)
            except NotControllerError as e:  # never sent to an active controller
                self._record(door, kind, t0, "refused", error=repr(e)[:300], **fields)
                return
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError, asyncio.TimeoutError) as e:
                self._record(door, kind, t0, "in_doubt", error=repr(e)[:300], **fields)
                return
            except KafkaApiError as e:
                # A request-wide error applied nothing - unless it says the controller's
                # ZooKeeper write broke off (REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR: "it may or
                # may not have been applied"), which leaves the request in doubt as the same
                # per-partition codes do (checker.IN_DOUBT_CODES).
                outcome = "in_doubt" if e.code in IN_DOUBT_CODES else "refused"
                self._record(door, kind, t0, outcome, error=repr(e)[:300], **fields)
                return
            results = {_key(k): _code(v) for k, v in result.items()}
            accepted = any(c == 0 for c in results.values()) or (kind == "cancel" and fields.get("partitions") is None)
            self._record(door, kind, t0, "accepted" if accepted else "refused", results=results, **fields)
        finally:
            await admin.close()

    async def _create_znode(self, path: str, data: bytes) -> str:
        zk = self.cluster.kazoo
        try:
            await asyncio.to_thread(zk.create, path, data)
            return "accepted"
        except NodeExistsError:
            return "refused"  # as Kafka's tool: one is already there
        except NoNodeError:
            return "refused"
        except KazooException:
            # Connection loss: the create may have landed. Look once it is back.
            for _ in range(100):
                try:
                    stat = await asyncio.to_thread(zk.exists, path)
                    return "in_doubt" if stat is not None else "refused"
                except KazooException:
                    await asyncio.sleep(0.2)
            return "in_doubt"

    async def _consumed(self, path: str, partitions: list[str] | None) -> None:
        """Until the controller has taken what a tool wrote (the znode gone, or no longer
        naming these partitions)."""
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        zk = self.cluster.kazoo
        while time.monotonic() < deadline:
            try:
                data, _ = await asyncio.to_thread(zk.get, path)
            except NoNodeError:
                return
            except KazooException:
                data = None
            if data is not None and partitions is not None:
                try:
                    listed = {f"{e['topic']}/{e['partition']}" for e in json.loads(data)["partitions"]}
                except (ValueError, KeyError, TypeError):
                    listed = set()
                if not listed & set(partitions):
                    return
            await asyncio.sleep(0.2)
        self.history.add("slow_consume", path=path, partitions=partitions)


def _tp(key: str) -> tuple[str, int]:
    topic, p = key.split("/")
    return topic, int(p)


def _key(tp) -> str:
    return f"{tp[0]}/{tp[1]}"


def _keys(targets: dict[str, list[int]]) -> dict[tuple[str, int], list[int]]:
    return {_tp(k): v for k, v in targets.items()}


def _code(error) -> int:
    if error is None:
        return 0
    return getattr(error, "code", -1)


def _document(targets: dict[str, list[int]]) -> bytes:
    """Kafka's plain reassignment format, as a third-party tool writes it."""
    entries = [{"topic": _tp(k)[0], "partition": _tp(k)[1], "replicas": r} for k, r in sorted(targets.items())]
    return json.dumps({"version": 1, "partitions": entries}).encode()


async def _alter(admin: AdminClient, targets: dict[str, list[int] | None]) -> dict[tuple[str, int], KafkaApiError | None]:
    """AlterPartitionReassignments (KIP-455), the API Kafka's own admin clients use."""
    by_topic: dict[str, list[dict]] = {}
    for k, replicas in sorted(targets.items()):
        topic, p = _tp(k)
        by_topic.setdefault(topic, []).append({"partition_index": p, "replicas": replicas})
    body = {"timeout_ms": REQUEST_TIMEOUT_MS, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

    def codes(answer: dict) -> list[int]:
        return [answer.get("error_code", 0)] + [
            p.get("error_code", 0) for t in answer.get("responses") or [] for p in t.get("partitions") or []
        ]

    _, answer = await admin._controller_request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, codes)
    if answer.get("error_code", 0):
        raise KafkaApiError(answer.get("error_message") or "request failed", code=answer["error_code"])
    out: dict = {}
    for t in answer.get("responses") or []:
        for p in t.get("partitions") or []:
            code = p.get("error_code", 0)
            out[(t["name"], p["partition_index"])] = None if code == 0 else _CodeError(code)
    return {_tp(k): out.get(_tp(k), _CodeError(-1)) for k in targets}


async def _rates(admin: AdminClient, rates: dict[int, int]) -> dict[tuple[str, int], KafkaApiError | None]:
    """AlterInterbrokerThrottledRates (KIP-179) with auto-removal: both rates on each broker
    (results keyed ("broker", id))."""
    body = {"broker_throttles": [{"broker_id": b, "leader_rate": r, "follower_rate": r} for b, r in sorted(rates.items())],
            "remove_throttle": True, "timeout": REQUEST_TIMEOUT_MS, "validate_only": False}

    def codes(answer: dict) -> list[int]:
        return [b.get("error_code", 0) for b in answer.get("broker_error") or []]

    _, answer = await admin._controller_request(ApiKey.ALTER_INTERBROKER_THROTTLED_RATES, body, codes)
    return {("broker", b["broker_id"]): None if not b.get("error_code") else _CodeError(b["error_code"])
            for b in answer.get("broker_error") or []}


class _Direct:
    """An AdminClient's ``_controller_request`` to one node, as it is: no Metadata, no retry."""

    def __init__(self, host: str, port: int):
        self.addr = (host, port)
        self.conn: NodeConnection | None = None

    async def start(self) -> None:  # ConnectionFailedError (a ReassignError): refused, as start's
        self.conn = await NodeConnection.open(*self.addr, client_id="chaos", request_timeout_ms=REQUEST_TIMEOUT_MS)

    async def _controller_request(self, api_key: int, body, codes, versions=None) -> tuple[int, dict]:
        assert self.conn is not None
        return await self.conn.request(api_key, body, versions)

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


class _CodeError(Exception):
    def __init__(self, code: int):
        super().__init__(f"error code {code}")
        self.code = code
