"""``reassignd controller`` settings: TOML file, REASSIGND_* environment and flags, in that
order of precedence, one model; ``--print-config``; every kind of bad value, reported with its
setting, source and reason before ZooKeeper is touched."""

from __future__ import annotations

import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from controller.core.config import FIELDS, LIVE, ConfigError, Settings, reload_changes, resolve, to_toml
from controller.shell.daemon import main
from controller.shell.options import build_parser, load_settings, parse_args, unknown_env

REPO = Path(__file__).resolve().parents[2]
REQUIRED = {"zookeeper": "127.0.0.1:2181", "id": 7, "listen": "127.0.0.1:0"}


def load(argv, env=None):
    return load_settings(parse_args(argv), env or {})


def test_flags_override_env_override_file_override_defaults(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(to_toml({**REQUIRED, "max_cluster_moves": 11, "max_incoming_per_broker": 12, "request_retries": 13}))
    env = {"REASSIGND_MAX_INCOMING_PER_BROKER": "22", "REASSIGND_REQUEST_RETRIES": "23"}
    r = load(["--config", str(path), "--request-retries", "33"], env)
    s = r.settings
    assert (s.max_cluster_moves, s.max_incoming_per_broker, s.request_retries, s.max_outgoing_per_broker) == (11, 22, 33, 10)
    assert r.origins["max_cluster_moves"] == f"file {path}"
    assert r.origins["max_incoming_per_broker"] == "env REASSIGND_MAX_INCOMING_PER_BROKER"
    assert r.origins["request_retries"] == "flag --request-retries"
    assert r.origins["max_outgoing_per_broker"] == "default"
    # the required ones may come from anywhere
    s = load([], {"REASSIGND_ZOOKEEPER": "zk1:2181,zk2:2181/kafka", "REASSIGND_ID": "3", "REASSIGND_LISTEN": "0.0.0.0:9190",
                  "REASSIGND_OPS_LISTEN": "0.0.0.0:9191", "REASSIGND_ADVERTISED_LISTEN": "ctl-3:9190"}).settings
    assert (s.zookeeper, s.id, s.listen_address, s.ops_address) == ("zk1:2181,zk2:2181/kafka", 3, ("0.0.0.0", 9190), ("0.0.0.0", 9191))
    # an empty value unsets an optional setting set below it
    s = load(["--ops-listen", ""], {"REASSIGND_OPS_LISTEN": "127.0.0.1:1", **{f"REASSIGND_{k.upper()}": str(v) for k, v in REQUIRED.items()}}).settings
    assert s.ops_listen is None


def test_every_setting_is_documented_and_is_a_flag_and_a_variable():
    readme = (REPO / "README.md").read_text()
    for name, f in FIELDS.items():  # the README's table of settings
        assert f"| `{name}` | `--{name.replace('_', '-')}` |" in readme, name
    help_text = build_parser().format_help()
    for name, f in FIELDS.items():
        assert f.description, name
        assert "--" + name.replace("_", "-") in help_text and f"REASSIGND_{name.upper()}" in help_text
    assert LIVE == {"max_incoming_per_broker", "max_outgoing_per_broker", "max_cluster_moves", "log_level",
                    "replica_movement_strategies"}


@pytest.mark.parametrize(
    "file, env, flags, expected",
    [
        ({"max_cluster_moves": 0}, {}, [], "max_cluster_moves (file {f}): Input should be greater than or equal to 1, got 0"),
        ({"max_cluster_moves": 1.5}, {}, [], "max_cluster_moves (file {f}): Input should be a valid integer"),
        ({"log_level": "LOUD"}, {}, [], "log_level (file {f}): Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
        ({"zk_session_timeout_s": 0.5}, {}, [], "zk_session_timeout_s (file {f}): Input should be greater than or equal to 1"),
        ({"listen": "9190"}, {}, [], "listen (file {f}): must be [NAME://]HOST:PORT with PORT in 0..65535, got '9190'"),
        ({"zookeeper": "h:1/bad//path"}, {}, [], "zookeeper (file {f}):"),
        ({"id": -1}, {}, [], "id (file {f}): Input should be greater than or equal to 0"),
        ({}, {"REASSIGND_ID": "seven"}, [], "id (env REASSIGND_ID): Input should be a valid integer, unable to parse string"),
        ({}, {"REASSIGND_OPS_LISTEN": "h:70000"}, [], "ops_listen (env REASSIGND_OPS_LISTEN): must be HOST:PORT"),
        ({}, {"REASSIGND_LOG_FORMAT": "xml"}, [], "log_format (env REASSIGND_LOG_FORMAT): Input should be 'text' or 'json'"),
        ({}, {}, ["--id", "2147483648"], "id (flag --id): Input should be less than or equal to 2147483647"),
        ({}, {}, ["--request-timeout-s", "soon"], "request_timeout_s (flag --request-timeout-s): Input should be a valid number"),
        ({}, {}, ["--zookeeper", ""], "zookeeper (flag --zookeeper): String should have at least 1 character"),
    ],
)
def test_a_bad_value_names_the_setting_the_source_and_the_reason(tmp_path, capsys, file, env, flags, expected):
    path = tmp_path / "c.toml"
    path.write_text(to_toml({**REQUIRED, **file}))
    expected = expected.format(f=path)
    with pytest.raises(ConfigError) as e:
        load(["--config", str(path), *flags], env)
    assert expected in str(e.value)
    # the process: exit 2 with the same message (environment as the process sees it)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert main(["--config", str(path), *flags]) == 2
    assert expected in capsys.readouterr().err


def test_every_bad_value_is_reported_at_once_and_missing_required_ones_say_how_to_give_them():
    with pytest.raises(ConfigError) as e:
        resolve(file={"max_cluster_moves": "x", "nope": 1}, file_name="c.toml", env={"REASSIGND_ID": "x"})
    text = str(e.value)
    assert "max_cluster_moves (file c.toml)" in text and "nope (file c.toml): unknown setting" in text
    assert "id (env REASSIGND_ID)" in text
    assert "zookeeper: required; give --zookeeper, REASSIGND_ZOOKEEPER or `zookeeper` in the config file" in text
    assert "listen: required" in text
    assert "id: required" not in text  # it was given, badly: said once


def test_print_config_shows_the_effective_values_and_their_sources_as_reusable_toml(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(to_toml({**REQUIRED, "max_cluster_moves": 5}))
    out = subprocess.run(
        [sys.executable, "-m", "reassignd", "controller", "--config", str(path), "--print-config", "--id", "9"],
        cwd=REPO, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "REASSIGND_LOG_FORMAT": "json"}, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = {line.split(" =")[0]: line for line in out.stdout.splitlines() if not line.startswith("#")}
    assert "# from flag --id" in lines["id"] and "id = 9" in lines["id"]
    assert f"# from file {path}" in lines["max_cluster_moves"]
    assert "# from env REASSIGND_LOG_FORMAT" in lines["log_format"]
    assert "# from default" in lines["request_timeout_s"]
    again = tmp_path / "again.toml"
    again.write_text(out.stdout)
    assert load(["--config", str(again)]).settings == load(["--config", str(path), "--id", "9"], {"REASSIGND_LOG_FORMAT": "json"}).settings
    assert tomllib.loads(out.stdout)["max_cluster_moves"] == 5


def test_a_bad_config_exits_before_touching_zookeeper(tmp_path):
    # A socket standing in for ZooKeeper: nothing may connect to it.
    with socket.socket() as zk:
        zk.bind(("127.0.0.1", 0))
        zk.listen(8)
        zk.settimeout(0.5)
        port = zk.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "reassignd", "controller", "--zookeeper", f"127.0.0.1:{port}", "--id", "1",
             "--listen", "127.0.0.1:0", "--max-cluster-moves", "0"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 2
        assert "max_cluster_moves (flag --max-cluster-moves): Input should be greater than or equal to 1" in out.stderr
        with pytest.raises(TimeoutError):
            zk.accept()


def test_reload_tells_live_changes_from_those_that_need_a_restart():
    old = Settings(**REQUIRED)
    new = Settings(**{**REQUIRED, "max_cluster_moves": 7, "log_level": "DEBUG", "request_timeout_s": 1.0})
    live, restart = reload_changes(old, new)
    assert live == {"max_cluster_moves": (1000, 7), "log_level": ("INFO", "DEBUG")}
    assert restart == ["request_timeout_s"]


def test_unknown_reassignd_variables_are_found_but_other_commands_variables_are_not():
    env = {"REASSIGND_MAX_CLUSTER_MOVE": "3", "REASSIGND_SPARK_DRIVER_MEMORY": "2g", "REASSIGND_ID": "1", "HOME": "/"}
    assert unknown_env(env) == ["REASSIGND_MAX_CLUSTER_MOVE"]
