"""Every admin API the controller serves, fed seeded random requests that decode (names that
exist and names that cannot, ids of live brokers and hostile integers, empty and oversized
arrays): each gets an answer, no handler fails with an unexpected exception (the handler logs
"<API> v<N> failed" with its traceback and answers UNKNOWN_SERVER_ERROR), and the controller is
still the active one and still answers afterwards. The decoder's own fuzzing is
tests/protocol/test_fuzz.py; this one is what the handlers do with what decodes."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import subprocess
import sys
import uuid

import pytest

from controller.core.config import ControllerConfig
from controller.shell.admin.registry import build_table
from protocol.registry import REGISTRY
from protocol.spec import INT_RANGES
from tests.admin.cluster import AdminCluster, Wire
from tests.e2e.processes import REPO

pytestmark = pytest.mark.zk

SEED = 20261129
# Requests per (api, version): about 2,300 in all, seconds against real ZooKeeper; FUZZ_PER_VERSION=200
# for a longer search (seeds 1-8 at 40-200 were clean once the SCRAM names were fixed).
PER_VERSION = int(os.environ.get("FUZZ_PER_VERSION", "20"))
TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 1]}, "logs": {0: [3, 4, 1]}}
WORDS = ["orders", "logs", "", ".", "..", "a/b", "x" * 300, "\x00", "é", "__consumer_offsets", "new-topic",
         "orders ", "ORDERS", "*", "User:*", "-1", "PLAINTEXT", "min.insync.replicas", "cleanup.policy",
         "retention.ms", "leader.replication.throttled.rate", "follower.replication.throttled.replicas"]
# Answers may legitimately wait (a CreateTopics' timeout_ms, AlterPartition's decision): bounded
# by the config below and the handlers' own caps.
ANSWER_TIMEOUT_S = 40.0


def _value(f, version, rng, depth):
    if version in f.nullable and rng.random() < 0.15:
        return None
    k = f.kind
    if k in INT_RANGES:
        lo, hi = INT_RANGES[k]
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, 1, 2, 3, 4, 101, rng.randint(lo, hi), rng.randint(0, 5)])
    if k == "float64":
        return rng.choice([0.0, -1.0, 1e308, float("nan"), float("inf"), rng.uniform(-1e9, 1e9)])
    if k == "bool":
        return rng.random() < 0.5
    if k == "uuid":
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if k == "string":
        return rng.choice(WORDS) if rng.random() < 0.8 else "".join(rng.choice("abc./-_é\x01") for _ in range(rng.randint(0, 9)))
    if k in ("bytes", "records"):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 12)))
    if k == "array":
        n = rng.choice([0, 1, 1, 2, 3]) if depth < 3 else 0
        if f.element == "struct":
            return [_struct(f.struct, version, rng, depth + 1) for _ in range(n)]
        from protocol.codegen import element_field

        ef = element_field(f)
        return [_value(ef, version, rng, depth) for _ in range(n)]
    return _struct(f.struct, version, rng, depth + 1)


# A client's own wait (DeleteTopics' timeout_ms up to 2^31 ms is honoured, as Kafka does, while
# the registered brokers here never answer a StopReplica): kept short, any sign.
WAITS = ("timeout_ms",)


def _struct(s, version, rng, depth=0):
    body = {f.key: _value(f, version, rng, depth) for f in s.fields if version in f.versions}
    for key in WAITS:
        if key in body:
            body[key] = rng.choice([-1, 0, 1, 100, 1000])
    return body


def _requests(rng):
    for key, api in sorted(build_table().items()):
        spec = REGISTRY.requests[key]
        for version in range(api.min_version, api.max_version + 1):
            for _ in range(PER_VERSION):
                yield api.name, key, version, _struct(spec.struct, version, rng)


class _Failures(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if record.exc_info and not record.getMessage().startswith("reload"):
            self.records.append(record)


# Without a security file (everyone may do everything), and with Kafka's authorizer on: the
# requests' own CreateAcls and DeleteAcls then shape what the later ones may do.
# (An authorizer needs a ZooKeeper only the service may change: a digest identity and the
# secure ACLs, which `reassignd zk secure-acls` puts on what the test cluster wrote.)
ZK_IDENTITY = {"zookeeper.auth.digest": "reassignd:fuzz-secret", "zookeeper.set.acl": "true"}
SECURITY = {"open": None,
            "authorizer": {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                           "allow.everyone.if.no.acl.found": "true", **ZK_IDENTITY}}


def _secure(hosts: str, work) -> None:
    zk_config = work / "zk.properties"
    zk_config.write_text("".join(f"{k}={v}\n" for k, v in ZK_IDENTITY.items()))
    done = subprocess.run([sys.executable, "-m", "reassignd", "zk", "secure-acls", "--zookeeper", hosts,
                           "--zk-config", str(zk_config)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _unsecure(hosts: str) -> None:
    """Open every znode's ACL again with the service's identity, so that the fixture can delete
    the test's tree."""
    from kazoo.client import KazooClient
    from kazoo.security import OPEN_ACL_UNSAFE

    zk = KazooClient(hosts=hosts, auth_data=[("digest", ZK_IDENTITY["zookeeper.auth.digest"])])
    zk.start(timeout=20)
    try:
        todo = ["/"]
        while todo:
            path = todo.pop()
            zk.set_acls(path, OPEN_ACL_UNSAFE)
            todo += [f"{path.rstrip('/')}/{child}" for child in zk.get_children(path)]
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("security", sorted(SECURITY))
async def test_random_requests_get_answers_and_break_nothing(zk_hosts, security, tmp_path):
    from controller.shell.security.config import SecurityConfig

    rng = random.Random(SEED)
    failures = _Failures()
    logging.getLogger().addHandler(failures)
    config = ControllerConfig(zk_session_timeout_s=6.0, request_timeout_s=1.0, retry_backoff_s=0.5)
    props = SECURITY[security]
    cluster = AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS, config=config,
                           security=SecurityConfig.from_properties(props) if props else None)
    if props:
        await asyncio.to_thread(_secure, zk_hosts, tmp_path)
    try:
        async with cluster as c:
            active = await c.wait_active()
            sent = 0
            for name, key, version, body in _requests(rng):
                wire = await Wire.open(c.addr(active))
                try:
                    cid = wire.send(key, version, body)
                    try:
                        header, _ = await wire.recv(key, version, timeout=ANSWER_TIMEOUT_S)
                        assert header["correlation_id"] == cid
                    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError) as e:
                        pytest.fail(f"{name} v{version} gave no answer ({e!r}) on {body!r}")
                finally:
                    await wire.close()
                sent += 1
            assert sent > 2000
            assert await c.wait_active() == active  # still the controller, still loaded
            # It still answers, with what ZooKeeper holds (the requests may have created and
            # deleted topics: DeleteTopics and CreateTopics are among them).
            answer = await c.call(active, 3, 1, {"topics": None})
            on_zk = set(await asyncio.to_thread(c.kafka.zk.get_children, "/brokers/topics"))
            marked = set(await asyncio.to_thread(c.kafka.zk.get_children, "/admin/delete_topics"))
            assert {t["name"] for t in answer["topics"]} == on_zk - marked
    finally:
        logging.getLogger().removeHandler(failures)
        if props:
            await asyncio.to_thread(_unsecure, zk_hosts)
    assert not failures.records, "\n".join(
        f"{r.getMessage()}: {r.exc_info[1]!r}" for r in failures.records[:40])
