"""Topic creation as Kafka does it in ZooKeeper, for the simulation's pre-filled topics.

One multi-op writes, for every topic at once: ``/brokers/topics/T`` (version 2, Kafka's
round-robin assignment, no adding/removing replicas), ``/brokers/topics/T/partitions/P/state``
(leader = first replica, ISR = all replicas, leader epoch 0, the current controller epoch) and
an empty ``/config/topics/T`` when the topic has no config yet. If any topic already exists
nothing is written and :class:`TopicExistsError` is raised.

    spec = parse_topic_spec("orders:12:3:10MiB")   # 12 partitions, RF 3, 10 MiB per replica
    created = await create_topics(store, [spec], brokers=[1, 2, 3], racks=None, rng=random.Random(0))
    created["orders"][0]                           # -> [2, 3, 1]
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from znodes.assignment import assign_replicas
from sim.sizes import parse_size
from znodes import models, paths
from znodes.api import Create, MultiOpError, NodeExistsError, NoNodeError, Store

# Kafka caps partitions per topic only by memory; a simulation with more than this is a typo.
MAX_PARTITIONS = 100_000


class TopicSpecError(ValueError):
    """A ``NAME:PARTITIONS:RF[:SIZE]`` argument that does not parse."""


class TopicExistsError(Exception):
    """A topic to create is already in ZooKeeper."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    size_bytes: int = 0  # pre-filled bytes of every replica of every partition


def parse_topic_spec(text: str) -> TopicSpec:
    parts = text.split(":")
    if len(parts) not in (3, 4):
        raise TopicSpecError(f"bad topic {text!r}: expected NAME:PARTITIONS:RF[:SIZE]")
    name = parts[0]
    try:
        paths.validate_topic_name(name)
    except paths.InvalidTopicError as exc:
        raise TopicSpecError(f"bad topic {text!r}: {exc}") from None
    numbers = []
    for what, value in (("partitions", parts[1]), ("replication factor", parts[2])):
        if not value.isascii() or not value.isdigit() or int(value) < 1:
            raise TopicSpecError(f"bad topic {text!r}: {what} must be a positive integer, got {value!r}")
        numbers.append(int(value))
    if numbers[0] > MAX_PARTITIONS:
        raise TopicSpecError(f"bad topic {text!r}: more than {MAX_PARTITIONS} partitions")
    size = 0
    if len(parts) == 4:
        try:
            size = parse_size(parts[3])
        except ValueError as exc:
            raise TopicSpecError(f"bad topic {text!r}: {exc}") from None
    return TopicSpec(name, numbers[0], numbers[1], size)


def topic_payload(assignment: dict[int, list[int]]) -> bytes:
    return models.TopicAssignment(version=2, partitions=assignment).to_bytes()


def state_payload(leader: int, isr: list[int], controller_epoch: int) -> bytes:
    return models.PartitionState(leader=leader, leader_epoch=0, controller_epoch=controller_epoch, isr=isr).to_bytes()


EMPTY_CONFIG = models.EntityConfig().to_bytes()


async def current_controller_epoch(store: Store) -> int:
    """The ``/controller_epoch`` value, 0 before any controller was elected."""
    try:
        data, _ = await store.get(paths.CONTROLLER_EPOCH)
    except NoNodeError:
        return 0
    return models.ControllerEpoch.from_bytes(paths.CONTROLLER_EPOCH, data).epoch


async def check_new_topics(store: Store, specs: list[TopicSpec]) -> None:
    """Raise TopicSpecError for a name given twice, TopicExistsError for an existing topic."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise TopicSpecError(f"a topic is named twice in {names}")
    for spec in specs:
        if await store.exists(paths.topic(spec.name)) is not None:
            raise TopicExistsError(f"topic {spec.name!r} already exists")


async def create_topics(
    store: Store,
    specs: list[TopicSpec],
    *,
    brokers: list[int],
    racks: dict[int, str] | None,
    rng: random.Random,
) -> tuple[dict[str, dict[int, list[int]]], int]:
    """Create all ``specs`` atomically; returns (assignments by topic, controller epoch used)."""
    names = [s.name for s in specs]
    await check_new_topics(store, specs)
    epoch = await current_controller_epoch(store)
    assignments: dict[str, dict[int, list[int]]] = {}
    ops = []
    for spec in specs:
        n = len(brokers)
        assignment = assign_replicas(
            brokers,
            spec.partitions,
            spec.replication_factor,
            start=rng.randrange(n),
            shift=rng.randrange(n),
            racks=racks,
        )
        assignments[spec.name] = assignment
        ops.append(Create(paths.topic(spec.name), topic_payload(assignment)))
        ops.append(Create(paths.partitions(spec.name)))
        for p, replicas in sorted(assignment.items()):
            ops.append(Create(paths.partition(spec.name, p)))
            ops.append(Create(paths.partition_state(spec.name, p), state_payload(replicas[0], replicas, epoch)))
        if await store.exists(paths.topic_config(spec.name)) is None:
            ops.append(Create(paths.topic_config(spec.name), EMPTY_CONFIG))
    try:
        await store.multi(ops)
    except MultiOpError as exc:
        if isinstance(exc.cause, NodeExistsError):
            raise TopicExistsError(f"a topic in {names} was created concurrently: {exc}") from None
        raise
    return assignments, epoch
