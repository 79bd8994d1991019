"""Which topics' configs changed, from Kafka's config change notifications, for the active
controller (issue 24 item 4: a live ``min.insync.replicas`` for engine step 2a).

Every config write - the controller's AlterConfigs / IncrementalAlterConfigs, its throttles,
``kafka-configs.sh`` against ZooKeeper - goes with a ``/config/changes/config_change_<seq>``
naming the entity (``{"version":2,"entity_path":"topics/T"}``, or version 1's
``entity_type``/``entity_name``), and Kafka's brokers re-read only what a notification names.
The controller does the same: the children of ``/config/changes`` are watched, each
notification newer than the last one seen names a topic or the brokers' cluster-wide default
(``brokers/<default>``, whose ``min.insync.replicas`` and ``unclean.leader.election.enable``
stand for a topic without its own, as on Kafka's brokers), and the shell re-reads what it holds
(controller.shell.active). A config written without its notification is not news, as for a
broker. Notifications are never deleted here (whoever purges old ones does).

    changes = ConfigChanges()
    await changes.arm(store)                    # at the term's start: what exists is old news
    topics, default = await changes.named(store)   # on the watch: named since, watch re-armed
"""

from __future__ import annotations

import logging

from znodes import models, paths
from znodes.api import NoNodeError, Store
from znodes.errors import ZnodeFormatError
from znodes.reads import get_many

log = logging.getLogger("reassignd.controller")


def entity_named(path: str, data: bytes) -> tuple[str, str]:
    """(entity type, name) of a notification; ZnodeFormatError if malformed."""
    note = models.ConfigChangeNotification.from_bytes(path, data)
    if note.version == 2:
        kind, _, name = note.entity_path.partition("/")
        return kind, name
    return note.entity_type, note.entity_name


def newer(names: list[str], last: int) -> list[tuple[int, str]]:
    """(sequence, name) of the notifications after ``last``, oldest first; names without a
    sequence number (not ZooKeeper's) are skipped."""
    out = []
    for name in names:
        try:
            seq = paths.sequence_of(name)
        except ValueError:
            continue
        if seq > last:
            out.append((seq, name))
    return sorted(out)


async def _watched_children(store: Store) -> list[str]:
    """The notifications, with a children watch; before anyone created ``/config/changes``
    (a daemon creates it at start, a bare store may not have it), an exists watch for it."""
    while True:
        try:
            return await store.children(paths.CONFIG_CHANGES, watch=True)
        except NoNodeError:
            if await store.exists(paths.CONFIG_CHANGES, watch=True) is None:
                return []


class ConfigChanges:
    def __init__(self):
        self.last = -1  # the newest notification seen

    async def arm(self, store: Store) -> None:
        """Watch ``/config/changes`` from now: what is there already is older than the configs
        the term reads, so only later notifications count."""
        seen = newer(await _watched_children(store), -1)
        if seen:
            self.last = max(self.last, seen[-1][0])

    async def named(self, store: Store) -> tuple[set[str], bool]:
        """Topics named by notifications since the last call, and whether one named the
        brokers' cluster-wide default (the watch re-armed)."""
        pending = newer(await _watched_children(store), self.last)
        if not pending:
            return set(), False
        self.last = pending[-1][0]
        found: set[str] = set()
        default = False
        notes = [paths.join(paths.CONFIG_CHANGES, name) for _, name in pending]
        for path, got in zip(notes, await get_many(store, notes)):
            if got is None:
                continue  # purged meanwhile by whoever purges old notifications: nothing to read
            try:
                kind, name = entity_named(path, got[0])
            except ZnodeFormatError as e:
                log.warning("ignoring config change notification %s: %s", path, e)
                continue
            if kind == "topics":
                found.add(name)
            elif kind == "brokers" and name == paths.BROKER_DEFAULT_CONFIG:
                default = True
        return found, default
