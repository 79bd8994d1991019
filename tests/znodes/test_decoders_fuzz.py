"""Every decoder of a znode payload the controller reads, fed any JSON (and bytes that are not
JSON, and valid payloads with one value swapped for another JSON value): the decoder's one
error type or a value, never another exception (an AttributeError on a list where an object was
expected, a TypeError on a string where a number was) that would escape the reader's handling
of bad payloads and fail a whole read. Payload by payload checks are tests/znodes/test_models.py."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from znodes import acls, models, payloads, producer_ids, users
from znodes.errors import ZnodeFormatError

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
# Keys the decoders look for, so that the search reaches past the first check.
KEYS = st.sampled_from(["version", "partitions", "adding_replicas", "removing_replicas", "topic_id", "leader",
                        "leader_epoch", "controller_epoch", "isr", "topic", "partition", "replicas",
                        "original_replicas", "log_dirs", "host", "port", "endpoints", "rack", "timestamp",
                        "jmx_port", "listener_security_protocol_map", "brokerid", "features", "acls", "config",
                        "broker", "block_start", "block_end", "principal", "permissionType", "operation",
                        "state", "zk_version", "target_replicas", "rollback", "queued", "broker_epoch",
                        "leader_recovery_state", "0", "1", "t"])
SHAPED = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**31) | st.text(max_size=6) | st.sampled_from(["PLAINTEXT://h:1"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=25,
)
PAYLOAD = (st.one_of(JSON, SHAPED).map(lambda d: json.dumps(d).encode())
           | st.binary(max_size=40)
           | st.sampled_from([b"", b"null", b"[]", b"{}", b"\xff", b'"x"', b"1e999", b"-0", b"[[[]]]"]))

DECODERS = {
    "topic": lambda d: payloads.decode_topic_with_id("/brokers/topics/t", d),
    "state": lambda d: payloads.decode_state("/brokers/topics/t/partitions/0/state", d, 3),
    "requests": lambda d: payloads.decode_requests("/admin/reassign_partitions", d),
    "record": lambda d: payloads.decode_record_full("/admin/reassignments/t/0", d),
    "broker": lambda d: payloads.decode_broker("/brokers/ids/1", d, 1, 5),
    "broker_endpoints": lambda d: payloads.decode_broker_endpoints("/brokers/ids/1", d, 1, 5),
    "controller": lambda d: payloads.decode_controller("/controller", d),
    "epoch": lambda d: payloads.decode_epoch("/controller_epoch", d),
    "preferred": lambda d: payloads.decode_preferred_election("/admin/preferred_replica_election", d),
    "notification": lambda d: payloads.decode_notification("/isr_change_notification/isr_change_0000000001", d),
    "log_dir_event": lambda d: payloads.decode_log_dir_event("/log_dir_event_notification/log_dir_event_0000000001", d),
    "controller_node": lambda d: payloads.decode_controller_node("/reassignd/controllers/101", d, 101),
    "listener": lambda d: payloads.decode_listener("/reassignd/controllers/101", d),
    "acls": lambda d: acls.decode_entries("/kafka-acl/Topic/t", d),
    "user_config": lambda d: users.decode_user_config("/config/users/u", d),
    "model": lambda d: models.parse("/config/topics/t", d),
}
# A valid payload of each kind, as Kafka (or reassignd) writes it: the mutation test swaps one
# value inside it for another JSON value, so each check past the shape is reached.
VALID = {
    "topic": {"version": 3, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": {"0": [1, 2], "1": [2, 3]},
              "adding_replicas": {"0": [2]}, "removing_replicas": {"1": [3]}},
    "state": {"version": 1, "leader": 1, "leader_epoch": 4, "controller_epoch": 2, "isr": [1, 2],
              "leader_recovery_state": 0},
    "requests": {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2],
                                                "log_dirs": ["any", "any"]}]},
    "record": {"version": 1, "replicas": [1, 2], "original_replicas": [2, 3]},
    "broker": {"version": 5, "host": "h", "port": 9092, "jmx_port": -1, "timestamp": "1",
               "endpoints": ["PLAINTEXT://h:9092", "SSL://h:9093"], "rack": "r1",
               "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, "features": {}},
    "controller": {"version": 2, "brokerid": 101, "timestamp": "1", "kraftControllerEpoch": -1},
    "epoch": 7,
    "preferred": {"version": 1, "partitions": [{"topic": "t", "partition": 0}]},
    "notification": {"version": 1, "partitions": [{"topic": "t", "partition": 0, "state": {
        "leader": 1, "leader_epoch": 2, "controller_epoch": 1, "isr": [1], "zk_version": 3}}]},
    "log_dir_event": {"version": 1, "broker": 1, "event": 1},
    "acls": {"version": 1, "acls": [{"principal": "User:a", "permissionType": "Allow", "operation": "Read",
                                     "host": "*"}]},
    "user_config": {"version": 1, "config": {"SCRAM-SHA-512": "salt=a,stored_key=b,server_key=c,iterations=4096"}},
    "model": {"version": 1, "config": {"min.insync.replicas": "2"}},
    "producer_ids": {"version": 1, "broker": 1, "block_start": "0", "block_end": "999"},
}
VALID["broker_endpoints"] = VALID["broker"]
VALID["controller_node"] = VALID["listener"] = {  # /reassignd/controllers/<id>, reassignd's own
    "version": 1, "host": "h", "port": 9190, "endpoints": ["INTERNAL://h:9190", "SECURE://h:9193"],
    "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "SECURE": "SASL_SSL"}}


def _swap(doc, path: list[int], value):
    """``doc`` with the value at the position ``path`` picks (indexes into the containers met
    on the way down, modulo their sizes) replaced by ``value``."""
    if not path or not isinstance(doc, (dict, list)) or not doc:
        return value
    if isinstance(doc, dict):
        key = sorted(doc)[path[0] % len(doc)]
        return {**doc, key: _swap(doc[key], path[1:], value)}
    i = path[0] % len(doc)
    return [*doc[:i], _swap(doc[i], path[1:], value), *doc[i + 1:]]


# Examples per test: DECODER_FUZZ_EXAMPLES=6000 for a longer search (three seeds were clean).
EXAMPLES = int(os.environ.get("DECODER_FUZZ_EXAMPLES", "400"))
# The decoder's own error where it is not ZnodeFormatError.
ERRORS = {"producer_ids": producer_ids.ProducerIdBlockError}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=PAYLOAD, name=st.sampled_from(sorted([*DECODERS, "producer_ids"])))
def test_any_payload_is_a_value_or_the_decoders_error(data, name):
    decode = DECODERS.get(name) or producer_ids.decode_block
    try:
        decode(data)
    except ERRORS.get(name, ZnodeFormatError):
        pass


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(VALID)), path=st.lists(st.integers(0, 50), max_size=5), value=SHAPED | JSON)
def test_a_valid_payload_with_one_value_swapped_is_a_value_or_the_decoders_error(name, path, value):
    data = json.dumps(_swap(VALID[name], path, value)).encode()
    decode = DECODERS.get(name) or producer_ids.decode_block
    try:
        decode(data)
    except ERRORS.get(name, ZnodeFormatError):
        pass


def test_the_valid_payloads_decode():
    for name, doc in VALID.items():
        (DECODERS.get(name) or producer_ids.decode_block)(json.dumps(doc).encode())
