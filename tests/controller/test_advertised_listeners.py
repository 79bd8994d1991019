"""--advertised-listen as Kafka's advertised.listeners: a bare HOST:PORT for the first listener
(as before) or NAME://HOST:PORT for any of them; a listener bound to a wildcard (0.0.0.0, ::)
must be advertised, as Kafka refuses to advertise one. Before, only the first listener could be
advertised, and a second one bound to 0.0.0.0 was registered at 0.0.0.0 in
/reassignd/controllers, where no client (nor a simulated broker's ControlledShutdown or
AlterPartition) can connect."""

from __future__ import annotations

import asyncio
import json

import pytest

pytestmark = pytest.mark.zk

from controller.core.config import ConfigError, resolve
from controller.core.listeners import Listener, advertised_addresses, parse_listeners
from controller.shell.daemon import ControllerDaemon

REQUIRED = {"zookeeper": "127.0.0.1:1", "id": "1"}


@pytest.mark.parametrize("listen, advertised, expected", [
    ("127.0.0.1:9190", None, {"PLAINTEXT": ("127.0.0.1", 9190)}),
    ("0.0.0.0:9190", "ctl-1:9190", {"PLAINTEXT": ("ctl-1", 9190)}),
    ("INTERNAL://127.0.0.1:9190,SECURE://0.0.0.0:9193", "SECURE://ctl-1.example:9193",
     {"INTERNAL": ("127.0.0.1", 9190), "SECURE": ("ctl-1.example", 9193)}),
    ("INTERNAL://0.0.0.0:9190,SECURE://0.0.0.0:9193", "internal://10.0.0.5:9190,SECURE://ctl-1:443",
     {"INTERNAL": ("10.0.0.5", 9190), "SECURE": ("ctl-1", 443)}),
])
def test_each_listener_is_told_where_clients_reach_it(listen, advertised, expected):
    assert advertised_addresses(parse_listeners(listen), advertised) == expected
    resolve(flags={**REQUIRED, "listen": listen, "advertised_listen": advertised})  # accepted as settings


@pytest.mark.parametrize("listen, advertised, message", [
    ("0.0.0.0:9190", None, "listener PLAINTEXT binds 0.0.0.0"),
    ("[::]:9190", None, "binds ::"),
    ("INTERNAL://127.0.0.1:9190,SECURE://0.0.0.0:9193", "ctl-1:9190", "listener SECURE binds 0.0.0.0"),
    ("127.0.0.1:9190", "OTHER://ctl-1:9190", "OTHER is none of the listeners"),
    ("127.0.0.1:9190", "ctl-1:0", "port 0"),
    ("0.0.0.0:9190", "0.0.0.0:9190", "binds 0.0.0.0"),
])
def test_what_no_client_can_reach_is_refused(listen, advertised, message):
    with pytest.raises(ValueError, match=message):
        advertised_addresses(parse_listeners(listen), advertised)
    with pytest.raises(ConfigError, match=message):
        resolve(flags={**REQUIRED, "listen": listen, "advertised_listen": advertised})


def test_the_controller_exits_2_on_a_wildcard_it_would_advertise(capsys):
    from controller.shell.daemon import main

    assert main(["--zookeeper", "127.0.0.1:1", "--id", "1", "--listen", "0.0.0.0:0"]) == 2
    assert "--advertised-listen PLAINTEXT://HOST:PORT" in capsys.readouterr().err


async def test_every_listener_is_registered_at_its_advertised_address(zk_hosts):
    from tests.client.cluster_zk import KafkaZk

    kafka = KafkaZk(zk_hosts)
    kafka.populate(brokers=(1,), topics={})
    config = resolve(flags={"zookeeper": zk_hosts, "id": "101", "listen": "INTERNAL://127.0.0.1:0,SECURE://0.0.0.0:0",
                            "advertised_listen": "SECURE://ctl-1.example:9193"}).settings
    from controller.shell.security.config import SecurityConfig

    security = SecurityConfig.from_properties({"listener.security.protocol.map": "INTERNAL:PLAINTEXT,SECURE:PLAINTEXT"})
    daemon = ControllerDaemon(zk_hosts, 101, config.listeners, config, security=security)
    task = asyncio.create_task(daemon.run())
    try:
        async with asyncio.timeout(20):
            while not kafka.zk.exists("/reassignd/controllers/101"):
                await asyncio.sleep(0.02)
        doc = json.loads(kafka.zk.get("/reassignd/controllers/101")[0])
        internal = daemon.listeners[0].port
        assert doc["endpoints"] == [f"INTERNAL://127.0.0.1:{internal}", "SECURE://ctl-1.example:9193"]
        assert (doc["host"], doc["port"]) == ("127.0.0.1", internal)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        kafka.close()
