"""Keeps a :class:`sim.zookeeper_view.ZooKeeperView` current from ZooKeeper watches.

Watched on the simulation's own session (the one :mod:`sim.configwatch` uses), each with a
one-shot watch re-armed on every read:

 1. ``/controller`` (data, or existence while absent): the active controller's id.
 2. ``/reassignd/controllers`` (children; existence while absent, as no controller instance
    may have run yet): each instance's admin listener, read again on every child change.
 3. ``/brokers/ids`` (children): the registrations, read again on every child change; each
    broker at its endpoint of the brokers' listener, by name, whatever protocol it speaks
    (TLS too); a broker without one is left out, as the controller's Metadata leaves out a
    broker without the request's listener.
 4. ``/brokers/topics`` (children): which topics exist.

Payloads are parsed with the controller's own decoders (``znodes.payloads``,
``controller.shell.zkread``), so brokers and controller instances agree on what a znode says. A
malformed entry is skipped (logged), as the controller's listener skips it; a malformed
``/controller`` counts as no active controller, as there.

    watcher = ClusterWatcher(store, view)
    await watcher.load_all()          # reads everything, arms the watches, view.watched = True
    await watcher.on_event(event)     # feed it the store's events; others are ignored
"""

from __future__ import annotations

import logging

from sim.zookeeper_view import NO_CONTROLLER, ZooKeeperView, RegisteredBroker
from znodes import paths
from znodes.api import NoNodeError, SessionEvent, SessionState, Store, WatchEvent
from znodes.errors import ZnodeFormatError
from znodes.payloads import LISTENER, decode_broker_endpoints, decode_controller, decode_listener
from znodes.reads import get_many, registered_brokers

log = logging.getLogger(__name__)

CONTROLLERS_PATH = paths.CONTROLLER_INSTANCES  # where controller.shell.daemon registers instances


class ClusterWatcher:
    def __init__(self, store: Store, view: ZooKeeperView, listener: str = LISTENER):
        self.store = store
        self.view = view
        self.listener = listener  # the brokers' listener name (sim.cluster.ClusterSettings.listener_name)
        self._reloads = {
            paths.CONTROLLER: self.reload_active,
            CONTROLLERS_PATH: self.reload_controllers,
            paths.BROKER_IDS: self.reload_brokers,
            paths.TOPICS: self.reload_topics,
        }

    async def load_all(self) -> None:
        for reload in self._reloads.values():
            await reload()
        self.view.watched = True

    async def on_event(self, event) -> None:
        if isinstance(event, WatchEvent):
            reload = self._reloads.get(event.path)
            if reload is not None:
                await reload()
        elif isinstance(event, SessionEvent) and event.state is SessionState.CONNECTED:
            # A new session has lost its watches: read everything again.
            await self.load_all()

    async def reload_active(self) -> None:
        """Step 1."""
        data = await self._get_watched(paths.CONTROLLER)
        active = NO_CONTROLLER
        if data is not None:
            try:
                active = decode_controller(paths.CONTROLLER, data)
            except ZnodeFormatError as exc:
                log.warning("no active controller: %s", exc)
        self.view.active_controller = active

    async def reload_controllers(self) -> None:
        """Step 2."""
        names = await self._children_watched(CONTROLLERS_PATH)
        ids = []
        for name in names:
            try:
                ids.append(paths.parse_id(name, "controller id"))
            except ValueError as exc:
                log.warning("ignoring %s/%s: %s", CONTROLLERS_PATH, name, exc)
        listeners: dict[int, tuple[str, int]] = {}
        for cid, read in zip(ids, await get_many(self.store, [f"{CONTROLLERS_PATH}/{i}" for i in ids])):
            if read is None:
                continue  # gone since the listing; its deletion fired the watch again
            try:
                listeners[cid] = decode_listener(f"{CONTROLLERS_PATH}/{cid}", read[0])
            except ZnodeFormatError as exc:
                log.warning("ignoring controller instance %d: %s", cid, exc)
        self.view.controllers = listeners

    async def reload_brokers(self) -> None:
        """Step 3."""
        # Every endpoint, by name: znodes.reads.read_brokers gives the one the controller can
        # send to, which must speak PLAINTEXT, and a TLS listener's brokers would have none.
        brokers, bad = await registered_brokers(
            self.store, lambda path, data, stat, broker_id: decode_broker_endpoints(path, data, broker_id, stat.czxid),
            watch=True)
        for unreadable in bad:
            log.warning("ignoring %s", unreadable)
        registered = {}
        for broker_id, by_name in sorted(brokers.items()):
            b = by_name.get(self.listener)
            if b is None:
                log.warning("broker %d has no %s listener (it registered %s): not listed", broker_id, self.listener,
                            ", ".join(sorted(by_name)) or "none")
                continue
            registered[broker_id] = RegisteredBroker(broker_id, b.host, b.port, b.rack)
        self.view.registered = registered

    async def reload_topics(self) -> None:
        """Step 4."""
        self.view.topics = frozenset(await self._children_watched(paths.TOPICS))

    async def _get_watched(self, path: str) -> bytes | None:
        """The znode's data with a data watch, or None with an existence watch armed."""
        while True:
            try:
                data, _ = await self.store.get(path, watch=True)
                return data
            except NoNodeError:
                if await self.store.exists(path, watch=True) is None:
                    return None
                # Created between the two reads: read it (and watch it) again.

    async def _children_watched(self, path: str) -> list[str]:
        """The children with a child watch, or [] with an existence watch armed."""
        while True:
            try:
                return await self.store.children(path, watch=True)
            except NoNodeError:
                if await self.store.exists(path, watch=True) is None:
                    return []
