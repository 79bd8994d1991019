"""The chaos workload: reassignments submitted, overridden, queued and cancelled through every
door, auto-removed throttles set, and topics of its own created, grown and deleted (KIP-4),
each recorded in the history with its outcome.

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
``create_topic``  CreateTopics (19) of a topic ``chaos-t<N>``: 1-4 partitions, replication factor
                  2-3, placed by the controller or (sometimes) given; now and then a name that
                  exists, a deleted one's again or a replication factor no cluster of 6 has (to
                  be refused); one in five new names goes in through ZooKeeper instead
                  (``create_topic_znode``: ``/config/topics/<t>`` and ``/brokers/topics/<t>``
                  written as a tool does, with its own assignment)
``delete_topic``  DeleteTopics (20) of one of its topics, or (one in three,
                  ``delete_topic_znode``) ``/admin/delete_topics/<t>`` created as
                  ``kafka-topics.sh --zookeeper --delete`` does
``create_partitions``  CreatePartitions (37): one of its topics grown by 1-2 partitions, placed by
                  the controller or (sometimes) given

The topic doors touch only the topics the workload created (``chaos-t<N>``), never the initial
ones the other doors move, so the two families never share a partition.

Each operation record: ``{"type": "op", "id", "door", "kind": "submit"|"cancel"|"throttle"|
"create_topic"|"delete_topic"|"create_partitions", "targets" or "partitions" or "topic", "t0",
"t1", "outcome": "accepted"|"refused"|"in_doubt", "results": {tp or topic: code}}`` (a topic op
also names its ``partitions``, ``replication_factor`` and ``assignment`` when it creates, its new
total ``count`` when it grows). ``in_doubt`` is an answer lost to a fault (the request may have
been applied; a topic's REQUEST_TIMED_OUT or UNKNOWN_SERVER_ERROR too). Operations on one
partition never overlap (a partition is busy from the request until the controller has taken it:
for the znode doors, until the znode no longer holds it), so the checker can order them; a
cancel-all waits until no partition is busy. Nor do operations on one topic: it is busy from the
request until its effect shows in ZooKeeper (created with every partition's state, grown, gone
with its marker), or a timeout; a topic whose op is in doubt and shows no effect is retired,
never asked for again, so that a request landing late cannot reorder its ops.

    workload = Workload(cluster, history, random.Random(7))
    task = asyncio.create_task(workload.run(stop_event))
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass

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
from protocol.primitives import ZERO_UUID
from tests.chaos.checker import IN_DOUBT_CODES
from tests.chaos.history import History

DOORS = {  # door -> weight
    "znode": 3, "reassign": 4, "alter": 3, "queue": 2, "cancel": 3, "alter_cancel": 2, "cancel_znode": 1, "throttle": 2,
    "elect_znode": 1,
    # Topic administration: about one op in six, so the reassignment doors still dominate.
    "create_topic": 2, "delete_topic": 1, "create_partitions": 1,
}
TOPIC_DOORS = ("create_topic", "delete_topic", "create_partitions")
TOPIC_PREFIX = "chaos-t"
# CreateTopics, CreatePartitions and DeleteTopics wait this long for leaders (or every replica
# gone) before answering REQUEST_TIMED_OUT: below the client's timeout, so that the controller's
# answer, not the client giving up, is what comes back.
TOPIC_TIMEOUT_MS = 5000
# How long a topic op in doubt is watched for its effect before the topic is retired: a request
# taken late lands within seconds of the fault, when it lands at all.
IN_DOUBT_WAIT_S = 8.0
WORKERS = 2
# How long a znode door waits for the controller to take what it wrote before giving up on
# ordering (the partition is then freed; the checker still sees the op as accepted).
CONSUME_TIMEOUT_S = 40.0
REQUEST_TIMEOUT_MS = 8000
THROTTLE_BYTES = (1024 * 1024, 8 * 1024 * 1024)


# The break-fence self-test's doors: none that writes throttles, so that the deposed
# controller's own throttle write (to_controller) meets no other writer of the removal lists
# and the broker configs, and lands.
# Nor the topic doors: the self-test keeps the workload it was measured with.
NO_THROTTLE_DOORS = {door: w for door, w in DOORS.items() if door not in ("throttle", "reassign", *TOPIC_DOORS)}


@dataclass
class _Topic:
    """What the workload knows of one of its topics: its partition count (None: absent) and
    replication factor; ``retired`` once an op in doubt left it unknown (never asked for again)."""

    name: str
    count: int | None = None
    rf: int = 0
    retired: bool = False
    ops: int = 0  # ops asked for so far (0: a name never used)


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
        self.topics: dict[str, _Topic] = {}  # the workload's own topics, by name
        self.topics_busy: set[str] = set()
        self.next_topic = 0

    # ---- scheduling ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._worker(stop) for _ in range(WORKERS)))

    async def _worker(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            door = self.rng.choices(list(self.doors), weights=list(self.doors.values()))[0]
            if door in TOPIC_DOORS:
                door, topic = self._acquire_topic(door)
                try:
                    await self._topic_op(door, topic)
                finally:
                    self.topics_busy.discard(topic.name)
                    self.last_op_end = time.time()
                try:
                    await asyncio.wait_for(stop.wait(), self.rng.uniform(0.2, 1.2))
                except TimeoutError:
                    pass
                continue
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

    async def _api(self, door: str, kind: str, t0: float, fields: dict, call, direct: tuple[str, int] | None = None,
                   topic: bool = False) -> str:
        """``direct``: the request goes to that node alone, over one connection, without the
        client's Metadata (which a node answers from ZooKeeper) and without its retries.
        ``topic``: a topic op, whose one topic's code is its outcome (IN_DOUBT_CODES in doubt:
        REQUEST_TIMED_OUT says the change may go on). Returns the outcome recorded."""
        admin = _Direct(*direct) if direct else AdminClient(
            self.cluster.bootstrap, client_id="chaos", request_timeout_ms=REQUEST_TIMEOUT_MS)
        outcome = "refused"
        try:
            try:
                await admin.start()
            except ReassignError as e:
                self._record(door, kind, t0, outcome, error=repr(e)[:300], **fields)
                return outcome
            try:
                result = await call(admin)
            except NotControllerError as e:  # never sent to an active controller
                self._record(door, kind, t0, outcome, error=repr(e)[:300], **fields)
                return outcome
            except (ConnectionFailedError, RequestTimedOutError, ProtocolViolationError, asyncio.TimeoutError) as e:
                # The AdminClient marks a connection lost after the request went out
                # (request_sent); one that failed before it never sent it. Only the topic doors
                # count that as a refusal: the others keep the in-doubt reading they were
                # measured with.
                unsent = topic and isinstance(e, ConnectionFailedError) and not getattr(e, "request_sent", False)
                outcome = "refused" if unsent else "in_doubt"
                self._record(door, kind, t0, outcome, error=repr(e)[:300], **fields)
                return outcome
            except KafkaApiError as e:
                # A request-wide error applied nothing - unless it says the controller's
                # ZooKeeper write broke off (REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR: "it may or
                # may not have been applied"), which leaves the request in doubt as the same
                # per-partition codes do (checker.IN_DOUBT_CODES).
                outcome = "in_doubt" if e.code in IN_DOUBT_CODES else "refused"
                self._record(door, kind, t0, outcome, error=repr(e)[:300], **fields)
                return outcome
            results = {_key(k): _code(v) for k, v in result.items()}
            if topic:
                code = next(iter(results.values()), -1)
                outcome = "accepted" if code == 0 else "in_doubt" if code in IN_DOUBT_CODES else "refused"
                messages = [getattr(v, "message", None) for v in result.values()]
                if messages and messages[0]:
                    fields = {**fields, "error": messages[0][:300]}
            else:
                accepted = any(c == 0 for c in results.values()) or (kind == "cancel" and fields.get("partitions") is None)
                outcome = "accepted" if accepted else "refused"
            self._record(door, kind, t0, outcome, results=results, **fields)
            return outcome
        finally:
            await admin.close()

    async def _create_znode(self, path: str, data: bytes, makepath: bool = False) -> str:
        zk = self.cluster.kazoo
        try:
            await asyncio.to_thread(zk.create, path, data, makepath=makepath)
            return "accepted"
        except NodeExistsError:
            return "refused"  # as Kafka's tool: one is already there
        except NoNodeError:
            return "refused"
        except KazooException:
            return await self._landed(path)

    async def _landed(self, path: str) -> str:
        """After a connection loss during a create of ``path``: it may have landed. Look once
        the connection is back."""
        zk = self.cluster.kazoo
        for _ in range(100):
            try:
                stat = await asyncio.to_thread(zk.exists, path)
                return "in_doubt" if stat is not None else "refused"
            except KazooException:
                await asyncio.sleep(0.2)
        return "in_doubt"

    # ---- topic operations ------------------------------------------------------------------------

    def _acquire_topic(self, door: str) -> tuple[str, _Topic]:
        """The door to take and the topic it works on, marked busy: for a delete or a grow one of
        the workload's topics that exists (with none free, a topic is created instead); for a
        create mostly a new name, now and then one that exists (to be refused) or one deleted or
        never created (created again)."""
        free = [t for n, t in sorted(self.topics.items()) if not t.retired and n not in self.topics_busy]
        existing = [t for t in free if t.count is not None]
        if door != "create_topic" and not existing:
            door = "create_topic"
        if door != "create_topic":
            topic = self.rng.choice(existing)
        else:
            r, absent = self.rng.random(), [t for t in free if t.count is None]
            if r < 0.1 and existing:
                topic = self.rng.choice(existing)
            elif r < 0.25 and absent:
                topic = self.rng.choice(absent)
            else:
                self.next_topic += 1
                name = f"{TOPIC_PREFIX}{self.next_topic}"
                topic = self.topics[name] = _Topic(name)
        self.topics_busy.add(topic.name)
        return door, topic

    def _up(self) -> list[int]:
        return [b for b in self.cluster.broker_ids if b not in self.cluster.brokers_down]

    async def _topic_op(self, door: str, topic: _Topic) -> None:
        t0 = time.time()
        name, pool = topic.name, self._up()
        if door == "create_topic":
            existed, fresh = topic.count is not None, topic.ops == 0
            topic.ops += 1
            partitions, rf = self.rng.randint(1, 4), self.rng.randint(2, 3)
            if not existed and self.rng.random() < 0.08:
                rf = len(self.cluster.broker_ids) + 1  # INVALID_REPLICATION_FACTOR: it must write nothing
            given = rf <= len(pool) and self.rng.random() < 0.3
            if fresh and rf <= len(pool) and self.rng.random() < 0.2:
                # A tool's creation through ZooKeeper; a name never used, as a tool finding a
                # deletion marker or the topic itself would refuse (AdminZkClient).
                assignment = [self.rng.sample(pool, rf) for _ in range(partitions)]
                outcome = await self._create_topic_znode(name, assignment)
                self._record("create_topic_znode", "create_topic", t0, outcome, topic=name, partitions=partitions,
                             replication_factor=rf, assignment=assignment)
            else:
                assignment = [self.rng.sample(pool, rf) for _ in range(partitions)] if given else None
                outcome = await self._api(door, "create_topic", t0, {"topic": name, "partitions": partitions,
                                                                      "replication_factor": rf, "assignment": assignment},
                                          lambda a: _create_topic(a, name, partitions, rf, assignment), topic=True)
            if existed:
                return  # it existed: whatever the answer, this create could not have made it
            if await self._topic_shows(topic, outcome, partitions):
                topic.rf = rf
        elif door == "delete_topic":
            topic.ops += 1
            if self.rng.random() < 1 / 3:
                # kafka-topics.sh --zookeeper --delete: the marker, its parent made if missing.
                outcome = await self._create_znode(f"/admin/delete_topics/{name}", b"", makepath=True)
                self._record("delete_topic_znode", "delete_topic", t0, outcome, topic=name)
            else:
                outcome = await self._api(door, "delete_topic", t0, {"topic": name},
                                          lambda a: _delete_topic(a, name), topic=True)
            await self._topic_shows(topic, outcome, None)
        else:
            topic.ops += 1
            total = topic.count + self.rng.randint(1, 2)
            given = topic.rf <= len(pool) and self.rng.random() < 0.3
            assignment = [self.rng.sample(pool, topic.rf) for _ in range(total - topic.count)] if given else None
            outcome = await self._api(door, "create_partitions", t0,
                                      {"topic": name, "count": total, "assignment": assignment},
                                      lambda a: _create_partitions(a, name, total, assignment), topic=True)
            await self._topic_shows(topic, outcome, total)

    async def _topic_shows(self, topic: _Topic, outcome: str, count: int | None) -> bool:
        """Until the op's effect shows in ZooKeeper (``count`` partitions, each with its state
        znode, and no deletion marker; None: no topic znode and no marker), for an op accepted
        up to CONSUME_TIMEOUT_S, for one in doubt IN_DOUBT_WAIT_S. Seen: the workload knows the
        topic's count; not seen: the topic is retired. A refused op changed nothing."""
        if outcome == "refused":
            return False
        deadline = time.monotonic() + (CONSUME_TIMEOUT_S if outcome == "accepted" else IN_DOUBT_WAIT_S)
        while True:
            try:
                shape = await asyncio.to_thread(_topic_shape, self.cluster.kazoo, topic.name)
            except KazooException:
                shape = "unknown"
            if shape == count:
                topic.count = count
                return True
            if time.monotonic() >= deadline:
                # Unknown from here on: a request still on its way could land after the next op.
                topic.retired = True
                self.history.add("topic_retired", topic=topic.name, outcome=outcome, wanted=count, seen=shape)
                return False
            await asyncio.sleep(0.2)

    async def _create_topic_znode(self, name: str, assignment: list[list[int]]) -> str:
        """A tool's topic creation through ZooKeeper (Kafka's AdminZkClient): the topic's config
        and its topic znode (version 2, no topic id: the controller gives it one). One
        transaction here, where Kafka's tool writes one after the other, so that a fault cannot
        leave the config alone, which the checker would take for a creation left half-done."""
        zk = self.cluster.kazoo
        doc = {"version": 2, "partitions": {str(p): r for p, r in enumerate(assignment)},
               "adding_replicas": {}, "removing_replicas": {}}

        def commit() -> list:
            tx = zk.transaction()
            tx.create(f"/config/topics/{name}", b'{"version":1,"config":{}}')
            tx.create(f"/brokers/topics/{name}", json.dumps(doc).encode())
            return tx.commit()

        try:
            results = await asyncio.to_thread(commit)
        except KazooException:
            return await self._landed(f"/brokers/topics/{name}")
        return "refused" if any(isinstance(r, Exception) for r in results) else "accepted"

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
    return tp if isinstance(tp, str) else f"{tp[0]}/{tp[1]}"  # a topic op's results are by topic


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


