"""Snapshot files: round trips, deterministic bytes, and clear errors for bad files."""

from __future__ import annotations

import json

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs import snapshot
from spark_jobs.errors import SnapshotError
from tests.planner.strategies import clusters

GOOD = {
    "version": 1,
    "brokers": [{"id": 2, "host": "b2", "port": 9092, "rack": "r2"}, {"id": 1, "host": "b1", "port": 9092, "rack": "r1"}],
    "topics": [
        {"name": "orders", "partitions": [{"partition": 1, "replicas": [2, 1], "leader": 2, "sizes": [10, None]},
                                          {"partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2]}]},
        {"name": "audit", "partitions": [{"partition": 0, "replicas": [1]}]},
    ],
}


@given(clusters(racks=False), st.sampled_from(["json", "msgpack"]))
def test_round_trip_is_lossless_and_deterministic(generated, fmt):
    snap, _ = generated
    norm = snapshot.validate(snap)
    data = snapshot.dumps(norm, fmt)
    again = snapshot.loads(data, fmt)
    assert again == norm
    assert snapshot.dumps(again, fmt) == data


@pytest.mark.parametrize("name", ["c.json", "c.msgpack", "c.mpk"])
def test_files_by_extension(tmp_path, name):
    path = tmp_path / name
    snapshot.dump(GOOD, path)
    loaded = snapshot.load(path)
    assert [b["id"] for b in loaded["brokers"]] == [1, 2]
    assert [t["name"] for t in loaded["topics"]] == ["audit", "orders"]
    assert [p["partition"] for p in loaded["topics"][1]["partitions"]] == [0, 1]
    raw = path.read_bytes()
    obj = json.loads(raw) if name.endswith(".json") else msgpack.unpackb(raw)
    assert list(obj) == sorted(obj)  # keys in sorted order
    assert obj["version"] == snapshot.SNAPSHOT_VERSION


def _mutate(fn):
    obj = json.loads(json.dumps(GOOD))
    fn(obj)
    return obj


BAD = [
    (lambda o: o.pop("version"), "missing 'version'"),
    (lambda o: o.update(version=2), "unsupported snapshot version 2"),
    (lambda o: o.update(brokers={}), "brokers: must be an array"),
    (lambda o: o["brokers"].append({"id": 1}), "brokers[2].id: duplicate broker 1"),
    (lambda o: o["brokers"][0].update(id=-1), "brokers[0].id: broker id must be an int"),
    (lambda o: o["brokers"][0].update(id=True), "brokers[0].id: broker id must be an int"),
    (lambda o: o["brokers"][0].update(port="x"), "brokers[0].port: must be a port number"),
    (lambda o: o["topics"].append({"name": "audit", "partitions": []}), "topics[2].name: duplicate topic 'audit'"),
    (lambda o: o["topics"][0].update(name="bad name"), "has a character other than"),
    (lambda o: o["topics"][0]["partitions"][0].update(replicas=[1, 7]), "replica on unknown broker 7"),
    (lambda o: o["topics"][0]["partitions"][0].update(replicas=[1, 1]), "broker listed twice"),
    (lambda o: o["topics"][0]["partitions"][0].update(replicas=[]), "must be a non-empty array"),
    (lambda o: o["topics"][0]["partitions"][0].update(replicas=[1.0, 2]), "broker ids must be ints"),
    (lambda o: o["topics"][0]["partitions"][0].update(leader=5), "leader: must be -1 or one of the replicas"),
    (lambda o: o["topics"][0]["partitions"][0].update(sizes=[1]), "sizes: must have one entry per replica"),
    (lambda o: o["topics"][0]["partitions"][0].update(sizes=[1, -5]), "sizes are ints from 0 to"),
    (lambda o: o["topics"][0]["partitions"][0].update(sizes=[1, 10**30]), "sizes are ints from 0 to"),  # past int64
    (lambda o: o["topics"][0]["partitions"][1].update(partition=1), "duplicate partition orders-1"),
]


@pytest.mark.parametrize("mutate,message", BAD)
def test_bad_snapshots_are_refused_with_the_element_named(tmp_path, mutate, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_mutate(mutate)))
    with pytest.raises(SnapshotError) as e:
        snapshot.load(path)
    assert message in str(e.value)
    assert str(path) in str(e.value)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(SnapshotError, match="no such file"):
        snapshot.load(tmp_path / "missing.json")
    with pytest.raises(SnapshotError, match="unknown snapshot extension '.yaml'"):
        snapshot.load(tmp_path / "c.yaml")
    (tmp_path / "trunc.json").write_text('{"version": 1, "brokers": [')
    with pytest.raises(SnapshotError, match="malformed JSON at line 1"):
        snapshot.load(tmp_path / "trunc.json")
    (tmp_path / "junk.msgpack").write_bytes(b"\xc1\xc1\xc1")
    with pytest.raises(SnapshotError, match="malformed msgpack"):
        snapshot.load(tmp_path / "junk.msgpack")
    (tmp_path / "list.msgpack").write_bytes(msgpack.packb([1, 2]))
    with pytest.raises(SnapshotError, match="a snapshot is a JSON object, got array"):
        snapshot.load(tmp_path / "list.msgpack")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(SnapshotError, match="is a directory"):
        snapshot.load(tmp_path / "dir.json")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SnapshotError, match="nested too deeply"):
        snapshot.load(tmp_path / "deep.json")
    (tmp_path / "latin.json").write_bytes(b'{"version": 1, "x": "\xe9"}')
    with pytest.raises(SnapshotError, match="not UTF-8"):
        snapshot.load(tmp_path / "latin.json")


def test_validate_never_modifies_its_input():
    before = json.dumps(GOOD, sort_keys=True)
    snapshot.validate(GOOD)
    assert json.dumps(GOOD, sort_keys=True) == before


@pytest.mark.parametrize("command", ["snapshot", "planner"])
def test_zk_config_errors_are_usage_errors(tmp_path, capsys, command):
    """``--zk-config`` is read by znodes.security.ZkSecurity, as ``reassignd sim``'s: a missing or
    invalid file exits 2 naming the option, before anything connects."""
    from reassignd import planner as cli
    from reassignd import snapshot as snapshot_command

    def run(config) -> int:
        if command == "snapshot":
            return snapshot_command.main(["--zookeeper", "127.0.0.1:1", "--out", str(tmp_path / "c.json"),
                                  "--zk-config", str(config)])
        return cli.main(["serve", "--zookeeper", "127.0.0.1:1", "--listen", "127.0.0.1:0",
                         "--zk-config", str(config)])

    prog = "reassignd snapshot" if command == "snapshot" else "reassignd planner serve"
    bad = tmp_path / "zk.properties"
    for text, message in [(None, "No such file"), ("zookeeper.auth.digest=nopassword\n", "USER:PASSWORD"),
                          ("zookeeper.set.acl=true\n", "needs zookeeper.auth.digest")]:
        if text is not None:
            bad.write_text(text)
        assert run(bad) == 2
        err = capsys.readouterr().err
        assert f"{prog}: error: --zk-config" in err and message in err, err
    assert not (tmp_path / "c.json").exists()
