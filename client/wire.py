"""Request bodies the AdminClient sends and the reading of their answers. Pure.

Bodies are the codec's dicts (snake_case keys of the spec files in ``protocol/specs``). A body
that depends on the negotiated version is a function ``version -> dict``, evaluated once the
version is known. Answers become :class:`client.results.KeyedResult` (one outcome per partition
or broker the caller asked about) or the typed views of :mod:`client.metadata`.

A key the caller asked about that the answer leaves out is an error for that key
(UNKNOWN_SERVER_ERROR with a message saying so), never a silent success.
"""

from __future__ import annotations

from collections.abc import Callable

from client.errors import KafkaApiError, ProtocolViolationError, error_for_code
from client.metadata import Reassignment, ReassignmentDescription
from client.results import KeyedResult
from protocol.errors import ErrorCode
from znodes.throttle_keys import RATE_KEYS
from znodes.values import TopicPartition



# ReassignPartitions: v0 is KIP-179's schema (refused with REASSIGNMENT_IN_PROGRESS while one
# runs); v1 asks for the additional semantics (a partition already moving gets its new target).
REASSIGN_V_PLAIN = (0, 0)
REASSIGN_V_ADDITIONAL = (1, 1)
# KIP-179: Long.MAX_VALUE means "not throttled".
UNTHROTTLED = 2**63 - 1
BROKER_RESOURCE = 4  # DescribeConfigs resource type
THROTTLE_RATE_KEYS = list(RATE_KEYS)

Body = dict | Callable[[int], dict]


def _by_topic(keys) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in keys:
        out.setdefault(topic, []).append(partition)
    return out


def _missing(key) -> KafkaApiError:
    return error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, "the controller's answer left this out")


# ---- Metadata, DescribeLogDirs, DescribeConfigs ---------------------------------------------


def metadata_request(topics: list[str] | None) -> Body:
    """``None``: every topic; ``[]``: none (nodes and controller only)."""

    def body(version: int) -> dict:
        out: dict = {"topics": None if topics is None else [{"name": t} for t in topics]}
        if version == 0 and topics is None:
            out["topics"] = []  # v0 has no null: an empty list means every topic
        if version >= 4:
            out["allow_auto_topic_creation"] = False
        return out

    return body


def describe_log_dirs_request(partitions: list[TopicPartition] | None) -> dict:
    if partitions is None:
        return {"topics": None}
    return {"topics": [{"topic": t, "partitions": ps} for t, ps in sorted(_by_topic(partitions).items())]}


def describe_configs_request(broker_ids: list[int], keys: list[str]) -> dict:
    return {
        "resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": str(b), "configuration_keys": list(keys)}
            for b in broker_ids
        ]
    }


# IncrementalAlterConfigs operations, and DescribeConfigs' source of a per-broker dynamic value.
CONFIG_SET = 0
CONFIG_DELETE = 1
DYNAMIC_BROKER_CONFIG = 2


def alter_broker_config_request(broker: int, key: str, value: str | None) -> dict:
    """IncrementalAlterConfigs of one broker key: SET to ``value``, or DELETE when None."""
    op = CONFIG_DELETE if value is None else CONFIG_SET
    return {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": str(broker),
                           "configs": [{"name": key, "config_operation": op, "value": value}]}],
            "validate_only": False}


def alter_configs_codes(answer: dict) -> list[int]:
    return [r.get("error_code", 0) for r in answer.get("responses") or []]


def alter_configs_error(answer: dict) -> KafkaApiError | None:
    for r in answer.get("responses") or []:
        if r.get("error_code", 0):
            return error_for_code(r["error_code"], r.get("error_message"))
    return None


def broker_config_values(answer: dict, key: str) -> dict[int, tuple[str | None, int | None]]:
    """DescribeConfigs (v1+) -> broker -> (value of ``key``, its config_source); brokers whose
    answer carries an error, or that do not list the key, are left out."""
    out: dict[int, tuple[str | None, int | None]] = {}
    for r in answer.get("results") or []:
        name = r.get("resource_name", "")
        if r.get("error_code", 0) or r.get("resource_type") != BROKER_RESOURCE or not name.isdigit():
            continue
        for c in r.get("configs") or []:
            if c.get("name") == key:
                out[int(name)] = (c.get("value"), c.get("config_source"))
    return out


