"""Carry this project's message schemas over aiokafka's connection layer.

aiokafka's :class:`~aiokafka.conn.AIOKafkaConnection` does the socket work this client wants
(connect with a timeout, the ApiVersions handshake, correlation ids, one future per in-flight
request, request timeouts) but only sends its own request classes. Its ``send(request)`` needs
an object with ``prepare(versions)`` - given the peer's ApiVersions answer, return the struct
to send - and that struct must offer ``API_KEY``, ``API_VERSION``,
``build_request_header(correlation_id, client_id)``, ``encode()``,
``parse_response_header(buffer)`` and ``RESPONSE_TYPE.decode(buffer)``.
:class:`SpecRequest` / :class:`_PreparedRequest` are that adapter, built on :mod:`protocol`:

* ``prepare`` negotiates: the highest version both our spec and the peer's ApiVersions range
  allow (:class:`client.errors.UnsupportedVersionError` when there is none);
* the request frame (header and body) is encoded by ``protocol.encode_request`` - the header
  object carries all of it, because our codec writes header and body in one pass;
* the response frame is decoded by ``protocol.decode_response``; a frame our codec rejects
  becomes a :class:`client.errors.ProtocolViolationError` result instead of an exception in
  aiokafka's reader task (which would drop the connection with a generic error).

:class:`NodeConnection` wraps one connection and maps aiokafka's and asyncio's exceptions onto
:mod:`client.errors`.

Usage::

    conn = await NodeConnection.open("127.0.0.1", 9190, client_id="me", request_timeout_ms=5000)
    version, body = await conn.request(3, {"topics": None})      # Metadata, best version
    await conn.close()
"""

from __future__ import annotations

import asyncio
import struct

from aiokafka.conn import create_conn
from aiokafka.errors import KafkaConnectionError, KafkaError

import protocol
from protocol.exceptions import DecodeError, EncodeError

from client.errors import (
    ConnectionFailedError,
    InputError,
    ProtocolViolationError,
    RequestTimedOutError,
    UnsupportedVersionError,
)


def our_versions(api_key: int) -> tuple[int, int]:
    """The request versions this project's specs define for ``api_key``."""
    try:
        return protocol.supported_apis()[api_key]
    except KeyError:
        raise UnsupportedVersionError(f"this client has no spec for API key {api_key}") from None


def negotiate(api_key: int, ours: tuple[int, int], theirs: tuple[int, int] | None) -> int:
    """Highest version in both ranges, or UnsupportedVersionError."""
    if theirs is None:
        raise UnsupportedVersionError(f"the peer does not offer API key {api_key}")
    lo, hi = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    if lo > hi:
        raise UnsupportedVersionError(
            f"API key {api_key}: the peer offers versions {theirs[0]}-{theirs[1]}, "
            f"this client speaks {ours[0]}-{ours[1]}"
        )
    return hi


class _ResponseHeader:
    __slots__ = ("correlation_id",)

    def __init__(self, correlation_id: int):
        self.correlation_id = correlation_id


class _EncodedFrame:
    """What aiokafka calls the request header: here the whole frame minus its size prefix."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes):
        self._data = data

    def encode(self) -> bytes:
        return self._data


class _ResponseReader:
    """aiokafka's ``RESPONSE_TYPE``: hands back what ``parse_response_header`` decoded."""

    __slots__ = ("_prepared",)

    def __init__(self, prepared: "_PreparedRequest"):
        self._prepared = prepared

    def decode(self, _buffer) -> object:
        return self._prepared.outcome


