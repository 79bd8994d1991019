"""Znode payloads <-> the controller's state types, through :mod:`znodes.models`.

Decoders raise :class:`znodes.errors.ZnodeFormatError` (path and reason) and nothing else.
``/admin/reassign_partitions`` is read entry by entry: one bad entry is dropped with its reason
(the engine rewrites the znode without it), it does not reject the others.

    decode_topic("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1,2]}}')
    # {0: Assignment(replicas=(1, 2), adding=(), removing=())}
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import StrictBool, ValidationError

from znodes import models, paths
from znodes.errors import ZnodeFormatError
from znodes.values import NO_PORT, Assignment, Broker, LeaderIsr, Request, TopicPartition

LISTENER = "PLAINTEXT"


# ---- /brokers/topics/T ---------------------------------------------------------------------


def decode_topic(path: str, data: bytes) -> dict[int, Assignment]:
    return decode_topic_with_id(path, data)[0]


def decode_topic_with_id(path: str, data: bytes) -> tuple[dict[int, Assignment], str | None]:
    """The partitions and the ``topic_id`` (Kafka 2.8+, version 3; None without one), which
    every rewrite of the znode must keep (:func:`encode_topic`)."""
    # Hot (every topic znode at every election: 100 topics of 1,000 partitions took ~1 s
    # through the model, the larger part of a failover's reads): the plain shape is checked
    # here as the model would check it; anything else - an error, an extra key, a topic id -
    # goes to the model, which accepts it or says what is wrong.
    plain = _plain_topic(data)
    if plain is not None:
        return plain, None
    m = models.TopicAssignment.from_bytes(path, data)
    return {
        p: Assignment(tuple(replicas), tuple(m.adding_replicas.get(p, ())), tuple(m.removing_replicas.get(p, ())))
        for p, replicas in sorted(m.partitions.items())
    }, m.topic_id


_PLAIN_TOPIC_KEYS = frozenset({"version", "partitions", "adding_replicas", "removing_replicas"})
_NO_MOVES: dict = {}


# Canonical partition keys seen, by text: every topic znode names 0..n-1 again. Bounded: past
# this many, a key is checked each time.
_PARTITION_KEYS: dict[str, int] = {}
_PARTITION_KEYS_MAX = 100_000


def _partition_id(key: str) -> int | None:
    """A canonical partition key ("0", "17"), as paths.parse_id reads it; None otherwise."""
    p = _PARTITION_KEYS.get(key)
    if p is not None:
        return p
    if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0"):
        p = int(key)
        if p <= _INT32_MAX:
            if len(_PARTITION_KEYS) < _PARTITION_KEYS_MAX:
                _PARTITION_KEYS[key] = p
            return p
    return None


def _broker_ids(values, empty_ok: bool) -> tuple[int, ...] | None:
    """A list of distinct int32 broker ids (models.Replicas, or BrokerSet with ``empty_ok``)."""
    if type(values) is not list or not (values or empty_ok):
        return None
    for b in values:
        if type(b) is not int or not 0 <= b <= _INT32_MAX:
            return None
    out = tuple(values)
    return out if len(set(out)) == len(out) else None


def _not_a_float(text: str):
    raise ValueError(text)  # never in a plain znode: the model says what is wrong


def _plain_doc(data, decoder: json.JSONDecoder) -> dict | None:
    """``data`` decoded as one JSON object by ``decoder``, or None (not bytes, not UTF-8, not
    JSON, not an object): the fast paths' first check, each leaving anything odd to its model."""
    if type(data) is not bytes:
        return None
    try:
        doc = decoder.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return doc if type(doc) is dict else None


