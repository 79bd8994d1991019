"""KIP-179 throttle removal, run by the controller when no reassignment is left."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths

TOPIC_THROTTLES = {
    "leader.replication.throttled.replicas": "0:1,0:2",
    "follower.replication.throttled.replicas": "0:4",
    "retention.ms": "1000",
}
BROKER_THROTTLES = {"leader.replication.throttled.rate": "1000000", "follower.replication.throttled.rate": "1000000"}


async def _throttle(h: Harness, auto_remove: bool = True):
    admin = h.admin
    await admin.set(paths.topic_config("t"), json.dumps({"version": 1, "config": TOPIC_THROTTLES}).encode())
    for b in (1, 2):
        data = json.dumps({"version": 1, "config": BROKER_THROTTLES}).encode()
        if h.server.exists(paths.broker_config(b)) is None:
            await admin.create(paths.broker_config(b), data)
        else:
            await admin.set(paths.broker_config(b), data)
    if auto_remove:
        await admin.create(paths.THROTTLED_REPLICAS_REMOVAL, b'{"version":1,"topics":["t"]}')
        await admin.create(paths.THROTTLED_RATES_REMOVAL, b'{"version":1,"brokers":[1]}')


def _config(h: Harness, path: str) -> dict:
    return json.loads(h.server.read(path)[0])["config"]


async def test_throttles_go_when_the_last_reassignment_completes():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await _throttle(h)
        await h.start_controller(101, throttle_removal=("all",))
        # Nothing running at start-up (KIP-179 failover rule) already removes them ...
        assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        assert _config(h, paths.topic_config("t")) == {"retention.ms": "1000"}
        # ... and so does the completion of a reassignment that set them again.
        await _throttle(h, auto_remove=False)
        await h.admin.create(paths.THROTTLED_REPLICAS_REMOVAL, b'{"version":1,"topics":["t"]}')
        await h.submit({("t", 0): [4, 5, 6]})
        assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is not None  # still running
        await h.run_until_quiet()
        h.check_invariants()
        assert h.server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None
        assert _config(h, paths.topic_config("t")) == {"retention.ms": "1000"}
        # broker 1 was listed for rate removal at start-up, broker 2 never was: its rates stay
        assert _config(h, paths.broker_config(2)) == BROKER_THROTTLES
        changes = [json.loads(h.server.read(f"/config/changes/{n}")[0]) for n in h.server.children("/config/changes")]
        assert {"version": 2, "entity_path": "topics/t"} in changes
        assert {"version": 2, "entity_path": "brokers/1"} in changes
    finally:
        await h.close()


async def test_operator_throttles_without_auto_removal_stay():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await _throttle(h, auto_remove=False)
        await h.start_controller(101, throttle_removal=("all",))
        await h.submit({("t", 1): [4, 5, 6]})
        await h.run_until_quiet()
        assert _config(h, paths.topic_config("t")) == TOPIC_THROTTLES
        assert _config(h, paths.broker_config(1)) == BROKER_THROTTLES
    finally:
        await h.close()


async def test_a_garbled_removal_znode_is_reported_and_left_alone(caplog):
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        await _throttle(h, auto_remove=False)
        await h.admin.create(paths.THROTTLED_REPLICAS_REMOVAL, b"{not json")
        await h.start_controller(101, throttle_removal=("all",))
        assert h.server.read(paths.THROTTLED_REPLICAS_REMOVAL)[0] == b"{not json"
        assert _config(h, paths.topic_config("t")) == TOPIC_THROTTLES
        assert "throttle removal" in caplog.text
    finally:
        await h.close()
