"""A tiny Kafka-protocol server for AdminClient tests, built on this project's codec.

It answers ApiVersions from the versions it is told to offer and every other request through
a handler ``(api_key, version, body) -> response body``, recording what it received. Several
instances make a cluster: tests point their Metadata answers at each other's ports.

Usage::

    server = await WireServer.start({3: metadata_handler})
    ... AdminClient(f"127.0.0.1:{server.port}") ...
    await server.stop()
"""

from __future__ import annotations

import asyncio
import struct

import protocol
from protocol import ApiKey
from protocol.exceptions import DecodeError



class WireServer:
    def __init__(self, handlers: dict, offered: dict[int, tuple[int, int]] | None = None):
        self.handlers = dict(handlers)
        # Offer every version our specs have for the APIs handled, unless told otherwise.
        ours = protocol.supported_apis()
        self.offered = offered if offered is not None else {k: ours[k] for k in self.handlers}
        self.received: list[tuple[int, int, dict]] = []
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self.last_correlation_id = -1

    @classmethod
    async def start(cls, handlers: dict, offered: dict[int, tuple[int, int]] | None = None,
                    port: int = 0) -> "WireServer":
        """``port``: 0 lets the kernel pick one; znodes.launcher.free_port() keeps it below the
        ephemeral range."""
        server = cls(handlers, offered)
        server._server = await asyncio.start_server(server._serve, "127.0.0.1", port)
        server.port = server._server.sockets[0].getsockname()[1]
        return server

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in list(self._writers):
            w.close()
        await self._server.wait_closed()

    def requests(self, api_key: int) -> list[tuple[int, dict]]:
        return [(v, b) for k, v, b in self.received if k == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                frame = head + await reader.readexactly(size)
                try:
                    header, body = protocol.decode_request(frame)
                except DecodeError:
                    return
                key, version, cid = header["request_api_key"], header["request_api_version"], header["correlation_id"]
                self.received.append((key, version, body))
                self.last_correlation_id = cid
                if key == ApiKey.API_VERSIONS:
                    answer = {
                        "error_code": 0,
                        "api_keys": [
                            {"api_key": k, "min_version": lo, "max_version": hi}
                            for k, (lo, hi) in sorted(self.offered.items())
                        ],
                    }
                else:
                    handler = self.handlers[key]
                    answer = handler(version, body)
                    if asyncio.iscoroutine(answer):
                        answer = await answer
                if answer is None:  # handler asks to hang up without answering
                    return
                if isinstance(answer, bytes):  # raw frame (for garbage tests)
                    writer.write(answer)
                else:
                    writer.write(protocol.encode_response(key, version, cid, answer))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
