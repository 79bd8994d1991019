"""Kafka's configuration files: Java ``.properties`` (``key=value`` or ``key: value`` lines,
``#``/``!`` comments, a trailing backslash continues a line), as ``server.properties`` and
``--command-config`` files are written, and the JAAS option string of ``sasl.jaas.config``.

    props = parse_properties(text)          # {"security.protocol": "SASL_SSL", ...}
    parse_jaas('org.apache.kafka.common.security.scram.ScramLoginModule required '
               'username="alice" password="s3cret";')     # {"username": "alice", "password": "s3cret"}

Bad input raises ValueError naming the line.
"""

from __future__ import annotations

import re


def parse_properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry, logical = "".join(logical), []
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", entry) or re.match(r"([^=:\s]+)$", entry)
        if match is None:
            raise ValueError(f"not a key=value line: {raw!r}")
        key = match.group(1)
        out[key] = (match.group(2) if match.lastindex and match.lastindex >= 2 else "").strip()
    return out


_JAAS = re.compile(r'\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$', re.S)
_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def parse_jaas(text: str) -> dict[str, str]:
    """The options of one JAAS login-module entry (``Module flag k="v" ...;``)."""
    match = _JAAS.match(text)
    if match is None:
        raise ValueError("sasl.jaas.config must be 'LoginModule required key=\"value\" ...;'")
    options, rest = {}, match.group(3)
    while rest.strip():
        opt = _OPTION.match(rest)
        if opt is None:
            raise ValueError(f"sasl.jaas.config: cannot read option at {rest.strip()[:20]!r}")
        value = opt.group(2) if opt.group(2) is not None else opt.group(3)
        options[opt.group(1)] = re.sub(r"\\(.)", r"\1", value)
        rest = rest[opt.end():]
    return options
