"""The ACL APIs' answers from a node without an authorizer: a controller instance without
``authorizer.class.name``, and every simulated broker (the simulation has no authorizer).

Kafka's clients send DescribeAcls (29), CreateAcls (30) and DeleteAcls (31) to any node
(``kafka-acls.sh --bootstrap-server``, confluent-kafka's ``describe_acls`` / ``create_acls`` /
``delete_acls``). A Kafka broker without an authorizer answers them (AclApis, the same from the
ZooKeeper-mode brokers to the KRaft ones; the cluster check before passes without one):

    describe_acls(version, body)   # SECURITY_DISABLED "No Authorizer is configured on the broker",
                                   # as the request's error, no resources
    create_acls(version, body)     # every creation SECURITY_DISABLED "No Authorizer is configured."
    delete_acls(version, body)     # every filter SECURITY_DISABLED "No Authorizer is configured.",
                                   # no matching ACLs

Create and delete are the requests' getErrorResponse for a SecurityDisabledException with those
words (ApiError.fromThrowable keeps them: they are not Errors' own). The ``*_failure`` builders
are those shapes for any code, which the controller's handler answers every whole-request error
with (a refused principal, a failed ZooKeeper session). Pure: no I/O.
"""

from __future__ import annotations

from protocol import ApiKey
from protocol.errors import ErrorCode

# Kafka's AclApis: DescribeAcls' own words, and SecurityDisabledException's for the others.
NO_AUTHORIZER = {ApiKey.DESCRIBE_ACLS: "No Authorizer is configured on the broker",
                 ApiKey.CREATE_ACLS: "No Authorizer is configured.", ApiKey.DELETE_ACLS: "No Authorizer is configured."}


def describe_failure(code: int, message: str | None) -> dict:
    """DescribeAcls failing whole: the code and message, no resources."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "resources": []}


def create_failure(body: dict, code: int, message: str | None) -> dict:
    """CreateAclsRequest.getErrorResponse: every creation with the error."""
    return {"throttle_time_ms": 0,
            "results": [{"error_code": int(code), "error_message": message} for _ in body.get("creations") or ()]}


def delete_failure(body: dict, code: int, message: str | None) -> dict:
    """DeleteAclsRequest.getErrorResponse: every filter with the error and no matching ACLs."""
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": int(code), "error_message": message, "matching_acls": []} for _ in body.get("filters") or ()]}


def describe_acls(version: int, body: dict) -> dict:
    return describe_failure(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER[ApiKey.DESCRIBE_ACLS])


def create_acls(version: int, body: dict) -> dict:
    return create_failure(body, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER[ApiKey.CREATE_ACLS])


def delete_acls(version: int, body: dict) -> dict:
    return delete_failure(body, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER[ApiKey.DELETE_ACLS])
