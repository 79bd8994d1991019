"""`reassignd sim` argument checking: every bad argument is a clear error and exit code 2."""

import pytest

from reassignd.sim import main, parse_args, settings_from

ZK = "127.0.0.1:2181/sim"


@pytest.mark.parametrize(
    "argv,message",
    [
        ([], "required"),
        (["--zookeeper", ZK], "--brokers"),
        (["--brokers", "3"], "--zookeeper"),
        (["--zookeeper", ZK, "--brokers", "0"], "positive integer"),
        (["--zookeeper", ZK, "--brokers", "two"], "positive integer"),
        (["--zookeeper", "", "--brokers", "1"], "names no host"),
        (["--zookeeper", "h:99999", "--brokers", "1"], "bad port"),
        (["--zookeeper", ZK, "--brokers", "2", "--racks", "3"], "--racks 3 is more than --brokers 2"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "t:1:3"], "replication factor 3"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "t:1"], "NAME:PARTITIONS:RF"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "t:0:1"], "partitions must be a positive"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "bad/name:1:1"], "illegal"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "t:1:1:10XB"], "unknown unit"),
        (["--zookeeper", ZK, "--brokers", "2", "--topics", "t:1:1", "t:2:1"], "given twice"),
        (["--zookeeper", ZK, "--brokers", "2", "--bandwidth", "0"], "--bandwidth must be positive"),
        (["--zookeeper", ZK, "--brokers", "2", "--bandwidth", "fast"], "not a size"),
        (["--zookeeper", ZK, "--brokers", "2", "--base-port", "65535"], "leaves no room"),
        (["--zookeeper", ZK, "--brokers", "2", "--control-port", "70000"], "not a port"),
        (["--zookeeper", ZK, "--brokers", "2", "--first-id", "-1"], "non-negative"),
        (["--zookeeper", ZK, "--brokers", "2", "--unknown"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "reassignd sim: error:" in err and message in err


def test_good_arguments_make_the_settings():
    args = parse_args(
        ["--zookeeper", ZK, "--brokers", "4", "--first-id", "10", "--racks", "2", "--topics", "a:3:2:10MiB",
         "b:1:1", "--topics", "c:2:4", "--bandwidth", "5MB", "--produce-rate", "2KiB", "--message-bytes", "512"]
    )
    assert [t.name for t in args.topics] == ["a", "b", "c"]
    assert args.topics[0].size_bytes == 10 * 1024 * 1024
    settings = settings_from(args)
    assert settings.broker_ids == [10, 11, 12, 13]
    assert settings.rack_of(12) == "rack-0" and settings.rack_of(13) == "rack-1"
    assert settings.copy.bandwidth == 5_000_000
    assert settings.copy.produce_bytes == 2048 and settings.copy.produce_messages == 4


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "--zookeeper" in capsys.readouterr().out


def test_zk_config_is_read_and_checked_at_start(tmp_path, capsys):
    from znodes.security import ZkSecurity

    assert parse_args(["--zookeeper", ZK, "--brokers", "1"]).zk_security == ZkSecurity()  # none: unauthenticated
    good = tmp_path / "zk.properties"
    good.write_text("zookeeper.auth.digest=reassignd:s3cret\nzookeeper.set.acl=true\n")
    security = parse_args(["--zookeeper", ZK, "--brokers", "1", "--zk-config", str(good)]).zk_security
    assert security.digest == ("reassignd", "s3cret") and security.set_acl
    bad = tmp_path / "bad.properties"
    bad.write_text("zookeeper.set.acl=true\n")  # secure ACLs need an identity to grant
    for path, message in ((bad, "zookeeper.auth.digest"), (tmp_path / "missing", "No such file")):
        assert main(["--zookeeper", ZK, "--brokers", "1", "--zk-config", str(path)]) == 2
        err = capsys.readouterr().err
        assert "reassignd sim: error: --zk-config" in err and message in err
