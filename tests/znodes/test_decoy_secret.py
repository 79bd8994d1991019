"""znodes.decoy_secret: one SCRAM decoy secret for the whole service, created once by whichever
instance needs it first, on a real ZooKeeper; a malformed one is a clear error."""

from __future__ import annotations

import asyncio
import base64

import pytest

from znodes import decoy_secret
from znodes.errors import ZnodeFormatError
from znodes.store import connect


async def test_created_once_then_read_by_every_instance(zk_hosts):
    one, two = await connect(zk_hosts), await connect(zk_hosts)
    try:
        # Two instances asking at once: both get the secret that landed.
        a, b = await asyncio.gather(decoy_secret.read_or_create(one), decoy_secret.read_or_create(two))
        assert a == b and len(a) == decoy_secret.SECRET_BYTES
        data, _ = await one.get(decoy_secret.PATH)
        assert decoy_secret.decode(data) == a
        assert await decoy_secret.read_or_create(two) == a  # and later: the same
    finally:
        await one.close()
        await two.close()


@pytest.mark.parametrize("data, reason", [
    (b"", "not JSON"),
    (b"\xff", "not JSON"),
    (b"[1]", "expected"),
    (b'{"version":2,"secret":"AAAA"}', "expected"),
    (b'{"version":1,"secret":7}', "expected"),
    (b'{"version":1,"secret":"not base64!"}', "not base64"),
    (b'{"version":1,"secret":"' + base64.b64encode(b"short") + b'"}', "5 bytes, not 32"),
])
def test_a_malformed_secret_is_a_clear_error(data, reason):
    with pytest.raises(ZnodeFormatError) as e:
        decoy_secret.decode(data)
    assert decoy_secret.PATH in str(e.value) and reason in str(e.value)


def test_round_trip():
    secret = bytes(range(32))
    assert decoy_secret.decode(decoy_secret.encode(secret)) == secret
