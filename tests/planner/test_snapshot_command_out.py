"""``reassignd snapshot``'s --out and --timeout, past test_snapshot_command_args.py: an --out that
cannot be written is named with the OS's own reason (a parent that is a file was "no such
directory"), --timeout is refused as the other commands' numeric options are (argparse's usage
and the value as typed: "-1" was echoed "-1.0", without the usage), and nothing is lost: a
cluster that cannot be read leaves the file it would replace as it was, and no probe or
temporary beside it."""

from __future__ import annotations

import pytest

from reassignd import snapshot as command
from spark_jobs.errors import SnapshotError

NOBODY = "127.0.0.1:1"


@pytest.fixture
def no_read(monkeypatch):
    """ZooKeeper must not be read: the arguments are refused first."""
    async def read_cluster(*args, **kwargs):
        raise AssertionError("ZooKeeper was read before the arguments were checked")

    monkeypatch.setattr(command, "read_cluster", read_cluster)


@pytest.mark.parametrize("where, reason", [
    ("parent is a file", "Not a directory"),
    ("missing directory", "No such file or directory"),
    ("a directory", "Is a directory"),
])
def test_an_unwritable_out_names_the_file_and_the_os_error(where, reason, tmp_path, capsys, no_read):
    if where == "parent is a file":
        (tmp_path / "afile").write_text("")
        out = tmp_path / "afile" / "c.json"
    elif where == "missing directory":
        out = tmp_path / "no" / "c.json"
    else:
        out = tmp_path / "d.json"
        out.mkdir()
    code = command.main(["--zookeeper", NOBODY, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--out {out}" in err and reason in err, err
    assert "ZooKeeper" not in err and NOBODY not in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e999", "ten"])
def test_timeout_is_refused_as_the_other_numeric_options_are(value, tmp_path, capsys, no_read):
    code = command.main(["--zookeeper", NOBODY, "--out", str(tmp_path / "c.json"), "--timeout", value])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("usage: reassignd snapshot"), err
    assert f"argument --timeout: expected a positive number of seconds, got {value!r}" in err, err
    assert not list(tmp_path.iterdir())


def test_a_read_that_fails_keeps_the_file_it_would_replace(tmp_path, capsys, monkeypatch):
    out = tmp_path / "c.json"
    out.write_bytes(b"the previous snapshot")

    async def read_cluster(*args, **kwargs):
        raise SnapshotError(NOBODY, "cannot read the cluster: could not connect")

    monkeypatch.setattr(command, "read_cluster", read_cluster)
    assert command.main(["--zookeeper", NOBODY, "--out", str(out)]) == 1
    assert "cannot read the cluster" in capsys.readouterr().err
    assert out.read_bytes() == b"the previous snapshot"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]  # no probe, no temporary
