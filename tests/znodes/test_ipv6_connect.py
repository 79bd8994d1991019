"""A ZooKeeper reached over IPv6: ``--zookeeper [::1]:2181`` (and the daemon's connect string).

The store parsed the bracketed host, then joined kazoo's (host, port) pairs back without the
brackets, so kazoo read ``::1:2181`` as a bad hostname and nothing could connect.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from znodes.launcher import LocalZooKeeper
from znodes.paths import host_port
from znodes.store import connect


def test_host_port_brackets_ipv6_hosts_only():
    assert host_port("::1", 2181) == "[::1]:2181"
    assert host_port("fd00::2", 12) == "[fd00::2]:12"
    assert host_port("127.0.0.1", 2181) == "127.0.0.1:2181"
    assert host_port("zk-0.example", 2181) == "zk-0.example:2181"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def zk6(tmp_path_factory):
    assert _ipv6_loopback(), "this machine has ::1; the test needs it"
    server = LocalZooKeeper(port=0, host="::1", data_dir=tmp_path_factory.mktemp("zk6"), fsync=False,
                            stop_with_parent=True)
    server.start(timeout=60)
    try:
        yield server
    finally:
        server.stop()


def test_the_store_connects_to_a_bracketed_ipv6_host_with_a_chroot(zk6):
    port = zk6.members[0].client_port
    assert zk6.connect_string == f"[::1]:{port}"

    async def go():
        store = await connect(f"[::1]:{port}/v6", timeout=20, create_chroot=True)
        try:
            await store.create("/hello", b"world")
            data, _ = await store.get("/hello")
            return data, store.hosts
        finally:
            await store.close()

    data, hosts = asyncio.run(go())
    assert data == b"world"
    assert hosts == f"[::1]:{port}/v6"  # what it reports can be given back to connect
