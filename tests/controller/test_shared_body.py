"""controller.core.shared_body: one UpdateMetadata body for many brokers, byte for byte what the
codec makes per broker; frames around encoded bodies equal protocol.encode_request's."""

from __future__ import annotations

import pytest

import protocol
from controller.core.commands import UPDATE_METADATA_VERSION, Outbox
from controller.core.shared_body import per_broker_bodies, request_frame
from protocol import ApiKey
from znodes.values import Broker, LeaderIsr

BODY = {
    "controller_id": 3,
    "controller_epoch": 2,
    "topic_states": [
        {
            "topic_name": "t",
            "partition_states": [
                {"partition_index": 0, "controller_epoch": 2, "leader": 1, "leader_epoch": 3, "isr": [1, 2],
                 "zk_version": 4, "replicas": [1, 2], "offline_replicas": []},
            ],
        }
    ],
    "live_brokers": [
        {"id": 1, "endpoints": [{"port": 9093, "host": "h1", "listener": "PLAINTEXT", "security_protocol": 0}], "rack": "r"},
    ],
}


def test_each_brokers_body_is_the_codecs_bytes_for_its_epoch():
    epochs = {1: 5, 2: -1, 3: 2**62, 4: 0}
    bodies = per_broker_bodies(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, BODY, epochs)
    assert set(bodies) == set(epochs)
    for broker_id, epoch in epochs.items():
        expected = protocol.encode_body(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, "request", BODY | {"broker_epoch": epoch})
        assert bodies[broker_id] == expected


def test_a_body_the_codec_refuses_is_not_shared():
    bad = BODY | {"topic_states": [{"topic_name": 7, "partition_states": []}]}
    assert per_broker_bodies(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, bad, {1: 1, 2: 2}) is None
    assert per_broker_bodies(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, BODY, {1: 2**63}) is None
    assert per_broker_bodies(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, BODY, {}) is None


@pytest.mark.parametrize("client_id", ["reassignd-controller", "", None, "ünïcode"])
@pytest.mark.parametrize(
    "api_key, api_version, body",
    [
        (ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, BODY | {"broker_epoch": 9}),  # flexible: header v2
        (3, 3, {"topics": None}),  # Metadata v3: header v1
        (4, 4, {}),
    ],
)
def test_request_frame_is_encode_requests_frame(api_key, api_version, body, client_id):
    encoded = protocol.encode_body(api_key, api_version, "request", body)
    frame = request_frame(api_key, api_version, 1234, client_id, encoded)
    assert frame == protocol.encode_request(api_key, api_version, 1234, client_id, body)
    header, decoded = protocol.decode_request(frame)
    assert header["correlation_id"] == 1234


def test_outbox_update_metadata_commands_carry_each_brokers_encoding():
    brokers = {b: Broker(b, "127.0.0.1", 9092 + b, None, 100 + b) for b in (1, 2, 3)}
    box = Outbox(7, 4, brokers)
    box.update_metadata(("t", 0), LeaderIsr(1, 2, 4, (1, 2), 5), (1, 2, 3))
    commands = [c for c in box.commands() if c.api_key == ApiKey.UPDATE_METADATA]
    assert [c.broker_id for c in commands] == [1, 2, 3]
    for c in commands:
        assert c.body["broker_epoch"] == 100 + c.broker_id
        assert c.encoded == protocol.encode_body(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, "request", c.body)
