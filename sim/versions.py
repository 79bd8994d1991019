"""The API versions a simulated broker advertises: what it serves AND the codec can carry.

    served_versions()        # {18: (0, 3), 3: (0, 12), 4: (0, 4), ...}, per the loaded specs
"""

from __future__ import annotations

import protocol
from sim.core import SERVED_VERSIONS


def served_versions() -> dict[int, tuple[int, int]]:
    codec = protocol.supported_apis()
    out = {}
    for key, (lo, hi) in SERVED_VERSIONS.items():
        if key in codec:
            c_lo, c_hi = codec[key]
            if max(lo, c_lo) <= min(hi, c_hi):
                out[key] = (max(lo, c_lo), min(hi, c_hi))
    return out