def describe_configs_codes(answer: dict) -> list[int]:
    return [r.get("error_code", 0) for r in answer.get("results") or []]


def broker_throttles(answer: dict) -> dict[int, tuple[int | None, int | None]]:
    out: dict[int, tuple[int | None, int | None]] = {}
    for r in answer.get("results") or []:
        if r.get("error_code", 0) or r.get("resource_type") != BROKER_RESOURCE:
            continue
        name = r.get("resource_name", "")
        if not name.isdigit():
            continue
        values: dict[str, int | None] = {}
        for c in r.get("configs") or []:
            v = c.get("value")
            values[c.get("name")] = int(v) if isinstance(v, str) and v.isdigit() else None
        out[int(name)] = (values.get(THROTTLE_RATE_KEYS[0]), values.get(THROTTLE_RATE_KEYS[1]))
    return out


# ---- KIP-179 ----------------------------------------------------------------------------------


def reassign_partitions_request(
    assignments: dict[TopicPartition, list[int]],
    throttle: int | None,
    auto_remove: bool,
    validate_only: bool,
    timeout_ms: int,
    skip_isr_check: bool = False,
) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), replicas in assignments.items():
        by_topic.setdefault(topic, []).append({"partition_id": partition, "broker": list(replicas)})
    return {
        "topic_reassignments": [
            {"topic": t, "partition_reassignments": ps} for t, ps in sorted(by_topic.items())
        ],
        "timeout": timeout_ms,
        "validate_only": validate_only,
        "throttle": UNTHROTTLED if throttle is None else throttle,
        "remove_throttle": auto_remove,
        "skip_isr_check": skip_isr_check,  # tagged, v1 only
    }


def partition_codes(answer: dict) -> list[int]:
    """Every error code in a per-partition answer (any of the KIP shapes)."""
    codes = [answer.get("error_code", 0)]
    for t in answer.get("reassign_partition_result") or answer.get("topic_errors") or []:
        for p in t.get("partition_error") or t.get("partition_errors") or []:
            codes.append(p.get("error_code", 0))
    return codes


def partition_results(answer: dict, asked: list[TopicPartition]) -> KeyedResult:
    outcomes: dict[TopicPartition, KafkaApiError | None] = {}
    for t in answer.get("reassign_partition_result") or answer.get("topic_errors") or []:
        topic = t.get("topic")
        for p in t.get("partition_error") or t.get("partition_errors") or []:
            key = (topic, p.get("partition_id"))
            code = p.get("error_code", 0)
            outcomes[key] = (
                None if code == 0
                else error_for_code(code, p.get("error_message"), topic=key[0], partition=key[1])
            )
    return KeyedResult({k: outcomes[k] if k in outcomes else _missing(k) for k in asked})


def throttled_rates_request(
    rates: dict[int, tuple[int, int]], auto_remove: bool, validate_only: bool, timeout_ms: int
) -> dict:
    return {
        "broker_throttles": [
            {"broker_id": b, "leader_rate": lr, "follower_rate": fr} for b, (lr, fr) in sorted(rates.items())
        ],
        "remove_throttle": auto_remove,
        "timeout": timeout_ms,
        "validate_only": validate_only,
    }


def broker_codes(answer: dict) -> list[int]:
    return [b.get("error_code", 0) for b in answer.get("broker_error") or []]


def broker_results(answer: dict, asked: list[int]) -> KeyedResult:
    outcomes: dict[int, KafkaApiError | None] = {}
    for b in answer.get("broker_error") or []:
        code = b.get("error_code", 0)
        outcomes[b.get("broker_id")] = (
            None if code == 0 else error_for_code(code, b.get("error_message"), broker_id=b.get("broker_id"))
        )
    return KeyedResult({k: outcomes[k] if k in outcomes else _missing(k) for k in asked})


