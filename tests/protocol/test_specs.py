"""The message specs in protocol/specs are well formed and say what Kafka's say.

Structure (every file): strict JSON, the required keys, apiKey/type/name/file name agree, valid
version ranges, flexibleVersions an open range starting inside validVersions, every request
paired with a response over the same versions, field names PascalCase and unique per struct
(also once snake_cased), known types, field versions inside validVersions and inside their
parent's, nullable only where the type can be null, defaults that parse for their type, tags
unique per struct and only in flexible versions, struct types defined exactly once.

Facts (the APIs this project must speak exactly): the wire layout of each version, written out
from Kafka's protocol guide, compared with the layout the spec gives.
"""

from __future__ import annotations

import json
import re

import pytest

from protocol.naming import snake_case
from protocol.versions import VersionRange
from tests.protocol.strategies import (
    INT_RANGES,
    NULLABLE_TYPES,
    PRIMITIVES,
    SPEC_DIR,
    element_type,
    fields_in,
    in_range,
    is_flexible,
    is_nullable,
    is_tagged,
    load_specs,
    struct_fields,
)

SPEC_FILES = sorted(SPEC_DIR.glob("*.json"))
REQUIRED_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields"}
TOP_LEVEL_KEYS = REQUIRED_KEYS | {
    "about", "commonStructs", "listeners", "deprecatedVersions", "latestVersionUnstable",
}
HEADER_REQUIRED_KEYS = REQUIRED_KEYS - {"apiKey"}
FIELD_KEYS = {
    "name", "type", "versions", "nullableVersions", "default", "ignorable", "mapKey",
    "entityType", "taggedVersions", "tag", "about", "fields", "flexibleVersions", "zeroCopy",
}
ENTITY_TYPES = {"topicName", "brokerId", "groupId", "transactionalId", "producerId"}
PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")

# The APIs docs/DESIGN.md §5 has the controller and the simulated brokers speak, with the versions
# the project needs at least (key: (name, lowest max version)).
REQUIRED_APIS = {
    3: ("Metadata", 1),
    4: ("LeaderAndIsr", 4),
    5: ("StopReplica", 3),
    6: ("UpdateMetadata", 6),
    17: ("SaslHandshake", 1),
    18: ("ApiVersions", 3),
    19: ("CreateTopics", 7),
    20: ("DeleteTopics", 6),
    32: ("DescribeConfigs", 4),
    35: ("DescribeLogDirs", 4),
    36: ("SaslAuthenticate", 2),
    45: ("AlterPartitionReassignments", 0),
    46: ("ListPartitionReassignments", 0),
    10000: ("ReassignPartitions", 0),
    10001: ("AlterInterbrokerThrottledRates", 0),
    10002: ("AlterInterbrokerThrottledReplicas", 0),
    10003: ("ListReassignments", 0),
    10004: ("DescribeReassignments", 0),
    10005: ("CancelReassignments", 0),
}


def _ids(paths):
    return [p.name for p in paths]


def _walk(spec, fields, path=()):
    """Yield (path, field, sibling list) for every field, depth first."""
    for field in fields:
        yield path, field, fields
        sub = field.get("fields")
        if sub is not None:
            yield from _walk(spec, sub, path + (field["name"],))
    if not path:
        for common in spec.get("commonStructs", []):
            yield from _walk(spec, common["fields"], (common["name"],))


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize("path", SPEC_FILES, ids=_ids(SPEC_FILES))
def test_file_is_strict_json_with_required_keys(path):
    text = path.read_text(encoding="utf-8")
    spec = json.loads(text)  # strict: no comments, no trailing commas
    assert isinstance(spec, dict)
    assert spec.get("type") in ("request", "response", "header")
    assert spec["name"].endswith(spec["type"].capitalize())
    assert spec.keys() <= TOP_LEVEL_KEYS, spec.keys() - TOP_LEVEL_KEYS
    if spec["type"] == "header":
        assert HEADER_REQUIRED_KEYS <= spec.keys(), HEADER_REQUIRED_KEYS - spec.keys()
        assert "apiKey" not in spec
    else:
        assert REQUIRED_KEYS <= spec.keys(), REQUIRED_KEYS - spec.keys()
        assert isinstance(spec["apiKey"], int) and 0 <= spec["apiKey"] <= INT_RANGES["int16"][1]
    assert path.name == spec["name"] + ".json"
    assert isinstance(spec["fields"], list)


