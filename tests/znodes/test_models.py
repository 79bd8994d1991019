"""znodes.models: Kafka's exact znode formats, round trips, and malformed payloads.

Payloads marked "as Kafka writes it" are byte for byte what Kafka 2.4+ (or the KIPs) put in
ZooKeeper; the models must read them and write them back identically.
"""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from znodes import models, paths
from znodes.errors import ZnodeFormatError
from znodes.models import (
    BrokerRegistration,
    CancelReassignment,
    ConfigChangeNotification,
    ControllerEpoch,
    ControllerZnode,
    EntityConfig,
    IsrChangeNotification,
    PartitionState,
    ReassignEntry,
    ReassignmentRecord,
    ReassignPartitions,
    ReassignQueue,
    ThrottledRatesRemoval,
    ThrottledReplicasRemoval,
    TopicAssignment,
)

BROKER_PATH = "/brokers/ids/1"
TOPIC_PATH = "/brokers/topics/t"
STATE_PATH = "/brokers/topics/t/partitions/0/state"

# ---- Kafka's exact formats -----------------------------------------------------------------

KAFKA_PAYLOADS = [
    # Kafka 2.4-2.6 broker registration (v4)
    (
        BROKER_PATH,
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://host:9092"],'
        b'"jmx_port":-1,"host":"host","timestamp":"1600000000000","port":9092,"version":4}',
    ),
    # ...with a rack
    (
        BROKER_PATH,
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://host:9092"],'
        b'"rack":"r1","jmx_port":-1,"host":"host","timestamp":"1600000000000","port":9092,"version":4}',
    ),
    # Kafka 2.7+ (v5, features)
    (
        BROKER_PATH,
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","EXTERNAL":"SSL"},'
        b'"endpoints":["PLAINTEXT://kafka-1:29092","EXTERNAL://localhost:9092"],"jmx_port":-1,"port":29092,'
        b'"host":"kafka-1","version":5,"timestamp":"1625336133848"}',
    ),
    (TOPIC_PATH, b'{"version":1,"partitions":{"0":[1,2]}}'),
    (
        TOPIC_PATH,
        b'{"version":2,"partitions":{"0":[4,5,6,1,2,3],"1":[2,3]},"adding_replicas":{"0":[4,5,6]},'
        b'"removing_replicas":{"0":[1,2,3]}}',
    ),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}'),
    (
        TOPIC_PATH,
        b'{"removing_replicas":{},"partitions":{"0":[0]},"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ",'
        b'"adding_replicas":{},"version":3}',
    ),
    (STATE_PATH, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'),
    ("/controller", b'{"version":1,"brokerid":1,"timestamp":"1600000000000"}'),
    ("/controller_epoch", b"3"),
    (
        "/isr_change_notification/isr_change_0000000000",
        b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}',
    ),
    ("/config/topics/t", b'{"version":1,"config":{"follower.replication.throttled.replicas":"0:1,0:2"}}'),
    ("/config/brokers/1", b'{"version":1,"config":{"leader.replication.throttled.rate":"1000000"}}'),
    ("/config/changes/config_change_0000000007", b'{"version":2,"entity_path":"topics/t"}'),
    ("/config/changes/config_change_0000000008", b'{"version":2,"entity_path":"brokers/<default>"}'),
    (
        "/admin/reassign_partitions",
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6],"original_replicas":[1,2,3]}]}',
    ),
    # Kafka 2.x tools and Yelp's kafka-cluster-manager: no original_replicas
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}'),
    (
        "/admin/reassign_partitions",
        b'{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1,2],"log_dirs":["any","/data/k1"]}]}',
    ),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[]}'),
    ("/admin/reassignments/t/0", b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3]}'),
    (
        "/admin/reassign_partitions_queue",
        b'{"version":1,"partitions":[{"topic":"foo1","partition":0,"replicas":[1,2,4],"original_replicas":[1,2,3]}]}',
    ),
    ("/admin/throttled_replicas_removal", b'{"version":1,"topics":["t","u"]}'),
    ("/admin/throttled_rates_removal", b'{"version":1,"brokers":[1,2]}'),
    ("/admin/cancel_reassignment_in_progress", b""),
    # kafka-preferred-replica-election.sh --zookeeper (PreferredReplicaElectionZNode.encode)
    ("/admin/preferred_replica_election", b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'),
]


