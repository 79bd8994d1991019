"""Metadata and DescribePartitionReassignments read a partition's state znode with the decoder the
controller itself uses (znodes.payloads.decode_state): a state the controller refuses is no leader
in their answers too, and one it accepts is shown as it decodes it (issue 21: the hand parser in
controller/shell/admin/metadata.py took shapes the controller refuses)."""

from __future__ import annotations

import json

import pytest

from controller.shell.admin.kip240 import handle_describe
from controller.shell.admin.metadata import handle_metadata
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.harness import Harness
from znodes import paths
from znodes.errors import ZnodeFormatError
from znodes.payloads import decode_state, encode_record

GOOD = {"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 4, "isr": [2, 1]}

# Shapes Kafka's controller does not write, each of which the old hand parser took as leader 2.
REFUSED = {
    "version 2": {**GOOD, "version": 2},
    "no controller_epoch": {k: v for k, v in GOOD.items() if k != "controller_epoch"},
    "negative leader epoch": {**GOOD, "leader_epoch": -1},
    "an ISR member twice": {**GOOD, "isr": [2, 2]},
}


@pytest.fixture
async def h():
    harness = Harness(brokers=3, topics=("t:2:2:64KiB",))
    await harness.start()
    await harness.start_controller(101)
    await harness.tick()
    yield harness
    await harness.close()


async def _set_state(h, partition: int, doc: dict) -> bytes:
    data = json.dumps(doc).encode()
    await h.admin.set(paths.partition_state("t", partition), data)
    return data


async def _metadata_partitions(h) -> dict[int, dict]:
    body = {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False}
    answer = await handle_metadata(context(h), 9, body)
    return {p["partition_index"]: p for p in answer["topics"][0]["partitions"]}


@pytest.mark.parametrize("shape", REFUSED)
async def test_a_state_the_controller_refuses_is_no_leader_in_metadata(h, shape):
    data = await _set_state(h, 1, REFUSED[shape])
    with pytest.raises(ZnodeFormatError):
        decode_state(paths.partition_state("t", 1), data, 0)  # the controller's own verdict
    parts = await _metadata_partitions(h)
    assert parts[1]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
    assert (parts[1]["leader_id"], parts[1]["leader_epoch"], parts[1]["isr_nodes"]) == (-1, -1, [])
    assert parts[0]["error_code"] == ErrorCode.NONE and parts[0]["leader_id"] >= 0  # the other one untouched


async def test_a_state_the_controller_accepts_is_shown_as_decoded(h):
    # Kafka 3.2+ writes leader_recovery_state (KIP-704): not the plain shape, decoded by the model.
    await _set_state(h, 1, {**GOOD, "leader_recovery_state": 0})
    parts = await _metadata_partitions(h)
    assert parts[1]["error_code"] == ErrorCode.NONE
    assert (parts[1]["leader_id"], parts[1]["leader_epoch"], parts[1]["isr_nodes"]) == (2, 4, [2, 1])


async def test_describe_reassignments_takes_the_same_verdict(h):
    # A running move's record (as the controller writes it at a start); the handler describes
    # any record whose czxid is the id asked about.
    record = paths.reassignment("t", 1)
    await h.admin.create(record, encode_record((1, 2, 3), (1, 2)), makepath=True)
    rid = (await h.admin.exists(record)).czxid
    body = {"topic_reassignment": [{"topic": "t", "reassignment": {"partition_id": 1, "reassignment_id": rid}}],
            "timeout_ms": 1000}
    await _set_state(h, 1, GOOD)
    described = (await handle_describe(context(h), 1, body))["description"]
    assert [d["leader_id"] for d in described] == [2]
    await _set_state(h, 1, REFUSED["version 2"])
    described = (await handle_describe(context(h), 1, body))["description"]
    assert [d["leader_id"] for d in described] == [-1]
