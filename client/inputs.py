"""Operator input for kafka-reassign: the JSON files and option values, validated up front.

Pure: no I/O except :func:`read_json_file`, which only reads. Everything wrong raises
:class:`client.errors.InputFileError` naming the file (:class:`~client.errors.InputError`
naming the option for option values) and the entry, before anything
is sent or written. The formats are Kafka's ``kafka-reassign-partitions.sh`` ones:

* reassignment JSON: ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}``
  (optional ``log_dirs``, one per replica: ``"any"``, or the absolute directory the replica
  should live in on its broker, moved there with AlterReplicaLogDirs - KIP-113; optional
  ``original_replicas``, as found in the znode, is accepted and ignored);
* topics-to-move JSON: ``{"version":1,"topics":[{"topic":"t"}]}``;
* ``--broker-list 1,2,3`` and ``--throttle BYTES_PER_S``.

Usage::

    plan = parse_reassignment(read_json_file("plan.json"), "plan.json")
    plan.assignments            # {("t", 0): [1, 2]}
    topics = parse_topics_to_move(read_json_file("topics.json"), "topics.json")
    brokers = parse_broker_list("1,2,3")
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from client.errors import InputError, InputFileError
from znodes.values import TopicPartition

# Kafka's only reassignment/topics JSON version.
SUPPORTED_VERSION = 1
# Kafka's topic name rules: legal characters and at most 249 of them (room for the
# partition suffix in a 255-byte file name).
TOPIC_NAME_MAX = 249
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]+")  # fullmatch: "$" would let a trailing newline through
# A JSON file larger than this is not a reassignment plan anybody wrote on purpose; refuse it
# before parsing rather than holding it all in memory (a 64 MiB plan is ~1M partitions).
MAX_JSON_FILE_BYTES = 64 * 1024 * 1024
# Broker ids and partitions are int32 on the wire.
INT32_MAX = 2**31 - 1
# Throttles are int64 on the wire.
INT64_MAX = 2**63 - 1
# Digits past which an option's number is out of range anyway: int() would refuse past 4300
# digits with a ValueError of its own (sys.get_int_max_str_digits).
_DIGITS_MAX = 24
# A log directory is an absolute path no longer than Linux's PATH_MAX; "any" asks for none.
LOG_DIR_ANY = "any"
LOG_DIR_MAX = 4096

_PARTITION_KEYS = {"topic", "partition", "replicas", "log_dirs", "original_replicas"}


@dataclass(frozen=True)
class Reassignment:
    """A validated reassignment file: (topic, partition) -> target replicas, in file order."""

    assignments: dict[TopicPartition, list[int]]
    source: str
    # (topic, partition, broker) -> the directory its ``log_dirs`` entry names (not "any")
    log_dirs: dict[tuple[str, int, int], str] = field(default_factory=dict)

    @property
    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.assignments})

    @property
    def brokers(self) -> list[int]:
        return sorted({b for rs in self.assignments.values() for b in rs})


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """json's object hook: a repeated key is an error. json.loads (and Kafka's Jackson) would keep
    the last value silently, dropping e.g. a whole "partitions" list or one of two "replicas"."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def read_json_file(path: str) -> object:
    """Read and parse a JSON file; every failure is an InputError naming the file."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        raise InputFileError("file not found", path) from None
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}", path) from None
    if os.path.isdir(path):
        raise InputFileError("is a directory, not a JSON file", path)
    if size > MAX_JSON_FILE_BYTES:
        raise InputFileError(f"file is {size} bytes, larger than the {MAX_JSON_FILE_BYTES}-byte limit", path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON_FILE_BYTES + 1)
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}", path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"not UTF-8 text (byte {exc.start})", path) from None
    if not text.strip():
        raise InputFileError("file is empty", path)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", path) from None
    except RecursionError:
        raise InputFileError("malformed JSON: nested too deeply", path) from None
    except _DuplicateKey as exc:
        raise InputFileError(f"malformed JSON: key {json.dumps(exc.key)} appears twice in one object "
                             "(only one of its values would be used)", path) from None
    except ValueError:  # Python's int() refuses more than 4300 digits; no id comes near
        raise InputFileError("malformed JSON: a number with too many digits", path) from None


def _digits(text: str) -> int:
    """Significant digits of a whole number's text (leading zeros and sign not counted)."""
    return len(text.strip().lstrip("-").lstrip("0"))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_version(doc: dict, source: str) -> None:
    # Kafka reads a missing version as version 1.
    version = doc.get("version", SUPPORTED_VERSION)
    if not _is_int(version) or version != SUPPORTED_VERSION:
        raise InputFileError(f"unsupported \"version\" {json.dumps(version)} (only {SUPPORTED_VERSION} is known)", source)