@pytest.mark.parametrize("path", SPEC_FILES, ids=_ids(SPEC_FILES))
def test_version_ranges(path):
    spec = json.loads(path.read_text(encoding="utf-8"))
    valid = VersionRange.parse(spec["validVersions"])
    assert not valid.empty
    assert not spec["validVersions"].endswith("+"), "validVersions must be closed"
    flexible = VersionRange.parse(spec["flexibleVersions"])
    if not flexible.empty:
        assert spec["flexibleVersions"].endswith("+"), "once flexible, always flexible"
        assert flexible.lo in valid, "flexibleVersions must start inside validVersions"


def test_every_request_has_its_response():
    specs = load_specs()
    keys = {k for k, _ in specs}
    for key in keys:
        assert (key, "request") in specs and (key, "response") in specs, key
        req, resp = specs[(key, "request")], specs[(key, "response")]
        assert req["validVersions"] == resp["validVersions"], req["name"]
        assert req["name"][: -len("Request")] == resp["name"][: -len("Response")]
        # Header versions follow the body: both sides turn flexible together, except
        # ApiVersions whose response header stays v0 (KIP-511) -- the body still matches.
        assert req["flexibleVersions"] == resp["flexibleVersions"], req["name"]


def test_one_spec_per_key_and_type():
    seen = {}
    for path in SPEC_FILES:
        spec = json.loads(path.read_text(encoding="utf-8"))
        k = (spec.get("apiKey"), spec["type"]) if spec["type"] != "header" else spec["name"]
        assert k not in seen, f"{path.name} and {seen.get(k)} share {k}"
        seen[k] = path.name


@pytest.mark.parametrize("key", sorted(REQUIRED_APIS))
def test_design_apis_are_specified(key):
    name, max_needed = REQUIRED_APIS[key]
    specs = load_specs()
    for kind in ("request", "response"):
        if (key, kind) not in specs:
            pytest.fail(f"no {name}{kind.capitalize()} spec for key {key}")
        spec = specs[(key, kind)]
        assert spec["name"] == name + kind.capitalize()
        assert VersionRange.parse(spec["validVersions"]).hi >= max_needed


