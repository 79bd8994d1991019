"""The write audit (controller.shell.audit) over the ZooKeeper twin: an election, a committed
fenced write with the zxid it landed at, writes outside a fenced multi (marked so), and a
deposed controller's write the fence refused."""

from __future__ import annotations

import io
import json

import pytest

from controller.shell.audit import AuditedStore
from controller.shell.election import try_elect
from znodes.api import Create, FencedError, SetData
from znodes.twin import TwinServer


def _lines(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_audit_records_elections_writes_and_fenced_attempts():
    server = TwinServer()
    out_a, out_b = io.StringIO(), io.StringIO()
    a = AuditedStore(server.connect(), out_a, controller_id=101)
    b = AuditedStore(server.connect(), out_b, controller_id=102)
    await a.create("/t", b"0")

    won_a = await try_elect(a, 101)  # creates /controller_epoch: epoch 1, zkVersion 0
    results = await a.fenced_multi([SetData("/t", b"1"), Create("/t/x", b"")], won_a.epoch_zkversion)
    await a.delete("/controller")
    won_b = await try_elect(b, 102)  # bumps it: epoch 2, zkVersion 1
    with pytest.raises(FencedError):
        await a.fenced_multi([SetData("/t", b"zombie")], won_a.epoch_zkversion)

    before, elected_a, write, released, fenced = _lines(out_a)
    # Writes outside a fenced multi are audited as such, with the epoch last won (none yet).
    assert before == {**before, "event": "write", "fenced": False, "epoch": None, "epoch_zkversion": None,
                      "ops": [["create", "/t"]]}
    assert released == {**released, "event": "write", "fenced": False, "epoch": 1, "epoch_zkversion": 0,
                        "ops": [["delete", "/controller"]]}
    assert elected_a == {**elected_a, "event": "elected", "controller": 101, "epoch": 1, "epoch_zkversion": 0}
    assert write["event"] == "write" and write["fenced"] is True and write["epoch"] == 1 and write["epoch_zkversion"] == 0
    assert write["zxid"] == results[0].mzxid and write["ops"] == [["set", "/t"], ["create", "/t/x"]]
    assert fenced == {**fenced, "event": "fenced", "epoch": 1, "ops": [["set", "/t"]]}
    (elected_b,) = _lines(out_b)
    _, stat = await b.get("/controller_epoch")
    assert elected_b == {**elected_b, "epoch": 2, "epoch_zkversion": won_b.epoch_zkversion, "mzxid": stat.mzxid}
    assert (await b.get("/t"))[0] == b"1"  # the zombie's write did not land
