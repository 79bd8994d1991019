"""Every znode path reassignd reads or writes (docs/DESIGN.md section 3), and the rules paths obey.

Pure: no I/O. Paths are relative to the store's chroot, like everything in ``znodes``.

Usage::

    from znodes import paths

    paths.partition_state("orders", 3)     # "/brokers/topics/orders/partitions/3/state"
    paths.reassignment("orders", 3)        # "/admin/reassignments/orders/3"
    paths.validate_topic_name("orders")    # raises InvalidTopicError if Kafka would refuse it
    paths.split_connect_string("zk1:2181,zk2/kafka")  # ("zk1:2181,zk2:2181", "/kafka")
    paths.classify("/brokers/ids/4")       # PathMatch(kind=ZnodeKind.BROKER, broker=4)
    paths.validate_path("/a//b")           # raises InvalidPathError, as ZooKeeper would
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from znodes.errors import InvalidPathError

# ---- znode path rules (ZooKeeper's PathUtils.validatePath) --------------------------------------


def _invalid_char(c: str) -> bool:
    # ZooKeeper refuses control characters, the C1 range, surrogates and private-use characters
    # (U+D800..U+F8FF), U+FFF0..U+FFFF, and so every character outside the BMP (Java encodes
    # those as surrogate pairs).
    o = ord(c)
    return (
        0 < o <= 0x1F
        or 0x7F <= o <= 0x9F
        or 0xD800 <= o <= 0xF8FF
        or 0xFFF0 <= o
    )


# Paths of these characters with no "." or ".." name are valid on sight: the common case
# (Kafka's paths, topic names), which skips the character-by-character check (the twin checks
# every path of every call).
_PLAIN_PATH = re.compile(r"(?:/(?!\.\.?(?:/|$))[A-Za-z0-9._\-]+)+")


def validate_path(path: object, *, sequential: bool = False) -> str:
    """Return ``path`` if ZooKeeper accepts it as a znode path, else raise InvalidPathError
    (a ValueError; TypeError if it is not a str).

    A sequential create may end in "/" (the name is then just the counter), as in ZooKeeper,
    which validates ``path + "1"`` for those.
    """
    if isinstance(path, str) and _PLAIN_PATH.fullmatch(path):
        return path
    if not isinstance(path, str):
        raise TypeError(f"znode path must be a str, not {type(path).__name__}")
    checked = path + "1" if sequential else path
    if not checked:
        raise InvalidPathError(path, "path must not be empty")
    if checked[0] != "/":
        raise InvalidPathError(path, 'path must start with "/"')
    if checked == "/":
        return path
    if checked.endswith("/"):
        raise InvalidPathError(path, 'path must not end with "/"')
    for i, segment in enumerate(checked[1:].split("/")):
        if segment == "":
            raise InvalidPathError(path, f"empty node name in segment {i}")
        if segment in (".", ".."):
            raise InvalidPathError(path, "relative paths are not allowed")
        if "\x00" in segment:
            raise InvalidPathError(path, "NUL character not allowed")
        bad = next((c for c in segment if _invalid_char(c)), None)
        if bad is not None:
            raise InvalidPathError(path, f"invalid character U+{ord(bad):04X}")
    return path


def join(parent_path: str, name: str) -> str:
    """``join("/", "a") == "/a"``, ``join("/a", "b") == "/a/b"``."""
    return f"/{name}" if parent_path == "/" else f"{parent_path}/{name}"


def parent(path: str) -> str:
    """The parent of a non-root path: ``parent("/a/b") == "/a"``, ``parent("/a") == "/"``."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def basename(path: str) -> str:
    """The last segment: ``basename("/a/b") == "b"``."""
    return path.rsplit("/", 1)[1]


SEQUENCE_DIGITS = 10  # ZooKeeper appends the counter as %010d


def sequence_of(name: str) -> int:
    """The counter ZooKeeper appended to a sequential node's name (its last 10 digits)."""
    tail = name[-SEQUENCE_DIGITS:]
    if len(tail) != SEQUENCE_DIGITS or not tail.isascii() or not tail.isdigit():
        raise ValueError(f"{name!r} does not end in a {SEQUENCE_DIGITS}-digit sequence number")
    return int(tail)