@pytest.mark.parametrize("path", SPEC_FILES, ids=_ids(SPEC_FILES))
def test_fields(path):
    spec = json.loads(path.read_text(encoding="utf-8"))
    valid = VersionRange.parse(spec["validVersions"])
    flexible = VersionRange.parse(spec["flexibleVersions"])
    struct_names = [c["name"] for c in spec.get("commonStructs", [])]

    def check(fields, parent_versions, where):
        names, snakes, tags = set(), set(), set()
        for f in fields:
            at = f"{where}.{f.get('name')}"
            assert {"name", "type", "versions"} <= f.keys(), at
            assert f.keys() <= FIELD_KEYS, (at, f.keys() - FIELD_KEYS)
            assert PASCAL.match(f["name"]), f"{at}: name not PascalCase"
            assert f["name"] not in names, f"{at}: duplicate name"
            assert snake_case(f["name"]) not in snakes, f"{at}: duplicate snake_case name"
            names.add(f["name"])
            snakes.add(snake_case(f["name"]))

            versions = VersionRange.parse(f["versions"])
            assert not versions.empty, at
            assert versions.lo <= valid.hi, f"{at}: versions start after validVersions"
            assert not versions.intersect(valid).empty, f"{at}: no valid version has it"
            if not f["versions"].endswith("+"):
                assert versions.hi <= valid.hi, f"{at}: closed range past validVersions"
            assert not versions.intersect(parent_versions).empty, f"{at}: outside its parent"

            is_array, elem = element_type(f)
            assert re.match(r"^[A-Za-z][A-Za-z0-9]*$", elem), f"{at}: bad type {f['type']}"
            is_struct = elem not in PRIMITIVES
            if is_struct:
                assert elem[0].isupper(), f"{at}: struct type must be PascalCase"
                if "fields" in f:
                    struct_names.append(elem)
                else:
                    assert any(c["name"] == elem for c in spec.get("commonStructs", [])), (
                        f"{at}: {elem} is neither inline nor a commonStruct"
                    )
            else:
                assert "fields" not in f, f"{at}: primitive with fields"
            if elem == "records":
                assert not is_array, at

            if "nullableVersions" in f:
                nv = VersionRange.parse(f["nullableVersions"])
                assert not nv.empty, at
                assert is_array or is_struct or elem in NULLABLE_TYPES, (
                    f"{at}: {f['type']} cannot be null"
                )
            for flag in ("ignorable", "mapKey", "zeroCopy"):
                if flag in f:
                    assert isinstance(f[flag], bool), f"{at}: {flag} must be a bool"
            if f.get("mapKey"):
                assert where != "<top>", f"{at}: mapKey outside a struct array"
                assert not is_array and not is_struct, f"{at}: mapKey on a non-scalar"
            if "entityType" in f:
                assert f["entityType"] in ENTITY_TYPES, at
            if "about" in f:
                assert isinstance(f["about"], str) and f["about"], at
            if "default" in f:
                _check_default(f, at)

            if "tag" in f or "taggedVersions" in f:
                assert "tag" in f and "taggedVersions" in f, f"{at}: tag needs taggedVersions"
                assert isinstance(f["tag"], int) and f["tag"] >= 0, at
                assert f["tag"] not in tags, f"{at}: duplicate tag {f['tag']}"
                tags.add(f["tag"])
                tv = VersionRange.parse(f["taggedVersions"])
                assert f["taggedVersions"].endswith("+"), f"{at}: taggedVersions must be open"
                assert flexible.covers(tv), f"{at}: tagged outside flexibleVersions"
                assert versions.covers(tv), f"{at}: taggedVersions outside versions"
                assert not f.get("mapKey"), f"{at}: a map key cannot be tagged"

            sub = f.get("fields")
            if sub is not None:
                check(sub, versions, at)

    check(spec["fields"], valid, "<top>")
    for common in spec.get("commonStructs", []):
        assert PASCAL.match(common["name"])
        check(common["fields"], VersionRange.parse(common.get("versions", "0+")), common["name"])
    dupes = {n for n in struct_names if struct_names.count(n) > 1}
    assert not dupes, f"struct types defined twice: {dupes}"


def _check_default(f, at):
    raw = f["default"]
    is_array, elem = element_type(f)
    nullable = "nullableVersions" in f
    if raw == "null":
        assert nullable, f"{at}: default null on a non-nullable field"
        return
    assert not is_array, f"{at}: an array's only default is null"
    if elem in INT_RANGES:
        value = int(raw, 0) if isinstance(raw, str) else raw
        lo, hi = INT_RANGES[elem]
        assert isinstance(value, int) and lo <= value <= hi, f"{at}: default {raw!r}"
    elif elem == "bool":
        assert raw in ("true", "false", True, False), f"{at}: default {raw!r}"
    elif elem == "float64":
        float(raw)
    elif elem == "string":
        assert isinstance(raw, str), at
    else:
        pytest.fail(f"{at}: default not allowed on {f['type']}")


# --------------------------------------------------------------------------- Kafka facts


def layout(spec: dict, version: int, fields: list[dict] | None = None) -> str:
    """A version's wire layout: `name:type` in order, `?` when nullable, `[...]` for arrays,
    `@N` before tagged fields (which Kafka writes after the untagged ones)."""
    parts, tagged = [], []
    for f in fields_in(spec["fields"] if fields is None else fields, version):
        is_array, elem = element_type(f)
        sub = struct_fields(spec, f)
        if sub is not None:
            inner = layout(spec, version, sub)
            t = f"[{inner}]" if is_array else "{" + inner + "}"
        else:
            t = f"[{elem}]" if is_array else elem
        text = f"{snake_case(f['name'])}:{t}{'?' if is_nullable(f, version) else ''}"
        if is_tagged(f, version):
            tagged.append(f"@{f['tag']} {text}")
        else:
            parts.append(text)
    return " ".join(parts + tagged)


