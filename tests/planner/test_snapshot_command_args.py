"""``reassignd snapshot``'s arguments, checked before ZooKeeper is read (an outside probe:
``--timeout nan`` was taken, and an --out that cannot be written was reported as "cannot read
<ZooKeeper>" once the whole cluster had been read)."""

from __future__ import annotations

import os
import time

import pytest

from reassignd import snapshot as command
from spark_jobs import snapshot

NOBODY = "127.0.0.1:1"  # no ZooKeeper: any attempt to read one would fail, slowly


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_a_timeout_that_is_no_positive_number_is_a_usage_error(value, tmp_path, capsys):
    code = command.main(["--zookeeper", NOBODY, "--out", str(tmp_path / "c.json"), "--timeout", value])
    assert code == 2
    assert "--timeout" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["missing directory", "a directory"])
def test_an_out_that_cannot_be_written_is_named_before_zookeeper_is_read(where, tmp_path, capsys):
    out = tmp_path / "no" / "such" / "c.json" if where == "missing directory" else tmp_path / "dir.json"
    if where == "a directory":
        out.mkdir()
    began = time.monotonic()
    code = command.main(["--zookeeper", NOBODY, "--out", str(out), "--timeout", "30"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(out) in err and NOBODY not in err, err
    assert time.monotonic() - began < 5  # no ZooKeeper connection was tried
    assert not list(tmp_path.rglob("*.tmp*"))


def test_a_failed_write_keeps_the_file_it_would_replace_and_leaves_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "c.json"
    out.write_bytes(b"the previous snapshot")
    snap = {"version": 1, "cluster": {"warnings": []}, "brokers": [], "topics": []}

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        snapshot.dump(snapshot.validate(snap, "test") if hasattr(snapshot, "validate") else snap, out)
    assert out.read_bytes() == b"the previous snapshot"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]
