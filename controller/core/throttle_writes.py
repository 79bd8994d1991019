"""Throttle configs and removal znodes as an admin request changes them: pure op builders.

KIP-73's throttles live in Kafka's config znodes (``/config/topics/T``: the
``*.replication.throttled.replicas`` lists; ``/config/brokers/N``: the ``*.replication.throttled.rate``
rates); KIP-179's removal znodes list what the controller removes by itself
(controller.core.throttle_removal). Every config write goes with a ``/config/changes``
notification so brokers re-read the entity, as Kafka's ``AdminZkClient.changeConfigs`` does.

:class:`Staged` collects the changes of one step's admin requests over what the shell read
(controller.core.events.ThrottlesRead) and turns them into ops in the crash-safe order
(docs/DESIGN.md 4.10): removal znodes that gain members first, then the configs, then the
removal znodes' final contents. Any prefix of those ops leaves every auto-removable throttle
listed; one write per config, whatever number of requests changed it.

    staged = Staged()
    change = staged.change()
    change.add_listed(paths.THROTTLED_RATES_REMOVAL, read, {4, 5})
    change.update_config(("brokers", 4), read, set_keys({LEADER_RATE: "1000"}))
    staged.commit(change)           # a malformed znode raised ThrottleWriteError before this
    ops = staged.ops()
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from controller.core.events import ZnodeRead
from protocol import throttled_replicas
from protocol.throttled_replicas import ThrottledReplicasError
from znodes import models, paths
from znodes.api import Create, Delete, Op, SetData
from znodes.throttle_keys import FOLLOWER_REPLICAS, LEADER_REPLICAS, RATE_KEYS, REPLICA_KEYS

Update = Callable[[dict[str, str]], dict[str, str]]


class ThrottleWriteError(Exception):
    """A config or removal znode in ZooKeeper is malformed, or a throttle list in it is not
    Kafka's format: the request that needs it changes nothing."""


# ---- Kafka's formats -------------------------------------------------------------------------


def change_notification(entity_path: str) -> Create:
    payload = json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()
    return Create(paths.config_change_prefix(), payload, sequential=True)


def config_path(kind: str, name: str | int) -> str:
    return paths.topic_config(str(name)) if kind == "topics" else paths.broker_config(name)


@dataclass(frozen=True)
class Listing:
    """A removal znode's contents: the listed entities, and for those that had throttle keys of
    their own before they were first listed, those keys' values (``restore``: name -> {key:
    value}), which the removal puts back instead of deleting them."""

    members: frozenset = frozenset()
    restore: Mapping = field(default_factory=dict)


def removal_kind(path: str) -> str:
    """The config entities a removal znode lists: "topics" or "brokers"."""
    return "topics" if path == paths.THROTTLED_REPLICAS_REMOVAL else "brokers"


def removal_keys(path: str) -> tuple[str, ...]:
    """The config keys a removal znode's entities lose (and get back from ``restore``)."""
    return REPLICA_KEYS if path == paths.THROTTLED_REPLICAS_REMOVAL else RATE_KEYS


def listed_bytes(path: str, members, restore: Mapping | None = None) -> bytes:
    """A removal znode listing ``members``, with the ``restore`` entries of those members."""
    kept = {m: dict(v) for m, v in (restore or {}).items() if m in members and v}
    if path == paths.THROTTLED_REPLICAS_REMOVAL:
        return models.ThrottledReplicasRemoval(version=1, topics=sorted(members), restore=kept).to_bytes()
    return models.ThrottledRatesRemoval(version=1, brokers=sorted(members), restore=kept).to_bytes()