def _topic_shape(zk, name: str) -> int | str | None:
    """What ZooKeeper shows of topic ``name``: None (no topic znode, no deletion marker), its
    partition count once every partition has its state znode, else "deleting" or "creating"."""
    marked = zk.exists(f"/admin/delete_topics/{name}") is not None
    try:
        partitions = json.loads(zk.get(f"/brokers/topics/{name}")[0])["partitions"]
    except NoNodeError:
        return "deleting" if marked else None
    if marked:
        return "deleting"
    if all(zk.exists(f"/brokers/topics/{name}/partitions/{p}/state") for p in partitions):
        return len(partitions)
    return "creating"


async def _topic_request(admin: AdminClient, api_key: int, body, field: str, name: str) -> dict[str, _CodeError | None]:
    """One topic's request to the active controller; its answer's code for the topic (-1 if
    the answer does not name it)."""

    def codes(answer: dict) -> list[int]:
        return [t.get("error_code", 0) for t in answer.get(field) or []]

    _, answer = await admin._controller_request(api_key, body, codes)
    found = [t for t in answer.get(field) or [] if t.get("name") == name]
    code = found[0].get("error_code", 0) if found else -1
    return {name: None if code == 0 else _CodeError(code, found[0].get("error_message") if found else "not answered")}


async def _create_topic(admin: AdminClient, name: str, partitions: int, rf: int,
                        assignment: list[list[int]] | None) -> dict[str, _CodeError | None]:
    """CreateTopics (KIP-4): ``partitions`` x ``rf`` placed by the controller, or ``assignment``
    (one replica list per partition; count and factor -1, as Kafka's clients send it)."""
    entry = {"name": name, "num_partitions": -1 if assignment else partitions,
             "replication_factor": -1 if assignment else rf,
             "assignments": [{"partition_index": p, "broker_ids": r} for p, r in enumerate(assignment or ())],
             "configs": []}
    body = {"topics": [entry], "timeout_ms": TOPIC_TIMEOUT_MS, "validate_only": False}
    return await _topic_request(admin, ApiKey.CREATE_TOPICS, body, "topics", name)


