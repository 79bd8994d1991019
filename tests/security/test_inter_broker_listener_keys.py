"""Kafka's two ways of naming the brokers' listener in a broker's security file,
``inter.broker.listener.name`` and ``security.inter.broker.protocol`` (the listener named after
its protocol), read from the controller's ``--security-config``: used when the
``broker_listener`` setting is left at its default, refused when it names another listener or
when both keys are set (Kafka refuses the pair)."""

import logging

import pytest

from controller.core.config import ConfigError, resolve
from controller.shell import daemon as daemon_module
from controller.shell.options import broker_listener_named
from controller.shell.security.config import SecurityConfig

REQUIRED = {"zookeeper": "127.0.0.1:1", "id": "1", "listen": "127.0.0.1:0"}


@pytest.mark.parametrize("props, named", [
    ({}, None),
    ({"inter.broker.listener.name": "internal"}, "INTERNAL"),
    ({"security.inter.broker.protocol": "sasl_ssl"}, "SASL_SSL"),
    ({"security.inter.broker.protocol": "SSL", "listener.security.protocol.map": "SSL:SSL"}, "SSL"),
])
def test_the_file_names_the_listener(props, named):
    assert SecurityConfig.from_properties(props).inter_broker_listener == named


@pytest.mark.parametrize("props, message", [
    ({"inter.broker.listener.name": "INTERNAL", "security.inter.broker.protocol": "SSL"}, "only one of"),
    ({"security.inter.broker.protocol": "TLS"}, "'TLS' is not one of"),
])
def test_bad_keys_are_refused_at_start(props, message):
    with pytest.raises(ValueError, match=message):
        SecurityConfig.from_properties(props)


def test_the_file_wins_over_the_default_only():
    default = resolve(flags=REQUIRED)
    assert default.origins["broker_listener"] == "default"
    assert broker_listener_named(default, None).broker_listener == "PLAINTEXT"
    assert broker_listener_named(default, "INTERNAL").broker_listener == "INTERNAL"
    same = resolve(flags={**REQUIRED, "broker_listener": "internal"})
    assert broker_listener_named(same, "INTERNAL").broker_listener == "internal"
    other = resolve(flags={**REQUIRED, "broker_listener": "PLAINTEXT"})
    with pytest.raises(ConfigError, match=r"broker_listener \(flag --broker-listener\) is 'PLAINTEXT'.*'SSL'"):
        broker_listener_named(other, "SSL")


def _main(tmp_path, text, *flags):
    path = tmp_path / "server.properties"
    path.write_text(text)
    return daemon_module.main(["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "127.0.0.1:0",
                               "--security-config", str(path), *flags])


def test_the_controller_speaks_the_named_listener(tmp_path, monkeypatch):
    seen = {}

    async def serve(daemon, shutdown_timeout, reread):
        seen["daemon"], seen["reread"] = daemon, reread
        return 0

    monkeypatch.setattr(daemon_module, "_serve", serve)
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        assert _main(tmp_path, "security.inter.broker.protocol=SSL\n") == 0
    finally:
        root.handlers[:] = handlers
    daemon = seen["daemon"]
    assert daemon.config.broker_listener == "SSL"  # the brokers' endpoints looked up by this name
    assert daemon._transport_factory.keywords["security"].protocol == "SSL"  # and spoken with TLS
    assert seen["reread"]().broker_listener == "SSL"  # a reload keeps it (no restart-only change)


def test_the_controller_exits_2_on_a_conflict(tmp_path, capsys):
    assert _main(tmp_path, "inter.broker.listener.name=INTERNAL\n", "--broker-listener", "EXTERNAL") == 2
    assert "'INTERNAL'" in capsys.readouterr().err
    assert _main(tmp_path, "inter.broker.listener.name=A\nsecurity.inter.broker.protocol=SSL\n") == 2
    assert "only one of" in capsys.readouterr().err
