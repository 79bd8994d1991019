"""Kafka's producer id blocks in ZooKeeper (KIP-730; Kafka's ``ProducerIdBlockZNode`` and
``ZkProducerIdManager``): ``/latest_producer_id_block`` holds the last block of producer ids
handed to a broker, and each AllocateProducerIds gives the asking broker the next one. Pure.

    {"version":1,"broker":3,"block_start":"2000","block_end":"2999"}    # ids as decimal strings

    current = decode_block(data)                 # None: no block handed out yet (empty znode)
    block = next_block(current, broker_id=4)     # ProducerIdBlock(4, 3000, 1000)
    data = encode_block(block)

Brokers of Kafka 3.0+ (inter.broker.protocol.version 3.0 and later) ask the controller for a
block instead of writing the znode themselves; idempotent producers (on by default since 3.0)
cannot start without one. A znode that does not decode raises :class:`ProducerIdBlockError`
naming what is wrong: handing out ids again from 0 could give two producers the same id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

VERSION = 1
# Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE: one block lasts a broker a while, and each
# costs a ZooKeeper write.
BLOCK_SIZE = 1000
MAX_PRODUCER_ID = 2**63 - 1  # ids are int64


class ProducerIdBlockError(ValueError):
    """``/latest_producer_id_block`` holds something that is not a block, or ids ran out."""


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker: int
    start: int
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length - 1


def decode_block(data: bytes | None) -> ProducerIdBlock | None:
    """The block a znode holds; None for an empty znode (Kafka creates it without data)."""
    if not data:
        return None
    try:
        doc = json.loads(data)
        broker, start, end = doc["broker"], int(doc["block_start"]), int(doc["block_end"])
    except (ValueError, TypeError, KeyError) as e:
        raise ProducerIdBlockError(f"not a producer id block: {data[:200]!r} ({e!r})") from None
    if type(broker) is not int or not isinstance(doc["block_start"], str) or not isinstance(doc["block_end"], str):
        raise ProducerIdBlockError(f"not a producer id block (broker an int, block_start and block_end decimal "
                                   f"strings): {data[:200]!r}")
    if start < 0 or end < start or end > MAX_PRODUCER_ID:
        raise ProducerIdBlockError(f"producer id block {start}..{end} is not a range of int64 ids: {data[:200]!r}")
    return ProducerIdBlock(broker, start, end - start + 1)


def next_block(current: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
    """The block after ``current`` (the first, from 0, when none), for ``broker_id``."""
    start = 0 if current is None else current.end + 1
    if start > MAX_PRODUCER_ID - BLOCK_SIZE + 1:
        raise ProducerIdBlockError(f"producer ids are exhausted (the last block ends at {current.end})")
    return ProducerIdBlock(broker_id, start, BLOCK_SIZE)


def encode_block(block: ProducerIdBlock) -> bytes:
    return json.dumps({"version": VERSION, "broker": block.broker, "block_start": str(block.start),
                       "block_end": str(block.end)}, separators=(",", ":")).encode()