@pytest.mark.parametrize("path, payload", KAFKA_PAYLOADS)
def test_kafka_payloads_read_and_write_back_byte_for_byte(path, payload):
    model = models.parse(path, payload)
    assert model.to_bytes() == payload
    assert type(models.parse(path, model.to_bytes())) is type(model)


def test_broker_v4_fields():
    b = models.parse(BROKER_PATH, KAFKA_PAYLOADS[1][1])
    assert isinstance(b, BrokerRegistration)
    assert (b.version, b.host, b.port, b.jmx_port, b.timestamp, b.rack) == (4, "host", 9092, -1, "1600000000000", "r1")
    assert b.endpoints == ["PLAINTEXT://host:9092"]
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in b.parsed_endpoints()] == [
        ("PLAINTEXT", "host", 9092, "PLAINTEXT")
    ]


def test_broker_v5_features_and_listener_map():
    b = models.parse(BROKER_PATH, KAFKA_PAYLOADS[2][1])
    assert b.version == 5 and b.features == {}
    assert [(e.listener, e.port, e.security_protocol) for e in b.parsed_endpoints()] == [
        ("PLAINTEXT", 29092, "PLAINTEXT"),
        ("EXTERNAL", 9092, "SSL"),
    ]
    with_features = BrokerRegistration.from_bytes(
        BROKER_PATH,
        b'{"features":{"feature_1":{"min_version":1,"max_version":3}},"listener_security_protocol_map":'
        b'{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:1"],"jmx_port":9999,"port":1,"host":"h",'
        b'"version":5,"timestamp":"1"}',
    )
    assert with_features.features == {"feature_1": {"min_version": 1, "max_version": 3}}


@pytest.mark.parametrize(
    "payload, listeners",
    [
        (b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}', ["PLAINTEXT"]),
        (
            b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
            b'"endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"]}',
            ["PLAINTEXT", "SSL"],
        ),
        (
            b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
            b'"endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"],"rack":"dc1"}',
            ["PLAINTEXT", "SSL"],
        ),
        # v4 whose broker has no PLAINTEXT listener: Kafka writes host null, port -1
        (
            b'{"listener_security_protocol_map":{"CLIENT":"SASL_SSL"},"endpoints":["CLIENT://[::1]:9094"],'
            b'"jmx_port":-1,"host":null,"timestamp":"1","port":-1,"version":4}',
            ["CLIENT"],
        ),
    ],
)
def test_older_and_unusual_broker_registrations(payload, listeners):
    b = BrokerRegistration.from_bytes(BROKER_PATH, payload)
    assert [e.listener for e in b.parsed_endpoints()] == listeners
    assert BrokerRegistration.from_bytes(BROKER_PATH, b.to_bytes()) == b


def test_topic_assignment_fields():
    t = models.parse(TOPIC_PATH, KAFKA_PAYLOADS[4][1])
    assert t.partitions == {0: [4, 5, 6, 1, 2, 3], 1: [2, 3]}
    assert t.adding_replicas == {0: [4, 5, 6]} and t.removing_replicas == {0: [1, 2, 3]}
    v3 = models.parse(TOPIC_PATH, KAFKA_PAYLOADS[6][1])
    assert v3.version == 3 and v3.topic_id == "ZOLr9CLNQjSW70hyIHx6BQ"


def test_topic_assignment_built_in_python_writes_kafka_v2():
    t = TopicAssignment(partitions={1: [2, 3], 0: [1, 2]})
    assert t.to_bytes() == b'{"version":2,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},"removing_replicas":{}}'


def test_partition_state_fields():
    s = models.parse(STATE_PATH, KAFKA_PAYLOADS[7][1])
    assert (s.leader, s.leader_epoch, s.controller_epoch, s.isr) == (1, 0, 1, [1, 2])
    no_leader = PartitionState(leader=-1, leader_epoch=3, controller_epoch=2, isr=[])
    assert PartitionState.from_bytes(STATE_PATH, no_leader.to_bytes()) == no_leader


def test_reassign_partitions_fields_and_plain_format():
    r = models.parse("/admin/reassign_partitions", KAFKA_PAYLOADS[15][1])
    assert r.partitions == [ReassignEntry(topic="t", partition=0, replicas=[4, 5, 6], original_replicas=[1, 2, 3])]
    plain = models.parse("/admin/reassign_partitions", KAFKA_PAYLOADS[16][1])
    assert plain.partitions[0].original_replicas is None
    # Kafka's tool reads a missing version as 1.
    no_version = ReassignPartitions.from_bytes("/admin/reassign_partitions", b'{"partitions":[]}')
    assert no_version.version == 1 and no_version.partitions == []


