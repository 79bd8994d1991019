"""The config catalogue (protocol/kafka_configs.py): consistent with itself and with the Kafka
3.9 facts the rest of the project relies on."""

import pytest

from protocol.kafka_configs import (
    BOOLEAN,
    BROKER_CONFIGS,
    BROKER_SYNONYM_GROUPS,
    DOUBLE,
    INT,
    LIST,
    LONG,
    PASSWORD,
    TOPIC_CONFIGS,
    listener_base,
    parse,
    problem,
    topic_problems,
    topic_value,
)


def test_every_config_is_documented_and_its_default_passes_its_own_rule():
    for catalogue in (TOPIC_CONFIGS, BROKER_CONFIGS):
        for name, d in catalogue.items():
            assert d.doc, name
            if d.default is not None:
                assert problem(name, d.default, catalogue) is None, name


def test_every_broker_synonym_is_a_broker_config_of_the_same_kind():
    for name, d in TOPIC_CONFIGS.items():
        for synonym, factor in d.synonyms:
            b = BROKER_CONFIGS[synonym]
            assert (b.type == d.type) if factor == 1 else b.type == INT, (name, synonym)
        if d.synonyms:  # the first synonym is the dynamic one, except the message format version
            assert BROKER_CONFIGS[d.synonyms[0][0]].dynamic == (name != "message.format.version"), name
    for group in BROKER_SYNONYM_GROUPS:
        assert all(n in BROKER_CONFIGS for n in group)


def test_kafka_facts():
    t = TOPIC_CONFIGS
    assert (t["retention.ms"].default, t["retention.ms"].type) == ("604800000", LONG)
    assert [s for s, _ in t["retention.ms"].synonyms] == ["log.retention.ms", "log.retention.minutes",
                                                         "log.retention.hours"]
    assert (t["min.insync.replicas"].default, t["cleanup.policy"].type) == ("1", LIST)
    assert (t["max.message.bytes"].default, t["min.cleanable.dirty.ratio"].type) == ("1048588", DOUBLE)
    assert t["unclean.leader.election.enable"].type == BOOLEAN
    assert not t["leader.replication.throttled.replicas"].synonyms  # no broker synonym, as in Kafka
    assert len(t) == 36
    assert {n for n, d in BROKER_CONFIGS.items() if d.type == PASSWORD} >= {
        "password.encoder.secret", "delegation.token.secret.key", "ssl.keystore.password", "sasl.jaas.config"}
    assert not BROKER_CONFIGS["log.retention.hours"].dynamic and BROKER_CONFIGS["log.retention.ms"].dynamic


@pytest.mark.parametrize("name, value, words", [
    ("retention.ms", "1h", "Not a number of type LONG"),
    ("retention.ms", "-2", "Value must be at least -1"),
    ("segment.bytes", "2147483648", "Not a number of type INT"),
    ("segment.bytes", "13", "Value must be at least 14"),
    ("min.cleanable.dirty.ratio", "x", "Not a number of type DOUBLE"),
    ("min.cleanable.dirty.ratio", "1.01", "Value must be no more than 1"),
    ("cleanup.policy", "compact, erase", "String must be one of: compact, delete"),
    ("compression.type", "GZIP", "String must be one of"),  # case-sensitive, as Kafka's ValidString
    ("compression.gzip.level", "0", "between 1 and 9"),
    ("compression.zstd.level", "23", "Value must be no more than 22"),
    ("preallocate", "1", "Expected value to be either true or false"),
    ("leader.replication.throttled.replicas", "*,0:1", "[partitionId]:[brokerId]"),
    ("message.format.version", "9.9.9", "Unknown"),
])
def test_bad_values_are_worded_as_kafka_words_them(name, value, words):
    got = problem(name, value, TOPIC_CONFIGS)
    assert got.startswith(f"Invalid value {value} for configuration {name}: ") and words in got


@pytest.mark.parametrize("name, value", [
    ("retention.ms", " -1 "), ("cleanup.policy", "compact, delete"), ("cleanup.policy", ""),
    ("compression.gzip.level", "-1"), ("preallocate", "TRUE"), ("min.cleanable.dirty.ratio", "0.9"),
    ("leader.replication.throttled.replicas", "0:1, 1:2"), ("message.format.version", "2.8-IV1"),
    ("retention.bytes", "-5"),  # no validator in Kafka: any long
])
def test_good_values_pass(name, value):
    assert problem(name, value, TOPIC_CONFIGS) is None


def test_parse_and_cross_checks():
    assert parse(LIST, " a , b ") == (["a", "b"], None) and parse(LIST, "") == ([], None)
    assert parse(BOOLEAN, "False") == (False, None)
    assert "conflict" in topic_problems({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "9"})
    assert topic_problems({"min.compaction.lag.ms": "10"}) is None


def test_topic_values_in_the_topic_configs_unit():
    assert topic_value("retention.ms", {}, []) == "604800000"
    assert topic_value("retention.ms", {}, [{"log.retention.minutes": "2"}]) == "120000"
    assert topic_value("retention.ms", {}, [{"log.retention.hours": "1"}, {"log.retention.ms": "5"}]) == "5"
    assert topic_value("retention.ms", {}, [{"log.retention.hours": "-1"}]) == "-1"
    assert topic_value("retention.ms", {"retention.ms": "7"}, [{"log.retention.ms": "5"}]) == "7"
    assert topic_value("flush.ms", {}, []) == str(2**63 - 1)  # log.flush.scheduler.interval.ms's default
    assert topic_value("no.such", {}, []) is None


def test_listener_prefixed_configs_are_their_base_config():
    assert listener_base("listener.name.secure.ssl.key.password").type == PASSWORD
    assert listener_base("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config").type == PASSWORD
    assert listener_base("listener.name.x.no.such") is None and listener_base("ssl.key.password") is None
