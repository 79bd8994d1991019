"""The value types of the cluster's znodes, shared by the controller and the simulated brokers.

Plain frozen data, decoded from and encoded to znode payloads by :mod:`znodes.payloads`
(``docs/DESIGN.md`` section 3 gives the formats), and topic ids (KIP-516): a new one as Kafka
draws it, and the topic znode's text form as the wire's uuid.

    Assignment((1, 2, 3), adding=(3,), removing=(4,)).moving     # True
    new_topic_id()                                               # 'kyYmI5ZgSk6RVzIw8JqaCQ'
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass

TopicPartition = tuple[str, int]
Replicas = tuple[int, ...]

# Kafka's Uuid.ZERO_UUID ("no id") and ONE_UUID (KRaft's METADATA_TOPIC_ID): never a topic's.
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
RESERVED_TOPIC_IDS = frozenset({ZERO_TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAQ"})


def random_uuid_bytes() -> bytes:
    """A random (version 4) UUID's 16 bytes, as Java's UUID.randomUUID draws Kafka's. Looked up
    at each call, so a deterministic test harness may replace it (tests/controller/harness.py)."""
    return uuid.uuid4().bytes


def new_topic_id() -> str:
    """A new topic's id (KIP-516), in the topic znode's form: Kafka's Uuid.randomUuid - drawn
    again while it is reserved or its text starts with '-' (it must not read as an option on
    a command line) - as Uuid.toString, 22 URL-safe base64 characters."""
    while True:
        text = topic_id_text(random_uuid_bytes())
        if text not in RESERVED_TOPIC_IDS and not text.startswith("-"):
            return text


def topic_id_text(raw: bytes) -> str:
    """Kafka's Uuid.toString: the 16 bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def topic_uuid(text: str | None) -> uuid.UUID:
    """A topic znode's ``topic_id`` as the wire's uuid (the zero UUID for None)."""
    if text is None:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


NO_PORT = -1  # Kafka's port of a registration without the listener asked for


@dataclass(frozen=True, slots=True)
class Broker:
    """A registered broker (``/brokers/ids/N``). ``epoch`` is the registration's czxid.
    ``host``/``port``: where the controller reaches it (its endpoint of the controller's
    broker listener; "" and -1 when it has none the controller can speak: alive all the same).
    ``endpoints``: every endpoint it registered, (listener, host, port, security protocol), in
    its order, as UpdateMetadata tells the brokers; empty: only host/port (PLAINTEXT) known."""

    id: int
    host: str
    port: int
    rack: str | None = None
    epoch: int = -1
    endpoints: tuple[tuple[str, str, int, str], ...] = ()

    @property
    def reachable(self) -> bool:
        return self.port != NO_PORT


@dataclass(frozen=True, slots=True)
class Assignment:
    """One partition's entry in its topic znode (Kafka 2.4+: replicas, adding, removing)."""

    replicas: Replicas
    adding: Replicas = ()
    removing: Replicas = ()

    @property
    def moving(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def original(self) -> Replicas:
        """ORS: the replicas before any move in progress (RS minus AR; Kafka's ``originReplicas``)."""
        if not self.adding:
            return self.replicas
        return tuple(b for b in self.replicas if b not in self.adding)


@dataclass(frozen=True, slots=True)
class LeaderIsr:
    """A partition state znode with the zkVersion it was read or written at."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: Replicas
    zk_version: int


@dataclass(frozen=True, slots=True)
class Request:
    """One entry of ``/admin/reassign_partitions``; ``original_replicas`` None when not recorded."""

    topic: str
    partition: int
    replicas: Replicas
    original_replicas: Replicas | None = None
    log_dirs: tuple[str, ...] | None = None  # Kafka's optional per-replica log dirs, kept as is
    # reassignd's own: start the move even if its partition's ISR is at its floor
    # (controller.core.isr_health); Kafka's readers ignore the key.
    skip_isr_check: bool = False
    # reassignd's own: the order this entry's move starts in among its request's
    # (controller.core.move_order); empty: the controller's setting.
    movement_strategies: tuple[str, ...] = ()

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def with_replicas(self, replicas: Replicas | None = None, original_replicas: Replicas | None = None) -> Request:
        """This entry with other replicas and/or original replicas (None: kept), the other fields
        as they are: dataclasses.replace without its per-call field introspection, which was 2%
        of the controller's CPU (every move started records its original replicas here)."""
        return Request(
            self.topic,
            self.partition,
            self.replicas if replicas is None else replicas,
            self.original_replicas if original_replicas is None else original_replicas,
            self.log_dirs,
            self.skip_isr_check,
            self.movement_strategies,
        )