_LAIR_PS = (
    "partition_index:int32 controller_epoch:int32 leader:int32 leader_epoch:int32 isr:[int32] "
    "zk_version:int32 replicas:[int32]"
)
_UM_PS = (
    "partition_index:int32 controller_epoch:int32 leader:int32 leader_epoch:int32 isr:[int32] "
    "zk_version:int32 replicas:[int32]"
)
_LIVE_LEADERS = "live_leaders:[broker_id:int32 host_name:string port:int32]"
_UM_EP1 = "endpoints:[port:int32 host:string security_protocol:int16]"
_UM_EP3 = "endpoints:[port:int32 host:string listener:string security_protocol:int16]"

# (key, kind, version): (flexible, layout), written out from Kafka's protocol guide.
KAFKA_LAYOUTS = {
    # LeaderAndIsr: flat partition states in v0-1, grouped by topic from v2.
    (4, "request", 0): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_LAIR_PS}] {_LIVE_LEADERS}"),
    (4, "request", 1): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_LAIR_PS} is_new:bool] {_LIVE_LEADERS}"),
    (4, "request", 2): (False, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[{_LAIR_PS} is_new:bool]] {_LIVE_LEADERS}"),
    (4, "request", 3): (False, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[{_LAIR_PS} adding_replicas:[int32] removing_replicas:[int32] is_new:bool]] {_LIVE_LEADERS}"),
    (4, "request", 4): (True, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[{_LAIR_PS} adding_replicas:[int32] removing_replicas:[int32] is_new:bool]] {_LIVE_LEADERS}"),
    **{(4, "response", v): (v >= 4, "error_code:int16 partition_errors:[topic_name:string partition_index:int32 error_code:int16]") for v in range(5)},
    # Kafka 3.9, the last release with the ZooKeeper-mode APIs: v5 topic ids and Type (KIP-516),
    # v6 LeaderRecoveryState (KIP-704), v7 IsKRaftController (KIP-866); responses by topic id.
    (4, "request", 5): (True, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 type:int8 topic_states:[topic_name:string topic_id:uuid partition_states:[{_LAIR_PS} adding_replicas:[int32] removing_replicas:[int32] is_new:bool]] {_LIVE_LEADERS}"),
    (4, "request", 6): (True, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 type:int8 topic_states:[topic_name:string topic_id:uuid partition_states:[{_LAIR_PS} adding_replicas:[int32] removing_replicas:[int32] is_new:bool leader_recovery_state:int8]] {_LIVE_LEADERS}"),
    (4, "request", 7): (True, f"controller_id:int32 is_k_raft_controller:bool controller_epoch:int32 broker_epoch:int64 type:int8 topic_states:[topic_name:string topic_id:uuid partition_states:[{_LAIR_PS} adding_replicas:[int32] removing_replicas:[int32] is_new:bool leader_recovery_state:int8]] {_LIVE_LEADERS}"),
    **{(4, "response", v): (True, "error_code:int16 topics:[topic_id:uuid partition_errors:[partition_index:int32 error_code:int16]]") for v in (5, 6, 7)},
    # StopReplica: v0 flat, v1-2 topics with indexes, v3 per-partition epoch and delete flag.
    (5, "request", 0): (False, "controller_id:int32 controller_epoch:int32 delete_partitions:bool ungrouped_partitions:[topic_name:string partition_index:int32]"),
    (5, "request", 1): (False, "controller_id:int32 controller_epoch:int32 broker_epoch:int64 delete_partitions:bool topics:[name:string partition_indexes:[int32]]"),
    (5, "request", 2): (True, "controller_id:int32 controller_epoch:int32 broker_epoch:int64 delete_partitions:bool topics:[name:string partition_indexes:[int32]]"),
    (5, "request", 3): (True, "controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[partition_index:int32 leader_epoch:int32 delete_partition:bool]]"),
    (5, "request", 4): (True, "controller_id:int32 is_k_raft_controller:bool controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[partition_index:int32 leader_epoch:int32 delete_partition:bool]]"),
    **{(5, "response", v): (v >= 2, "error_code:int16 partition_errors:[topic_name:string partition_index:int32 error_code:int16]") for v in range(5)},
    # UpdateMetadata: flat partition states in v0-4, grouped by topic from v5.
    (6, "request", 0): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_UM_PS}] live_brokers:[id:int32 v0_host:string v0_port:int32]"),
    (6, "request", 1): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_UM_PS}] live_brokers:[id:int32 {_UM_EP1}]"),
    (6, "request", 2): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_UM_PS}] live_brokers:[id:int32 {_UM_EP1} rack:string?]"),
    (6, "request", 3): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_UM_PS}] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    (6, "request", 4): (False, f"controller_id:int32 controller_epoch:int32 ungrouped_partition_states:[topic_name:string {_UM_PS} offline_replicas:[int32]] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    (6, "request", 5): (False, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[{_UM_PS} offline_replicas:[int32]]] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    (6, "request", 6): (True, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string partition_states:[{_UM_PS} offline_replicas:[int32]]] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    (6, "request", 7): (True, f"controller_id:int32 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string topic_id:uuid partition_states:[{_UM_PS} offline_replicas:[int32]]] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    (6, "request", 8): (True, f"controller_id:int32 is_k_raft_controller:bool type:int8 controller_epoch:int32 broker_epoch:int64 topic_states:[topic_name:string topic_id:uuid partition_states:[{_UM_PS} offline_replicas:[int32]]] live_brokers:[id:int32 {_UM_EP3} rack:string?]"),
    **{(6, "response", v): (v >= 6, "error_code:int16") for v in range(9)},
    # KIP-455 reassignment APIs, as standard admin clients send them.
    (45, "request", 0): (True, "timeout_ms:int32 topics:[name:string partitions:[partition_index:int32 replicas:[int32]?]]"),
    (45, "response", 0): (True, "throttle_time_ms:int32 error_code:int16 error_message:string? responses:[name:string partitions:[partition_index:int32 error_code:int16 error_message:string?]]"),
    # Kafka 4.1+ (KIP-860).
    (45, "request", 1): (True, "timeout_ms:int32 allow_replication_factor_change:bool topics:[name:string partitions:[partition_index:int32 replicas:[int32]?]]"),
    (45, "response", 1): (True, "throttle_time_ms:int32 allow_replication_factor_change:bool error_code:int16 error_message:string? responses:[name:string partitions:[partition_index:int32 error_code:int16 error_message:string?]]"),
    (46, "request", 0): (True, "timeout_ms:int32 topics:[name:string partition_indexes:[int32]]?"),
    (46, "response", 0): (True, "throttle_time_ms:int32 error_code:int16 error_message:string? topics:[name:string partitions:[partition_index:int32 replicas:[int32] adding_replicas:[int32] removing_replicas:[int32]]]"),
    # AlterReplicaLogDirs (KIP-113), how kafka-reassign moves a replica between a broker's log dirs.
    (34, "request", 0): (False, "dirs:[path:string topics:[name:string partitions:[int32]]]"),
    (34, "request", 2): (True, "dirs:[path:string topics:[name:string partitions:[int32]]]"),
    (34, "response", 1): (False, "throttle_time_ms:int32 results:[topic_name:string partitions:[partition_index:int32 error_code:int16]]"),
    (34, "response", 2): (True, "throttle_time_ms:int32 results:[topic_name:string partitions:[partition_index:int32 error_code:int16]]"),
    # DescribeLogDirs (KIP-113), how --progress reads replica lag.
    (35, "request", 0): (False, "topics:[topic:string partitions:[int32]]?"),
    (35, "request", 4): (True, "topics:[topic:string partitions:[int32]]?"),
    (35, "response", 0): (False, "throttle_time_ms:int32 results:[error_code:int16 log_dir:string topics:[name:string partitions:[partition_index:int32 partition_size:int64 offset_lag:int64 is_future_key:bool]]]"),
    (35, "response", 2): (True, "throttle_time_ms:int32 results:[error_code:int16 log_dir:string topics:[name:string partitions:[partition_index:int32 partition_size:int64 offset_lag:int64 is_future_key:bool]]]"),
    (35, "response", 3): (True, "throttle_time_ms:int32 error_code:int16 results:[error_code:int16 log_dir:string topics:[name:string partitions:[partition_index:int32 partition_size:int64 offset_lag:int64 is_future_key:bool]]]"),
    (35, "response", 4): (True, "throttle_time_ms:int32 error_code:int16 results:[error_code:int16 log_dir:string topics:[name:string partitions:[partition_index:int32 partition_size:int64 offset_lag:int64 is_future_key:bool]] total_bytes:int64 usable_bytes:int64]"),
    # DescribeConfigs: IsDefault in v0 only, ConfigSource and synonyms from v1.
    (32, "request", 0): (False, "resources:[resource_type:int8 resource_name:string configuration_keys:[string]?]"),
    (32, "request", 1): (False, "resources:[resource_type:int8 resource_name:string configuration_keys:[string]?] include_synonyms:bool"),
    (32, "request", 4): (True, "resources:[resource_type:int8 resource_name:string configuration_keys:[string]?] include_synonyms:bool include_documentation:bool"),
    (32, "response", 0): (False, "throttle_time_ms:int32 results:[error_code:int16 error_message:string? resource_type:int8 resource_name:string configs:[name:string value:string? read_only:bool is_default:bool is_sensitive:bool]]"),
    (32, "response", 1): (False, "throttle_time_ms:int32 results:[error_code:int16 error_message:string? resource_type:int8 resource_name:string configs:[name:string value:string? read_only:bool config_source:int8 is_sensitive:bool synonyms:[name:string value:string? source:int8]]]"),
    (32, "response", 3): (False, "throttle_time_ms:int32 results:[error_code:int16 error_message:string? resource_type:int8 resource_name:string configs:[name:string value:string? read_only:bool config_source:int8 is_sensitive:bool synonyms:[name:string value:string? source:int8] config_type:int8 documentation:string?]]"),
    # CreateTopics / DeleteTopics.
    (19, "request", 0): (False, "topics:[name:string num_partitions:int32 replication_factor:int16 assignments:[partition_index:int32 broker_ids:[int32]] configs:[name:string value:string?]] timeout_ms:int32"),
    (19, "request", 5): (True, "topics:[name:string num_partitions:int32 replication_factor:int16 assignments:[partition_index:int32 broker_ids:[int32]] configs:[name:string value:string?]] timeout_ms:int32 validate_only:bool"),
    (19, "response", 0): (False, "topics:[name:string error_code:int16]"),
    (19, "response", 1): (False, "topics:[name:string error_code:int16 error_message:string?]"),
    (19, "response", 2): (False, "throttle_time_ms:int32 topics:[name:string error_code:int16 error_message:string?]"),
    (19, "response", 5): (True, "throttle_time_ms:int32 topics:[name:string error_code:int16 error_message:string? num_partitions:int32 replication_factor:int16 configs:[name:string value:string? read_only:bool config_source:int8 is_sensitive:bool]? @0 topic_config_error_code:int16]"),
    (19, "response", 7): (True, "throttle_time_ms:int32 topics:[name:string topic_id:uuid error_code:int16 error_message:string? num_partitions:int32 replication_factor:int16 configs:[name:string value:string? read_only:bool config_source:int8 is_sensitive:bool]? @0 topic_config_error_code:int16]"),
    (20, "request", 0): (False, "topic_names:[string] timeout_ms:int32"),
    (20, "request", 4): (True, "topic_names:[string] timeout_ms:int32"),
    (20, "request", 6): (True, "topics:[name:string? topic_id:uuid] timeout_ms:int32"),
    (20, "response", 0): (False, "responses:[name:string error_code:int16]"),
    (20, "response", 1): (False, "throttle_time_ms:int32 responses:[name:string error_code:int16]"),
    (20, "response", 5): (True, "throttle_time_ms:int32 responses:[name:string error_code:int16 error_message:string?]"),
    (20, "response", 6): (True, "throttle_time_ms:int32 responses:[name:string? topic_id:uuid error_code:int16 error_message:string?]"),
    # SASL.
    (17, "request", 1): (False, "mechanism:string"),
    (17, "response", 1): (False, "error_code:int16 mechanisms:[string]"),
    (36, "request", 2): (True, "auth_bytes:bytes"),
    (36, "response", 0): (False, "error_code:int16 error_message:string? auth_bytes:bytes"),
    (36, "response", 1): (False, "error_code:int16 error_message:string? auth_bytes:bytes session_lifetime_ms:int64"),
    (36, "response", 2): (True, "error_code:int16 error_message:string? auth_bytes:bytes session_lifetime_ms:int64"),
}

