"""ZooKeeper 3.6+'s multiRead (opcode 22) as a kazoo request: many getData in ONE request.

kazoo 2.x has no multiRead. Reading 100,000 partition states one ``get`` at a time costs a
request, a reply and a hand-off between kazoo's threads and the event loop per znode; one
multiRead carries hundreds. Unlike a write multi it is not atomic and not all-or-nothing:
the server answers every op on its own (data and stat, or an error code such as NONODE), in
request order, all read at one point of the server's order.

Wire format (ZooKeeper's MultiOperationRecord / MultiResponse):

  request   per op: MultiHeader(type=4 getData, done=false, err=-1) + GetDataRequest(path,
            watch=false); then MultiHeader(-1, true, -1)
  response  per op: MultiHeader(type=4, false, 0) + GetDataResponse(data, stat), or
            MultiHeader(type=-1, false, err) + ErrorResponse(err); then MultiHeader(-1, true, -1)

No watch is set through a multiRead (the Java client's ``Op.getData`` cannot either).
"""

from __future__ import annotations

from collections import namedtuple

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    ZnodeStat,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
    write_string,
)

MULTI_READ_OPCODE = 22  # ZooDefs.OpCode.multiRead (ZooKeeper 3.6+)
_ERROR_TYPE = -1
_OP_HEADER = MultiHeader(GetData.type, False, -1).serialize()
_END = multiheader_struct.pack(-1, True, -1)


class MultiRead(namedtuple("MultiRead", "paths")):
    """``paths`` must already carry the chroot. The response is one entry per path, in order:
    ``(data, kazoo ZnodeStat)`` or a kazoo exception instance (e.g. NoNodeError())."""

    type = MULTI_READ_OPCODE

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b += _OP_HEADER
            b += write_string(path)
            b.append(0)  # watch: no
        b += _END
        return b

    @classmethod
    def deserialize(cls, data, offset: int) -> list:
        results: list = []
        while True:
            op_type, done, err = multiheader_struct.unpack_from(data, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op_type == GetData.type:
                value, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((value, stat))
            elif op_type == _ERROR_TYPE:
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"multiRead answered an op of type {op_type}, expected getData or error")
