"""The planner service's REST API on the wire (:mod:`planner_service.endpoints` holds its routes,
:mod:`planner_service.static` the dashboard's files at ``/``),
on aiohttp's server through :mod:`httpd`: JSON answers, keep-alive, the limits below, TLS and
authentication (:mod:`planner_service.api_auth`) when configured, and an audit line for every
request that needs ADMIN (executions among them).

A handler raises :class:`HttpError` for an error answer (with any headers it needs, as a 405's
``Allow``); anything else it raises is a 500 with the exception's text, never a dead server.
Every error is ``{"error": {"status", "message"}}``: 401 no or bad credentials (with
``WWW-Authenticate: Basic``), 403 a role too low for the request. A HEAD is answered as its GET,
headers only (aiohttp sends no body to a HEAD and keeps the GET's Content-Length).

Usage::

    async def handler(method, path, query):      # query: {name: value}
        if path != "/state":
            raise HttpError(404, "no such endpoint")
        return 200, {"ok": True}

    server = ApiServer(handler, "127.0.0.1", 0, security=ApiSecurity(auth, ssl_context))  # or None: open
    await server.start()
    server.address                                # host:port
    await server.close()
"""

from __future__ import annotations

import json
import logging
import ssl
from dataclasses import dataclass
from urllib.parse import parse_qsl

from aiohttp import web

from httpd import Limits, Site, peer_certificate, read_body
from planner_service import static
from planner_service.api_auth import ApiAuth, allows, required_role

log = logging.getLogger(__name__)
audit = logging.getLogger("reassignd.planner.audit")

# Request line (path and query string) and each header: a broker list or a topic list fits.
MAX_LINE = 8190
MAX_HEADERS = 100
# No endpoint reads a body: one up to this size is read and ignored, a larger one is 413.
MAX_BODY = 1 << 20
# A client silent this long between requests (or before its first) is disconnected.
IDLE_TIMEOUT_S = 60.0
LIMITS = Limits(max_line_bytes=MAX_LINE, max_field_bytes=MAX_LINE, max_headers=MAX_HEADERS,
                max_body_bytes=MAX_BODY, idle_timeout_s=IDLE_TIMEOUT_S)
REALM = "reassignd planner"


class HttpError(Exception):
    def __init__(self, status: int, message: str, *, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}  # sent with the answer (Allow, Retry-After), not in its body
        self.extra = extra

    def body(self) -> dict:
        return {"error": {"status": self.status, "message": str(self), **self.extra}}


@dataclass
class ApiSecurity:
    """TLS and who may call: ``auth`` None (with TLS) is an encrypted but open API."""

    auth: ApiAuth | None
    ssl_context: ssl.SSLContext | None

    @staticmethod
    def tls(cert: str, key: str | None = None, client_ca: str | None = None) -> ssl.SSLContext:
        """The server's TLS: its certificate chain and key (PEM; the key may be in the cert file),
        and the CA client certificates are verified against (asked for, not required: a Basic
        client brings none)."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        if client_ca:
            ctx.load_verify_locations(client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx


def _json(status: int, body: dict, headers: dict | None = None) -> web.Response:
    data = (json.dumps(body, sort_keys=True) + "\n").encode()
    return web.Response(status=status, body=data, content_type="application/json", headers=headers)


class ApiServer:
    def __init__(self, handler, host: str, port: int, *, security: ApiSecurity | None = None):
        self.handler = handler
        self.security = security
        self.auth = security.auth if security is not None else None
        self._site = Site(self._serve, host, port, LIMITS,
                          ssl_context=security.ssl_context if security is not None else None)

    @property
    def scheme(self) -> str:
        return "https" if self._site.ssl_context is not None else "http"

    @property
    def address(self) -> str:
        return f"{self._site.host}:{self._site.port}"

    async def start(self) -> None:
        await self._site.start()

    async def close(self) -> None:
        await self._site.close()
        if self.auth is not None:
            self.auth.close()

    async def _serve(self, request: web.Request) -> web.Response:
        method, path, principal, needed, headers = request.method, request.path, None, None, {}
        try:
            qs = request.query_string
            try:
                query = dict(parse_qsl(qs, keep_blank_values=True, strict_parsing=bool(qs)))
            except ValueError:
                raise HttpError(400, f"malformed query string {qs!r}") from None
            if request.content_length is not None and request.content_length > MAX_BODY:
                raise HttpError(413, "request body too large")
            try:
                # read and ignored (chunked bodies are bounded by the Site's limit), within the idle timeout
                await read_body(request, IDLE_TIMEOUT_S)
            except web.HTTPRequestEntityTooLarge:
                raise HttpError(413, "request body too large") from None
            except TimeoutError:
                raise HttpError(408, f"the request body did not arrive within {IDLE_TIMEOUT_S:.0f} s") from None
            needed = required_role(method, path, query)
            if self.auth is not None:
                principal = await self.auth.authenticate(request.headers.get("Authorization"),
                                                         peer_certificate(request))
                if principal is None:
                    raise HttpError(401, "authentication required: HTTP Basic credentials or a client "
                                         "certificate the service maps to a role")
                if not allows(principal.role, needed):
                    raise HttpError(403, f"{principal.name} has role {principal.role}; {method} {path}"
                                         f"{'?' + qs if qs else ''} needs {needed}")
            if method in ("GET", "HEAD") and (file := static.page(path)) is not None:
                return web.Response(status=200, body=file.body, content_type=file.content_type,
                                    charset="utf-8", headers=static.HEADERS)
            if path in static.FILES:  # a dashboard file exists there: the method is what is wrong
                raise HttpError(405, f"{path} takes GET, not {method}", headers={"Allow": "GET, HEAD"})
            status, body = await self.handler(method, path, query)
        except HttpError as e:
            status, body, headers = e.status, e.body(), dict(e.headers)
        except Exception as e:  # a handler bug: answer 500, keep serving
            log.exception("request failed")
            status, body = 500, {"error": {"status": 500, "message": f"{type(e).__name__}: {e}"}}
        if needed == "ADMIN":
            self._audit(request, principal, status, body)
        if status == 401:
            headers["WWW-Authenticate"] = f'Basic realm="{REALM}", charset="UTF-8"'
        return _json(status, body, headers)

    def _audit(self, request: web.Request, principal, status: int, body: dict) -> None:
        """One line per request that needs ADMIN: who, what, and what came of it."""
        ex = body.get("execution") if status == 200 else None
        outcome = (f"execution {ex['id']} ({ex.get('state')})" if isinstance(ex, dict) and "id" in ex
                   else body.get("error", {}).get("message", "done") if status != 200 else "done")
        who = principal.name if principal is not None else ("ANONYMOUS (authentication off)" if self.auth is None
                                                           else "unauthenticated")
        audit_line(who, principal.role if principal is not None else "-", request.remote,
                   f"{request.method} {request.path_qs}", status, outcome)


def audit_line(principal: str, role: str, peer: str | None, request: str, status: int, outcome: str) -> None:
    """One line of the audit log (the API's requests and the service's own self-healing)."""
    audit.info("principal=%s role=%s peer=%s request=%s status=%d outcome=%s", principal, role, peer, request,
               status, outcome)
