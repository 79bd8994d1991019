"""Client quotas (KIP-546): which entities and quota keys Kafka accepts, the checks of a value,
and the filters of DescribeClientQuotas, and the bodies' pure parts. Pure: no I/O (the two
requests over a ZooKeeper session are znodes.client_quotas', for the controller's listener and
the simulated brokers alike).

An entity names one or more entity types, each with a name or ``None`` for the type's default
entity (``<default>`` in ZooKeeper). Kafka accepts four shapes: a user, a client id, a user and
a client id together, or an IP; each has its quota keys::

    entity = parse_entity([("user", "alice"), ("client-id", None)])   # alice's default client
    keys = keys_for(entity)                 # {"producer_byte_rate": LONG, ...}
    text = stored_value(keys, "producer_byte_rate", 1024.0)           # "1024"
    filt = parse_filter([("user", MATCH_SPECIFIED, None)], strict=True)
    filt.selects(entity)                    # False: strict, and the entity also names a client id

The rules, in Kafka's order and words (ZkAdminManager.alterClientQuotas for the entities, its
current controller's ClientQuotaControlManager for the values, ZkAdminManager.describeClientQuotas
for the filters); every refusal is INVALID_REQUEST unless said:

    entity  no entity type -> "Invalid empty client quota entity"; a type named twice -> "Invalid
            empty client quota entity, duplicate entity entry <type>" (Kafka's words); a type
            other than user, client-id, ip -> "Unhandled client quota entity type: <type>"; an
            empty name -> "Empty <type> not supported"; an IP with a user or client id ->
            "Invalid quota entity combination, IP entity should not be used with user/client ID
            entity."; an IP that is neither an address nor a host name that resolves -> "<ip> is
            not a valid IP or resolvable host." (the shell resolves it; see ``ip_literal``).
    set     a key outside the entity's set -> "Invalid configuration key <key>"; a value not
            above 0 -> "Quota <key> must be greater than 0" (Kafka's current controller; its
            ZooKeeper-mode brokers took any value); a LONG or INT key whose value is not a whole
            number (within 1e-6) -> "Configuration <key> must be a LONG value" (or INT), or one
            beyond the type -> "Configuration <key> must be a LONG value" too. Stricter than
            Kafka: NaN and infinities are refused ("... must be a finite number"), which Kafka
            wrote as "NaN" and "Infinity" for its brokers to read.
    remove  any key: a quota key the entity has is removed, any other key is no change (so a
            removal never reaches the user's SCRAM credentials that share its znode; Kafka's
            ZooKeeper mode removed whatever key it was given).
    filter  a type named by two components -> "Duplicate <user|client|ip> filter component
            entity type"; an empty type -> "Unexpected empty filter component entity type";
            another type -> UNSUPPORTED_VERSION "Custom entity type '<type>' not supported"; an
            IP component with a user or client-id one -> "Invalid entity filter component
            combination, IP filter component should not be used with user or clientId filter
            component."; a match type other than 0-2 -> "Unexpected match type: <n>" and an
            exact match without a name -> "An exact match needs a name" (stricter than Kafka,
            which fails both UNKNOWN_SERVER_ERROR).

A filter selects an entity when every entity type agrees: a component that matches EXACT
names that name, DEFAULT the default entity, SPECIFIED any entity of the type (the default too,
as Kafka's ZooKeeper mode reads it); a type with no component may be in the entity only when
the filter is not strict. Only entities with at least one quota are listed.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass
from decimal import Decimal

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)  # also the order an entity's types are listed in

LONG, INT, DOUBLE = "LONG", "INT", "DOUBLE"  # Kafka's ConfigDef types of the quota keys
# Kafka's QuotaConfigs: a user's, a client id's and a user's client's quotas.
USER_CLIENT_KEYS = {
    "producer_byte_rate": LONG,
    "consumer_byte_rate": LONG,
    "request_percentage": DOUBLE,
    "controller_mutation_rate": DOUBLE,  # KIP-599
}
IP_KEYS = {"connection_creation_rate": INT}  # KIP-612
TYPE_LIMITS = {LONG: 2**63 - 1, INT: 2**31 - 1}
# Kafka's tolerance for a LONG or INT value sent as a double (1e-6 either way).
WHOLE_EPSILON = 1e-6

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
_FILTER_WORDS = {USER: "user", CLIENT_ID: "client", IP: "ip"}  # Kafka's "Duplicate <x> filter ..."

# Java's Double.parseDouble, decimal forms (hexadecimal ones are left out: no tool writes them).
_JAVA_DOUBLE = re.compile(r"([+-]?)(?:(NaN|Infinity)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?)")

Entity = tuple[tuple[str, "str | None"], ...]  # ((type, name or None for the default), ...) in ENTITY_TYPES order


class QuotaError(Exception):
    """A refused entity, value or filter: Kafka's message; ``unsupported`` for UNSUPPORTED_VERSION."""

    def __init__(self, message: str, unsupported: bool = False):
        super().__init__(message)
        self.message = message
        self.unsupported = unsupported


