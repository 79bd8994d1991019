"""The ``--listen`` value: one or more Kafka-style listeners. Pure.

    parse_listeners("127.0.0.1:9190")                       # [Listener("PLAINTEXT", "127.0.0.1", 9190)]
    parse_listeners("PLAINTEXT://:9190,SECURE://0.0.0.0:9191")

Each is ``[NAME://]HOST:PORT`` (no name: PLAINTEXT); ``--listen`` may be given several times
or hold a comma-separated list, as Kafka's ``listeners``. Names are unique; which security
protocol a name speaks is ``listener.security.protocol.map`` (controller.shell.security.config).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int


def _hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"must be [NAME://]HOST:PORT with PORT in 0..65535, got {text!r}")
    return host.strip("[]"), int(port)


def parse_listeners(text: str) -> list[Listener]:
    out: list[Listener] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ValueError(f"empty listener in {text!r}")
        name, sep, rest = item.partition("://")
        if not sep:
            name, rest = "PLAINTEXT", item
        if not _NAME.fullmatch(name):
            raise ValueError(f"bad listener name {name!r}")
        name = name.upper()
        if any(listener.name == name for listener in out):
            raise ValueError(f"listener {name} given twice")
        out.append(Listener(name, *_hostport(rest)))
    return out