def _plain_topic(data) -> dict[int, Assignment] | None:
    """decode_topic's answer if ``data`` is a plain v1/v2 topic znode the model accepts; else
    None (not an error)."""
    if type(data) is not bytes or b"true" in data or b"false" in data:
        return None  # a JSON boolean equals 0 or 1 too (see the cache below): the model's case
    doc = _plain_doc(data, _PLAIN_JSON)
    if doc is None or not doc.keys() <= _PLAIN_TOPIC_KEYS:
        return None
    version, parts = doc.get("version"), doc.get("partitions")
    if type(version) is not int or version not in (1, 2) or type(parts) is not dict:
        return None
    moving: dict[int, list] = {}  # partition -> [adding, removing]
    for i, key in enumerate(("adding_replicas", "removing_replicas")):
        listed = doc.get(key, _NO_MOVES)
        if type(listed) is not dict:
            return None
        for k, brokers in listed.items():
            p, ids = _partition_id(k), _broker_ids(brokers, empty_ok=True)
            if p is None or ids is None:
                return None
            if ids:  # an empty list is no entry (models.TopicAssignment._drop_empty)
                moving.setdefault(p, [(), ()])[i] = ids
    found: dict[int, Assignment] = {}
    # Replica lists repeat (a cluster has few broker combinations): one check and one frozen
    # Assignment per distinct list. Safe as a cache key: no bools or floats got this far, and
    # an unhashable element (a nested list) raises TypeError, answered by the model.
    plain: dict[tuple, Assignment] = {}
    try:
        keys = _PARTITION_KEYS.get
        for key, replicas in parts.items():
            p = keys(key)
            if p is None:
                p = _partition_id(key)
            if p is None or type(replicas) is not list:
                return None
            key_tuple = tuple(replicas)
            assignment = plain.get(key_tuple)
            if assignment is None:
                ids = _broker_ids(replicas, empty_ok=False)
                if ids is None:
                    return None
                assignment = plain[key_tuple] = Assignment(ids)
            found[p] = assignment
    except TypeError:
        return None
    for p, (adding, removing) in moving.items():
        current = found.get(p)
        if current is None or not set(adding) <= set(current.replicas) or not set(removing) <= set(current.replicas):
            return None
        if set(adding) & set(removing):
            return None
        found[p] = Assignment(current.replicas, adding, removing)
    return dict(sorted(found.items()))


def encode_topic(assignments: dict[int, Assignment], topic_id: str | None = None) -> bytes:
    """Version 2, or version 3 with ``topic_id`` when the topic has one (Kafka 2.8+ gave it:
    a rewrite that dropped it would have Kafka give the topic a new id, which its brokers'
    ``partition.metadata`` files would then contradict)."""
    # Hot: every step rewrites each topic znode it touched whole (1,000 partitions to change
    # a few), so it is formatted directly from validated state: the same bytes as
    # models.TopicAssignment(version=2 or 3, ...).to_bytes() (tests/controller/test_payloads.py),
    # in about a quarter of the time, the replica lists taken from _INT_LISTS.
    parts, adding, removing = [], [], []
    for p in sorted(assignments):
        a, key = assignments[p], f'"{int(p)}":'
        parts.append(key + _int_list(a.replicas))
        if a.adding:
            adding.append(key + _int_list(a.adding))
        if a.removing:
            removing.append(key + _int_list(a.removing))
    if topic_id is not None:  # Kafka 2.8+'s order (models.TopicAssignment._to_json)
        return (
            f'{{"removing_replicas":{{{",".join(removing)}}},"partitions":{{{",".join(parts)}}},'
            f'"topic_id":{json.dumps(topic_id)},"adding_replicas":{{{",".join(adding)}}},"version":3}}'
        ).encode()
    return (
        f'{{"version":2,"partitions":{{{",".join(parts)}}},'
        f'"adding_replicas":{{{",".join(adding)}}},"removing_replicas":{{{",".join(removing)}}}}}'
    ).encode()


# Replica lists as JSON arrays, by their tuple: every broker-id list a znode payload of this
# module writes. Topic znodes and /admin/reassign_partitions are rewritten whole by every step
# that touches them, and a cluster's replica lists repeat (12 brokers at RF 3 make at most
# 1,320): a hit is one lookup instead of a join of str() calls.
# Bounded like _STATES: past this many, the rest are formatted each time.
_INT_LISTS: dict[tuple[int, ...], str] = {}
_INT_LISTS_MAX = 20_000


