"""Brokers learn throttle configs the way Kafka brokers do: from config change notifications.

At start every ``/config/topics/*`` and ``/config/brokers/*`` is read. Then the children of
``/config/changes`` are watched; each new ``config_change_<seq>`` names an entity
(``{"version":2,"entity_path":"topics/T"}`` or ``"brokers/N"``; version 1's
``entity_type``/``entity_name`` is read too) whose config is re-read and applied to the shared
:class:`sim.throttle.Throttles`. Notifications are never deleted here (Kafka leaves that to
whoever purges old ones). A malformed notification or config is logged and skipped; the
throttles in force stay as they were.

    watcher = ConfigWatcher(store, throttles)
    await watcher.load_all()                 # also arms the watch on /config/changes
    ...
    await watcher.on_event(event)            # feed it the store's WatchEvents
"""

from __future__ import annotations

import json
import logging

from sim.throttle import ThrottleConfigError, Throttles
from znodes import paths
from znodes.api import EventType, NoNodeError, SessionEvent, SessionState, Store, WatchEvent, ZkError

log = logging.getLogger(__name__)

_ENTITY_TYPES = {"topics": "topic", "brokers": "broker"}


class ConfigFormatError(ValueError):
    """A config or config-change znode that is not in Kafka's format."""


def parse_config(data: bytes) -> dict[str, str]:
    """``{"version":1,"config":{"k":"v"}}`` -> ``{"k": "v"}`` (values must be strings)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigFormatError(f"config is not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise ConfigFormatError("config must be an object with a 'config' object")
    config = doc.get("config", {})
    for key, value in config.items():
        if not isinstance(value, str):
            raise ConfigFormatError(f"config value for {key!r} must be a string, got {value!r}")
    return config


def parse_change(data: bytes) -> tuple[str, str]:
    """A config change notification -> (entity type "topics"/"brokers", entity name)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigFormatError(f"config change is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigFormatError("config change must be an object")
    if doc.get("version") == 2 and isinstance(doc.get("entity_path"), str):
        kind, _, name = doc["entity_path"].partition("/")
    elif doc.get("version") == 1:
        kind, name = doc.get("entity_type"), doc.get("entity_name")
    else:
        raise ConfigFormatError(f"unknown config change format: {doc!r}")
    if not isinstance(kind, str) or not isinstance(name, str) or not name or "/" in name:
        raise ConfigFormatError(f"bad entity in config change: {doc!r}")
    return kind, name


class ConfigWatcher:
    def __init__(self, store: Store, throttles: Throttles):
        self.store = store
        self.throttles = throttles
        self._last_seq = -1

    async def load_all(self) -> None:
        """Read every topic and broker config, then catch up on notifications (watch armed)."""
        for kind, parent in (("topics", paths.CONFIG_TOPICS), ("brokers", paths.CONFIG_BROKERS)):
            try:
                names = await self.store.children(parent)
            except NoNodeError:
                names = []
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
            try:
                data, _ = await self.store.get(paths.join(paths.CONFIG_CHANGES, name))
                kind, entity = parse_change(data)
            except NoNodeError:
                continue
            except ConfigFormatError as exc:
                log.error("ignoring config change %s: %s", name, exc)
                continue
            if kind in _ENTITY_TYPES:
                await self.reload(kind, entity)

    async def reload(self, kind: str, name: str) -> None:
        """Re-read one entity's config and apply it (absent znode: config removed)."""
        parent = paths.CONFIG_TOPICS if kind == "topics" else paths.CONFIG_BROKERS
        try:
            data, _ = await self.store.get(paths.join(parent, name))
            config = parse_config(data)
        except NoNodeError:
            config = None
        except (ConfigFormatError, ZkError) as exc:
            log.error("ignoring config of %s/%s: %s", kind, name, exc)
            return
        try:
            if kind == "topics":
                self.throttles.update_topic(name, config)
            else:
                self.throttles.update_broker(name, config)
        except ThrottleConfigError as exc:
            log.error("ignoring throttle config of %s/%s: %s", kind, name, exc)
