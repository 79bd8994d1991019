"""The ``--listen`` value: one or more Kafka-style listeners. Pure.

    parse_listeners("127.0.0.1:9190")                       # [Listener("PLAINTEXT", "127.0.0.1", 9190)]
    parse_listeners("PLAINTEXT://127.0.0.1:9190,SECURE://0.0.0.0:9191")
    advertised_addresses(parse_listeners("SECURE://0.0.0.0:9191"), "SECURE://ctl-1.example:9191")

Each is ``[NAME://]HOST:PORT`` (no name: PLAINTEXT); ``--listen`` may be given several times
or hold a comma-separated list, as Kafka's ``listeners``. Names are unique; which security
protocol a name speaks is ``listener.security.protocol.map`` (controller.shell.security.config).
``--advertised-listen`` says where clients reach them (:func:`advertised_addresses`), as Kafka's
``advertised.listeners``.
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


# Addresses a socket binds to mean "every interface": no client can be told to connect there
# (Kafka refuses to advertise them: "advertised.listeners cannot use the nonroutable
# meta-address 0.0.0.0").
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "0:0:0:0:0:0:0:0"})


def advertised_addresses(listeners: list[Listener], advertised: str | None) -> dict[str, tuple[str, int]]:
    """Where clients are told to reach each listener (its ``/reassignd/controllers`` entry,
    Metadata): ``advertised`` is Kafka's ``advertised.listeners`` form, ``NAME://HOST:PORT`` for
    any of them (comma-separated), or a bare ``HOST:PORT`` for the first; the others at their
    bound address. ValueError for a name no listener has, an advertised port 0, or an address
    that is a wildcard (a listener bound to 0.0.0.0 needs an advertised address, as in Kafka).

        advertised_addresses([Listener("PLAINTEXT", "0.0.0.0", 9190)], "ctl-1:9190")  # {"PLAINTEXT": ("ctl-1", 9190)}
    """
    told = {listener.name: (listener.host, listener.port) for listener in listeners}
    given: list[Listener] = []
    if advertised:
        if "://" in advertised:
            given = parse_listeners(advertised)
        else:
            given = [Listener(listeners[0].name, *_hostport(advertised))]
    for a in given:
        if a.name not in told:
            raise ValueError(f"advertised listener {a.name} is none of the listeners ({', '.join(told)}), "
                             "as Kafka requires of advertised.listeners")
        if a.port == 0:
            raise ValueError(f"advertised listener {a.name}: port 0 is where nothing listens")
        told[a.name] = (a.host, a.port)
    for name, (host, _) in told.items():
        if host in WILDCARD_HOSTS:
            raise ValueError(f"listener {name} binds {host}, which no client can connect to: give its address with "
                             f"--advertised-listen {name}://HOST:PORT (Kafka refuses to advertise {host} too)")
    return told