def _int_list(values) -> str:
    """``values`` (ints) as a compact JSON array."""
    if type(values) is not tuple:
        return f"[{_ints(values)}]"
    text = _INT_LISTS.get(values)
    if text is None:
        text = f"[{_ints(values)}]"
        # Only ints in the key: (True,) and (1.0,) equal (1,) as keys, and would be answered
        # with its text (the same text, as _ints writes int(v)); kept out all the same.
        if len(_INT_LISTS) < _INT_LISTS_MAX and all(type(v) is int for v in values):
            _INT_LISTS[values] = text
    return text


# ---- /brokers/topics/T/partitions/P/state --------------------------------------------------


# The keys of a state znode as Kafka (before 3.2) and every simulated broker write it.
_PLAIN_STATE_KEYS = frozenset({"controller_epoch", "leader", "version", "leader_epoch", "isr"})
_INT32_MAX = 2**31 - 1


def decode_state(path: str, data: bytes, zk_version: int) -> LeaderIsr:
    # Hot (every partition at election, for the full UpdateMetadata): the plain shape is
    # checked here as the model would check it; anything else - an error, an extra key, a
    # value out of range - goes to the model, which accepts it or says what is wrong.
    state = _plain_state(data, zk_version)
    if state is not None:
        return state
    m = models.PartitionState.from_bytes(path, data)
    return LeaderIsr(m.leader, m.leader_epoch, m.controller_epoch, tuple(m.isr), zk_version)


# Plain state znodes seen, by their bytes: (leader, leader_epoch, controller_epoch, isr). An
# election reads every partition's state, and a cluster's states repeat (few leaders, ISRs and
# epochs): a hit costs a lookup instead of a JSON decode and its checks (about 0.8 us instead
# of 3.4). Only bytes the checks below accepted get in; bounded: past this many, the rest are
# decoded each time.
_STATES: dict[bytes, tuple[int, int, int, tuple[int, ...]]] = {}
_STATES_MAX = 20_000


def _plain_state(data, zk_version: int) -> LeaderIsr | None:
    """The state if ``data`` is a plain, valid state znode; else None (not an error)."""
    if type(data) is bytes:
        seen = _STATES.get(data)
        if seen is not None:
            if type(zk_version) is not int or not 0 <= zk_version <= _INT32_MAX:
                return None
            return LeaderIsr(*seen, zk_version)
    doc = _plain_doc(data, _STATE_JSON)
    if doc is None or doc.keys() != _PLAIN_STATE_KEYS:
        return None
    version = doc["version"]
    if type(version) is not int or version != 1:
        return None
    state = _plain_leader_isr(doc["leader"], doc["leader_epoch"], doc["controller_epoch"], doc["isr"], zk_version)
    if state is not None and len(_STATES) < _STATES_MAX:
        _STATES[data] = (state.leader, state.leader_epoch, state.controller_epoch, state.isr)
    return state


def _plain_leader_isr(leader, leader_epoch, controller_epoch, isr, zk_version) -> LeaderIsr | None:
    """The LeaderIsr of these decoded JSON values if each is what models.PartitionState (and
    NotifiedState) accepts; else None (not an error)."""
    if not (
        type(leader) is int and -2 <= leader <= _INT32_MAX
        and type(leader_epoch) is int and 0 <= leader_epoch <= _INT32_MAX
        and type(controller_epoch) is int and 0 <= controller_epoch <= _INT32_MAX
        and type(zk_version) is int and 0 <= zk_version <= _INT32_MAX
        and type(isr) is list
    ):
        return None
    for b in isr:
        if type(b) is not int or not 0 <= b <= _INT32_MAX:
            return None
    if len(set(isr)) != len(isr):
        return None
    return LeaderIsr(leader, leader_epoch, controller_epoch, tuple(isr), zk_version)


def _no_constant(name: str):
    raise ValueError(name)  # NaN, Infinity: never a plain state


_STATE_JSON = json.JSONDecoder(parse_constant=_no_constant)  # one decoder, not one per call
# Floats and NaN/Infinity refused while parsing: a float equal to an int (1.0) would pass for
# it in the replica-list cache of _plain_topic.
_PLAIN_JSON = json.JSONDecoder(parse_constant=_no_constant, parse_float=_not_a_float)


