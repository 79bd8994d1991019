"""One simulated broker's log directories (KIP-113): which exist, which are offline, where a
new replica goes, and the future logs of intra-broker moves. Pure; :class:`sim.core.BrokerCore`
holds one :class:`LogDirs` and the copy model (:mod:`sim.replica`) moves the future logs.

Placement is Kafka's ``LogManager.nextLogDirs``: a directory named for the partition by an
earlier AlterReplicaLogDirs (the "preferred" one) if it is online, else the online directory
holding the fewest logs, current and future alike, the first configured winning a tie.

A move (AlterReplicaLogDirs) is Kafka's future-replica lifecycle:

=====================  ===========================================  =========================
state                  event                                        next
=====================  ===========================================  =========================
replica in dir A       AlterReplicaLogDirs(B), B online, no dir     future log in B, empty
                       offline on the broker
future in B            copy step (capped by the broker's            future in B, closer
                       replica.alter.log.dirs.io.max.bytes.per.     
                       second and its disk rate)
future in B            caught up with the current log               replica in dir B, no future
future in B            AlterReplicaLogDirs(C), C != B               future in C, empty
future in B            AlterReplicaLogDirs(A) (back home)           replica in dir A, no future
future in B            dir B goes offline                           replica in dir A, no future
replica in dir A       dir A goes offline                           replica offline (storage
                                                                    error), future dropped
=====================  ===========================================  =========================

    dirs = LogDirs(("/data/d1", "/data/d2"))
    dirs.place(("t", 0), {"/data/d1": 3, "/data/d2": 1})     # "/data/d2"
    dirs.check_destination("/data/d3")                       # ErrorCode.LOG_DIR_NOT_FOUND
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.errors import ErrorCode

# A future log's directory is named "<topic>-<partition>.<32 hex id>-future"; Kafka refuses a
# move whose name would pass the file system's 255-byte limit (KAFKA-4893).
MAX_FILE_NAME = 255
FUTURE_NAME_EXTRA = 1 + 32 + len("-future")  # ".", the topic id in hex, the suffix
# Longest directory path accepted (Linux's PATH_MAX).
MAX_PATH = 4096


class LogDirsError(ValueError):
    """A directory list that no broker could have (empty, relative, repeated)."""


@dataclass(eq=False)
class FutureLog:
    """The copy of a replica growing in another directory of the same broker."""

    log_dir: str
    size: float = 0.0  # bytes copied
    leo: float = 0.0  # log end offset reached (messages)

    @property
    def size_bytes(self) -> int:
        return int(self.size)

    @property
    def log_end_offset(self) -> int:
        return int(self.leo)


def check_dir_names(names: Iterable[str]) -> tuple[str, ...]:
    """The directory list as given, checked: non-empty, absolute paths, none twice."""
    out = tuple(names)
    if not out:
        raise LogDirsError("a broker needs at least one log directory")
    for name in out:
        if not isinstance(name, str) or not name.startswith("/"):
            raise LogDirsError(f"log directory {name!r} is not an absolute path")
        if len(name) > MAX_PATH or any(ord(c) < 32 for c in name) or "," in name:
            raise LogDirsError(f"log directory {name[:80]!r} is not a usable path (control characters, a comma, "
                               f"or longer than {MAX_PATH})")
    if len(set(out)) != len(out):
        raise LogDirsError(f"a log directory is listed twice in {list(out)}")
    return out


class LogDirs:
    """A broker's directories in configuration order, the offline ones, and the directory
    AlterReplicaLogDirs named for partitions this broker does not host yet."""

    def __init__(self, names: Iterable[str]):
        self.names = check_dir_names(names)
        self.offline: set[str] = set()
        self.preferred: dict[tuple[str, int], str] = {}

    def online(self, name: str) -> bool:
        return name in self.names and name not in self.offline

    @property
    def any_offline(self) -> bool:
        return bool(self.offline)

    @property
    def live(self) -> list[str]:
        """The online directories, in configuration order."""
        return [n for n in self.names if n not in self.offline]

    def place(self, key: tuple[str, int], logs_per_dir: Mapping[str, int]) -> str | None:
        """The directory a new replica of ``key`` goes to (the preferred one is used up), or
        None when every directory is offline."""
        preferred = self.preferred.pop(key, None)
        if preferred is not None and self.online(preferred):
            return preferred
        live = self.live
        if not live:
            return None
        return min(live, key=lambda n: (logs_per_dir.get(n, 0), self.names.index(n)))

    def check_destination(self, name: str) -> ErrorCode | None:
        """Why a move into ``name`` is refused before looking at the replica (Kafka's order)."""
        if name not in self.names:
            return ErrorCode.LOG_DIR_NOT_FOUND
        if name in self.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        return None

    def go_offline(self, name: str) -> None:
        if name not in self.names:
            raise LogDirsError(f"no log directory {name!r} (this broker has {', '.join(self.names)})")
        self.offline.add(name)

    def reset(self) -> None:
        """A broker restart: the directories are opened again, the in-memory choices forgotten."""
        self.offline.clear()
        self.preferred.clear()


def future_name_too_long(topic: str, partition: int) -> bool:
    return len(f"{topic}-{partition}".encode()) + FUTURE_NAME_EXTRA > MAX_FILE_NAME
