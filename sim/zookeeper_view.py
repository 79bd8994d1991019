"""What simulated brokers know from ZooKeeper itself, beyond what the controller tells them
(their metadata cache, :class:`sim.metadata.MetadataCache`, holds what the controller sends).

A Kafka broker learns the cluster from UpdateMetadata. In reassignd the controller instances
are not brokers, so a client that bootstraps from a broker must still be able to find them;
the simulation therefore keeps, on its own ZooKeeper session (:mod:`sim.clusterwatch`), the
few znodes the controller's admin listener answers Metadata from, and the dynamic configs
DescribeConfigs shows (filled by :mod:`sim.configwatch` as change notifications arrive).
One view is shared by every broker of a simulation. Pure data: no I/O here.

    view = ZooKeeperView()
    view.active_controller, view.controllers = 101, {101: ("127.0.0.1", 9901)}
    view.config("brokers", "1")        # {} when unset; ConfigUnreadable if the znode is broken
"""

from __future__ import annotations

from dataclasses import dataclass, field

NO_CONTROLLER = -1


@dataclass(frozen=True, slots=True)
class RegisteredBroker:
    """A broker as ``/brokers/ids/N`` registers it (its endpoint of the brokers' listener)."""

    id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class ConfigUnreadable:
    """An entity config znode that exists but cannot be parsed (why, naming the znode)."""

    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclass(slots=True)
class ZooKeeperView:
    # False until a watcher has read ZooKeeper once: a broker core on its own (unit tests)
    # then answers Metadata from UpdateMetadata alone, as a Kafka broker does.
    watched: bool = False
    # ``/controller``'s brokerid; -1 while no controller instance is active.
    active_controller: int = NO_CONTROLLER
    # ``/reassignd/controllers/<id>``: each instance's admin listener (host, port).
    controllers: dict[int, tuple[str, int]] = field(default_factory=dict)
    # ``/brokers/ids/<id>``: registered brokers.
    registered: dict[int, RegisteredBroker] = field(default_factory=dict)
    # Children of ``/brokers/topics``: the topics that exist.
    topics: frozenset[str] = frozenset()
    # ("topics" | "brokers", entity name) -> config map, for every entity with a config znode.
    configs: dict[tuple[str, str], dict[str, str] | ConfigUnreadable] = field(default_factory=dict)

    def config(self, kind: str, name: str) -> dict[str, str] | ConfigUnreadable:
        """An entity's dynamic config ({} when it has no znode)."""
        return self.configs.get((kind, name), {})
