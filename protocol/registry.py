"""Every spec in protocol/specs/, loaded and checked at import, and the compiled-codec cache.

A bad spec file fails the import with a `SpecError` naming the file. Codecs are compiled the
first time a (message, version) is used and kept for the life of the process.
"""

from __future__ import annotations

from pathlib import Path

from .codegen import Compiled, compile_codec
from .exceptions import EncodeError, SpecError, UnsupportedVersionError
from .spec import MessageSpec, load_spec

SPEC_DIR = Path(__file__).with_name("specs")

REQUEST_HEADER = "RequestHeader"
RESPONSE_HEADER = "ResponseHeader"
# ApiVersions responses always use response header v0, so a client that asked with any version
# can read the header (and the error code) of the answer (KIP-511). Known by its spec's name:
# protocol.ApiKey is built from this registry, so it cannot be imported here.
API_VERSIONS_RESPONSE = "ApiVersionsResponse"
CONTROLLED_SHUTDOWN_REQUEST = "ControlledShutdownRequest"


class Registry:
    def __init__(self, spec_dir: Path) -> None:
        self.spec_dir = spec_dir
        self.requests: dict[int, MessageSpec] = {}
        self.responses: dict[int, MessageSpec] = {}
        self.headers: dict[str, MessageSpec] = {}
        self._codecs: dict[tuple, Compiled] = {}
        for path in sorted(spec_dir.glob("*.json")):
            self._add(load_spec(path))
        self._check()

    def _add(self, spec: MessageSpec) -> None:
        if spec.kind == "header":
            table, key = self.headers, spec.name
        else:
            table = self.requests if spec.kind == "request" else self.responses
            key = spec.api_key
        if key in table:
            raise SpecError(f"{spec.path}: {spec.kind} for {key!r} is already defined by {table[key].path}")
        table[key] = spec

    def _check(self) -> None:
        for name in (REQUEST_HEADER, RESPONSE_HEADER):
            if name not in self.headers:
                raise SpecError(f"{self.spec_dir}: {name}.json is missing")
        for key, req in self.requests.items():
            resp = self.responses.get(key)
            if resp is None:
                continue
            if req.name[: -len("Request")] != resp.name[: -len("Response")]:
                raise SpecError(f"{resp.path}: apiKey {key} is {req.name} in {req.path}, so this must be its response")
            if req.valid != resp.valid:
                raise SpecError(
                    f"{resp.path}: validVersions {resp.valid} differ from {req.path}'s {req.valid}"
                )

    # -- lookups --------------------------------------------------------------------------------

    def spec(self, api_key: int, kind: str) -> MessageSpec | None:
        return (self.requests if kind == "request" else self.responses).get(api_key)

    def supports(self, api_key: int, version: int) -> bool:
        req = self.requests.get(api_key)
        return req is not None and api_key in self.responses and version in req.valid

    def codec(self, api_key: int, version: int, kind: str) -> Compiled:
        """The codec for a body; raises UnsupportedVersionError (a DecodeError) if there is none."""
        c = self._codecs.get((api_key, version, kind))
        if c is not None:
            return c
        spec = self.spec(api_key, kind)
        if spec is None:
            raise UnsupportedVersionError(f"no {kind} spec for api key {api_key}", api_key, version)
        if version not in spec.valid:
            raise UnsupportedVersionError(
                f"{spec.name} has no version {version} (valid: {spec.valid})", api_key, version
            )
        c = self._codecs[(api_key, version, kind)] = compile_codec(spec, version)
        return c

    def codec_for_encode(self, api_key: int, version: int, kind: str) -> Compiled:
        """Like codec(), but a missing spec or version is the caller's mistake: EncodeError."""
        c = self._codecs.get((api_key, version, kind))
        if c is not None:
            return c
        if kind not in ("request", "response"):
            raise EncodeError(f"kind must be 'request' or 'response', got {kind!r}")
        try:
            return self.codec(api_key, version, kind)
        except UnsupportedVersionError as e:
            raise EncodeError(str(e)) from None

    def header_codec(self, name: str, version: int) -> Compiled:
        c = self._codecs.get((name, version))
        if c is None:
            spec = self.headers[name]
            if version not in spec.valid:
                raise EncodeError(f"{name} has no version {version} (valid: {spec.valid})")
            c = self._codecs[(name, version)] = compile_codec(spec, version)
        return c

    def request_header_version(self, api_key: int, version: int) -> int:
        spec = self.requests[api_key]
        if spec.name == CONTROLLED_SHUTDOWN_REQUEST and version == 0:
            return 0  # its v0 predates the client id (Kafka's ApiKeys.requestHeaderVersion)
        return 2 if spec.is_flexible(version) else 1

    def response_header_version(self, api_key: int, version: int) -> int:
        spec = self.responses[api_key]
        if spec.name == API_VERSIONS_RESPONSE:
            return 0
        return 1 if spec.is_flexible(version) else 0


REGISTRY = Registry(SPEC_DIR)