def test_queue_has_its_own_type_and_the_same_format():
    q = models.parse("/admin/reassign_partitions_queue", KAFKA_PAYLOADS[20][1])
    assert type(q) is ReassignQueue and isinstance(q, ReassignPartitions)


def test_controller_v2_of_kafka_3():
    c = models.parse("/controller", b'{"version":2,"brokerid":0,"timestamp":"1719917952299","kraftControllerEpoch":-1}')
    assert (c.version, c.brokerid, c.kraftControllerEpoch) == (2, 0, -1)
    assert c.to_bytes() == b'{"version":2,"brokerid":0,"timestamp":"1719917952299","kraftControllerEpoch":-1}'


def test_config_change_v1_is_read():
    n = models.parse("/config/changes/config_change_0000000001", b'{"version":1,"entity_type":"topics","entity_name":"t"}')
    assert (n.entity_type, n.entity_name) == ("topics", "t")
    assert n.to_bytes() == b'{"version":1,"entity_type":"topics","entity_name":"t"}'


def test_entity_config_without_config_key_is_empty_as_in_kafka():
    assert EntityConfig.from_bytes("/config/topics/t", b'{"version":1}').config == {}


def test_cancel_accepts_any_payload():
    for payload in (b"", b"{}", b"\xff\xfe not json"):
        c = models.parse("/admin/cancel_reassignment_in_progress", payload)
        assert c.to_bytes() == payload


def test_unknown_keys_are_ignored():
    s = PartitionState.from_bytes(
        STATE_PATH, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1],"future":{"x":[1]}}'
    )
    assert s.isr == [1]
    e = ReassignPartitions.from_bytes(
        "/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"why":"x"}]}'
    )
    assert e.partitions[0].replicas == [1]


def test_model_for_and_parse_pick_by_path():
    assert models.model_for("/admin/reassignments/t/3") is ReassignmentRecord
    assert models.model_for("/config/brokers/<default>") is EntityConfig
    assert models.model_for("/brokers/topics/t/partitions/9/state") is PartitionState


def test_epoch_as_kafka_writes_it():
    assert ControllerEpoch(epoch=0).to_bytes() == b"0"
    assert ControllerEpoch.from_bytes("/controller_epoch", b"2147483647").epoch == 2**31 - 1


# ---- malformed payloads --------------------------------------------------------------------

