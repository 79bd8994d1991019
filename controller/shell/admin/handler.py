"""The admin listener's request handler: the API table (controller.shell.admin.registry) served.

    handler = AdminHandler(AdminContext(role, config))        # the table of registry.MODULES
    listener = AdminListener(host, port, handler)

For one decoded request:

 1. ApiVersions (18) is answered here, from the table: every API it serves, each with its
    version range intersected with what the codec supports (``protocol.supported_apis()``),
    plus ApiVersions itself (INVALID_REQUEST without ranges for a v3+ client software name or
    version Kafka would refuse, KIP-511; protocol.api_versions).
 2. An API key the table lacks, or a version outside the API's range: None, and the listener
    closes the connection (what a Kafka broker does).
 3. With an authorizer (``ctx.authorizer``, controller.shell.authorizer): an API that needs an
    operation on the cluster the connection's principal lacks gets the API's error response
    with CLUSTER_AUTHORIZATION_FAILED, without calling its handler (Metadata and
    DescribeConfigs check per topic themselves).
 4. A controller-only API on a standby: the API's error response with NOT_CONTROLLER, without
    calling its handler.
 5. Otherwise the API's handler. An :class:`ApiError` it raises becomes the API's error
    response with that code; a ZooKeeper failure of the session (``base.session_failure``:
    NOT_CONTROLLER when fenced or expired, REQUEST_TIMED_OUT when the connection broke) is
    logged as a warning and answered with that retriable code; any other failure is logged
    with its traceback and becomes the error response with UNKNOWN_SERVER_ERROR. The
    connection stays open either way.
"""

from __future__ import annotations

import asyncio
import logging
import re

import protocol
from controller.shell.admin.base import AdminContext, Api, ApiError, session_failure
from controller.shell.admin.registry import build_table
from controller.shell.listener import SESSION
from protocol import ApiKey
from protocol.api_versions import error_answer
from protocol.errors import ErrorCode
from znodes.api import ZkError

log = logging.getLogger("reassignd.admin")



def served_versions(table: dict[int, Api]) -> list[dict]:
    """ApiVersions' ``api_keys``: table ranges intersected with the codec's, ApiVersions included."""
    codec = protocol.supported_apis()
    out = []
    low, high = codec[ApiKey.API_VERSIONS]
    ranges = {ApiKey.API_VERSIONS: (low, high)}
    for key, api in table.items():
        if key not in codec:
            continue
        low, high = max(api.min_version, codec[key][0]), min(api.max_version, codec[key][1])
        if low <= high:
            ranges[key] = (low, high)
    for key, (low, high) in sorted(ranges.items()):
        out.append({"api_key": key, "min_version": low, "max_version": high})
    return out


# KIP-511: ApiVersions v3+ names the client software; Kafka refuses names outside this form.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _software_error(version: int, body: dict) -> ErrorCode:
    if version >= 3:
        for field in ("client_software_name", "client_software_version"):
            if not _SOFTWARE.fullmatch(body.get(field) or ""):
                return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


class AdminHandler:
    def __init__(self, ctx: AdminContext, table: dict[int, Api] | None = None):
        self.ctx = ctx
        self.table = build_table() if table is None else dict(table)
        self._versions = served_versions(self.table)
        self._ranges = {v["api_key"]: (v["min_version"], v["max_version"]) for v in self._versions}

    def api_versions(self) -> list[dict]:
        return [dict(v) for v in self._versions]

    def serves(self, key: int, version: int) -> bool:
        low, high = self._ranges.get(key, (0, -1))
        return low <= version <= high

    async def handle(self, header: dict, body: dict) -> dict | None:
        key, version = header["request_api_key"], header["request_api_version"]
        if not self.serves(key, version):
            return None
        if key == ApiKey.API_VERSIONS:
            code = _software_error(version, body)
            if code != ErrorCode.NONE:
                return error_answer(code, [])  # Kafka's INVALID_REQUEST: no ranges
            return {"error_code": 0, "api_keys": self.api_versions(), "throttle_time_ms": 0}
        api = self.table[key]
        try:
            authorizer = getattr(self.ctx, "authorizer", None)
            if authorizer is not None and not await authorizer.allows_api(SESSION.get(), key):
                return api.error_response(version, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          f"{api.name} needs its operation on the cluster resource")
            if api.controller_only:
                self.ctx.require_active()
            return await api.handle(self.ctx, version, body)
        except ApiError as e:
            return api.error_response(version, body, e.code, e.message)
        except asyncio.CancelledError:
            raise
        except ZkError as e:
            lost = session_failure(e)
            if lost is None:
                log.exception("%s v%d failed", api.name, version)
                return api.error_response(version, body, ErrorCode.UNKNOWN_SERVER_ERROR, f"{api.name} failed: {e!r}")
            # ZooKeeper's trouble, not the request's: logged once, without a traceback.
            log.warning("%s v%d: %s (%r)", api.name, version, lost.message, e)
            return api.error_response(version, body, lost.code, lost.message)
        except Exception as e:  # a handler's bug must cost one request, not the connection
            log.exception("%s v%d failed", api.name, version)
            return api.error_response(version, body, ErrorCode.UNKNOWN_SERVER_ERROR, f"{api.name} failed: {e!r}")

    def error_response(self, header: dict, body: dict, code: ErrorCode, message: str | None) -> dict | None:
        key, version = header["request_api_key"], header["request_api_version"]
        if key == ApiKey.API_VERSIONS:
            return error_answer(code, self.api_versions())
        api = self.table.get(key)
        return None if api is None else api.error_response(version, body, code, message)
