"""ApiVersions' error answers, as Kafka's ``ApiVersionsRequest.getErrorResponse`` builds them.
Pure: shared by the controller's admin listener and the simulated brokers.

An ApiVersions request of a version the server does not know is answered with a version 0
response (every client reads it), UNSUPPORTED_VERSION and one entry: ApiVersions' own range
(KIP-511, Kafka 2.4+), from which the client picks the version to ask again with. Any other
error (an invalid v3+ client software name: INVALID_REQUEST) carries no ranges at all.

    error_answer(ErrorCode.UNSUPPORTED_VERSION, [{"api_key": 3, ...}, {"api_key": 18, ...}])
    # {"error_code": 35, "api_keys": [{"api_key": 18, ...}], "throttle_time_ms": 0}
"""

from __future__ import annotations

from protocol.errors import ErrorCode

API_VERSIONS_KEY = 18


def error_answer(code: ErrorCode, served: list[dict]) -> dict:
    """The answer to an ApiVersions request refused with ``code``; ``served``: every range the
    server serves (its full answer's ``api_keys``)."""
    keys = [k for k in served if k["api_key"] == API_VERSIONS_KEY] if code == ErrorCode.UNSUPPORTED_VERSION else []
    return {"error_code": int(code), "api_keys": keys, "throttle_time_ms": 0}
