"""The error-code table: Kafka's codes and names, retriable flags, this project's additions."""

from protocol.errors import ERRORS, ErrorCode, error_info, is_retriable


def test_codes_the_project_relies_on():
    assert ErrorCode.NONE == 0 and ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert ErrorCode.CLUSTER_AUTHORIZATION_FAILED == 31
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.INVALID_REPLICA_ASSIGNMENT == 39
    assert ErrorCode.NOT_CONTROLLER == 41
    assert ErrorCode.INVALID_REQUEST == 42
    assert ErrorCode.POLICY_VIOLATION == 44
    assert ErrorCode.REASSIGNMENT_IN_PROGRESS == 60
    assert ErrorCode.NO_REASSIGNMENT_IN_PROGRESS == 85
    assert ErrorCode.INVALID_THROTTLE == 1001
    assert ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS is ErrorCode.REASSIGNMENT_IN_PROGRESS
    assert ErrorCode(60).name == "REASSIGNMENT_IN_PROGRESS"


def test_table_is_complete_and_consistent():
    assert set(range(-1, 120)) <= set(ERRORS)
    names = [info.name for info in ERRORS.values()]
    assert len(names) == len(set(names))
    for code, info in ERRORS.items():
        assert ErrorCode[info.name] == code == info.code
        assert info.message or code == 0


def test_retriable_flags():
    for code in (ErrorCode.NOT_CONTROLLER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT,
                 ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        assert is_retriable(code)
    for code in (ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.REASSIGNMENT_IN_PROGRESS,
                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.INVALID_THROTTLE, ErrorCode.NONE):
        assert not is_retriable(code)


def test_unknown_codes_still_describe_themselves():
    info = error_info(31337)
    assert info.code == 31337 and "31337" in info.name and not info.retriable
