"""Admin-API test cluster: Kafka-format znodes on a real ZooKeeper (tests.client.cluster_zk),
controller daemons run in-process (their real listeners on loopback sockets), and a small
wire client that speaks to them.

    async with AdminCluster(zk_hosts, controllers=(101, 102)) as c:
        active = await c.wait_active()
        body = await c.call(active, 3, 1, {"topics": None})
"""

from __future__ import annotations

import asyncio
import json
import struct

import protocol
from controller.core.config import ControllerConfig
from controller.shell.daemon import ControllerDaemon
from tests.client.cluster_zk import KafkaZk, dumps


class Wire:
    """One client connection: send requests, read responses (in order)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self._correlation = 0

    @classmethod
    async def open(cls, addr: tuple[str, int]) -> Wire:
        return cls(*await asyncio.open_connection(*addr))

    def send(self, key: int, version: int, body: dict) -> int:
        self._correlation += 1
        self.writer.write(protocol.encode_request(key, version, self._correlation, "tests", body))
        return self._correlation

    def send_raw(self, frame: bytes) -> None:
        self.writer.write(frame)

    async def read_frame(self, timeout: float = 10.0) -> bytes:
        async with asyncio.timeout(timeout):
            head = await self.reader.readexactly(4)
            (size,) = struct.unpack(">i", head)
            return head + await self.reader.readexactly(size)

    async def recv(self, key: int, version: int, timeout: float = 10.0) -> tuple[dict, dict]:
        return protocol.decode_response(key, version, await self.read_frame(timeout))

    async def call(self, key: int, version: int, body: dict) -> dict:
        cid = self.send(key, version, body)
        header, answer = await self.recv(key, version)
        assert header["correlation_id"] == cid
        return answer

    async def closed(self, timeout: float = 10.0) -> bool:
        """True once the server has closed the connection (EOF, nothing else sent)."""
        async with asyncio.timeout(timeout):
            return await self.reader.read(1) == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


class AdminCluster:
    """Znodes of a small Kafka cluster plus in-process controllers on real sockets."""

    def __init__(self, zk_hosts: str, controllers=(101, 102), config: ControllerConfig | None = None,
                 brokers=(1, 2, 3, 4), topics=None, racks=None, security=None):
        self.zk_hosts = zk_hosts
        self.ids = tuple(controllers)
        self.config = config or ControllerConfig(zk_session_timeout_s=4.0, request_timeout_s=1.0, retry_backoff_s=0.5)
        self.kafka = KafkaZk(zk_hosts)
        self.kafka.populate(brokers=brokers, topics=topics, racks=racks)
        self.security = security  # controller.shell.security.config.SecurityConfig; None: no file
        self.daemons: dict[int, ControllerDaemon] = {}
        self.tasks: dict[int, asyncio.Task] = {}

    async def __aenter__(self) -> AdminCluster:
        for cid in self.ids:
            await self.start(cid)
        return self

    async def __aexit__(self, *exc) -> None:
        for cid in list(self.tasks):
            await self.stop(cid)
        await asyncio.to_thread(self.kafka.close)

    async def start(self, cid: int) -> None:
        daemon = ControllerDaemon(self.zk_hosts, cid, ("127.0.0.1", 0), self.config, security=self.security)
        self.daemons[cid] = daemon
        self.tasks[cid] = asyncio.create_task(daemon.run())
        async with asyncio.timeout(20):
            while daemon.listener._server is None:
                await asyncio.sleep(0.01)

    async def stop(self, cid: int) -> None:
        task = self.tasks.pop(cid)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    def addr(self, cid: int) -> tuple[str, int]:
        listener = self.daemons[cid].listener
        return listener.host, listener.port

    async def wait_active(self, timeout: float = 40.0) -> int:
        """The id of the active instance once it has loaded its state, and every instance has
        registered its listener."""
        async with asyncio.timeout(timeout):
            while True:
                registered = await asyncio.to_thread(self._registered)
                active = [c for c, d in self.daemons.items() if d.role.active is not None and d.role.active.state is not None]
                if len(active) == 1 and registered >= set(self.tasks):
                    return active[0]
                await asyncio.sleep(0.02)

    def standby(self, active: int) -> int:
        return next(c for c in self.tasks if c != active)

    def _registered(self) -> set[int]:
        if not self.kafka.zk.exists("/reassignd/controllers"):
            return set()
        return {int(n) for n in self.kafka.zk.get_children("/reassignd/controllers")}

    async def call(self, cid: int, key: int, version: int, body: dict) -> dict:
        wire = await Wire.open(self.addr(cid))
        try:
            return await wire.call(key, version, body)
        finally:
            await wire.close()

    # ---- znodes --------------------------------------------------------------------------------

    def set_json(self, path: str, doc) -> None:
        zk = self.kafka.zk
        if zk.exists(path):
            zk.set(path, dumps(doc))
        else:
            zk.create(path, dumps(doc), makepath=True)

    def get_json(self, path: str):
        return json.loads(self.kafka.zk.get(path)[0])

    def submit(self, moves: dict[tuple[str, int], list[int]]) -> None:
        """Write /admin/reassign_partitions as kafka-reassign-partitions.sh does."""
        self.set_json("/admin/reassign_partitions", {
            "version": 1,
            "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()],
        })

    async def wait_running(self, cid: int, tps, timeout: float = 20.0) -> None:
        """Until the active controller ``cid`` has started a move of every partition in ``tps``."""
        async with asyncio.timeout(timeout):
            while True:
                active = self.daemons[cid].role.active
                state = active.state if active is not None else None
                if state is not None and all(tp in state.tasks and state.tasks[tp].started for tp in tps):
                    return
                await asyncio.sleep(0.02)