# ---- connect strings -------------------------------------------------------------------------

DEFAULT_ZK_PORT = 2181  # ZooKeeper's ConnectStringParser default


def host_port(host: str, port: int) -> str:
    """``host:port`` for a connect string, an IPv6 host bracketed (``[::1]:2181``): kazoo and
    ZooKeeper's ConnectStringParser read a bare ``::1:2181`` as a bad host."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_connect_string(connect: str) -> tuple[str, str]:
    """Split ``"h:p,h2:p/chroot"`` into ``("h:p,h2:p", "/chroot")``.

    Like ZooKeeper's ConnectStringParser: the chroot starts at the first "/", a lone "/" means
    no chroot (returned as ""), a host without a port gets 2181, IPv6 hosts are bracketed.
    """
    if not isinstance(connect, str):
        raise ValueError(f"connect string must be a str, got {type(connect).__name__}")
    hosts_part, slash, chroot = connect.partition("/")
    chroot = slash + chroot
    if chroot == "/":
        chroot = ""
    if chroot:
        validate_path(chroot)
    hosts = []
    for raw in hosts_part.split(","):
        entry = raw.strip()
        if not entry:
            continue
        hosts.append(_host_port(entry, connect))
    if not hosts:
        raise ValueError(f"connect string {connect!r} names no host")
    return ",".join(hosts), chroot


def _host_port(entry: str, connect: str) -> str:
    if entry.startswith("["):
        host, sep, rest = entry[1:].partition("]")
        if not sep or not host:
            raise ValueError(f"bad IPv6 host {entry!r} in connect string {connect!r}")
        if rest and not rest.startswith(":"):
            raise ValueError(f"bad host {entry!r} in connect string {connect!r}")
        port_text = rest[1:] if rest else ""
        host = f"[{host}]"
    else:
        host, _, port_text = entry.partition(":")
        if not host or ":" in port_text:
            raise ValueError(f"bad host {entry!r} in connect string {connect!r}")
    if not port_text:
        port = DEFAULT_ZK_PORT
    # At most 5 digits (leading zeros aside): int() refuses past 4300 with a message of its own.
    elif port_text.isascii() and port_text.isdigit() and len(port_text.lstrip("0")) <= 5 and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise ValueError(f"bad port in {entry!r} in connect string {connect!r}")
    return f"{host}:{port}"


# ---- Kafka names -----------------------------------------------------------------------------

MAX_TOPIC_NAME_LENGTH = 249  # Kafka's Topic.MAX_NAME_LENGTH: leaves room in log dir names
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidTopicError(ValueError):
    """A topic name Kafka refuses."""


# Names already accepted: the controller builds a path per partition per write (hundreds of
# thousands a minute at 100,000 partitions), and the regex was a tenth of its CPU. Bounded: a
# cluster has far fewer topics; past the bound the cache starts over.
_ACCEPTED: set[str] = set()
_ACCEPTED_MAX = 100_000


def validate_topic_name(name: object) -> str:
    """Return ``name`` if Kafka accepts it as a topic name (Kafka's ``Topic.validate``)."""
    if type(name) is str and name in _ACCEPTED:
        return name
    if not isinstance(name, str):
        raise InvalidTopicError(f"topic name must be a str, got {type(name).__name__}")
    if not name:
        raise InvalidTopicError("topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name!r}"
        )
    if not _TOPIC_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    if len(_ACCEPTED) >= _ACCEPTED_MAX:
        _ACCEPTED.clear()
    _ACCEPTED.add(name)
    return name


def accepted_topic_name(name: object) -> bool:
    """Whether :func:`validate_topic_name` accepts ``name`` (no error raised: a fast path's check)."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


MAX_INT32 = 2**31 - 1  # broker ids and partition numbers are Java ints in Kafka


def _check_id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT32:
        raise ValueError(f"{what} must be an int in [0, {MAX_INT32}], got {value!r}")
    return value


def parse_id(text: str, what: str) -> int:
    """Parse a broker id or partition number written in a path segment ("0", "17")."""
    canonical = text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0"))
    if not canonical or int(text) > MAX_INT32:
        raise ValueError(f"{what} {text!r} is not a canonical non-negative int")
    return int(text)


# ---- the layout (docs/DESIGN.md section 3) --------------------------------------------------------

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"

ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = f"{ISR_CHANGE_NOTIFICATION}/isr_change_"  # created sequential
# Kafka's log directory failure notifications (KIP-113): a broker creates one when a directory
# fails; the controller reads and deletes them (controller.core.log_dir_failure).
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = f"{LOG_DIR_EVENT_NOTIFICATION}/log_dir_event_"  # created sequential

# reassignd's controller instances: an ephemeral znode each, naming its listeners
# (controller.shell.daemon registers them; Metadata and UpdateMetadata list them as nodes).
CONTROLLER_INSTANCES = "/reassignd/controllers"

# Kafka's producer id blocks (KIP-730): the last block handed to a broker, which the controller
# advances on each AllocateProducerIds (znodes.producer_ids).
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"

CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"  # created sequential
BROKER_DEFAULT_CONFIG = "<default>"  # Kafka's entity name for cluster-wide broker configs

ADMIN = "/admin"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
REASSIGNMENTS = "/admin/reassignments"
CANCEL_REASSIGNMENT = "/admin/cancel_reassignment_in_progress"
REASSIGN_QUEUE = "/admin/reassign_partitions_queue"
THROTTLED_REPLICAS_REMOVAL = "/admin/throttled_replicas_removal"
THROTTLED_RATES_REMOVAL = "/admin/throttled_rates_removal"
DELETE_TOPICS = "/admin/delete_topics"  # Kafka's: a child per topic marked for deletion
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"  # Kafka's: the partitions to elect

# Persistent parents that exist in a Kafka cluster's ZooKeeper (Kafka creates them at start-up);
# the children reassignd watches live under these.
PERSISTENT_PATHS = (
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    CONFIG_TOPICS,
    CONFIG_BROKERS,
    ISR_CHANGE_NOTIFICATION,
    ADMIN,
    REASSIGNMENTS,
)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{_check_id(broker_id, 'broker id')}"


def topic(name: str) -> str:
    return f"{TOPICS}/{validate_topic_name(name)}"


def partitions(name: str) -> str:
    return f"{topic(name)}/partitions"


def partition(name: str, partition_id: int) -> str:
    return f"{partitions(name)}/{_check_id(partition_id, 'partition')}"


def partition_state(name: str, partition_id: int) -> str:
    # One format, not four nested calls: a controller builds one per partition state it writes.
    return f"{TOPICS}/{validate_topic_name(name)}/partitions/{_check_id(partition_id, 'partition')}/state"


def isr_change_prefix() -> str:
    """The path to create, sequential, for an ISR change notification."""
    return ISR_CHANGE_PREFIX


def delete_topic(name: str) -> str:
    return f"{DELETE_TOPICS}/{validate_topic_name(name)}"


def delete_topic_marker(child: str) -> str:
    """A marker as listed under ``/admin/delete_topics``, unchecked: to drop one a tool wrote
    with no legal topic name (``orders,logs``), as Kafka drops the markers of unknown topics."""
    return join(DELETE_TOPICS, child)


def topic_config(name: str) -> str:
    return f"{CONFIG_TOPICS}/{validate_topic_name(name)}"


def broker_config(broker_id: int | str) -> str:
    """``/config/brokers/N``, or ``/config/brokers/<default>`` for the cluster-wide default."""
    if broker_id == BROKER_DEFAULT_CONFIG:
        return f"{CONFIG_BROKERS}/{BROKER_DEFAULT_CONFIG}"
    return f"{CONFIG_BROKERS}/{_check_id(broker_id, 'broker id')}"


def config_change_prefix() -> str:
    """The path to create, sequential, for a config change notification."""
    return CONFIG_CHANGE_PREFIX


def reassignment_topic(name: str) -> str:
    return f"{REASSIGNMENTS}/{validate_topic_name(name)}"


def reassignment(name: str, partition_id: int) -> str:
    """KIP-240's record of one running reassignment: ``/admin/reassignments/T/P``."""
    return f"{reassignment_topic(name)}/{_check_id(partition_id, 'partition')}"


# ---- recognising paths -----------------------------------------------------------------------


class ZnodeKind(enum.Enum):
    CONTROLLER = "controller"
    CONTROLLER_EPOCH = "controller_epoch"
    BROKER = "broker"
    TOPIC = "topic"
    PARTITION_STATE = "partition_state"
    ISR_CHANGE = "isr_change"
    TOPIC_CONFIG = "topic_config"
    BROKER_CONFIG = "broker_config"
    CONFIG_CHANGE = "config_change"
    REASSIGN_PARTITIONS = "reassign_partitions"
    REASSIGNMENT = "reassignment"
    CANCEL_REASSIGNMENT = "cancel_reassignment"
    REASSIGN_QUEUE = "reassign_queue"
    THROTTLED_REPLICAS_REMOVAL = "throttled_replicas_removal"
    THROTTLED_RATES_REMOVAL = "throttled_rates_removal"
    PREFERRED_REPLICA_ELECTION = "preferred_replica_election"


@dataclass(frozen=True, slots=True)
class PathMatch:
    kind: ZnodeKind
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None  # None for /config/brokers/<default>


_FIXED = {
    CONTROLLER: ZnodeKind.CONTROLLER,
    CONTROLLER_EPOCH: ZnodeKind.CONTROLLER_EPOCH,
    REASSIGN_PARTITIONS: ZnodeKind.REASSIGN_PARTITIONS,
    CANCEL_REASSIGNMENT: ZnodeKind.CANCEL_REASSIGNMENT,
    REASSIGN_QUEUE: ZnodeKind.REASSIGN_QUEUE,
    THROTTLED_REPLICAS_REMOVAL: ZnodeKind.THROTTLED_REPLICAS_REMOVAL,
    THROTTLED_RATES_REMOVAL: ZnodeKind.THROTTLED_RATES_REMOVAL,
    PREFERRED_REPLICA_ELECTION: ZnodeKind.PREFERRED_REPLICA_ELECTION,
}


def classify(path: str) -> PathMatch | None:
    """Which znode of the layout ``path`` is, with its topic/partition/broker; None if none."""
    kind = _FIXED.get(path)
    if kind is not None:
        return PathMatch(kind)
    seg = path.split("/")[1:]
    try:
        return _classify_segments(seg)
    except ValueError:
        return None


def _classify_segments(seg: list[str]) -> PathMatch | None:
    n = len(seg)
    if seg[:2] == ["brokers", "ids"] and n == 3:
        return PathMatch(ZnodeKind.BROKER, broker=parse_id(seg[2], "broker id"))
    if seg[:2] == ["brokers", "topics"]:
        if n == 3:
            return PathMatch(ZnodeKind.TOPIC, topic=validate_topic_name(seg[2]))
        if n == 6 and seg[3] == "partitions" and seg[5] == "state":
            return PathMatch(
                ZnodeKind.PARTITION_STATE,
                topic=validate_topic_name(seg[2]),
                partition=parse_id(seg[4], "partition"),
            )
        return None
    if n == 2 and seg[0] == "isr_change_notification" and seg[1].startswith("isr_change_"):
        sequence_of(seg[1])
        return PathMatch(ZnodeKind.ISR_CHANGE)
    if n == 3 and seg[0] == "config":
        if seg[1] == "topics":
            return PathMatch(ZnodeKind.TOPIC_CONFIG, topic=validate_topic_name(seg[2]))
        if seg[1] == "brokers":
            if seg[2] == BROKER_DEFAULT_CONFIG:
                return PathMatch(ZnodeKind.BROKER_CONFIG)
            return PathMatch(ZnodeKind.BROKER_CONFIG, broker=parse_id(seg[2], "broker id"))
        if seg[1] == "changes" and seg[2].startswith("config_change_"):
            sequence_of(seg[2])
            return PathMatch(ZnodeKind.CONFIG_CHANGE)
        return None
    if n == 4 and seg[:2] == ["admin", "reassignments"]:
        return PathMatch(
            ZnodeKind.REASSIGNMENT,
            topic=validate_topic_name(seg[2]),
            partition=parse_id(seg[3], "partition"),
        )
    return None
