"""CHART.png: replicas and preferred leaders per broker, before (grey) and after (blue).

:class:`Canvas` (pixels, text, PNG) also draws `kafka-reassign --progress --chart` (client/chart.py).

Written with zlib and a built-in 5x7 pixel font, so the planner needs no plotting library.
Two panels, one bar pair per broker (brokers grouped per bar when there are too many to draw),
dashed lines at the fair targets R and R+1.

Usage::

    write_chart(report, "chart.png")
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

# 5x7 glyphs, one int per row, the high bit of 5 on the left.
_FONT = {
    "0": (14, 17, 19, 21, 25, 17, 14), "1": (4, 12, 4, 4, 4, 4, 14), "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14), "4": (2, 6, 10, 18, 31, 2, 2), "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14), "7": (31, 1, 2, 4, 8, 8, 8), "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12), "A": (14, 17, 17, 31, 17, 17, 17), "B": (30, 17, 17, 30, 17, 17, 30),
    "C": (14, 17, 16, 16, 16, 17, 14), "D": (28, 18, 17, 17, 17, 18, 28), "E": (31, 16, 16, 30, 16, 16, 31),
    "F": (31, 16, 16, 30, 16, 16, 16), "G": (14, 17, 16, 23, 17, 17, 15), "H": (17, 17, 17, 31, 17, 17, 17),
    "I": (14, 4, 4, 4, 4, 4, 14), "J": (7, 2, 2, 2, 2, 18, 12), "K": (17, 18, 20, 24, 20, 18, 17),
    "L": (16, 16, 16, 16, 16, 16, 31), "M": (17, 27, 21, 21, 17, 17, 17), "N": (17, 17, 25, 21, 19, 17, 17),
    "O": (14, 17, 17, 17, 17, 17, 14), "P": (30, 17, 17, 30, 16, 16, 16), "Q": (14, 17, 17, 17, 21, 18, 13),
    "R": (30, 17, 17, 30, 20, 18, 17), "S": (15, 16, 16, 14, 1, 1, 30), "T": (31, 4, 4, 4, 4, 4, 4),
    "U": (17, 17, 17, 17, 17, 17, 14), "V": (17, 17, 17, 17, 17, 10, 4), "W": (17, 17, 17, 21, 21, 21, 10),
    "X": (17, 17, 10, 4, 10, 17, 17), "Y": (17, 17, 17, 10, 4, 4, 4), "Z": (31, 1, 2, 4, 8, 16, 31),
    " ": (0, 0, 0, 0, 0, 0, 0), "-": (0, 0, 0, 31, 0, 0, 0), ":": (0, 12, 12, 0, 12, 12, 0),
    ".": (0, 0, 0, 0, 0, 12, 12), ",": (0, 0, 0, 0, 12, 4, 8), "/": (1, 1, 2, 4, 8, 16, 16),
    "(": (2, 4, 8, 8, 8, 4, 2), ")": (8, 4, 2, 2, 2, 4, 8), "+": (0, 4, 4, 31, 4, 4, 0),
    "=": (0, 0, 31, 0, 31, 0, 0),
}
WHITE, BLACK, GREY, BLUE, RED, LIGHT = (255, 255, 255), (30, 30, 30), (170, 170, 170), (40, 110, 200), (200, 60, 60), (225, 225, 225)
MAX_BARS = 300  # bar pairs per panel; more brokers are grouped (the bar shows the group's mean)
PANEL_H = 260
SCALE = 2  # font pixels per glyph pixel


class Canvas:
    def __init__(self, w: int, h: int):
        self.w, self.h = w, h
        self.px = np.full((h, w, 3), 255, dtype=np.uint8)

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, int(x0)), min(self.w, int(x1))
        y0, y1 = max(0, int(y0)), min(self.h, int(y1))
        if x1 > x0 and y1 > y0:
            self.px[y0:y1, x0:x1] = color

    def text(self, x, y, s, color=BLACK):
        for ch in s.upper():
            glyph = _FONT.get(ch, _FONT[" "])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (16 >> col):
                        self.rect(x + col * SCALE, y + row * SCALE, x + (col + 1) * SCALE, y + (row + 1) * SCALE, color)
            x += 6 * SCALE

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + self.px[y].tobytes() for y in range(self.h))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _grouped(values: np.ndarray, group: int) -> np.ndarray:
    n = len(values)
    pad = (-n) % group
    v = np.concatenate([values.astype(float), np.full(pad, np.nan)])
    return np.nanmean(v.reshape(-1, group), axis=1)


def render(report: dict) -> bytes:
    rows = [b for b in report["per_broker"]]
    n = max(len(rows), 1)
    group = -(-n // MAX_BARS)
    bars = -(-n // group)
    slot = max(4, min(28, 1200 // bars))
    left, right, top = 70, 20, 40
    width = left + bars * slot + right
    height = top + 2 * (PANEL_H + 60) + 30
    cv = Canvas(max(width, 520), height)
    title = f"{report['mode']}: {report['moves']} moves, lower bound {report['lower_bound']}"
    cv.text(left, 10, title)
    panels = [
        ("replicas per broker", "replicas_before", "replicas_after", report["replica_target"]),
        ("leaders per broker", "leaders_before", "leaders_after", report["leader_target"]),
    ]
    for i, (name, kb, ka, target) in enumerate(panels):
        y0 = top + i * (PANEL_H + 60) + 20
        before = _grouped(np.array([r[kb] for r in rows] or [0]), group)
        after = _grouped(np.array([r[ka] for r in rows] or [0]), group)
        top_v = max(float(np.nanmax(before)), float(np.nanmax(after)), float(target[1]), 1.0)
        label = name if group == 1 else f"{name} ({group} brokers per bar)"
        cv.text(left, y0, label)
        base = y0 + 20 + PANEL_H
        scale = (PANEL_H - 10) / top_v
        cv.rect(left - 2, y0 + 20, left - 1, base + 1, BLACK)
        cv.rect(left - 2, base, left + bars * slot, base + 1, BLACK)
        for tick in (0, top_v / 2, top_v):
            y = base - tick * scale
            cv.rect(left - 6, y, left - 2, y + 1, BLACK)
            cv.text(4, y - 7, f"{tick:.0f}")
        for b in range(bars):
            x = left + b * slot
            w = max(1, (slot - 2) // 2)
            if not np.isnan(before[b]):
                cv.rect(x + 1, base - before[b] * scale, x + 1 + w, base, GREY)
            if not np.isnan(after[b]):
                cv.rect(x + 1 + w, base - after[b] * scale, x + 1 + 2 * w, base, BLUE)
        for t_val in target:
            y = base - t_val * scale
            for x in range(left, left + bars * slot, 8):
                cv.rect(x, y, x + 4, y + 1, RED)
        if group == 1 and slot >= 26:  # room for broker ids under the bars
            for b, r in enumerate(rows):
                cv.text(left + b * slot + 1, base + 4, str(r["broker"])[-2:], BLACK)
    ly = height - 22
    cv.rect(left, ly, left + 14, ly + 14, GREY)
    cv.text(left + 20, ly, "before")
    cv.rect(left + 110, ly, left + 124, ly + 14, BLUE)
    cv.text(left + 130, ly, "after")
    cv.rect(left + 210, ly + 6, left + 224, ly + 8, RED)
    cv.text(left + 230, ly, "targets R, R+1")
    return cv.png()


def write_chart(report: dict, path) -> None:
    with open(path, "wb") as f:
        f.write(render(report))
