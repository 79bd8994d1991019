"""AlterConfigs (33) and IncrementalAlterConfigs (44) on the ZooKeeper twin (issue 14 item 4):
throttles set by standard tools land in /config/topics and /config/brokers with a change
notification, bad input gets Kafka's errors and writes nothing, and a throttle set this way
outlives every reassignment (KIP-179 removes only what it registered)."""

from __future__ import annotations

import json

import pytest

from protocol.config_changes import APPEND, DELETE, SET, SUBTRACT
from controller.shell.admin.alter_configs import handle_alter, handle_incremental
from controller.shell.admin.kip455_alter import handle_alter as handle_reassign
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import cluster, context, notified
from znodes import paths

TOPIC, BROKER = 2, 4
LEADER_REPLICAS = "leader.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"


def resource(rtype, name, **configs) -> dict:
    return {"resource_type": rtype, "resource_name": name,
            "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()]}


def incremental(rtype, name, *ops) -> dict:
    return {"resource_type": rtype, "resource_name": name,
            "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}


def config(h, path) -> dict:
    return json.loads(h.server.read(path)[0])["config"] if h.server.exists(path) is not None else {}


def codes(answer) -> list[int]:
    return [r["error_code"] for r in answer["responses"]]


async def test_alter_configs_writes_topic_and_broker_throttles_with_notifications():
    h = await cluster()
    try:
        answer = await handle_alter(context(h), 1, {"resources": [
            {"resource_type": TOPIC, "resource_name": "t", "configs": [{"name": LEADER_REPLICAS, "value": "0:1,1:2"}]},
            {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": LEADER_RATE, "value": "1000"}]},
            {"resource_type": BROKER, "resource_name": "", "configs": [{"name": LEADER_RATE, "value": "5000"}]},
        ], "validate_only": False})
        assert codes(answer) == [0, 0, 0]
        assert config(h, paths.topic_config("t")) == {LEADER_REPLICAS: "0:1,1:2"}
        assert config(h, paths.broker_config(1)) == {LEADER_RATE: "1000"}
        assert config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG)) == {LEADER_RATE: "5000"}
        assert {"topics/t", "brokers/1", "brokers/<default>"} <= notified(h)
        # AlterConfigs replaces: the rate left out goes.
        answer = await handle_alter(context(h), 0, {"resources": [
            {"resource_type": BROKER, "resource_name": "1", "configs": []}], "validate_only": False})
        assert codes(answer) == [0] and config(h, paths.broker_config(1)) == {}
    finally:
        await h.close()


async def test_incremental_set_append_subtract_delete():
    h = await cluster()
    try:
        async def inc(*ops):
            return codes(await handle_incremental(context(h), 1, {"resources": [incremental(TOPIC, "t", *ops)],
                                                                  "validate_only": False}))

        assert await inc((LEADER_REPLICAS, SET, "0:1")) == [0]
        assert await inc((LEADER_REPLICAS, APPEND, "1:2,0:1")) == [0]
        assert config(h, paths.topic_config("t")) == {LEADER_REPLICAS: "0:1,1:2"}
        assert await inc((LEADER_REPLICAS, SUBTRACT, "0:1")) == [0]
        assert config(h, paths.topic_config("t")) == {LEADER_REPLICAS: "1:2"}
        assert await inc((LEADER_REPLICAS, DELETE, None)) == [0]
        assert config(h, paths.topic_config("t")) == {}
        answer = await handle_incremental(context(h), 0, {"resources": [
            incremental(BROKER, "2", (LEADER_RATE, APPEND, "5"))], "validate_only": False})
        assert codes(answer) == [ErrorCode.INVALID_CONFIG]  # a rate is no list
    finally:
        await h.close()


async def test_bad_input_gets_kafkas_errors_and_writes_nothing():
    h = await cluster()
    try:
        before = h.server.dump()
        answers = [codes(await handle_alter(context(h), 2, {"resources": [r], "validate_only": False})) for r in [
            {"resource_type": TOPIC, "resource_name": "t", "configs": [{"name": "retention.mss", "value": "1"}]},
            {"resource_type": TOPIC, "resource_name": "t", "configs": [{"name": LEADER_REPLICAS, "value": "x"}]},
            {"resource_type": TOPIC, "resource_name": "nope", "configs": []},
            {"resource_type": TOPIC, "resource_name": "bad/name", "configs": []},
            {"resource_type": BROKER, "resource_name": "one", "configs": []},
            {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": LEADER_RATE, "value": "-5"}]},
            {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": LEADER_RATE, "value": None}]},
            {"resource_type": 3, "resource_name": "g", "configs": []},
            # a key twice (Kafka's "duplicate config keys"), the incremental rule's too
            {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": LEADER_RATE, "value": "1"},
                                                                        {"name": LEADER_RATE, "value": "2"}]},
        ]]
        assert answers == [[40], [40], [3], [17], [42], [40], [42], [42], [42]]
        # A resource named twice: every copy refused and none applied, the others applied as asked.
        answer = await handle_alter(context(h), 1, {"resources": [
            resource(TOPIC, "t", retention_ms="1"), resource(BROKER, "2", **{LEADER_RATE.replace(".", "_"): "7"}),
            resource(TOPIC, "t", retention_ms="2")], "validate_only": True})
        assert codes(answer) == [42, 0, 42]
        answer = await handle_incremental(context(h), 1, {"resources": [
            incremental(BROKER, "1", (LEADER_RATE, SET, "1")), incremental(BROKER, "1", (LEADER_RATE, SET, "2"))],
            "validate_only": False})
        assert codes(answer) == [42, 42]
        answer = await handle_alter(context(h), 0, {"resources": [
            {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": LEADER_RATE, "value": "9"}]}],
            "validate_only": True})
        assert codes(answer) == [0]
        answer = await handle_incremental(context(h), 0, {"resources": [incremental(
            BROKER, "1", (LEADER_RATE, SET, "1"), (LEADER_RATE, DELETE, None))], "validate_only": False})
        assert codes(answer) == [ErrorCode.INVALID_REQUEST]
        assert h.server.dump() == before
    finally:
        await h.close()


async def test_a_throttle_set_by_alter_configs_outlives_reassignments():
    h = await cluster()
    try:
        answer = await handle_incremental(context(h), 1, {"resources": [
            incremental(TOPIC, "t", (LEADER_REPLICAS, SET, "*")),
            incremental(BROKER, "1", (LEADER_RATE, SET, "100000000"))], "validate_only": False})
        assert codes(answer) == [0, 0]
        tp = ("t", 0)
        target = [b for b in range(1, 7) if b not in h.assignments[tp]]
        body = {"timeout_ms": 10000, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": target}]}]}
        assert (await handle_reassign(context(h), 0, body))["error_code"] == 0
        h.requested[tp] = target
        await h.run_until_quiet()
        h.check_invariants()
        assert config(h, paths.topic_config("t")) == {LEADER_REPLICAS: "*"}
        assert config(h, paths.broker_config(1)) == {LEADER_RATE: "100000000"}
    finally:
        await h.close()


async def test_every_kafka_topic_config_with_its_rule():
    """Issue 23 item 1: Kafka's topic configs are accepted, stored with a notification, and bad
    values refused naming the key and the rule (nothing written)."""
    h = await cluster()
    try:
        ctx = context(h)
        answer = await handle_incremental(ctx, 1, {"resources": [incremental(
            TOPIC, "t", ("retention.ms", SET, "3600000"), ("min.insync.replicas", SET, "2"),
            ("cleanup.policy", APPEND, "compact"), ("max.message.bytes", SET, "2000000"))], "validate_only": False})
        assert codes(answer) == [0]
        assert config(h, paths.topic_config("t")) == {
            "retention.ms": "3600000", "min.insync.replicas": "2", "cleanup.policy": "delete,compact",
            "max.message.bytes": "2000000"}
        assert "topics/t" in notified(h)
        before = h.server.dump()
        for ops, words in [
            ((("min.insync.replicas", SET, "0"),), "Invalid value 0 for configuration min.insync.replicas: "
                                                   "Value must be at least 1"),
            ((("retention.ms", SET, "1h"),), "Invalid value 1h for configuration retention.ms: Not a number of type LONG"),
            ((("cleanup.policy", SET, "erase"),), "cleanup.policy: String must be one of: compact, delete"),
            ((("compression.type", SET, "brotli"),), "compression.type: String must be one of"),
            ((("min.cleanable.dirty.ratio", SET, "1.5"),), "Value must be no more than 1"),
            ((("unclean.leader.election.enable", SET, "yes"),), "Expected value to be either true or false"),
            ((("segment.bytes", SET, "2147483648"),), "Not a number of type INT"),
            ((("retention.mss", SET, "1"),), "Unknown topic config name: retention.mss"),
            ((("retention.ms", APPEND, "1"),), "not a list"),
            ((("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")), "conflict topic config"),
            ((("remote.storage.enable", SET, "true"),), "Tiered Storage functionality is disabled"),
        ]:
            for validate_only in (True, False):
                answer = await handle_incremental(ctx, 1, {"resources": [incremental(TOPIC, "t", *ops)],
                                                           "validate_only": validate_only})
                [r] = answer["responses"]
                assert r["error_code"] == ErrorCode.INVALID_CONFIG and words in r["error_message"], (ops, r)
        assert h.server.dump() == before
        # validate_only with a good value: answered, nothing written.
        answer = await handle_alter(ctx, 1, {"resources": [resource(TOPIC, "t", segment_ms="60000")],
                                             "validate_only": True})
        assert codes(answer) == [0] and h.server.dump() == before
        # SUBTRACT to nothing keeps "" (no cleanup), as Kafka keeps it; DELETE goes back to the default.
        answer = await handle_incremental(ctx, 1, {"resources": [incremental(
            TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete,compact"), ("retention.ms", DELETE, None))],
            "validate_only": False})
        assert codes(answer) == [0]
        assert config(h, paths.topic_config("t")) == {
            "min.insync.replicas": "2", "cleanup.policy": "", "max.message.bytes": "2000000"}
    finally:
        await h.close()


async def test_broker_configs_dynamic_ones_only():
    """Issue 23 item 2: the dynamic broker configs are altered per broker and cluster-wide; a
    read-only one is refused as Kafka refuses it."""
    h = await cluster()
    try:
        ctx = context(h)
        answer = await handle_incremental(ctx, 1, {"resources": [
            incremental(BROKER, "", ("log.retention.ms", SET, "7200000"), ("min.insync.replicas", SET, "2")),
            incremental(BROKER, "2", ("replica.alter.log.dirs.io.max.bytes.per.second", SET, "1000000"),
                        ("log.retention.bytes", SET, "1048576"))], "validate_only": False})
        assert codes(answer) == [0, 0]
        assert config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG)) == {
            "log.retention.ms": "7200000", "min.insync.replicas": "2"}
        assert config(h, paths.broker_config(2)) == {
            "replica.alter.log.dirs.io.max.bytes.per.second": "1000000", "log.retention.bytes": "1048576"}
        before = h.server.dump()
        for name, value, words in [
            ("log.retention.hours", "1", "Cannot update these configs dynamically: log.retention.hours"),
            ("broker.id", "7", "Cannot update these configs dynamically: broker.id"),
            ("password.encoder.secret", "x", "Cannot update these configs dynamically"),
            ("log.dirs", "/tmp", "Cannot update these configs dynamically"),
            ("no.such.config", "1", "Unknown broker config name: no.such.config"),
            ("min.insync.replicas", "0", "Value must be at least 1"),
            ("retention.ms", "1", "Unknown broker config name: retention.ms"),  # a topic config's name
        ]:
            answer = await handle_alter(ctx, 1, {"resources": [
                {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": name, "value": value}]}],
                "validate_only": False})
            [r] = answer["responses"]
            assert r["error_code"] == ErrorCode.INVALID_CONFIG and words in r["error_message"], (name, r)
        assert h.server.dump() == before
    finally:
        await h.close()


@pytest.mark.zk
async def test_concurrent_alters_of_one_config_all_land_on_a_real_zookeeper(zk_hosts):
    """Kafka lets concurrent alters of one config all land (the last wins). On a real server
    their reads and conditional writes interleave: this instance's alters take turns, so none
    loses its write to another (before, 5 retries lost and the request answered -1 after
    writing its other resources)."""
    import asyncio

    from controller.core.config import ControllerConfig
    from controller.shell.admin.base import AdminContext
    from controller.shell.role import Role
    from znodes import store as zstore

    store = await zstore.connect(zk_hosts)
    try:
        for path in paths.PERSISTENT_PATHS:  # as a Kafka cluster's ZooKeeper has them
            await store.ensure_path(path)
        await store.create(paths.topic("t"), b'{"version":2,"partitions":{"0":[1]}}')
        role = Role(5)  # a standby serves configs too
        role.store = store
        ctx = AdminContext(role, ControllerConfig())
        answers = await asyncio.gather(*(handle_incremental(ctx, 1, {"resources": [
            incremental(BROKER, str(200 + i), ("log.retention.ms", SET, "900000")),
            incremental(TOPIC, "t", ("segment.ms", SET, str(3_700_000 + i)))], "validate_only": False}) for i in range(30)))
        assert [codes(a) for a in answers] == [[0, 0]] * 30, answers[0]
        data, _ = await store.get(paths.topic_config("t"))
        assert json.loads(data)["config"]["segment.ms"] in {str(3_700_000 + i) for i in range(30)}
    finally:
        await store.close()


async def test_a_lost_race_answers_its_resource_alone():
    """A write that other writers keep beating fails its own resource only; what landed
    before it is answered NONE, and the rest of the request goes on."""
    from controller.shell import throttle_configs

    h = await cluster()
    try:
        ctx = context(h)
        # Another writer beats every try at the topic's config.
        real = throttle_configs.BatchedWriter

        class Beaten(real):
            async def flush(self, epoch_zkversion=None):
                if any(getattr(op, "path", None) == paths.topic_config("t") for op in self._ops):
                    await h.admin.set(paths.topic_config("t"), h.server.read(paths.topic_config("t"))[0])
                return await super().flush(epoch_zkversion)

        throttle_configs.BatchedWriter = Beaten
        try:
            answer = await handle_incremental(ctx, 1, {"resources": [
                incremental(BROKER, "1", (LEADER_RATE, SET, "11")),
                incremental(TOPIC, "t", ("segment.ms", SET, "4000000")),
                incremental(BROKER, "2", (LEADER_RATE, SET, "22"))], "validate_only": False})
        finally:
            throttle_configs.BatchedWriter = real
        assert codes(answer) == [0, ErrorCode.UNKNOWN_SERVER_ERROR, 0]
        assert "kept changing" in answer["responses"][1]["error_message"]
        assert config(h, paths.broker_config(1))[LEADER_RATE] == "11" and config(h, paths.broker_config(2))[LEADER_RATE] == "22"
        assert config(h, paths.topic_config("t")).get("segment.ms") != "4000000"
    finally:
        await h.close()
