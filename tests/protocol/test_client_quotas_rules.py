"""protocol.client_quotas, pure: the filter's one rule per entity type agrees with Kafka's
ZooKeeper-mode describe (ZkAdminManager.handleDescribeClientQuotas / handleDescribeIpQuotas,
transcribed below as its three fetches and its ``matches``) on random entities and filters, and
Java's Double.toString / parseDouble spellings."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.client_quotas import (
    CLIENT_ID,
    IP,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    USER,
    QuotaError,
    java_double,
    parse_filter,
    read_value,
)

NAMES = st.sampled_from([None, "a", "b"])
ENTITIES = st.one_of(
    st.tuples(NAMES).map(lambda n: ((USER, n[0]),)),
    st.tuples(NAMES).map(lambda n: ((CLIENT_ID, n[0]),)),
    st.tuples(NAMES, NAMES).map(lambda n: ((USER, n[0]), (CLIENT_ID, n[1]))),
    st.tuples(NAMES).map(lambda n: ((IP, n[0]),)),
)
COMPONENT = st.tuples(st.sampled_from([MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED]), st.sampled_from(["a", "b"]))


def kafka_selects(components: dict, strict: bool, entity) -> bool:
    """Kafka's describe, as written: which fetch would return the entity, then ``matches``.
    A component is Scala's Option of Java's match: ``None`` for SPECIFIED (null match),
    ``Some(None)`` for DEFAULT (Optional.empty), ``Some(name)`` for EXACT."""
    def match(t):
        if t not in components:
            return "absent"
        kind, name = components[t]
        return {MATCH_EXACT: ("some", name), MATCH_DEFAULT: ("some", None), MATCH_SPECIFIED: ("none",)}[kind]

    names = dict(entity)
    user_c, client_c, ip_c = (components.get(t) for t in (USER, CLIENT_ID, IP))
    if IP in names:  # handleDescribeIpQuotas, asked only without user and client components
        if user_c is not None or client_c is not None:
            return False
        if ip_c is None:
            return not strict  # allIps
        m = match(IP)
        return m == ("none",) or m[1] == names[IP]  # the exact fetch of that name (or <default>), or all

    if ip_c is not None:  # handleDescribeClientQuotas is asked only without an ip component
        return False

    def wants_exact(c):
        return c is not None and c[0] in (MATCH_EXACT, MATCH_DEFAULT)

    exact_user, exact_client = wants_exact(user_c), wants_exact(client_c)
    exclude_user, exclude_client = strict and user_c is None, strict and client_c is None
    u, c = names.get(USER, "absent"), names.get(CLIENT_ID, "absent")
    user_name = match(USER)[1] if exact_user else None
    client_name = match(CLIENT_ID)[1] if exact_client else None
    fetched = False
    if c == "absent":  # userEntries
        if exact_user and exclude_client:
            fetched = u == user_name
        elif not exclude_user and not exact_client:
            fetched = True
    elif u == "absent":  # clientIdEntries
        if exclude_user and exact_client:
            fetched = c == client_name
        elif not exact_user and not exclude_client:
            fetched = True
    else:  # bothEntries
        if exact_user and exact_client:
            fetched = (u, c) == (user_name, client_name)
        elif not exclude_user and not exclude_client:
            fetched = True

    def matches(t, name):
        m = match(t)
        if m == "absent":
            return name == "absent" or not strict
        if m == ("none",):
            return name != "absent"
        return name != "absent" and name == m[1]

    return fetched and matches(USER, u) and matches(CLIENT_ID, c)


@settings(max_examples=3000, deadline=None)
@given(entity=ENTITIES, comps=st.dictionaries(st.sampled_from([USER, CLIENT_ID, IP]), COMPONENT, max_size=3),
       strict=st.booleans())
def test_the_filter_selects_what_kafkas_zookeeper_mode_describe_returns(entity, comps, strict):
    try:
        filt = parse_filter([(t, kind, name if kind == MATCH_EXACT else None) for t, (kind, name) in comps.items()],
                            strict)
    except QuotaError:
        assert IP in comps and (USER in comps or CLIENT_ID in comps)  # the one combination refused
        return
    assert filt.selects(entity) == kafka_selects(comps, strict, entity), (entity, comps, strict)


def test_java_double_spellings():
    assert [java_double(v) for v in (1024.0, 12.5, 0.001, 9999999.0, 1e7, 2.5e-4, 1.5e300, 0.1 + 0.2)] == [
        "1024.0", "12.5", "0.001", "9999999.0", "1.0E7", "2.5E-4", "1.5E300", "0.30000000000000004"]


def test_read_value_takes_javas_spellings_and_only_them():
    assert [read_value(t) for t in ("1024", " 1.5E3 ", "2d", ".5", "5.", "-1", "1e-3")] == [
        1024.0, 1500.0, 2.0, 0.5, 5.0, -1.0, 0.001]
    assert math.isnan(read_value("NaN")) and read_value("-Infinity") == -math.inf
    assert [read_value(t) for t in ("", "fast", "1_000", "inf", "nan", "0x10", "1e", "1,5")] == [None] * 8


@given(st.floats(min_value=1e-300, max_value=1e300))
def test_java_double_reads_back(value):
    assert read_value(java_double(value)) == value