# Exact version ranges of the APIs owned here: Kafka 4.3's newest versions (keeping the old
# ones Kafka 4.0 dropped, which older clients still send), and Kafka 3.9's for the ZooKeeper-mode
# controller-to-broker APIs 4/5/6, which Kafka 4.0 removed.
KAFKA_VERSIONS = {
    3: ("0-13", "9+"), 4: ("0-7", "4+"), 5: ("0-4", "2+"), 6: ("0-8", "6+"),
    17: ("0-1", "none"), 18: ("0-4", "3+"), 19: ("0-7", "5+"), 20: ("0-6", "4+"), 32: ("0-4", "4+"),
    34: ("0-2", "2+"), 35: ("0-5", "2+"), 36: ("0-2", "2+"), 45: ("0-1", "0+"), 46: ("0", "0+"),
}


@pytest.mark.parametrize("key", sorted(KAFKA_VERSIONS))
def test_kafka_version_ranges(key):
    valid, flexible = KAFKA_VERSIONS[key]
    for kind in ("request", "response"):
        spec = load_specs()[(key, kind)]
        assert (spec["validVersions"], spec["flexibleVersions"]) == (valid, flexible), spec["name"]


@pytest.mark.parametrize(
    "case", sorted(KAFKA_LAYOUTS), ids=[f"{k}-{t}-v{v}" for k, t, v in sorted(KAFKA_LAYOUTS)]
)
def test_kafka_wire_layout(case):
    key, kind, version = case
    flexible, expected = KAFKA_LAYOUTS[case]
    spec = load_specs()[(key, kind)]
    assert is_flexible(spec, version) == flexible
    assert layout(spec, version) == expected