def parse_entity(pairs) -> Entity:
    """An entity from the request's (type, name) pairs, in ENTITY_TYPES order; QuotaError if
    Kafka refuses it (the IP's resolution is the caller's: ``ip_literal``)."""
    if not pairs:
        raise QuotaError("Invalid empty client quota entity")
    names: dict[str, str | None] = {}
    for entity_type, name in pairs:
        if entity_type in names:
            raise QuotaError(f"Invalid empty client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(f"Empty {entity_type} not supported")
        names[entity_type] = name
    if IP in names and len(names) > 1:
        raise QuotaError("Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
    return tuple((t, names[t]) for t in ENTITY_TYPES if t in names)


def keys_for(entity: Entity) -> dict[str, str]:
    """The quota keys the entity may have, with their types."""
    return IP_KEYS if entity[0][0] == IP else USER_CLIENT_KEYS


def stored_value(keys: dict[str, str], key: str, value: float) -> str:
    """The string a quota is stored as (a whole number for LONG and INT keys, Java's
    Double.toString for DOUBLE ones, as Kafka writes them); QuotaError if refused."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise QuotaError(f"Quota {key} must be a finite number")
    if value <= 0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind == DOUBLE:
        return java_double(value)
    whole = math.floor(value + WHOLE_EPSILON)
    if abs(whole - value) > WHOLE_EPSILON or whole > TYPE_LIMITS[kind]:
        raise QuotaError(f"Configuration {key} must be a {kind} value")
    return str(whole)


def java_double(value: float) -> str:
    """Java's Double.toString (JDK 19+, the shortest digits that read back): plain between 1e-3
    and 1e7 ("1024.0", "0.5"), else d.dddE<n> ("1.0E7", "2.5E-4")."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's repr is plain, with a ".0" on whole values, in this range
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + exponent - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{power}"


def read_value(text: str) -> float | None:
    """A stored quota as Kafka reads it (Java's Double.parseDouble: blanks around it, NaN,
    Infinity, a trailing d or f); None for text that is not a number."""
    m = _JAVA_DOUBLE.fullmatch(text.strip(" \t\n\r\f\v\0"))
    if m is None:
        return None
    sign, special, number = m.group(1), m.group(2), m.group(3)
    if special is not None:
        value = math.nan if special == "NaN" else math.inf
    else:
        value = float(number)
    return -value if sign == "-" else value


def ip_literal(name: str) -> bool:
    """Whether ``name`` is an IPv4 or IPv6 address as written (no resolution needed)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Filter:
    """DescribeClientQuotas' filter: per entity type, (match type, name) of its component."""

    components: dict[str, tuple[int, str | None]]
    strict: bool

    def selects(self, entity: Entity) -> bool:
        names = dict(entity)
        for entity_type in ENTITY_TYPES:
            component = self.components.get(entity_type)
            if component is None:
                if entity_type in names and self.strict:
                    return False
                continue
            if entity_type not in names:
                return False
            match_type, wanted = component
            name = names[entity_type]
            if match_type == MATCH_EXACT and name != wanted:
                return False
            if match_type == MATCH_DEFAULT and name is not None:
                return False
        return True


def parse_filter(components, strict: bool) -> Filter:
    """The filter of a request's (entity type, match type, match) components; QuotaError if
    Kafka refuses it."""
    out: dict[str, tuple[int, str | None]] = {}
    for entity_type, match_type, match in components:
        if entity_type in _FILTER_WORDS:
            if entity_type in out:
                raise QuotaError(f"Duplicate {_FILTER_WORDS[entity_type]} filter component entity type")
        elif entity_type == "":
            raise QuotaError("Unexpected empty filter component entity type")
        else:
            raise QuotaError(f"Custom entity type '{entity_type}' not supported", unsupported=True)
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise QuotaError(f"Unexpected match type: {match_type}")
        if match_type == MATCH_EXACT and match is None:
            raise QuotaError("An exact match needs a name")
        out[entity_type] = (match_type, match if match_type == MATCH_EXACT else None)
    if IP in out and (USER in out or CLIENT_ID in out):
        raise QuotaError("Invalid entity filter component combination, IP filter component should not be used with "
                         "user or clientId filter component.")
    return Filter(out, bool(strict))


# ---- the requests' bodies (both servers: the controller's listener, the simulated brokers) -----


def entity_data(pairs) -> list[dict]:
    """An entity as the wire carries it."""
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def describe_failure(code: int, message: str | None) -> dict:
    """DescribeClientQuotasRequest.getErrorResponse: the code and message, null entries."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "entries": None}


def alter_failure(body: dict, code: int, message: str | None) -> dict:
    """AlterClientQuotasRequest.getErrorResponse: every entry with the error."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": int(code), "error_message": message,
         "entity": entity_data((e["entity_type"], e["entity_name"]) for e in entry["entity"])}
        for entry in body.get("entries") or []]}
