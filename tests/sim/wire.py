"""A minimal Kafka wire client for the sim tests: size-prefixed frames through the codec."""

import asyncio
import struct

import protocol


class Conn:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.correlation = 0

    @classmethod
    async def open(cls, port):
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, api_key, version, body):
        self.correlation += 1
        self.writer.write(protocol.encode_request(api_key, version, self.correlation, "sim-test", body))
        return self.correlation

    async def receive(self, api_key, version):
        size = await self.reader.readexactly(4)
        rest = await self.reader.readexactly(struct.unpack(">i", size)[0])
        header, body = protocol.decode_response(api_key, version, size + rest)
        return header["correlation_id"], body

    async def call(self, api_key, version, body):
        sent = self.send(api_key, version, body)
        await self.writer.drain()
        correlation, response = await self.receive(api_key, version)
        assert correlation == sent
        return response

    async def closed_by_peer(self) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(), 5) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.writer.close()