def own_values(config: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
    """What an entity's config holds of ``keys``: its restore entry when it is first listed."""
    return {k: config[k] for k in keys if k in config}


def restore_keys(keys: Iterable[str], values: Mapping[str, str] | None) -> Update:
    """The removal's update: ``keys`` dropped, then the entity's own values before it was listed
    put back."""
    drop = drop_keys(keys)

    def update(config: dict[str, str]) -> dict[str, str]:
        config = drop(config)
        config.update(values or {})
        return config

    return update


def set_keys(values: dict[str, str]) -> Update:
    def update(config: dict[str, str]) -> dict[str, str]:
        config.update(values)
        return config

    return update


def drop_keys(keys: Iterable[str]) -> Update:
    keys = tuple(keys)

    def update(config: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in config.items() if k not in keys}

    return update


def add_replicas(leader: Iterable[tuple[int, int]], follower: Iterable[tuple[int, int]],
                 replace_partitions: set[int] = frozenset()) -> Update:
    """An update merging pairs into a topic's leader and follower throttled-replicas lists; the
    pairs of ``replace_partitions`` already there are dropped first, a ``"*"`` stays."""
    leader, follower = set(leader), set(follower)

    def update(config: dict[str, str]) -> dict[str, str]:
        for key, pairs in ((LEADER_REPLICAS, leader), (FOLLOWER_REPLICAS, follower)):
            # A value already there that is not Kafka's format raises ThrottledReplicasError:
            # it is never overwritten on a guess.
            merged = throttled_replicas.parse(config.get(key)).merged(pairs, replace_partitions)
            if merged.empty:
                config.pop(key, None)
            else:
                config[key] = str(merged)
        return config

    return update


def config_ops(kind: str, name: str | int, read: ZnodeRead, new: dict[str, str]) -> list[Op]:
    """The write of one entity's config from ``read`` to ``new`` (conditional on the version
    read) and its change notification; [] when nothing changes."""
    current = read.value or {}
    if new == current:
        return []
    data = models.EntityConfig(version=1, config=new).to_bytes()
    path = config_path(kind, name)
    op: Op = Create(path, data) if read.version is None else SetData(path, data, read.version)
    return [op, change_notification(f"{kind}/{name}")]


# ---- one step's changes ------------------------------------------------------------------------


class Change:
    """One request's changes, on a copy of what is staged: committed whole or dropped."""

    def __init__(self, configs: dict, listed: dict):
        self.configs = {k: [base, dict(now)] for k, (base, now) in configs.items()}
        self.listed = {k: [base, set(adds), set(now), dict(restore)] for k, (base, adds, now, restore) in listed.items()}

    def update_config(self, key: tuple[str, str | int], read: ZnodeRead | None, update: Update) -> None:
        entry = self._config(key, read)
        try:
            entry[1] = update(dict(entry[1]))
        except ThrottledReplicasError as e:
            raise ThrottleWriteError(f"{config_path(*key)}: {e}") from None

    def add_listed(self, path: str, read: ZnodeRead | None, members, config_reads: Mapping) -> None:
        """List ``members`` for removal; each one not listed yet keeps, as its restore entry, the
        throttle keys its config holds now (``config_reads``: (kind, name) -> ZnodeRead, as
        staged so far in this step), so the removal gives the operator's own values back."""
        entry = self._listed(path, read)
        kind = removal_kind(path)
        for m in set(members) - entry[2]:
            own = own_values(self.config_now((kind, m), config_reads.get((kind, m))), removal_keys(path))
            if own:
                entry[3][m] = own
            else:
                entry[3].pop(m, None)
        entry[1] |= set(members)
        entry[2] |= set(members)

    def drop_listed(self, path: str, read: ZnodeRead | None, members) -> None:
        """Unlist ``members``: their throttles become the operator's, kept as they are."""
        entry = self._listed(path, read)
        entry[2] -= set(members)
        for m in members:
            entry[3].pop(m, None)

    def replace_listed(self, path: str, read: ZnodeRead | None, members) -> None:
        entry = self._listed(path, read)
        entry[2] = set(members)
        entry[3] = {m: v for m, v in entry[3].items() if m in entry[2]}

    def listed_now(self, path: str, read: ZnodeRead | None) -> frozenset:
        return frozenset(self._listed(path, read)[2])

    def restore_of(self, path: str, read: ZnodeRead | None, member) -> dict[str, str]:
        """What a listed member gets back when its throttle goes ({}: its keys are deleted)."""
        return dict(self._listed(path, read)[3].get(member, {}))

    def config_now(self, key: tuple[str, str | int], read: ZnodeRead | None) -> dict[str, str]:
        """An entity's config as read, with what earlier requests of the step changed."""
        return dict(self._config(key, read)[1])

    def _config(self, key, read: ZnodeRead | None) -> list:
        entry = self.configs.get(key)
        read = _checked(config_path(*key), read)
        if entry is None or _newer(read, entry[0]):
            # The newest read is the base; what earlier requests of the step changed is kept.
            old = entry[1] if entry is not None else None
            entry = self.configs[key] = [read, dict(read.value or {}) if old is None else old]
        return entry

    def _listed(self, path: str, read: ZnodeRead | None) -> list:
        entry = self.listed.get(path)
        read = _checked(path, read)
        if entry is None or _newer(read, entry[0]):
            listing = read.value or Listing()
            members = set(listing.members) if entry is None else entry[2]
            adds = set() if entry is None else entry[1]
            restore = {m: dict(v) for m, v in listing.restore.items()} if entry is None else entry[3]
            entry = self.listed[path] = [read, adds, members, restore]
        return entry


def _checked(path: str, read: ZnodeRead | None) -> ZnodeRead:
    if read is None:
        raise ThrottleWriteError(f"{path} was not read for this request")
    if read.error is not None:
        raise ThrottleWriteError(f"{path} is malformed; fix or delete it first: {read.error}")
    return read


def _newer(read: ZnodeRead, base: ZnodeRead) -> bool:
    return (read.version if read.version is not None else -1) > (base.version if base.version is not None else -1)


class Staged:
    """The throttle changes of one step's admin requests."""

    def __init__(self):
        self.configs: dict = {}  # (kind, entity) -> (base read, new config)
        self.listed: dict = {}  # path -> (base read, members added, final members, restore)

    def change(self) -> Change:
        return Change(self.configs, self.listed)

    def commit(self, change: Change) -> None:
        self.configs = {k: (base, now) for k, (base, now) in change.configs.items()}
        self.listed = {k: (base, adds, now, restore) for k, (base, adds, now, restore) in change.listed.items()}

    def ops(self) -> list[Op]:
        """Removal znodes that gain members, the configs, the removal znodes' final contents."""
        first: list[Op] = []
        last: list[Op] = []
        for path in sorted(self.listed):
            base, adds, final, restore = self.listed[path]
            listing = base.value or Listing()
            members = set(listing.members)
            # The first write lists the new members with their restore entries; members already
            # listed keep theirs until the final write, so every prefix restores what it lists.
            written = {m: v for m, v in listing.restore.items() if m in members}
            version = base.version
            if adds - members:
                members |= adds
                written.update({m: v for m, v in restore.items() if m in adds})
                if version is None:
                    first.append(Create(path, listed_bytes(path, members, written)))
                    version = 0
                else:
                    first.append(SetData(path, listed_bytes(path, members, written), version))
                    version += 1
            final_restore = {m: v for m, v in restore.items() if m in final}
            if final == members and final_restore == {m: v for m, v in written.items() if m in final}:
                continue
            if version is None:
                last.append(Create(path, listed_bytes(path, final, final_restore)))
            elif not final:
                last.append(Delete(path, version))
            else:
                last.append(SetData(path, listed_bytes(path, final, final_restore), version))
        middle: list[Op] = []
        for (kind, name) in sorted(self.configs, key=lambda k: (k[0], str(k[1]))):
            base, new = self.configs[(kind, name)]
            middle += config_ops(kind, name, base, new)
        return first + middle + last
