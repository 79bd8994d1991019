"""A small HTTP/1.1 JSON server on asyncio streams, for the planner service's REST API
(:mod:`planner_service.endpoints`).

Only what the API needs: GET and POST, a query string, no request bodies beyond a bounded
one that is read and ignored, JSON answers, keep-alive. A handler raises :class:`HttpError`
for an error answer; anything else it raises is a 500 with the exception's text, never a
dead server.

Usage::

    async def handler(method, path, query):      # query: {name: value}
        if path != "/state":
            raise HttpError(404, "no such endpoint")
        return 200, {"ok": True}

    server = await serve(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qsl, urlsplit

log = logging.getLogger(__name__)

MAX_LINE = 8192
MAX_HEADERS = 100
MAX_BODY = 1 << 20
IDLE_TIMEOUT_S = 60.0
REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           409: "Conflict", 413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}


class HttpError(Exception):
    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status = status
        self.extra = extra

    def body(self) -> dict:
        return {"error": {"status": self.status, "message": str(self), **self.extra}}


def _encode(status: int, body: dict, keep_alive: bool) -> bytes:
    data = (json.dumps(body, sort_keys=True) + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + data


async def _read_request(reader: asyncio.StreamReader):
    """(method, target, headers) or None at a clean end of the connection."""
    line = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
    if not line:
        return None
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "malformed request line")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep:
            raise HttpError(400, "malformed header line")
        headers[name.strip().lower()] = value.strip()
    else:
        raise HttpError(400, "too many headers")
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise HttpError(400, "bad Content-Length")
    if int(length) > MAX_BODY:
        raise HttpError(413, "request body too large")
    if int(length):
        await reader.readexactly(int(length))
    return parts[0], parts[1], parts[2], headers


async def serve(handler, host: str, port: int) -> asyncio.base_events.Server:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                keep_alive = False
                try:
                    req = await _read_request(reader)
                    if req is None:
                        break
                    method, target, version, headers = req
                    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                    url = urlsplit(target)
                    try:
                        query = dict(parse_qsl(url.query, keep_blank_values=True, strict_parsing=bool(url.query)))
                    except ValueError:
                        raise HttpError(400, f"malformed query string {url.query!r}") from None
                    status, body = await handler(method, url.path, query)
                except HttpError as e:
                    status, body = e.status, e.body()
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, ValueError,
                        asyncio.LimitOverrunError):
                    break
                except Exception as e:  # a handler bug: answer 500, keep serving
                    log.exception("request failed")
                    status, body = 500, {"error": {"status": 500, "message": f"{type(e).__name__}: {e}"}}
                writer.write(_encode(status, body, keep_alive))
                await writer.drain()
                if not keep_alive:
                    break
        except ConnectionError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(connection, host, port, limit=MAX_LINE, reuse_address=True)
