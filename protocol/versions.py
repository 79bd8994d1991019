"""Version ranges as Kafka's message specs write them: "0-12", "3+", "5", "none".

>>> r = VersionRange.parse("9+")
>>> 12 in r, 8 in r
(True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Versions travel as int16 on the wire.
MAX_VERSION = 0x7FFF

_RANGE = re.compile(r"^(\d+)(?:(\+)|-(\d+))?$")


@dataclass(frozen=True)
class VersionRange:
    """Inclusive range [lo, hi]; the empty range ("none") has lo > hi."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: object) -> "VersionRange":
        if not isinstance(text, str):
            raise ValueError(f"version range must be a string, got {text!r}")
        text = text.strip()
        if text == "none":
            return NONE
        m = _RANGE.match(text)
        if not m:
            raise ValueError(f"bad version range {text!r} (want e.g. '0-12', '3+', '5' or 'none')")
        lo = int(m.group(1))
        if m.group(2):
            hi = MAX_VERSION
        elif m.group(3) is not None:
            hi = int(m.group(3))
        else:
            hi = lo
        if lo > hi or hi > MAX_VERSION:
            raise ValueError(f"bad version range {text!r}")
        return cls(lo, hi)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def intersect(self, other: "VersionRange") -> "VersionRange":
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return VersionRange(lo, hi) if lo <= hi else NONE

    def covers(self, other: "VersionRange") -> bool:
        """True if every version of `other` is in this range."""
        return other.empty or (self.lo <= other.lo and other.hi <= self.hi)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = VersionRange(1, 0)
