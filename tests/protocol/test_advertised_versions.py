"""Every API the admin listener or a simulated broker answers advertises every version its spec
defines, and the specs define every version Kafka's current release does, so that a client
upgrade never falls back to an older version or fails against this project.

KAFKA_RELEASE holds Kafka's ranges as its message definitions give them: Kafka 4.3 for the
client APIs; Kafka 3.9, the last release that has them, for the ZooKeeper-mode
controller-to-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata) and the broker-to-controller
ControlledShutdown, which Kafka 4.0 removed.
Kafka 4.0 also dropped some old versions (DescribeConfigs v0, DescribeLogDirs v0); the specs
keep them, as older clients still send them, so a spec's range may start lower than Kafka's
but must end exactly where Kafka's does.
"""

from __future__ import annotations

import pytest

import protocol
from controller.shell.admin.handler import served_versions as listener_versions
from controller.shell.admin.registry import build_table
from controller.shell.security.session import SASL_AUTHENTICATE_VERSIONS, SASL_HANDSHAKE_VERSIONS
from sim.versions import served_versions as sim_versions

# api key: (min, max) in Kafka's current release (3.9 for 4, 5, 6).
KAFKA_RELEASE = {
    3: (0, 13),  # Metadata
    4: (0, 7),  # LeaderAndIsr (3.9)
    5: (0, 4),  # StopReplica (3.9)
    6: (0, 8),  # UpdateMetadata (3.9)
    7: (0, 3),  # ControlledShutdown (3.9)
    15: (0, 6),  # DescribeGroups (v6: KIP-1043)
    16: (0, 5),  # ListGroups (v5: KIP-848)
    56: (0, 3),  # AlterPartition (KIP-497; v3: KIP-903; 3.9)
    67: (0, 0),  # AllocateProducerIds (KIP-730; 3.9)
    66: (0, 2),  # ListTransactions (KIP-664; v2: KIP-1152)
    17: (0, 1),  # SaslHandshake (SASL listeners)
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics (Kafka 4.0 dropped v0-1; the spec keeps them)
    20: (1, 6),  # DeleteTopics (Kafka 4.0 dropped v0)
    33: (0, 2),  # AlterConfigs
    37: (0, 3),  # CreatePartitions (KIP-195)
    43: (0, 2),  # ElectLeaders (KIP-460)
    44: (0, 1),  # IncrementalAlterConfigs (KIP-339)
    29: (1, 3),  # DescribeAcls
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    34: (1, 2),  # AlterReplicaLogDirs (Kafka 4.0 dropped v0)
    35: (1, 5),  # DescribeLogDirs
    36: (0, 2),  # SaslAuthenticate (SASL listeners)
    45: (0, 1),  # AlterPartitionReassignments
    46: (0, 0),  # ListPartitionReassignments
    50: (0, 0),  # DescribeUserScramCredentials (KIP-554)
    51: (0, 0),  # AlterUserScramCredentials (KIP-554)
    48: (0, 1),  # DescribeClientQuotas (KIP-546)
    49: (0, 1),  # AlterClientQuotas (KIP-546)
}
# The private keys of the KIP APIs (docs/DESIGN.md section 5) exist only here.
PRIVATE_KEYS = range(10000, 10006)
# Versions a server knowingly leaves out, and why (none now: SaslHandshake v0, whose bare SASL
# tokens follow without Kafka headers, is served too).
KNOWN_GAPS: dict[int, set[int]] = {}


def _listener() -> dict[int, tuple[int, int]]:
    """A SASL listener's table: the admin APIs plus SaslHandshake and SaslAuthenticate."""
    ranges = {v["api_key"]: (v["min_version"], v["max_version"]) for v in listener_versions(build_table())}
    return ranges | {17: SASL_HANDSHAKE_VERSIONS, 36: SASL_AUTHENTICATE_VERSIONS}


SERVERS = {"listener": _listener, "simulated broker": sim_versions}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_every_answered_api_advertises_every_version_its_spec_defines(server):
    advertised = SERVERS[server]()
    specs = protocol.supported_apis()
    missing = {}
    for key, (low, high) in advertised.items():
        s_low, s_high = specs[key]
        left_out = set(range(s_low, s_high + 1)) - set(range(low, high + 1)) - KNOWN_GAPS.get(key, set())
        if left_out or high > s_high or low < s_low:
            missing[key] = ((low, high), (s_low, s_high))
    assert not missing, f"{server} advertises other than the specs define (advertised, spec): {missing}"


def test_known_gaps_are_still_gaps():
    """An exception above lapses once the versions are served: it must then be removed."""
    advertised = _listener()
    for key, versions in KNOWN_GAPS.items():
        low, high = advertised[key]
        assert not versions & set(range(low, high + 1)), f"api {key} now serves {versions}: drop it from KNOWN_GAPS"


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_every_answered_kafka_api_has_kafkas_release_range(server):
    kafka_keys = {key for key in SERVERS[server]() if key not in PRIVATE_KEYS}
    assert kafka_keys <= set(KAFKA_RELEASE), f"no Kafka range recorded for {kafka_keys - set(KAFKA_RELEASE)}"


def _answered() -> set[int]:
    return {key for server in SERVERS.values() for key in server()} - set(PRIVATE_KEYS)


@pytest.mark.parametrize("key", sorted(KAFKA_RELEASE))
def test_specs_cover_kafkas_release_and_end_where_it_ends(key):
    if key not in _answered():
        pytest.skip(f"api {key} is not answered here (yet)")
    low, high = protocol.supported_apis()[key]
    k_low, k_high = KAFKA_RELEASE[key]
    assert low <= k_low and high == k_high, (protocol.api_name(key), (low, high), (k_low, k_high))


def test_a_handler_advertising_less_than_its_spec_is_caught():
    """The check above is not vacuous: a table whose Metadata handler stops at v12 fails it."""
    import dataclasses

    table = build_table()
    table[3] = dataclasses.replace(table[3], max_version=12)
    advertised = {v["api_key"]: (v["min_version"], v["max_version"]) for v in listener_versions(table)}
    assert advertised[3] == (0, 12) != protocol.supported_apis()[3]
