"""Bulk, read-only ZooKeeper reads for snapshots: many getData/getChildren in flight on one
session, over asyncio TCP.

A snapshot reads one state znode per partition: hundreds of thousands of reads for a big
cluster. Through kazoo each read costs a thread hand-off and a wake-up (~0.5 ms on a loaded
machine); here requests are written back to back and the answers, which ZooKeeper sends in
request order, are parsed as they stream in. Only the few request types a snapshot needs are
spoken (ZooKeeper's jute encoding): connect, getData (4), getChildren (8), closeSession (-11).

Usage::

    async with ZkReader.connect("127.0.0.1:2181/kafka") as zk:
        names = await zk.children("/brokers/topics")
        datas = await zk.get_many([f"/brokers/topics/{n}" for n in names])   # None: no node
"""

from __future__ import annotations

import asyncio
import struct

from spark_jobs.errors import SnapshotError

GET_DATA, GET_CHILDREN, CLOSE_SESSION = 4, 8, -11
NO_NODE = -101
IN_FLIGHT = 4096  # requests outstanding at once: keeps ZooKeeper's queue and our memory bounded
MAX_FRAME = 16 * 1024 * 1024  # larger than any znode (jute.maxbuffer defaults to 1 MiB)
SESSION_TIMEOUT_MS = 30_000
_STAT_SIZE = 68  # czxid, mzxid, ctime, mtime (8 each), version, cversion, aversion (4), owner (8), len, children (4), pzxid (8)


class ZkReadError(SnapshotError):
    def __init__(self, hosts: str, reason: str):
        super().__init__(hosts, reason)


def parse_hosts(hosts: str) -> tuple[list[tuple[str, int]], str]:
    """"h1:p1,h2:p2/chroot" -> ([(h1, p1), (h2, p2)], "/chroot")."""
    chroot = ""
    if "/" in hosts:
        hosts, chroot = hosts.split("/", 1)
        chroot = "/" + chroot.rstrip("/")
        if chroot == "/":
            chroot = ""
    out = []
    for part in hosts.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ZkReadError(hosts, f"bad ZooKeeper address {part!r} (want host:port)")
        out.append((host, int(port)))
    return out, chroot


class ZkReader:
    def __init__(self, reader, writer, chroot: str, hosts: str):
        self._r, self._w = reader, writer
        self._chroot = chroot
        self._hosts = hosts
        self._xid = 0

    @classmethod
    def connect(cls, hosts: str, timeout: float = 10.0) -> "_Connecting":
        return _Connecting(hosts, timeout)

    async def _frame(self) -> bytes:
        head = await self._r.readexactly(4)
        (n,) = struct.unpack(">i", head)
        if not 0 <= n <= MAX_FRAME:
            raise ZkReadError(self._hosts, f"ZooKeeper sent a frame of {n} bytes")
        return await self._r.readexactly(n)

    def _request(self, op: int, path: str) -> bytes:
        self._xid += 1
        full = (self._chroot + path) if path != "/" else (self._chroot or "/")
        p = full.encode()
        body = struct.pack(">ii", self._xid, op) + struct.pack(">i", len(p)) + p + b"\x00"
        return struct.pack(">i", len(body)) + body

    async def _many(self, op: int, paths: list[str]) -> list:
        out: list = []
        sent = 0
        buf = bytearray()
        while len(out) < len(paths):
            pending = sent - len(out)
            if sent < len(paths) and pending <= IN_FLIGHT // 2:
                batch = paths[sent : sent + IN_FLIGHT - pending]
                self._w.write(b"".join(self._request(op, p) for p in batch))
                sent += len(batch)
                await self._w.drain()
            chunk = await self._r.read(1 << 20)
            if not chunk:
                raise ZkReadError(self._hosts, "ZooKeeper closed the connection")
            buf += chunk
            pos = 0
            while len(buf) - pos >= 4:
                (n,) = struct.unpack_from(">i", buf, pos)
                if not 16 <= n <= MAX_FRAME:
                    raise ZkReadError(self._hosts, f"ZooKeeper sent a frame of {n} bytes")
                if len(buf) - pos - 4 < n:
                    break
                frame = bytes(buf[pos + 4 : pos + 4 + n])
                pos += 4 + n
                self._answer(op, frame, paths, out)
            del buf[:pos]
        return out

    def _answer(self, op: int, frame: bytes, paths: list[str], out: list) -> None:
        xid, _zxid, err = struct.unpack_from(">iqi", frame, 0)
        if xid < 0:
            return  # a ping or notification; we set no watches, so none should come
        path = paths[len(out)]
        if err == NO_NODE:
            out.append(None)
        elif err != 0:
            raise ZkReadError(self._hosts, f"reading {path}: ZooKeeper error {err}")
        elif op == GET_DATA:
            (n,) = struct.unpack_from(">i", frame, 16)
            out.append(b"" if n < 0 else frame[20 : 20 + n])
        else:
            (count,) = struct.unpack_from(">i", frame, 16)
            pos, names = 20, []
            for _ in range(max(count, 0)):
                (n,) = struct.unpack_from(">i", frame, pos)
                names.append(frame[pos + 4 : pos + 4 + n].decode())
                pos += 4 + n
            out.append(sorted(names))

    async def get_many(self, paths: list[str]) -> list:
        """Data of each path (bytes), None where the node does not exist."""
        return await self._many(GET_DATA, paths)

    async def children(self, path: str) -> list[str]:
        """Sorted child names; [] when the node does not exist."""
        return (await self._many(GET_CHILDREN, [path]))[0] or []

    async def close(self) -> None:
        try:
            self._xid += 1
            body = struct.pack(">ii", self._xid, CLOSE_SESSION)
            self._w.write(struct.pack(">i", len(body)) + body)
            await self._w.drain()
            await asyncio.wait_for(self._frame(), 5)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ZkReadError):
            pass
        finally:
            self._w.close()
            try:
                await self._w.wait_closed()
            except OSError:
                pass


class _Connecting:
    def __init__(self, hosts: str, timeout: float):
        self.hosts, self.timeout = hosts, timeout
        self.zk: ZkReader | None = None

    async def __aenter__(self) -> ZkReader:
        servers, chroot = parse_hosts(self.hosts)
        errors = []
        for host, port in servers:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), self.timeout)
            except (OSError, asyncio.TimeoutError) as e:
                errors.append(f"{host}:{port}: {e or 'timed out'}")
                continue
            req = struct.pack(">iqiq", 0, 0, SESSION_TIMEOUT_MS, 0) + struct.pack(">i", 16) + b"\x00" * 16 + b"\x00"
            writer.write(struct.pack(">i", len(req)) + req)
            zk = ZkReader(reader, writer, chroot, self.hosts)
            try:
                await writer.drain()
                resp = await asyncio.wait_for(zk._frame(), self.timeout)
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                writer.close()
                errors.append(f"{host}:{port}: no session ({e or 'timed out'})")
                continue
            _proto, granted = struct.unpack_from(">ii", resp, 0)
            if granted <= 0:
                writer.close()
                errors.append(f"{host}:{port}: session refused")
                continue
            if chroot and (await zk._many(GET_DATA, ["/"]))[0] is None:
                await zk.close()
                raise ZkReadError(self.hosts, f"chroot {chroot} does not exist")
            self.zk = zk
            return zk
        raise ZkReadError(self.hosts, "cannot reach ZooKeeper: " + "; ".join(errors))

    async def __aexit__(self, *exc) -> None:
        if self.zk is not None:
            await self.zk.close()