def encode_state(state: LeaderIsr) -> bytes:
    # Hot (one per completed move): formatted directly from the ints of validated state, the
    # same bytes as models.PartitionState(...).to_bytes() (tests/controller/test_payloads.py).
    return (
        f'{{"controller_epoch":{int(state.controller_epoch)},"leader":{int(state.leader)},"version":1,'
        f'"leader_epoch":{int(state.leader_epoch)},"isr":{_int_list(state.isr)}}}'
    ).encode()


def _ints(values) -> str:
    return ",".join([str(int(v)) for v in values])


# ---- /admin/reassign_partitions ------------------------------------------------------------


def decode_requests(path: str, data: bytes) -> tuple[list[Request], list[str]]:
    """(valid entries in order, reasons for the entries that are not).

    A payload that is not a ``{"version":1,"partitions":[...]}`` object at all raises
    ZnodeFormatError: then nothing in it can be trusted and nothing is changed.
    """
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ZnodeFormatError(path, f"payload is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ZnodeFormatError(path, "expected a JSON object")
    version = obj.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise ZnodeFormatError(path, f"unsupported version {version!r} (supported: 1)")
    entries = obj.get("partitions")
    if not isinstance(entries, list):
        raise ZnodeFormatError(path, "partitions must be a list")
    good: list[Request] = []
    bad: list[str] = []
    for i, raw in enumerate(entries):
        plain = _plain_entry(raw)
        if plain is not None:
            good.append(plain)
            continue
        try:
            e = models.ReassignEntry.model_validate(raw)
        except ValidationError as exc:
            what = f"{raw.get('topic')}-{raw.get('partition')}" if isinstance(raw, dict) else f"entry {i}"
            reasons = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'entry'}: {err['msg']}" for err in exc.errors())
            bad.append(f"dropping entry {i} ({what}) of {path}: {reasons}")
            continue
        good.append(
            Request(
                e.topic,
                e.partition,
                tuple(e.replicas),
                tuple(e.original_replicas) if e.original_replicas is not None else None,
                tuple(e.log_dirs) if e.log_dirs is not None else None,
                e.skip_isr_check,
                tuple(e.movement_strategies),
            )
        )
    return good, bad


_PLAIN_ENTRY_KEYS = frozenset({"topic", "partition", "replicas", "original_replicas"})


def _plain_entry(raw) -> Request | None:
    """The Request of an entry in Kafka's plain shape (plus KIP-236's ``original_replicas``)
    that models.ReassignEntry accepts; None for anything else, which goes to the model (hot:
    a failover reads thousands of entries, the model took ~30 us each)."""
    if type(raw) is not dict or not raw.keys() <= _PLAIN_ENTRY_KEYS:
        return None
    topic, partition, original = raw.get("topic"), raw.get("partition"), raw.get("original_replicas")
    if type(topic) is not str or type(partition) is not int or not 0 <= partition <= _INT32_MAX:
        return None
    try:
        paths.validate_topic_name(topic)
    except ValueError:
        return None
    replicas = _broker_ids(raw.get("replicas"), empty_ok=False)
    if replicas is None:
        return None
    if original is not None:
        original = _broker_ids(original, empty_ok=False)
        if original is None:
            return None
    return Request(topic, partition, replicas, original, None, False, ())


def encode_requests(requests: Iterable[Request]) -> bytes:
    # Hot: the znode holds up to ~10,000 entries and a step rewrites it whole. Formatted
    # directly, the same bytes as json.dumps of the entries' dicts (compact separators, ASCII
    # escapes; tests/controller/test_payloads.py), in about a third of the time.
    entries = []
    for r in requests:
        topic = _TOPIC_JSON.get(r.topic)
        if topic is None:
            topic = json.dumps(r.topic)
            if len(_TOPIC_JSON) < _TOPIC_JSON_MAX:
                _TOPIC_JSON[r.topic] = topic
        entry = f'{{"topic":{topic},"partition":{int(r.partition)},"replicas":{_int_list(r.replicas)}'
        if r.original_replicas is not None:
            entry += f',"original_replicas":{_int_list(r.original_replicas)}'
        if r.log_dirs is not None:
            entry += f',"log_dirs":{json.dumps(list(r.log_dirs), separators=(",", ":"))}'
        if r.skip_isr_check:
            entry += ',"skip_isr_check":true'
        if r.movement_strategies:
            entry += f',"movement_strategies":{json.dumps(list(r.movement_strategies), separators=(",", ":"))}'
        entries.append(entry + "}")
    return f'{{"version":1,"partitions":[{",".join(entries)}]}}'.encode()


