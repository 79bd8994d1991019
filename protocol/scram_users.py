"""KIP-554's DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): the bodies'
pure parts, below both servers that answer them (the controller's listener, the simulated
brokers). Kafka's words are ZkAdminManager's (tests/admin/test_scram_groups_probe.py); the
describe over a ZooKeeper session is znodes.scram_users', the alter the controller's
(controller.shell.admin.scram_users).

    described("alice", {"SCRAM-SHA-512": text})   # one user's result: mechanisms, iterations
    user_error("bob", code, message)              # one user's result carrying an error
    describe_failure(body, code, message)         # DescribeUserScramCredentialsRequest.getErrorResponse
    alter_failure(body, code, message)            # AlterUserScramCredentialsRequest.getErrorResponse
    not_controller(version, body)                 # a ZooKeeper-mode broker that is not the controller

A ZooKeeper-mode Kafka broker (2.7-3.x, KafkaApis.handleAlterUserScramCredentialsRequest)
that is not the active controller answers Alter NOT_CONTROLLER before anything else, through
AlterUserScramCredentialsRequest.getErrorResponse: every user the request names, once,
sorted, with the code and a null message (ApiError.fromThrowable drops Errors' own words).
Its API forwarding is on only during a KRaft migration, so the broker answers itself. The
simulated brokers are never the controller and always answer so. Pure: no I/O.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.scram_credential import ScramError, parse_credential

# KIP-554's ScramMechanism codes.
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CODE_OF = {name: code for code, name in MECHANISM_CODES.items()}

# Kafka's words (ZkAdminManager.describeUserScramCredentials; its alter says EMPTY_NAME too).
EMPTY_NAME = "Username must not be empty"
DUPLICATE_DESCRIBE = "Cannot describe SCRAM credentials for the same user twice in a single request"
NOT_THERE_DESCRIBE = "Attempt to describe a user credential that does not exist"
# Errors.UNKNOWN_SERVER_ERROR.message(), what Kafka gives a user whose stored credential it
# cannot read.
UNREADABLE = "The server experienced an unexpected error when processing the request."


def user_error(user: str, code: ErrorCode, message: str | None) -> dict:
    return {"user": user, "error_code": int(code), "error_message": message, "credential_infos": []}


def described(user: str, texts: dict[str, str]) -> dict:
    """One described user: its mechanisms' iterations, or UNKNOWN_SERVER_ERROR when a stored
    credential does not parse (Kafka: credentialFromString throws)."""
    infos = []
    for mechanism, text in sorted(texts.items()):
        try:
            iterations = parse_credential(mechanism, text).iterations
        except ScramError:
            return user_error(user, ErrorCode.UNKNOWN_SERVER_ERROR, UNREADABLE)
        infos.append({"mechanism": CODE_OF[mechanism], "iterations": iterations})
    return {"user": user, "error_code": 0, "error_message": None, "credential_infos": infos}


def describe_failure(body: dict, code: int, message: str | None) -> dict:
    """The whole describe failing (DescribeUserScramCredentialsRequest.getErrorResponse): the
    code and message, and one result carrying them per user the request names, as named (so
    repeats repeat), each with Kafka's unset user name ""; none for a request naming no user."""
    results = [user_error("", code, message) for _ in body.get("users") or ()]
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "results": results}


def alter_failure(body: dict, code: int, message: str | None) -> dict:
    """Every user the request names, once, sorted (AlterUserScramCredentialsRequest.getErrorResponse)."""
    users = sorted({d["name"] for d in body.get("deletions") or []} | {u["name"] for u in body.get("upsertions") or []})
    return {"throttle_time_ms": 0,
            "results": [{"user": u, "error_code": int(code), "error_message": message} for u in users]}


def not_controller(version: int, body: dict) -> dict:
    """Alter on a broker that is not the controller (see the module's docstring)."""
    return alter_failure(body, ErrorCode.NOT_CONTROLLER, None)