def check_topic_name(name: object, where: str, source: str) -> str:
    if not isinstance(name, str) or not name:
        raise InputFileError(f"{where}: \"topic\" must be a non-empty string, got {json.dumps(name)}", source)
    if name in (".", "..") or len(name) > TOPIC_NAME_MAX or not _TOPIC_RE.fullmatch(name):
        raise InputFileError(
            f"{where}: {name!r} is not a legal topic name "
            f"(ASCII letters, digits, '.', '_', '-'; at most {TOPIC_NAME_MAX}; not '.' or '..')",
            source,
        )
    return name


def _check_broker_ids(values: object, field: str, where: str, source: str) -> list[int]:
    if not isinstance(values, list) or not values:
        raise InputFileError(f"{where}: \"{field}\" must be a non-empty list of broker ids", source)
    seen: set[int] = set()
    for b in values:
        if not _is_int(b):
            raise InputFileError(f"{where}: \"{field}\" holds {json.dumps(b)}, not a broker id", source)
        if b < 0:
            raise InputFileError(f"{where}: \"{field}\" holds negative broker id {b}", source)
        if b > INT32_MAX:
            raise InputFileError(f"{where}: \"{field}\" holds broker id {b}, larger than int32", source)
        if b in seen:
            raise InputFileError(f"{where}: \"{field}\" lists broker {b} twice {values}", source)
        seen.add(b)
    return list(values)


def parse_reassignment(doc: object, source: str, *, require_replicas: bool = True) -> Reassignment:
    """Validate Kafka's reassignment JSON. ``require_replicas=False`` (for ``--cancel``) lets
    entries name only topic and partition."""
    if not isinstance(doc, dict):
        raise InputFileError(f"expected a JSON object with \"version\" and \"partitions\", got {type(doc).__name__}", source)
    _check_version(doc, source)
    unknown = set(doc) - {"version", "partitions"}
    if unknown:
        raise InputFileError(f"unknown top-level field(s) {sorted(unknown)}; expected \"version\" and \"partitions\"", source)
    entries = doc.get("partitions")
    if entries is None:
        raise InputFileError("missing \"partitions\" list", source)
    if not isinstance(entries, list):
        raise InputFileError(f"\"partitions\" must be a list, got {type(entries).__name__}", source)
    if not entries:
        raise InputFileError("\"partitions\" is empty: nothing to reassign", source)
    out: dict[TopicPartition, list[int]] = {}
    log_dirs: dict[tuple[str, int, int], str] = {}
    first_seen: dict[TopicPartition, int] = {}
    for i, entry in enumerate(entries):
        where = f"partitions[{i}]"
        if not isinstance(entry, dict):
            raise InputFileError(f"{where}: expected an object, got {json.dumps(entry)[:60]}", source)
        unknown = set(entry) - _PARTITION_KEYS
        if unknown:
            raise InputFileError(f"{where}: unknown field(s) {sorted(unknown)}", source)
        topic = check_topic_name(entry.get("topic"), where, source)
        partition = entry.get("partition")
        if not _is_int(partition):
            raise InputFileError(f"{where} (topic {topic!r}): \"partition\" must be an integer, got {json.dumps(partition)}", source)
        if partition < 0 or partition > INT32_MAX:
            raise InputFileError(f"{where} (topic {topic!r}): partition {partition} is out of range", source)
        where = f"{where} ({topic}-{partition})"
        if "replicas" in entry or require_replicas:
            replicas = _check_broker_ids(entry.get("replicas"), "replicas", where, source)
        else:
            replicas = []
        if "original_replicas" in entry:
            _check_broker_ids(entry["original_replicas"], "original_replicas", where, source)
        if "log_dirs" in entry:
            dirs = entry["log_dirs"]
            if not isinstance(dirs, list) or len(dirs) != len(replicas):
                raise InputFileError(f"{where}: \"log_dirs\" must list one directory per replica "
                                     f"({len(replicas)}), got {json.dumps(dirs)[:80]}", source)
            for broker, d in zip(replicas, dirs):
                if d != LOG_DIR_ANY:
                    log_dirs[(topic, partition, broker)] = check_log_dir(d, f"{where}, broker {broker}", source)
        key = (topic, partition)
        if key in out:
            raise InputFileError(f"{where}: duplicate of partitions[{first_seen[key]}]", source)
        first_seen[key] = i
        out[key] = replicas
    return Reassignment(out, source, log_dirs)