async def _delete_topic(admin: AdminClient, name: str) -> dict[str, _CodeError | None]:
    """DeleteTopics (KIP-4), by name (v6 names topics by name or id)."""

    def body(version: int) -> dict:
        if version >= 6:
            return {"topics": [{"name": name, "topic_id": ZERO_UUID}], "timeout_ms": TOPIC_TIMEOUT_MS}
        return {"topic_names": [name], "timeout_ms": TOPIC_TIMEOUT_MS}

    return await _topic_request(admin, ApiKey.DELETE_TOPICS, body, "responses", name)


async def _create_partitions(admin: AdminClient, name: str, total: int,
                             assignment: list[list[int]] | None) -> dict[str, _CodeError | None]:
    """CreatePartitions (KIP-195): ``name`` grown to ``total``, the new ones placed by the
    controller or as ``assignment`` gives them."""
    given = None if assignment is None else [{"broker_ids": r} for r in assignment]
    body = {"topics": [{"name": name, "count": total, "assignments": given}], "timeout_ms": TOPIC_TIMEOUT_MS,
            "validate_only": False}
    return await _topic_request(admin, ApiKey.CREATE_PARTITIONS, body, "results", name)


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
    def __init__(self, code: int, message: str | None = None):
        super().__init__(f"error code {code}")
        self.code = code
        self.message = message  # the answer's error_message, where it has one (the topic ops' history)