def throttled_replicas_request(
    replicas: dict[TopicPartition, list[int]], auto_remove: bool, validate_only: bool, timeout_ms: int
) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), brokers in replicas.items():
        by_topic.setdefault(topic, []).append({"partition_id": partition, "broker_id": list(brokers)})
    return {
        "topic_throttles": [{"topic": t, "partition_throttles": ps} for t, ps in sorted(by_topic.items())],
        "remove_throttle": auto_remove,
        "timeout": timeout_ms,
        "validate_only": validate_only,
    }


# ---- KIP-236 ----------------------------------------------------------------------------------


def cancel_request(partitions: list[TopicPartition] | None, validate_only: bool, timeout_ms: int) -> dict:
    return {
        "partitions": None if partitions is None else [
            {"topic": t, "partition_ids": ps} for t, ps in sorted(_by_topic(partitions).items())
        ],
        "validate_only": validate_only,
        "timeout_ms": timeout_ms,
    }


def top_codes(answer: dict) -> list[int]:
    return [answer.get("error_code", 0)]


def cancel_codes(answer: dict) -> list[int]:
    codes = [answer.get("error_code", 0)]
    for t in answer.get("results") or []:
        for p in t.get("partitions") or []:
            codes.append(p.get("error_code", 0))
    return codes


def raise_top_level(answer: dict) -> None:
    code = answer.get("error_code", 0)
    if code:
        raise error_for_code(code, answer.get("error_message"))


def cancel_results(answer: dict, asked: list[TopicPartition] | None) -> KeyedResult:
    """Per partition: None (cancelled) or why not. With ``asked=None`` (cancel all) the keys
    are whatever the controller reports."""
    raise_top_level(answer)
    outcomes: dict[TopicPartition, KafkaApiError | None] = {}
    for t in answer.get("results") or []:
        topic = t.get("topic")
        for p in t.get("partitions") or []:
            key = (topic, p.get("partition_id"))
            code = p.get("error_code", 0)
            outcomes[key] = (
                None if code == 0
                else error_for_code(code, p.get("error_message"), topic=key[0], partition=key[1])
            )
    if asked is None:
        return KeyedResult(outcomes)
    return KeyedResult({k: outcomes[k] if k in outcomes else _missing(k) for k in asked})


# ---- KIP-240 ----------------------------------------------------------------------------------


def list_request(partitions: list[TopicPartition] | None, timeout_ms: int) -> dict:
    return {
        "timeout_ms": timeout_ms,
        "topic_partition": None if partitions is None else [
            {"topic": t, "partition_id": ps} for t, ps in sorted(_by_topic(partitions).items())
        ],
    }


def list_results(answer: dict) -> dict[TopicPartition, Reassignment]:
    raise_top_level(answer)
    out: dict[TopicPartition, Reassignment] = {}
    for t in answer.get("reassignment") or []:
        for r in t.get("topic_reassignments") or []:
            item = Reassignment(t.get("topic"), r.get("partition_id"), r.get("reassignment_id"))
            out[item.topic_partition] = item
    return dict(sorted(out.items()))


def list_waiting(answer: dict) -> dict[TopicPartition, str]:
    """ListReassignments v1's tagged Waiting: partition -> why its move has not started."""
    raise_top_level(answer)
    return {(w.get("topic"), w.get("partition_id")): w.get("reason") or "" for w in answer.get("waiting") or []}


def describe_request(reassignments: list[Reassignment], timeout_ms: int) -> dict:
    return {
        "topic_reassignment": [
            {"topic": r.topic, "reassignment": {"partition_id": r.partition, "reassignment_id": r.reassignment_id}}
            for r in reassignments
        ],
        "timeout_ms": timeout_ms,
    }


# DescribeReassignmentsResponse v1's tagged Topic / PartitionId when the sender left them out
# (the spec's defaults; no topic is named "" and no partition is numbered -1).
NO_TOPIC_TAG = ""
NO_PARTITION_TAG = -1


