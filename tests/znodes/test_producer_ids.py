"""/latest_producer_id_block as Kafka writes it (znodes.producer_ids): blocks of 1,000 ids, one
after another from 0, and a znode that does not decode refused, never read as "start from 0"."""

from __future__ import annotations

import json

import pytest

from znodes.producer_ids import (
    BLOCK_SIZE,
    MAX_PRODUCER_ID,
    ProducerIdBlock,
    ProducerIdBlockError,
    decode_block,
    encode_block,
    next_block,
)


def test_blocks_follow_each_other_from_zero():
    first = next_block(decode_block(b""), 3)  # Kafka creates the znode without data
    assert first == ProducerIdBlock(3, 0, BLOCK_SIZE) and first.end == 999
    assert next_block(decode_block(None), 1).start == 0
    data = encode_block(first)
    assert json.loads(data) == {"version": 1, "broker": 3, "block_start": "0", "block_end": "999"}
    assert next_block(decode_block(data), 4) == ProducerIdBlock(4, 1000, BLOCK_SIZE)


def test_kafkas_own_znode_is_read():
    kafka = b'{"version":1,"broker":0,"block_start":"12000","block_end":"12999"}'
    assert decode_block(kafka) == ProducerIdBlock(0, 12000, 1000)
    assert next_block(decode_block(kafka), 2).start == 13000


@pytest.mark.parametrize("data", [
    b"not json", b"[]", b'{"version":1}', b'{"version":1,"broker":0,"block_start":0,"block_end":999}',
    b'{"version":1,"broker":"0","block_start":"0","block_end":"999"}',
    b'{"version":1,"broker":0,"block_start":"10","block_end":"5"}',
    b'{"version":1,"broker":0,"block_start":"-1","block_end":"5"}',
    b'{"version":1,"broker":0,"block_start":"x","block_end":"5"}',
])
def test_a_znode_that_is_not_a_block_is_refused(data):
    with pytest.raises(ProducerIdBlockError):
        decode_block(data)


def test_ids_run_out_at_int64():
    last = ProducerIdBlock(1, MAX_PRODUCER_ID - BLOCK_SIZE + 1, BLOCK_SIZE)
    with pytest.raises(ProducerIdBlockError, match="exhausted"):
        next_block(last, 1)
    assert next_block(ProducerIdBlock(1, MAX_PRODUCER_ID - 2 * BLOCK_SIZE + 1, BLOCK_SIZE), 1).end == MAX_PRODUCER_ID
