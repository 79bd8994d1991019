"""Byte sizes and rates as operators write them: ``123``, ``512KB``, ``10MiB``, ``1.5GB``.

Decimal units (KB, MB, GB, TB) are powers of 1000 and binary units (KiB, MiB, GiB, TiB)
powers of 1024, as in Kafka's own tooling; ``B`` and a bare number are bytes.

    >>> parse_size("10MiB")
    10485760
    >>> parse_size("512KB")
    512000
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

# A simulated replica or rate above this is a typo, not a plan (an exabyte).
MAX_SIZE = 1000**6


def parse_size(text: str) -> int:
    """Bytes in ``text``; raises ValueError with the reason on anything else."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 123, 512KB, 10MiB)")
    number, unit = match.groups()
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown unit {unit!r} in {text!r} (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    value = float(number) * factor
    if value > MAX_SIZE:
        raise ValueError(f"size {text!r} is too large")
    return int(value)
