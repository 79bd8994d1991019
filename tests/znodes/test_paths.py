"""znodes.paths: the layout of docs/DESIGN.md section 3, ZooKeeper's path rules, Kafka's topic names."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from znodes import paths
from znodes.errors import InvalidPathError
from znodes.paths import PathMatch, ZnodeKind


def test_fixed_paths_are_the_design_layout():
    assert paths.CONTROLLER == "/controller"
    assert paths.CONTROLLER_EPOCH == "/controller_epoch"
    assert paths.BROKER_IDS == "/brokers/ids"
    assert paths.TOPICS == "/brokers/topics"
    assert paths.ISR_CHANGE_NOTIFICATION == "/isr_change_notification"
    assert paths.isr_change_prefix() == "/isr_change_notification/isr_change_"
    assert paths.CONFIG_CHANGES == "/config/changes"
    assert paths.config_change_prefix() == "/config/changes/config_change_"
    assert paths.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert paths.REASSIGNMENTS == "/admin/reassignments"
    assert paths.CANCEL_REASSIGNMENT == "/admin/cancel_reassignment_in_progress"
    assert paths.REASSIGN_QUEUE == "/admin/reassign_partitions_queue"
    assert paths.THROTTLED_REPLICAS_REMOVAL == "/admin/throttled_replicas_removal"
    assert paths.THROTTLED_RATES_REMOVAL == "/admin/throttled_rates_removal"


def test_parametrised_paths():
    assert paths.broker(4) == "/brokers/ids/4"
    assert paths.topic("orders") == "/brokers/topics/orders"
    assert paths.partition_state("orders", 3) == "/brokers/topics/orders/partitions/3/state"
    assert paths.topic_config("orders") == "/config/topics/orders"
    assert paths.broker_config(7) == "/config/brokers/7"
    assert paths.broker_config("<default>") == "/config/brokers/<default>"
    assert paths.reassignment("orders", 3) == "/admin/reassignments/orders/3"
    for p in (paths.broker(0), paths.partition_state("a.b-c_d", 0), paths.reassignment("x", 2**31 - 1)):
        assert paths.validate_path(p) == p


@pytest.mark.parametrize(
    "call",
    [
        lambda: paths.broker(-1),
        lambda: paths.broker(True),
        lambda: paths.broker("3"),
        lambda: paths.partition_state("t", -1),
        lambda: paths.partition_state("t", 2**31),
        lambda: paths.topic("bad/name"),
        lambda: paths.reassignment("..", 0),
        lambda: paths.broker_config("default"),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("name", ["t", "orders.v2", "__consumer_offsets", "A-b_C.9", "x" * 249])
def test_valid_topic_names(name):
    assert paths.validate_topic_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a b", "a/b", "tópico", "a:b", "a\x00"])
def test_invalid_topic_names(name):
    with pytest.raises(paths.InvalidTopicError):
        paths.validate_topic_name(name)
    assert issubclass(paths.InvalidTopicError, ValueError)


def test_topic_name_must_be_str():
    with pytest.raises(ValueError):
        paths.validate_topic_name(3)


@given(st.text(alphabet="abcXYZ019._-", min_size=1, max_size=249).filter(lambda s: s not in (".", "..")))
def test_every_name_of_legal_characters_is_valid(name):
    assert paths.validate_topic_name(name) == name


@pytest.mark.parametrize("path", ["/", "/a", "/a/b", "/a.b", "/..a", "/a./b", "/\u00e9t\u00e9", "/a b"])
def test_valid_znode_paths(path):
    assert paths.validate_path(path) == path


@pytest.mark.parametrize(
    "path",
    ["", "a", "a/b", "/a/", "//a", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a\x00", "/a\x1f", "/a\x7f",
     "/a\x9f", "/a\ue000", "/a\ufff0", "/\U0001f600"],
)
def test_invalid_znode_paths(path):
    with pytest.raises(InvalidPathError) as info:
        paths.validate_path(path)
    assert isinstance(info.value, ValueError)
    assert info.value.path == path


def test_non_str_path_is_a_type_error():
    with pytest.raises(TypeError):
        paths.validate_path(b"/a")


def test_sequential_create_path_may_end_in_slash():
    assert paths.validate_path("/a/", sequential=True) == "/a/"
    assert paths.validate_path("/a/n-", sequential=True) == "/a/n-"
    with pytest.raises(InvalidPathError):
        paths.validate_path("/a//", sequential=True)


def test_join_parent_basename():
    assert paths.join("/", "a") == "/a"
    assert paths.join("/a", "b") == "/a/b"
    assert paths.parent("/a/b") == "/a"
    assert paths.parent("/a") == "/"
    assert paths.basename("/a/b") == "b"


def test_sequence_of():
    assert paths.sequence_of("isr_change_0000000042") == 42
    for bad in ("isr_change_42", "isr_change_00000000x2", ""):
        with pytest.raises(ValueError):
            paths.sequence_of(bad)


@pytest.mark.parametrize(
    "connect, expected",
    [
        ("h:1", ("h:1", "")),
        ("h1:2181,h2:2182/kafka", ("h1:2181,h2:2182", "/kafka")),
        ("h1,h2/", ("h1:2181,h2:2181", "")),
        ("h1:2181/a/b", ("h1:2181", "/a/b")),
        (" h1:1 , h2:2 ", ("h1:1,h2:2", "")),
        ("[::1]:2182,[fe80::1]/c", ("[::1]:2182,[fe80::1]:2181", "/c")),
    ],
)
def test_split_connect_string(connect, expected):
    assert paths.split_connect_string(connect) == expected


@pytest.mark.parametrize("connect", ["", "/kafka", "h:0", "h:65536", "h:x", "h:1:2", "[::1", "h:1/a/", "h:1/a//b", ":1"])
def test_bad_connect_strings(connect):
    with pytest.raises(ValueError):
        paths.split_connect_string(connect)


def test_a_port_past_pythons_digit_limit_is_a_bad_port():
    # int() raised "Exceeds the limit (4300 digits)...", which --zookeeper printed as its error.
    with pytest.raises(ValueError, match="bad port"):
        paths.split_connect_string("127.0.0.1:" + "9" * 5000)
    assert paths.split_connect_string("h:0002181") == ("h:2181", "")


@pytest.mark.parametrize(
    "path, match",
    [
        ("/controller", PathMatch(ZnodeKind.CONTROLLER)),
        ("/controller_epoch", PathMatch(ZnodeKind.CONTROLLER_EPOCH)),
        ("/brokers/ids/3", PathMatch(ZnodeKind.BROKER, broker=3)),
        ("/brokers/topics/t", PathMatch(ZnodeKind.TOPIC, topic="t")),
        ("/brokers/topics/t/partitions/2/state", PathMatch(ZnodeKind.PARTITION_STATE, topic="t", partition=2)),
        ("/isr_change_notification/isr_change_0000000001", PathMatch(ZnodeKind.ISR_CHANGE)),
        ("/config/topics/t", PathMatch(ZnodeKind.TOPIC_CONFIG, topic="t")),
        ("/config/brokers/5", PathMatch(ZnodeKind.BROKER_CONFIG, broker=5)),
        ("/config/brokers/<default>", PathMatch(ZnodeKind.BROKER_CONFIG)),
        ("/config/changes/config_change_0000000009", PathMatch(ZnodeKind.CONFIG_CHANGE)),
        ("/admin/reassign_partitions", PathMatch(ZnodeKind.REASSIGN_PARTITIONS)),
        ("/admin/reassignments/t/0", PathMatch(ZnodeKind.REASSIGNMENT, topic="t", partition=0)),
        ("/admin/cancel_reassignment_in_progress", PathMatch(ZnodeKind.CANCEL_REASSIGNMENT)),
        ("/admin/reassign_partitions_queue", PathMatch(ZnodeKind.REASSIGN_QUEUE)),
        ("/admin/throttled_replicas_removal", PathMatch(ZnodeKind.THROTTLED_REPLICAS_REMOVAL)),
        ("/admin/throttled_rates_removal", PathMatch(ZnodeKind.THROTTLED_RATES_REMOVAL)),
    ],
)
def test_classify(path, match):
    assert paths.classify(path) == match


@pytest.mark.parametrize(
    "path",
    ["/", "/brokers", "/brokers/ids", "/brokers/ids/-1", "/brokers/ids/01", "/brokers/ids/x",
     "/brokers/topics/bad name", "/brokers/topics/t/partitions/0", "/brokers/topics/t/partitions/0/x",
     "/admin/reassignments/t", "/admin/reassignments/t/0/x", "/isr_change_notification/other",
     "/config/changes/config_change_x", "/config/users/u", "/admin/reassignments/t/99999999999"],
)
def test_classify_unknown_paths(path):
    assert paths.classify(path) is None
