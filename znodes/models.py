"""Typed models of every znode payload reassignd reads or writes (docs/DESIGN.md section 3).

Kafka 2.4+ formats for the znodes Kafka has, the KIP formats for the ones the KIPs add. Each
model reads with ``Model.from_bytes(path, data)`` and writes with ``model.to_bytes()``:
compact JSON, UTF-8, keys in the order Kafka writes them. :func:`parse` picks the model from
the path. Whatever is wrong with a payload (not UTF-8, not JSON, a wrong type, a missing key,
an unknown version, a negative partition, a replica listed twice...) raises
:class:`znodes.errors.ZnodeFormatError` naming the path and the problem, never a raw
pydantic or json error. Unknown extra keys are ignored, as Kafka ignores them.

Usage::

    from znodes import models, paths

    state = models.PartitionState.from_bytes(paths.partition_state("t", 0), data)
    state.leader, state.isr
    record = models.ReassignmentRecord(replicas=[4, 5, 6], original_replicas=[1, 2, 3])
    await store.create(paths.reassignment("t", 0), record.to_bytes())
    models.parse("/admin/reassign_partitions", data)    # -> ReassignPartitions
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from znodes import paths, throttle_keys
from znodes.errors import ZnodeFormatError
from znodes.paths import ZnodeKind

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # Kafka reads these fields as Java ints


def _no_duplicates(values: list) -> list:
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is listed twice")
        seen.add(v)
    return values


def _topic_name(name: str) -> str:
    paths.validate_topic_name(name)
    return name


_TIMESTAMP = re.compile(r"-?[0-9]+")


def _timestamp(text: str) -> str:
    # Kafka writes System.currentTimeMillis().toString.
    if not _TIMESTAMP.fullmatch(text):
        raise ValueError(f"timestamp must be milliseconds as a decimal string, got {text!r}")
    return text


Int32 = Annotated[StrictInt, Field(ge=INT32_MIN, le=INT32_MAX)]
NonNegInt32 = Annotated[StrictInt, Field(ge=0, le=INT32_MAX)]
BrokerId = NonNegInt32
PartitionId = NonNegInt32
TopicName = Annotated[StrictStr, AfterValidator(_topic_name)]
Timestamp = Annotated[StrictStr, AfterValidator(_timestamp)]
# A partition always has at least one replica, and a broker holds at most one of them.
Replicas = Annotated[list[BrokerId], Field(min_length=1), AfterValidator(_no_duplicates)]
BrokerSet = Annotated[list[BrokerId], AfterValidator(_no_duplicates)]


def _id_keys(value: Any, what: str = "partition") -> Any:
    """JSON object keys "0", "1"... (partitions, brokers) -> ints; ints pass (models built in
    Python)."""
    if not isinstance(value, dict):
        return value
    out = {}
    for key in value:
        if isinstance(key, str):
            out[paths.parse_id(key, what)] = value[key]
        else:
            out[key] = value[key]
    return out


def _json_partitions(mapping: dict[int, list[int]]) -> dict[str, list[int]]:
    return {str(p): list(mapping[p]) for p in sorted(mapping)}


class ZnodeModel(BaseModel):
    """Base of the payload models: frozen, unknown keys ignored, JSON types exact."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    # Versions this model reads; None for payloads without a version field.
    VERSIONS: ClassVar[tuple[int, ...] | None] = (1,)

    @classmethod
    def from_bytes(cls, path: str, data: bytes):
        """Parse a znode payload; ZnodeFormatError(path, reason) if it is malformed."""
        return cls._validate(path, _load_json(path, data))

    @classmethod
    def _validate(cls, path: str, obj: Any):
        if not isinstance(obj, dict):
            raise ZnodeFormatError(path, f"expected a JSON object, got {_json_type(obj)}")
        if cls.VERSIONS is not None:
            version = obj.get("version", cls._default_version())
            if version is None:
                raise ZnodeFormatError(path, "missing required key 'version'")
            if isinstance(version, bool) or not isinstance(version, int) or version not in cls.VERSIONS:
                supported = ", ".join(map(str, cls.VERSIONS))
                raise ZnodeFormatError(path, f"unsupported version {version!r} (supported: {supported})")
        try:
            return cls.model_validate(obj)
        except ValidationError as e:
            raise ZnodeFormatError(path, _describe(e)) from None

    @classmethod
    def _default_version(cls) -> int | None:
        return None

    def to_bytes(self) -> bytes:
        """Compact JSON, UTF-8, keys in Kafka's order (each model's ``_to_json``)."""
        return json.dumps(self._to_json(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _load_json(path: str, data: bytes) -> Any:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ZnodeFormatError(path, f"payload must be bytes, got {type(data).__name__}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZnodeFormatError(path, f"payload is not UTF-8 ({e.reason} at byte {e.start})") from None
    if not text.strip():
        raise ZnodeFormatError(path, "payload is empty")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ZnodeFormatError(path, f"payload is not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:  # NaN/Infinity, or an integer too long to convert
        raise ZnodeFormatError(path, f"payload is not JSON ({e})") from None
    except RecursionError:
        raise ZnodeFormatError(path, "payload is nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_type(obj: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if obj is None else names.get(type(obj), type(obj).__name__)


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False)[:3]:
        loc = ".".join(str(x) for x in item["loc"]) or "payload"
        msg = item["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if item["type"] == "missing":
            msg = "missing required key"
        parts.append(f"{loc}: {msg}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# ---- /controller, /controller_epoch ----------------------------------------------------------


class ControllerZnode(ZnodeModel):
    """``/controller`` (ephemeral): ``{"version":1,"brokerid":N,"timestamp":"<ms>"}``.

    Kafka 3.x writes version 2 with ``kraftControllerEpoch`` (KIP-866); it is read too.
    """

    VERSIONS: ClassVar = (1, 2)
    version: Annotated[StrictInt, Field(ge=1, le=2)] = 1
    brokerid: BrokerId
    timestamp: Timestamp
    kraftControllerEpoch: Int32 | None = None

    def _to_json(self) -> dict:
        out: dict = {"version": self.version, "brokerid": self.brokerid, "timestamp": self.timestamp}
        if self.kraftControllerEpoch is not None:
            out["kraftControllerEpoch"] = self.kraftControllerEpoch
        return out


class ControllerEpoch(ZnodeModel):
    """``/controller_epoch``: the epoch as plain decimal text, e.g. ``3``."""

    VERSIONS: ClassVar = None
    epoch: NonNegInt32

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> ControllerEpoch:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ZnodeFormatError(path, f"payload must be bytes, got {type(data).__name__}")
        raw = bytes(data)
        # Kafka parses it with String.toInt: digits only, no spaces; an epoch is never negative.
        if not raw or not raw.isdigit():
            raise ZnodeFormatError(path, f"controller epoch must be a non-negative decimal integer, got {raw[:40]!r}")
        if int(raw) > INT32_MAX:
            raise ZnodeFormatError(path, f"controller epoch {int(raw)} does not fit a Java int")
        return cls(epoch=int(raw))

    def to_bytes(self) -> bytes:
        return str(self.epoch).encode("ascii")


# ---- /brokers/ids/N --------------------------------------------------------------------------

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's EndPoint.uriParseExp: LISTENER://host:port, host may be an [IPv6] literal or empty.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


class Endpoint(BaseModel):
    """One parsed entry of a broker's ``endpoints``."""

    model_config = ConfigDict(frozen=True)
    listener: str
    host: str
    port: int
    security_protocol: str


class BrokerRegistration(ZnodeModel):
    """``/brokers/ids/N`` (ephemeral), versions 1 to 5 as Kafka reads them.

    v1: host, port, jmx_port, timestamp. v2 adds ``endpoints``; v3 ``rack``; v4
    ``listener_security_protocol_map``; v5 (Kafka 2.7+) ``features``. Kafka writes ``host``
    null and ``port`` -1 when the broker has no PLAINTEXT listener.
    """

    VERSIONS: ClassVar = (1, 2, 3, 4, 5)
    version: Annotated[StrictInt, Field(ge=1, le=5)]
    host: StrictStr | None = None
    port: Int32 = -1
    jmx_port: Int32
    timestamp: Timestamp | None = None
    endpoints: list[StrictStr] | None = None
    rack: StrictStr | None = None
    listener_security_protocol_map: dict[StrictStr, StrictStr] | None = None
    features: dict[StrictStr, dict[StrictStr, Int32]] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> BrokerRegistration:
        if self.version == 1:
            if self.host is None or self.port < 0:
                raise ValueError("a version 1 registration needs host and port")
        elif self.endpoints is None:
            raise ValueError(f"endpoints: missing required key for version {self.version}")
        if self.listener_security_protocol_map is not None:
            for listener, protocol in self.listener_security_protocol_map.items():
                if protocol not in SECURITY_PROTOCOLS:
                    raise ValueError(f"listener {listener!r} has unknown security protocol {protocol!r}")
        self.parsed_endpoints()
        return self

    def parsed_endpoints(self) -> list[Endpoint]:
        """The endpoints as Kafka reads them (v1: one PLAINTEXT endpoint from host/port)."""
        if self.version == 1:
            return [Endpoint(listener="PLAINTEXT", host=self.host or "", port=self.port, security_protocol="PLAINTEXT")]
        out = []
        for text in self.endpoints or []:
            m = _ENDPOINT.match(text)
            if m is None:
                raise ValueError(f"endpoint {text!r} is not LISTENER://host:port")
            listener, host, port = m.group(1), m.group(2), int(m.group(3))
            if not listener:
                raise ValueError(f"endpoint {text!r} has no listener name")
            if self.listener_security_protocol_map is not None:
                protocol = self.listener_security_protocol_map.get(listener)
                if protocol is None:
                    raise ValueError(f"no security protocol defined for listener {listener!r}")
            elif listener.upper() in SECURITY_PROTOCOLS:
                protocol = listener.upper()
            else:
                raise ValueError(f"listener {listener!r} is not a security protocol and no map names it")
            if not INT32_MIN <= port <= INT32_MAX:
                raise ValueError(f"endpoint {text!r} has a port out of range")
            out.append(Endpoint(listener=listener, host=host, port=port, security_protocol=protocol))
        return out

    def _to_json(self) -> dict:
        # Optional fields are written whenever set: Kafka reads each of them whatever the
        # version says, so nothing read is lost on the way back.
        fields: dict[str, Any] = {}
        if self.features is not None:
            fields["features"] = self.features
        if self.listener_security_protocol_map is not None:
            fields["listener_security_protocol_map"] = self.listener_security_protocol_map
        if self.endpoints is not None:
            fields["endpoints"] = list(self.endpoints)
        if self.rack is not None:
            fields["rack"] = self.rack
        fields["jmx_port"] = self.jmx_port
        if self.version >= 5:
            # Kafka 2.7+ (Scala 2.13) lays its hash map out in this order...
            fields.update(port=self.port, host=self.host, version=self.version)
            if self.timestamp is not None:
                fields["timestamp"] = self.timestamp
        else:
            # ...and Kafka 2.4-2.6 (Scala 2.12) in this one.
            fields["host"] = self.host
            if self.timestamp is not None:
                fields["timestamp"] = self.timestamp
            fields.update(port=self.port, version=self.version)
        return fields


# ---- /brokers/topics/T, its partition states -------------------------------------------------


_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")


def _topic_id(text: str) -> str:
    # Kafka's Uuid.toString: 16 bytes, URL-safe base64 without padding.
    if not _UUID_TEXT.fullmatch(text):
        raise ValueError(f"topic_id {text!r} is not a Kafka Uuid (22 URL-safe base64 characters)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        raise ValueError(f"topic_id {text!r} is not a Kafka Uuid") from None
    if len(raw) != 16:
        raise ValueError(f"topic_id {text!r} is not a Kafka Uuid")
    return text


class TopicAssignment(ZnodeModel):
    """``/brokers/topics/T``: replica assignment per partition.

    v1 ``{"version":1,"partitions":{"0":[1,2]}}``; v2 (Kafka 2.4) adds ``adding_replicas`` and
    ``removing_replicas`` (partitions being reassigned only); v3 (Kafka 2.8) adds ``topic_id``.
    Partition keys are ints here, decimal strings in the JSON.
    """

    VERSIONS: ClassVar = (1, 2, 3)
    version: Annotated[StrictInt, Field(ge=1, le=3)] = 2
    partitions: dict[PartitionId, Replicas]
    adding_replicas: dict[PartitionId, BrokerSet] = Field(default_factory=dict)
    removing_replicas: dict[PartitionId, BrokerSet] = Field(default_factory=dict)
    topic_id: Annotated[StrictStr, AfterValidator(_topic_id)] | None = None

    @field_validator("partitions", "adding_replicas", "removing_replicas", mode="before")
    @classmethod
    def _int_keys(cls, value: Any) -> Any:
        return _id_keys(value)

    @field_validator("adding_replicas", "removing_replicas", mode="after")
    @classmethod
    def _drop_empty(cls, value: dict[int, list[int]]) -> dict[int, list[int]]:
        # An empty list means the same as no entry (Kafka writes only non-empty ones).
        return {p: r for p, r in value.items() if r}

    @model_validator(mode="after")
    def _within_replicas(self) -> TopicAssignment:
        for name, mapping in (("adding_replicas", self.adding_replicas), ("removing_replicas", self.removing_replicas)):
            for p, brokers in mapping.items():
                if p not in self.partitions:
                    raise ValueError(f"{name}.{p}: partition {p} is not in partitions")
                stray = [b for b in brokers if b not in self.partitions[p]]
                if stray:
                    raise ValueError(f"{name}.{p}: brokers {stray} are not replicas of partition {p}")
        for p in set(self.adding_replicas) & set(self.removing_replicas):
            both = set(self.adding_replicas[p]) & set(self.removing_replicas[p])
            if both:
                raise ValueError(f"partition {p}: brokers {sorted(both)} are both adding and removing")
        if self.topic_id is not None and self.version < 3:
            raise ValueError(f"topic_id needs version 3, this is version {self.version}")
        return self

    def _to_json(self) -> dict:
        parts = _json_partitions(self.partitions)
        adding = _json_partitions(self.adding_replicas)
        removing = _json_partitions(self.removing_replicas)
        if self.version == 1 and not adding and not removing:
            return {"version": 1, "partitions": parts}
        if self.version <= 2:
            return {"version": self.version, "partitions": parts, "adding_replicas": adding, "removing_replicas": removing}
        # Kafka 2.8+ writes v3 from a hash map, in this order.
        out: dict = {"removing_replicas": removing, "partitions": parts}
        if self.topic_id is not None:
            out["topic_id"] = self.topic_id
        out["adding_replicas"] = adding
        out["version"] = 3
        return out


class PartitionState(ZnodeModel):
    """``/brokers/topics/T/partitions/P/state``: leader, leader epoch, ISR, controller epoch.

    ``leader`` is -1 when there is none (-2 while the topic is being deleted, as in Kafka).
    """

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    leader: Annotated[StrictInt, Field(ge=-2, le=INT32_MAX)]
    leader_epoch: NonNegInt32
    controller_epoch: NonNegInt32
    isr: BrokerSet
    leader_recovery_state: Int32 | None = None  # Kafka 3.2+ (KIP-704), kept when present

    def _to_json(self) -> dict:
        out: dict = {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": 1,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }
        if self.leader_recovery_state is not None:
            out["leader_recovery_state"] = self.leader_recovery_state
        return out


class TopicPartitionRef(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    topic: TopicName
    partition: PartitionId


class NotifiedState(BaseModel):
    """The state a leader wrote, as it wrote it, and the zkVersion ZooKeeper gave that write.

    reassignd's extension of Kafka's notification entry (Kafka's controller ignores unknown
    keys): with it the controller need not read the state znode back. It is safe to act on
    because the controller's writes that depend on it are conditional on ``zk_version``: they
    land only if the znode still is exactly this state.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    leader: Annotated[StrictInt, Field(ge=-2, le=INT32_MAX)]
    leader_epoch: NonNegInt32
    controller_epoch: NonNegInt32
    isr: BrokerSet
    zk_version: NonNegInt32


class IsrChangeRef(TopicPartitionRef):
    state: NotifiedState | None = None


class IsrChangeNotification(ZnodeModel):
    """``/isr_change_notification/isr_change_<seq>``: partitions whose ISR changed.

    Kafka's entries are ``{"topic":"t","partition":0}``; an entry may also carry ``"state"``
    (see :class:`NotifiedState`), which reassignd's simulated brokers write.
    """

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    partitions: list[IsrChangeRef]

    def _to_json(self) -> dict:
        out = []
        for p in self.partitions:
            entry: dict = {"topic": p.topic, "partition": p.partition}
            if p.state is not None:
                s = p.state
                entry["state"] = {
                    "leader": s.leader,
                    "leader_epoch": s.leader_epoch,
                    "controller_epoch": s.controller_epoch,
                    "isr": list(s.isr),
                    "zk_version": s.zk_version,
                }
            out.append(entry)
        return {"version": 1, "partitions": out}


class LogDirEventNotification(ZnodeModel):
    """``/log_dir_event_notification/log_dir_event_<seq>``: a broker's log directory failed
    (Kafka's LogDirEventNotificationSequenceZNode, written by its LogDirFailureHandler):
    ``{"version":1,"broker":N,"event":1}``. Kafka's controller reads only ``broker``; ``event``
    (1, LogDirFailureEvent, the only one Kafka defines) is kept as written."""

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    broker: BrokerId
    event: StrictInt = 1

    def _to_json(self) -> dict:
        return {"version": 1, "broker": self.broker, "event": self.event}


# ---- /config ---------------------------------------------------------------------------------


class EntityConfig(ZnodeModel):
    """``/config/topics/T``, ``/config/brokers/N``: ``{"version":1,"config":{"k":"v"}}``.

    Values are strings, as Kafka requires; a missing ``config`` is an empty one, as in Kafka.
    """

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    config: dict[StrictStr, StrictStr] = Field(default_factory=dict)

    def _to_json(self) -> dict:
        return {"version": 1, "config": {k: self.config[k] for k in sorted(self.config)}}


CONFIG_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")  # Kafka's ConfigType.all


class ConfigChangeNotification(ZnodeModel):
    """``/config/changes/config_change_<seq>``: v2 ``{"version":2,"entity_path":"topics/T"}``.

    Kafka still reads v1 ``{"version":1,"entity_type":"topics","entity_name":"T"}``; so does
    this model.
    """

    VERSIONS: ClassVar = (1, 2)
    version: Annotated[StrictInt, Field(ge=1, le=2)] = 2
    entity_path: StrictStr | None = None
    entity_type: StrictStr | None = None
    entity_name: StrictStr | None = None

    @model_validator(mode="after")
    def _entity(self) -> ConfigChangeNotification:
        if self.version == 2:
            if self.entity_path is None:
                raise ValueError("entity_path: missing required key for version 2")
            root, slash, name = self.entity_path.partition("/")
            if not slash or not name:
                raise ValueError(f"entity_path {self.entity_path!r} is not <entity type>/<entity name>")
            entity_type = root
        else:
            if self.entity_type is None or self.entity_name is None:
                raise ValueError("version 1 needs entity_type and entity_name")
            entity_type = self.entity_type
        if entity_type not in CONFIG_ENTITY_TYPES:
            raise ValueError(f"unknown config entity type {entity_type!r}")
        return self

    def _to_json(self) -> dict:
        if self.version == 2:
            return {"version": 2, "entity_path": self.entity_path}
        return {"version": 1, "entity_type": self.entity_type, "entity_name": self.entity_name}


# ---- /admin ----------------------------------------------------------------------------------


def _log_dir(text: str) -> str:
    # Kafka's reassignment JSON: "any" or an absolute path per replica.
    if text != "any" and not text.startswith("/"):
        raise ValueError(f"log dir {text!r} is neither \"any\" nor an absolute path")
    return text


class ReassignEntry(BaseModel):
    """One partition of a reassignment: target ``replicas``; KIP-236 ``original_replicas``
    (absent in writes by Kafka 2.x tools and third-party tools); Kafka's optional
    ``log_dirs``, one per replica."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    topic: TopicName
    partition: PartitionId
    replicas: Replicas
    original_replicas: Replicas | None = None
    log_dirs: list[Annotated[StrictStr, AfterValidator(_log_dir)]] | None = None
    # reassignd's own key (controller.core.isr_health): start even at the ISR's floor.
    skip_isr_check: StrictBool = False
    # reassignd's own key (controller.core.move_order): the move's start-order strategies, by
    # name (a name the controller does not know is skipped there, not refused here).
    movement_strategies: list[Annotated[StrictStr, Field(min_length=1)]] = []

    @model_validator(mode="after")
    def _dirs_match(self) -> ReassignEntry:
        if self.log_dirs is not None and len(self.log_dirs) != len(self.replicas):
            raise ValueError(
                f"{self.topic}-{self.partition}: {len(self.log_dirs)} log_dirs for {len(self.replicas)} replicas"
            )
        return self

    def to_json(self) -> dict:
        out: dict = {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas)}
        if self.original_replicas is not None:
            out["original_replicas"] = list(self.original_replicas)
        if self.log_dirs is not None:
            out["log_dirs"] = list(self.log_dirs)
        if self.skip_isr_check:
            out["skip_isr_check"] = True
        if self.movement_strategies:
            out["movement_strategies"] = list(self.movement_strategies)
        return out


class ReassignPartitions(ZnodeModel):
    """``/admin/reassign_partitions``: ``{"version":1,"partitions":[{"topic","partition",
    "replicas","original_replicas"}]}``. ``version`` may be absent (Kafka's tool reads it as 1);
    a partition may appear only once."""

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    partitions: list[ReassignEntry]

    @classmethod
    def _default_version(cls) -> int | None:
        return 1

    @field_validator("partitions", mode="after")
    @classmethod
    def _unique(cls, entries: list[ReassignEntry]) -> list[ReassignEntry]:
        seen = set()
        for e in entries:
            key = (e.topic, e.partition)
            if key in seen:
                raise ValueError(f"partition {e.topic}-{e.partition} appears twice")
            seen.add(key)
        return entries

    def _to_json(self) -> dict:
        return {"version": 1, "partitions": [e.to_json() for e in self.partitions]}


class ReassignQueue(ReassignPartitions):
    """``/admin/reassign_partitions_queue`` (KIP-236): the same format as reassign_partitions."""


class ReassignmentRecord(ZnodeModel):
    """``/admin/reassignments/T/P`` (KIP-240): one running partition reassignment.

    ``{"version":1,"replicas":[...],"original_replicas":[...]}``; the znode's czxid is the
    reassignment id and its ctime the start time.
    """

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    replicas: Replicas
    original_replicas: Replicas

    def _to_json(self) -> dict:
        return {"version": 1, "replicas": list(self.replicas), "original_replicas": list(self.original_replicas)}


class CancelReassignment(ZnodeModel):
    """``/admin/cancel_reassignment_in_progress`` (KIP-236): its existence is the signal; any
    payload (usually empty) is accepted and kept as is."""

    VERSIONS: ClassVar = None
    payload: bytes = b""

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> CancelReassignment:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ZnodeFormatError(path, f"payload must be bytes, got {type(data).__name__}")
        return cls(payload=bytes(data))

    def to_bytes(self) -> bytes:
        return self.payload


class PreferredReplicaElection(ZnodeModel):
    """``/admin/preferred_replica_election``: Kafka's partitions to give back to their preferred
    leader, ``{"version":1,"partitions":[{"topic":"t","partition":0}]}``, written by
    ``kafka-preferred-replica-election.sh --zookeeper`` and other tools; the controller elects
    them and deletes the znode. A partition may appear twice (Kafka reads them into a set)."""

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    partitions: list[TopicPartitionRef]

    @classmethod
    def _default_version(cls) -> int | None:
        return 1

    def _to_json(self) -> dict:
        return {"version": 1, "partitions": [{"topic": p.topic, "partition": p.partition} for p in self.partitions]}


def _restore_checked(restore: dict, members, keys: tuple[str, ...]) -> None:
    for name, values in restore.items():
        if name not in members:
            raise ValueError(f"restore names {name!r}, which is not listed")
        extra = sorted(set(values) - set(keys))
        if extra:
            raise ValueError(f"restore of {name!r} holds {extra}, not a throttle key of it ({', '.join(keys)})")


def _restore_json(restore: dict) -> dict:
    return {str(name): {k: values[k] for k in sorted(values)} for name, values in sorted(restore.items())}


# A listed entity's throttle keys as they were before it was first listed, put back by the
# removal instead of deleted (absent: it had none). Not in KIP-179: tools that write only the
# list get the KIP's removal, and readers that ignore the key lose nothing else.
Restore = dict[str, dict[str, StrictStr]]


class ThrottledReplicasRemoval(ZnodeModel):
    """``/admin/throttled_replicas_removal`` (KIP-179): topics whose replica throttles the
    controller removes when no reassignment runs. ``{"version":1,"topics":["t"]}``, with
    ``"restore":{"t":{"leader.replication.throttled.replicas":"3:1"}}`` when a listed topic had
    throttled replicas of its own before it was listed."""

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    topics: Annotated[list[TopicName], AfterValidator(_no_duplicates)]
    restore: Restore = Field(default_factory=dict)

    @model_validator(mode="after")
    def _restore_listed(self):
        _restore_checked(self.restore, set(self.topics), throttle_keys.REPLICA_KEYS)
        return self

    def _to_json(self) -> dict:
        out: dict = {"version": 1, "topics": list(self.topics)}
        if self.restore:
            out["restore"] = _restore_json(self.restore)
        return out


class ThrottledRatesRemoval(ZnodeModel):
    """``/admin/throttled_rates_removal`` (KIP-179): brokers whose throttle rates the
    controller removes when no reassignment runs. ``{"version":1,"brokers":[1,2]}``, with
    ``"restore":{"1":{"leader.replication.throttled.rate":"100"}}`` when a listed broker had
    rates of its own before it was listed."""

    version: Annotated[StrictInt, Field(ge=1, le=1)] = 1
    brokers: BrokerSet
    restore: dict[BrokerId, dict[str, StrictStr]] = Field(default_factory=dict)

    @field_validator("restore", mode="before")
    @classmethod
    def _broker_keys(cls, value: Any) -> Any:
        return _id_keys(value, "broker")

    @model_validator(mode="after")
    def _restore_listed(self):
        _restore_checked(self.restore, set(self.brokers), throttle_keys.RATE_KEYS)
        return self

    def _to_json(self) -> dict:
        out: dict = {"version": 1, "brokers": list(self.brokers)}
        if self.restore:
            out["restore"] = _restore_json(self.restore)
        return out


# ---- by path ---------------------------------------------------------------------------------

MODEL_BY_KIND: dict[ZnodeKind, type[ZnodeModel]] = {
    ZnodeKind.CONTROLLER: ControllerZnode,
    ZnodeKind.CONTROLLER_EPOCH: ControllerEpoch,
    ZnodeKind.BROKER: BrokerRegistration,
    ZnodeKind.TOPIC: TopicAssignment,
    ZnodeKind.PARTITION_STATE: PartitionState,
    ZnodeKind.ISR_CHANGE: IsrChangeNotification,
    ZnodeKind.TOPIC_CONFIG: EntityConfig,
    ZnodeKind.BROKER_CONFIG: EntityConfig,
    ZnodeKind.CONFIG_CHANGE: ConfigChangeNotification,
    ZnodeKind.REASSIGN_PARTITIONS: ReassignPartitions,
    ZnodeKind.REASSIGNMENT: ReassignmentRecord,
    ZnodeKind.CANCEL_REASSIGNMENT: CancelReassignment,
    ZnodeKind.REASSIGN_QUEUE: ReassignQueue,
    ZnodeKind.THROTTLED_REPLICAS_REMOVAL: ThrottledReplicasRemoval,
    ZnodeKind.THROTTLED_RATES_REMOVAL: ThrottledRatesRemoval,
    ZnodeKind.PREFERRED_REPLICA_ELECTION: PreferredReplicaElection,
}


def model_for(path: str) -> type[ZnodeModel]:
    """The model of the znode at ``path``; ZnodeFormatError if the layout has no such znode."""
    match = paths.classify(path) if isinstance(path, str) else None
    if match is None:
        raise ZnodeFormatError(str(path), "no znode of the layout lives at this path")
    return MODEL_BY_KIND[match.kind]


def parse(path: str, data: bytes) -> ZnodeModel:
    """Parse the payload of the znode at ``path`` with the model its path calls for."""
    return model_for(path).from_bytes(path, data)