# Topic names as JSON strings (json.dumps: quoted, escaped to ASCII), bounded as _INT_LISTS.
_TOPIC_JSON: dict[str, str] = {}
_TOPIC_JSON_MAX = 20_000


# ---- /admin/reassignments/T/P (KIP-240) ----------------------------------------------------


class _Record(models.ReassignmentRecord):
    """The KIP-240 record plus this controller's ``"cancelling": true`` while a KIP-236
    rollback of the move runs. The flag lives in the record because only the controller writes
    the record (tools rewrite ``/admin/reassign_partitions`` and would drop a flag there) and
    the record exists exactly as long as the move does; readers of the KIP-240 format ignore
    the extra key."""

    cancelling: StrictBool = False
    # A target queued behind this move (KIP-236 queue): kept here because when it equals the
    # target being rolled back, /admin/reassign_partitions cannot tell it from the rollback's
    # own entry, and a failover must not lose it.
    next_replicas: models.Replicas | None = None

    def _to_json(self) -> dict:
        out = super()._to_json()
        if self.cancelling:
            out["cancelling"] = True
        if self.next_replicas is not None:
            out["next_replicas"] = list(self.next_replicas)
        return out


def decode_record(path: str, data: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(target replicas, original replicas)."""
    m = models.ReassignmentRecord.from_bytes(path, data)
    return tuple(m.replicas), tuple(m.original_replicas)


def decode_record_full(
    path: str, data: bytes
) -> tuple[tuple[int, ...], tuple[int, ...], bool, tuple[int, ...] | None]:
    """(target replicas, original replicas, a KIP-236 rollback of the move is under way, the
    target queued behind the move or None)."""
    # Hot (every record at every failover, thousands with moves in flight): the plain shape,
    # as encode_record writes it, checked here as the model would check it; anything else
    # goes to the model, which accepts it or says what is wrong.
    plain = _plain_record(data)
    if plain is not None:
        return plain
    m = _Record.from_bytes(path, data)
    queued = tuple(m.next_replicas) if m.next_replicas is not None else None
    return tuple(m.replicas), tuple(m.original_replicas), m.cancelling, queued


# "door": the move's door the controller's journal adds to every record it writes
# (controller.shell.journal.RecordIds), which the model ignores: without it here every record
# of a failover went to the model (0.07 s of the window with 3,000 moves in flight).
_PLAIN_RECORD_KEYS = frozenset({"version", "replicas", "original_replicas", "cancelling", "next_replicas", "door"})


def _plain_record(data):
    """decode_record_full's answer if ``data`` is a plain record the model accepts; else None."""
    doc = _plain_doc(data, _STATE_JSON)
    if doc is None or not doc.keys() <= _PLAIN_RECORD_KEYS:
        return None
    version, cancelling, queued = doc.get("version"), doc.get("cancelling", False), doc.get("next_replicas")
    if type(version) is not int or version != 1 or type(cancelling) is not bool:
        return None
    target = _broker_ids(doc.get("replicas"), empty_ok=False)
    original = _broker_ids(doc.get("original_replicas"), empty_ok=False)
    if target is None or original is None:
        return None
    if queued is not None:
        queued = _broker_ids(queued, empty_ok=False)
        if queued is None:
            return None
    return target, original, cancelling, queued


def encode_record(target, original, cancelling: bool = False, next_target=None) -> bytes:
    # Hot (one per started move): the same bytes as _Record(...).to_bytes(), formatted directly.
    flag = ',"cancelling":true' if cancelling else ""
    if next_target is not None:
        flag += f',"next_replicas":{_int_list(next_target)}'
    return f'{{"version":1,"replicas":{_int_list(target)},"original_replicas":{_int_list(original)}{flag}}}'.encode()


# ---- /brokers/ids/N, /controller, /controller_epoch, notifications --------------------------


def decode_broker(path: str, data: bytes, broker_id: int, czxid: int, listener: str = LISTENER) -> Broker:
    """The broker reached at its endpoint of ``listener`` (the controller's broker listener,
    Kafka's ``inter.broker.listener.name``), whatever protocol it speaks (the controller's
    security settings say which it speaks there: controller.shell.security.inter_broker, as
    Kafka's controller takes it from its own configuration); without one it is alive but
    unreachable (host "", port -1), as Kafka's controller keeps a broker it cannot connect to
    among the live ones: taking it for dead would move its leaderships away."""
    m = models.BrokerRegistration.from_bytes(path, data)
    endpoints = m.parsed_endpoints()
    endpoint = next((e for e in endpoints if e.listener == listener), None)
    host, port = (endpoint.host, endpoint.port) if endpoint is not None else ("", NO_PORT)
    return Broker(broker_id, host, port, m.rack, czxid,
                  tuple((e.listener, e.host, e.port, e.security_protocol) for e in endpoints))


def decode_broker_endpoints(path: str, data: bytes, broker_id: int, czxid: int) -> dict[str, Broker]:
    """Every endpoint of a registration, by listener name, each as the broker at that address
    (what Metadata lists on that listener; the controller itself uses its broker listener's,
    :func:`decode_broker`). A registration without PLAINTEXT is a live broker all the same."""
    m = models.BrokerRegistration.from_bytes(path, data)
    return {e.listener: Broker(broker_id, e.host, e.port, m.rack, czxid) for e in m.parsed_endpoints()}


def encode_controller(controller_id: int, timestamp_ms: int) -> bytes:
    return models.ControllerZnode(version=1, brokerid=controller_id, timestamp=str(timestamp_ms)).to_bytes()


def decode_controller(path: str, data: bytes) -> int:
    return models.ControllerZnode.from_bytes(path, data).brokerid


def decode_epoch(path: str, data: bytes) -> int:
    return models.ControllerEpoch.from_bytes(path, data).epoch


def encode_epoch(epoch: int) -> bytes:
    return models.ControllerEpoch(epoch=epoch).to_bytes()


def decode_preferred_election(path: str, data: bytes) -> tuple[TopicPartition, ...]:
    """``/admin/preferred_replica_election``'s partitions, each once, in the order written."""
    m = models.PreferredReplicaElection.from_bytes(path, data)
    return tuple(dict.fromkeys((p.topic, p.partition) for p in m.partitions))


def decode_notification(path: str, data: bytes) -> list[tuple[TopicPartition, LeaderIsr | None]]:
    """The partitions a notification names, each with the state its leader wrote when the
    entry carries one (reassignd's brokers), else None (Kafka's format: read the znode)."""
    # Hot (a leader's notification names thousands of partitions on a busy cluster): the plain
    # shape is checked here as the model checks it; anything else goes to the model, which
    # accepts it or says what is wrong.
    plain = _plain_notification(data)
    if plain is not None:
        return plain
    m = models.IsrChangeNotification.from_bytes(path, data)
    out = []
    for p in m.partitions:
        s = p.state
        state = None if s is None else LeaderIsr(s.leader, s.leader_epoch, s.controller_epoch, tuple(s.isr), s.zk_version)
        out.append(((p.topic, p.partition), state))
    return out


_NOTIFIED_STATE_KEYS = frozenset({"leader", "leader_epoch", "controller_epoch", "isr", "zk_version"})


def _plain_notification(data) -> list[tuple[TopicPartition, LeaderIsr | None]] | None:
    """decode_notification's answer if ``data`` is a notification the model accepts as is
    (models.IsrChangeNotification: extra keys of the document and of an entry ignored, a
    state's keys exactly NotifiedState's); else None (not an error)."""
    doc = _plain_doc(data, _PLAIN_JSON)
    if doc is None:
        return None
    version, parts = doc.get("version"), doc.get("partitions")  # the model requires a version
    if type(version) is not int or version != 1 or type(parts) is not list:
        return None
    out: list[tuple[TopicPartition, LeaderIsr | None]] = []
    accepted = paths.accepted_topic_name
    for entry in parts:
        if type(entry) is not dict:
            return None
        topic, partition, s = entry.get("topic"), entry.get("partition"), entry.get("state")
        if not (type(partition) is int and 0 <= partition <= _INT32_MAX and accepted(topic)):
            return None
        if s is None:
            out.append(((topic, partition), None))
            continue
        if type(s) is not dict or s.keys() != _NOTIFIED_STATE_KEYS:
            return None
        state = _plain_leader_isr(s["leader"], s["leader_epoch"], s["controller_epoch"], s["isr"], s["zk_version"])
        if state is None:
            return None
        out.append(((topic, partition), state))
    return out


def decode_log_dir_event(path: str, data: bytes) -> int:
    """The broker a log directory event notification names (ZnodeFormatError if malformed)."""
    return models.LogDirEventNotification.from_bytes(path, data).broker


def encode_listener(host: str, port: int, endpoints: dict[str, tuple[str, int]] | None = None,
                    protocols: dict[str, str] | None = None) -> bytes:
    """``/reassignd/controllers/<id>``: where a controller's admin listener is; with several
    listeners, ``"endpoints":["NAME://host:port",...]`` too (Kafka's broker registration form),
    and ``protocols``, each listener's security protocol, as Kafka's
    ``listener_security_protocol_map``."""
    doc: dict = {"version": 1, "host": host, "port": port}
    if endpoints:
        doc["endpoints"] = [f"{name}://{h}:{p}" for name, (h, p) in endpoints.items()]
    if protocols:
        doc["listener_security_protocol_map"] = dict(protocols)
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_controller_node(path: str, data: bytes, controller_id: int) -> Broker:
    """A controller instance as a node of UpdateMetadata's live brokers (Kafka 3.x brokers find
    the controller there, by ``controller_id``, to send it AlterPartition and
    AllocateProducerIds): each endpoint with its protocol (the registration's map; a name
    that is a protocol speaks it; else PLAINTEXT). ZnodeFormatError when it does not decode."""
    host, port = decode_listener(path, data)
    named = listener_endpoints(data) or {LISTENER: (host, port)}
    try:
        mapped = json.loads(bytes(data).decode("utf-8")).get("listener_security_protocol_map") or {}
    except (UnicodeDecodeError, ValueError, AttributeError):
        mapped = {}
    if not isinstance(mapped, dict):
        mapped = {}
    endpoints = []
    for name, (h, p) in named.items():
        protocol = mapped.get(name, name if name in models.SECURITY_PROTOCOLS else "PLAINTEXT")
        if protocol not in models.SECURITY_PROTOCOLS:
            raise ZnodeFormatError(path, f"listener {name} has security protocol {protocol!r}")
        endpoints.append((name, h, p, protocol))
    return Broker(controller_id, host, port, None, -1, tuple(endpoints))


def listener_endpoints(data: bytes) -> dict[str, tuple[str, int]]:
    """The named endpoints of a ``/reassignd/controllers/<id>`` payload ({} when it has none;
    malformed entries are skipped)."""
    try:
        items = json.loads(bytes(data).decode("utf-8")).get("endpoints") or []
    except (UnicodeDecodeError, ValueError, AttributeError):
        return {}
    out = {}
    for item in items if isinstance(items, list) else []:
        name, sep, rest = str(item).partition("://")
        host, sep2, port = rest.rpartition(":")
        if sep and sep2 and port.isdigit():
            out[name] = (host.strip("[]"), int(port))
    return out


def decode_listener(path: str, data: bytes) -> tuple[str, int]:
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeFormatError(path, f"payload is not JSON: {e}") from None
    if not isinstance(obj, dict) or obj.get("version") != 1:
        raise ZnodeFormatError(path, "expected {\"version\":1,\"host\":...,\"port\":...}")
    host, port = obj.get("host"), obj.get("port")
    if not isinstance(host, str) or isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ZnodeFormatError(path, "host must be a string and port an int in 1..65535")
    return host, port