class _PreparedRequest:
    FLEXIBLE_VERSION = False  # unused: our codec picks the header version itself

    def __init__(self, api_key: int, api_version: int, body: dict):
        self.API_KEY = api_key
        self.API_VERSION = api_version
        self.body = body
        self.RESPONSE_TYPE = _ResponseReader(self)
        self.outcome: object = None

    def build_request_header(self, correlation_id: int, client_id: str) -> _EncodedFrame:
        try:
            frame = protocol.encode_request(self.API_KEY, self.API_VERSION, correlation_id, client_id, self.body)
        except EncodeError as exc:
            raise InputError(f"cannot encode API {self.API_KEY} v{self.API_VERSION}: {exc}") from None
        # aiokafka prefixes the size itself.
        return _EncodedFrame(frame[4:])

    def encode(self) -> bytes:
        # The body went out with the header (see build_request_header).
        return b""

    def parse_response_header(self, buffer) -> _ResponseHeader:
        payload = buffer.read()
        frame = struct.pack(">i", len(payload)) + payload
        try:
            header, body = protocol.decode_response(self.API_KEY, self.API_VERSION, frame)
        except DecodeError as exc:
            self.outcome = ProtocolViolationError(
                f"undecodable response to API {self.API_KEY} v{self.API_VERSION}: {exc}"
            )
            self.outcome.request_sent = True  # an answer: the request went out
            # Let aiokafka still match the answer to its request.
            cid = struct.unpack(">i", payload[:4])[0] if len(payload) >= 4 else -1
            return _ResponseHeader(cid)
        self.outcome = body
        cid = header["correlation_id"] if isinstance(header, dict) else header.correlation_id
        return _ResponseHeader(cid)

    def __repr__(self) -> str:
        return f"<request api_key={self.API_KEY} v{self.API_VERSION}>"


class SpecRequest:
    """A request aiokafka's ``AIOKafkaConnection.send`` accepts, for any spec'd API.

    ``body`` is a dict, or a function of the negotiated version returning one (for fields
    that exist only in some versions). ``versions`` narrows the range this side offers, for
    APIs whose versions differ in meaning.
    """

    def __init__(self, api_key: int, body, versions: tuple[int, int] | None = None):
        self.API_KEY = api_key
        self.body = body
        self.ours = our_versions(api_key)
        if versions is not None:
            lo, hi = max(self.ours[0], versions[0]), min(self.ours[1], versions[1])
            if lo > hi:
                raise UnsupportedVersionError(f"API key {api_key}: this client has no version in {versions}")
            self.ours = (lo, hi)
        self.prepared: _PreparedRequest | None = None

    def prepare(self, versions: dict[int, tuple[int, int]]) -> _PreparedRequest:
        version = negotiate(self.API_KEY, self.ours, versions.get(self.API_KEY))
        body = self.body(version) if callable(self.body) else self.body
        self.prepared = _PreparedRequest(self.API_KEY, version, body)
        return self.prepared


class NodeConnection:
    """One connection to one node, with errors mapped onto :mod:`client.errors`."""

    def __init__(self, conn, host: str, port: int):
        self._conn = conn
        self.host = host
        self.port = port

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str, request_timeout_ms: int,
                   security=None) -> "NodeConnection":
        """``security``: a client.security.ClientSecurity (TLS, SASL); None is PLAINTEXT."""
        extra = security.connection_kwargs() if security is not None else {}
        try:
            conn = await create_conn(host, port, client_id=client_id, request_timeout_ms=request_timeout_ms, **extra)
        except (asyncio.TimeoutError, TimeoutError):
            raise ConnectionFailedError(f"{host}:{port}: timed out connecting") from None
        except (OSError, KafkaError) as exc:
            raise ConnectionFailedError(f"{host}:{port}: {_describe(exc)}") from None
        except ValueError as exc:  # UnicodeError too: a broker's advertised host no resolver takes
            raise ConnectionFailedError(f"{host[:80]!r}:{port}: not a host name ({exc})") from None
        return cls(conn, host, port)

    @property
    def connected(self) -> bool:
        return self._conn.connected()

    async def request(self, api_key: int, body, versions: tuple[int, int] | None = None) -> tuple[int, dict]:
        """Send one request at the best common version; return (version, response body)."""
        req = SpecRequest(api_key, body, versions)
        try:
            outcome = await self._conn.send(req)
        except (asyncio.TimeoutError, TimeoutError):
            # The answer may still come; the connection is out of step with us now.
            self._conn.close()
            raise RequestTimedOutError(f"{self.host}:{self.port}: no answer to API {api_key}") from None
        except (KafkaConnectionError, OSError) as exc:
            raise ConnectionFailedError(f"{self.host}:{self.port}: {_describe(exc)}") from None
        except KafkaError as exc:
            raise ConnectionFailedError(f"{self.host}:{self.port}: {_describe(exc)}") from None
        if isinstance(outcome, Exception):
            self._conn.close()
            raise outcome
        assert req.prepared is not None
        return req.prepared.API_VERSION, outcome

    async def close(self) -> None:
        fut = self._conn.close()
        if fut is not None:
            try:
                await asyncio.wait_for(asyncio.shield(fut), 1.0)
            except (asyncio.TimeoutError, TimeoutError):
                pass


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({cause})"
    return text