class DescribeMatch:
    """Descriptions matched to the reassignments asked about. ``described``: (topic,
    partition) -> description, or None when the controller left it out (no longer running).
    ``ambiguous``: the asked reassignments a v0 answer cannot pin down (see
    :func:`describe_results`); they are in neither ``described`` nor any guess."""

    def __init__(self, described: dict[TopicPartition, ReassignmentDescription | None], ambiguous: list[Reassignment]):
        self.described = described
        self.ambiguous = ambiguous


def describe_results(answer: dict, asked: list[Reassignment]) -> DescribeMatch:
    """Match a DescribeReassignments answer to ``asked`` (distinct partitions, request order).

    Moves started in one step share a reassignment id (one multi-op, one czxid), so the id
    does not say which partition a description is for. Steps:

     1. A description that names its partition (v1's tags) goes to that partition, which must
        have been asked about with that id; anything else is a protocol violation.
     2. The rest (v0, or a v1 sender that does not fill the tags) come in request order with
        the entries no longer running left out (KIP-240), so they are matched by order among
        the entries step 1 left: the earliest and the latest way of placing each description
        on an entry with its id, in order. A description is pinned when both agree.
     3. An entry that no placement can reach is None (left out: no longer running). An entry
        that some placement reaches but none pins is ambiguous: said so, never guessed.
    """
    raise_top_level(answer)
    by_tp = {r.topic_partition: r for r in asked}
    described: dict[TopicPartition, ReassignmentDescription | None] = {r.topic_partition: None for r in asked}
    # Step 1.
    untagged: list[dict] = []
    for d in answer.get("description") or []:
        topic, partition = d.get("topic", NO_TOPIC_TAG), d.get("partition_id", NO_PARTITION_TAG)
        if topic == NO_TOPIC_TAG and partition == NO_PARTITION_TAG:
            untagged.append(d)
            continue
        r = by_tp.get((topic, partition))
        if topic == NO_TOPIC_TAG or partition == NO_PARTITION_TAG or r is None:
            raise ProtocolViolationError(f"DescribeReassignments: a description of {topic!r} partition {partition}, "
                                         "which was not asked about")
        if r.reassignment_id != d.get("reassignment_id") or described[r.topic_partition] is not None:
            raise ProtocolViolationError(f"DescribeReassignments: {topic}-{partition} described with id "
                                         f"{d.get('reassignment_id')} (asked: {r.reassignment_id}) or twice")
        described[r.topic_partition] = _description(r, d)
    # Step 2.
    rest = [r for r in asked if described[r.topic_partition] is None]
    ids = [d.get("reassignment_id") for d in untagged]
    earliest = _placements(ids, [r.reassignment_id for r in rest])
    latest = _placements(ids[::-1], [r.reassignment_id for r in rest[::-1]])
    if earliest is None or latest is None:
        raise ProtocolViolationError(f"DescribeReassignments: descriptions with ids {ids} are not among the "
                                     "reassignments asked about, in request order")
    latest = [len(rest) - 1 - j for j in latest[::-1]]
    # Step 3.
    reachable: set[int] = set()
    pinned: set[int] = set()
    for d, lo, hi in zip(untagged, earliest, latest):
        if lo == hi:
            pinned.add(lo)
            described[rest[lo].topic_partition] = _description(rest[lo], d)
        reachable.update(j for j in range(lo, hi + 1) if rest[j].reassignment_id == d.get("reassignment_id"))
    ambiguous = [rest[j] for j in sorted(reachable - pinned)]
    for r in ambiguous:
        del described[r.topic_partition]
    return DescribeMatch(described, ambiguous)


def _placements(ids: list, asked_ids: list) -> list[int] | None:
    """The earliest position in ``asked_ids`` of each of ``ids``, in order; None if they do
    not fit in order."""
    out: list[int] = []
    j = 0
    for rid in ids:
        while j < len(asked_ids) and asked_ids[j] != rid:
            j += 1
        if j == len(asked_ids):
            return None
        out.append(j)
        j += 1
    return out


