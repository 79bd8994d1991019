"""Producer id blocks through the engine (controller.core.producer_ids): its worked table and
the rule that picks the current block (the newer of the read and what this controller wrote)."""

from __future__ import annotations

import json

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import ProducerIdsRequested
from controller.core.state import ClusterState
from protocol.errors import ErrorCode
from znodes import paths
from znodes.api import Create, SetData
from znodes.producer_ids import ProducerIdBlock, encode_block
from znodes.values import Broker

A, B = object(), object()
BLOCK = encode_block(ProducerIdBlock(7, 2000, 1000))


def _state() -> ClusterState:
    return ClusterState(controller_id=101, epoch=3, brokers={b: Broker(b, "h", 9000 + b, epoch=100 * b) for b in (1, 2, 3)})


def _results(st) -> dict:
    return {token: result for token, result in st.elections}


def test_the_worked_table_two_requests_of_one_step_chain_their_blocks():
    st = engine.step(_state(), [ProducerIdsRequested(1, 100, BLOCK, 4, A), ProducerIdsRequested(2, 200, BLOCK, 4, B),
                                ProducerIdsRequested(3, 299, BLOCK, 4, object()), ProducerIdsRequested(9, 1, BLOCK, 4)],
                     ControllerConfig())
    results = list(_results(st).values())
    assert results == [(ErrorCode.NONE, ProducerIdBlock(1, 3000, 1000)), (ErrorCode.NONE, ProducerIdBlock(2, 4000, 1000)),
                       (ErrorCode.STALE_BROKER_EPOCH, None), (ErrorCode.BROKER_ID_NOT_REGISTERED, None)]
    assert [(type(w), w.path, w.version) for w in st.writes] == [(SetData, paths.LATEST_PRODUCER_ID_BLOCK, 4),
                                                                  (SetData, paths.LATEST_PRODUCER_ID_BLOCK, 5)]
    assert json.loads(st.writes[1].data)["block_start"] == "4000"


def test_a_read_older_than_the_last_write_is_not_decided_from():
    s = _state()
    st = engine.step(s, ProducerIdsRequested(1, 100, None, None, A), ControllerConfig())  # no znode yet
    assert isinstance(st.writes[0], Create) and _results(st)[A] == (ErrorCode.NONE, ProducerIdBlock(1, 0, 1000))
    s.apply(st.delta)
    # Read before that write landed (no znode): the block written is the current one.
    st = engine.step(s, ProducerIdsRequested(2, 200, None, None, B), ControllerConfig())
    assert _results(st)[B] == (ErrorCode.NONE, ProducerIdBlock(2, 1000, 1000))
    assert st.writes[0].version == 0
    s.apply(st.delta)
    # Someone else wrote since (a newer version): the read wins.
    st = engine.step(s, ProducerIdsRequested(1, 100, BLOCK, 9, A), ControllerConfig())
    assert _results(st)[A] == (ErrorCode.NONE, ProducerIdBlock(1, 3000, 1000)) and st.writes[0].version == 9


def test_a_znode_that_is_no_block_is_refused_and_left_alone():
    st = engine.step(_state(), ProducerIdsRequested(1, 100, b'{"version":1,"broker":0}', 2, A), ControllerConfig())
    assert _results(st)[A] == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert st.writes == [] and any("AllocateProducerIds" in w for w in st.warnings)
