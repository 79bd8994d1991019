"""Kafka's protocol error codes (as Kafka 3.x defines them) plus this project's own.

Each code has a name, a short message and whether a client may retry the same request. The
table is data; `ErrorCode` is an IntEnum generated from it, so `ErrorCode.NOT_CONTROLLER == 41`.

>>> ErrorCode.REASSIGNMENT_IN_PROGRESS is ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS
True
>>> error_info(41).retriable, error_info(1001).name
(True, 'INVALID_THROTTLE')
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class ErrorInfo(NamedTuple):
    code: int
    name: str
    retriable: bool
    message: str


R, F = True, False

# (code, name, retriable, message)
_TABLE: tuple[tuple[int, str, bool, str], ...] = (
    (-1, "UNKNOWN_SERVER_ERROR", F, "The server hit an unexpected error while handling the request."),
    (0, "NONE", F, ""),
    (1, "OFFSET_OUT_OF_RANGE", F, "The offset is outside the range the server holds."),
    (2, "CORRUPT_MESSAGE", R, "The message failed its CRC check, is too large, or is otherwise corrupt."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", R, "This server does not host this topic-partition."),
    (4, "INVALID_FETCH_SIZE", F, "The fetch size is invalid."),
    (5, "LEADER_NOT_AVAILABLE", R, "The partition has no leader: an election is under way."),
    (6, "NOT_LEADER_OR_FOLLOWER", R, "This broker is not the leader (or not a replica) of the partition."),
    (7, "REQUEST_TIMED_OUT", R, "The request timed out."),
    (8, "BROKER_NOT_AVAILABLE", F, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", R, "The replica is not available for the partition."),
    (10, "MESSAGE_TOO_LARGE", F, "The message is larger than the server accepts."),
    (11, "STALE_CONTROLLER_EPOCH", F, "The controller moved to another broker."),
    (12, "OFFSET_METADATA_TOO_LARGE", F, "The offset metadata is too large."),
    (13, "NETWORK_EXCEPTION", R, "The server disconnected before a response was received."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", R, "The coordinator is still loading."),
    (15, "COORDINATOR_NOT_AVAILABLE", R, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", R, "This is not the right coordinator."),
    (17, "INVALID_TOPIC_EXCEPTION", F, "The operation names an invalid topic."),
    (18, "RECORD_LIST_TOO_LARGE", F, "The record batch is larger than the segment size."),
    (19, "NOT_ENOUGH_REPLICAS", R, "Rejected: fewer in-sync replicas than required."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", R, "Written, but to fewer in-sync replicas than required."),
    (21, "INVALID_REQUIRED_ACKS", F, "Invalid value for required acks."),
    (22, "ILLEGAL_GENERATION", F, "The group generation id is not valid."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", F, "The member's protocols do not match the group's."),
    (24, "INVALID_GROUP_ID", F, "The group id is invalid."),
    (25, "UNKNOWN_MEMBER_ID", F, "The member (or broker) id is not known."),
    (26, "INVALID_SESSION_TIMEOUT", F, "The session timeout is outside the allowed range."),
    (27, "REBALANCE_IN_PROGRESS", F, "The group is rebalancing; rejoin."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", F, "The committed offset data size is not valid."),
    (29, "TOPIC_AUTHORIZATION_FAILED", F, "Not authorized for the topic."),
    (30, "GROUP_AUTHORIZATION_FAILED", F, "Not authorized for the group."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", F, "Not authorized for the cluster."),
    (32, "INVALID_TIMESTAMP", F, "The timestamp is out of the acceptable range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", F, "The SASL mechanism is not supported."),
    (34, "ILLEGAL_SASL_STATE", F, "The request is not valid in the current SASL state."),
    (35, "UNSUPPORTED_VERSION", F, "The API version is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", F, "A topic with this name already exists."),
    (37, "INVALID_PARTITIONS", F, "The number of partitions is invalid."),
    (38, "INVALID_REPLICATION_FACTOR", F, "The replication factor is invalid."),
    (39, "INVALID_REPLICA_ASSIGNMENT", F, "The replica assignment is invalid."),
    (40, "INVALID_CONFIG", F, "The configuration is invalid."),
    (41, "NOT_CONTROLLER", R, "This is not the active controller."),
    (42, "INVALID_REQUEST", F, "The request is malformed or not valid here; see the server log."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", F, "The message format version does not support this request."),
    (44, "POLICY_VIOLATION", F, "The request violates the configured policy."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", F, "Out of order sequence number."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", F, "Duplicate sequence number."),
    (47, "INVALID_PRODUCER_EPOCH", F, "The producer epoch is old."),
    (48, "INVALID_TXN_STATE", F, "The transactional operation is invalid in the current state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", F, "The producer id is not assigned to this transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", F, "The transaction timeout is larger than allowed."),
    (51, "CONCURRENT_TRANSACTIONS", R, "Another operation on this transaction is in progress."),
    (52, "TRANSACTION_COORDINATOR_FENCED", F, "The transaction coordinator is no longer current."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", F, "Not authorized for the transactional id."),
    (54, "SECURITY_DISABLED", F, "Security features are disabled."),
    (55, "OPERATION_NOT_ATTEMPTED", F, "The operation was not attempted (another one in the batch failed)."),
    (56, "KAFKA_STORAGE_ERROR", R, "Disk error while accessing the log."),
    (57, "LOG_DIR_NOT_FOUND", F, "The log directory is not in the broker's configuration."),
    (58, "SASL_AUTHENTICATION_FAILED", F, "SASL authentication failed."),
    (59, "UNKNOWN_PRODUCER_ID", F, "The producer id is not known."),
    (60, "REASSIGNMENT_IN_PROGRESS", F, "A partition reassignment is in progress."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", F, "Delegation tokens are disabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", F, "The delegation token was not found."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", F, "The principal is not the token's owner or renewer."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", F, "Delegation token requests are not allowed on this channel."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", F, "Delegation token authorization failed."),
    (66, "DELEGATION_TOKEN_EXPIRED", F, "The delegation token has expired."),
    (67, "INVALID_PRINCIPAL_TYPE", F, "The principal type is not supported."),
    (68, "NON_EMPTY_GROUP", F, "The group is not empty."),
    (69, "GROUP_ID_NOT_FOUND", F, "The group id does not exist."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", R, "The fetch session id was not found."),
    (71, "INVALID_FETCH_SESSION_EPOCH", R, "The fetch session epoch is invalid."),
    (72, "LISTENER_NOT_FOUND", R, "The leader has no listener matching the one the request came on."),
    (73, "TOPIC_DELETION_DISABLED", F, "Topic deletion is disabled."),
    (74, "FENCED_LEADER_EPOCH", R, "The leader epoch in the request is older than the broker's."),
    (75, "UNKNOWN_LEADER_EPOCH", R, "The leader epoch in the request is newer than the broker's."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", F, "The client does not support the partition's compression type."),
    (77, "STALE_BROKER_EPOCH", F, "The broker epoch has changed."),
    (78, "OFFSET_NOT_AVAILABLE", R, "The high watermark has not caught up after a leader election."),
    (79, "MEMBER_ID_REQUIRED", F, "The member needs a member id before joining the group."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", R, "The preferred leader is not available."),
    (81, "GROUP_MAX_SIZE_REACHED", F, "The group has reached its maximum size."),
    (82, "FENCED_INSTANCE_ID", F, "Another member registered with the same group.instance.id."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", R, "No eligible leader is available for the partition."),
    (84, "ELECTION_NOT_NEEDED", R, "No leader election is needed for the partition."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", F, "No partition reassignment is in progress."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", F, "The group is subscribed to the topic; its offsets cannot be deleted."),
    (87, "INVALID_RECORD", F, "The record failed validation on the broker."),
    (88, "UNSTABLE_OFFSET_COMMIT", R, "Unstable offsets must be cleared first."),
    (89, "THROTTLING_QUOTA_EXCEEDED", R, "The throttling quota has been exceeded."),
    (90, "PRODUCER_FENCED", F, "A newer producer with the same transactional id fenced this one."),
    (91, "RESOURCE_NOT_FOUND", F, "The request refers to a resource that does not exist."),
    (92, "DUPLICATE_RESOURCE", F, "The request refers to the same resource twice."),
    (93, "UNACCEPTABLE_CREDENTIAL", F, "The credential does not meet the acceptability criteria."),
    (94, "INCONSISTENT_VOTER_SET", F, "The sender or receiver is not one of the expected voters."),
    (95, "INVALID_UPDATE_VERSION", F, "The update version is invalid."),
    (96, "FEATURE_UPDATE_FAILED", F, "The finalized features could not be updated."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", F, "The forwarded request's principal could not be deserialized."),
    (98, "SNAPSHOT_NOT_FOUND", F, "The snapshot was not found."),
    (99, "POSITION_OUT_OF_RANGE", F, "The position is outside the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", R, "This server does not host this topic id."),
    (101, "DUPLICATE_BROKER_REGISTRATION", F, "This broker id is already in use."),
    (102, "BROKER_ID_NOT_REGISTERED", F, "The broker id is not registered."),
    (103, "INCONSISTENT_TOPIC_ID", R, "The log's topic id does not match the request's."),
    (104, "INCONSISTENT_CLUSTER_ID", F, "The cluster id does not match the server's."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", F, "The transactional id was not found."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", R, "The fetch session used topic ids inconsistently."),
    (107, "INELIGIBLE_REPLICA", F, "The new ISR contains an ineligible replica."),
    (108, "NEW_LEADER_ELECTED", F, "The partition state was updated but the leader changed."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", F, "The offset has moved to tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", F, "The member epoch is fenced; rejoin the group."),
    (111, "UNRELEASED_INSTANCE_ID", F, "The instance id is still used by another member."),
    (112, "UNSUPPORTED_ASSIGNOR", F, "The assignor or its versions are not supported by the group."),
    (113, "STALE_MEMBER_EPOCH", F, "The member epoch is stale."),
    (114, "MISMATCHED_ENDPOINT_TYPE", F, "The request was sent to the wrong type of endpoint."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", F, "This endpoint type is not supported."),
    (116, "UNKNOWN_CONTROLLER_ID", F, "The controller id is not known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", F, "The telemetry subscription id is invalid or outdated."),
    (118, "TELEMETRY_TOO_LARGE", F, "The telemetry push is larger than the broker accepts."),
    (119, "INVALID_REGISTRATION", F, "The controller considers the broker registration invalid."),
    (120, "TRANSACTION_ABORTABLE", F, "The transaction failed; abort it to keep using the transactional id."),
    (121, "INVALID_RECORD_STATE", F, "The record state is invalid."),
    (122, "SHARE_SESSION_NOT_FOUND", R, "The share session was not found."),
    (123, "INVALID_SHARE_SESSION_EPOCH", R, "The share session epoch is invalid."),
    (124, "FENCED_STATE_EPOCH", F, "The share-group state epoch does not match."),
    (125, "INVALID_VOTER_KEY", F, "The voter key does not match the replica's."),
    (126, "DUPLICATE_VOTER", F, "The voter is already in the voter set."),
    (127, "VOTER_NOT_FOUND", F, "The voter is not in the voter set."),
    (128, "INVALID_REGULAR_EXPRESSION", F, "The regular expression is not valid."),
    # This project's own (docs/DESIGN.md section 5), above Kafka's range so they never collide.
    (1001, "INVALID_THROTTLE", F, "The throttle must be greater than zero."),
)

ERRORS: dict[int, ErrorInfo] = {code: ErrorInfo(code, name, retriable, message) for code, name, retriable, message in _TABLE}

# Aliases: the KIP texts' name for Kafka's code.
_ALIASES = {"PARTITION_REASSIGNMENT_IN_PROGRESS": 60}

ErrorCode = enum.IntEnum(
    "ErrorCode",
    [(name, code) for code, name, _, _ in _TABLE] + list(_ALIASES.items()),
    module=__name__,
)
ErrorCode.__doc__ = "Protocol error codes by name: ErrorCode.NOT_CONTROLLER == 41."


def error_info(code: int) -> ErrorInfo:
    """The table entry for `code`; a code not in the table gets a placeholder entry (not retriable)."""
    info = ERRORS.get(code)
    if info is None:
        return ErrorInfo(code, f"UNKNOWN_ERROR_CODE_{code}", False, f"Unknown error code {code}.")
    return info


def error_name(code: int) -> str:
    return error_info(code).name


def error_message(code: int) -> str:
    return error_info(code).message


def is_retriable(code: int) -> bool:
    return error_info(code).retriable