def _description(r: Reassignment, d: dict) -> ReassignmentDescription:
    new = d.get("new_assigned") or []
    return ReassignmentDescription(
        reassignment=r,
        start_time=d.get("start_time", 0),
        current_leader=d.get("leader_id", -1),
        leader_throttle=d.get("leader_throttle", UNTHROTTLED),
        new_assigned_brokers=[n.get("broker_id") for n in new],
        new_assigned_throttles={n.get("broker_id"): n.get("follower_throttle", UNTHROTTLED) for n in new},
    )


# ---- standard Kafka ListPartitionReassignments (46), for replica detail ---------------------


def list_partition_reassignments_request(timeout_ms: int) -> dict:
    return {"timeout_ms": timeout_ms, "topics": None}


def list_partition_reassignments_results(answer: dict) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    raise_top_level(answer)
    out = {}
    for t in answer.get("topics") or []:
        for p in t.get("partitions") or []:
            out[(t.get("name"), p.get("partition_index"))] = (
                list(p.get("replicas") or []),
                list(p.get("adding_replicas") or []),
                list(p.get("removing_replicas") or []),
            )
    return out


# ---- ElectLeaders (43, KIP-460) ------------------------------------------------------------------

PREFERRED_ELECTION = 0
ELECTION_NOT_NEEDED = 84  # the preferred replica already leads: nothing to do


def elect_leaders_request(partitions: list[TopicPartition], timeout_ms: int, election_type: int = PREFERRED_ELECTION) -> dict:
    """v1+ (v0 has no election type)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return {"election_type": election_type, "timeout_ms": timeout_ms,
            "topic_partitions": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]}


def elect_leaders_codes(answer: dict) -> list[int]:
    codes = [answer.get("error_code", 0)]
    for t in answer.get("replica_election_results") or []:
        codes.extend(r["error_code"] for r in t.get("partition_result") or [])
    return codes


def elect_leaders_results(answer: dict) -> dict[TopicPartition, int]:
    """Per partition its error code (0: elected; ELECTION_NOT_NEEDED: already led by it)."""
    raise_top_level(answer)
    return {(t["topic"], r["partition_id"]): r["error_code"]
            for t in answer.get("replica_election_results") or [] for r in t.get("partition_result") or []}


# ---- client quotas (KIP-546) ------------------------------------------------------------------

QuotaEntity = tuple[tuple[str, str | None], ...]  # ((entity type, name or None: the default), ...)


def describe_client_quotas_request(components, strict: bool) -> dict:
    """``components``: (entity type, match type, name) triples (protocol.client_quotas' match types)."""
    return {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
            "strict": bool(strict)}


def client_quotas_found(answer: dict) -> dict[QuotaEntity, dict[str, float]]:
    """Every entity described with its quotas; the request's error raised."""
    if answer["error_code"]:
        raise error_for_code(answer["error_code"], answer["error_message"])
    return {tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"]):
            {v["key"]: v["value"] for v in entry["values"]} for entry in answer["entries"] or ()}


def alter_client_quotas_request(alterations: dict[QuotaEntity, dict[str, float | None]], validate_only: bool) -> dict:
    """One entry per entity: each key set to its value, or removed when the value is None."""
    return {"entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None} for k, v in ops.items()]}
        for entity, ops in alterations.items()], "validate_only": bool(validate_only)}


def alter_client_quotas_results(answer: dict, asked: list[QuotaEntity]) -> KeyedResult:
    """Each asked entity's outcome, matched by its entity types and names in any order (Kafka
    answers an entity's types in its own order); one the answer leaves out is an error."""
    by_entity = {frozenset((e["entity_type"], e["entity_name"]) for e in entry["entity"]): entry
                 for entry in answer["entries"]}
    out: dict = {}
    for entity in asked:
        entry = by_entity.get(frozenset(entity))
        if entry is None:
            out[entity] = KafkaApiError(f"the answer left out the entity {entity}")
        elif entry["error_code"]:
            out[entity] = error_for_code(entry["error_code"], entry["error_message"])
        else:
            out[entity] = None
    return KeyedResult(out)