MALFORMED = [
    ("/admin/reassign_partitions", b"\xff\xfe", "UTF-8"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[', "JSON"),
    ("/admin/reassign_partitions", b"", "empty"),
    ("/admin/reassign_partitions", b"null", "object"),
    ("/admin/reassign_partitions", b"[]", "object"),
    ("/admin/reassign_partitions", b'{"version":1}', "partitions"),
    ("/admin/reassign_partitions", b'{"version":2,"partitions":[]}', "version"),
    ("/admin/reassign_partitions", b'{"version":"1","partitions":[]}', "version"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":{}}', "partitions"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}', "partition"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}', "twice"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "replicas"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', "replicas"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0.0,"replicas":[1]}]}', "partition"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":true,"replicas":[1]}]}', "partition"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"a b","partition":0,"replicas":[1]}]}', "topic"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}', "topic"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"original_replicas":[2,2]}]}', "twice"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}', "log_dirs"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["rel/dir"]}]}', "log dir"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}', "twice"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":2147483648,"replicas":[1]}]}', "partition"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[NaN]}]}', "JSON"),
    ("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[' + b"9" * 5000 + b"]}]}", "JSON"),
    ("/admin/reassign_partitions", b"[" * 100000 + b"]" * 100000, "nested"),
    ("/admin/reassign_partitions_queue", b'{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}', "partition"),
    ("/admin/reassignments/t/0", b'{"version":1,"replicas":[1,2]}', "original_replicas"),
    ("/admin/reassignments/t/0", b'{"version":1,"replicas":[1,2],"original_replicas":[-3]}', "original_replicas"),
    ("/admin/reassignments/t/0", b'{"version":9,"replicas":[1],"original_replicas":[1]}', "version"),
    ("/controller_epoch", b"", "epoch"),
    ("/controller_epoch", b"-1", "epoch"),
    ("/controller_epoch", b" 3", "epoch"),
    ("/controller_epoch", b"3.0", "epoch"),
    ("/controller_epoch", b"2147483648", "int"),
    ("/controller", b'{"version":1,"timestamp":"1"}', "brokerid"),
    ("/controller", b'{"version":1,"brokerid":"1","timestamp":"1"}', "brokerid"),
    ("/controller", b'{"version":1,"brokerid":1,"timestamp":1}', "timestamp"),
    ("/controller", b'{"version":3,"brokerid":1,"timestamp":"1"}', "version"),
    (BROKER_PATH, b'{"version":0,"host":"h","port":1,"jmx_port":-1,"timestamp":"1"}', "version"),
    (BROKER_PATH, b'{"version":6,"host":"h","port":1,"jmx_port":-1,"timestamp":"1","endpoints":[]}', "version"),
    (BROKER_PATH, b'{"version":4,"host":"h","port":1,"timestamp":"1","endpoints":["PLAINTEXT://h:1"]}', "jmx_port"),
    (BROKER_PATH, b'{"version":4,"host":"h","port":1,"jmx_port":-1,"timestamp":"1"}', "endpoints"),
    (BROKER_PATH, b'{"version":4,"host":"h","port":1,"jmx_port":-1,"timestamp":"1","endpoints":["h:1"]}', "endpoint"),
    (BROKER_PATH, b'{"version":4,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}', "CLIENT"),
    (BROKER_PATH, b'{"version":4,"jmx_port":-1,"endpoints":["A://h:1"],"listener_security_protocol_map":{"B":"SSL"}}', "A"),
    (BROKER_PATH, b'{"version":4,"jmx_port":-1,"endpoints":["A://h:1"],"listener_security_protocol_map":{"A":"TLS"}}', "TLS"),
    (BROKER_PATH, b'{"version":1,"jmx_port":-1,"timestamp":"1"}', "host"),
    (BROKER_PATH, b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":"1"}}}', "features"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"-1":[1]}}', "partition"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"x":[1]}}', "partition"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"01":[1]}}', "partition"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1,1]}}', "twice"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[]}}', "partitions"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[3]}}', "adding_replicas"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1,2]},"removing_replicas":{"1":[1]}}', "removing_replicas"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[1]},"removing_replicas":{"0":[1]}}', "both"),
    (TOPIC_PATH, b'{"version":3,"partitions":{"0":[1]},"topic_id":"not-a-uuid"}', "topic_id"),
    (TOPIC_PATH, b'{"version":2,"partitions":{"0":[1]},"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ"}', "topic_id"),
    (TOPIC_PATH, b'{"version":4,"partitions":{"0":[1]}}', "version"),
    (TOPIC_PATH, b'{"partitions":{"0":[1]}}', "version"),
    (STATE_PATH, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0}', "isr"),
    (STATE_PATH, b'{"controller_epoch":1,"leader":-3,"version":1,"leader_epoch":0,"isr":[]}', "leader"),
    (STATE_PATH, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,1]}', "twice"),
    (STATE_PATH, b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":-1,"isr":[1]}', "leader_epoch"),
    ("/isr_change_notification/isr_change_0000000001", b'{"version":1,"partitions":[{"topic":"t"}]}', "partition"),
    ("/isr_change_notification/isr_change_0000000001",
     b'{"version":1,"partitions":[{"topic":"t","partition":0,"state":{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}}]}',
     "zk_version"),
    ("/isr_change_notification/isr_change_0000000001",
     b'{"version":1,"partitions":[{"topic":"t","partition":0,"state":{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,1],"zk_version":3}}]}',
     "twice"),
    ("/config/topics/t", b'{"version":1,"config":{"retention.ms":1000}}', "config"),
    ("/config/topics/t", b'{"version":1,"config":["a"]}', "config"),
    ("/config/changes/config_change_0000000001", b'{"version":2,"entity_path":"topics"}', "entity_path"),
    ("/config/changes/config_change_0000000001", b'{"version":2,"entity_path":"planets/t"}', "entity type"),
    ("/config/changes/config_change_0000000001", b'{"version":1,"entity_type":"topics"}', "entity_name"),
    ("/config/changes/config_change_0000000001", b'{"version":3,"entity_path":"topics/t"}', "version"),
    ("/admin/throttled_replicas_removal", b'{"version":1,"topics":["t","t"]}', "twice"),
    ("/admin/throttled_replicas_removal", b'{"version":1,"topics":[".."]}', "topics"),
    ("/admin/throttled_rates_removal", b'{"version":1,"brokers":[-1]}', "brokers"),
    ("/admin/throttled_rates_removal", b'{"version":1}', "brokers"),
]


