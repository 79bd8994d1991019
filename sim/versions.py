"""The API versions a simulated broker advertises: what it serves AND the codec can carry.

    served_versions()        # {18: (0, 3), 3: (0, 12), 4: (0, 4), ...}, per the loaded specs
"""

from __future__ import annotations

import functools
from pathlib import Path

import protocol
from protocol.spec import load_spec
from sim.core import SERVED_VERSIONS


@functools.cache
def codec_versions() -> dict[int, tuple[int, int]]:
    """(min, max) per API key over the codec's request specs."""
    out = {}
    for path in sorted((Path(protocol.__file__).parent / "specs").glob("*Request.json")):
        spec = load_spec(path)
        if spec.kind == "request" and spec.api_key is not None and not spec.valid.empty:
            out[spec.api_key] = (spec.valid.lo, spec.valid.hi)
    return out


def served_versions() -> dict[int, tuple[int, int]]:
    codec = codec_versions()
    out = {}
    for key, (lo, hi) in SERVED_VERSIONS.items():
        if key in codec:
            c_lo, c_hi = codec[key]
            if max(lo, c_lo) <= min(hi, c_hi):
                out[key] = (max(lo, c_lo), min(hi, c_hi))
    return out
