"""Controller -> broker requests as data: LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6,
DescribeLogDirs v1 (what a registering broker hosts: controller.core.engine step 9).

Pure. Bodies are the codec's dicts (snake_case field names of Kafka's message specs). The
engine collects per-broker entries in an :class:`Outbox` during a step and turns them into one
request per broker and API at the end of it, so a step touching 10,000 partitions sends a
handful of requests, not 10,000.

    box = Outbox(controller_id=101, epoch=3, brokers={1: Broker(1, "127.0.0.1", 9092)})
    box.leader_and_isr(1, ("t", 0), state, replicas=(1, 2), adding=(2,), removing=(), is_new=False)
    box.commands()   # [BrokerCommand(broker_id=1, api_key=4, api_version=4, body={...})]
    hosted_replicas(describe_log_dirs_answer)     # ({("t", 0), ...}, {("t", 0): 1048576, ...}), or None if it failed
    hosted_replicas(answer, online_only=True)     # the same from the directories that answered
    log_dir_failed(answer)                        # True if a directory could not be described
    hosted_sizes(describe_log_dirs_answer)        # {("t", 0): 1048576, ...}, failed dirs left out
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.core.shared_body import per_broker_bodies
from protocol import ApiKey
from znodes.models import SECURITY_PROTOCOLS
from znodes.values import Broker, LeaderIsr, TopicPartition, topic_uuid

# bench/controller.py imports this name from here.
LEADER_AND_ISR = ApiKey.LEADER_AND_ISR
# The versions the controller <-> broker contract fixes.
# Kafka 2.8+'s (KIP-516): each topic with its topic id, so brokers learn the ids; LeaderAndIsr's
# ``type`` is left 0 (unknown), as Kafka's ZooKeeper-mode controller builds it outside a KRaft
# migration. The answer comes per topic id (:func:`answer_by_name` puts the names back).
LEADER_AND_ISR_VERSION = 5
STOP_REPLICA_VERSION = 3
UPDATE_METADATA_VERSION = 7
DESCRIBE_LOG_DIRS_VERSION = 1  # KIP-113; what a broker hosts is the same in every version

LISTENER = "PLAINTEXT"
PLAINTEXT_PROTOCOL = 0  # Kafka's SecurityProtocol id for PLAINTEXT


def _endpoints(b: Broker) -> list[dict]:
    """Every endpoint the broker registered, as UpdateMetadata tells the brokers (Kafka's
    controller sends them all: a broker answers Metadata on each listener with its peers'
    endpoints of that listener); only host/port known: the PLAINTEXT one."""
    if not b.endpoints:
        return [{"port": b.port, "host": b.host, "listener": LISTENER, "security_protocol": PLAINTEXT_PROTOCOL}]
    return [{"port": port, "host": host, "listener": name, "security_protocol": SECURITY_PROTOCOLS.index(protocol)}
            for name, host, port, protocol in b.endpoints]


@dataclass(frozen=True, slots=True)
class BrokerCommand:
    broker_id: int
    api_key: int
    api_version: int
    body: dict = field(compare=False)
    # StopReplica: the partitions whose move waits for this request to have been sent (a
    # deletion no move waits for - an override's dropped replica, a stray - is not listed).
    partitions: tuple[TopicPartition, ...] = ()
    # ``body`` already encoded (controller.core.shared_body), for transports that take it as is.
    encoded: bytes | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return {
            ApiKey.LEADER_AND_ISR: "LeaderAndIsr", ApiKey.STOP_REPLICA: "StopReplica", ApiKey.UPDATE_METADATA: "UpdateMetadata",
            ApiKey.DESCRIBE_LOG_DIRS: "DescribeLogDirs",
        }.get(self.api_key, str(self.api_key))


def _grouped(entries: dict[TopicPartition, dict], topic_ids=None) -> list[dict]:
    """Entries per topic, in their order; with ``topic_ids`` (name -> the topic znode's id text),
    each topic carries its id (the zero UUID for a topic without one)."""
    by_topic: dict[str, list[dict]] = {}
    last, states = None, []
    for (topic, _), entry in entries.items():
        # A step's entries come topic by topic: look the list up only when the topic changes
        # (setdefault built a throwaway list per entry, ~15 entries per partition moved).
        if topic != last:
            states = by_topic.get(topic)
            if states is None:
                states = by_topic[topic] = []
            last = topic
        states.append(entry)
    if topic_ids is None:
        return [{"topic_name": topic, "partition_states": states} for topic, states in by_topic.items()]
    return [{"topic_name": topic, "topic_id": topic_uuid(topic_ids.get(topic)), "partition_states": states}
            for topic, states in by_topic.items()]


def answer_by_name(request: dict, answer: dict) -> dict:
    """A LeaderAndIsr answer as versions 0-4 give it (``partition_errors`` with topic names): a
    version 5+ answer names topics by id, the ids ``request`` gave them."""
    topics = answer.get("topics")
    if not topics:  # versions 0-4 (a decoded answer has every field: ``topics`` empty there)
        return answer
    names = {t.get("topic_id"): t.get("topic_name") for t in request.get("topic_states") or ()}
    errors = [{**e, "topic_name": names.get(t.get("topic_id"))} for t in topics for e in t.get("partition_errors") or ()]
    return {**answer, "partition_errors": errors}


class Outbox:
    """Per-broker requests being assembled by one engine step (later entries win per partition)."""

    def __init__(self, controller_id: int, epoch: int, brokers: dict[int, Broker], live_for=None, topic_ids=None,
                 nodes: dict[int, Broker] | None = None):
        self.controller_id = controller_id
        self.epoch = epoch
        self.brokers = brokers
        # The controller instances, listed with the live brokers in UpdateMetadata (not sent
        # requests): Kafka 3.x brokers look the controller up there by controller_id.
        self.nodes = nodes if nodes is not None else {}
        self.topic_ids = topic_ids if topic_ids is not None else {}  # topic -> its id (KIP-516), for LeaderAndIsr v5 / UpdateMetadata v7
        # (live brokers, partition) -> the brokers whose replica of it is online
        # (working_set.eligible_replicas: a replica on a failed log directory, or of a broker
        # shutting down, is offline in UpdateMetadata too); None: the live brokers.
        self.live_for = live_for
        self._lai: dict[int, dict[TopicPartition, dict]] = {}
        self._stop: dict[int, dict[TopicPartition, dict]] = {}
        self._stop_waited: dict[int, set[TopicPartition]] = {}  # stops a move waits for
        self._describe: set[int] = set()  # brokers asked what they host
        self._metadata: dict[TopicPartition, dict] = {}
        # UpdateMetadata for some brokers only (a full one to a broker that just registered).
        self._metadata_to: dict[tuple[int, ...], dict[TopicPartition, dict]] = {}
        self._lai_last: dict[bool, tuple] = {}  # is_new -> (the arguments, the entry) last built
        self._live_changed = False

    def leader_and_isr(self, broker_id: int, tp: TopicPartition, state: LeaderIsr, *, replicas, adding, removing, is_new) -> None:
        # The engine tells every replica of a partition the same thing in a row: those brokers
        # share one entry (read-only from here on) instead of a copy each.
        last = self._lai_last.get(is_new)
        if (
            last is not None
            and last[0] is tp
            and last[1] is state
            and last[2] is replicas
            and last[3] is adding
            and last[4] is removing
        ):
            self._lai.setdefault(broker_id, {})[tp] = last[5]
            return
        entry = self._lai.setdefault(broker_id, {})[tp] = _lai_state(tp, state, replicas, adding, removing, is_new)
        self._lai_last[is_new] = (tp, state, replicas, adding, removing, entry)

    def leader_and_isr_replicas(self, tp: TopicPartition, state: LeaderIsr, *, replicas, adding, removing, new=()) -> None:
        """:meth:`leader_and_isr` to every live broker of ``replicas``, ``is_new`` for those in
        ``new``, in one call: at most two entries (``is_new`` or not), shared by the brokers.
        A move's start and completion tell every replica this (a call per replica was a
        measurable part of a step completing 10,000 partitions)."""
        lai, live = self._lai, self.brokers
        old = fresh = None
        for b in replicas:
            if b not in live:
                continue
            if b in new:
                if fresh is None:
                    fresh = {**old, "is_new": True} if old is not None else _lai_state(tp, state, replicas, adding, removing, True)
                entry = fresh
            else:
                if old is None:
                    old = {**fresh, "is_new": False} if fresh is not None else _lai_state(tp, state, replicas, adding, removing, False)
                entry = old
            entries = lai.get(b)
            if entries is None:
                entries = lai[b] = {}
            entries[tp] = entry

    def leader_and_isr_held(self, tp: TopicPartition, state: LeaderIsr, replicas) -> None:
        """The state held, to every live broker of ``replicas`` this step has no LeaderAndIsr
        entry of ``tp`` for yet (engine step 8b: a resend never replaces what the step decided);
        one entry shared by them all."""
        entry = None
        for broker_id in replicas:
            if broker_id not in self.brokers:
                continue
            entries = self._lai.setdefault(broker_id, {})
            if tp in entries:
                continue
            if entry is None:
                entry = _lai_state(tp, state, replicas, (), (), False)
            entries[tp] = entry

    def stop_replica(self, broker_id: int, tp: TopicPartition, leader_epoch: int, *, wait: bool = True,
                     delete: bool = True) -> None:
        """StopReplica(delete). ``wait``: the partition's move finishes once it was sent
        (controller.core.events.StopReplicaSent); False for deletions nothing waits for.
        ``delete`` False: the broker stops fetching and keeps its log (a controlled shutdown's
        followers, controller.core.controlled_shutdown)."""
        # get, not setdefault: setdefault built an empty dict and set on every call (a move's
        # completion calls this once per removed replica).
        stops = self._stop.get(broker_id)
        if stops is None:
            stops = self._stop[broker_id] = {}
        stops[tp] = {"partition_index": tp[1], "leader_epoch": leader_epoch, "delete_partition": delete}
        if wait:
            waited = self._stop_waited.get(broker_id)
            if waited is None:
                waited = self._stop_waited[broker_id] = set()
            waited.add(tp)

    def describe_log_dirs(self, broker_id: int) -> None:
        """Ask a broker which replicas it hosts (every partition); its answer comes back as
        controller.core.events.ReplicasHosted (controller.shell.dispatch)."""
        self._describe.add(broker_id)

    def update_metadata(self, tp: TopicPartition, state: LeaderIsr, replicas, to: tuple[int, ...] | None = None) -> None:
        """Tell every live broker (or only the brokers ``to``) the partition's state (sent
        once per step and set of brokers)."""
        entries = self._metadata if to is None else self._metadata_to.setdefault(to, {})
        live = self.brokers if self.live_for is None else self.live_for(self.brokers, tp)
        entry = entries[tp] = _partition_state(tp, state, replicas)
        entry["offline_replicas"] = [r for r in replicas if r not in live]

    def live_brokers_changed(self) -> None:
        """The live broker set changed: every live broker hears the new set, in an
        UpdateMetadata without partitions if the step sends none with partitions (Kafka's
        controller does the same on a broker's start-up and failure)."""
        self._live_changed = True

    def _header(self, broker_id: int) -> dict:
        broker = self.brokers.get(broker_id)
        return {
            "controller_id": self.controller_id,
            "controller_epoch": self.epoch,
            "broker_epoch": broker.epoch if broker is not None else -1,
        }

    def commands(self) -> list[BrokerCommand]:
        """One request per broker and API, in the order a broker must see them."""
        out: list[BrokerCommand] = []
        for broker_id in sorted(set(self._lai) | set(self._stop) | self._describe):
            entries = self._lai.get(broker_id)
            if entries:
                leaders = {e["leader"] for e in entries.values()}
                body = self._header(broker_id) | {
                    "type": 0,
                    "topic_states": _grouped(entries, self.topic_ids),
                    "live_leaders": [
                        {"broker_id": b.id, "host_name": b.host, "port": b.port}
                        for b in (self.brokers[i] for i in sorted(leaders) if i in self.brokers)
                    ],
                }
                out.append(BrokerCommand(broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body))
            stops = self._stop.get(broker_id)
            if stops:
                body = self._header(broker_id) | {"topic_states": _grouped(stops)}
                waited = self._stop_waited.get(broker_id, ())
                out.append(
                    BrokerCommand(broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body, tuple(tp for tp in stops if tp in waited))
                )
            if broker_id in self._describe:
                # After this step's LeaderAndIsr to it: the answer includes the replicas they made.
                out.append(BrokerCommand(broker_id, ApiKey.DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION, {"topics": None}))
        # Addressed ones first: an entry of this step for every broker is as new or newer.
        for to, entries in self._metadata_to.items():
            out += self._update_metadata_commands(entries, [b for b in to if b in self.brokers])
        if self._metadata or self._live_changed:
            out += self._update_metadata_commands(self._metadata, sorted(self.brokers))
        return out

    def _update_metadata_commands(self, entries: dict[TopicPartition, dict], ids: list[int]) -> list[BrokerCommand]:
        """One UpdateMetadata of ``entries`` per broker in ``ids`` (live brokers only)."""
        if not ids:
            return []
        states = _grouped(entries, self.topic_ids)
        nodes = self.brokers
        if self.nodes:  # a broker's own registration wins over an instance given the same id
            nodes = {**{i: n for i, n in self.nodes.items() if i not in self.brokers}, **self.brokers}
        live = [{"id": b.id, "endpoints": _endpoints(b), "rack": b.rack}
                for b in sorted(nodes.values(), key=lambda b: b.id)]
        common = {"controller_id": self.controller_id, "controller_epoch": self.epoch,
                  "topic_states": states, "live_brokers": live}
        # The same states for every broker: encoded once, each broker's epoch put in place.
        encoded = per_broker_bodies(
            ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, common, {b: self._header(b)["broker_epoch"] for b in ids}
        ) or {}
        out = []
        for broker_id in ids:
            body = self._header(broker_id) | {"topic_states": states, "live_brokers": live}
            out.append(
                BrokerCommand(broker_id, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body, encoded=encoded.get(broker_id))
            )
        return out


def hosted_replicas(body: dict, *, online_only: bool = False) -> tuple[set[TopicPartition], dict[TopicPartition, int]] | None:
    """What a DescribeLogDirs answer says the broker hosts, in one pass (an election's answers
    name every replica of the cluster): the partitions of its current logs (not an intra-broker
    move's future ones) and the size in bytes of each that reports one (the largest, should two
    directories hold it). None if the answer is an error: a log dir that could not be described
    makes the whole answer unknown, so nothing is taken for absent. ``online_only``: a failed
    directory is skipped instead, and what the others hold is returned (engine step 9's strays
    among them are strays still; what is absent says nothing)."""
    if body.get("error_code", 0) or (not online_only and log_dir_failed(body)):
        return None
    hosted: set[TopicPartition] = set()
    sizes: dict[TopicPartition, int] = {}
    for result in body.get("results") or []:
        if result.get("error_code", 0):
            continue  # online_only: a failed directory's replicas are unknown, not absent
        for topic in result.get("topics") or []:
            name = topic["name"]
            for p in topic.get("partitions") or []:
                if p.get("is_future_key", False):
                    continue
                tp = (name, p["partition_index"])
                hosted.add(tp)
                size = p.get("partition_size")
                if isinstance(size, int) and size >= 0 and size > sizes.get(tp, -1):
                    sizes[tp] = size
    return hosted, sizes


def log_dir_failed(body: dict) -> bool:
    """A DescribeLogDirs answer names a directory that could not be described."""
    return any(result.get("error_code", 0) for result in body.get("results") or [])


def hosted_sizes(body: dict) -> dict[TopicPartition, int]:
    """The sizes :func:`hosted_replicas` reads, directory by directory: a log dir that failed is
    left out (its sizes are unknown, not 0), the others still count."""
    answered = hosted_replicas(body, online_only=True)
    return answered[1] if answered is not None else {}


def _partition_state(tp: TopicPartition, state: LeaderIsr, replicas) -> dict:
    """The fields LeaderAndIsr and UpdateMetadata partition states share; each caller adds its
    own to this dict (not copied into another: about twelve are built per partition moved)."""
    return {
        "partition_index": tp[1],
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "zk_version": state.zk_version,
        "replicas": list(replicas),
    }


def _lai_state(tp: TopicPartition, state: LeaderIsr, replicas, adding, removing, is_new: bool) -> dict:
    """A LeaderAndIsr partition state."""
    entry = _partition_state(tp, state, replicas)
    entry["adding_replicas"] = list(adding)
    entry["removing_replicas"] = list(removing)
    entry["is_new"] = is_new
    return entry