def check_log_dir(value: object, where: str, source: str) -> str:
    """A ``log_dirs`` entry other than "any": an absolute path (Kafka's brokers compare absolute
    paths; a relative one would name a directory of the broker's working directory)."""
    if not isinstance(value, str):
        raise InputFileError(f"{where}: log dir {json.dumps(value)} must be \"any\" or an absolute path", source)
    if not value.startswith("/"):
        raise InputFileError(f"{where}: log dir {json.dumps(value)} is not an absolute path (or \"any\")", source)
    # A lone surrogate ("\ud800" in the JSON) has no UTF-8 form: the request could not be encoded.
    if len(value) > LOG_DIR_MAX or any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise InputFileError(f"{where}: log dir {json.dumps(value[:80])} is not a usable path "
                             f"(control characters or lone surrogates, or longer than {LOG_DIR_MAX})", source)
    return value


def parse_topics_to_move(doc: object, source: str) -> list[str]:
    """Validate Kafka's topics-to-move JSON; returns the topic names in file order."""
    if not isinstance(doc, dict):
        raise InputFileError(f"expected a JSON object with \"version\" and \"topics\", got {type(doc).__name__}", source)
    _check_version(doc, source)
    unknown = set(doc) - {"version", "topics"}
    if unknown:
        raise InputFileError(f"unknown top-level field(s) {sorted(unknown)}; expected \"version\" and \"topics\"", source)
    entries = doc.get("topics")
    if not isinstance(entries, list):
        raise InputFileError("missing \"topics\" list", source)
    if not entries:
        raise InputFileError("\"topics\" is empty: nothing to move", source)
    topics: list[str] = []
    for i, entry in enumerate(entries):
        where = f"topics[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"topic"}:
            raise InputFileError(f"{where}: expected {{\"topic\": NAME}}, got {json.dumps(entry)[:60]}", source)
        name = check_topic_name(entry["topic"], where, source)
        if name in topics:
            raise InputFileError(f"{where}: topic {name!r} listed twice", source)
        topics.append(name)
    return topics


def parse_broker_list(text: str, option: str = "--broker-list") -> list[int]:
    """``"1,2,3"`` -> [1, 2, 3]; non-integers, negatives and repeats are errors."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise InputError(f"expected comma-separated broker ids like 1,2,3, got {text!r}", option)
    ids: list[int] = []
    for p in parts:
        if not re.fullmatch(r"-?\d+", p):
            raise InputError(f"{p!r} is not a broker id", option)
        if _digits(p) > _DIGITS_MAX:
            raise InputError(f"broker id {p[:_DIGITS_MAX]}... is out of range", option)
        b = int(p)
        if b < 0 or b > INT32_MAX:
            raise InputError(f"broker id {b} is out of range", option)
        if b in ids:
            raise InputError(f"broker {b} listed twice", option)
        ids.append(b)
    return ids


def parse_broker_id(text: str, option: str) -> int:
    ids = parse_broker_list(text, option)
    if len(ids) != 1:
        raise InputError(f"expected one broker id, got {text!r}", option)
    return ids[0]


def parse_throttle(text: str, option: str = "--throttle") -> int:
    """A positive number of bytes per second (KIP-179: INVALID_THROTTLE for <= 0)."""
    if not re.fullmatch(r"\s*-?\d+\s*", text or ""):
        raise InputError(f"must be a whole number of bytes/second, got {text!r}", option)
    if _digits(text) > _DIGITS_MAX:
        raise InputError(f"{text.strip()[:_DIGITS_MAX]}... is out of range (at most int64)", option)
    value = int(text)
    if value <= 0:
        raise InputError(f"must be positive (bytes/second), got {value}", option)
    if value > INT64_MAX:
        raise InputError(f"{value} is larger than int64", option)
    return value


def reassignment_json(assignments: dict[TopicPartition, list[int]]) -> str:
    """Kafka's reassignment JSON, compact, sorted by topic then partition (byte-stable)."""
    parts = [
        {"topic": t, "partition": p, "replicas": list(assignments[(t, p)])}
        for (t, p) in sorted(assignments)
    ]
    return json.dumps({"version": SUPPORTED_VERSION, "partitions": parts}, separators=(",", ":"))