def test_defaults_kafka_relies_on():
    specs = load_specs()

    def field(key, kind, *path):
        fields = specs[(key, kind)]["fields"]
        f = None
        for name in path:
            f = next(x for x in fields if x["name"] == name)
            fields = struct_fields(specs[(key, kind)], f) or []
        return f

    # Admin clients leave these out and rely on the defaults.
    assert field(45, "request", "TimeoutMs")["default"] == "60000"
    assert field(46, "request", "TimeoutMs")["default"] == "60000"
    assert field(46, "request", "Topics")["default"] == "null"
    assert field(19, "request", "TimeoutMs")["default"] == "60000"
    # Brokers treat -1 as "no epoch given".
    assert field(4, "request", "BrokerEpoch")["default"] == "-1"
    assert field(5, "request", "BrokerEpoch")["default"] == "-1"
    assert field(6, "request", "BrokerEpoch")["default"] == "-1"
    assert field(5, "request", "TopicStates", "PartitionStates", "LeaderEpoch")["default"] == "-1"
    assert field(35, "response", "Results", "TotalBytes")["default"] == "-1"
    assert field(36, "response", "SessionLifetimeMs")["default"] == "0"
    # Reassignment cancel is a null replica list.
    replicas = field(45, "request", "Topics", "Partitions", "Replicas")
    assert in_range(replicas["nullableVersions"], 0) and replicas["default"] == "null"
