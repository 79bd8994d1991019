"""The codec's exception types.

Bad bytes from a peer raise exactly one type, `DecodeError` (a `ValueError`), whatever is wrong
with them. `UnsupportedVersionError` is the one subclass a server needs to tell apart: the frame
named an API key or version no spec covers, so the right answer is UNSUPPORTED_VERSION (35)
rather than closing the connection. Bad bodies handed to an encoder raise `EncodeError` (also a
`ValueError`, never a `DecodeError`), and a bad spec file raises `SpecError` at import.
"""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes from a peer could not be decoded (truncated, oversized, malformed or unknown)."""


class UnsupportedVersionError(DecodeError):
    """A request or response names an API key or version that no loaded spec covers.

    `api_key`, `api_version` and `correlation_id` are set when the header was readable that far
    (else None), `client_id` likewise; a server answers with error code 35 and the
    correlation id.
    """

    def __init__(
        self,
        message: str,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
        client_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id


class EncodeError(ValueError):
    """A body could not be encoded: wrong type, value out of range, or a field the version lacks."""


class SpecError(Exception):
    """A message spec file is invalid; the message names the file and the offending field."""