@pytest.mark.parametrize("path, payload, hint", MALFORMED)
def test_malformed_payloads_raise_one_typed_error_naming_path_and_problem(path, payload, hint):
    with pytest.raises(ZnodeFormatError) as info:
        models.parse(path, payload)
    error = info.value
    assert error.path == path
    assert path in str(error)
    assert hint.lower() in error.reason.lower(), error.reason
    assert isinstance(error, ValueError)
    assert error.__cause__ is None  # never a chained pydantic/json error


def test_unknown_path_is_a_format_error():
    with pytest.raises(ZnodeFormatError) as info:
        models.parse("/brokers/ids", b"{}")
    assert info.value.path == "/brokers/ids"


def test_non_bytes_payload_is_a_format_error():
    with pytest.raises(ZnodeFormatError):
        models.parse("/admin/reassign_partitions", '{"version":1,"partitions":[]}')


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape_as_another_error(data):
    for path in ("/admin/reassign_partitions", BROKER_PATH, TOPIC_PATH, STATE_PATH, "/controller_epoch"):
        try:
            models.parse(path, data)
        except ZnodeFormatError:
            pass


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.sampled_from(["", "t", "1", "any"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["version", "partitions", "topic", "partition", "replicas", "original_replicas", "0", "isr"]),
        children,
        max_size=5,
    ),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_arbitrary_json_never_escapes_as_another_error(value):
    data = json.dumps(value).encode()
    for path in ("/admin/reassign_partitions", "/admin/reassignments/t/0", TOPIC_PATH, STATE_PATH, BROKER_PATH):
        try:
            models.parse(path, data)
        except ZnodeFormatError:
            pass


# ---- round trips ---------------------------------------------------------------------------

ids = st.integers(0, 2**31 - 1)
small_ids = st.integers(0, 20)
replica_lists = st.lists(small_ids, min_size=1, max_size=5, unique=True)
topic_names = st.text(alphabet="abcxyz019._-", min_size=1, max_size=20).filter(lambda s: s not in (".", ".."))
timestamps = st.integers(0, 2**45).map(str)


@st.composite
def topic_assignments(draw):
    version = draw(st.sampled_from([1, 2, 3]))
    partitions = draw(st.dictionaries(st.integers(0, 50), replica_lists, min_size=1, max_size=6))
    adding, removing = {}, {}
    if version >= 2:
        for p, replicas in partitions.items():
            if draw(st.booleans()):
                cut = draw(st.integers(0, len(replicas)))
                if replicas[:cut]:
                    adding[p] = replicas[:cut]
                if replicas[cut:] and draw(st.booleans()):
                    removing[p] = replicas[cut:]
    topic_id = None
    if version == 3 and draw(st.booleans()):
        import base64

        topic_id = base64.urlsafe_b64encode(draw(st.binary(min_size=16, max_size=16))).decode().rstrip("=")
    return TopicAssignment(
        version=version, partitions=partitions, adding_replicas=adding, removing_replicas=removing, topic_id=topic_id
    )


@st.composite
def broker_registrations(draw):
    version = draw(st.integers(1, 5))
    host = draw(st.sampled_from(["h", "kafka-1.example", "10.0.0.1"]))
    port = draw(st.integers(1, 65535))
    fields = dict(version=version, host=host, port=port, jmx_port=draw(st.integers(-1, 65535)))
    fields["timestamp"] = draw(st.none() | timestamps)
    if version >= 2 or draw(st.booleans()):
        listeners = draw(st.lists(st.sampled_from(["PLAINTEXT", "SSL", "CLIENT", "REPLICATION"]), min_size=1, max_size=3, unique=True))
        fields["endpoints"] = [f"{name}://{host}:{port + i}" for i, name in enumerate(listeners)]
        if not set(listeners) <= set(models.SECURITY_PROTOCOLS) or draw(st.booleans()):
            fields["listener_security_protocol_map"] = {
                name: draw(st.sampled_from(models.SECURITY_PROTOCOLS)) for name in listeners
            }
    fields["rack"] = draw(st.none() | st.sampled_from(["r1", "us-east-1a"]))
    fields["features"] = draw(
        st.none()
        | st.dictionaries(
            st.sampled_from(["f1", "f2"]),
            st.fixed_dictionaries({"min_version": st.integers(0, 3), "max_version": st.integers(3, 9)}),
        )
    )
    return BrokerRegistration(**fields)


