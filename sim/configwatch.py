"""Brokers learn dynamic configs the way Kafka brokers do: from config change notifications.

At start every ``/config/topics/*`` and ``/config/brokers/*`` is read. Then the children of
``/config/changes`` are watched; each new ``config_change_<seq>`` names an entity
(``{"version":2,"entity_path":"topics/T"}`` or ``"brokers/N"``; version 1's
``entity_type``/``entity_name`` is read too) whose config is re-read and applied to the shared
:class:`sim.throttle.Throttles`. Notifications are never deleted here (Kafka leaves that to
whoever purges old ones). A malformed notification or config is logged and skipped; the
throttles in force stay as they were. With a :class:`sim.logconfig.LogConfigs` (the
replication model's), every config read also goes there: the topic configs the brokers apply
(retention, segments, min.insync.replicas), from the topic's own and the broker defaults.

With a :class:`sim.zookeeper_view.ZooKeeperView`, every config read is also kept there, whole, for
DescribeConfigs (Kafka brokers describe the dynamic configs they learned the same way): a
config znode that cannot be parsed is kept as :class:`sim.zookeeper_view.ConfigUnreadable`, one
that is gone is dropped, one that could not be read (a session error) keeps its last value.

    watcher = ConfigWatcher(store, throttles, view, model.log_configs)   # view, log_configs: optional
    await watcher.load_all()                 # also arms the watch on /config/changes
    ...
    await watcher.on_event(event)            # feed it the store's WatchEvents
"""

from __future__ import annotations

import logging

from sim.logconfig import LogConfigs
from sim.throttle import ThrottleConfigError, Throttles
from sim.zookeeper_view import ConfigUnreadable, ZooKeeperView
from znodes import models, paths
from znodes.api import EventType, NoNodeError, SessionEvent, SessionState, Store, WatchEvent, ZkError
from znodes.errors import ZnodeFormatError

log = logging.getLogger(__name__)

_ENTITY_TYPES = {"topics": "topic", "brokers": "broker"}


def parse_config(path: str, data: bytes) -> dict[str, str]:
    """``{"version":1,"config":{"k":"v"}}`` -> ``{"k": "v"}``; ZnodeFormatError if malformed."""
    return dict(models.EntityConfig.from_bytes(path, data).config)


def parse_change(path: str, data: bytes) -> tuple[str, str]:
    """A config change notification -> (entity type, entity name); ZnodeFormatError if malformed."""
    note = models.ConfigChangeNotification.from_bytes(path, data)
    if note.version == 2:
        kind, _, name = note.entity_path.partition("/")
        return kind, name
    return note.entity_type, note.entity_name


class ConfigWatcher:
    def __init__(self, store: Store, throttles: Throttles, view: ZooKeeperView | None = None,
                 log_configs: LogConfigs | None = None):
        self.store = store
        self.throttles = throttles
        self.view = view
        self.log_configs = log_configs
        self._last_seq = -1

    async def load_all(self) -> None:
        """Read every topic and broker config, then catch up on notifications (watch armed)."""
        for kind, parent in (("topics", paths.CONFIG_TOPICS), ("brokers", paths.CONFIG_BROKERS)):
            try:
                names = await self.store.children(parent)
            except NoNodeError:
                names = []
            if self.view is not None:  # entities whose znode went while no watch was armed
                for gone in [key for key in self.view.configs if key[0] == kind and key[1] not in names]:
                    del self.view.configs[gone]
            for name in sorted(names):
                await self.reload(kind, name)
        await self.process_changes()

    async def on_event(self, event) -> None:
        """React to one store event (others' events are ignored)."""
        if isinstance(event, WatchEvent) and event.path == paths.CONFIG_CHANGES and event.type is EventType.CHILD:
            await self.process_changes()
        elif isinstance(event, SessionEvent) and event.state is SessionState.CONNECTED:
            # A new session has lost its watches: read everything again.
            await self.load_all()

    async def process_changes(self) -> None:
        """Apply every notification newer than the last one seen, and re-arm the watch."""
        try:
            names = await self.store.children(paths.CONFIG_CHANGES, watch=True)
        except NoNodeError:
            await self.store.ensure_path(paths.CONFIG_CHANGES)
            names = await self.store.children(paths.CONFIG_CHANGES, watch=True)
        pending = []
        for name in names:
            try:
                seq = paths.sequence_of(name)
            except ValueError:
                continue
            if seq > self._last_seq:
                pending.append((seq, name))
        for seq, name in sorted(pending):
            self._last_seq = seq
            path = paths.join(paths.CONFIG_CHANGES, name)
            try:
                data, _ = await self.store.get(path)
                kind, entity = parse_change(path, data)
            except NoNodeError:
                continue
            except ZnodeFormatError as exc:
                log.error("ignoring config change %s: %s", name, exc)
                continue
            if kind in _ENTITY_TYPES:
                await self.reload(kind, entity)

    async def reload(self, kind: str, name: str) -> None:
        """Re-read one entity's config and apply it (absent znode: config removed)."""
        parent = paths.CONFIG_TOPICS if kind == "topics" else paths.CONFIG_BROKERS
        path = paths.join(parent, name)
        try:
            data, _ = await self.store.get(path)
            config = parse_config(path, data)
        except NoNodeError:
            config = None
        except ZnodeFormatError as exc:
            log.error("ignoring config of %s/%s: %s", kind, name, exc)
            if self.view is not None:
                self.view.configs[(kind, name)] = ConfigUnreadable(str(exc))
            return
        except ZkError as exc:
            log.error("ignoring config of %s/%s: %s", kind, name, exc)
            return
        if self.view is not None:
            if config is None:
                self.view.configs.pop((kind, name), None)
            else:
                self.view.configs[(kind, name)] = dict(config)
        if self.log_configs is not None:
            if kind == "topics":
                self.log_configs.update_topic(name, config)
            else:
                self.log_configs.update_broker(name, config)
        try:
            if kind == "topics":
                self.throttles.update_topic(name, config)
            else:
                self.throttles.update_broker(name, config)
        except ThrottleConfigError as exc:
            log.error("ignoring throttle config of %s/%s: %s", kind, name, exc)
