"""Who a connection is: Kafka's principals (``User:<name>``) and its
``ssl.principal.mapping.rules``. Pure.

    rules = parse_rules("RULE:^CN=(.*?),OU=ops.*$/$1/L,DEFAULT")
    dn = distinguished_name(peercert["subject"])      # "CN=Alice,OU=ops,O=example" (RFC 2253 order)
    map_dn(dn, rules)                                 # "alice"
    principal_name = f"User:{map_dn(dn, rules)}"

As Kafka: a connection without SASL and without a client certificate is ``User:ANONYMOUS``;
a TLS client certificate gives ``User:<mapped subject>``; SASL gives ``User:<user name>``.
Rules are tried in order and the first whose pattern matches the whole DN gives the name
(``$1``... are its groups; a trailing ``/L`` or ``/U`` lower- or upper-cases it); ``DEFAULT``
gives the DN as it is; no matching rule is an error, as in Kafka's SslPrincipalMapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"

# Python's ssl names -> the short names Java's X500Principal.getName() (RFC 2253) prints.
_SHORT = {
    "commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "localityName": "L",
    "stateOrProvinceName": "ST", "countryName": "C", "streetAddress": "STREET", "domainComponent": "DC",
    "userId": "UID",
}
_RULE = re.compile(r"RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU])?")


class PrincipalError(ValueError):
    """Bad mapping rules, or a DN no rule maps."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str | None = None


def parse_rules(text: str) -> list[Rule]:
    rules, rest = [], text.strip()
    while rest:
        if rest.startswith("DEFAULT"):
            rules.append(Rule(None))
            rest = rest[len("DEFAULT"):]
        else:
            match = _RULE.match(rest)
            if match is None:
                raise PrincipalError(f"ssl.principal.mapping.rules: cannot read a rule at {rest[:30]!r}")
            try:
                pattern = re.compile(match.group(1))
            except re.error as e:
                raise PrincipalError(f"ssl.principal.mapping.rules: bad pattern {match.group(1)!r}: {e}") from None
            # Java's $1 is Python's \g<1>.
            replacement = re.sub(r"\$(\d+)", r"\\g<\1>", match.group(2).replace("\\/", "/"))
            rules.append(Rule(pattern, replacement, match.group(3)))
            rest = rest[match.end():]
        rest = rest.lstrip()
        if rest.startswith(","):
            rest = rest[1:].lstrip()
        elif rest:
            raise PrincipalError(f"ssl.principal.mapping.rules: expected ',' at {rest[:30]!r}")
    return rules or [Rule(None)]


def map_dn(dn: str, rules: list[Rule]) -> str:
    for rule in rules:
        if rule.pattern is None:
            return dn
        if rule.pattern.fullmatch(dn):
            name = rule.pattern.sub(rule.replacement, dn)
            return name.lower() if rule.case == "L" else name.upper() if rule.case == "U" else name
    raise PrincipalError(f"no ssl.principal.mapping.rules rule matches {dn!r}")


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject) -> str:
    """``ssl.SSLSocket.getpeercert()["subject"]`` as Java prints it (RFC 2253: most specific
    first, so the reverse of the certificate's order)."""
    rdns = []
    for rdn in reversed(subject or ()):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)