@st.composite
def reassign_entries(draw):
    replicas = draw(replica_lists)
    original = draw(st.none() | replica_lists)
    log_dirs = draw(st.none() | st.lists(st.sampled_from(["any", "/data/a", "/data/b"]), min_size=len(replicas), max_size=len(replicas)))
    return ReassignEntry(
        topic=draw(topic_names), partition=draw(st.integers(0, 100)), replicas=replicas,
        original_replicas=original, log_dirs=log_dirs,
    )


def unique_entries(entries):
    seen, out = set(), []
    for e in entries:
        if (e.topic, e.partition) not in seen:
            seen.add((e.topic, e.partition))
            out.append(e)
    return out


ROUND_TRIPS = {
    "/controller": st.builds(
        ControllerZnode, version=st.sampled_from([1, 2]), brokerid=ids, timestamp=timestamps,
        kraftControllerEpoch=st.none() | st.integers(-1, 2**31 - 1),
    ),
    "/controller_epoch": st.builds(ControllerEpoch, epoch=ids),
    BROKER_PATH: broker_registrations(),
    TOPIC_PATH: topic_assignments(),
    STATE_PATH: st.builds(
        PartitionState, leader=st.integers(-2, 20), leader_epoch=ids, controller_epoch=ids,
        isr=st.lists(small_ids, max_size=5, unique=True),
    ),
    "/isr_change_notification/isr_change_0000000003": st.builds(
        IsrChangeNotification,
        partitions=st.lists(
            st.builds(
                models.IsrChangeRef, topic=topic_names, partition=ids,
                state=st.none() | st.builds(
                    models.NotifiedState, leader=st.integers(-2, 20), leader_epoch=ids, controller_epoch=ids,
                    isr=st.lists(small_ids, max_size=5, unique=True), zk_version=ids,
                ),
            ),
            max_size=5,
        ),
    ),
    "/config/topics/t": st.builds(EntityConfig, config=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=5)),
    "/config/changes/config_change_0000000001": st.builds(
        ConfigChangeNotification,
        entity_path=st.sampled_from(models.CONFIG_ENTITY_TYPES).flatmap(lambda t: topic_names.map(lambda n: f"{t}/{n}")),
    ),
    "/admin/reassign_partitions": st.builds(ReassignPartitions, partitions=st.lists(reassign_entries(), max_size=5).map(unique_entries)),
    "/admin/reassign_partitions_queue": st.builds(ReassignQueue, partitions=st.lists(reassign_entries(), max_size=5).map(unique_entries)),
    "/admin/reassignments/t/0": st.builds(ReassignmentRecord, replicas=replica_lists, original_replicas=replica_lists),
    "/admin/cancel_reassignment_in_progress": st.builds(CancelReassignment, payload=st.binary(max_size=20)),
    "/admin/throttled_replicas_removal": st.builds(
        ThrottledReplicasRemoval, topics=st.lists(topic_names, max_size=5, unique=True)
    ),
    "/admin/throttled_rates_removal": st.builds(ThrottledRatesRemoval, brokers=st.lists(ids, max_size=5, unique=True)),
    "/admin/preferred_replica_election": st.builds(
        models.PreferredReplicaElection,
        partitions=st.lists(st.builds(models.TopicPartitionRef, topic=topic_names, partition=ids), max_size=5),
    ),
}


@pytest.mark.parametrize("path", sorted(ROUND_TRIPS))
@given(data=st.data())
def test_round_trip(path, data):
    model = data.draw(ROUND_TRIPS[path])
    payload = model.to_bytes()
    again = models.parse(path, payload)
    assert again == model and type(again) is type(model)
    assert again.to_bytes() == payload  # the encoding is canonical
    if path not in ("/controller_epoch", "/admin/cancel_reassignment_in_progress"):
        value = json.loads(payload)
        assert isinstance(value, dict)  # a compact JSON object, UTF-8
        assert payload == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def test_every_layout_znode_has_a_model():
    assert set(models.MODEL_BY_KIND) == set(paths.ZnodeKind)
    assert {paths.classify(p).kind for p in ROUND_TRIPS} == set(paths.ZnodeKind) - {paths.ZnodeKind.BROKER_CONFIG}
